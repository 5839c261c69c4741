//! The server side of an [`Shm`](super::Shm) channel: a [`Core`] shared by
//! its threads (the doorbell, the listener, the connection table, the
//! epoll sets), and per thread a [`ShmWorker`]: the slots it watches, the
//! connections the kernel told it of, the request it serves. See the
//! module doc of `shm` for the protocol.

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use oslayer::epoll::{Epoll, Interest, Ready};
use oslayer::mman::Mapping;
use parking_lot::{Mutex, RwLock};

use super::request_copy::RequestCopy;
use super::{
    bell_cpu, bell_state, slot_size, worth_spinning, Slot, Wait, BELL_FLAGS, BELL_LEN, BUSY,
    CLOSED, EMPTY, FLAG_INHERIT, FLAG_POOL, FLAG_SPINS, LOOKING, MASK, NAPPING, REPLY, REQUEST,
    SLEEPING, SPINS, WAITER, WATCH_MAX,
};
use crate::error::{Error, Result};
use crate::pulse::{is_pulse, Pulse, PULSE, PULSE_LEN};
use crate::transport::api::MAX_THREADS;
use crate::transport::api::{
    Answer, Client, Incoming, Options, PoolWorker, ServerChannel, Status, ONEWAY,
};
use crate::transport::clock::pace::Pacer;
use crate::transport::mem::window::{View, Window};
use crate::transport::serve::core::{Core, Held, ReplyTo, Single};
use crate::transport::serve::homes::{Homes, LastMove};
use crate::transport::serve::priority::{Boost, Boosts, Peer, Watched as Inheriting};
use crate::transport::serve::server::{creds_of, in_place_parts, refuse, starved, ACCEPT_EVERY};
use crate::transport::serve::sets::Sets;
use crate::transport::serve::slab::{Slab, Token};
use crate::transport::wire::doorman::{self, Door, Wake};
use crate::transport::wire::rendezvous::{Family, Listener};

mod inherit;

/// The server side of an [`Shm`](super::Shm) channel (for
/// [`Channel::create_typed`](crate::Channel::create_typed)). Requests are
/// read and answered in place in the client's slot.
pub struct ShmServer(Single<ShmCore>);

impl ShmServer {
    /// Serves the endpoint at `path` (claimed by the caller).
    pub(super) fn serve(path: &Path, wait: Wait, opts: &Options) -> Result<ShmServer> {
        let listener = Listener::bind(path, Family::Shm, opts.max_msg)?;
        let (bell_fd, bell) = oslayer::mman::memfd_owned("msgpass-doorbell", BELL_LEN)
            .map_err(|e| Error::io("memfd_create doorbell", e))?;
        // A server that inherits priority publishes BUSY while it holds a
        // request (so that a caller rings, which the watcher hears): its
        // clients must look at who watches, even if it spins.
        let (flags, inherit) = match opts.inherit_priority {
            true => (FLAG_INHERIT, Some(Inheriting::start()?)),
            false if wait == Wait::Spin => (FLAG_SPINS, None),
            false => (0, None),
        };
        bell.atomic_u32(BELL_FLAGS).store(flags, SeqCst);
        // Not a failure of the channel: without a door newcomers wait for
        // the housekeeping tick, as they did.
        let door = listener
            .as_fd()
            .try_clone_to_owned()
            .and_then(|fd| doorman::watch(vec![fd]))
            .ok();
        let core = Arc::new(ShmCore {
            bell_fd,
            bell,
            listener: Mutex::new(Accepting {
                listener,
                paused: None,
            }),
            table: RwLock::new(Slab::default()),
            sets: Sets::default(),
            homes: Homes::new(),
            handed: std::array::from_fn(|_| AtomicU32::new(0)),
            wait,
            opts: opts.clone(),
            next_home: AtomicUsize::new(0),
            door,
            hands: AtomicBool::new(inherit.is_some()),
            inherit,
        });
        Ok(ShmServer(Single::new(core)?))
    }
}

impl Answer for ShmServer {
    #[inline]
    fn data(&self) -> &[u8] {
        self.0.data()
    }
    #[inline]
    fn view(&self) -> View<'_> {
        self.0.view()
    }
    fn client(&self) -> Option<Client> {
        self.0.client()
    }
    #[inline]
    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        self.0.reply(status, data)
    }
    #[inline]
    fn reply_buffer(&mut self) -> Option<Window<'_>> {
        self.0.reply_buffer()
    }
    #[inline]
    fn reply_in_place(&mut self, len: usize) -> Result<()> {
        self.0.reply_in_place(len)
    }
}

impl ServerChannel for ShmServer {
    #[inline]
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.0.receive(stop)
    }
    fn connections(&self) -> usize {
        self.0.connections()
    }
    fn detach(&mut self) -> Option<Box<dyn Answer>> {
        self.0.detach()
    }
    fn into_pool(self: Box<Self>, threads: usize) -> Result<Vec<Box<dyn PoolWorker>>> {
        Box::new(self.0).into_pool(threads)
    }
}

/// The rendezvous listener, which one thread at a time accepts on.
struct Accepting {
    listener: Listener,
    /// Until when it is left alone (accepting starved).
    paused: Option<Instant>,
}

/// What every thread of an shm server shares.
pub(crate) struct ShmCore {
    bell_fd: OwnedFd,
    bell: Mapping,
    listener: Mutex<Accepting>,
    table: RwLock<Slab<Arc<ShmConn>>>,
    sets: Sets,
    /// The CPUs the threads of a pool are pinned to, for the homes of
    /// connections.
    homes: Homes,
    /// How many requests thread `w` has handed to the application (a
    /// pool): a held request answered on its thread frees the thread only
    /// if it is still the last one handed out.
    handed: [AtomicU32; MAX_THREADS],
    wait: Wait,
    opts: Options,
    /// The home of the next connection, until its client's CPU is known.
    next_home: AtomicUsize,
    /// Says when a client connects while a thread is busy with, or naps
    /// on, the slots it watches (see `doorman.rs`); `None` where the
    /// listener could not be watched (newcomers then wait for the
    /// housekeeping tick).
    door: Option<Arc<Door>>,
    /// Priority inheritance and its watcher, when asked for.
    inherit: Option<Inheriting>,
    /// A thread does more than return what it takes (see
    /// [`ShmCore::handing`]): in a pool, or with priority inheritance.
    /// One load on the single thread's path, for both.
    hands: AtomicBool,
}

/// A client, as the server keeps it.
pub(crate) struct ShmConn {
    slot: Slot,
    /// The rendezvous session: its hang-up means the client died.
    session: OwnedFd,
    /// The client's bell, kept by a pool (to register it with every
    /// thread, and to move its home); a single thread closes it.
    ring: Option<OwnedFd>,
    token: Token,
    /// The request number last taken (a request is taken once).
    served: AtomicU32,
    /// The thread the kernel tells first.
    home: AtomicUsize,
    /// When its home last moved (at most once a tick).
    moved: Mutex<LastMove>,
    /// Dropped by the server: nobody takes its requests any more.
    dead: AtomicBool,
    /// Who it is (its token's id, and the kernel's credentials of its
    /// session).
    client: Client,
    /// Its request is held apart from the thread that took it (deferred,
    /// or in a pool): no other request of it is taken until the answer (a
    /// client that posts again meanwhile breaks the protocol).
    held: AtomicBool,
    /// Its caller, with priority inheritance.
    peer: Option<Arc<Peer>>,
}

/// A slot a thread watches, and when it last had a request: the thread's
/// receive count and tick then.
struct Watched {
    conn: Arc<ShmConn>,
    last: u32,
    epoch: u32,
}

/// The request a thread holds.
enum Cur {
    /// From the `i`-th slot it watches.
    Watched(usize),
    /// From a connection it does not watch.
    Other(Arc<ShmConn>),
}

/// One thread's share of an shm server.
pub(crate) struct ShmWorker {
    /// The core, for the requests this worker detaches.
    core: Arc<ShmCore>,
    index: usize,
    set: Arc<Epoll>,
    events: Vec<Ready>,
    /// Connections the kernel said rang, not yet looked at.
    told: VecDeque<Arc<ShmConn>>,
    watched: Vec<Watched>,
    /// Where the next look at the watched slots starts (fairness).
    next: usize,
    /// The watched slot the next receive checks for idleness.
    sweep: usize,
    cur: Option<Cur>,
    /// Length of the request held (read once, bounded).
    len: usize,
    /// The request held, copied out of its slot when `data` first asks
    /// (the client can write the slot at any moment); a reply built in
    /// place reads and writes the slot itself, through a window.
    copy: RequestCopy,
    /// The payload of the pulse just taken, copied out of its slot (which
    /// its client may write again at once).
    pulse: Option<[u8; PULSE_LEN]>,
    /// Who sent that pulse.
    pulse_from: Option<Client>,
    /// How long to hold back before the first look for the next request.
    pace: Pacer,
    /// Ticks seen so far (how long a watched slot has been idle).
    epoch: u32,
    calls: u32,
    last_look: Instant,
    /// The connection whose state word the door's waker wakes (the one
    /// this thread last napped on).
    napping_on: Option<Token>,
    /// This thread's CPU is registered in the pool's homes (or it is not
    /// pinned): its affinity is read once.
    placed: bool,
    /// This thread's boosts (priority inheritance).
    boosts: Option<Arc<Boosts>>,
    /// The boost of the request it holds.
    boost: Option<Boost>,
}

/// The listener's token; connections' tokens are below it (marked: the
/// session; unmarked: the bell).
const LISTENER: u64 = 1 << 63;
/// Receives between two looks at the clock for housekeeping while busy.
const HOUSEKEEP_EVERY: u32 = ACCEPT_EVERY;
/// A watched slot without a request for this many of its thread's
/// receives is no longer watched: every look (spin round, sleep) costs one
/// load per watched slot, so idle ones must not linger (the receives
/// check one slot each, in turn).
const IDLE_RECEIVES: u32 = 256;
/// Spins between two looks at the epoll set while spinning.
const HARVEST_EVERY: u32 = 1024;
/// Receives between two looks at the epoll set while the watched slots
/// keep the thread busy and the channel has clients it does not watch:
/// a client whose slot is not watched is found only through its bell,
/// and a busy watched client must not keep it waiting (before this, a
/// newcomer beside one busy client waited for a housekeeping tick, about
/// 11,000 of the busy one's requests here). One `epoll_wait` that finds
/// nothing per 64 requests; nothing at all with one client.
const TELL_EVERY: u32 = 64;
/// Attempts the closing server makes to mark a slot CLOSED while its
/// client keeps changing the state word.
const CLOSE_ATTEMPTS: u32 = 16;
/// Most clients accepted in one round (the listen backlog).
const ACCEPT_BURST: usize = 128;

impl ShmCore {
    /// Thread `w`'s state word in the doorbell.
    #[inline]
    fn state_of(&self, w: usize) -> &AtomicU32 {
        self.bell.atomic_u32(bell_state(w))
    }

    /// The connection of `t`, if it is still there.
    #[inline]
    fn conn(&self, t: Token) -> Option<Arc<ShmConn>> {
        self.table.read().get(t).cloned()
    }

    /// Registers a connection's session and bell with every thread, its
    /// home's first.
    fn watch_conn(&self, c: &ShmConn, ring: BorrowedFd<'_>) -> std::io::Result<()> {
        let home = c.home.load(Relaxed);
        self.sets.add(
            c.session.as_fd(),
            c.token.with_mark(true),
            Interest::READABLE,
            home,
        )?;
        if let Err(e) = self.sets.add(
            ring,
            c.token.with_mark(false),
            Interest::READABLE.edge(),
            home,
        ) {
            self.sets.delete(c.session.as_fd());
            return Err(e);
        }
        Ok(())
    }

    /// Greets a new client with the doorbell, a fresh slot and a bell, and
    /// registers it; hangs up on it when they cannot be made.
    fn greet(&self, listener: &Listener) -> Result<Option<()>> {
        let slot_len = slot_size(self.opts.max_msg);
        let made = oslayer::mman::memfd("msgpass-slot", slot_len)
            .map_err(|e| Error::io("memfd_create", e))
            .and_then(|fd| Ok((Slot::map(&fd, slot_len)?, fd)))
            .and_then(|(slot, fd)| {
                let ring =
                    oslayer::eventfd::new_nonblocking().map_err(|e| Error::io("eventfd", e))?;
                Ok((slot, fd, ring))
            });
        let (slot, slot_fd, ring) = match made {
            Ok(made) => made,
            Err(e) => return refuse(listener, e),
        };
        slot.state().store(EMPTY, SeqCst);
        let session = match listener.accept(&[self.bell_fd.as_fd(), slot_fd.as_fd(), ring.as_fd()])
        {
            Ok(s) => s,
            Err(e) if starved(&e) => return Err(e),
            Err(_) => return Ok(None),
        };
        let pool = self.sets.pool();
        let home = match pool {
            true => self.next_home.fetch_add(1, Relaxed) % self.sets.len(),
            false => 0,
        };
        let creds = creds_of(session.as_fd());
        let mut table = self.table.write();
        let token = table.next_token();
        let peer = self.join(token, &session, &slot_fd, &ring);
        let conn = ShmConn {
            client: Client {
                id: token.with_mark(false),
                creds,
            },
            slot,
            session,
            ring: None,
            token,
            served: AtomicU32::new(0),
            home: AtomicUsize::new(home),
            moved: Mutex::default(),
            dead: AtomicBool::new(false),
            held: AtomicBool::new(false),
            peer,
        };
        if self.watch_conn(&conn, ring.as_fd()).is_err() {
            return Ok(None);
        }
        // One thread: the registration lives on with the client's copy of
        // the bell (see the module doc), so ours closes here.
        let conn = ShmConn {
            ring: pool.then_some(ring),
            ..conn
        };
        table.insert(Arc::new(conn));
        Ok(Some(()))
    }

    /// Accepts the clients waiting, a backlog's worth at most.
    fn accept(&self) {
        if let Some(d) = &self.door {
            d.answer();
        }
        let mut acc = self.listener.lock();
        for _ in 0..ACCEPT_BURST {
            if acc.paused.is_some() || !readable_now(acc.listener.as_fd()) {
                return;
            }
            if let Err(e) = self.greet(&acc.listener) {
                if starved(&e) {
                    // Out of descriptors: the listener rests a tick.
                    acc.paused = Some(Instant::now() + self.opts.tick);
                    self.sets.delete(acc.listener.as_fd());
                }
                return;
            }
        }
    }

    /// Drops connection `c`: out of the table and the sets; its slot goes
    /// with the last thread that holds it.
    fn close(&self, c: &ShmConn) {
        if c.dead.swap(true, SeqCst) {
            return;
        }
        self.sets.delete(c.session.as_fd());
        if let Some(r) = &c.ring {
            self.sets.delete(r.as_fd());
        }
        self.leave(c);
        self.table.write().remove(c.token);
    }

    /// Takes connection `c`'s request, if it has one not taken yet: its
    /// number moves `served` forward (a CAS in a pool, where several
    /// threads may look), its length is read once and bounded. A request
    /// whose length lies is answered `EMSGSIZE` and skipped.
    #[inline]
    fn take_from(&self, c: &ShmConn) -> Option<(u32, usize)> {
        let st = c.slot.state().load(SeqCst);
        if st & MASK != REQUEST {
            return None;
        }
        let seq = c.slot.seq().load(Acquire);
        let served = c.served.load(Relaxed);
        if seq == served || c.dead.load(Relaxed) || c.held.load(Relaxed) {
            return None;
        }
        if self.sets.pool() {
            c.served
                .compare_exchange(served, seq, AcqRel, Relaxed)
                .ok()?;
        } else {
            c.served.store(seq, Relaxed);
        }
        let len = c.slot.len().load(Relaxed) as usize;
        let cmd = c.slot.cmd().load(Relaxed);
        if len > self.opts.max_msg {
            publish(&c.slot, libc::EMSGSIZE as u32, 0);
            return None;
        }
        Some((cmd, len))
    }

    /// A spinning thread's wait (`Wait::Spin`): looks at its slots, taking
    /// nothing, until one may be taken ([`posted`](Self::posted), or the
    /// kernel told of a connection) or `stop` is set, answering knocks
    /// as it goes and looking at its set every [`HARVEST_EVERY`] rounds of
    /// `spins`. Out of line, so that an instruction count can leave the
    /// spin out (tests/instructions.rs takes its inclusive cost off): how
    /// long it runs depends on the peer, not on our code.
    #[inline(never)]
    fn spin_until_posted(
        &self,
        w: &mut ShmWorker,
        stop: &AtomicBool,
        spins: &mut u32,
    ) -> Result<()> {
        while w.told.is_empty() && !self.posted(w) && !stop.load(Relaxed) {
            self.answer_knock(w)?;
            *spins = spins.wrapping_add(1);
            self.spun(w, *spins)?;
        }
        Ok(())
    }

    /// One round of a spin (the `spins`th): a pause, and every
    /// [`HARVEST_EVERY`] rounds a look at the set (and, once a tick, around).
    #[inline]
    fn spun(&self, w: &mut ShmWorker, spins: u32) -> Result<()> {
        std::hint::spin_loop();
        if spins % HARVEST_EVERY == 0 {
            self.harvest(w, Duration::ZERO)?;
            if w.last_look.elapsed() >= self.opts.tick {
                self.look_around(w);
            }
        }
        Ok(())
    }

    /// A thread's look at what it can serve: first the connections the
    /// kernel told it of, then the slots it watches, round-robin.
    fn find(&self, w: &mut ShmWorker) -> Option<Incoming> {
        while let Some(c) = w.told.pop_front() {
            if let Some((cmd, len)) = self.take_from(&c) {
                if is_pulse(cmd) {
                    match self.take_pulse(w, &c, len) {
                        Some(inc) => return Some(inc),
                        None => continue,
                    }
                }
                self.hold(w, c, cmd, len);
                return Some(Incoming {
                    cmd,
                    len,
                    oneway: false,
                });
            }
        }
        let n = w.watched.len();
        for k in 0..n {
            let i = if n == 1 { 0 } else { (w.next + k) % n };
            if let Some((cmd, len)) = self.take_from(&w.watched[i].conn) {
                w.next = i + 1;
                w.watched[i].last = w.calls;
                w.watched[i].epoch = w.epoch;
                if is_pulse(cmd) {
                    let c = Arc::clone(&w.watched[i].conn);
                    match self.take_pulse(w, &c, len) {
                        Some(inc) => return Some(inc),
                        None => continue,
                    }
                }
                w.cur = Some(Cur::Watched(i));
                w.len = len;
                return Some(Incoming {
                    cmd,
                    len,
                    oneway: false,
                });
            }
        }
        None
    }

    /// A pulse just taken from `c` (its payload `len` bytes): copied out
    /// for `w`, and the slot handed back to its client at once (`EMPTY`,
    /// woken if it waits for room). A malformed one drops the connection.
    #[cold]
    fn take_pulse(&self, w: &mut ShmWorker, c: &ShmConn, len: usize) -> Option<Incoming> {
        let mut p = [0u8; PULSE_LEN];
        if len != PULSE_LEN || {
            c.slot.read(&mut p);
            Pulse::decode(&p).is_none()
        } {
            self.close(c);
            return None;
        }
        give_back(&c.slot);
        w.pulse = Some(p);
        w.pulse_from = Some(c.client);
        Some(Incoming::from_wire(PULSE | ONEWAY, PULSE_LEN))
    }

    /// `w` holds the request (`cmd`, `len`) of `c`, which it was told of:
    /// it watches `c` from now on when `c` is at home here, and `c` moves
    /// home to the thread on its client's CPU.
    fn hold(&self, w: &mut ShmWorker, c: Arc<ShmConn>, _cmd: u32, len: usize) {
        w.len = len;
        if self.sets.pool() {
            self.move_home(&c);
        }
        let at_home = !self.sets.pool() || c.home.load(Relaxed) == w.index;
        if at_home {
            if let Some(i) = w.watched.iter().position(|e| Arc::ptr_eq(&e.conn, &c)) {
                w.watched[i].last = w.calls;
                w.watched[i].epoch = w.epoch;
                w.cur = Some(Cur::Watched(i));
                return;
            }
            if w.watched.len() == WATCH_MAX {
                let idlest = (0..w.watched.len())
                    .max_by_key(|&i| w.calls.wrapping_sub(w.watched[i].last))
                    .unwrap_or(0);
                self.unwatch(w, idlest);
            }
            c.slot.watch().store(w.index as u32 + 1, SeqCst);
            w.watched.push(Watched {
                conn: c,
                last: w.calls,
                epoch: w.epoch,
            });
            w.cur = Some(Cur::Watched(w.watched.len() - 1));
            return;
        }
        w.cur = Some(Cur::Other(c));
    }

    /// `w` stops watching its `i`-th slot. A request posted meanwhile
    /// (whose client saw it watched, so did not ring) is looked at next.
    fn unwatch(&self, w: &mut ShmWorker, i: usize) {
        let e = w.watched.swap_remove(i);
        if e.conn.slot.watch().load(Relaxed) == w.index as u32 + 1 {
            e.conn.slot.watch().store(0, SeqCst);
        }
        if e.conn.slot.state().load(SeqCst) & MASK == REQUEST {
            w.told.push_back(e.conn);
        }
    }

    /// In a pool: moves `c`'s home to the thread pinned on the CPU its
    /// client last ran on, if there is one (at most once a tick: a client
    /// hopping between CPUs must not make us re-register it each call).
    fn move_home(&self, c: &ShmConn) {
        let cpu = c.slot.client_cpu().load(Relaxed);
        let Some(to) = self.homes.move_to(cpu, c.home.load(Relaxed)) else {
            return;
        };
        if !c.moved.lock().allow(self.opts.tick) {
            return;
        }
        let Some(ring) = &c.ring else { return };
        c.home.store(to, Relaxed);
        self.sets.delete(ring.as_fd());
        if self
            .sets
            .add(
                ring.as_fd(),
                c.token.with_mark(false),
                Interest::READABLE.edge(),
                to,
            )
            .is_err()
        {
            self.close(c);
        }
    }

    /// The connection of the request `w` holds.
    #[inline]
    fn held<'a>(&self, w: &'a ShmWorker) -> Option<&'a ShmConn> {
        match w.cur.as_ref()? {
            Cur::Watched(i) => Some(&w.watched[*i].conn),
            Cur::Other(c) => Some(c),
        }
    }

    /// True when the channel has clients that `w` does not watch (found
    /// only through their bells).
    fn unwatched(&self, w: &ShmWorker) -> bool {
        self.table.read().len() > w.watched.len()
    }

    /// Waits up to `timeout` on `w`'s epoll set and handles what it
    /// reports: clients that rang are looked at next, hang-ups dropped,
    /// newcomers accepted.
    fn harvest(&self, w: &mut ShmWorker, timeout: Duration) -> Result<()> {
        w.set
            .wait(&mut w.events, Some(timeout))
            .map_err(|e| Error::io("epoll_wait", e))?;
        for k in 0..w.events.len() {
            let raw = w.events[k].token;
            if raw == LISTENER {
                self.accept();
                continue;
            }
            match Token::from_raw(raw) {
                (t, false) => {
                    if let Some(c) = self.conn(t) {
                        w.told.push_back(c);
                    }
                }
                // A client never writes on its session: any event is its
                // hang-up.
                (t, true) => {
                    if let Some(c) = self.conn(t) {
                        self.close(&c);
                    }
                }
            }
        }
        Ok(())
    }

    /// Once a tick: slots idle for a tick (or dropped, or moved to
    /// another home) are no longer watched; a listener at rest is watched
    /// again.
    fn look_around(&self, w: &mut ShmWorker) {
        w.last_look = Instant::now();
        w.epoch = w.epoch.wrapping_add(1);
        let pool = self.sets.pool();
        let mut i = 0;
        while i < w.watched.len() {
            let e = &w.watched[i];
            let idle = w.epoch.wrapping_sub(e.epoch) > 1;
            let away = pool && e.conn.home.load(Relaxed) != w.index;
            if idle || away || e.conn.dead.load(Relaxed) {
                self.unwatch(w, i);
            } else {
                i += 1;
            }
        }
        let mut acc = self.listener.lock();
        if acc.paused.is_some_and(|until| w.last_look >= until) {
            acc.paused = None;
            let _ = self
                .sets
                .add(acc.listener.as_fd(), LISTENER, Interest::READABLE, 0);
        }
    }

    /// Checks one watched slot (in turn) for idleness: unwatched once it
    /// had no request for [`IDLE_RECEIVES`] receives.
    #[inline]
    fn sweep(&self, w: &mut ShmWorker) {
        let n = w.watched.len();
        if n == 0 {
            return;
        }
        // No division on this path: it runs on every receive.
        w.sweep = if w.sweep + 1 >= n { 0 } else { w.sweep + 1 };
        if w.calls.wrapping_sub(w.watched[w.sweep].last) > IDLE_RECEIVES {
            self.unwatch(w, w.sweep);
        }
    }

    /// Publishes our CPU and says whether any watched client was last
    /// seen on another CPU (so that spinning for its next request can pay
    /// off).
    fn peers_elsewhere(&self, w: &ShmWorker) -> bool {
        let me = oslayer::cpu::current_cpu();
        let published = self.bell.atomic_u32(bell_cpu(w.index));
        if published.load(Relaxed) != me {
            published.store(me, Relaxed);
        }
        w.watched
            .iter()
            .any(|e| worth_spinning(me, e.conn.slot.client_cpu().load(Relaxed)))
    }

    /// True when a watched slot has a request not taken yet (one
    /// `take_from` would take: not held, its connection not dead).
    fn posted(&self, w: &ShmWorker) -> bool {
        w.watched.iter().any(|e| {
            let c = &e.conn;
            c.slot.state().load(SeqCst) & MASK == REQUEST
                && c.slot.seq().load(Relaxed) != c.served.load(Relaxed)
                && !c.held.load(Relaxed)
                && !c.dead.load(Relaxed)
        })
    }

    /// Sleeps in the epoll set until a client rings (or hangs up, or
    /// connects) or `timeout` passes. Before, says so in the doorbell and
    /// looks at the watched slots once more: either that look sees a
    /// request, or its client saw us asleep and rang.
    fn sleep(&self, w: &mut ShmWorker, stop: &AtomicBool, timeout: Duration) -> Result<()> {
        if self.alone(w) {
            self.nap(w, stop, timeout);
            return Ok(());
        }
        let state = self.state_of(w.index);
        state.store(SLEEPING, SeqCst);
        if !self.posted(w) && !stop.load(Relaxed) {
            self.harvest(w, timeout)?;
        }
        state.store(LOOKING, SeqCst);
        Ok(())
    }

    /// A client connected while this thread looked only at its slots (the
    /// doorman says so): accepts it now, through the set.
    #[inline]
    fn answer_knock(&self, w: &mut ShmWorker) -> Result<()> {
        match &self.door {
            Some(d) if d.knocked() => {
                d.answer();
                self.harvest(w, Duration::ZERO)
            }
            _ => Ok(()),
        }
    }

    /// Leaves on the door what ends a nap on `c`'s state word (a futex
    /// wake of it), when that is not there already.
    fn nap_waker(&self, w: &mut ShmWorker, c: &Arc<ShmConn>) {
        let Some(d) = &self.door else { return };
        if w.napping_on != Some(c.token) {
            w.napping_on = Some(c.token);
            d.wake_with(Some(Arc::new(SlotWaker(Arc::downgrade(c)))));
        }
    }

    /// True when `w` is the only thread and its one watched slot is the
    /// channel's only client: it can nap on that slot's word.
    fn alone(&self, w: &ShmWorker) -> bool {
        !self.sets.pool()
            && w.watched.len() == 1
            && w.told.is_empty()
            && self.table.read().len() == 1
    }

    /// The one-client sleep: a futex wait on the client's state word, which
    /// the client wakes after posting when it sees [`NAPPING`] (the
    /// futex_wake of the protocol before the bells, without the epoll set's
    /// work per message). Newcomers and hang-ups wait for the tick, when
    /// the thread looks at its set. The same Dekker pair: the word loaded
    /// after the state is published is the one the kernel must find
    /// unchanged.
    fn nap(&self, w: &mut ShmWorker, stop: &AtomicBool, timeout: Duration) {
        let c = Arc::clone(&w.watched[0].conn);
        self.nap_waker(w, &c);
        let state = self.state_of(w.index);
        state.store(NAPPING, SeqCst);
        let word = w.watched[0].conn.slot.state();
        let seen = word.load(SeqCst);
        if !self.posted(w) && !stop.load(Relaxed) {
            oslayer::futex::wait(word, seen, Some(timeout), true);
        }
        state.store(LOOKING, SeqCst);
    }

    /// `w` is about to hand what it took to the application, in a pool or
    /// with priority inheritance: the request's boost begins, and the
    /// thread says it is busy (a single thread only while a boost is
    /// held: the watcher raises a thread for an arrival only then).
    #[inline(never)]
    fn handing(&self, w: &mut ShmWorker, pool: bool) {
        if self.inherit.is_some() {
            self.took(w, pool);
        }
        if pool || w.boost.is_some() {
            self.going_busy(w);
        }
    }

    /// A pool's thread (or one inheriting priority) is about to hand its
    /// request to the application:
    /// clients it watches should ring from now on. A request one of them
    /// posted before it could see that is handed to another thread (its
    /// bell rung for it).
    fn going_busy(&self, w: &ShmWorker) {
        let handed = &self.handed[w.index];
        handed.store(handed.load(Relaxed).wrapping_add(1), Relaxed);
        self.state_of(w.index).store(BUSY, SeqCst);
        for e in &w.watched {
            let c = &e.conn;
            if c.slot.state().load(SeqCst) & MASK == REQUEST
                && c.slot.seq().load(Relaxed) != c.served.load(Relaxed)
            {
                if let Some(r) = &c.ring {
                    let _ = oslayer::eventfd::write(r.as_fd(), 1);
                }
            }
        }
    }
}

/// What ends a thread's nap on a client's state word when a newcomer
/// knocks (the doorman's [`Wake`]): a futex wake of the word. Weak: a
/// waker left on the door keeps no connection alive.
struct SlotWaker(std::sync::Weak<ShmConn>);

impl Wake for SlotWaker {
    fn wake(&self) {
        if let Some(c) = self.0.upgrade() {
            oslayer::futex::wake(c.slot.state(), u32::MAX, true);
        }
    }
}

/// True when `fd` polls readable now.
fn readable_now(fd: BorrowedFd<'_>) -> bool {
    let mut p = [oslayer::poll::PollFd::readable(fd)];
    oslayer::poll::poll(&mut p, Some(Duration::ZERO)).unwrap_or(0) > 0
}

/// Hands `slot` back to its client without a reply (a pulse taken): `EMPTY`,
/// and the client woken if it sleeps waiting for room.
fn give_back(slot: &Slot) {
    let st = slot.state();
    if st.swap(EMPTY, SeqCst) & WAITER != 0 {
        oslayer::futex::wake(st, 1, true);
    }
}

/// Publishes the reply now in `slot` (`len` bytes, wire status `code`) and
/// wakes its client if it sleeps.
#[inline]
fn publish(slot: &Slot, code: u32, len: usize) {
    slot.len().store(len as u32, Relaxed);
    slot.status().store(code, Relaxed);
    let st = slot.state();
    if st.load(Relaxed) & SPINS != 0 {
        // The client spins and never sets WAITER: publish only.
        st.store(REPLY, Release);
    } else if st.swap(REPLY, SeqCst) & WAITER != 0 {
        oslayer::futex::wake(st, 1, true);
    }
}

/// Writes a reply of `data` (status `status`) into `slot` and publishes
/// it; over `max` it is `EMSGSIZE` with no payload.
#[inline]
fn reply_into(slot: &Slot, status: Status, data: &[u8], max: usize) {
    let (code, data) = status.encode(data);
    let (code, data) = if data.len() > max {
        (libc::EMSGSIZE as u32, &[][..])
    } else {
        (code, data)
    };
    slot.write(data);
    publish(slot, code, data.len());
}

impl Core for ShmCore {
    type Worker = ShmWorker;
    type Held = Held<ShmReplyTo>;

    fn worker(self: &Arc<Self>) -> Result<ShmWorker> {
        let (set, index) = self.sets.push().map_err(|e| Error::io("epoll_create", e))?;
        if index >= MAX_THREADS {
            return Err(Error::BadPool {
                threads: index + 1,
                max: MAX_THREADS,
            });
        }
        let acc = self.listener.lock();
        if acc.paused.is_none() {
            self.sets
                .add_to(&set, acc.listener.as_fd(), LISTENER, Interest::READABLE)
                .map_err(|e| Error::io("epoll_ctl", e))?;
        }
        drop(acc);
        for c in self.table.read().values() {
            self.sets
                .add_to(
                    &set,
                    c.session.as_fd(),
                    c.token.with_mark(true),
                    Interest::READABLE,
                )
                .map_err(|e| Error::io("epoll_ctl", e))?;
            if let Some(r) = &c.ring {
                self.sets
                    .add_to(
                        &set,
                        r.as_fd(),
                        c.token.with_mark(false),
                        Interest::READABLE.edge(),
                    )
                    .map_err(|e| Error::io("epoll_ctl", e))?;
            }
        }
        Ok(ShmWorker {
            core: Arc::clone(self),
            index,
            set,
            events: Vec::with_capacity(64),
            told: VecDeque::new(),
            watched: Vec::with_capacity(WATCH_MAX),
            next: 0,
            sweep: 0,
            cur: None,
            len: 0,
            copy: RequestCopy::new(self.opts.max_msg),
            pulse: None,
            pulse_from: None,
            pace: Pacer::new(self.opts.pace),
            epoch: 0,
            calls: 0,
            last_look: Instant::now(),
            napping_on: None,
            placed: false,
            boosts: None,
            boost: None,
        })
    }

    fn pool(self: &Arc<Self>, _threads: usize) -> Result<()> {
        self.sets.set_pool();
        self.hands.store(true, SeqCst);
        let flags = self.bell.atomic_u32(BELL_FLAGS);
        flags.store(flags.load(SeqCst) | FLAG_POOL, SeqCst);
        // The connections made so far keep their registration with the
        // first thread (their bells' descriptors are closed): see
        // `Channel::into_pool`. The listener becomes exclusive.
        if let Some(first) = self.sets.get(0) {
            let acc = self.listener.lock();
            if acc.paused.is_none() {
                first.delete(acc.listener.as_fd());
                self.sets
                    .add_to(&first, acc.listener.as_fd(), LISTENER, Interest::READABLE)
                    .map_err(|e| Error::io("epoll_ctl", e))?;
            }
        }
        Ok(())
    }

    fn receive(&self, w: &mut ShmWorker, stop: &AtomicBool) -> Result<Option<Incoming>> {
        w.cur = None;
        w.pulse = None;
        w.copy.forget();
        let pool = self.sets.pool();
        if pool {
            self.state_of(w.index).store(LOOKING, SeqCst);
            self.homes.place(w.index, &mut w.placed);
        }
        w.calls = w.calls.wrapping_add(1);
        self.answer_knock(w)?;
        if w.calls % HOUSEKEEP_EVERY == 0 && w.last_look.elapsed() >= self.opts.tick {
            self.harvest(w, Duration::ZERO)?;
            self.look_around(w);
        }
        if w.calls % TELL_EVERY == 0 && self.unwatched(w) {
            self.harvest(w, Duration::ZERO)?;
        }
        self.sweep(w);
        let mut spins: u32 = 0;
        let mut spin_until: Option<Instant> = None;
        let mut spin_ok: Option<bool> = None;
        if self.wait != Wait::Block {
            w.pace.hold();
        }
        loop {
            if let Some(inc) = self.find(w) {
                w.pace.done();
                if self.hands.load(Relaxed) {
                    self.handing(w, pool);
                }
                return Ok(Some(inc));
            }
            if stop.load(Relaxed) {
                return Ok(None);
            }
            self.answer_knock(w)?;
            spins = spins.wrapping_add(1);
            let spinning = match self.wait {
                Wait::Spin => {
                    self.spin_until_posted(w, stop, &mut spins)?;
                    continue;
                }
                Wait::Block => false,
                Wait::Hybrid if !*spin_ok.get_or_insert_with(|| self.peers_elsewhere(w)) => false,
                Wait::Hybrid => {
                    if spins % 64 == 1 {
                        let now = Instant::now();
                        let until = *spin_until.get_or_insert(now + self.opts.spin);
                        now < until
                    } else {
                        true
                    }
                }
            };
            if spinning {
                self.spun(w, spins)?;
                continue;
            }
            let since = w.last_look.elapsed();
            if since >= self.opts.tick {
                self.harvest(w, Duration::ZERO)?;
                self.look_around(w);
                continue;
            }
            self.sleep(w, stop, self.opts.tick - since)?;
        }
    }

    #[inline]
    fn data<'a>(&'a self, w: &'a ShmWorker) -> &'a [u8] {
        match (self.held(w), &w.pulse) {
            (Some(c), _) => w.copy.get(&c.slot, w.len),
            (None, Some(p)) => &p[..],
            (None, None) => &[],
        }
    }

    /// The request in the client's slot (a pulse's private copy).
    #[inline]
    fn view<'a>(&'a self, w: &'a ShmWorker) -> View<'a> {
        match (self.held(w), &w.pulse) {
            (Some(c), _) => c.slot.view(w.len),
            (None, Some(p)) => View::from(&p[..]),
            (None, None) => View::from(&[][..]),
        }
    }

    #[inline]
    fn reply(&self, w: &mut ShmWorker, status: Status, data: &[u8]) -> Result<()> {
        if w.boost.is_some() {
            return self.reply_inheriting(w, |c, max| reply_into(&c.slot, status, data, max));
        }
        let c = self.held(w).ok_or_else(Error::no_request)?;
        reply_into(&c.slot, status, data, self.opts.max_msg);
        w.cur = None;
        Ok(())
    }

    #[inline]
    fn reply_buffer<'a>(&'a self, w: &'a mut ShmWorker) -> Option<Window<'a>> {
        let c = self.held(w)?;
        Some(c.slot.window(self.opts.max_msg))
    }

    #[inline]
    fn reply_in_place(&self, w: &mut ShmWorker, len: usize) -> Result<()> {
        if w.boost.is_some() {
            return self.reply_in_place_inheriting(w, len);
        }
        let c = self.held(w).ok_or_else(Error::no_request)?;
        let (code, len, verdict) = in_place_parts(len, self.opts.max_msg);
        publish(&c.slot, code, len);
        w.cur = None;
        verdict
    }

    fn detach(&self, w: &mut ShmWorker) -> Option<Held<ShmReplyTo>> {
        let max = self.opts.max_msg;
        if let Some(p) = w.pulse.take() {
            // A pulse: nothing to answer, its payload copied already.
            return Some(Held::new(
                p.to_vec(),
                ShmReplyTo::nobody(w),
                max,
                w.pulse_from,
            ));
        }
        let conn = match w.cur.take()? {
            Cur::Watched(i) => Arc::clone(&w.watched[i].conn),
            Cur::Other(c) => c,
        };
        conn.held.store(true, Relaxed);
        if w.boost.is_some() && !self.sets.pool() {
            // The thread looks again while the request is held.
            self.state_of(w.index).store(LOOKING, SeqCst);
        }
        let client = Some(conn.client);
        let to = ShmReplyTo {
            conn: Some(conn),
            receiver: self.receiver(w),
            boost: w.boost.take(),
        };
        Some(Held::lazy(w.len, w.copy.take(w.len), to, max, client))
    }

    fn connections(&self) -> usize {
        self.table.read().len()
    }

    fn client(&self, w: &ShmWorker) -> Option<Client> {
        match self.held(w) {
            Some(c) => Some(c.client),
            None => w.pulse.and(w.pulse_from),
        }
    }
}

impl Drop for ShmCore {
    fn drop(&mut self) {
        // Tell every client at once, rather than after its next tick; but
        // never over a reply it has not read yet (it learns of the close on
        // its next call, from the hang-up, within a tick).
        for c in self.table.read().values() {
            let st = c.slot.state();
            let mut s = st.load(SeqCst);
            // Bounded: a hostile client could keep changing its word.
            for _ in 0..CLOSE_ATTEMPTS {
                if s & MASK == REPLY {
                    break;
                }
                match st.compare_exchange(s, CLOSED, SeqCst, SeqCst) {
                    Ok(_) => {
                        if s & WAITER != 0 {
                            oslayer::futex::wake(st, 1, true);
                        }
                        break;
                    }
                    Err(now) => s = now,
                }
            }
        }
    }
}

/// Where a held request of an shm channel is answered: its client's slot,
/// where the request stays until then (the server takes no other request
/// of the connection meanwhile), lent to reply in place.
pub(crate) struct ShmReplyTo {
    /// `None` once answered (or a pulse: nothing to answer).
    conn: Option<Arc<ShmConn>>,
    /// The pool thread that received it.
    receiver: Receiver,
    /// Its caller's boost of the thread that received it (until the
    /// reply is out).
    boost: Option<Boost>,
}

/// The pool thread that received a held request: answered on that thread
/// while it is the last request handed out there, the thread is free
/// again, and publishes [`LOOKING`] before the reply, so that the
/// client's next request, posted at once on the same CPU, does not ring
/// for another thread on another CPU while this one is about to look.
struct Receiver {
    core: Arc<ShmCore>,
    worker: usize,
    thread: ThreadId,
    /// The worker's count of requests handed out, with this one.
    handed: u32,
}

impl ShmCore {
    /// The thread `w` as the receiver of the request it hands out now.
    fn receiver(&self, w: &ShmWorker) -> Receiver {
        Receiver {
            core: Arc::clone(&w.core),
            worker: w.index,
            thread: std::thread::current().id(),
            handed: self.handed[w.index].load(Relaxed),
        }
    }
}

impl ShmReplyTo {
    /// Where a pulse taken by `w` is answered: nowhere.
    fn nobody(w: &ShmWorker) -> ShmReplyTo {
        ShmReplyTo {
            conn: None,
            receiver: w.core.receiver(w),
            boost: None,
        }
    }

    /// The connection to answer, once: its next request may be taken from
    /// now on. `None` when its client is gone meanwhile (or for a pulse).
    fn take(&mut self) -> Option<Arc<ShmConn>> {
        let c = self.conn.take()?;
        if let Some(b) = &self.boost {
            b.replying();
        }
        c.held.store(false, Relaxed);
        let r = &self.receiver;
        if std::thread::current().id() == r.thread
            && r.core.handed[r.worker].load(Relaxed) == r.handed
        {
            r.core.state_of(r.worker).store(LOOKING, SeqCst);
        }
        (!c.dead.load(Relaxed)).then_some(c)
    }
}

impl ReplyTo for ShmReplyTo {
    fn send(&mut self, code: u32, data: &[u8]) -> bool {
        if self.conn.is_none() {
            // A pulse: nobody waits for an answer (as `core::Unanswered`).
            return true;
        }
        let Some(c) = self.take() else {
            return false;
        };
        c.slot.write(data);
        publish(&c.slot, code, data.len());
        self.boost = None;
        true
    }

    fn fetch(&self, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        if let Some(c) = &self.conn {
            c.slot.read(&mut v);
        }
        v
    }

    fn window(&mut self, max: usize) -> Option<Window<'_>> {
        let c = self.conn.as_ref()?;
        Some(c.slot.window(max))
    }

    fn publish(&mut self, code: u32, len: usize) -> bool {
        let sent = match self.take() {
            Some(c) => {
                publish(&c.slot, code, len);
                true
            }
            None => false,
        };
        self.boost = None;
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::api::Transport;
    use crate::transport::wire::rendezvous;
    use std::sync::mpsc;

    /// A client that maps what it was given and scribbles on every word it
    /// can write, and rings its bell, in a loop, until `stop`; while
    /// `quiet`, it leaves its garbage in place and waits (so that the
    /// server sleeps, and a missed wake-up would show). Checks on the way
    /// that the doorbell cannot be written.
    fn hostile(
        path: &Path,
        opts: &Options,
        [stop, quiet]: [&AtomicBool; 2],
        ready: mpsc::Sender<()>,
    ) {
        let (_sock, hello, fds) = rendezvous::connect(path, Family::Shm, opts).unwrap();
        let (bell_fd, slot_fd, ring) = (&fds[0], &fds[1], &fds[2]);
        assert!(
            Mapping::new(bell_fd.as_fd(), BELL_LEN).is_err(),
            "doorbell writable"
        );
        assert!(oslayer::mman::map_sealed_read_only(bell_fd.as_fd(), BELL_LEN, "bell").is_ok());
        let slot_len = slot_size(hello.max_msg);
        let slot = Mapping::new(slot_fd.as_fd(), slot_len).unwrap();
        ready.send(()).unwrap();
        let mut x: u32 = 0x9e37_79b9;
        let mut round: u32 = 0;
        while !stop.load(Relaxed) {
            if quiet.load(Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            for off in (0..64).step_by(4).chain([slot_len - 4]) {
                // xorshift: garbage, now and then a plausible request.
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let v = match x % 4 {
                    0 => REQUEST | (x & (WAITER | SPINS)),
                    1 => x & MASK,
                    _ => x,
                };
                slot.atomic_u32(off).store(v, SeqCst);
            }
            let _ = oslayer::eventfd::write(ring.as_fd(), 1);
            oslayer::futex::wake(slot.atomic_u32(0), u32::MAX, true);
            round = round.wrapping_add(1);
            if round % 64 == 0 {
                std::thread::yield_now();
            }
        }
    }

    #[test]
    fn a_hostile_client_cannot_stall_the_server_for_an_honest_one() {
        let tmp = tempfile::Builder::new()
            .prefix("msgpass-shm-hostile-")
            .tempdir()
            .expect("dir");
        let dir = tmp.path().to_path_buf();
        let path = dir.join("ch");
        // A tick longer than the bound: a missed wake-up would only end
        // with the server's next tick, so it shows as a late answer.
        let opts = Options {
            tick: Duration::from_secs(3),
            max_msg: 256,
            ..Options::default()
        };
        let transport = super::super::Shm::new(Wait::Block);
        let mut server = transport.serve(&path, &opts).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let quiet = Arc::new(AtomicBool::new(false));
        let server_thread = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while let Ok(Some(inc)) = server.receive(&stop) {
                    let mut out = server.data().to_vec();
                    out.extend_from_slice(&inc.cmd.to_le_bytes());
                    if server.reply(Status::Ok, &out).is_err() {
                        break;
                    }
                }
            })
        };
        let hostile_thread = {
            let (stop, quiet) = (Arc::clone(&stop), Arc::clone(&quiet));
            let (path, opts) = (path.clone(), opts.clone());
            let (ready, mapped) = mpsc::channel();
            let t = std::thread::spawn(move || hostile(&path, &opts, [&stop, &quiet], ready));
            mapped.recv().unwrap();
            t
        };
        let mut honest = transport.connect(&path, &opts).unwrap();
        let mut reply = [0u8; 256];
        for i in 0..100u32 {
            // Ten calls while it scribbles, ten while it lies low.
            quiet.store(i / 10 % 2 == 1, Relaxed);
            let req = [i as u8; 13];
            let asked = Instant::now();
            let n = honest.call(i, &req, &mut reply).unwrap();
            let took = asked.elapsed();
            assert!(
                took < Duration::from_secs(2),
                "call {i} answered after {took:?}"
            );
            assert_eq!(&reply[..13], &req);
            assert_eq!(&reply[13..n], &i.to_le_bytes());
        }
        stop.store(true, SeqCst);
        hostile_thread.join().unwrap();
        drop(honest);
        server_thread.join().unwrap();
    }
}
