//! What a transport is, to the rest of msgpass: the traits every
//! transport implements ([`Transport`], [`ServerChannel`],
//! [`ClientConnection`], [`Answer`], [`PoolWorker`], [`Typed`]) and
//! the types they speak in ([`Options`], [`Incoming`], [`Status`],
//! [`Wait`]). The lowest layer of the transports: it imports no
//! transport, and the table, the transports and the generic modules all
//! import it (the transport module re-exports it for users).

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::mem::window::{View, Window};
use crate::error::{Error, Result};
use crate::token::Token;

/// Most threads a pool may have.
pub const MAX_THREADS: usize = 64;

/// Bytes of a pulse's payload on the wire.
pub(crate) const PULSE_LEN: usize = 8;

/// How the two sides of a transport wait for each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wait {
    /// Poll shared memory: lowest latency, burns a CPU for each waiting side.
    Spin,
    /// Sleep in the kernel until woken.
    Block,
    /// Spin for [`Options::spin`](super::Options::spin), then sleep.
    Hybrid,
}

/// Tuning shared by every transport. The defaults suit most uses.
#[derive(Debug, Clone)]
pub struct Options {
    /// Largest request or reply payload, in bytes (default 65536).
    pub max_msg: usize,
    /// How long a hybrid waiter spins before it sleeps (default 20 us).
    pub spin: Duration,
    /// Longest a blocked side sleeps before it re-checks that its peer is
    /// alive and that it has not been asked to stop (default 100 ms).
    pub tick: Duration,
    /// How long a client waits for the endpoint to appear (`None`: fail at
    /// once if nobody serves it), like QNX `waitfor`.
    pub wait: Option<Duration>,
    /// Whether a spinning shared-memory waiter learns how long to hold back
    /// before its first look at the peer's word, so that it does not take
    /// the cache line from a peer about to write it (default true; false
    /// looks at once, for measuring what the pacing buys).
    pub pace: bool,
    /// Most requests a server thread may hold unanswered at once: deferred
    /// ([`Request::defer`](crate::Request::defer)) or, in a pool, received
    /// and not yet answered (default 1024). Past it a request is answered
    /// `EAGAIN` at once. Each connection has at most one held request
    /// besides (a client has one call outstanding; a transport takes no
    /// other request of a connection whose request is held), so a server
    /// holds at most as many as it has clients.
    pub max_held: usize,
    /// The deadline of every call on a connection opened with these
    /// options, from the call's start (`None`, the default: wait for
    /// ever); see [`Connection::set_timeout`](crate::Connection::set_timeout).
    pub call_timeout: Option<Duration>,
    /// Priority inheritance through messages, for a server (default
    /// false): the thread serving a request runs at the calling thread's
    /// policy and priority until it replies, then at its own again, and a
    /// server busy with a low caller's request is raised as soon as a
    /// higher caller sends (see [`priority`](crate::transport::serve::priority) for how the
    /// caller is named by the kernel and never taken on its word). Only
    /// on `uds`, `uds-stream`, `uds-dgram`, `pipe` and `fifo`, in a process that may use
    /// SCHED_FIFO (CAP_SYS_NICE or an RLIMIT_RTPRIO above 0):
    /// [`Channel::create`](crate::Channel::create) refuses it elsewhere
    /// with [`Error::NoInheritance`], saying why.
    pub inherit_priority: bool,
    /// The shared secret of a remote TCP channel (default `None`): a
    /// server made by [`Channel::listen_tcp`](crate::Channel::listen_tcp)
    /// with a token serves only clients that present it, and
    /// [`Connection::connect_tcp`](crate::Connection::connect_tcp)
    /// presents it when the server asks. A client without it, or with
    /// another, is refused ([`Error::Refused`]) before any request is
    /// taken. Local transports meet through the namespace, whose file
    /// permissions say who may connect:
    /// [`Channel::create`](crate::Channel::create) and
    /// [`Connection::open`](crate::Connection::open) refuse a token
    /// ([`Error::Unsupported`]) rather than seem to guard with it.
    pub token: Option<Token>,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            max_msg: 65536,
            spin: Duration::from_micros(20),
            tick: Duration::from_millis(100),
            wait: None,
            pace: true,
            max_held: 1024,
            call_timeout: None,
            inherit_priority: false,
            token: None,
        }
    }
}

/// The bit of a command code that marks a one-way message on the wire.
/// Application command codes must leave it clear: [`crate::Connection::call`]
/// refuses them with [`Error::ReservedCommand`], and servers strip it (see
/// [`Incoming::oneway`]).
pub const ONEWAY: u32 = 1 << 31;

/// The header of one incoming request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Incoming {
    /// The command code the client sent (without the [`ONEWAY`] bit).
    pub cmd: u32,
    /// Length of the request payload, available from [`Answer::data`].
    pub len: usize,
    /// True for a one-way message: the client waits for no reply, and none
    /// may be sent.
    pub oneway: bool,
}

impl Incoming {
    /// The header of a request whose command code came off the wire
    /// (perhaps with the [`ONEWAY`] bit set).
    pub(crate) fn from_wire(code: u32, len: usize) -> Incoming {
        Incoming {
            cmd: code & !ONEWAY,
            len,
            oneway: code & ONEWAY != 0,
        }
    }
}

/// Who sent a request, as the kernel says: the connection it came on,
/// and the process, user and group the kernel named for it (QNX's
/// `_msg_info`: `scoid`, `pid`, and the credentials). Nothing here comes
/// from what the client sent: a server may decide on it (quotas per
/// connection or per user, who may do what).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Client {
    /// The connection: the same for every request of it, and never the
    /// id of another connection of the channel, earlier or later.
    pub id: u64,
    /// The client's credentials, where the kernel names them: the peer
    /// of its rendezvous session when it connected (`SO_PEERCRED`), or,
    /// on fuse, the calling thread of each request as the kernel
    /// reports it. `None` on tcp and udp, whose peer may be on another
    /// host.
    pub creds: Option<Creds>,
}

/// A process, a user and a group, as the kernel names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Creds {
    /// The process.
    pub pid: i32,
    /// Its effective user.
    pub uid: u32,
    /// Its effective group.
    pub gid: u32,
}

/// How a reply ends a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Success, with a payload.
    Ok,
    /// Failure with an errno-style code (positive), no payload.
    Err(i32),
}

impl Status {
    /// The status as it travels in a reply header (0, or the errno's bits)
    /// and the payload that goes with it (none with an error).
    pub(crate) fn encode(self, data: &[u8]) -> (u32, &[u8]) {
        match self {
            Status::Ok => (0, data),
            Status::Err(c) => (c as u32, &[]),
        }
    }

    /// What a client makes of a reply with wire status `status` and `len`
    /// payload bytes for a caller's buffer of `cap`: the server's error, a
    /// buffer too small, or fine.
    pub(crate) fn check_reply(status: u32, len: usize, cap: usize) -> Result<()> {
        if status != 0 {
            return Err(Error::Remote {
                code: status as i32,
            });
        }
        if len > cap {
            return Err(Error::ReplyTooLarge { len, cap });
        }
        Ok(())
    }
}

/// A received request to answer, once: the one answering interface of
/// msgpass. A [`ServerChannel`] is one (it answers the request its last
/// `receive` returned), and so is a request held apart from its channel
/// (a `Box<dyn Answer>`, made by [`ServerChannel::detach`] or received by
/// a [`PoolWorker`]), answered from any thread. A held request is answered
/// at most once: after a reply, the next one is an error.
pub trait Answer: Send {
    /// The request payload (of a held request: private memory, copied out
    /// of shared memory when the request was taken).
    fn data(&self) -> &[u8];
    /// The same payload where it lies, to read in place (the default:
    /// [`data`](Answer::data)'s bytes).
    fn view(&self) -> View<'_> {
        View::from(self.data())
    }
    /// Who sent the request (`None` without one, and by default: every
    /// transport of this crate says).
    fn client(&self) -> Option<Client> {
        None
    }
    /// Replies with `data`. A channel's client gone meanwhile is not an
    /// error (its connection is dropped); a held request's is
    /// [`Error::Disconnected`] (the reply goes nowhere; nothing is kept).
    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()>;
    /// The memory to build the reply in, in place: at least
    /// [`Options::max_msg`] bytes, starting with the request. `None` (the
    /// default) on transports without it, for which
    /// [`Request::reply_with`](crate::Request::reply_with) copies through a
    /// buffer of its own.
    fn reply_buffer(&mut self) -> Option<Window<'_>> {
        None
    }
    /// Replies with the first `len` bytes of
    /// [`reply_buffer`](Answer::reply_buffer); called only when it is
    /// `Some` (the default refuses).
    fn reply_in_place(&mut self, _len: usize) -> Result<()> {
        Err(Error::unsupported("replies in place"))
    }
}

/// Server side of a channel: receives requests from any connected client
/// and answers each (as an [`Answer`]) before receiving the next.
pub trait ServerChannel: Answer {
    /// Waits for the next request. Returns `Ok(None)` once `stop` is set.
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>>;
    /// Number of connected clients.
    fn connections(&self) -> usize;
    /// Takes the request last returned by `receive` out of the channel as
    /// an owned handle, to be answered later from any thread while the
    /// channel goes on receiving (a deferred reply: see
    /// [`Request::defer`](crate::Request::defer)). The transport keeps at
    /// most one request of a connection held: it takes no other request
    /// of that connection until the held one is answered. `None` (the
    /// default) where the transport cannot.
    fn detach(&mut self) -> Option<Box<dyn Answer>> {
        None
    }
    /// Serves the channel from `threads` threads instead: one worker per
    /// thread, each receiving requests as owned handles (see
    /// [`Channel::into_pool`](crate::Channel::into_pool)). The default
    /// refuses.
    fn into_pool(self: Box<Self>, _threads: usize) -> Result<Vec<Box<dyn PoolWorker>>> {
        Err(Error::unsupported("a pool of threads on one channel"))
    }
}

/// One thread's share of a channel served by a pool of threads (made by
/// [`ServerChannel::into_pool`]): receives the next request any client
/// sends, as an owned handle.
pub trait PoolWorker: Send {
    /// Waits for the next request; `Ok(None)` once `stop` is set (within
    /// one [`Options::tick`]).
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<(Incoming, Box<dyn Answer>)>>;
    /// Number of connected clients (of the whole channel).
    fn connections(&self) -> usize;
}

/// Client side of a connection.
pub trait ClientConnection: Send {
    /// Sends `req` with command `cmd`, blocks for the reply, copies it into
    /// `reply` and returns its length.
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize>;
    /// Largest payload the server accepts.
    fn max_msg(&self) -> usize;
    /// The buffer to build the next request in, in place: at least
    /// [`max_msg`](ClientConnection::max_msg) bytes. `None` (the default)
    /// on transports without one, for which
    /// [`Connection::call_with`](crate::Connection::call_with) copies
    /// through buffers of its own.
    fn request_buffer(&mut self) -> Option<Window<'_>> {
        None
    }
    /// Sends the first `len` bytes of [`request_buffer`] with command
    /// `cmd`, blocks for the reply and returns it in the same buffer; called
    /// only when [`request_buffer`] is `Some` (the default refuses).
    ///
    /// [`request_buffer`]: ClientConnection::request_buffer
    fn call_in_place(&mut self, _cmd: u32, _len: usize) -> Result<View<'_>> {
        Err(Error::unsupported("calls in place"))
    }
    /// Sends `req` with command `cmd` as a one-way message (the wire
    /// command is `cmd | ONEWAY`) and returns once it is queued, without
    /// waiting for the server. Only transports whose [`oneway`] is true
    /// implement it; the default is [`Error::Unsupported`].
    ///
    /// [`oneway`]: ClientConnection::oneway
    fn send_oneway(&mut self, _cmd: u32, _req: &[u8]) -> Result<()> {
        Err(Error::unsupported("one-way messages"))
    }
    /// True when [`send_oneway`](ClientConnection::send_oneway) works: the
    /// channel queues several messages and a full one blocks the sender
    /// (never drops a message).
    fn oneway(&self) -> bool {
        false
    }
    /// Gives every later call a deadline `timeout` after it starts (`None`:
    /// none). A call past it returns [`Error::TimedOut`]; its reply, when
    /// it comes, is discarded by the next call, which waits for it first
    /// (a connection has one call at the server at a time). The default
    /// refuses a timeout.
    fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<()> {
        match timeout {
            None => Ok(()),
            Some(_) => Err(Error::unsupported("call timeouts")),
        }
    }
    /// Sends a pulse (its wire payload) if the path to the server has room
    /// for it now, else [`Error::PulseQueueFull`]; never waits for the
    /// server. The default refuses.
    fn send_pulse(&mut self, _payload: &[u8; PULSE_LEN]) -> Result<()> {
        Err(Error::unsupported("pulses"))
    }
}

/// A message-passing mechanism.
pub trait Transport: Send + Sync + std::fmt::Debug {
    /// Its name in the transport table ([`TransportInfo::name`](crate::transport::TransportInfo::name)).
    fn name(&self) -> &'static str;
    /// Serves the endpoint at `path` (already claimed by the caller).
    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>>;
    /// Connects to the endpoint at `path`.
    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>>;
    /// The largest payload this transport carries when `requested` is
    /// asked for ([`Options::max_msg`]): most carry any size, a few (udp)
    /// lower it. Servers enforce it; clients learn it on connecting.
    fn max_msg(&self, requested: usize) -> usize {
        requested
    }
}

/// A transport whose server and client types are named at compile time,
/// for [`Channel::create_typed`](crate::Channel::create_typed) and
/// [`Connection::open_typed`](crate::Connection::open_typed): calls on
/// them are direct, with no dynamic dispatch. [`Shm`](crate::transport::mechanisms::shm::Shm) is one;
/// [`by_name`](crate::transport::by_name) keeps serving programs that choose at run time.
pub trait Typed: Transport {
    /// The server side.
    type Server: ServerChannel + 'static;
    /// The client side.
    type Client: ClientConnection + 'static;
    /// Serves the endpoint at `path` (already claimed by the caller).
    fn serve_typed(&self, path: &Path, opts: &Options) -> Result<Self::Server>;
    /// Connects to the endpoint at `path`.
    fn connect_typed(&self, path: &Path, opts: &Options) -> Result<Self::Client>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_never_print_their_token() {
        let opts = Options {
            token: Some(Token::from_bytes([0xab; Token::LEN])),
            ..Options::default()
        };
        assert!(!format!("{opts:?}").contains("abab"), "{opts:?}");
    }
}
