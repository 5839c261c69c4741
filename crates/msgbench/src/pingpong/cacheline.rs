//! Cache-line ping-pong: the floor of a spinning shared-memory exchange.
//!
//! One `AtomicU32` alone in a 64-byte-aligned line carries both the request
//! and the reply, as the first line of an `shm` slot does: A writes `2i+1`
//! and spins until the word changes, B spins until it sees `2i+1` and
//! writes `2i+2`. One line bouncing between two cores, each way, is the
//! least a request/reply round trip can move.
//!
//! Waiting depends on placement:
//! - two different pinned CPUs: pure spinning with [`std::hint::spin_loop`];
//! - the same pinned CPU: a pure spinner would only hand over the CPU on a
//!   scheduler tick (milliseconds per round trip), so each unsuccessful
//!   look is followed by `sched_yield`. The figure is then the floor of a
//!   *yielding* spinner on one CPU (two yields and two context switches
//!   per round trip), not of cache-line transfer;
//! - unpinned (either side `None`): spin, and yield after every
//!   [`UNPINNED_SPINS`] unsuccessful looks, in case both threads share a CPU.

use std::sync::atomic::{AtomicU32, Ordering};

use super::{counts, mismatch, reply_of, request_of, result, run_pair, timed, PingPong, POISON};

/// Unsuccessful looks between two yields when the threads are not pinned.
pub const UNPINNED_SPINS: u32 = 1024;

/// The shared word, alone in its cache line.
#[repr(C, align(64))]
struct Line {
    word: AtomicU32,
}

/// How a side waits.
#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Spin only.
    Spin,
    /// Yield after every `n` unsuccessful looks.
    YieldEvery(u32),
}

fn mode_for(cpus: (Option<usize>, Option<usize>)) -> Mode {
    match cpus {
        (Some(a), Some(b)) if a != b => Mode::Spin,
        (Some(_), Some(_)) => Mode::YieldEvery(1),
        _ => Mode::YieldEvery(UNPINNED_SPINS),
    }
}

/// Waits until `word` no longer holds `last`, and returns what it holds.
#[inline(always)]
fn wait_change(word: &AtomicU32, last: u32, mode: Mode) -> u32 {
    let mut looks: u32 = 0;
    loop {
        let v = word.load(Ordering::Acquire);
        if v != last {
            return v;
        }
        match mode {
            Mode::Spin => std::hint::spin_loop(),
            Mode::YieldEvery(n) => {
                looks += 1;
                if looks >= n {
                    looks = 0;
                    oslayer::sched::yield_now();
                } else {
                    std::hint::spin_loop();
                }
            }
        }
    }
}

/// Stores [`POISON`] when dropped armed, so a side that fails (error or
/// panic) releases its peer instead of leaving it spinning for ever.
struct Guard<'a> {
    word: &'a AtomicU32,
    armed: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.word.store(POISON, Ordering::Release);
        }
    }
}

/// Ping-pong through one cache line between threads on `cpus` (see the
/// module documentation for how the same-CPU and unpinned cases wait).
pub fn cacheline(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
) -> anyhow::Result<PingPong> {
    run(cpus, round_trips, reply_of)
}

/// The ping-pong, with B answering `answer(i)` (tests inject faults here).
fn run(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    let (warmup, total) = counts(round_trips)?;
    let mode = mode_for(cpus);
    let line = Line {
        word: AtomicU32::new(0),
    };
    let word = &line.word;
    let elapsed = run_pair(
        cpus,
        || {
            let mut guard = Guard { word, armed: true };
            let d = timed(warmup, round_trips, |i| {
                let req = request_of(i);
                word.store(req, Ordering::Release);
                let got = wait_change(word, req, mode);
                if got != reply_of(i) {
                    return Err(mismatch("A", i, reply_of(i), got));
                }
                Ok(())
            })?;
            guard.armed = false;
            Ok(d)
        },
        || {
            let mut guard = Guard { word, armed: true };
            let mut last = 0;
            for i in 0..total {
                let got = wait_change(word, last, mode);
                if got != request_of(i) {
                    return Err(mismatch("B", i, request_of(i), got));
                }
                last = answer(i);
                word.store(last, Ordering::Release);
            }
            guard.armed = false;
            Ok(())
        },
    )?;
    Ok(result(round_trips, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(cacheline, run);

    #[test]
    fn line_is_alone() {
        assert_eq!(std::mem::align_of::<Line>(), 64);
        assert_eq!(std::mem::size_of::<Line>(), 64);
    }
}
