//! Lock wait and hold time per worker, cheap enough for 10 Mpps.
//!
//! The method: every acquisition is counted, and one in [`SAMPLE_EVERY`]
//! is timed with three reads of the suite's clock ([`Clock::best`]: the
//! TSC where trustworthy, a plain `rdtsc` of about 10 ns): before asking
//! for the lock, once it is held, and once it is released. The first
//! interval is the wait, the second the hold (the critical section plus
//! the release). The clock's own cost ([`Clock::overhead_ns`], the median
//! of two back-to-back reads) is taken off each interval, and the sampled
//! sums are scaled by `acquisitions / sampled` to estimate the totals.
//! Three reads per 64 packets cost about 0.5 ns per packet.
//!
//! Contention is counted on every acquisition, not sampled: each one first
//! tries the lock (`try_lock`, `try_read`), which costs what the
//! uncontended lock costs anyway, and only when that fails counts as
//! contended and blocks. For the `rcu` table there is no lock: the wait is
//! the time to load the snapshot, the hold is zero and nothing contends.

use serde::Serialize;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, TryLockError};

use crate::measure::clock::Clock;

/// One acquisition in this many is timed.
pub const SAMPLE_EVERY: u64 = 64;

/// What one worker spent on its table's lock. The times are estimates
/// scaled from the sampled acquisitions (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct LockStats {
    /// Times the worker took the lock (or loaded the snapshot).
    pub acquisitions: u64,
    /// Of those, how many were timed.
    pub sampled: u64,
    /// Acquisitions that found the lock taken and had to block.
    pub contended: u64,
    /// Estimated total time spent acquiring, in ns.
    pub wait_ns: u64,
    /// Estimated total time spent holding, in ns.
    pub hold_ns: u64,
}

impl LockStats {
    /// Adds another worker's figures to these.
    pub fn merge(&mut self, other: &LockStats) {
        self.acquisitions += other.acquisitions;
        self.sampled += other.sampled;
        self.contended += other.contended;
        self.wait_ns += other.wait_ns;
        self.hold_ns += other.hold_ns;
    }

    /// Mean wait per acquisition in ns (0 with none).
    pub fn mean_wait_ns(&self) -> f64 {
        per(self.wait_ns, self.acquisitions)
    }

    /// Mean hold per acquisition in ns (0 with none).
    pub fn mean_hold_ns(&self) -> f64 {
        per(self.hold_ns, self.acquisitions)
    }

    /// Fraction of acquisitions that were contended.
    pub fn contended_fraction(&self) -> f64 {
        if self.acquisitions == 0 {
            0.0
        } else {
            self.contended as f64 / self.acquisitions as f64
        }
    }
}

fn per(ns: u64, n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        ns as f64 / n as f64
    }
}

/// Counts and samples one worker's acquisitions (see the module doc).
#[derive(Debug, Clone)]
pub(crate) struct LockTimer {
    clock: Clock,
    acquisitions: u64,
    sampled: u64,
    contended: u64,
    wait_ticks: u64,
    hold_ticks: u64,
}

impl LockTimer {
    pub(crate) fn new(clock: Clock) -> LockTimer {
        LockTimer {
            clock,
            acquisitions: 0,
            sampled: 0,
            contended: 0,
            wait_ticks: 0,
            hold_ticks: 0,
        }
    }

    /// Acquires with `acquire` (which says whether it had to block), runs
    /// `body` on the guard, releases; times one call in [`SAMPLE_EVERY`].
    /// With `holds` false the hold is not recorded (a snapshot, no lock).
    #[inline(always)]
    pub(crate) fn run<G, R>(
        &mut self,
        holds: bool,
        acquire: impl FnOnce() -> (G, bool),
        body: impl FnOnce(&mut G) -> R,
    ) -> R {
        let sample = self.acquisitions % SAMPLE_EVERY == 0;
        self.acquisitions += 1;
        if !sample {
            let (mut guard, contended) = acquire();
            self.contended += u64::from(contended);
            return body(&mut guard);
        }
        let t0 = self.clock.now();
        let (mut guard, contended) = acquire();
        let t1 = self.clock.now();
        let r = body(&mut guard);
        drop(guard);
        let t2 = self.clock.now();
        self.contended += u64::from(contended);
        self.sampled += 1;
        self.wait_ticks += t1.wrapping_sub(t0);
        if holds {
            self.hold_ticks += t2.wrapping_sub(t1);
        }
        r
    }

    /// The figures so far, scaled to all acquisitions.
    pub(crate) fn stats(&self) -> LockStats {
        let scale = |ticks: u64| -> u64 {
            if self.sampled == 0 {
                return 0;
            }
            let overhead = self.clock.overhead_ns() * self.sampled as f64;
            let ns = (self.clock.ticks_to_ns(ticks) - overhead).max(0.0);
            (ns * self.acquisitions as f64 / self.sampled as f64).round() as u64
        };
        LockStats {
            acquisitions: self.acquisitions,
            sampled: self.sampled,
            contended: self.contended,
            wait_ns: scale(self.wait_ticks),
            hold_ns: if self.hold_ticks == 0 {
                0
            } else {
                scale(self.hold_ticks)
            },
        }
    }
}

/// Takes `m`, trying first so that contention is seen; a poisoned lock is
/// taken anyway (a panicked worker must not stop the others' counting).
#[inline(always)]
pub(crate) fn lock<T>(m: &Mutex<T>) -> (MutexGuard<'_, T>, bool) {
    match m.try_lock() {
        Ok(g) => (g, false),
        Err(TryLockError::WouldBlock) => (m.lock().unwrap_or_else(PoisonError::into_inner), true),
        Err(TryLockError::Poisoned(p)) => (p.into_inner(), false),
    }
}

/// Takes `l` for reading, trying first so that contention is seen.
#[inline(always)]
pub(crate) fn read<T>(l: &RwLock<T>) -> (RwLockReadGuard<'_, T>, bool) {
    match l.try_read() {
        Ok(g) => (g, false),
        Err(TryLockError::WouldBlock) => (l.read().unwrap_or_else(PoisonError::into_inner), true),
        Err(TryLockError::Poisoned(p)) => (p.into_inner(), false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_acquisition_is_counted_and_one_in_sample_every_is_timed() {
        let m = Mutex::new(0u64);
        let mut t = LockTimer::new(Clock::best());
        for _ in 0..(SAMPLE_EVERY * 10 + 3) {
            t.run(true, || lock(&m), |g| **g += 1);
        }
        let s = t.stats();
        assert_eq!(*m.lock().unwrap(), SAMPLE_EVERY * 10 + 3);
        assert_eq!(s.acquisitions, SAMPLE_EVERY * 10 + 3);
        assert_eq!(s.sampled, 11);
        assert_eq!(s.contended, 0);
    }

    #[test]
    fn a_held_lock_counts_as_contended_and_is_waited_for() {
        let m = Mutex::new(());
        let clock = Clock::best();
        let ready = std::sync::Barrier::new(2);
        let t = std::thread::scope(|s| {
            let g = m.lock().unwrap();
            let waiter = s.spawn(|| {
                let mut t = LockTimer::new(clock);
                ready.wait();
                t.run(true, || lock(&m), |_| ());
                t
            });
            ready.wait();
            std::thread::sleep(std::time::Duration::from_millis(20));
            drop(g);
            waiter.join().unwrap()
        });
        let s = t.stats();
        assert_eq!((s.acquisitions, s.contended, s.sampled), (1, 1, 1));
        assert!(s.wait_ns >= 10_000_000, "waited {} ns", s.wait_ns);
    }

    #[test]
    fn a_snapshot_has_no_hold() {
        let mut t = LockTimer::new(Clock::best());
        t.run(false, || ((), false), |_| ());
        assert_eq!(t.stats().hold_ns, 0);
        assert_eq!(LockStats::default().mean_wait_ns(), 0.0);
    }
}
