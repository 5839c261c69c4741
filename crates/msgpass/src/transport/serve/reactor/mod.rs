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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use oslayer::epoll::{Epoll, Interest, Ready};
use parking_lot::{ArcMutexGuard, Mutex, RawMutex, RwLock};

use crate::error::{Error, Result};
use crate::transport::api::MAX_THREADS;
use crate::transport::api::{Client, Creds, Incoming, Options, Status};
use crate::transport::mem::window::Window;
use crate::transport::serve::core::{Core, Held, ReplyTo, Single};
use crate::transport::serve::homes::{Homes, LastMove};
use crate::transport::serve::priority::{Boost, Boosts, Peer, PeerProcess, Watched};
use crate::transport::serve::server::{in_place_parts, reply_parts, ACCEPT_EVERY};
use crate::transport::serve::sets::Sets;
use crate::transport::serve::slab::{Slab, Token};
use crate::transport::wire::doorman::{self, Door};
use crate::transport::wire::framing::{head, Wire, HEAD};
use crate::transport::wire::rendezvous::Listener;

mod dispatch;
mod single;
mod table;

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
    /// When its home last moved (at most once a tick).
    moved: LastMove,
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
    /// The CPUs the workers of a pool are pinned to, for the homes of
    /// connections.
    homes: Homes,
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
        homes: Homes::new(),
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
        if self.sets.pool() {
            self.homes.place(w.index, &mut w.placed);
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
        if w.boost.is_some() {
            return self
                .reply_inheriting(w, |io| self.send(io, code, data))
                .and(verdict);
        }
        let io = self.current(w)?;
        self.send(io, code, data);
        w.cur = None;
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
        let send = |io: &mut ConnIo<A::W>| {
            if let Some(wire) = &mut io.wire {
                if wire.send_in_place(&head(code, len)).is_err() {
                    self.close(io);
                }
            }
        };
        if w.boost.is_some() {
            return self.reply_inheriting(w, send).and(verdict);
        }
        send(self.current(w)?);
        w.cur = None;
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
        if let Some(b) = &self.boost {
            b.replying();
        }
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
        // None: the client is gone (before, or the send found it so).
        let alive = io.wire.is_some();
        // The boost ends (the thread may yield) with the connection free.
        drop(io);
        end_boost(&mut self.boost, !alive);
        alive
    }
}

/// The boost of a worker's request ends, its reply sent, or not when
/// `gone` (see `Boost::undelivered`).
fn end_boost(boost: &mut Option<Boost>, gone: bool) {
    if let Some(b) = boost.take() {
        if gone {
            b.undelivered();
        }
    }
}
