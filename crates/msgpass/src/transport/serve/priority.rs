//! Priority inheritance through messages ([`Options::inherit_priority`]):
//! the thread that serves a request runs at the calling thread's policy
//! and priority until it replies, as on QNX.
//!
//! **Who calls.** The calling *process* is the one the kernel names: the
//! process that connected the client's rendezvous session (a Unix
//! seqpacket socket), held from accept on as a pidfd (`SO_PEERPIDFD`,
//! Linux 6.5), which names that process and no other, also after it has
//! exited and its pid has gone to another. On an older kernel the pidfd
//! is opened on the `SO_PEERCRED` pid at accept: a client that has
//! exited by then, its pid already reused, would be taken for the
//! process holding that pid now (a race of one accept; the pid space must
//! wrap meanwhile). The calling *thread* is claimed by the client library
//! in a one-way control message (`TID`, sent only when the calling
//! thread differs from the last one named on that connection), and
//! believed only if the kernel lists that thread as one of the peer
//! process's (`/proc/<pid>/task/<tid>`, read while both pidfds say that
//! pid and that thread id are still theirs), and only while it is that
//! thread: the claim keeps a handle on it that a reused thread id cannot
//! pass (a thread pidfd, `PIDFD_THREAD`, Linux 6.9; on older kernels its
//! `/proc/<pid>/task/<tid>` directory, under which the kernel finds
//! nothing once that thread is gone, whoever has its id since). A claim
//! that fails is forgotten, and the connection's requests get no boost
//! until a true one comes. The caller's policy and priority are then read
//! from the kernel (`sched_getattr` on that thread id) at each request,
//! never taken from a message, and used only if the handle says, *after*
//! the read, that the thread has not exited (so the id read was still
//! its): one `poll` more per request. When it has, the claim is
//! forgotten then: no boost for that request and the following ones, and
//! a boost on arrival it gave is dropped.
//!
//! **Which transports.** `uds`, `uds-stream` and `uds-dgram`: a Unix
//! socket whose peer the kernel names, and whose next message the watcher
//! can look at without taking it (`MSG_PEEK`). `pipe` and `fifo`: the
//! process is the one that connected the rendezvous session; a message
//! waiting on the pipe cannot be looked at, so the client names its
//! connecting thread as soon as it connects (a `TID` message the server
//! reads while idle), and the watcher takes an arrival to be from the
//! connection's last verified thread (a client whose calling thread
//! changed is boosted on arrival at its previous thread's priority until
//! its message, the new claim in front, is taken). `eventfd`, `posix-mq`
//! and `io-uring`: as pipe, but their wires carry one message at a time
//! each way and no one-way message, so the claim is a call of its own
//! (`TID_CALL`, answered at once with an empty reply): one round trip
//! more when the calling thread changes (at connect, and when another
//! thread calls), none otherwise. An eventfd's count also rises on a
//! late poke of the server's own timed wait, which the watcher takes for
//! an arrival: at worst a boost at the connection's last caller's
//! priority until its next message is taken. `shm`, `shm-hybrid`,
//! `shm-spin`, `shm-block`: the process is the one that connected the
//! rendezvous session, the thread is claimed in a word of the
//! connection's slot (written by the client when its calling thread
//! changes), read by the server with the request and by the watcher on
//! an arrival (a `Front`), and checked as a `TID` message is; a server
//! that holds a request says it is busy in the doorbell, so that a
//! caller rings its bell, which the watcher hears (see
//! `mechanisms/shm/server/inherit.rs`). Refused elsewhere with
//! [`Error::NoInheritance`]: tcp and udp have no peer credentials (the
//! peer may be on another host, and a datagram's sender is not tied to the
//! session's process); sysv-msg, signal and fuse have servers of their
//! own, which do not carry it yet (not done).
//!
//! **The boost.** Each serving thread keeps the requests it holds
//! (received and not yet answered: deferred ones, and in a pool the ones
//! it received) with their callers' scheduling, and runs at the highest of
//! them; with none, at its own (read from the kernel at its first
//! receive). A caller below the server's own priority lowers it for the
//! request, as on QNX. A held request answered from another thread ends
//! its boost on the thread that received it. A caller under
//! SCHED_DEADLINE, or one whose thread is gone, gives no boost.
//!
//! **Until the next message, not the reply.** Its last request answered,
//! a thread is not set back to its own priority: it keeps its caller's
//! until it takes its next message, which sets it to that message's
//! caller's, or to its own for a message that lends nothing (a pulse, a
//! one-way message, a caller that gives no boost), or (a single thread)
//! until a connection closes. This is QNX's rule (a server keeps its
//! client's priority until its next `MsgReceive`: waiting for a message
//! it does not run, so its priority does not matter), and it makes a
//! caller that calls again cost no `sched_setattr` at all, where setting
//! back and raising again cost two a call (`msgbench rtos MSG-P-PRI`).
//! Where it would have been set back below its caller, the thread yields
//! the CPU after its reply instead, so that an answered caller sharing
//! its CPU runs at once, as it would have when the server was lowered. It
//! never lingers below its own priority (it would wake too slowly for a
//! higher caller's message), and a request ended unanswered (its caller
//! died) sets it back at once. The price, which QNX does not pay (its
//! kernel sets the priority before the thread runs): a thread woken at
//! its last caller's priority by a lower caller's message runs at it
//! until it has read the message and its caller (the receive and one
//! `sched_setattr`, microseconds), above any medium thread on its CPU. A
//! handler's own work after its reply also runs at the caller's priority,
//! as on QNX; work that must not belongs on another thread. A handler
//! must not change its own thread's scheduling: the next boost would
//! trust a stale record of it.
//!
//! **Boost on arrival.** A single-threaded server busy with a low
//! caller's request must run at a higher caller's priority as soon as that
//! caller sends, or a medium-priority task keeps both waiting. A watcher
//! thread of the channel, at SCHED_FIFO 99, waits on an epoll set of its
//! own holding every connection's wire edge-triggered; on an arrival while
//! the worker holds a request it peeks at the message (a `TID` claim in
//! front of it, else the connection's last verified thread; either
//! checked as above, a failed one forgotten and its boost on arrival
//! dropped), reads that thread's priority, and if it is above the one the
//! worker runs at, raises the worker (`sched_setattr` on its thread id)
//! until that connection's message is taken: the worker therefore goes
//! on at that priority after its reply, to receive it. It never lowers.
//! The watcher is armed only while the worker holds a request: the
//! connections' set is in the watcher's for one wake-up
//! (`EPOLLONESHOT`), put there when the worker takes a request and holds
//! no other, taken out before it answers its last one (before: its
//! caller may send the next request at once, from another CPU). An
//! arrival at a worker waiting for requests therefore wakes nobody but
//! the worker, which raises itself when it takes it. Arming first hands
//! the worker the arrivals of other connections since the last arming (a
//! message that came just before the request it took may be waiting),
//! which it looks at as the watcher would. The cost of a request is then
//! three `epoll` calls (drain, arm, disarm) instead of two context
//! switches to the watcher and back (`msgbench rtos MSG-P-PRI` on one CPU
//! here: 27.0 us to 14.8 us, against 8.8 us without inheritance), and
//! none while the request's connection is the only one with a caller
//! (nobody else can send; one that joins meanwhile arms it). In a
//! pool the watcher is never armed and raises nothing (a free thread
//! takes the arrival at its caller's priority; not done: raising a busy
//! pool).
//!
//! **Rights.** Raising a thread needs CAP_SYS_NICE or an RLIMIT_RTPRIO
//! that allows the priority; the option is refused at channel creation
//! when the process has neither. With an RLIMIT_RTPRIO below a caller's
//! priority the boost fails, and is counted (see `Boosts::failures`).

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use oslayer::epoll::{Epoll, Interest, Ready};
use oslayer::prio::{self, SchedAttr};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::transport::api::Options;
use crate::transport::wire::framing::{parse_head, HEAD, TID};

/// The transports that carry priority inheritance.
pub(crate) const SUPPORTED: &[&str] = &[
    "uds",
    "uds-stream",
    "uds-dgram",
    "pipe",
    "fifo",
    "eventfd",
    "posix-mq",
    "io-uring",
    "shm",
    "shm-hybrid",
    "shm-spin",
    "shm-block",
];

/// Why `transport` cannot carry priority inheritance, if it cannot.
fn refusal(transport: &str) -> Option<&'static str> {
    match transport {
        t if SUPPORTED.contains(&t) => None,
        "tcp" | "udp" => Some("the kernel names no peer process on an IP socket (it may be on another host), so the calling thread cannot be checked"),
        _ => Some("this transport's server does not carry it yet"),
    }
}

/// Refuses [`Options::inherit_priority`] where it cannot be given: on a
/// transport that cannot name its callers, or in a process that may not
/// use SCHED_FIFO.
pub(crate) fn check(transport: &str, opts: &Options) -> Result<()> {
    if !opts.inherit_priority {
        return Ok(());
    }
    if let Some(why) = refusal(transport) {
        return Err(Error::NoInheritance {
            reason: format!(
                "not on transport {transport}: {why} (it works on {})",
                SUPPORTED.join(", ")
            ),
        });
    }
    if prio::max_rt_priority() == 0 {
        return Err(Error::NoInheritance {
            reason: "this process cannot set SCHED_FIFO (it needs CAP_SYS_NICE, or an RLIMIT_RTPRIO above 0)".into(),
        });
    }
    Ok(())
}

/// The rank of `a` (SCHED_DEADLINE, never stored, ranks lowest).
fn rank(a: &SchedAttr) -> u32 {
    a.rank().unwrap_or(0)
}

/// What one serving thread runs at, and why.
struct State {
    own: SchedAttr,
    applied: SchedAttr,
    /// Requests it holds: (boost id, caller's scheduling).
    held: Vec<(u64, SchedAttr)>,
    /// Arrivals the watcher raised it for: (connection token, caller's).
    pending: Vec<(u64, SchedAttr)>,
    next: u64,
}

impl State {
    /// What the thread should run at: the highest of its held requests'
    /// callers and pending arrivals, or its own with neither.
    fn target(&self) -> SchedAttr {
        self.held
            .iter()
            .chain(&self.pending)
            .map(|(_, a)| *a)
            .max_by_key(rank)
            .unwrap_or(self.own)
    }
}

/// One serving thread's boosts.
pub(crate) struct Boosts {
    tid: i32,
    state: Mutex<State>,
    failures: AtomicU64,
    /// The single worker's channel: its watcher is armed while this
    /// thread holds a request (none in a pool, where it raises nothing).
    watcher: Option<Weak<Inherit>>,
}

impl Boosts {
    /// The calling thread's, its own scheduling read from the kernel now;
    /// `watcher`: the channel whose watcher it arms while it holds a
    /// request (the single worker's).
    pub(crate) fn for_this_thread(watcher: Option<Weak<Inherit>>) -> io::Result<Arc<Boosts>> {
        let own = prio::attr(0)?;
        Ok(Arc::new(Boosts {
            tid: oslayer::thread::gettid(),
            state: Mutex::new(State {
                own,
                applied: own,
                held: Vec::new(),
                pending: Vec::new(),
                next: 0,
            }),
            failures: AtomicU64::new(0),
            watcher,
        }))
    }

    /// The thread these boosts are for.
    pub(crate) fn tid(&self) -> i32 {
        self.tid
    }

    /// Boosts that the kernel refused (an RLIMIT_RTPRIO too low).
    #[allow(dead_code)]
    pub(crate) fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Schedules the thread at what `s` says it should run at, if that
    /// changed.
    fn apply(&self, s: &mut State) {
        let want = s.target();
        if want == s.applied {
            return;
        }
        match prio::set_attr(self.tid, want) {
            Ok(()) => s.applied = want,
            Err(_) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// A message of connection `token` was taken: an arrival raised for
    /// is no longer pending. A thread lingering at its last caller's priority (see
    /// [`Boosts::end`]) is set back to its own now: the message lends
    /// nothing.
    pub(crate) fn taken(&self, token: u64) {
        let mut s = self.state.lock();
        let before = s.pending.len();
        s.pending.retain(|(t, _)| *t != token);
        if s.pending.len() != before || s.held.is_empty() {
            self.apply(&mut s);
        }
    }

    /// A request of connection `token` from a caller scheduled `caller`
    /// was received: the thread runs at least at it until the returned
    /// [`Boost`] is dropped (after the reply).
    pub(crate) fn begin(self: &Arc<Self>, token: u64, caller: SchedAttr) -> Boost {
        let mut s = self.state.lock();
        s.pending.retain(|(t, _)| *t != token);
        let id = s.next;
        s.next += 1;
        let first = s.held.is_empty();
        s.held.push((id, caller));
        self.apply(&mut s);
        drop(s);
        if first {
            if let Some(w) = self.watcher.as_ref().and_then(Weak::upgrade) {
                w.arm(token);
            }
        }
        Boost {
            boosts: self.clone(),
            id,
            answered: AtomicBool::new(false),
        }
    }

    /// The watcher saw a message of connection `token` arrive from a
    /// caller scheduled `caller`: while the thread holds a request, it is
    /// raised to it if that is higher (never lowered).
    fn arrival(&self, token: u64, caller: SchedAttr) {
        let mut s = self.state.lock();
        if s.held.is_empty() || rank(&caller) <= rank(&s.applied) {
            return;
        }
        s.pending.retain(|(t, _)| *t != token);
        s.pending.push((token, caller));
        self.apply(&mut s);
    }

    /// The held request `id` is about to be answered: if it is the only
    /// one held, the watcher is disarmed now, before the reply lets its
    /// caller (on another CPU, maybe) send the next request, which must
    /// not wake the watcher.
    fn replying(&self, id: u64) {
        let s = self.state.lock();
        if s.held.len() == 1 && s.held[0].0 == id {
            if let Some(w) = self.watcher.as_ref().and_then(Weak::upgrade) {
                w.disarm();
            }
        }
    }

    /// The held request `id` ended, `answered` or not. With none left the
    /// watcher is disarmed *before* the thread is lowered: lowered, it may
    /// be preempted by the caller it just answered, whose next request
    /// must not wake the watcher.
    ///
    /// The last request answered, with no arrival pending, the thread
    /// *lingers*: it stays at that caller's priority until it takes its
    /// next message, which sets it to that message's caller's, or back to
    /// its own (as on QNX, where a server keeps its client's priority
    /// until its next `MsgReceive`: a thread waiting for requests does not
    /// run, so its priority does not matter). A caller calling again then
    /// costs no `sched_setattr` at all. A request ended unanswered (its
    /// caller died) sets the thread back at once.
    fn end(&self, id: u64, answered: bool) {
        let mut s = self.state.lock();
        s.held.retain(|(i, _)| *i != id);
        if s.held.is_empty() {
            if let Some(w) = self.watcher.as_ref().and_then(Weak::upgrade) {
                w.disarm();
            }
            // Below its own, it would wait there, and wake for a higher
            // caller's message too slowly to raise itself: set back now.
            if answered && s.pending.is_empty() && rank(&s.applied) >= rank(&s.own) {
                let above = rank(&s.applied) > rank(&s.own);
                drop(s);
                if above && oslayer::thread::gettid() == self.tid {
                    // Lowered, the thread would let the caller it just
                    // answered run at once where both share a CPU; at its
                    // caller's priority it offers it the CPU instead.
                    std::thread::yield_now();
                }
                return;
            }
        }
        self.apply(&mut s);
    }
}

/// One held request's boost: ends (the thread back at what its other
/// requests, or its own priority, say) when dropped.
pub(crate) struct Boost {
    boosts: Arc<Boosts>,
    id: u64,
    /// Its request was answered (the thread may linger at the caller's).
    answered: AtomicBool,
}

impl Boost {
    /// Its request is about to be answered (see [`Boosts::replying`]);
    /// the boost lasts until it is dropped, after the reply.
    pub(crate) fn replying(&self) {
        self.answered.store(true, Ordering::Relaxed);
        self.boosts.replying(self.id);
    }

    /// Its reply found the caller gone: the thread does not linger at
    /// its priority (see [`Boosts::end`]).
    pub(crate) fn undelivered(&self) {
        self.answered.store(false, Ordering::Relaxed);
    }
}

impl Drop for Boost {
    fn drop(&mut self) {
        self.boosts.end(self.id, *self.answered.get_mut());
    }
}

/// The process at the other end of a connection, as the kernel named it
/// when it connected: its pid, and a pidfd that names it and no other.
pub(crate) struct PeerProcess {
    pid: i32,
    pidfd: OwnedFd,
}

impl PeerProcess {
    /// The process that connected `session` (see the module doc), `None`
    /// when the kernel names none.
    pub(crate) fn of(session: BorrowedFd<'_>) -> Option<PeerProcess> {
        let pid = oslayer::socket::peer_cred(session).ok()?.pid;
        if pid <= 0 {
            // Outside our pid namespace: no /proc entry to check claims in.
            return None;
        }
        let pidfd = match oslayer::socket::peer_pidfd(session) {
            Ok(Some(fd)) => fd,
            // Before Linux 6.5: whoever holds that pid now (the race the
            // module doc tells).
            Ok(None) => oslayer::pidfd::open(u32::try_from(pid).ok()?).ok()?,
            Err(_) => return None,
        };
        Some(PeerProcess { pid, pidfd })
    }

    /// True until the process exits: until then `pid` is its.
    fn running(&self) -> bool {
        oslayer::pidfd::running(self.pidfd.as_fd())
    }
}

/// A handle on one thread that a reused thread id cannot pass.
enum Thread {
    /// A thread pidfd (Linux 6.9).
    Pidfd(OwnedFd),
    /// Its `/proc/<pid>/task/<tid>` directory (older kernels).
    Dir(OwnedFd),
}

impl Thread {
    /// A handle on the thread that has id `tid` now, in process `pid`
    /// where the kernel has no thread pidfds.
    fn open(pid: i32, tid: i32) -> Option<Thread> {
        match oslayer::pidfd::open_thread(tid) {
            Ok(fd) => Some(Thread::Pidfd(fd)),
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
                prio::task_dir(pid, tid).ok().map(Thread::Dir)
            }
            Err(_) => None,
        }
    }

    /// True until the thread exits (a pidfd) or is reaped (a directory):
    /// until then its id is its.
    fn running(&self) -> bool {
        match self {
            Thread::Pidfd(fd) => oslayer::pidfd::running(fd.as_fd()),
            Thread::Dir(dir) => prio::task_listed(dir.as_fd()),
        }
    }
}

/// A claimed thread is gone: its id may be another's now.
#[derive(Debug)]
struct Gone;

/// A thread a client named as its caller, verified.
struct Claim {
    tid: i32,
    thread: Thread,
}

impl Claim {
    /// Thread `tid`, claimed by the client of `process`, if it is one of
    /// that process's threads. In this order: a handle on the thread with
    /// that id now, the kernel's list of the process's threads, then both
    /// still running, so that while the list was read the pid was the
    /// process's and the id the thread's.
    fn verify(process: &PeerProcess, tid: i32) -> Option<Claim> {
        if tid <= 0 {
            return None;
        }
        let thread = Thread::open(process.pid, tid)?;
        let ours = prio::thread_of(process.pid, tid) && process.running() && thread.running();
        ours.then_some(Claim { tid, thread })
    }

    /// The claimed thread's scheduling now, if it is one that can be
    /// lent: read by its id, then believed only if the thread is still
    /// running (a reused id reads another's); [`Gone`] when it is not.
    fn attr(&self) -> std::result::Result<Option<SchedAttr>, Gone> {
        let read = prio::attr(self.tid);
        if !self.thread.running() {
            return Err(Gone);
        }
        Ok(read.ok().filter(|a| a.rank().is_some()))
    }
}

/// The thread a `TID` payload claims (unchecked).
fn claimed_tid(payload: &[u8]) -> Option<i32> {
    <[u8; 4]>::try_from(payload).ok().map(i32::from_le_bytes)
}

/// Where the single worker's boosts are, when there is one.
type SingleSlot = Arc<Mutex<Option<Arc<Boosts>>>>;

/// Reads the thread a client named last in memory it shares with the
/// server (shm: a word of its slot), for the watcher: a claim like any
/// other, checked before it is believed.
pub(crate) type Front = Box<dyn Fn() -> i32 + Send + Sync>;

/// A connection's caller as far as the kernel vouches for it.
pub(crate) struct Peer {
    /// The process the kernel named when it connected.
    process: PeerProcess,
    /// Its calling thread, last claimed and verified.
    claim: Mutex<Option<Arc<Claim>>>,
    /// The last thread named in shared memory that failed its check
    /// (see [`Peer::named`]): not checked again for each request.
    refused: AtomicI32,
    /// Where the client names its thread in shared memory, when it does
    /// (else the watcher looks in front of the wire's queue).
    front: Option<Front>,
    /// The connection's wire, for the watcher (a duplicate).
    wire: OwnedFd,
    /// The connection's token, under which the watcher raises.
    token: u64,
    /// The single worker's boosts, for dropping a raise of a failed claim.
    single: SingleSlot,
}

impl Peer {
    /// The caller's scheduling now, for a request of this connection:
    /// `None` without a claim, or when the claimed thread is gone (the
    /// claim is then forgotten).
    pub(crate) fn caller(&self) -> Option<SchedAttr> {
        let claim = self.claim.lock().clone()?;
        match claim.attr() {
            Ok(a) => a,
            Err(Gone) => {
                self.forget(&claim);
                None
            }
        }
    }

    /// The client's shared memory names thread `tid` as the caller of
    /// the request just taken (shm): checked as a `TID` message is when it
    /// is not the thread already verified, nor the one that last failed
    /// (a client naming a stranger at each request makes the server
    /// check it once).
    pub(crate) fn named(&self, tid: i32) {
        if self.claim.lock().as_ref().is_some_and(|c| c.tid == tid)
            || self.refused.load(Ordering::Relaxed) == tid
        {
            return;
        }
        self.claimed(&tid.to_le_bytes());
        if self.claim.lock().is_none() {
            self.refused.store(tid, Ordering::Relaxed);
        }
    }

    /// The client says its calling thread is `payload` (a `TID`
    /// message): kept when it is one of the peer's threads, else no
    /// thread is known (and a raise for this connection is dropped).
    pub(crate) fn claimed(&self, payload: &[u8]) {
        let claim = claimed_tid(payload).and_then(|tid| Claim::verify(&self.process, tid));
        let failed = claim.is_none();
        *self.claim.lock() = claim.map(Arc::new);
        if failed {
            self.drop_raise();
        }
    }

    /// `claim` failed: forgotten (unless a newer one replaced it), and a
    /// raise of the worker for this connection dropped.
    fn forget(&self, claim: &Arc<Claim>) {
        {
            let mut now = self.claim.lock();
            if now.as_ref().is_some_and(|c| Arc::ptr_eq(c, claim)) {
                *now = None;
            }
        }
        self.drop_raise();
    }

    /// Ends a boost on arrival the watcher gave for this connection.
    fn drop_raise(&self) {
        let single = self.single.lock().clone();
        if let Some(b) = single {
            b.taken(self.token);
        }
    }

    /// The thread a `TID` message in front of the connection's queue
    /// claims, if one is (looked at, not taken; never on a pipe, which
    /// cannot be looked at), or the one its shared memory names.
    fn peek_claim(&self) -> Option<i32> {
        if let Some(front) = &self.front {
            return Some(front());
        }
        let mut first = [0u8; HEAD + 4];
        match oslayer::socket::peek_now(self.wire.as_fd(), &mut first) {
            Ok(n) if n == first.len() => {
                let (code, len) = parse_head(&[
                    first[0], first[1], first[2], first[3], first[4], first[5], first[6], first[7],
                ]);
                (code == TID && len == 4)
                    .then(|| claimed_tid(&first[HEAD..]))
                    .flatten()
            }
            _ => None,
        }
    }

    /// The watcher's caller for the message in front of the connection:
    /// that of a `TID` claim there, checked now (when it fails, a raise
    /// for this connection is dropped), else that of the last verified
    /// one (see [`Peer::caller`]).
    fn arriving(&self) -> Option<SchedAttr> {
        let Some(tid) = self.peek_claim() else {
            return self.caller();
        };
        match Claim::verify(&self.process, tid).map(|c| c.attr()) {
            Some(Ok(a)) => a,
            None | Some(Err(Gone)) => {
                self.drop_raise();
                None
            }
        }
    }
}

/// Whether the single worker's requests wake the watcher.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Arming {
    /// The worker holds no request.
    Off,
    /// It holds one, and an arrival wakes the watcher.
    Armed,
    /// It holds one, and is the only connection's with a caller: no
    /// arrival can need a raise until another joins.
    Alone,
}

/// The token the watcher's stop eventfd is registered under.
const STOP: u64 = u64::MAX;
/// The token the connections' set is registered under in the watcher's.
const CONNS: u64 = u64::MAX - 1;

/// What a channel with inheritance shares between its workers and its
/// watcher.
pub(crate) struct Inherit {
    peers: Mutex<HashMap<u64, Arc<Peer>>>,
    /// The single worker's boosts (none in a pool, or before it receives).
    single: SingleSlot,
    /// What the watcher waits on: `stop`, and `conns` while armed.
    set: Epoll,
    /// Every connection's wire, edge-triggered: an arrival is an event.
    conns: Epoll,
    /// Whether the watcher is armed (`conns` in `set` for one wake-up)
    /// while the worker holds a request. Taken to arm, disarm and re-arm.
    armed: Mutex<Arming>,
    stop: OwnedFd,
    stopping: AtomicBool,
}

impl Inherit {
    /// A new connection `token` of `process` (if the kernel named one),
    /// on `wire` (what becomes readable when its client sends, or rings):
    /// watched for arrivals, their claims read from `front` where the
    /// client names its thread in shared memory. `None` when it has no
    /// process to inherit from.
    pub(crate) fn join(
        &self,
        token: u64,
        process: Option<PeerProcess>,
        wire: &impl AsFd,
        front: Option<Front>,
    ) -> Option<Arc<Peer>> {
        let wire = wire.as_fd().try_clone_to_owned().ok()?;
        let peer = Arc::new(Peer {
            process: process?,
            claim: Mutex::new(None),
            refused: AtomicI32::new(0),
            front,
            wire,
            token,
            single: self.single.clone(),
        });
        let readable = Interest::READABLE.edge();
        self.conns.add(peer.wire.as_fd(), token, readable).ok()?;
        self.peers.lock().insert(token, peer.clone());
        self.joined();
        Some(peer)
    }

    /// Connection `token` is gone: the single worker, holding nothing and
    /// lingering at a caller's priority (see `Boosts::end`), is set back
    /// to its own.
    pub(crate) fn leave(&self, token: u64) {
        if let Some(p) = self.peers.lock().remove(&token) {
            self.conns.delete(p.wire.as_fd());
        }
        if let Some(b) = &*self.single.lock() {
            b.taken(token);
        }
    }

    /// The boosts of the calling worker thread, made on its first
    /// receive (a channel moved to another thread makes new ones); the
    /// single worker's are the watcher's to raise.
    pub(crate) fn boosts_here(self: &Arc<Self>, mine: &mut Option<Arc<Boosts>>, pool: bool) {
        let tid = oslayer::thread::gettid();
        if mine.as_ref().is_some_and(|b| b.tid() == tid) {
            return;
        }
        let watcher = (!pool).then(|| Arc::downgrade(self));
        *mine = Boosts::for_this_thread(watcher).ok();
        *self.single.lock() = match pool {
            true => None,
            false => mine.clone(),
        };
    }

    /// The single worker took a request (of connection `current`) and
    /// holds none other: from now on an arrival wakes the watcher. The
    /// arrivals since it was last armed are looked at here first, as the
    /// watcher would (a higher caller's message that came just before the
    /// request taken may be waiting), all but `current`'s (its message is
    /// the one just taken). Nothing wakes the watcher while the worker
    /// holds no request: an arrival then goes to the worker, which raises
    /// itself when it takes it. Nor while `current` is the only
    /// connection with a caller to inherit from: nobody else can send (a
    /// connection that joins meanwhile arms it, see [`Inherit::join`]),
    /// and the request costs no `epoll` call.
    fn arm(&self, current: u64) {
        let mut armed = self.armed.lock();
        if *armed != Arming::Off {
            return;
        }
        if self.peers.lock().len() <= 1 {
            *armed = Arming::Alone;
            return;
        }
        self.arm_now(armed, Some(current));
    }

    /// Arms the watcher (held `armed`), after looking at the arrivals
    /// since the last arming, all but `current`'s.
    fn arm_now(&self, mut armed: parking_lot::MutexGuard<'_, Arming>, current: Option<u64>) {
        let stale = self.drain();
        *armed = Arming::Armed;
        let interest = Interest::READABLE.oneshot();
        let _ = self.set.modify(self.conns.as_fd(), CONNS, interest);
        drop(armed);
        for t in stale.into_iter().filter(|t| Some(*t) != current) {
            self.arrived(t);
        }
    }

    /// A connection joined: if the worker holds a request unwatched
    /// because it was alone, the watcher is armed now. The request held
    /// is not looked at: its caller's message is taken, and the arrival
    /// it may have left is of a caller the worker already runs at.
    fn joined(&self) {
        let armed = self.armed.lock();
        if *armed == Arming::Alone {
            self.arm_now(armed, None);
        }
    }

    /// The single worker holds no request: arrivals no longer wake the
    /// watcher.
    fn disarm(&self) {
        let mut armed = self.armed.lock();
        let was = std::mem::replace(&mut *armed, Arming::Off);
        if was == Arming::Armed {
            let _ = self
                .set
                .modify(self.conns.as_fd(), CONNS, Interest::NOTHING);
        }
    }

    /// After the watcher's wake-up: armed again while the worker still
    /// holds a request.
    fn rearm(&self) {
        let armed = self.armed.lock();
        if *armed == Arming::Armed {
            let interest = Interest::READABLE.oneshot();
            let _ = self.set.modify(self.conns.as_fd(), CONNS, interest);
        }
    }

    /// The connections that had an arrival since the last drain, without
    /// waiting.
    fn drain(&self) -> Vec<u64> {
        let mut events: Vec<Ready> = Vec::with_capacity(64);
        let mut tokens = Vec::new();
        while let Ok(n) = self.conns.wait(&mut events, Some(Duration::ZERO)) {
            tokens.extend(events.drain(..).filter(|e| e.readable).map(|e| e.token));
            if n < events.capacity() {
                break;
            }
        }
        tokens
    }

    /// One arrival on connection `token`, as the watcher handles it.
    fn arrived(&self, token: u64) {
        let Some(b) = self.single.lock().clone() else {
            return;
        };
        let Some(peer) = self.peers.lock().get(&token).cloned() else {
            return;
        };
        if let Some(a) = peer.arriving() {
            b.arrival(token, a);
        }
    }
}

/// A channel's inheritance: what it shares, and its watcher thread,
/// stopped and joined on drop.
pub(crate) struct Watched {
    pub(crate) inherit: Arc<Inherit>,
    thread: Option<JoinHandle<()>>,
}

impl Watched {
    /// Starts the watcher of a new channel.
    pub(crate) fn start() -> Result<Watched> {
        let set = Epoll::new().map_err(|e| Error::io("epoll_create", e))?;
        let conns = Epoll::new().map_err(|e| Error::io("epoll_create", e))?;
        let stop = oslayer::eventfd::new().map_err(|e| Error::io("eventfd", e))?;
        set.add(stop.as_fd(), STOP, Interest::READABLE)
            .map_err(|e| Error::io("epoll_ctl", e))?;
        set.add(conns.as_fd(), CONNS, Interest::NOTHING)
            .map_err(|e| Error::io("epoll_ctl", e))?;
        let inherit = Arc::new(Inherit {
            peers: Mutex::new(HashMap::new()),
            single: Arc::new(Mutex::new(None)),
            set,
            conns,
            armed: Mutex::new(Arming::Off),
            stop,
            stopping: AtomicBool::new(false),
        });
        let theirs = inherit.clone();
        let thread = std::thread::Builder::new()
            .name("msgpass-prio".into())
            .spawn(move || watch(&theirs))
            .map_err(|e| Error::io("spawn the priority watcher", e))?;
        Ok(Watched {
            inherit,
            thread: Some(thread),
        })
    }
}

impl Drop for Watched {
    fn drop(&mut self) {
        self.inherit.stopping.store(true, Ordering::Relaxed);
        let _ = oslayer::eventfd::write(self.inherit.stop.as_fd(), 1);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The watcher's loop, at SCHED_FIFO 99 (or the highest this process
/// may use).
fn watch(inherit: &Inherit) {
    let _ = prio::set_attr(0, SchedAttr::fifo(prio::max_rt_priority().max(1)));
    let mut events: Vec<Ready> = Vec::with_capacity(64);
    while !inherit.stopping.load(Ordering::Relaxed) {
        if inherit
            .set
            .wait(&mut events, Some(Duration::from_secs(1)))
            .is_err()
        {
            return;
        }
        if events.drain(..).any(|ev| ev.token == CONNS) {
            for t in inherit.drain() {
                inherit.arrived(t);
            }
            inherit.rearm();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// This process, as a peer.
    fn this_process() -> PeerProcess {
        PeerProcess {
            pid: oslayer::process::pid().as_raw_nonzero().get(),
            pidfd: oslayer::pidfd::pidfd_self().expect("pidfd"),
        }
    }

    /// A thread of this process that lives until the sender is dropped.
    fn a_thread() -> (i32, mpsc::Sender<()>, JoinHandle<()>) {
        let (tx, rx) = mpsc::channel();
        let (live, until) = mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            tx.send(oslayer::thread::gettid()).expect("tid");
            let _ = until.recv();
        });
        (rx.recv().expect("tid"), live, h)
    }

    /// Waits (5 s at most) until `claim` fails, as it must once its
    /// thread is gone.
    fn fails_soon(claim: &Claim) -> bool {
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while std::time::Instant::now() < end {
            if claim.attr().is_err() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_claim_holds_while_its_thread_runs_and_fails_once_it_exits() {
        let me = this_process();
        let (tid, live, h) = a_thread();
        let claim = Claim::verify(&me, tid).expect("a thread of this process");
        assert!(
            matches!(claim.thread, Thread::Pidfd(_)),
            "Linux 6.9 or later"
        );
        assert_eq!(claim.attr().expect("running"), prio::attr(tid).ok());
        // The handle of kernels without thread pidfds holds the same way.
        let dir = Claim {
            tid,
            thread: Thread::Dir(prio::task_dir(me.pid, tid).expect("task dir")),
        };
        assert!(dir.attr().is_ok());
        drop(live);
        h.join().expect("thread");
        assert!(fails_soon(&claim), "the thread pidfd saw it exit");
        assert!(fails_soon(&dir), "the task directory saw it go");
    }

    #[test]
    fn a_claim_is_refused_for_another_process_or_a_process_that_exited() {
        let me = this_process();
        assert!(Claim::verify(&me, 1).is_none(), "init is not ours");
        assert!(Claim::verify(&me, 0).is_none() && Claim::verify(&me, -5).is_none());
        // A peer that has exited, its pid since given to this process:
        // this process's threads are not its.
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let pidfd = oslayer::pidfd::open(child.id()).expect("pidfd");
        child.wait().expect("wait");
        let gone = PeerProcess { pid: me.pid, pidfd };
        assert!(Claim::verify(&gone, oslayer::thread::gettid()).is_none());
        assert!(Claim::verify(&me, oslayer::thread::gettid()).is_some());
    }

    #[test]
    fn a_failed_claim_is_forgotten_and_the_next_true_one_believed() {
        let inherit = Watched::start().expect("watcher");
        let (a, b) = oslayer::socket::socketpair(oslayer::socket::SocketType::SEQPACKET)
            .expect("socketpair");
        let peer = inherit
            .inherit
            .join(7, PeerProcess::of(a.as_fd()), &a, None)
            .expect("a peer");
        let (tid, live, h) = a_thread();
        peer.claimed(&tid.to_le_bytes());
        assert_eq!(peer.caller(), prio::attr(tid).ok());
        drop(live);
        h.join().expect("thread");
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while peer.caller().is_some() && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(peer.claim.lock().is_none(), "forgotten");
        let me = oslayer::thread::gettid();
        peer.claimed(&me.to_le_bytes());
        assert_eq!(peer.caller(), prio::attr(me).ok());
        peer.claimed(&1i32.to_le_bytes());
        assert!(peer.caller().is_none(), "a false claim replaces it");
        inherit.inherit.leave(7);
        drop(b);
    }

    /// Whether this process may raise a thread (CAP_SYS_NICE); a test
    /// that needs it says it skips (a failure under CI).
    fn may_raise() -> bool {
        if prio::has_cap_sys_nice() {
            return true;
        }
        let why = "needs CAP_SYS_NICE (run as root) to raise a thread";
        assert!(std::env::var_os("CI").is_none(), "CI is set: {why}");
        println!("skipped: {why}");
        false
    }

    /// A FIFO 10 thread of this process, alive until the sender drops.
    fn a_fifo_thread() -> (i32, mpsc::Sender<()>, JoinHandle<()>) {
        let (tx, rx) = mpsc::channel();
        let (live, until) = mpsc::channel::<()>();
        let h = std::thread::spawn(move || {
            prio::set_attr(0, SchedAttr::fifo(10)).expect("FIFO 10");
            tx.send(oslayer::thread::gettid()).expect("tid");
            let _ = until.recv();
        });
        (rx.recv().expect("tid"), live, h)
    }

    #[test]
    fn a_lone_connection_arms_nothing_until_another_joins() {
        if !may_raise() {
            return;
        }
        let watched = Watched::start().expect("watcher");
        let inherit = &watched.inherit;
        let pair = || {
            oslayer::socket::socketpair(oslayer::socket::SocketType::SEQPACKET).expect("socketpair")
        };
        let (a, _a) = pair();
        inherit
            .join(7, PeerProcess::of(a.as_fd()), &a, None)
            .expect("a peer");
        let mut mine = None;
        inherit.boosts_here(&mut mine, false);
        let boosts = mine.expect("boosts");
        let own = prio::attr(0).expect("attr");
        let held = boosts.begin(7, own);
        assert_eq!(*inherit.armed.lock(), Arming::Alone, "one connection");
        // A second connection joins while the request is held: armed, and
        // its higher caller's message raises this thread.
        let (b, b_client) = pair();
        inherit
            .join(8, PeerProcess::of(b.as_fd()), &b, None)
            .expect("a peer");
        assert_eq!(*inherit.armed.lock(), Arming::Armed, "a second joined");
        let (tid, live, h) = a_fifo_thread();
        let mut claim = crate::transport::wire::framing::head(TID, 4).to_vec();
        claim.extend_from_slice(&tid.to_le_bytes());
        oslayer::socket::send_bytes(b_client.as_fd(), &claim).expect("claim");
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while prio::attr(0).expect("attr") == own && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(prio::attr(0).expect("attr"), SchedAttr::fifo(10), "raised");
        drop(held);
        assert_eq!(*inherit.armed.lock(), Arming::Off, "nothing held");
        boosts.taken(8);
        assert_eq!(prio::attr(0).expect("attr"), own, "its own again");
        drop(live);
        h.join().expect("thread");
        inherit.leave(7);
        inherit.leave(8);
    }

    #[test]
    fn a_failed_claim_drops_the_raise_it_gave() {
        if !may_raise() {
            return;
        }
        let inherit = Watched::start().expect("watcher");
        let (a, _b) = oslayer::socket::socketpair(oslayer::socket::SocketType::SEQPACKET)
            .expect("socketpair");
        let peer = inherit
            .inherit
            .join(7, PeerProcess::of(a.as_fd()), &a, None)
            .expect("a peer");
        let mut mine = None;
        inherit.inherit.boosts_here(&mut mine, false);
        let boosts = mine.expect("boosts");
        let own = prio::attr(0).expect("attr");
        let held = boosts.begin(1, own);
        let (tid, live, h) = a_thread();
        peer.claimed(&tid.to_le_bytes());
        // The watcher raised this thread for an arrival of that claim.
        boosts.arrival(7, SchedAttr::fifo(10));
        assert_eq!(prio::attr(0).expect("attr"), SchedAttr::fifo(10));
        drop(live);
        h.join().expect("thread");
        let end = std::time::Instant::now() + Duration::from_secs(5);
        while peer.caller().is_some() && std::time::Instant::now() < end {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            prio::attr(0).expect("attr"),
            own,
            "the raise went with the claim"
        );
        // Likewise when a new claim fails.
        boosts.arrival(7, SchedAttr::fifo(10));
        peer.claimed(&1i32.to_le_bytes());
        assert_eq!(prio::attr(0).expect("attr"), own);
        drop(held);
        inherit.inherit.leave(7);
    }
}
