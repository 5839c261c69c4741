//! The one server of the descriptor-driven transports: a connection table,
//! the kernel's ready list over it, accepting, fairness between
//! connections, the single-client fast path, liveness, and the pool. A
//! transport says only how a connection is made ([`Acceptor`]) and how one
//! framed message crosses it ([`Wire`]); everything else is here, once.
//!
//! **Connections.** A [`Conn`] is a wire and, where the wire does not
//! report a dead peer by itself, the rendezvous session whose hang-up
//! does. It lives in the table under a [`Token`] (which the kernel hands
//! back with each event, so no lookup ever scans), behind a lock of its
//! own: dropping one releases everything it holds (descriptors, names
//! beside the endpoint, queues) without touching the others.
//!
//! **Waiting.** Each worker waits on its epoll set ([`Sets`]), which holds
//! the listener, the acceptor's set-up descriptors and every connection's
//! wire and session: a wait costs the same with ten thousand idle clients
//! as with one. Ready connections are served round-robin: a wait reports
//! each ready connection once, each gets one request, and the next wait
//! reports again those with more, so a flooding client cannot starve the
//! others. A message a wire has already read into its buffer (where the
//! kernel cannot see it) puts its connection in the worker's next round,
//! after what the next wait reports: a stream client that sends many
//! messages at once (one read takes them all) gets one a round, like the
//! others, and cannot keep the worker from looking at the set.
//! With a single client and a single worker the server waits in the wire's
//! own timed receive instead (one system call per request where the
//! mechanism has one, as a hand-written loop makes), and looks at
//! everything else when that receive times out or the doorman says a
//! client connected (`doorman.rs`), so no client, busy or slow, can lock a
//! newcomer out: the doorman ends a wait on a pipe or eventfd wire at once
//! (the poker's poke), and a socket's or queue's timed receive, which
//! nobody can end from outside, lasts [`SOLO_QUIET`] before the worker
//! goes back to its set (which holds the listener) until the client sends
//! again.
//!
//! **One active client among idle ones.** A wait on the set costs more
//! than a wait on one descriptor even when the set holds a single ready
//! connection: the kernel wakes the set (its callback runs for every
//! message) and then we read, two calls where one would do. Measured on
//! a 2-vCPU VM, a same-CPU Unix-socket round trip through `epoll_wait` +
//! `recv` was 1.12-1.19x one through a blocking `recv` alone, in C as in
//! this server (io_uring's multishot receive, tried too, was no faster).
//! So when [`SOLO_STREAK`] waits in a row have reported the same one
//! connection and nothing else, and its wire has a one-call timed
//! receive ([`Wire::quick_timeout`]: sockets, POSIX queues), the worker
//! serves it as it would a single client, while the others stay in the
//! set: it looks at the set without waiting every [`SOLO_LOOK`] requests
//! and whenever the client is quiet for [`SOLO_QUIET`], and goes back to
//! the set as soon as anything else is ready. A thousand idle clients
//! then cost the one active client nothing per message; a client that
//! becomes active waits at most [`SOLO_LOOK`] of the busy one's requests,
//! or [`SOLO_QUIET`], to be seen, and from then on the round robin
//! serves both.
//!
//! **A pool.** With several workers, a connection is registered in every
//! worker's set, exclusively, its home worker's first (homes are given in
//! turn as clients connect). A worker takes a request under its
//! connection's lock and releases the lock at once; the connection is then
//! *serving* until the reply, and no other worker reads it meanwhile (a
//! client that sends again before its answer is muted until then). The
//! reply goes back through the request's handle, from any thread.
//!
//! **Replies** of a single worker go to the connection whose lock it holds
//! from the request on (`Current`): one thread, no other locker.
//!
//! **In place.** A wire whose messages lie in shared memory lends a
//! private buffer of its own (see [`Wire::recv_lent`]): the request is
//! read there ([`Core::data`]), copied out of the shared memory once its
//! header was checked, and the reply built there ([`Core::reply_buffer`]),
//! on the connection the worker holds. A detached (pool) request copies its
//! payload out and replies by copy.

use std::collections::{HashSet, VecDeque};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use oslayer::epoll::{Epoll, Interest, Ready};
use parking_lot::{ArcMutexGuard, Mutex, RawMutex, RwLock};

use crate::error::{Error, Result};
use crate::pulse::{is_pulse, Pulse};
use crate::transport::api::MAX_THREADS;
use crate::transport::api::{Client, Creds, Incoming, Options, Status};
use crate::transport::mem::window::Window;
use crate::transport::serve::core::{Core, Held, ReplyTo, Single};
use crate::transport::serve::priority::{Boost, Boosts, Peer, PeerProcess, Watched};
use crate::transport::serve::server::{in_place_parts, reply_parts, starved, ACCEPT_EVERY};
use crate::transport::serve::sets::Sets;
use crate::transport::serve::slab::{Slab, Token};
use crate::transport::wire::doorman::{self, Door};
use crate::transport::wire::framing::{frame_head, head, Wire, HEAD, HINT, TID};
use crate::transport::wire::rendezvous::Listener;

/// One client of a server, as an acceptor makes it.
pub(crate) struct Conn<W> {
    /// How messages cross.
    pub(crate) wire: W,
    /// The rendezvous session, whose hang-up means the client died; `None`
    /// where the wire is the session (uds, remote tcp) or reports a dead
    /// peer itself.
    pub(crate) session: Option<OwnedFd>,
    /// The client's process as the kernel named it when it connected its
    /// rendezvous session, where there is one and priority inheritance
    /// asks about its threads.
    pub(crate) peer: Option<PeerProcess>,
    /// The client's credentials as the kernel named them (the same
    /// session), where there are any: what [`Client::creds`] says.
    pub(crate) creds: Option<Creds>,
}

/// The process at the other end of a rendezvous session, as the kernel
/// named it when it connected (see `priority.rs`).
pub(crate) fn peer_of(session: &OwnedFd) -> Option<PeerProcess> {
    PeerProcess::of(session.as_fd())
}

/// The credentials of the other end of a rendezvous session, as the
/// kernel named them when it connected.
pub(crate) fn creds_of(session: &OwnedFd) -> Option<Creds> {
    crate::transport::serve::server::creds_of(session.as_fd())
}

/// Where an acceptor registers the descriptors of connections it is still
/// setting up (tcp's listener, sessions awaiting their stream...), each
/// under a number of its choosing, handed back to
/// [`Acceptor::setup_ready`].
pub(crate) struct Setup<'a> {
    sets: &'a Sets,
}

impl Setup<'_> {
    /// Watches `fd` for readability (a hang-up is always reported) as
    /// set-up step `id`.
    pub(crate) fn add(&self, fd: BorrowedFd<'_>, id: u32) -> io::Result<()> {
        self.sets.add(fd, setup_token(id), Interest::READABLE, 0)
    }

    /// Stops watching `fd`.
    pub(crate) fn delete(&self, fd: BorrowedFd<'_>) {
        self.sets.delete(fd);
    }
}

/// How a server makes its connections: the only per-mechanism part of the
/// server loop.
pub(crate) trait Acceptor: Send + 'static {
    /// The wire of a connection.
    type W: Wire + 'static;

    /// A client waits on the rendezvous listener: makes its objects and
    /// greets it. Returns the connection when it can be served at once;
    /// `None` when making it failed (the client hears a hang-up) or the
    /// mechanism finishes it later through [`Acceptor::setup_ready`]; an
    /// error when the client could not even be taken off the listener
    /// ([`starved`]: the server then leaves its listeners alone a tick).
    fn accept(&mut self, listener: &Listener, setup: &Setup<'_>) -> Result<Option<Conn<Self::W>>>;

    /// Every set-up descriptor the acceptor has now, with its number (to
    /// register them with a new worker).
    fn setup_fds(&self, _each: &mut dyn FnMut(BorrowedFd<'_>, u32)) {}

    /// Set-up step `id` is ready. Returns a connection that is now
    /// complete; an error as for [`Acceptor::accept`].
    fn setup_ready(&mut self, _id: u32, _setup: &Setup<'_>) -> Result<Option<Conn<Self::W>>> {
        Ok(None)
    }

    /// The set-up descriptors that are listeners (taking a client needs a
    /// descriptor: they are left alone while accepting starves, while the
    /// others, whose events free descriptors, are not).
    fn listeners(&self, _each: &mut dyn FnMut(BorrowedFd<'_>, u32)) {}

    /// True while connections are being set up (the single-client path
    /// is off: their descriptors must be watched).
    fn setting_up(&self) -> bool {
        false
    }

    /// Drops set-up work that took too long; true when anything went.
    fn expire(&mut self, _setup: &Setup<'_>) -> bool {
        false
    }
}

/// Waits in a row that reported the same one connection, and nothing else,
/// before a worker serves it alone among idle clients (see the module doc).
const SOLO_STREAK: u32 = 8;
/// Requests of a connection served alone among idle clients between two
/// looks at the set.
const SOLO_LOOK: u32 = 16;
/// How long a connection served alone among idle clients may be quiet
/// before the worker waits on the set again.
const SOLO_QUIET: Duration = Duration::from_millis(2);

/// How many ticks a peer has to finish a message it began, or to take a
/// reply, before it is dropped.
const PEER_TICKS: u32 = 10;

/// Tokens at and above this are the server's own descriptors.
const OWN: u64 = 1 << 63;
/// The rendezvous listener's token.
const LISTENER: u64 = OWN;

/// The token of set-up step `id`.
fn setup_token(id: u32) -> u64 {
    OWN | (1 + id as u64)
}

/// What the kernel handed back, as the server reads it.
enum Source {
    Listener,
    Setup(u32),
    Wire(Token),
    Session(Token),
}

impl Source {
    fn of(raw: u64) -> Source {
        if Token::is_table(raw) {
            return match Token::from_raw(raw) {
                (t, false) => Source::Wire(t),
                (t, true) => Source::Session(t),
            };
        }
        match raw - OWN {
            0 => Source::Listener,
            n => Source::Setup((n - 1) as u32),
        }
    }
}

/// The connections that began a message (or a handshake) and have not
/// finished it, and whether there are any (read without the lock on the
/// single-client path, which is off while there are).
#[derive(Default)]
struct Partial {
    set: Mutex<HashSet<Token>>,
    any: AtomicBool,
}

impl Partial {
    fn insert(&self, t: Token) {
        let mut set = self.set.lock();
        set.insert(t);
        self.any.store(true, Ordering::Relaxed);
    }

    /// All of them, taken out.
    fn take(&self) -> Vec<Token> {
        let mut set = self.set.lock();
        self.any.store(false, Ordering::Relaxed);
        set.drain().collect()
    }

    #[inline]
    fn is_empty(&self) -> bool {
        !self.any.load(Ordering::Relaxed)
    }
}

/// A connection's state, behind its lock.
pub(crate) struct ConnIo<W> {
    token: Token,
    /// `None` once the connection is dropped (its descriptors closed).
    wire: Option<W>,
    session: Option<OwnedFd>,
    /// A request of it is out, not yet answered (pool).
    serving: bool,
    /// Unregistered until the reply (it sent while serving).
    muted: bool,
    /// The worker the kernel tells first (a pool).
    home: usize,
    /// When its home last moved.
    moved: Option<Instant>,
    /// Its caller, with priority inheritance.
    peer: Option<Arc<Peer>>,
    /// Who it is (its token's id, and the kernel's credentials).
    client: Client,
}

type ConnRef<W> = Arc<Mutex<ConnIo<W>>>;
type Locked<W> = ArcMutexGuard<RawMutex, ConnIo<W>>;

/// The listener and the acceptor, which one worker at a time uses.
struct Accepting<A> {
    acceptor: A,
    listener: Option<Listener>,
    /// Until when the listeners are left alone (accepting starved).
    paused: Option<Instant>,
}

/// What every worker of a server shares.
pub(crate) struct ReactorCore<A: Acceptor> {
    table: RwLock<Slab<ConnRef<A::W>>>,
    accepting: Mutex<Accepting<A>>,
    sets: Sets,
    /// The acceptor is setting connections up (cached for the fast path).
    setting_up: AtomicBool,
    /// The home of the next connection (pool).
    next_home: AtomicUsize,
    /// Connections that began a message (or a handshake) and have not
    /// finished it: looked at once a tick, to drop those overdue.
    partial: Partial,
    /// How many connections the table holds (read without its lock on
    /// the single-client path).
    count: AtomicUsize,
    /// Worker `w`'s CPU + 1 when it is pinned to one CPU (0: not), for
    /// the homes of connections (a pool).
    pinned: [AtomicU32; MAX_THREADS],
    max_msg: usize,
    tick: Duration,
    /// Ourselves, for the handles of detached requests.
    me: Weak<ReactorCore<A>>,
    /// Priority inheritance and its watcher, when asked for.
    inherit: Option<Watched>,
    /// Says when a client connects while a worker serves one client alone
    /// (see `doorman.rs`); `None` where no listener could be watched (the
    /// single-client path then looks every [`ACCEPT_EVERY`] requests).
    door: Option<Arc<Door>>,
}

/// Why the single-client path serves a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lone {
    /// It is the server's only client.
    Sole,
    /// It is the only active one among idle clients.
    Busy,
}

/// The request a worker holds.
enum Current<W> {
    /// Read by a single worker, which keeps the connection locked until
    /// the reply.
    Locked(Locked<W>),
    /// Read by a pool worker: the connection is marked serving.
    Serving(ConnRef<W>),
}

/// One thread's share of a server.
pub(crate) struct Worker<W> {
    index: usize,
    /// This worker's CPU is registered in `pinned` (or it is not pinned).
    placed: bool,
    set: Arc<Epoll>,
    events: Vec<Ready>,
    /// Events harvested and not yet handled, in order: this round.
    queue: VecDeque<Ready>,
    /// Connections with a message already read into their wire's buffer:
    /// the next round, after the next wait's events.
    later: Vec<Token>,
    /// The request as received: header, then payload (the header only when
    /// the wire lends its memory).
    buf: Vec<u8>,
    len: usize,
    cur: Option<Current<W>>,
    /// The connection last served (the single-client path's).
    sole: Option<Token>,
    /// The connection the single-client path serves, taken out of the
    /// sets meanwhile: registered, every message it receives would also
    /// run the epoll callback, a tenth of a same-CPU round trip here.
    alone: Option<(Token, ConnRef<W>)>,
    /// The doorman can end a wait on `alone`'s wire (see `doorman.rs`).
    woken: bool,
    /// Waits in a row that reported only `sole` (see [`SOLO_STREAK`]).
    streak: u32,
    calls: u32,
    /// When everything was last looked at.
    last_look: Instant,
    /// This thread's boosts (priority inheritance).
    boosts: Option<Arc<Boosts>>,
    /// The boost of the request it holds.
    boost: Option<Boost>,
}

/// A new server taking clients from `listener` (if any) through
/// `acceptor`, for messages up to `opts.max_msg` bytes, looking around
/// every `opts.tick`, with priority inheritance if `opts` asks for it: the
/// [`ServerChannel`](crate::transport::api::ServerChannel) of a
/// descriptor-driven transport.
pub(crate) fn serve<A: Acceptor>(
    acceptor: A,
    listener: Option<Listener>,
    opts: &Options,
) -> Result<Single<ReactorCore<A>>> {
    let (max_msg, tick) = (opts.max_msg, opts.tick);
    let inherit = match opts.inherit_priority {
        true => Some(Watched::start()?),
        false => None,
    };
    let door = door_of(&acceptor, listener.as_ref());
    let core = Arc::new_cyclic(|me| ReactorCore {
        table: RwLock::new(Slab::default()),
        accepting: Mutex::new(Accepting {
            acceptor,
            listener,
            paused: None,
        }),
        sets: Sets::default(),
        setting_up: AtomicBool::new(false),
        next_home: AtomicUsize::new(0),
        partial: Partial::default(),
        count: AtomicUsize::new(0),
        pinned: std::array::from_fn(|_| AtomicU32::new(0)),
        max_msg,
        tick,
        me: me.clone(),
        inherit,
        door,
    });
    Single::new(core)
}

/// The door the doorman knocks on when a client connects to `listener`
/// or one of the acceptor's listeners.
fn door_of<A: Acceptor>(acceptor: &A, listener: Option<&Listener>) -> Option<Arc<Door>> {
    let mut fds: Vec<io::Result<OwnedFd>> = listener
        .map(|l| l.as_fd().try_clone_to_owned())
        .into_iter()
        .collect();
    acceptor.listeners(&mut |fd, _| fds.push(fd.try_clone_to_owned()));
    // Not a failure of the channel: without a door the single-client
    // path looks at the set every ACCEPT_EVERY requests, as it did.
    let fds = fds.into_iter().collect::<io::Result<Vec<OwnedFd>>>().ok()?;
    doorman::watch(fds).ok()
}

impl<A: Acceptor> ReactorCore<A> {
    /// Registers everything the server watches in `set` alone (a new
    /// worker), or in every set when `set` is `None`.
    fn register_all(&self, set: &Epoll) -> io::Result<()> {
        let acc = self.accepting.lock();
        if let (Some(l), None) = (&acc.listener, acc.paused) {
            self.sets
                .add_to(set, l.as_fd(), LISTENER, Interest::READABLE)?;
        }
        let mut failed = None;
        acc.acceptor.setup_fds(&mut |fd, id| {
            if let Err(e) = self
                .sets
                .add_to(set, fd, setup_token(id), Interest::READABLE)
            {
                failed = Some(e);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        drop(acc);
        for c in self.table.read().values() {
            let io = c.lock();
            if let Some(w) = &io.wire {
                self.sets.add_to(
                    set,
                    w.poll_fd(),
                    io.token.with_mark(false),
                    Self::wire_interest(&io),
                )?;
            }
            if let Some(s) = &io.session {
                self.sets
                    .add_to(set, s.as_fd(), io.token.with_mark(true), Interest::READABLE)?;
            }
        }
        Ok(())
    }

    /// Registers connection `io` in every set (its home's first).
    fn watch(&self, io: &ConnIo<A::W>) -> io::Result<()> {
        if let Some(w) = &io.wire {
            self.sets.add(
                w.poll_fd(),
                io.token.with_mark(false),
                Self::wire_interest(io),
                io.home,
            )?;
        }
        if let Some(s) = &io.session {
            if let Err(e) = self.sets.add(
                s.as_fd(),
                io.token.with_mark(true),
                Interest::READABLE,
                io.home,
            ) {
                self.unwatch(io);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Unregisters connection `io` from every set.
    fn unwatch(&self, io: &ConnIo<A::W>) {
        if let Some(w) = &io.wire {
            self.sets.delete(w.poll_fd());
        }
        if let Some(s) = &io.session {
            self.sets.delete(s.as_fd());
        }
    }

    /// A new connection (bounded: its peer is not trusted to keep its
    /// pace), or accepting starved (the listeners rest a tick).
    fn add(&self, acc: &mut Accepting<A>, made: Result<Option<Conn<A::W>>>) {
        match made {
            Ok(Some(mut c)) => {
                if c.wire.bound(self.tick * PEER_TICKS).is_err() {
                    return;
                }
                let home = match self.sets.pool() {
                    true => self.next_home.fetch_add(1, Ordering::Relaxed) % self.sets.len(),
                    false => 0,
                };
                let mut table = self.table.write();
                let token = table.next_token();
                let peer = self.inherit.as_ref().and_then(|i| {
                    i.inherit
                        .join(token.with_mark(false), c.peer, &c.wire.poll_fd())
                });
                let client = Client {
                    id: token.with_mark(false),
                    creds: c.creds,
                };
                let io = ConnIo {
                    client,
                    token,
                    wire: Some(c.wire),
                    session: c.session,
                    serving: false,
                    muted: false,
                    home,
                    moved: None,
                    peer,
                };
                if self.watch(&io).is_ok() {
                    if io.wire.as_ref().is_some_and(Wire::unfinished) {
                        // A handshake of the mechanism's own, bounded in time.
                        self.partial.insert(io.token);
                    }
                    table.insert(Arc::new(Mutex::new(io)));
                    self.count.store(table.len(), Ordering::Relaxed);
                }
            }
            Ok(None) => {}
            Err(e) if starved(&e) => self.pause(acc),
            Err(_) => {}
        }
    }

    /// Leaves the listeners alone for a tick (accepting starved).
    fn pause(&self, acc: &mut Accepting<A>) {
        if acc.paused.is_some() {
            return;
        }
        acc.paused = Some(Instant::now() + self.tick);
        if let Some(l) = &acc.listener {
            self.sets.delete(l.as_fd());
        }
        acc.acceptor.listeners(&mut |fd, _| self.sets.delete(fd));
    }

    /// Watches the listeners again once their rest is over.
    fn resume(&self, acc: &mut Accepting<A>, now: Instant) {
        if acc.paused.is_none_or(|until| now < until) {
            return;
        }
        acc.paused = None;
        if let Some(l) = &acc.listener {
            let _ = self.sets.add(l.as_fd(), LISTENER, Interest::READABLE, 0);
        }
        acc.acceptor.listeners(&mut |fd, id| {
            let _ = self.sets.add(fd, setup_token(id), Interest::READABLE, 0);
        });
    }

    /// The listener is readable: accepts the clients waiting, a backlog's
    /// worth at most.
    fn accept(&self) {
        if let Some(d) = &self.door {
            d.answer();
        }
        let mut acc = self.accepting.lock();
        let acc = &mut *acc;
        for _ in 0..ACCEPT_BURST {
            let Some(l) = &acc.listener else { return };
            if acc.paused.is_some() || !readable_now(l.as_fd()) {
                break;
            }
            let setup = Setup { sets: &self.sets };
            let made = acc.acceptor.accept(l, &setup);
            self.add(acc, made);
        }
        self.setting_up
            .store(acc.acceptor.setting_up(), Ordering::Relaxed);
    }

    /// Set-up step `id` is ready: one step.
    fn setup_step(&self, id: u32) {
        let mut acc = self.accepting.lock();
        let setup = Setup { sets: &self.sets };
        let made = acc.acceptor.setup_ready(id, &setup);
        self.add(&mut acc, made);
        self.setting_up
            .store(acc.acceptor.setting_up(), Ordering::Relaxed);
    }

    /// What is due once a tick: set-up work that took too long, listeners
    /// at rest, peers that began a message and did not finish it.
    fn look_around(&self, w: &mut Worker<A::W>) {
        let now = Instant::now();
        w.last_look = now;
        {
            let mut acc = self.accepting.lock();
            let setup = Setup { sets: &self.sets };
            acc.acceptor.expire(&setup);
            self.resume(&mut acc, now);
            self.setting_up
                .store(acc.acceptor.setting_up(), Ordering::Relaxed);
        }
        for t in self.partial.take() {
            let Some(c) = self.conn(t) else { continue };
            let mut io = c.lock();
            match &io.wire {
                Some(wire) if wire.overdue(now) => self.close(&mut io),
                Some(wire) if wire.unfinished() => self.partial.insert(t),
                _ => {}
            }
        }
    }

    /// The connection of token `t`, if it is still there.
    #[inline]
    fn conn(&self, t: Token) -> Option<ConnRef<A::W>> {
        self.table.read().get(t).cloned()
    }

    /// Drops connection `io`: out of the table and the sets, its
    /// descriptors closed. A handle still holding it finds it closed.
    ///
    /// Lock order: a connection's lock, then the table's. Nothing holds
    /// the table's lock while it takes a connection's, except while a pool
    /// is being formed, when no worker runs.
    fn close(&self, io: &mut ConnIo<A::W>) {
        if io.wire.is_none() {
            return;
        }
        self.unwatch(io);
        let mut table = self.table.write();
        table.remove(io.token);
        self.count.store(table.len(), Ordering::Relaxed);
        drop(table);
        io.wire = None;
        io.session = None;
        if let (Some(i), Some(_)) = (&self.inherit, io.peer.take()) {
            i.inherit.leave(io.token.with_mark(false));
        }
    }

    /// Stops reading a connection that sent while its request is held,
    /// until the reply: its wire is watched for a hang-up only, so that a
    /// client that dies meanwhile is dropped at once.
    fn mute(&self, io: &mut ConnIo<A::W>) {
        if io.muted {
            return;
        }
        io.muted = true;
        if self.rewatch_wire(io, Interest::HANGUP).is_err() {
            self.close(io);
        }
    }

    /// Registers the wire of `io` again, with `interest`.
    fn rewatch_wire(&self, io: &ConnIo<A::W>, interest: Interest) -> io::Result<()> {
        let Some(w) = &io.wire else { return Ok(()) };
        self.sets.delete(w.poll_fd());
        self.sets
            .add(w.poll_fd(), io.token.with_mark(false), interest, io.home)
    }

    /// The interest the wire of `io` is registered with.
    fn wire_interest(io: &ConnIo<A::W>) -> Interest {
        match io.muted {
            true => Interest::HANGUP,
            false => Interest::READABLE,
        }
    }

    /// The reply to a connection is out: it is no longer serving, and is
    /// read again if it was muted.
    fn served(&self, io: &mut ConnIo<A::W>) {
        io.serving = false;
        if io.muted && io.wire.is_some() {
            io.muted = false;
            if self.rewatch_wire(io, Interest::READABLE).is_err() {
                self.close(io);
            }
        }
    }

    /// Sends a reply on connection `io`; a client gone (or not taking it
    /// in time) is dropped, which is not the replier's error.
    fn send(&self, io: &mut ConnIo<A::W>, code: u32, data: &[u8]) {
        let Some(wire) = &mut io.wire else { return };
        if wire.send(&head(code, data.len()), data).is_err() {
            self.close(io);
        }
    }

    /// Reads the request waiting on connection `io` into `w`; `None` when
    /// there was none after all (a pool's stale event), when what came was
    /// a handshake step of the mechanism or part of a message, or when the
    /// connection turned out dead or broken (and was dropped).
    ///
    /// With a `timeout`, waits for the request at most that long (a time
    /// out is `Err(())`); without, one must be waiting (a pool first checks
    /// that one is).
    fn read(
        &self,
        w: &mut Worker<A::W>,
        io: &mut ConnIo<A::W>,
        timeout: Option<Duration>,
    ) -> std::result::Result<Option<Incoming>, ()> {
        let pool = self.sets.pool();
        let Some(wire) = io.wire.as_mut() else {
            return Ok(None);
        };
        let got = match (timeout, pool) {
            (Some(t), _) => wire.recv_lent(&mut w.buf, Some(t)),
            (None, true) => wire.recv_lent_now(&mut w.buf),
            (None, false) => wire.recv_lent(&mut w.buf, None),
        };
        match got {
            Ok(Some(len)) => {
                let (cmd, hlen) = frame_head(&w.buf);
                if hlen != len {
                    self.close(io);
                    return Ok(None);
                }
                w.len = len;
                if wire.has_buffered() {
                    // Next round, without waiting for the kernel.
                    w.later.push(io.token);
                }
                if cmd == HINT {
                    self.hinted(io, &w.buf[HEAD..HEAD + len]);
                    return Ok(None);
                }
                if cmd == TID {
                    let payload = wire.received(len).unwrap_or(&w.buf[HEAD..HEAD + len]);
                    if let Some(p) = &io.peer {
                        p.claimed(payload);
                    }
                    return Ok(None);
                }
                if is_pulse(cmd) {
                    let payload = wire.received(len).unwrap_or(&w.buf[HEAD..HEAD + len]);
                    if Pulse::decode(payload).is_none() {
                        // A malformed pulse breaks the protocol.
                        self.close(io);
                        return Ok(None);
                    }
                }
                let inc = Incoming::from_wire(cmd, len);
                self.boost(w, io, inc);
                Ok(Some(inc))
            }
            // A handshake step of the mechanism, or part of a message.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if wire.unfinished() {
                    self.partial.insert(io.token);
                }
                Ok(None)
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => Err(()),
            Ok(None) | Err(_) => {
                self.close(io);
                Ok(None)
            }
        }
    }

    /// With priority inheritance, a message of connection `io` was taken:
    /// a request runs the worker at its caller's scheduling until the
    /// reply (see `priority.rs`); any message ends a boost on arrival the
    /// watcher gave for it.
    fn boost(&self, w: &mut Worker<A::W>, io: &ConnIo<A::W>, inc: Incoming) {
        let (Some(_), Some(b)) = (&self.inherit, &w.boosts) else {
            return;
        };
        let key = io.token.with_mark(false);
        let caller = match inc.oneway {
            true => None,
            false => io.peer.as_ref().and_then(|p| p.caller()),
        };
        match caller {
            Some(a) => w.boost = Some(b.begin(key, a)),
            None => b.taken(key),
        }
    }

    /// Connection `io` says its client runs on CPU `payload` - 1 (a
    /// [`HINT`]): a pool moves its home to the thread pinned on that CPU,
    /// at most once a tick (a client must not make us re-register it each
    /// call). A single thread has nothing to move.
    fn hinted(&self, io: &mut ConnIo<A::W>, payload: &[u8]) {
        let Ok(cpu) = <[u8; 4]>::try_from(payload).map(u32::from_le_bytes) else {
            return;
        };
        if !self.sets.pool() || cpu == 0 || io.muted {
            return;
        }
        let Some(to) = self
            .pinned
            .iter()
            .position(|p| p.load(Ordering::Relaxed) == cpu)
        else {
            return;
        };
        let now = Instant::now();
        if to == io.home || io.moved.is_some_and(|t| now.duration_since(t) < self.tick) {
            return;
        }
        io.moved = Some(now);
        self.unwatch(io);
        io.home = to;
        if self.watch(io).is_err() {
            self.close(io);
        }
    }

    /// A wire event for token `t`: reads its request, if any.
    fn wire_ready(&self, w: &mut Worker<A::W>, t: Token) -> Option<Incoming> {
        let c = self.conn(t)?;
        let mut io = match self.sets.pool() {
            true => c.try_lock_arc()?,
            false => c.lock_arc(),
        };
        if io.serving {
            self.mute(&mut io);
            return None;
        }
        let inc = self.read(w, &mut io, None).ok()??;
        w.sole = Some(t);
        w.cur = Some(match self.sets.pool() {
            true => {
                io.serving = !inc.oneway;
                drop(io);
                Current::Serving(c)
            }
            false => Current::Locked(io),
        });
        Some(inc)
    }

    /// Handles one harvested event; a request when it brought one.
    fn handle(&self, w: &mut Worker<A::W>, ev: Ready) -> Option<Incoming> {
        match Source::of(ev.token) {
            Source::Listener => self.accept(),
            Source::Setup(id) => self.setup_step(id),
            Source::Wire(t) if ev.readable => return self.wire_ready(w, t),
            // Hang-up or error without data, on the wire or the session
            // (a client never writes on its session): the client is gone.
            Source::Wire(t) | Source::Session(t) => {
                if let Some(c) = self.conn(t) {
                    self.close(&mut c.lock());
                }
            }
        }
        None
    }

    /// The connection the single-client path serves, if it applies: one
    /// worker, nothing being set up or finished, and either one client
    /// (the one it last served: a client that left may have been replaced
    /// by a new one the path knows nothing of; `Lone::Sole`) or one active
    /// client among idle ones (`Lone::Busy`, see [`SOLO_STREAK`]).
    fn single(&self, w: &Worker<A::W>) -> Option<(Token, Lone)> {
        let t = w.sole?;
        let quiet = !self.sets.pool()
            && w.queue.is_empty()
            && w.later.is_empty()
            && !self.setting_up.load(Ordering::Relaxed)
            && self.partial.is_empty();
        if !quiet {
            return None;
        }
        if self.is_sole() {
            return Some((t, Lone::Sole));
        }
        (w.streak >= SOLO_STREAK).then_some((t, Lone::Busy))
    }

    /// Counts the waits in a row that reported only the connection last
    /// served (read from a wait's events, now in the queue). Once they
    /// are [`SOLO_STREAK`], the connection is served alone if its wire
    /// can (see the module doc); if it cannot, the count starts over.
    fn count_streak(&self, w: &mut Worker<A::W>) {
        let lone = match (w.queue.front(), w.sole) {
            (Some(ev), Some(t)) if w.queue.len() == 1 && ev.readable => {
                ev.token == t.with_mark(false)
            }
            _ => false,
        };
        if !lone {
            w.streak = 0;
            return;
        }
        w.streak += 1;
        if w.streak == SOLO_STREAK {
            let quick = w
                .sole
                .and_then(|t| self.conn(t))
                .is_some_and(|c| c.lock().wire.as_ref().is_some_and(Wire::quick_timeout));
            if !quick {
                w.streak = 0;
            }
        }
    }

    /// True when the table holds one connection (the single-client path
    /// then finds out whether it is still `t`: a connection that left
    /// has no wire).
    #[inline]
    fn is_sole(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 1
    }

    /// With a single client: waits for its next request in the wire's own
    /// timed receive, with no wait on the set per request. Everything else
    /// is looked at as soon as the doorman says a client connected, when
    /// the client is quiet for [`SOLO_QUIET`] (the worker then waits on
    /// the set, which holds the listener, until the client sends again),
    /// and, where no door could be watched, every [`ACCEPT_EVERY`]
    /// requests once a tick has passed.
    fn receive_single(
        &self,
        w: &mut Worker<A::W>,
        t: Token,
        lone: Lone,
    ) -> Result<Option<Incoming>> {
        if self.knocked()
            || (lone == Lone::Busy && w.calls % SOLO_LOOK == 0 && self.others_ready(w)?)
        {
            return Ok(self.leave_single(w));
        }
        self.set_alone(w, Some(t));
        let Some((_, c)) = &w.alone else {
            w.sole = None;
            return Ok(None);
        };
        let mut io = c.lock_arc();
        if io.serving {
            // Its request is held (deferred): it is muted until answered,
            // which only the set does.
            drop(io);
            return Ok(self.leave_single(w));
        }
        // A wait the doorman can end may last a tick; one it cannot, only
        // a moment (a newcomer waits for its end).
        let wait = match w.woken {
            true => self.tick,
            false => SOLO_QUIET,
        };
        match self.read(w, &mut io, Some(wait)) {
            Ok(Some(inc)) => {
                w.cur = Some(Current::Locked(io));
                Ok(Some(inc))
            }
            // The client went quiet: back to the set until it sends again.
            Err(()) => {
                drop(io);
                if w.last_look.elapsed() >= self.tick {
                    self.look_around(w);
                }
                Ok(self.leave_single(w))
            }
            // The client left (its wire closed): the path ends here.
            Ok(None) if io.wire.is_none() => {
                drop(io);
                self.set_alone(w, None);
                w.sole = None;
                Ok(None)
            }
            // A handshake step or part of a message: look around once a
            // tick, as while waiting.
            Ok(None) if w.last_look.elapsed() < self.tick => Ok(None),
            Ok(None) => {
                drop(io);
                self.harvest(w, Duration::ZERO)?;
                self.look_around(w);
                Ok(None)
            }
        }
    }

    /// True (once) when the doorman says a client connected: the worker
    /// then looks at its set, which holds the listener.
    #[inline]
    fn knocked(&self) -> bool {
        match &self.door {
            Some(d) if d.knocked() => {
                d.answer();
                true
            }
            _ => false,
        }
    }

    /// Ends the single-client path: the worker waits on its set next,
    /// until a wait reports the client alone again.
    fn leave_single(&self, w: &mut Worker<A::W>) -> Option<Incoming> {
        w.sole = None;
        w.streak = 0;
        None
    }

    /// While one client is served alone among idle ones: looks at the set
    /// without waiting; true (and the worker back on the set, with what
    /// it reported queued) when anything there is ready.
    fn others_ready(&self, w: &mut Worker<A::W>) -> Result<bool> {
        if self.harvest(w, Duration::ZERO)? == 0 {
            return Ok(false);
        }
        w.streak = 0;
        Ok(true)
    }

    /// Makes `want` the connection taken out of the sets for the
    /// single-client path (`None`: none), putting the previous one back,
    /// and leaves on the door what ends a wait on its wire, if anything
    /// can (`w.woken`).
    fn set_alone(&self, w: &mut Worker<A::W>, want: Option<Token>) {
        if w.alone.as_ref().map(|(t, _)| *t) == want {
            return;
        }
        if let Some((_, c)) = w.alone.take() {
            let mut io = c.lock();
            if let Some(wire) = &io.wire {
                let added = self.sets.add(
                    wire.poll_fd(),
                    io.token.with_mark(false),
                    Self::wire_interest(&io),
                    io.home,
                );
                if added.is_err() {
                    self.close(&mut io);
                }
            }
        }
        let waker = want.and_then(|t| self.conn(t)).and_then(|c| {
            let mut io = c.lock();
            // The wire only: the session (whose hang-up tells of a client
            // whose wire does not) stays, and is silent while it lives.
            let wire = io.wire.as_mut()?;
            self.sets.delete(wire.poll_fd());
            let waker = wire.waker(self.tick);
            drop(io);
            w.alone = Some((want?, c));
            waker
        });
        w.woken = waker.is_some();
        if let Some(d) = &self.door {
            d.wake_with(waker);
        }
    }

    /// Starts a round: waits up to `timeout` on the worker's set (not at
    /// all when connections have messages buffered already) and queues what
    /// it reports, then the connections with buffered messages that it did
    /// not report. Returns how many it queued.
    fn harvest(&self, w: &mut Worker<A::W>, timeout: Duration) -> Result<usize> {
        let timeout = match w.later.is_empty() {
            true => timeout,
            false => Duration::ZERO,
        };
        w.set
            .wait(&mut w.events, Some(timeout))
            .map_err(|e| Error::io("epoll_wait", e))?;
        for t in w.later.drain(..) {
            let raw = t.with_mark(false);
            if !w.events.iter().any(|e| e.token == raw) {
                w.events.push(Ready {
                    token: raw,
                    readable: true,
                    hangup: false,
                });
            }
        }
        let n = w.events.len();
        w.queue.extend(w.events.drain(..));
        Ok(n)
    }

    /// The request `w` holds: the connection it came from.
    fn current<'a>(&self, w: &'a mut Worker<A::W>) -> Result<&'a mut ConnIo<A::W>> {
        match w.cur.as_mut() {
            Some(Current::Locked(io)) => Ok(&mut **io),
            _ => Err(Error::no_request()),
        }
    }
}

/// Most clients accepted in one round (the listen backlog): a burst of
/// connects must not outlast the clients' hello timeout.
const ACCEPT_BURST: usize = 128;

/// True when `fd` polls readable now.
fn readable_now(fd: BorrowedFd<'_>) -> bool {
    let mut p = [oslayer::poll::PollFd::readable(fd)];
    oslayer::poll::poll(&mut p, Some(Duration::ZERO)).unwrap_or(0) > 0
}

impl<A: Acceptor> Core for ReactorCore<A> {
    type Worker = Worker<A::W>;
    type Held = Held<ConnReply<A>>;

    fn worker(self: &Arc<Self>) -> Result<Worker<A::W>> {
        let (set, index) = self.sets.push().map_err(|e| Error::io("epoll_create", e))?;
        self.register_all(&set)
            .map_err(|e| Error::io("epoll_ctl", e))?;
        if index >= MAX_THREADS {
            return Err(Error::BadPool {
                threads: index + 1,
                max: MAX_THREADS,
            });
        }
        Ok(Worker {
            index,
            placed: false,
            set,
            events: Vec::with_capacity(64),
            queue: VecDeque::new(),
            later: Vec::new(),
            buf: vec![0; HEAD + self.max_msg],
            len: 0,
            cur: None,
            sole: None,
            alone: None,
            woken: false,
            streak: 0,
            calls: 0,
            last_look: Instant::now(),
            boosts: None,
            boost: None,
        })
    }

    fn pool(self: &Arc<Self>, _threads: usize) -> Result<()> {
        self.sets.set_pool();
        // The first worker's registrations become exclusive.
        if let Some(first) = self.sets.get(0) {
            let acc = self.accepting.lock();
            if let Some(l) = &acc.listener {
                first.delete(l.as_fd());
            }
            acc.acceptor.setup_fds(&mut |fd, _| first.delete(fd));
            drop(acc);
            for c in self.table.read().values() {
                let io = c.lock();
                if let Some(w) = &io.wire {
                    first.delete(w.poll_fd());
                }
                if let Some(s) = &io.session {
                    first.delete(s.as_fd());
                }
            }
            self.register_all(&first)
                .map_err(|e| Error::io("epoll_ctl", e))?;
        }
        Ok(())
    }

    fn receive(&self, w: &mut Worker<A::W>, stop: &AtomicBool) -> Result<Option<Incoming>> {
        // The last request is answered (a one-way message needs nothing):
        // its connection is free.
        w.cur = None;
        w.boost = None;
        if let Some(i) = &self.inherit {
            i.inherit.boosts_here(&mut w.boosts, self.sets.pool());
        }
        if !w.placed && self.sets.pool() {
            w.placed = true;
            if let Some(cpu) = oslayer::cpu::pinned_cpu() {
                self.pinned[w.index].store(cpu + 1, Ordering::Relaxed);
            }
        }
        w.calls = w.calls.wrapping_add(1);
        if w.calls % ACCEPT_EVERY == 0 && w.last_look.elapsed() >= self.tick {
            self.harvest(w, Duration::ZERO)?;
            self.look_around(w);
        }
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if let Some(ev) = w.queue.pop_front() {
                if let Some(inc) = self.handle(w, ev) {
                    return Ok(Some(inc));
                }
                continue;
            }
            if let Some((t, lone)) = self.single(w) {
                if let Some(inc) = self.receive_single(w, t, lone)? {
                    return Ok(Some(inc));
                }
                continue;
            }
            // Every connection in the sets before waiting on them.
            self.set_alone(w, None);
            let n = self.harvest(w, self.tick)?;
            self.count_streak(w);
            if n == 0 || w.last_look.elapsed() >= self.tick {
                self.look_around(w);
            }
        }
    }

    fn data<'a>(&'a self, w: &'a Worker<A::W>) -> &'a [u8] {
        let lent = match &w.cur {
            Some(Current::Locked(io)) => io.wire.as_ref().and_then(|wire| wire.received(w.len)),
            _ => None,
        };
        match lent {
            Some(lent) => lent,
            None if w.cur.is_some() => &w.buf[HEAD..HEAD + w.len],
            None => &[],
        }
    }

    fn client(&self, w: &Worker<A::W>) -> Option<Client> {
        match w.cur.as_ref()? {
            Current::Locked(io) => Some(io.client),
            Current::Serving(c) => Some(c.lock().client),
        }
    }

    fn reply(&self, w: &mut Worker<A::W>, status: Status, data: &[u8]) -> Result<()> {
        let (code, data, verdict) = reply_parts(status, data, self.max_msg);
        let io = self.current(w)?;
        self.send(io, code, data);
        w.cur = None;
        w.boost = None;
        verdict
    }

    fn reply_buffer<'a>(&'a self, w: &'a mut Worker<A::W>) -> Option<Window<'a>> {
        let len = w.len;
        let io = self.current(w).ok()?;
        io.wire
            .as_mut()?
            .send_buffer(len)?
            .get_mut(..self.max_msg)
            .map(Window::from)
    }

    fn reply_in_place(&self, w: &mut Worker<A::W>, len: usize) -> Result<()> {
        let (code, len, verdict) = in_place_parts(len, self.max_msg);
        let io = self.current(w)?;
        if let Some(wire) = &mut io.wire {
            if wire.send_in_place(&head(code, len)).is_err() {
                self.close(io);
            }
        }
        w.cur = None;
        w.boost = None;
        verdict
    }

    fn detach(&self, w: &mut Worker<A::W>) -> Option<Held<ConnReply<A>>> {
        let conn = match w.cur.take()? {
            Current::Serving(c) => c,
            Current::Locked(io) => {
                // A single worker's request, taken out of it: the
                // connection is serving from now on.
                let c = ArcMutexGuard::mutex(&io).clone();
                drop(io);
                c.lock().serving = true;
                c
            }
        };
        let (data, client) = {
            let io = conn.lock();
            let data = match io.wire.as_ref().and_then(|wire| wire.received(w.len)) {
                Some(lent) => lent.to_vec(),
                None => w.buf[HEAD..HEAD + w.len].to_vec(),
            };
            (data, io.client)
        };
        let to = ConnReply {
            conn,
            core: self.me.clone(),
            boost: w.boost.take(),
        };
        Some(Held::new(data, to, self.max_msg, Some(client)))
    }

    fn connections(&self) -> usize {
        self.table.read().len()
    }
}

/// Where a held request of a descriptor-driven transport is answered: its
/// connection, while the server lives.
pub(crate) struct ConnReply<A: Acceptor> {
    conn: ConnRef<A::W>,
    core: Weak<ReactorCore<A>>,
    /// Its caller's boost of the thread that received it (until the
    /// reply is out).
    boost: Option<Boost>,
}

impl<A: Acceptor> ReplyTo for ConnReply<A> {
    fn send(&mut self, code: u32, data: &[u8]) -> bool {
        let mut io = self.conn.lock();
        match self.core.upgrade() {
            Some(core) if io.wire.is_some() => {
                core.send(&mut io, code, data);
                core.served(&mut io);
            }
            // The server is gone: nobody to answer.
            None => io.wire = None,
            Some(_) => {}
        }
        self.boost = None;
        // None: the client is gone (before, or the send found it so).
        io.wire.is_some()
    }
}
