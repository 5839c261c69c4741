//! The server side: [`Channel`] and the [`Request`] it yields.

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use crate::answer::Once;
use crate::error::{Error, Result};
use crate::names::{EndpointClaim, Namespace};
use crate::pool::{
    HeldCount, Keep, OwnedRequest, Place, PoolShared, Receiver, Spares, MAX_THREADS,
};
use crate::pulse::{pulse_of, Pulse};
use crate::transport::serve::core::{Held, Unanswered};
use crate::transport::{
    self, Answer, Client, Options, ServerChannel, Transport, Typed, View, Window,
};

/// The server side of a named endpoint. One thread receives on it; several
/// channels can live in one process, one per thread; or one channel can be
/// served by a pool of threads ([`Channel::into_pool`]).
///
/// `S` is the transport's server: `dyn ServerChannel` (the default) for a
/// transport chosen at run time ([`Channel::create`]), or a concrete type
/// named at compile time ([`Channel::create_typed`]), whose calls are then
/// direct and can be inlined.
pub struct Channel<S: ServerChannel + ?Sized = dyn ServerChannel> {
    // Field order matters: the transport closes before the claim removes
    // the endpoint and releases the lock.
    inner: Box<S>,
    place: Arc<Place>,
    stop: Arc<AtomicBool>,
    max_msg: usize,
    max_held: usize,
    /// The copying fallback of [`Request::reply_with`], for transports
    /// without a reply buffer of their own (empty until first used).
    scratch: Vec<u8>,
    /// What deferred requests share with the channel: their count, and
    /// the spare buffers of their copying fallback.
    deferred: Deferred,
}

/// What a channel's deferred requests share with it.
#[derive(Default)]
struct Deferred {
    count: Arc<HeldCount>,
    spares: Arc<Spares>,
}

impl Channel {
    /// Creates endpoint `name` in `ns`, served over `transport`. Replaces a
    /// stale endpoint left by a dead server; refuses a live one with
    /// [`Error::AlreadyServed`].
    ///
    /// The first channel a process creates raises the process's soft
    /// RLIMIT_NOFILE to its hard limit, as servers do: a server with
    /// thousands of clients needs thousands of descriptors.
    pub fn create(
        ns: &Namespace,
        name: &str,
        transport: &dyn Transport,
        opts: &Options,
    ) -> Result<Channel> {
        transport::priority::check(transport.name(), opts)?;
        crate::token::refuse_local(transport.name(), opts.token.as_ref())?;
        let claim = EndpointClaim::new(ns, name, transport::table::clean_stale)?;
        let inner = transport.serve(claim.path(), opts)?;
        Ok(Channel::new(
            inner,
            Place::Endpoint(claim),
            transport.max_msg(opts.max_msg),
            opts.max_held,
        ))
    }

    /// Like [`create`](Channel::create), with the transport named at
    /// compile time: the channel holds the transport's own server type, so
    /// receiving and replying are direct calls (no dynamic dispatch), which
    /// the compiler can inline into the serving loop.
    pub fn create_typed<T: Typed>(
        ns: &Namespace,
        name: &str,
        transport: &T,
        opts: &Options,
    ) -> Result<Channel<T::Server>> {
        transport::priority::check(transport.name(), opts)?;
        crate::token::refuse_local(transport.name(), opts.token.as_ref())?;
        let claim = EndpointClaim::new(ns, name, transport::table::clean_stale)?;
        let inner = Box::new(transport.serve_typed(claim.path(), opts)?);
        Ok(Channel::new(
            inner,
            Place::Endpoint(claim),
            transport.max_msg(opts.max_msg),
            opts.max_held,
        ))
    }

    /// Serves a channel on TCP address `addr` (like `10.0.0.1:5000`, or
    /// port 0 for any free port), for clients on other hosts: QNX-style
    /// network-transparent message passing. No namespace is involved: the
    /// TCP connection is the session, and the server's first bytes on it
    /// are the same versioned hello the local rendezvous sends, so a
    /// client of another version or transport gets a clear error. Clients
    /// connect with [`Connection::connect_tcp`](crate::Connection::connect_tcp).
    ///
    /// Liveness across hosts: a peer process that dies is noticed at once
    /// (its kernel closes the connection); a peer host that vanishes is
    /// noticed by TCP keep-alive within about 5 s.
    ///
    /// Who may call: anyone who reaches the address, unless
    /// [`Options::token`] is set. Then a client is served only once it
    /// has presented that token (compared in constant time); one without
    /// it, or with another, is refused ([`Error::Refused`] on its side)
    /// before any request of it is read, and a client that never sends it
    /// is dropped after five seconds, having cost the server no thread.
    ///
    /// ```no_run
    /// use msgpass::{Channel, Connection, Options, Token};
    /// # fn main() -> msgpass::Result<()> {
    /// let token = Token::random()?;
    /// // Give the client `token.to_hex()` by a way of your choosing.
    /// let opts = Options { token: Some(token.clone()), ..Options::default() };
    /// let mut server = Channel::listen_tcp("0.0.0.0:7100", &opts)?;
    /// # let _ = &mut server;
    /// // On the other host, with the same token:
    /// let mut conn = Connection::connect_tcp("10.0.0.1:7100", &opts)?;
    /// # let _ = &mut conn;
    /// # Ok(()) }
    /// ```
    pub fn listen_tcp(addr: impl ToSocketAddrs, opts: &Options) -> Result<Channel> {
        transport::priority::check("tcp", opts)?;
        let (inner, addr) = transport::tcp::listen(addr, opts)?;
        let name = transport::tcp::remote_name(&addr);
        Ok(Channel::new(
            inner,
            Place::Tcp { name, addr },
            opts.max_msg,
            opts.max_held,
        ))
    }
}

/// Raises this process's soft RLIMIT_NOFILE to its hard limit, once, as
/// servers do at start: each client costs a server one to three
/// descriptors (see `TransportInfo::server_fds`), and the usual soft limit
/// (1024) would cap a server at a few hundred clients. A limit that cannot
/// be raised is left as it is: running out of descriptors is handled
/// (the listener rests, the clients wait).
fn raise_descriptor_limit() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let _ = oslayer::rlimit::raise_soft_to_hard(oslayer::rlimit::Resource::Nofile);
    });
}

impl<S: ServerChannel + ?Sized> Channel<S> {
    fn new(inner: Box<S>, place: Place, max_msg: usize, max_held: usize) -> Channel<S> {
        raise_descriptor_limit();
        Channel {
            inner,
            place: Arc::new(place),
            stop: Arc::new(AtomicBool::new(false)),
            max_msg,
            max_held,
            scratch: Vec::new(),
            deferred: Deferred::default(),
        }
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
        match &*self.place {
            Place::Endpoint(claim) => claim.replaced_stale,
            Place::Tcp { .. } => false,
        }
    }

    /// The endpoint's path; `tcp://ADDR:PORT` for a channel made by
    /// [`listen_tcp`](Channel::listen_tcp) (there is no file).
    pub fn path(&self) -> &Path {
        self.place.path()
    }

    /// The address a channel made by [`listen_tcp`](Channel::listen_tcp)
    /// listens on (with the actual port when port 0 was asked for).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        match &*self.place {
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
    pub fn receive(&mut self) -> Result<Option<Request<'_, S>>> {
        if self.stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        match self.inner.receive(&self.stop)? {
            Some(head) => Ok(Some(Request {
                once: Once::new(&mut *self.inner, head, self.max_msg),
                scratch: &mut self.scratch,
                deferred: &self.deferred,
                max_held: self.max_held,
            })),
            None => Ok(None),
        }
    }

    /// Serves this channel from a pool of `threads` threads, the QNX
    /// multithreaded resource manager's model: returns one [`Receiver`]
    /// per thread, to be moved into it. Any free thread takes the next
    /// request of any client, as an [`OwnedRequest`](crate::OwnedRequest)
    /// answerable from any thread; the reply goes to the client that sent
    /// it. A handler stuck in one thread does not stop the others.
    ///
    /// Each connection has a home thread, which takes its requests while it
    /// is free: the thread running on the CPU the client last ran on, where
    /// the transport tells it (the shared-memory transports: the client
    /// publishes its CPU in its slot; pin the pool's threads, one per CPU,
    /// for this to apply), else the threads in turn as clients connect.
    /// When the home thread is busy or stuck, the kernel hands the
    /// connection's next request to another free thread.
    ///
    /// On the shared-memory transports, form the pool before clients
    /// connect: a connection made before is served by the first thread
    /// only (its wake-up descriptor is no longer held, see
    /// `transport::shm`).
    ///
    /// `threads` must be 1 to [`MAX_THREADS`](crate::pool::MAX_THREADS).
    /// The stop flag ([`set_stop_flag`](Channel::set_stop_flag)) is shared
    /// by every receiver; the endpoint is removed when the last receiver
    /// is dropped.
    pub fn into_pool(self, threads: usize) -> Result<Vec<Receiver>> {
        if !(1..=MAX_THREADS).contains(&threads) {
            return Err(Error::BadPool {
                threads,
                max: MAX_THREADS,
            });
        }
        let Channel {
            inner,
            place,
            stop,
            max_msg,
            max_held,
            scratch: _,
            deferred: _,
        } = self;
        let workers = inner.into_pool(threads)?;
        let shared = Arc::new(PoolShared {
            place,
            stop,
            max_msg,
            max_held,
            threads,
            spares: Arc::default(),
        });
        Ok(workers
            .into_iter()
            .enumerate()
            .map(|(index, worker)| Receiver::new(worker, Arc::clone(&shared), index))
            .collect())
    }
}

impl Place {
    /// The endpoint's path, or `tcp://ADDR:PORT`.
    pub(crate) fn path(&self) -> &Path {
        match self {
            Place::Endpoint(claim) => claim.path(),
            Place::Tcp { name, .. } => name,
        }
    }
}

/// A received request. Answer it with [`reply`](Request::reply),
/// [`reply_with`](Request::reply_with) or
/// [`reply_error`](Request::reply_error); dropping it unanswered replies
/// `EIO`, so a client never waits for an answer that will not come.
///
/// A one-way message ([`is_oneway`](Request::is_oneway), sent with
/// [`Connection::send_oneway`](crate::Connection::send_oneway)) has nobody
/// waiting: replying to it, or dropping it, sends nothing.
pub struct Request<'a, S: ServerChannel + ?Sized = dyn ServerChannel> {
    once: Once<&'a mut S>,
    scratch: &'a mut Vec<u8>,
    deferred: &'a Deferred,
    max_held: usize,
}

impl<S: ServerChannel + ?Sized> Request<'_, S> {
    /// The command code.
    #[inline]
    pub fn cmd(&self) -> u32 {
        self.once.head.cmd
    }

    /// The request payload, in memory of the server's own: on the
    /// shared-memory transports (the shm family, eventfd, io-uring,
    /// signal) the library copies it out of the shared memory (the shm
    /// family the first time you ask), its length checked first, so a
    /// client that breaks the protocol cannot change these bytes while
    /// you read them. A handler that reads only part of a large request
    /// reads it in place instead, in [`reply_with`](Request::reply_with)'s
    /// window, and the rest is never copied.
    #[inline]
    pub fn data(&self) -> &[u8] {
        self.once.to.data()
    }

    /// The request payload where it lies, to read in place: on the shm
    /// transports the client's slot, which it may write at any moment
    /// (copy out what you check, as [`View`] makes you), with no copy of
    /// the bytes you do not read; elsewhere [`data`](Request::data)'s.
    /// To decide, before answering, whether to answer in place or with
    /// an error.
    #[inline]
    pub fn view(&self) -> View<'_> {
        self.once.to.view()
    }

    /// The request payload's length, without a copy of it.
    #[inline]
    pub fn len(&self) -> usize {
        self.once.head.len
    }

    /// True when the request has no payload.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.once.head.len == 0
    }

    /// True for a one-way message: no reply is expected, and none is sent.
    #[inline]
    pub fn is_oneway(&self) -> bool {
        self.once.head.oneway
    }

    /// Who sent it: its connection (an id no other connection of this
    /// channel ever has) and, where the kernel names them, the client's
    /// process, user and group (see [`Client`]). Read from the kernel's
    /// records of the connection, never from what the client sent: a
    /// server may base quotas and permissions on it.
    #[inline]
    pub fn client(&self) -> Client {
        crate::answer::client_or_unknown(self.once.to.client())
    }

    /// The pulse this is ([`Connection::send_pulse`](crate::Connection::send_pulse));
    /// `None` for a call or a one-way message. A pulse needs no reply.
    #[inline]
    pub fn pulse(&self) -> Option<Pulse> {
        pulse_of(self.once.head, self.data())
    }

    /// Replies with `data` (copied into the transport). A reply larger than
    /// the channel allows is not sent: the client gets `EMSGSIZE` and this
    /// returns [`Error::TooLarge`]. For a one-way message nothing is sent
    /// and this returns `Ok(())`.
    #[inline]
    pub fn reply(mut self, data: &[u8]) -> Result<()> {
        self.once.reply(data)
    }

    /// Replies in place: `fill` gets the memory the transport lends for
    /// the reply (a [`Window`] of [`Channel::max_msg`] bytes, starting
    /// with the request's bytes: on the shm slot the reply is written
    /// over the request, and the transports with one area per direction
    /// copy the request to the front of the reply's), writes the reply
    /// into it and returns its length; the reply is published when `fill`
    /// returns. The window is only reachable inside `fill`, so nothing
    /// can touch it once the client owns it again.
    ///
    /// On the shm transports the window is the client's slot: no byte is
    /// copied but those `fill` reads and writes, and what it reads it
    /// copies out of memory the client can write at any moment, to check
    /// in its own ([`View::read`], [`View::get`]). Elsewhere the
    /// window is a buffer of the channel's, holding a copy of the
    /// request, and its first `len` bytes are sent as by
    /// [`reply`](Request::reply). A length over the window is not sent:
    /// the client gets `EMSGSIZE` and this returns [`Error::TooLarge`].
    /// For a one-way message `fill` is not called.
    #[inline]
    pub fn reply_with(mut self, fill: impl FnOnce(&mut Window<'_>) -> usize) -> Result<()> {
        self.once.reply_with(self.scratch, fill)
    }

    /// Replies with an errno-style error code (like a devctl failing with
    /// `ENOTTY` for an unknown command). For a one-way message nothing is
    /// sent.
    #[inline]
    pub fn reply_error(mut self, code: i32) -> Result<()> {
        self.once.reply_error(code)
    }

    /// Defers the answer (QNX: keep the receive id, `MsgReply` later):
    /// takes the request out of the channel as an [`OwnedRequest`], which
    /// can be kept, sent to another thread and answered there, in any
    /// order with others, while the channel goes on receiving. Its client
    /// waits for it (or for its own timeout: a reply after that is
    /// discarded by the client).
    ///
    /// Dropped unanswered, it replies `EIO` at once; answered after its
    /// client died, the reply is [`Error::Disconnected`] and goes nowhere.
    /// How many a channel may hold is bounded: at most one per connection
    /// (the transport takes no other request of that connection
    /// meanwhile), and at most [`Options::max_held`] in all; past that the
    /// request is answered `EAGAIN` and this is [`Error::HeldLimit`].
    ///
    /// On the shared-memory transports the request stays in the client's
    /// slot, read in place until answered (the client cannot reuse the slot
    /// meanwhile); elsewhere its payload is copied out.
    pub fn defer(mut self) -> Result<OwnedRequest> {
        let head = self.once.head;
        let held: Box<dyn Answer> = if head.oneway {
            // Nobody waits for an answer: keep a copy of the payload.
            let data = self.data().to_vec();
            Held::boxed(data, Unanswered, self.once.max_msg, self.once.to.client())
        } else {
            match self.once.to.detach() {
                Some(held) => held,
                // Dropped here: the channel answers EIO.
                None => return Err(Error::unsupported("deferred replies")),
            }
        };
        // The channel no longer holds it: its answer goes through `held`.
        self.once.disarm();
        let keep = Keep {
            spares: Arc::clone(&self.deferred.spares),
            most: 2,
            count: Arc::clone(&self.deferred.count),
            counted: false,
        };
        OwnedRequest::admit(held, head, self.once.max_msg, self.max_held, keep)
    }
}

impl<S: ServerChannel + ?Sized> crate::answer::Received for Request<'_, S> {
    #[inline]
    fn cmd(&self) -> u32 {
        Request::cmd(self)
    }
    #[inline]
    fn data(&self) -> &[u8] {
        Request::data(self)
    }
    #[inline]
    fn len(&self) -> usize {
        Request::len(self)
    }
    #[inline]
    fn is_oneway(&self) -> bool {
        Request::is_oneway(self)
    }
    #[inline]
    fn client(&self) -> Client {
        Request::client(self)
    }
    #[inline]
    fn reply(self, data: &[u8]) -> Result<()> {
        Request::reply(self, data)
    }
    #[inline]
    fn reply_with(self, fill: impl FnOnce(&mut Window<'_>) -> usize) -> Result<()> {
        Request::reply_with(self, fill)
    }
    #[inline]
    fn reply_error(self, code: i32) -> Result<()> {
        Request::reply_error(self, code)
    }
}
