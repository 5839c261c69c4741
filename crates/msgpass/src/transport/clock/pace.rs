//! How long a spinning waiter holds back before its first look at the word
//! its peer will write, learnt from the time its calls take.
//!
//! Spinning on a cache line costs the writer: a look at a line that is
//! being written elsewhere takes it away (migratory sharing), and the
//! writer's store then pays a second transfer. A peer that stores within a
//! few cycles of seeing our message never loses the line, but one that does
//! any work in between (builds a reply, checks a length) does, if our next
//! look lands in that gap. Holding back for about the time the peer needs
//! keeps the line where it is written; holding back longer only adds
//! latency. The right time depends on the peer's work and on where the host
//! put the two CPUs, so it is learnt: every [`BATCH`] calls the pacer times
//! the batch; one batch in [`PROBE_EVERY`] is a probe one pause to one
//! side of the hold learnt so far, which replaces it if the probe was
//! faster than the batch just before it (one clock read per batch, nothing
//! per call). Probing costs: a probe on the short side of the right hold
//! lets the steal back in, which is why it is not every other batch.
//!
//! The climb can only be misled when the hold does not matter: when the
//! calls are far apart, a few pauses are lost in the batch's noise, and the
//! hold wanders within [`MAX_HOLD`] pauses, which that noise dwarfs.

use std::time::{Duration, Instant};

/// Calls per timed batch.
pub(crate) const BATCH: u32 = 256;

/// One batch in this many is a probe (each costs a little when the kept
/// hold is right).
pub(crate) const PROBE_EVERY: u32 = 4;

/// The longest hold, in pauses (a pause lasts 10 to 140 cycles across x86
/// generations: 25.6 ns on this project's EPYC VM, whose spinning cache-line
/// round trip is 70-80 ns; `msgbench floor` measures it).
pub(crate) const MAX_HOLD: u32 = 48;

/// Adaptive hold before the first look at a peer's reply.
#[derive(Debug)]
pub(crate) struct Pacer {
    /// Whether to learn at all (else the hold stays 0).
    on: bool,
    /// Pauses to hold back for in the current batch.
    hold: u32,
    /// The hold learnt so far; a probe tries one pause away from it.
    kept: u32,
    /// Which side of `kept` the next probe tries: +1 or -1.
    step: i32,
    /// The time of the last batch at `kept`, when the current batch is a
    /// probe.
    base: Option<Duration>,
    /// Calls in the current batch.
    calls: u32,
    /// Batches so far (wrapping).
    batches: u32,
    /// When the current batch started.
    start: Instant,
}

impl Pacer {
    /// A pacer that starts without holding back; one that is not `on`
    /// never holds back.
    pub(crate) fn new(on: bool) -> Pacer {
        Pacer {
            on,
            hold: 0,
            kept: 0,
            step: 1,
            base: None,
            calls: 0,
            batches: 0,
            start: Instant::now(),
        }
    }

    /// Holds back for the current number of pauses.
    #[inline]
    pub(crate) fn hold(&self) {
        for _ in 0..self.hold {
            std::hint::spin_loop();
        }
    }

    /// Counts one call; times the batch at its end.
    #[inline]
    pub(crate) fn done(&mut self) {
        if !self.on {
            return;
        }
        self.calls += 1;
        if self.calls >= BATCH {
            self.learn(Instant::now());
        }
    }

    /// Ends a batch at `now`. Every [`PROBE_EVERY`]th batch at the kept
    /// hold is followed by a probe one pause to one side; a probe that
    /// beats the batch just before it becomes the kept hold, one that does
    /// not turns the next probe to the other side. Each verdict compares two neighbouring
    /// batches, so a change of conditions is followed at once.
    #[cold]
    fn learn(&mut self, now: Instant) {
        let took = now.saturating_duration_since(self.start);
        self.start = now;
        self.calls = 0;
        self.batches = self.batches.wrapping_add(1);
        match self.base.take() {
            None => {
                if self.batches % PROBE_EVERY == 0 {
                    self.base = Some(took);
                    self.hold = self.probe();
                }
            }
            Some(base) => {
                if took < base {
                    self.kept = self.hold;
                } else {
                    self.step = -self.step;
                }
                self.hold = self.kept;
            }
        }
    }

    /// The hold one step from the kept one, turning at the bounds.
    fn probe(&mut self) -> u32 {
        let next = |kept: u32, step: i32| kept.saturating_add_signed(step).min(MAX_HOLD);
        if next(self.kept, self.step) == self.kept {
            self.step = -self.step;
        }
        next(self.kept, self.step)
    }

    /// The current hold, in pauses.
    #[cfg(test)]
    fn current(&self) -> u32 {
        self.hold
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `batches` batches whose time is `cost(hold)`, returning the holds
    /// the pacer chose.
    fn climb(batches: usize, mut cost: impl FnMut(u32) -> u64) -> Vec<u32> {
        let mut p = Pacer::new(true);
        let mut now = p.start;
        let mut holds = Vec::new();
        for _ in 0..batches {
            holds.push(p.current());
            now += Duration::from_nanos(cost(p.current()));
            p.learn(now);
        }
        holds
    }

    #[test]
    fn it_finds_the_hold_that_makes_batches_fastest() {
        // Fastest at 7 pauses, slower either side.
        let holds = climb(200, |h| 1000 + 50 * u64::from(h.abs_diff(7)));
        let late = &holds[100..];
        assert!(late.iter().all(|h| h.abs_diff(7) <= 1), "{late:?}");
    }

    #[test]
    fn it_finds_it_through_noise() {
        // Batch times jitter by up to 10%, more than two steps' difference.
        let mut seed = 1u64;
        let mut noise = move || {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (seed >> 33) % 100
        };
        let holds = climb(4000, |h| 1000 + 30 * u64::from(h.abs_diff(12)) + noise());
        let mut late = holds[2000..].to_vec();
        late.sort_unstable();
        assert!(
            late[late.len() / 2].abs_diff(12) <= 2,
            "median {}",
            late[late.len() / 2]
        );
    }

    #[test]
    fn it_holds_nothing_back_when_holding_only_costs() {
        let holds = climb(200, |h| 1000 + 50 * u64::from(h));
        assert!(holds[100..].iter().all(|&h| h <= 1), "{holds:?}");
    }

    #[test]
    fn it_never_holds_longer_than_the_bound() {
        let holds = climb(1000, |h| 100_000 - 10 * u64::from(h));
        assert!(holds.iter().all(|&h| h <= MAX_HOLD));
        assert!(holds[900..].iter().all(|&h| h >= MAX_HOLD - 1), "{holds:?}");
    }

    #[test]
    fn one_that_is_off_never_holds_back() {
        let mut p = Pacer::new(false);
        for _ in 0..10 * BATCH {
            p.done();
        }
        assert_eq!(p.current(), 0);
        // Nor counts: a counter that never resets would overflow.
        assert_eq!(p.calls, 0);
    }

    #[test]
    fn it_follows_a_change_of_conditions() {
        let mut p = Pacer::new(true);
        let mut now = p.start;
        let mut run = |p: &mut Pacer, batches: usize, best_at: u32, base: u64| {
            for _ in 0..batches {
                now += Duration::from_nanos(base + 50 * u64::from(p.current().abs_diff(best_at)));
                p.learn(now);
            }
        };
        run(&mut p, 200, 5, 1000);
        assert!(p.current().abs_diff(5) <= 1);
        // The host moved a CPU: everything is slower, best at 20 pauses.
        run(&mut p, 400, 20, 1500);
        assert!(p.current().abs_diff(20) <= 1, "{}", p.current());
    }
}
