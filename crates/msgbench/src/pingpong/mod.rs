//! The machine's floors: the cheapest request/reply round trip each kind of
//! mechanism allows, with no library in between.
//!
//! Each floor is a bare ping-pong between two threads of one process, each
//! pinned to a given CPU (or left to float when `None`). Thread A sends a
//! sequence number, thread B checks it and answers the next one, A checks
//! the answer: every exchanged value is verified, so a fast wrong exchange
//! is an error, never a figure. Timing is whole-run: a warm-up of
//! [`warmup_for`] round trips, then [`std::time::Instant`] around the
//! `round_trips` measured ones.
//!
//! - [`cacheline`]: one cache-line-aligned `AtomicU32`, both sides spinning
//!   (the floor of `shm-spin`);
//! - [`futex`]: a process-shared futex word on a memfd mapping, both sides
//!   sleeping at once (the floor of `shm-block`);
//! - [`seqpacket`]: an `AF_UNIX`/`SOCK_SEQPACKET` socket pair with blocking
//!   `send`/`recv` (the floor of `uds`).
//!
//! The other kernel mechanisms, each with one message-moving syscall per
//! message and side, no `poll`, no header (the library's 8-byte header is
//! part of what it adds): [`pipe`], [`fifo`] (two named pipes), [`uds_stream`], [`uds_dgram`], [`eventfd`], [`posix_mq`],
//! [`sysv_msg`], [`tcp`], [`udp`]. They share one loop (`exchange`) over
//! an `End` per side; a side that fails sends the poison value to its
//! peer (a datagram or queue does not tell the peer that it went away).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context};

use crate::measure::placement::pin_current_thread;

mod cacheline;
mod cacheline_procs;
mod eventfd;
mod fdio;
pub mod floor;
mod futex;
mod pipe;
mod posix_mq;
mod seqpacket;
mod shared;
mod sysv_msg;
mod tcp;
mod udp;
mod uds_dgram;
mod uds_stream;

pub use cacheline::cacheline;
pub use cacheline_procs::cacheline_processes;
pub use eventfd::eventfd;
pub use futex::futex;
pub use pipe::{fifo, pipe};
pub use posix_mq::posix_mq;
pub use seqpacket::seqpacket;
pub use sysv_msg::sysv_msg;
pub use tcp::tcp;
pub use udp::udp;
pub use uds_dgram::uds_dgram;
pub use uds_stream::uds_stream;

/// Result of a bare ping-pong.
#[derive(Debug, Clone, Copy, serde::Serialize)]
pub struct PingPong {
    /// Number of timed round trips (the warm-up is not counted).
    pub round_trips: u64,
    /// Wall-clock nanoseconds per round trip, over the whole timed run.
    pub ns_per_round_trip: f64,
}

/// The most round trips (warm-up included) one ping-pong may run: sequence
/// numbers are `u32` and must never wrap onto the poison value.
pub const MAX_ROUND_TRIPS: u64 = 1 << 30;

/// Round trips run untimed before the measured ones: a tenth of the run,
/// at least 100 and at most 100 000.
pub fn warmup_for(round_trips: u64) -> u64 {
    (round_trips / 10).clamp(100, 100_000)
}

/// A value no correct exchange ever writes (sequence numbers stay below
/// `2 * MAX_ROUND_TRIPS + 2`). A side that fails stores it so that its
/// peer stops waiting and fails too, instead of hanging.
pub(crate) const POISON: u32 = u32::MAX;

/// Checks the requested count and returns `(warm-up, total)` round trips.
pub(crate) fn counts(round_trips: u64) -> anyhow::Result<(u64, u64)> {
    anyhow::ensure!(round_trips > 0, "round_trips must be at least 1");
    let warmup = warmup_for(round_trips);
    let total = warmup + round_trips;
    anyhow::ensure!(
        total <= MAX_ROUND_TRIPS,
        "{round_trips} round trips is too many (at most {MAX_ROUND_TRIPS} including warm-up)"
    );
    Ok((warmup, total))
}

/// The value A sends in round trip `i`.
pub(crate) fn request_of(i: u64) -> u32 {
    // Fits: i < MAX_ROUND_TRIPS = 2^30.
    (2 * i + 1) as u32
}

/// The value B answers in round trip `i`.
pub(crate) fn reply_of(i: u64) -> u32 {
    (2 * i + 2) as u32
}

/// Runs `ping` (side A, returns the timed duration) and `pong` (side B) on
/// two threads pinned to `cpus`. Both threads pin first and meet at a
/// barrier; if either pin fails, neither side starts. Errors from both
/// sides are reported (A's first).
pub(crate) fn run_pair<A, B>(
    cpus: (Option<usize>, Option<usize>),
    ping: A,
    pong: B,
) -> anyhow::Result<Duration>
where
    A: FnOnce() -> anyhow::Result<Duration> + Send,
    B: FnOnce() -> anyhow::Result<()> + Send,
{
    let barrier = Barrier::new(2);
    let pin_failed = AtomicBool::new(false);
    let pin = |cpu: Option<usize>, side: &str| -> anyhow::Result<bool> {
        let r = match cpu {
            Some(c) => pin_current_thread(c).with_context(|| format!("pinning side {side}")),
            None => Ok(()),
        };
        if r.is_err() {
            pin_failed.store(true, Ordering::SeqCst);
        }
        barrier.wait();
        r?;
        Ok(!pin_failed.load(Ordering::SeqCst))
    };
    let (a, b) = std::thread::scope(|s| {
        let b = s.spawn(|| -> anyhow::Result<()> {
            if pin(cpus.1, "B")? {
                pong()
            } else {
                Ok(())
            }
        });
        let a = s.spawn(|| -> anyhow::Result<Option<Duration>> {
            if pin(cpus.0, "A")? {
                ping().map(Some)
            } else {
                Ok(None)
            }
        });
        (joined(a.join(), "A"), joined(b.join(), "B"))
    });
    match (a, b) {
        (Ok(Some(d)), Ok(())) => Ok(d),
        (Err(e), _) => Err(e),
        (_, Err(e)) => Err(e),
        // Only reachable when a pin failed, which is an error above.
        (Ok(None), Ok(())) => Err(anyhow!("a thread could not be pinned")),
    }
}

/// A thread's result, with a panic turned into an error.
fn joined<T>(r: std::thread::Result<anyhow::Result<T>>, side: &str) -> anyhow::Result<T> {
    r.unwrap_or_else(|_| Err(anyhow!("side {side} of the ping-pong panicked")))
}

/// Side A's loop: `warmup` untimed calls of `step`, then `n` timed ones.
/// `step(i)` performs round trip `i` and checks its answer.
pub(crate) fn timed(
    warmup: u64,
    n: u64,
    mut step: impl FnMut(u64) -> anyhow::Result<()>,
) -> anyhow::Result<Duration> {
    for i in 0..warmup {
        step(i)?;
    }
    let t = Instant::now();
    for i in warmup..warmup + n {
        step(i)?;
    }
    Ok(t.elapsed())
}

/// The figure for `n` round trips that took `elapsed`.
pub(crate) fn result(n: u64, elapsed: Duration) -> PingPong {
    PingPong {
        round_trips: n,
        ns_per_round_trip: elapsed.as_nanos() as f64 / n as f64,
    }
}

/// Error for a wrong value seen in round trip `i`.
pub(crate) fn mismatch(side: &str, i: u64, want: u32, got: u32) -> anyhow::Error {
    if got == POISON {
        anyhow!("side {side}: the peer failed during round trip {i}")
    } else {
        anyhow!("side {side}: round trip {i}: expected {want}, got {got}")
    }
}

/// One side of a message ping-pong over a kernel mechanism: moves one `u32`
/// per call, with the mechanism's own send and receive syscalls.
pub(crate) trait End: Send {
    /// Sends `v` to the peer.
    fn send(&mut self, v: u32) -> anyhow::Result<()>;
    /// Blocks until the peer's next value arrives and returns it.
    fn recv(&mut self) -> anyhow::Result<u32>;
}

/// Sends [`POISON`] through its end when dropped armed, so that a side that
/// fails (error or panic) releases a peer blocked in `recv`. Errors of that
/// last send are ignored: the peer may be gone already.
struct Poisoner<E: End> {
    end: E,
    armed: bool,
}

impl<E: End> Drop for Poisoner<E> {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.end.send(POISON);
        }
    }
}

/// The ping-pong of the kernel floors: A (on `cpus.0`) sends `request_of(i)`
/// through `a` and waits for `reply_of(i)`; B (on `cpus.1`) waits for each
/// request, checks it and answers `answer(i)` through `b`. Every value is
/// checked on both sides.
pub(crate) fn exchange<A: End, B: End>(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
    a: A,
    b: B,
) -> anyhow::Result<PingPong> {
    let (warmup, total) = counts(round_trips)?;
    let elapsed = run_pair(
        cpus,
        move || {
            let mut a = Poisoner {
                end: a,
                armed: true,
            };
            let d = timed(warmup, round_trips, |i| {
                a.end
                    .send(request_of(i))
                    .with_context(|| format!("side A, round trip {i}"))?;
                let got = a
                    .end
                    .recv()
                    .with_context(|| format!("side A, round trip {i}"))?;
                if got != reply_of(i) {
                    return Err(mismatch("A", i, reply_of(i), got));
                }
                Ok(())
            })?;
            a.armed = false;
            Ok(d)
        },
        move || {
            let mut b = Poisoner {
                end: b,
                armed: true,
            };
            for i in 0..total {
                let got = b
                    .end
                    .recv()
                    .with_context(|| format!("side B, round trip {i}"))?;
                if got != request_of(i) {
                    return Err(mismatch("B", i, request_of(i), got));
                }
                b.end
                    .send(answer(i))
                    .with_context(|| format!("side B, round trip {i}"))?;
            }
            b.armed = false;
            Ok(())
        },
    )?;
    Ok(result(round_trips, elapsed))
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::PingPong;

    /// The tests every floor shares: `$measure` is the public ping-pong,
    /// `$run` the same with a chosen answer function (to inject a fault).
    macro_rules! floor_tests {
        ($measure:path, $run:path) => {
            #[test]
            fn every_placement_exchanges_correct_values() {
                for cpus in $crate::pingpong::test_util::placements() {
                    let p = $measure(cpus, 1000).unwrap_or_else(|e| panic!("{cpus:?}: {e:#}"));
                    $crate::pingpong::test_util::sane(&p, 1000);
                }
            }

            #[test]
            fn a_wrong_answer_fails_the_run_without_hanging() {
                fn bad(i: u64) -> u32 {
                    $crate::pingpong::reply_of(i) + if i == 500 { 2 } else { 0 }
                }
                for cpus in $crate::pingpong::test_util::placements() {
                    let e = $run(cpus, 1000, bad).expect_err("wrong value accepted");
                    assert!(e.to_string().contains("round trip 500"), "{e:#}");
                }
            }

            #[test]
            fn zero_round_trips_is_refused() {
                assert!($measure((None, None), 0).is_err());
            }
        };
    }
    pub(crate) use floor_tests;

    /// Checks a figure is usable (never its speed).
    pub(crate) fn sane(p: &PingPong, n: u64) {
        assert_eq!(p.round_trips, n);
        assert!(p.ns_per_round_trip.is_finite(), "{p:?}");
        assert!(p.ns_per_round_trip > 0.0, "{p:?}");
    }

    /// The placements worth testing on this machine: floating, one CPU,
    /// and two CPUs when there are two.
    pub(crate) fn placements() -> Vec<(Option<usize>, Option<usize>)> {
        let cpus = crate::measure::placement::online_cpus();
        let mut v = vec![(None, None)];
        if let Some(&c) = cpus.first() {
            v.push((Some(c), Some(c)));
        }
        if let [a, b, ..] = cpus[..] {
            v.push((Some(a), Some(b)));
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_checked() {
        assert!(counts(0).is_err());
        assert!(counts(MAX_ROUND_TRIPS).is_err());
        assert_eq!(counts(1000).unwrap(), (100, 1100));
        // The largest values stay clear of the poison.
        let (_, total) = counts(MAX_ROUND_TRIPS - 100_000).unwrap();
        assert!(reply_of(total - 1) < POISON);
    }

    #[test]
    fn pin_failure_is_reported_not_hung() {
        let r = run_pair(
            (Some(usize::MAX), Some(0)),
            || Ok(Duration::ZERO),
            || Ok(()),
        );
        assert!(r.is_err());
    }
}
