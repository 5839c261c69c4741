//! # msgpass: QNX-style synchronous message passing on Linux
//!
//! A server creates a named [`Channel`] and loops on [`Channel::receive`],
//! answering each [`Request`] with [`Request::reply`] or
//! [`Request::reply_error`]. A client opens a [`Connection`] by name and
//! calls [`Connection::call`], which blocks until the reply (or error) comes
//! back. Names live in a [`Namespace`] directory; the mechanism underneath is
//! a [`Transport`] chosen by name (see [`transport::TRANSPORTS`]).
//! Across hosts, [`Channel::listen_tcp`] and [`Connection::connect_tcp`]
//! do the same over TCP without a namespace.
//!
//! ```no_run
//! use msgpass::{Channel, Connection, Namespace, Options};
//! # fn main() -> msgpass::Result<()> {
//! let ns = Namespace::resolve(None)?;
//! let t = msgpass::transport::by_name("shm")?;
//! let mut server = Channel::create(&ns, "echo/0", &*t, &Options::default())?;
//! std::thread::spawn(move || {
//!     while let Ok(Some(req)) = server.receive() {
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

#![warn(missing_docs)]

mod error;
mod names;
pub mod transport;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

pub use error::{Error, Result};
pub use names::{Namespace, NS_ENV};
pub use transport::{Options, Status, Transport, ONEWAY};

use names::EndpointClaim;
use transport::{ClientConnection, Incoming, ServerChannel};

/// The server side of a named endpoint. One thread receives on it; several
/// channels can live in one process, one per thread.
pub struct Channel {
    // Field order matters: the transport closes before the claim removes
    // the endpoint and releases the lock.
    inner: Box<dyn ServerChannel>,
    place: Place,
    stop: Arc<AtomicBool>,
    max_msg: usize,
}

/// Where a channel is served.
enum Place {
    /// An endpoint in a namespace, claimed for the channel's lifetime.
    Endpoint(EndpointClaim),
    /// A TCP address, with no namespace ([`Channel::listen_tcp`]).
    Tcp {
        /// `tcp://ADDR:PORT`, what [`Channel::path`] shows.
        name: PathBuf,
        /// The address listened on.
        addr: SocketAddr,
    },
}

impl Channel {
    /// Creates endpoint `name` in `ns`, served over `transport`. Replaces a
    /// stale endpoint left by a dead server; refuses a live one with
    /// [`Error::AlreadyServed`].
    pub fn create(
        ns: &Namespace,
        name: &str,
        transport: &dyn Transport,
        opts: &Options,
    ) -> Result<Channel> {
        let claim = EndpointClaim::new(ns, name)?;
        let inner = transport.serve(claim.path(), opts)?;
        Ok(Channel {
            inner,
            place: Place::Endpoint(claim),
            stop: Arc::new(AtomicBool::new(false)),
            max_msg: transport.max_msg(opts.max_msg),
        })
    }

    /// Serves a channel on TCP address `addr` (like `10.0.0.1:5000`, or
    /// port 0 for any free port), for clients on other hosts: QNX-style
    /// network-transparent message passing. No namespace is involved: the
    /// TCP connection is the session, and the server's first bytes on it
    /// are the same versioned hello the local rendezvous sends, so a
    /// client of another version or transport gets a clear error. Clients
    /// connect with [`Connection::connect_tcp`].
    ///
    /// Liveness across hosts: a peer process that dies is noticed at once
    /// (its kernel closes the connection); a peer host that vanishes is
    /// noticed by TCP keep-alive within about 5 s.
    pub fn listen_tcp(addr: impl ToSocketAddrs, opts: &Options) -> Result<Channel> {
        let (inner, addr) = transport::tcp::listen(addr, opts)?;
        Ok(Channel {
            inner,
            place: Place::Tcp {
                name: transport::tcp::remote_name(&addr),
                addr,
            },
            stop: Arc::new(AtomicBool::new(false)),
            max_msg: opts.max_msg,
        })
    }

    /// Makes [`receive`](Channel::receive) return `Ok(None)` once `flag` is
    /// set (within one [`Options::tick`]). Share one flag between channels
    /// and a signal handler to stop a whole server.
    pub fn set_stop_flag(&mut self, flag: Arc<AtomicBool>) {
        self.stop = flag;
    }

    /// A flag that, once set, makes `receive` return `Ok(None)`.
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }

    /// True when creating the channel replaced a stale endpoint.
    pub fn replaced_stale(&self) -> bool {
        match &self.place {
            Place::Endpoint(claim) => claim.replaced_stale,
            Place::Tcp { .. } => false,
        }
    }

    /// The endpoint's path; `tcp://ADDR:PORT` for a channel made by
    /// [`listen_tcp`](Channel::listen_tcp) (there is no file).
    pub fn path(&self) -> &Path {
        match &self.place {
            Place::Endpoint(claim) => claim.path(),
            Place::Tcp { name, .. } => name,
        }
    }

    /// The address a channel made by [`listen_tcp`](Channel::listen_tcp)
    /// listens on (with the actual port when port 0 was asked for).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &self.place {
            Place::Endpoint(_) => None,
            Place::Tcp { addr, .. } => Some(*addr),
        }
    }

    /// Largest request or reply payload this channel carries: the
    /// requested [`Options::max_msg`], lowered by transports that cannot
    /// carry that much (udp).
    pub fn max_msg(&self) -> usize {
        self.max_msg
    }

    /// Number of connected clients.
    pub fn connections(&self) -> usize {
        self.inner.connections()
    }

    /// Waits for the next request; `Ok(None)` once the stop flag is set.
    #[inline]
    pub fn receive(&mut self) -> Result<Option<Request<'_>>> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        match self.inner.receive(&self.stop)? {
            Some(head) => Ok(Some(Request {
                chan: &mut *self.inner,
                max_msg: self.max_msg,
                head,
                answered: false,
            })),
            None => Ok(None),
        }
    }
}

/// A received request. Answer it with [`reply`](Request::reply) or
/// [`reply_error`](Request::reply_error); dropping it unanswered replies
/// `EIO`, so a client never waits for an answer that will not come.
///
/// A one-way message ([`is_oneway`](Request::is_oneway), sent with
/// [`Connection::send_oneway`]) has nobody waiting: replying to it, or
/// dropping it, sends nothing.
pub struct Request<'a> {
    chan: &'a mut dyn ServerChannel,
    max_msg: usize,
    head: Incoming,
    answered: bool,
}

impl Request<'_> {
    /// The command code.
    #[inline]
    pub fn cmd(&self) -> u32 {
        self.head.cmd
    }

    /// The request payload.
    #[inline]
    pub fn data(&self) -> &[u8] {
        self.chan.data()
    }

    /// True for a one-way message ([`Connection::send_oneway`]): no reply
    /// is expected, and none is sent.
    #[inline]
    pub fn is_oneway(&self) -> bool {
        self.head.oneway
    }

    /// Replies with `data`. A reply larger than the channel allows is not
    /// sent: the client gets `EMSGSIZE` and this returns [`Error::TooLarge`].
    /// For a one-way message nothing is sent and this returns `Ok(())`.
    #[inline]
    pub fn reply(mut self, data: &[u8]) -> Result<()> {
        self.answered = true;
        if self.head.oneway {
            return Ok(());
        }
        if data.len() > self.max_msg {
            self.chan.reply(Status::Err(libc::EMSGSIZE), &[])?;
            return Err(Error::TooLarge {
                len: data.len(),
                max: self.max_msg,
            });
        }
        self.chan.reply(Status::Ok, data)
    }

    /// Replies with an errno-style error code (like a devctl failing with
    /// `ENOTTY` for an unknown command). For a one-way message nothing is
    /// sent.
    #[inline]
    pub fn reply_error(mut self, code: i32) -> Result<()> {
        self.answered = true;
        if self.head.oneway {
            return Ok(());
        }
        self.chan.reply(Status::Err(code), &[])
    }
}

impl Drop for Request<'_> {
    #[inline]
    fn drop(&mut self) {
        if !self.answered && !self.head.oneway {
            let _ = self.chan.reply(Status::Err(libc::EIO), &[]);
        }
    }
}

/// The client side: a connection to a named endpoint.
pub struct Connection {
    inner: Box<dyn ClientConnection>,
    /// The transport's name, for errors.
    transport: &'static str,
}

impl Connection {
    /// Connects to endpoint `name` in `ns` over `transport`, waiting up to
    /// [`Options::wait`] for it to appear.
    pub fn open(
        ns: &Namespace,
        name: &str,
        transport: &dyn Transport,
        opts: &Options,
    ) -> Result<Connection> {
        let path = ns.path_of(name)?;
        // The live endpoint of a transport that does not meet on a socket
        // (a fuse mount) refuses every other transport's connect.
        if let Some(found) = transport::table::served_by(&path) {
            if found != transport.name() {
                return Err(Error::WrongTransport {
                    path,
                    expected: transport.name(),
                    found: found.into(),
                });
            }
        }
        Ok(Connection {
            inner: transport.connect(&path, opts)?,
            transport: transport.name(),
        })
    }

    /// Connects over TCP to a channel served by [`Channel::listen_tcp`] at
    /// `addr` (like `10.0.0.1:5000`), on this host or another, waiting up
    /// to [`Options::wait`] for the server to appear. Nobody listening is
    /// [`Error::NotFound`] (its path is `tcp://ADDR:PORT`); something
    /// other than a msgpass server is [`Error::Protocol`].
    pub fn connect_tcp(addr: impl ToSocketAddrs, opts: &Options) -> Result<Connection> {
        Ok(Connection {
            inner: transport::tcp::connect(addr, opts)?,
            transport: "tcp",
        })
    }

    /// Sends command `cmd` with payload `req`, blocks until the reply, copies
    /// it into `reply` and returns its length. An error reply is
    /// [`Error::Remote`]. A command with the [`ONEWAY`] bit set is
    /// [`Error::ReservedCommand`].
    #[inline]
    pub fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        if cmd & ONEWAY != 0 {
            return Err(Error::ReservedCommand { cmd });
        }
        self.inner.call(cmd, req, reply)
    }

    /// Sends command `cmd` with payload `req` as a one-way message (a QNX
    /// pulse, but with a payload): returns once the message is queued,
    /// without waiting for the server, blocking only while the channel is
    /// full.
    ///
    /// One-way messages are delivered whole and in order with the calls on
    /// the same connection, so a later [`call`](Connection::call) is
    /// received after every one-way message sent before it: a call can
    /// acknowledge them. The server receives it as a [`Request`] whose
    /// [`is_oneway`](Request::is_oneway) is true; its reply (or the reply a
    /// dropped request would send) is silently not sent, and an error at
    /// the server is not reported to the client.
    ///
    /// Errors: [`Error::Unsupported`] on a transport without one-way
    /// messages (see [`supports_oneway`](Connection::supports_oneway));
    /// [`Error::TooLarge`] for a payload over [`max_msg`](Connection::max_msg);
    /// [`Error::ReservedCommand`] for a command with the [`ONEWAY`] bit
    /// set; [`Error::Disconnected`] when the server is known to be gone (a
    /// server that dies with messages queued may only be noticed by a later
    /// send or call).
    pub fn send_oneway(&mut self, cmd: u32, req: &[u8]) -> Result<()> {
        if !self.inner.oneway() {
            return Err(Error::Unsupported {
                what: "one-way messages",
                transport: self.transport,
            });
        }
        if cmd & ONEWAY != 0 {
            return Err(Error::ReservedCommand { cmd });
        }
        if req.len() > self.inner.max_msg() {
            return Err(Error::TooLarge {
                len: req.len(),
                max: self.inner.max_msg(),
            });
        }
        self.inner.send_oneway(cmd, req)
    }

    /// True when this connection's transport carries one-way messages
    /// ([`send_oneway`](Connection::send_oneway)): those whose channel
    /// queues several messages and blocks a sender while full (pipe, fifo,
    /// uds, uds-stream, uds-dgram, sysv-msg, tcp). The one-slot
    /// shared-memory transports, eventfd, io-uring, signal, posix-mq, fuse
    /// and udp (which drops a datagram when the receiver is full) do not.
    pub fn supports_oneway(&self) -> bool {
        self.inner.oneway()
    }

    /// Largest payload the server accepts.
    pub fn max_msg(&self) -> usize {
        self.inner.max_msg()
    }
}
