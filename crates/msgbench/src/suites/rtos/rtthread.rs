//! What the THR and CLK tests need beyond [`super::rt`]: threads created
//! with explicit scheduling attributes (so a thread starts at its own
//! SCHED_FIFO or SCHED_RR priority instead of inheriting the creator's),
//! pinned through the attributes; a futex gate with bounded waits; and a
//! few small scheduler calls.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{anyhow, Result};
use oslayer::pthread::Attrs;
use oslayer::sched;

use crate::measure::clock::monotonic_ns;
use oslayer::futex;

/// The scheduling a new thread is created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The creator's policy and priority (pthread's default).
    Inherit,
    /// SCHED_FIFO at this priority.
    Fifo(i32),
    /// SCHED_RR at this priority.
    Rr(i32),
}

/// A thread started by [`spawn`]; joined by [`RawThread::join`] or on drop.
pub struct RawThread(oslayer::pthread::Thread);

/// Creates a thread running `f` with `policy`, on `cpu` when given, with a
/// stack of `stack` bytes when given (else the default).
pub fn spawn<F>(policy: Policy, cpu: Option<usize>, stack: Option<usize>, f: F) -> Result<RawThread>
where
    F: FnOnce() + Send + 'static,
{
    let attrs = Attrs {
        policy: match policy {
            Policy::Inherit => None,
            Policy::Fifo(p) => Some(sched::Policy::Fifo(p)),
            Policy::Rr(p) => Some(sched::Policy::Rr(p)),
        },
        cpu,
        stack,
    };
    oslayer::pthread::spawn(attrs, f)
        .map(RawThread)
        .map_err(|e| anyhow!("{e} ({policy:?})"))
}

impl RawThread {
    /// Waits for the thread to end.
    pub fn join(self) -> Result<()> {
        Ok(self.0.join()?)
    }
}

/// A one-shot gate on a futex word: threads wait (bounded) until it opens.
#[derive(Debug, Default)]
pub struct Gate(AtomicU32);

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate(AtomicU32::new(0))
    }

    /// True once opened.
    pub fn is_open(&self) -> bool {
        self.0.load(Ordering::Acquire) != 0
    }

    /// Opens it and wakes every waiter.
    pub fn open(&self) {
        self.0.store(1, Ordering::Release);
        let _ = futex::wake(&self.0, i32::MAX as u32, false);
    }

    /// Waits until it opens, at most `limit`; true when it opened.
    pub fn wait(&self, limit: Duration) -> bool {
        let deadline = monotonic_ns().saturating_add(limit.as_nanos() as u64);
        loop {
            if self.is_open() {
                return true;
            }
            let now = monotonic_ns();
            if now >= deadline {
                return false;
            }
            let left = deadline - now;
            futex::wait(&self.0, 0, Some(Duration::from_nanos(left)), false);
        }
    }
}

/// sched_yield(2).
pub fn yield_now() {
    sched::yield_now();
}

/// The CPU to run single-CPU tests on: the last online one (the first is
/// more likely to take device interrupts).
pub fn test_cpu(cpus: &[usize]) -> usize {
    cpus.last().copied().unwrap_or(0)
}

/// Runs `f` on a new thread created with `policy` on `cpu` and returns its
/// result (an error when the thread could not start or panicked).
pub fn run_on<T, F>(policy: Policy, cpu: Option<usize>, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    spawn(policy, cpu, None, move || {
        let _ = tx.send(f());
    })?
    .join()?;
    rx.try_recv()
        .map_err(|_| anyhow!("the test thread panicked"))?
}

/// The SCHED_RR time slice of the calling thread (sched_rr_get_interval).
pub fn rr_interval() -> Result<Duration> {
    sched::rr_interval().map_err(|e| anyhow!("sched_rr_get_interval: {e}"))
}

/// Spins (reading the monotonic clock) for `d`, or until `until` is true.
pub fn spin_for(d: Duration, mut until: impl FnMut() -> bool) {
    let end = monotonic_ns().saturating_add(d.as_nanos() as u64);
    while monotonic_ns() < end && !until() {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn gate_opens_and_bounds_the_wait() {
        let g = Arc::new(Gate::new());
        assert!(!g.wait(Duration::from_millis(5)), "a closed gate times out");
        let g2 = Arc::clone(&g);
        let t = spawn(Policy::Inherit, None, Some(64 * 1024), move || {
            g2.open();
        })
        .expect("spawn");
        assert!(g.wait(Duration::from_secs(10)));
        t.join().expect("join");
    }

    #[test]
    fn spawned_closure_runs_and_a_panic_is_contained() {
        let g = Arc::new(Gate::new());
        let g2 = Arc::clone(&g);
        spawn(Policy::Inherit, None, None, move || {
            g2.open();
            panic!("contained");
        })
        .expect("spawn")
        .join()
        .expect("join");
        assert!(g.is_open());
    }
}
