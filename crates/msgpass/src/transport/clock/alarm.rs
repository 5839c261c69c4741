//! A process-wide thread that ends a call's wait at its deadline, for the
//! clients whose wait has no timeout of its own: a System V `msgrcv` and a
//! FUSE `ioctl` block until something arrives, and a signal to end them
//! would take a signal's disposition from the application.
//!
//! Each connection that has a call timeout owns an [`Alarm`]: what to do
//! when its call's deadline passes (sysv-msg: put a wake-up message in the
//! reply queue the client waits on; fuse: ask the server, with a second
//! ioctl, to withdraw the call). A call [arms](Alarm::arm) it with its
//! deadline before it waits and [disarms](Alarm::disarm) it after; the
//! disarm waits for an action under way to finish and says whether it ran,
//! so a call never returns while its action could still reach the next
//! call.
//!
//! **Cost.** An arm or a disarm takes the alarm's own lock; an arm takes
//! the thread's lock (a heap push, and a wake-up when it is the earliest
//! deadline) only when the alarm has no entry in the heap at or before its
//! deadline. Calls made with the same timeout have later and later
//! deadlines, so a connection keeps one entry, moved on once per timeout
//! period when its thread finds it early: the heap holds about one entry
//! per connection, whatever the call rate. The thread sleeps until the
//! earliest deadline (parked when there is none); it belongs to the process
//! that started it, and a child made by `fork` starts its own.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::Thread;
use std::time::Instant;

/// What a connection does when its call's deadline passes.
type Action = Box<dyn Fn() + Send + Sync>;

/// One connection's alarm (see the module doc).
pub(crate) struct Alarm {
    slot: Arc<Slot>,
}

struct Slot {
    state: Mutex<SlotState>,
    /// Signalled when an action ends.
    done: Condvar,
    action: Action,
}

#[derive(Default)]
struct SlotState {
    /// The deadline of the call under way, while armed.
    armed: Option<Instant>,
    /// The deadline of this slot's entry in the heap, if it has one.
    queued: Option<Instant>,
    /// The action is running.
    firing: bool,
    /// The action ran since the last arm.
    fired: bool,
}

/// An entry of the heap: a slot to look at, at `at`.
struct Entry {
    at: Instant,
    /// Breaks ties (and orders the entries: `Weak` has no order).
    n: u64,
    slot: Weak<Slot>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        (self.at, self.n) == (other.at, other.n)
    }
}

impl Eq for Entry {}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> std::cmp::Ordering {
        (self.at, self.n).cmp(&(other.at, other.n))
    }
}

/// The heap and its thread, for one process.
struct Timers {
    pid: u32,
    heap: BinaryHeap<Reverse<Entry>>,
    next: u64,
    thread: Option<Thread>,
}

static TIMERS: Mutex<Option<Timers>> = Mutex::new(None);

/// Locks `m`, whose data stays consistent even if a holder panicked.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Alarm {
    /// An alarm that runs `action` when an armed call's deadline passes.
    /// The action runs on the alarm thread: it must not wait for long
    /// (every other connection's alarm waits behind it).
    pub(crate) fn new(action: impl Fn() + Send + Sync + 'static) -> Alarm {
        Alarm {
            slot: Arc::new(Slot {
                state: Mutex::new(SlotState::default()),
                done: Condvar::new(),
                action: Box::new(action),
            }),
        }
    }

    /// Arms the alarm for a call whose deadline is `at`.
    pub(crate) fn arm(&self, at: Instant) -> io::Result<()> {
        let mut s = lock(&self.slot.state);
        s.armed = Some(at);
        s.fired = false;
        let push = match s.queued {
            Some(q) if q <= at => false,
            _ => {
                s.queued = Some(at);
                true
            }
        };
        drop(s);
        if push {
            if let Err(e) = schedule(at, Arc::downgrade(&self.slot)) {
                let mut s = lock(&self.slot.state);
                s.armed = None;
                s.queued = None;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Disarms the alarm after a call, waiting for its action if it is
    /// running; true when the action ran for this call.
    pub(crate) fn disarm(&self) -> bool {
        let mut s = lock(&self.slot.state);
        s.armed = None;
        while s.firing {
            s = self.slot.done.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        std::mem::take(&mut s.fired)
    }
}

/// Puts `slot` in the heap at `at`, starting the thread on first use in
/// this process, and wakes the thread when `at` is now the earliest.
fn schedule(at: Instant, slot: Weak<Slot>) -> io::Result<()> {
    let mut guard = lock(&TIMERS);
    let pid = std::process::id();
    if guard.as_ref().is_none_or(|t| t.pid != pid) {
        // First use in this process (or a child after fork, which has the
        // parent's heap but no thread).
        *guard = Some(Timers {
            pid,
            heap: BinaryHeap::new(),
            next: 0,
            thread: None,
        });
    }
    let timers = guard.as_mut().expect("just set");
    let earliest = timers.heap.peek().is_none_or(|Reverse(e)| at < e.at);
    let n = timers.next;
    timers.next += 1;
    timers.heap.push(Reverse(Entry { at, n, slot }));
    match &timers.thread {
        Some(t) if earliest => t.unpark(),
        Some(_) => {}
        None => {
            let handle = std::thread::Builder::new()
                .name("msgpass-alarm".into())
                .spawn(run)?;
            timers.thread = Some(handle.thread().clone());
        }
    }
    Ok(())
}

/// What the thread does next.
enum Next {
    Sleep(Option<std::time::Duration>),
    Look(Entry),
    Quit,
}

/// The alarm thread: takes each entry at its time and looks at its slot.
fn run() {
    loop {
        let next = {
            let mut guard = lock(&TIMERS);
            match guard.as_mut() {
                Some(t) if t.pid == std::process::id() => {
                    let now = Instant::now();
                    match t.heap.peek() {
                        None => Next::Sleep(None),
                        Some(Reverse(e)) if e.at > now => Next::Sleep(Some(e.at - now)),
                        Some(_) => Next::Look(t.heap.pop().expect("peeked").0),
                    }
                }
                _ => Next::Quit,
            }
        };
        match next {
            Next::Sleep(None) => std::thread::park(),
            Next::Sleep(Some(d)) => std::thread::park_timeout(d),
            Next::Look(e) => look(e),
            Next::Quit => return,
        }
    }
}

/// An entry is due: runs its slot's action if the call it was armed for
/// is past its deadline, moves the entry on if the call under way has a
/// later one, and forgets it otherwise (disarmed, or a stale entry).
fn look(e: Entry) {
    let Some(slot) = e.slot.upgrade() else { return };
    let mut s = lock(&slot.state);
    if s.queued != Some(e.at) {
        return;
    }
    s.queued = None;
    let Some(armed) = s.armed else { return };
    if armed > Instant::now() {
        s.queued = Some(armed);
        drop(s);
        // The thread runs: the heap exists, and a failure cannot happen.
        let _ = schedule(armed, e.slot);
        return;
    }
    s.armed = None;
    s.firing = true;
    drop(s);
    (slot.action)();
    let mut s = lock(&slot.state);
    s.firing = false;
    s.fired = true;
    drop(s);
    slot.done.notify_all();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    fn counting() -> (Alarm, Arc<AtomicUsize>) {
        let n = Arc::new(AtomicUsize::new(0));
        let alarm = Alarm::new({
            let n = Arc::clone(&n);
            move || {
                n.fetch_add(1, Ordering::SeqCst);
            }
        });
        (alarm, n)
    }

    #[test]
    fn an_alarm_fires_at_its_deadline_and_not_once_disarmed() {
        let (alarm, n) = counting();
        let start = Instant::now();
        alarm.arm(start + Duration::from_millis(30)).expect("arm");
        while n.load(Ordering::SeqCst) == 0 {
            assert!(start.elapsed() < Duration::from_secs(10), "never fired");
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(start.elapsed() >= Duration::from_millis(30), "fired early");
        assert!(alarm.disarm(), "the disarm says it fired");
        // Disarmed in time: never fires, and says so.
        alarm
            .arm(Instant::now() + Duration::from_millis(30))
            .expect("arm");
        assert!(!alarm.disarm());
        std::thread::sleep(Duration::from_millis(80));
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn later_deadlines_move_one_entry_on() {
        let (alarm, n) = counting();
        // Many calls, each disarmed before its deadline, then one that
        // is not: it fires once, at its own deadline.
        for _ in 0..1000 {
            alarm
                .arm(Instant::now() + Duration::from_millis(20))
                .expect("arm");
            assert!(!alarm.disarm());
        }
        let last = Instant::now() + Duration::from_millis(40);
        alarm.arm(last).expect("arm");
        while n.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(Instant::now() >= last);
        assert!(alarm.disarm());
        let heap = lock(&TIMERS).as_ref().map_or(0, |t| t.heap.len());
        assert!(heap < 10, "{heap} entries left in the heap");
    }

    #[test]
    fn a_disarm_waits_for_the_action_under_way() {
        let started = Arc::new(AtomicUsize::new(0));
        let finished = Arc::new(AtomicUsize::new(0));
        let alarm = Alarm::new({
            let (started, finished) = (Arc::clone(&started), Arc::clone(&finished));
            move || {
                started.fetch_add(1, Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(50));
                finished.fetch_add(1, Ordering::SeqCst);
            }
        });
        alarm.arm(Instant::now()).expect("arm");
        while started.load(Ordering::SeqCst) == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(alarm.disarm());
        assert_eq!(finished.load(Ordering::SeqCst), 1, "returned mid-action");
    }
}
