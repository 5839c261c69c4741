//! Lock wait and hold time per worker, cheap enough for 10 Mpps.
//!
//! The method, with the suite's clock ([`Clock::best`]: the TSC where
//! trustworthy, `lfence; rdtsc`, about 17 ns):
//! - every acquisition first tries the lock (`try_lock`, `try_read`, which
//!   costs what an uncontended lock costs anyway). One that fails is
//!   counted as contended and its whole blocking wait is timed, every
//!   time: contended acquisitions are the slow, rare ones that matter,
//!   and two clock reads are nothing next to a blocked lock;
//! - one acquisition in [`SAMPLE_EVERY`] is also timed from before the
//!   try to after the release (three reads): the try is the uncontended
//!   wait, the rest the hold (critical section plus release). The clock's
//!   own cost ([`Clock::overhead_ns`]) is taken off each interval, and the
//!   sums are scaled to all acquisitions (uncontended waits to the
//!   uncontended count). An uncontended try that took over
//!   [`INTERRUPTED_NS`] was interrupted or preempted, not kept waiting by
//!   the lock (it was free): such a sample is dropped from the wait (and
//!   counted), since scaled by 64 one preemption would swamp the figure.
//!   Holds are kept whole: a holder preempted holds the lock.
//!
//! Three reads per 64 packets cost about 0.5 ns per packet. For the
//! `rcu` table there is no lock: the wait is the time to load the
//! snapshot, the hold is zero and nothing contends.

use serde::Serialize;
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock, RwLockReadGuard, TryLockError};

use crate::measure::clock::Clock;

/// One acquisition in this many is timed.
pub const SAMPLE_EVERY: u64 = 64;

/// An uncontended acquisition slower than this was interrupted.
pub const INTERRUPTED_NS: f64 = 20_000.0;

/// What one worker spent on its table's lock. The times are estimates
/// scaled from the sampled acquisitions (see the module doc).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct LockStats {
    /// Times the worker took the lock (or loaded the snapshot).
    pub acquisitions: u64,
    /// Of those, how many were timed.
    pub sampled: u64,
    /// Acquisitions that found the lock taken and had to block.
    pub contended: u64,
    /// Sampled uncontended acquisitions dropped as interrupted.
    pub interrupted: u64,
    /// Estimated total time spent acquiring, in ns: contended waits
    /// measured, uncontended ones scaled from samples.
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
        self.interrupted += other.interrupted;
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
    interrupted: u64,
    /// Summed waits of the contended acquisitions, all timed.
    blocked_ticks: u64,
    /// Summed waits of the sampled uncontended acquisitions, and how many.
    try_ticks: u64,
    tries_sampled: u64,
    /// Summed holds of the sampled acquisitions.
    hold_ticks: u64,
    /// `INTERRUPTED_NS` in ticks.
    interrupted_ticks: u64,
}

impl LockTimer {
    pub(crate) fn new(clock: Clock) -> LockTimer {
        LockTimer {
            clock,
            acquisitions: 0,
            sampled: 0,
            contended: 0,
            interrupted: 0,
            blocked_ticks: 0,
            try_ticks: 0,
            tries_sampled: 0,
            hold_ticks: 0,
            interrupted_ticks: (INTERRUPTED_NS / clock.ticks_to_ns(1).max(1e-9)) as u64,
        }
    }

    /// Acquires with `acquire` (given the clock, it returns the guard and,
    /// if it had to block, the ticks it blocked), runs `body` on the
    /// guard, releases; samples one call in [`SAMPLE_EVERY`]. With
    /// `holds` false the hold is not recorded (a snapshot, no lock).
    #[inline(always)]
    pub(crate) fn run<G, R>(
        &mut self,
        holds: bool,
        acquire: impl FnOnce(&Clock) -> (G, Option<u64>),
        body: impl FnOnce(&mut G) -> R,
    ) -> R {
        let sample = self.acquisitions % SAMPLE_EVERY == 0;
        self.acquisitions += 1;
        if !sample {
            let (mut guard, blocked) = acquire(&self.clock);
            self.blocked(blocked);
            return body(&mut guard);
        }
        let t0 = self.clock.now();
        let (mut guard, blocked) = acquire(&self.clock);
        let t1 = self.clock.now();
        let r = body(&mut guard);
        drop(guard);
        let t2 = self.clock.now();
        self.sampled += 1;
        if blocked.is_none() {
            self.tried(t1.wrapping_sub(t0));
        }
        self.blocked(blocked);
        if holds {
            self.hold_ticks += t2.wrapping_sub(t1);
        }
        r
    }

    #[inline(always)]
    fn blocked(&mut self, blocked: Option<u64>) {
        if let Some(ticks) = blocked {
            self.contended += 1;
            self.blocked_ticks += ticks;
        }
    }

    fn tried(&mut self, ticks: u64) {
        if ticks > self.interrupted_ticks {
            self.interrupted += 1;
        } else {
            self.try_ticks += ticks;
            self.tries_sampled += 1;
        }
    }

    /// The figures so far, scaled to all acquisitions.
    pub(crate) fn stats(&self) -> LockStats {
        let overhead = self.clock.overhead_ns();
        let net =
            |ticks: u64, n: u64| (self.clock.ticks_to_ns(ticks) - overhead * n as f64).max(0.0);
        let scaled = |ns: f64, n: u64, of: u64| {
            if n == 0 {
                0.0
            } else {
                ns * of as f64 / n as f64
            }
        };
        let uncontended = self.acquisitions - self.contended;
        let tries = scaled(
            net(self.try_ticks, self.tries_sampled),
            self.tries_sampled,
            uncontended,
        );
        let blocked = net(self.blocked_ticks, self.contended);
        let hold = scaled(
            net(self.hold_ticks, self.sampled),
            self.sampled,
            self.acquisitions,
        );
        LockStats {
            acquisitions: self.acquisitions,
            sampled: self.sampled,
            contended: self.contended,
            interrupted: self.interrupted,
            wait_ns: (tries + blocked).round() as u64,
            hold_ns: hold.round() as u64,
        }
    }
}

/// Takes `m`, trying first so that contention is seen; a poisoned lock is
/// taken anyway (a panicked worker must not stop the others' counting).
#[inline(always)]
pub(crate) fn lock<'a, T>(m: &'a Mutex<T>, clock: &Clock) -> (MutexGuard<'a, T>, Option<u64>) {
    match m.try_lock() {
        Ok(g) => (g, None),
        Err(TryLockError::WouldBlock) => {
            let t0 = clock.now();
            let g = m.lock().unwrap_or_else(PoisonError::into_inner);
            (g, Some(clock.now().wrapping_sub(t0)))
        }
        Err(TryLockError::Poisoned(p)) => (p.into_inner(), None),
    }
}

/// Takes `l` for reading, trying first so that contention is seen.
#[inline(always)]
pub(crate) fn read<'a, T>(
    l: &'a RwLock<T>,
    clock: &Clock,
) -> (RwLockReadGuard<'a, T>, Option<u64>) {
    match l.try_read() {
        Ok(g) => (g, None),
        Err(TryLockError::WouldBlock) => {
            let t0 = clock.now();
            let g = l.read().unwrap_or_else(PoisonError::into_inner);
            (g, Some(clock.now().wrapping_sub(t0)))
        }
        Err(TryLockError::Poisoned(p)) => (p.into_inner(), None),
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
            t.run(true, |c| lock(&m, c), |g| **g += 1);
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
                t.run(true, |c| lock(&m, c), |_| ());
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
        t.run(false, |_| ((), None), |_| ());
        assert_eq!(t.stats().hold_ns, 0);
        assert_eq!(LockStats::default().mean_wait_ns(), 0.0);
    }
}
