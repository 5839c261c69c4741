//! Priority inheritance through messages ([`Options::inherit_priority`]):
//! the thread that serves a request runs at the calling thread's policy
//! and priority until it replies, as on QNX.
//!
//! **Who calls.** The calling *process* is the one the kernel names: the
//! `SO_PEERCRED` of the client's rendezvous session (a Unix seqpacket
//! socket it connected), read when the connection is accepted. The calling
//! *thread* is claimed by the client library in a one-way control message
//! (`TID`, sent only when the calling thread differs from the last one
//! named on that connection) and believed only if the kernel lists that
//! thread as one of the peer process's (`/proc/<pid>/task/<tid>`); a claim
//! it does not is forgotten, and the connection's requests get no boost
//! until a true one comes. The caller's policy and priority are then read
//! from the kernel (`sched_getattr` on that thread) at each request, never
//! taken from a message.
//!
//! **Which transports.** `uds`, `uds-stream` and `uds-dgram`: a Unix
//! socket whose peer the kernel names, and whose next message the watcher
//! can look at without taking it (`MSG_PEEK`). Refused elsewhere with
//! [`Error::NoInheritance`]: tcp and udp have no peer credentials (the
//! peer may be on another host, and a datagram's sender is not tied to the
//! session's process); pipe, fifo, eventfd, posix-mq and io-uring could
//! name the process through their session, but a message waiting there
//! cannot be looked at before it is taken, so boost on arrival would not
//! know who is waiting (not done); shm, sysv-msg, signal and fuse have
//! servers of their own, which do not carry it yet (not done).
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
//! **Boost on arrival.** A single-threaded server busy with a low
//! caller's request must run at a higher caller's priority as soon as that
//! caller sends, or a medium-priority task keeps both waiting. A watcher
//! thread of the channel, at SCHED_FIFO 99, waits on an epoll set of its
//! own holding every connection's wire edge-triggered; on an arrival while
//! the worker holds a request it peeks at the message (a `TID` claim in
//! front of it, checked as above, else the connection's last verified
//! thread), reads that thread's priority, and if it is above the one the
//! worker runs at, raises the worker (`sched_setattr` on its thread id)
//! until that connection's message is taken: the worker therefore goes
//! on at that priority after its reply, to receive it. It never lowers.
//! Its cost is one wake-up of the watcher per message (see `msgbench rtos
//! MSG-P-PRI`). In a pool the watcher raises nothing (a free thread takes
//! the arrival at its caller's priority; not done: raising a busy pool).
//!
//! **Rights.** Raising a thread needs CAP_SYS_NICE or an RLIMIT_RTPRIO
//! that allows the priority; the option is refused at channel creation
//! when the process has neither. With an RLIMIT_RTPRIO below a caller's
//! priority the boost fails, and is counted (see `Boosts::failures`).

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use oslayer::epoll::{Epoll, Interest, Ready};
use oslayer::prio::{self, SchedAttr};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::transport::api::Options;
use crate::transport::wire::{parse_head, HEAD, TID};

/// The transports that carry priority inheritance.
pub(crate) const SUPPORTED: &[&str] = &["uds", "uds-stream", "uds-dgram"];

/// Why `transport` cannot carry priority inheritance, if it cannot.
fn refusal(transport: &str) -> Option<&'static str> {
    match transport {
        t if SUPPORTED.contains(&t) => None,
        "tcp" | "udp" => Some("the kernel names no peer process on an IP socket (it may be on another host), so the calling thread cannot be checked"),
        "pipe" | "fifo" | "eventfd" | "posix-mq" | "io-uring" => Some("a waiting message cannot be looked at before it is taken, so a caller's boost on arrival is not done here yet"),
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

/// The scheduling the kernel has for thread `tid` now, if it is one that
/// can be lent.
fn caller_attr(tid: i32) -> Option<SchedAttr> {
    match tid {
        0 => None,
        t => prio::attr(t).ok().filter(|a| a.rank().is_some()),
    }
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
}

impl Boosts {
    /// The calling thread's, its own scheduling read from the kernel now.
    pub(crate) fn for_this_thread() -> io::Result<Arc<Boosts>> {
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
    /// is no longer pending.
    pub(crate) fn taken(&self, token: u64) {
        let mut s = self.state.lock();
        if s.pending.iter().any(|(t, _)| *t == token) {
            s.pending.retain(|(t, _)| *t != token);
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
        s.held.push((id, caller));
        self.apply(&mut s);
        Boost {
            boosts: self.clone(),
            id,
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

    fn end(&self, id: u64) {
        let mut s = self.state.lock();
        s.held.retain(|(i, _)| *i != id);
        self.apply(&mut s);
    }
}

/// One held request's boost: ends (the thread back at what its other
/// requests, or its own priority, say) when dropped.
pub(crate) struct Boost {
    boosts: Arc<Boosts>,
    id: u64,
}

impl Drop for Boost {
    fn drop(&mut self) {
        self.boosts.end(self.id);
    }
}

/// A connection's caller as far as the kernel vouches for it.
pub(crate) struct Peer {
    /// The process the kernel named when it connected.
    pid: i32,
    /// Its calling thread, last claimed and verified (0: none).
    tid: AtomicI32,
    /// The connection's wire, for the watcher (a duplicate).
    wire: OwnedFd,
}

impl Peer {
    /// The caller's scheduling now, for a request of this connection.
    pub(crate) fn caller(&self) -> Option<SchedAttr> {
        caller_attr(self.tid.load(Ordering::Relaxed))
    }

    /// The client says its calling thread is `payload` (a `TID`
    /// message): kept when the kernel lists it in the peer's process,
    /// else no thread is known.
    pub(crate) fn claimed(&self, payload: &[u8]) {
        self.tid
            .store(verified(self.pid, payload), Ordering::Relaxed);
    }
}

/// The thread a `TID` payload claims if it is one of process `pid`'s,
/// else 0.
fn verified(pid: i32, payload: &[u8]) -> i32 {
    let Ok(b) = <[u8; 4]>::try_from(payload) else {
        return 0;
    };
    let tid = i32::from_le_bytes(b);
    match prio::thread_of(pid, tid) {
        true => tid,
        false => 0,
    }
}

/// The token the watcher's stop eventfd is registered under.
const STOP: u64 = u64::MAX;

/// What a channel with inheritance shares between its workers and its
/// watcher.
pub(crate) struct Inherit {
    peers: Mutex<HashMap<u64, Arc<Peer>>>,
    /// The single worker's boosts (none in a pool, or before it receives).
    single: Mutex<Option<Arc<Boosts>>>,
    set: Epoll,
    stop: OwnedFd,
    stopping: AtomicBool,
}

impl Inherit {
    /// A new connection `token` of process `pid` (if the kernel named
    /// one), on `wire`: watched for arrivals. `None` when it has no
    /// process to inherit from.
    pub(crate) fn join(&self, token: u64, pid: Option<i32>, wire: &impl AsFd) -> Option<Arc<Peer>> {
        let wire = wire.as_fd().try_clone_to_owned().ok()?;
        let peer = Arc::new(Peer {
            pid: pid?,
            tid: AtomicI32::new(0),
            wire,
        });
        let readable = Interest::READABLE.edge();
        self.set.add(peer.wire.as_fd(), token, readable).ok()?;
        self.peers.lock().insert(token, peer.clone());
        Some(peer)
    }

    /// Connection `token` is gone.
    pub(crate) fn leave(&self, token: u64) {
        if let Some(p) = self.peers.lock().remove(&token) {
            self.set.delete(p.wire.as_fd());
        }
        if let Some(b) = &*self.single.lock() {
            b.taken(token);
        }
    }

    /// The boosts of the calling worker thread, made on its first
    /// receive (a channel moved to another thread makes new ones); the
    /// single worker's are the watcher's to raise.
    pub(crate) fn boosts_here(&self, mine: &mut Option<Arc<Boosts>>, pool: bool) {
        let tid = oslayer::thread::gettid();
        if mine.as_ref().is_some_and(|b| b.tid() == tid) {
            return;
        }
        *mine = Boosts::for_this_thread().ok();
        *self.single.lock() = match pool {
            true => None,
            false => mine.clone(),
        };
    }

    /// One arrival on connection `token`, as the watcher handles it.
    fn arrived(&self, token: u64) {
        let Some(b) = self.single.lock().clone() else {
            return;
        };
        let Some(peer) = self.peers.lock().get(&token).cloned() else {
            return;
        };
        let mut first = [0u8; HEAD + 4];
        let claimed = match oslayer::socket::peek_now(peer.wire.as_fd(), &mut first) {
            Ok(n) if n == first.len() => {
                let (code, len) = parse_head(&[
                    first[0], first[1], first[2], first[3], first[4], first[5], first[6], first[7],
                ]);
                (code == TID && len == 4).then(|| verified(peer.pid, &first[HEAD..]))
            }
            _ => None,
        };
        let tid = claimed.unwrap_or_else(|| peer.tid.load(Ordering::Relaxed));
        if let Some(a) = caller_attr(tid) {
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
        let stop = oslayer::eventfd::new().map_err(|e| Error::io("eventfd", e))?;
        set.add(stop.as_fd(), STOP, Interest::READABLE)
            .map_err(|e| Error::io("epoll_ctl", e))?;
        let inherit = Arc::new(Inherit {
            peers: Mutex::new(HashMap::new()),
            single: Mutex::new(None),
            set,
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
        for ev in events.drain(..) {
            if ev.token != STOP && ev.readable {
                inherit.arrived(ev.token);
            }
        }
    }
}
