//! # msgpass: QNX-style synchronous message passing on Linux
//!
//! A server creates a named [`Channel`] and loops on [`Channel::receive`],
//! answering each [`Request`]. A client opens a [`Connection`] by name and
//! calls the server, blocking until the reply (or error) comes back. Names
//! live in a [`Namespace`] directory; the mechanism underneath is a
//! [`Transport`] chosen by name (see [`transport::TRANSPORTS`]). Across
//! hosts, [`Channel::listen_tcp`] and [`Connection::connect_tcp`] do the
//! same over TCP without a namespace.
//!
//! ## Two ways to pass a message
//!
//! | | copying | in place |
//! |---|---|---|
//! | client | [`Connection::call`]: your request buffer in, the reply copied into yours | [`Connection::call_with`]: write the request into the transport's own buffer, read the reply in it |
//! | server | [`Request::data`], then [`Request::reply`] with your buffer | [`Request::data`], then [`Request::reply_with`]: write the reply into the transport's own buffer |
//!
//! On the shared-memory transports (`shm`, `shm-spin`, `shm-block`,
//! `shm-hybrid`, and `eventfd`, `io-uring` and `signal`, whose messages
//! lie in shared memory too) the in-place calls lend a private buffer of
//! the connection (or server thread), and the library moves each message
//! once between it and the shared memory, with no system call and no
//! allocation: the caller's own copy into and out of a buffer of its own
//! is saved. Shared memory itself is never lent: the peer is another
//! process that may write it at any moment, so the library copies a
//! message out once its header is checked, and what you read cannot
//! change under you (see `transport/shared.rs` for the rules). On every
//! other transport the in-place calls work the same way over a buffer of
//! the library's (the copying fallback), so generic code runs on any
//! transport. The borrow checker keeps the rules: the reply
//! [`Connection::call_with`] returns borrows the connection, so it is gone
//! before the next call reuses the buffer, and the buffer
//! [`Request::reply_with`] lends is only reachable inside its closure,
//! before the reply is published.
//!
//! ```no_run
//! use msgpass::{Channel, Connection, Namespace, Options};
//! # fn main() -> msgpass::Result<()> {
//! let ns = Namespace::resolve(None)?;
//! let t = msgpass::transport::by_name("shm")?;
//! let mut server = Channel::create(&ns, "echo/0", &*t, &Options::default())?;
//! std::thread::spawn(move || {
//!     while let Ok(Some(req)) = server.receive() {
//!         // Copying: build the reply in a buffer of our own.
//!         let data = req.data().to_vec();
//!         let _ = req.reply(&data);
//!     }
//! });
//! let mut conn = Connection::open(&ns, "echo/0", &*t, &Options::default())?;
//! let mut reply = [0u8; 5];
//! let n = conn.call(1, b"hello", &mut reply)?;
//! assert_eq!(&reply[..n], b"hello");
//! # Ok(()) }
//! ```
//!
//! The same exchange in place, with the transport named at compile time
//! ([`Channel::create_typed`], [`Connection::open_typed`]: no dynamic
//! dispatch on the way):
//!
//! ```no_run
//! use msgpass::transport::shm::{Shm, Wait};
//! use msgpass::{Channel, Connection, Namespace, Options};
//! # fn main() -> msgpass::Result<()> {
//! let ns = Namespace::resolve(None)?;
//! let shm = Shm::new(Wait::Hybrid);
//! let mut server = Channel::create_typed(&ns, "inc/0", &shm, &Options::default())?;
//! std::thread::spawn(move || {
//!     while let Ok(Some(req)) = server.receive() {
//!         // The buffer starts with the request: add one to it in place.
//!         let _ = req.reply_with(|buf| {
//!             let v = u32::from_le_bytes(buf[..4].try_into().unwrap());
//!             buf[..4].copy_from_slice(&(v + 1).to_le_bytes());
//!             4
//!         });
//!     }
//! });
//! let mut conn = Connection::open_typed(&ns, "inc/0", &shm, &Options::default())?;
//! let reply = conn.call_with(1, |buf| {
//!     buf[..4].copy_from_slice(&41u32.to_le_bytes());
//!     4
//! })?;
//! assert_eq!(reply, &42u32.to_le_bytes());
//! # Ok(()) }
//! ```

//! ## Priority inheritance
//!
//! With [`Options::inherit_priority`] a server thread serves each request
//! at its calling thread's scheduling policy and priority until it
//! replies, as on QNX, and a busy single-threaded server is raised as soon
//! as a higher-priority caller sends. The caller is named by the kernel,
//! never taken on its word; see [`transport::priority`] for how, and on
//! which transports (uds, uds-stream, uds-dgram; refused elsewhere).

#![warn(missing_docs)]

mod answer;
mod channel;
mod connection;
mod error;
mod names;
pub mod pool;
mod pulse;
pub mod transport;

pub use answer::Received;
pub use channel::{Channel, Request};
pub use connection::Connection;
pub use error::{Error, Result};
pub use names::{Namespace, NS_ENV};
pub use pool::{OwnedRequest, Receiver};
pub use pulse::{Pulse, PULSE, RESERVED};
pub use transport::{Options, Status, Transport, Typed, ONEWAY};
