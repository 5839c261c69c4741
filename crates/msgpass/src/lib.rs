//! # msgpass: QNX-style synchronous message passing on Linux
//!
//! A server creates a named [`Channel`] and loops on [`Channel::receive`],
//! answering each [`Request`]. A client opens a [`Connection`] by name and
//! calls the server, blocking until the reply (or error) comes back. Names
//! live in a [`Namespace`] directory; the mechanism underneath is a
//! [`Transport`] chosen by name (see [`transport::TRANSPORTS`]). Across
//! hosts, [`Channel::listen_tcp`] and [`Connection::connect_tcp`] do the
//! same over TCP without a namespace, and with [`Options::token`] only for
//! clients that know the server's [`Token`].
//!
//! ## Two ways to pass a message
//!
//! | | copying | in place |
//! |---|---|---|
//! | client | [`Connection::call`]: your request buffer in, the reply copied into yours | [`Connection::call_with`]: write the request into the transport's own memory, read the reply in it |
//! | server | [`Request::data`], then [`Request::reply`] with your buffer | [`Request::reply_with`]: read the request and write the reply in the transport's own memory |
//!
//! The in-place calls lend the transport's own memory as a [`Window`]
//! (a message to build) and a [`View`] (a reply to read), read and
//! written only by copies ([`View::read`], [`Window::write`],
//! [`View::get`]...), never as a `&[u8]`. On the shm transports (`shm`,
//! `shm-spin`, `shm-block`, `shm-hybrid`) that memory is the connection's
//! slot, shared with the peer process: a message is built and read where
//! it lies, and only the bytes you touch are copied, so a handler that
//! reads an 8-byte header of a 64 KiB request copies 8 bytes. The peer
//! may write the slot at any moment, breaking the protocol; what you
//! copy out is a value the bytes held, private from then on, so check it
//! there (see `transport/mem/shared.rs` for the rules, and
//! `transport/mem/window.rs`). On `eventfd`, `io-uring` and `signal`, whose
//! messages lie in shared memory too, and on every other transport, the
//! memory is a buffer of the library's, and the message is copied once
//! each way, so generic code runs on any transport. The borrow checker
//! keeps the rules: the reply [`Connection::call_with`] returns borrows
//! the connection, so it is gone before the next call reuses the memory,
//! and the window [`Request::reply_with`] lends is only reachable inside
//! its closure, before the reply is published.
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
//!         // The window starts with the request: add one to it in place.
//!         let _ = req.reply_with(|w| {
//!             let v = u32::from_le_bytes(w.get(0));
//!             w.write(0, &(v + 1).to_le_bytes());
//!             4
//!         });
//!     }
//! });
//! let mut conn = Connection::open_typed(&ns, "inc/0", &shm, &Options::default())?;
//! let reply = conn.call_with(1, |w| {
//!     w.write(0, &41u32.to_le_bytes());
//!     4
//! })?;
//! assert_eq!(reply.get::<4>(0), 42u32.to_le_bytes());
//! # Ok(()) }
//! ```

//! ## Priority inheritance
//!
//! With [`Options::inherit_priority`] a server thread serves each request
//! at its calling thread's scheduling policy and priority until it
//! replies, as on QNX, and a busy single-threaded server is raised as soon
//! as a higher-priority caller sends. The caller is named by the kernel,
//! never taken on its word; see [`transport::priority`] for how, and on
//! which transports (uds, uds-stream, uds-dgram, pipe, fifo, eventfd,
//! posix-mq, io-uring and the four shm ones; refused elsewhere).

#![warn(missing_docs)]

mod answer;
mod channel;
mod connection;
mod error;
mod names;
pub mod pool;
mod pulse;
mod token;
pub mod transport;

pub use answer::Received;
pub use channel::{Channel, Request};
pub use connection::Connection;
pub use error::{Error, Result};
pub use names::{Namespace, NS_ENV};
pub use pool::{OwnedRequest, Receiver};
pub use pulse::{Pulse, PULSE, RESERVED};
pub use token::Token;
pub use transport::{Client, Creds, Options, Status, Transport, Typed, View, Window, ONEWAY};
