//! A process-wide thread that ends eventfd waits which have lasted a tick.
//!
//! An eventfd read has no timeout, and `poll` before every read costs a
//! system call per message (about 40% of a same-CPU eventfd round trip). So
//! a waiting eventfd wire blocks in a plain `read`, and this thread, every
//! tick, adds [`POKE`] to the eventfd of each wire that has been waiting
//! since its previous look: the read returns, the counter says no message
//! came, and the wire reports a time-out, as a timed receive would. The
//! caller then does what a tick is for (look for new clients, dead peers,
//! the stop flag) and waits again. A wait ends within one to two ticks.
//!
//! A pipe has no timed read either, and a `poll` before each read made a
//! same-CPU pipe round trip 1.2-1.3x the bare floor's. So a waiting pipe
//! wire also blocks in a plain `read`, and this thread ends the wait by
//! writing a one-byte packet into the pipe, through a write end it opens
//! for that poke only (so the client's end of file still shows when the
//! client dies). The client writes its messages in packets of two bytes
//! or more (`O_DIRECT`, see `wire.rs`), so a poke never lands inside a
//! message and is told apart by its size.
//!
//! A server's eventfd *write* can block too: a client that adds nearly
//! 2^64 to the counter it reads makes the server's next write wait for a
//! read that never comes (an eventfd write blocks while the counter would
//! overflow; `O_NONBLOCK` cannot help, since the flag lives in the open
//! file description the client shares and can clear, and the kernel
//! ignores `RWF_NOWAIT` on eventfd writes). So a server wire also
//! registers its writes: once one has lasted two ticks, this thread sends
//! the writing thread [`interrupt_signal`] (`SIGRTMIN+3`, made an
//! *interrupter*: a handler that does nothing, without `SA_RESTART`), the
//! write fails with `EINTR`, and the wire, seeing the target fired, drops
//! the client. Where the signal already has another disposition the
//! writes go unguarded.
//!
//! Cost per message: two plain stores to the wire's wait word. Cost while
//! idle: one thread, woken once a tick while anything is registered (it
//! parks when nothing is). The thread belongs to the process that started
//! it: a child made by `fork` starts its own on first use.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::Thread;
use std::time::{Duration, Instant};

/// What a poke adds to an eventfd counter: a message adds 1, so the low 32
/// bits count messages and the high bits pokes.
pub(crate) const POKE: u64 = 1 << 32;

/// How a wait is ended.
enum Poke {
    /// Add [`POKE`] to this eventfd (a duplicate of the wire's, so it
    /// outlives no one's descriptor).
    Eventfd(OwnedFd),
    /// Write a one-byte packet into the pipe whose read end this is (a
    /// duplicate of the wire's).
    Pipe(OwnedFd),
    /// Interrupt the write of the thread in the wait ([`Target::tid`])
    /// with [`interrupt_signal`].
    Interrupt,
}

/// The signal that ends a server's write which lasted a tick
/// (`SIGRTMIN+3`, an interrupter: see the module documentation).
pub(crate) fn interrupt_signal() -> i32 {
    oslayer::signal::rt(3)
}

impl Poke {
    fn poke(&self) -> io::Result<()> {
        match self {
            Poke::Eventfd(fd) => oslayer::eventfd::write(fd.as_fd(), POKE),
            Poke::Pipe(rx) => {
                // Non-blocking: a full pipe has data, so no reader waits.
                let tx = oslayer::pipe::open_writer(rx.as_fd())?;
                oslayer::pipe::set_packet_mode(tx.as_fd())?;
                oslayer::fd::write_some(tx.as_fd(), &[0]).map(|_| ())
            }
            // Sent by `Target::fire`, which knows the thread.
            Poke::Interrupt => Ok(()),
        }
    }
}

/// A registered wait: how to end it, and its wait word.
pub(crate) struct Target {
    poke: Poke,
    /// Odd while the wire waits; incremented at the start and the end of
    /// every wait, by the wire's thread only.
    wait: AtomicU64,
    tick: Duration,
    /// [`Poke::Interrupt`]: the thread in the write, and whether the poker
    /// interrupted it.
    tid: AtomicI32,
    fired: AtomicBool,
}

impl crate::transport::wire::doorman::Wake for Target {
    /// A newcomer knocked while a wire of the server's single client waits
    /// in a read this target ends: the read ends now (a write's target is
    /// never a door's waker, and is left alone).
    fn wake(&self) {
        if !matches!(self.poke, Poke::Interrupt) {
            let _ = self.fire();
        }
    }
}

impl Target {
    /// Ends the wait this target is in.
    fn fire(&self) -> io::Result<()> {
        match self.poke {
            Poke::Interrupt => {
                self.fired.store(true, Ordering::Release);
                oslayer::signal::send_to_thread(
                    self.tid.load(Ordering::Relaxed),
                    interrupt_signal(),
                )
            }
            ref p => p.poke(),
        }
    }

    /// Marks the start of a write by this thread (a registered writer's;
    /// the thread id is cached, no system call).
    #[inline]
    pub(crate) fn begin_write(&self) {
        self.tid.store(oslayer::thread::gettid(), Ordering::Relaxed);
        self.begin();
    }

    /// Marks the end of a write; true when the poker interrupted it (it
    /// lasted a tick).
    #[inline]
    pub(crate) fn end_write(&self) -> bool {
        self.end();
        self.fired.load(Ordering::Acquire) && self.fired.swap(false, Ordering::AcqRel)
    }

    /// Marks the start of a wait (call before the blocking read).
    #[inline]
    pub(crate) fn begin(&self) {
        let w = self.wait.load(Ordering::Relaxed);
        self.wait.store(w | 1, Ordering::Relaxed);
        // The store must be visible before we sleep in the kernel; the
        // read(2) that follows is a full barrier in practice, but say so.
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// Marks the end of a wait.
    #[inline]
    pub(crate) fn end(&self) {
        let w = self.wait.load(Ordering::Relaxed);
        self.wait.store((w | 1) + 1, Ordering::Relaxed);
    }
}

/// The registry and its thread, for one process.
struct Poker {
    pid: u32,
    /// Each target, the wait word at the previous look, and since when it
    /// has had that value.
    targets: Vec<(Weak<Target>, u64, Instant)>,
    thread: Option<Thread>,
}

static POKER: Mutex<Option<Poker>> = Mutex::new(None);

/// Registers a wait on eventfd `fd` (duplicated) to be poked after `tick`;
/// the registration ends when the returned `Arc` is dropped.
pub(crate) fn register(fd: &OwnedFd, tick: Duration) -> io::Result<Arc<Target>> {
    enroll(Poke::Eventfd(fd.try_clone()?), tick)
}

/// Registers a wait in a `read` of the pipe whose read end is `rx`
/// (duplicated), to be poked with a one-byte packet after `tick`.
pub(crate) fn register_pipe(rx: &OwnedFd, tick: Duration) -> io::Result<Arc<Target>> {
    // A poke needs a second write end: fail now (the caller falls back to
    // `poll`) rather than never end a wait, where /proc is not there.
    drop(oslayer::pipe::open_writer(rx.as_fd())?);
    enroll(Poke::Pipe(rx.try_clone()?), tick)
}

/// Registers the blocking writes of a server wire (see the module
/// documentation), each to be interrupted once it has lasted `tick`;
/// `None` when [`interrupt_signal`] has another disposition already (the
/// writes then go unguarded).
pub(crate) fn register_writer(tick: Duration) -> io::Result<Option<Arc<Target>>> {
    if !oslayer::signal::install_interrupter(interrupt_signal())? {
        return Ok(None);
    }
    enroll(Poke::Interrupt, tick).map(Some)
}

fn enroll(poke: Poke, tick: Duration) -> io::Result<Arc<Target>> {
    let target = Arc::new(Target {
        poke,
        wait: AtomicU64::new(0),
        tick: tick.max(Duration::from_millis(1)),
        tid: AtomicI32::new(0),
        fired: AtomicBool::new(false),
    });
    let mut guard = POKER.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if guard.as_ref().is_none_or(|p| p.pid != pid) {
        // First use in this process (or a child after fork, which has no
        // poker thread even though it has the parent's registry).
        *guard = Some(Poker {
            pid,
            targets: Vec::new(),
            thread: None,
        });
    }
    let poker = guard.as_mut().expect("just set");
    poker
        .targets
        .push((Arc::downgrade(&target), 0, Instant::now()));
    match &poker.thread {
        Some(t) => t.unpark(),
        None => {
            let handle = std::thread::Builder::new()
                .name("msgpass-poker".into())
                .spawn(run)?;
            poker.thread = Some(handle.thread().clone());
        }
    }
    Ok(target)
}

/// The poker thread: every tick, pokes the targets still in the wait they
/// were in at its previous look.
fn run() {
    loop {
        let tick = {
            let mut guard = POKER.lock().unwrap_or_else(|e| e.into_inner());
            let Some(poker) = guard.as_mut() else { return };
            if poker.pid != std::process::id() {
                return;
            }
            poker.targets.retain(|(t, _, _)| t.strong_count() > 0);
            let mut tick = None::<Duration>;
            let now = Instant::now();
            for (weak, seen, since) in &mut poker.targets {
                let Some(t) = weak.upgrade() else { continue };
                let w = t.wait.load(Ordering::Relaxed);
                // Looks can come less than a tick apart (a registration
                // wakes this thread early): an interrupted write costs the
                // client its connection, so it must really have lasted two
                // ticks (a write that does not block takes microseconds,
                // unless its thread is kept off the CPU that long); an
                // early poke only ends a wait early.
                let lasted = match t.poke {
                    Poke::Interrupt => now.duration_since(*since) >= 2 * t.tick,
                    _ => true,
                };
                if w & 1 == 1 && w == *seen && lasted {
                    // Nothing useful to do on failure: the wire's own read
                    // reports a broken descriptor.
                    let _ = t.fire();
                }
                if w != *seen {
                    *since = now;
                }
                *seen = w;
                tick = Some(tick.map_or(t.tick, |d| d.min(t.tick)));
            }
            tick
        };
        match tick {
            Some(d) => std::thread::park_timeout(d),
            None => std::thread::park(),
        }
    }
}
