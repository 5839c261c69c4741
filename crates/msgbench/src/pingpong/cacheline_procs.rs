//! Cache-line ping-pong between two processes: the floor of a spinning
//! shared-memory exchange across a process boundary.
//!
//! The word lives in a `MAP_SHARED` mapping of a memfd; the peer is a real
//! process made by `fork`, which inherits the mapping. Side A runs on a
//! thread of this process pinned to `cpus.0`, side B is the child, pinned
//! to `cpus.1`; the exchange is the one of [`super::cacheline`] (pure
//! spinning on two CPUs, a `sched_yield` after each look on one CPU).
//!
//! Between `fork` and `_exit` the child only makes system calls, atomic
//! loads and stores, and vDSO clock reads (async-signal-safe, no
//! allocation), as required after forking a multithreaded process.
//!
//! Nobody spins for ever: each side gives up after [`PEER_TIMEOUT`]
//! without progress (A then poisons the word, kills and reaps the child;
//! B exits), the child dies with its parent (`PR_SET_PDEATHSIG`), and the
//! child is always reaped, on success and on every error path.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use oslayer::process::{self, Fork, Pid, Signal, WaitStatus};

use super::shared::SharedPage;
use super::{counts, mismatch, reply_of, request_of, result, timed, PingPong, POISON};
use crate::measure::clock::monotonic_ns;
use crate::measure::placement::pin_current_thread;

/// Longest either side waits for the other's next value.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(5);

/// Looks between two reads of the clock while spinning.
const LOOKS_PER_CLOCK_READ: u32 = 4096;
/// Looks between two reads of the clock while yielding after each look.
const LOOKS_PER_CLOCK_READ_YIELDING: u32 = 16;

/// Exit status of a child that saw a wrong value or timed out.
const CHILD_FAILED: i32 = 3;

/// Waits until `word` no longer holds `last`; `None` after [`PEER_TIMEOUT`]
/// without a change, or as soon as `peer_alive` says the peer is gone
/// (asked at each clock read). Yields after each look when `yield_each`.
#[inline(always)]
fn wait_change(
    word: &AtomicU32,
    last: u32,
    yield_each: bool,
    peer_alive: &dyn Fn() -> bool,
) -> Option<u32> {
    let every = if yield_each {
        LOOKS_PER_CLOCK_READ_YIELDING
    } else {
        LOOKS_PER_CLOCK_READ
    };
    let mut looks: u32 = 0;
    let mut deadline: u64 = 0;
    loop {
        let v = word.load(Ordering::Acquire);
        if v != last {
            return Some(v);
        }
        if yield_each {
            oslayer::sched::yield_now();
        } else {
            std::hint::spin_loop();
        }
        looks += 1;
        if looks >= every {
            looks = 0;
            let now = monotonic_ns();
            if deadline == 0 {
                deadline = now + PEER_TIMEOUT.as_nanos() as u64;
            } else if now > deadline || !peer_alive() {
                return None;
            }
        }
    }
}

/// The child: pins itself, answers `total` requests, exits. Never returns.
/// Every call here is one system call or a vDSO read that allocates
/// nothing (the CPU is checked below CPU_SETSIZE first, so that
/// `set_affinity` cannot take its error path, which formats a message).
fn child(word: &AtomicU32, cpu: Option<usize>, parent: Pid, total: u64, yield_each: bool) -> ! {
    let _ = process::set_parent_death_signal(Some(Signal::KILL));
    if process::parent_pid() != Some(parent) {
        process::exit_now(CHILD_FAILED);
    }
    if let Some(c) = cpu {
        if c >= oslayer::sched::MAX_CPUS {
            process::exit_now(CHILD_FAILED);
        }
        if oslayer::sched::set_affinity(&[c]).is_err() {
            word.store(POISON, Ordering::Release);
            process::exit_now(CHILD_FAILED);
        }
    }
    let mut last = 0;
    for i in 0..total {
        let alive = || process::parent_pid() == Some(parent);
        match wait_change(word, last, yield_each, &alive) {
            Some(v) if v == request_of(i) => {}
            _ => {
                word.store(POISON, Ordering::Release);
                process::exit_now(CHILD_FAILED);
            }
        }
        last = reply_of(i);
        word.store(last, Ordering::Release);
    }
    process::exit_now(0)
}

/// The forked peer: killed (if still running) and reaped on drop.
struct Peer {
    pid: Pid,
    reaped: bool,
}

impl Peer {
    /// Waits up to [`PEER_TIMEOUT`] for the child to exit, then kills it;
    /// returns its wait status.
    fn reap(&mut self) -> anyhow::Result<WaitStatus> {
        let start = Instant::now();
        loop {
            match process::try_reap(self.pid) {
                Ok(Some(status)) => {
                    self.reaped = true;
                    return Ok(status);
                }
                Ok(None) => {}
                Err(e) => {
                    self.reaped = true;
                    bail!("waitpid: {e}");
                }
            }
            if start.elapsed() > PEER_TIMEOUT {
                bail!("the peer process did not exit within {PEER_TIMEOUT:?}");
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if !self.reaped {
            // Our own, unreaped child: SIGKILL cannot be caught, so the
            // blocking wait ends.
            let _ = process::kill(self.pid, Signal::KILL);
            let _ = process::reap(self.pid);
        }
    }
}

/// Ping-pong through one cache line of a shared memfd mapping between a
/// thread of this process on `cpus.0` and a forked child on `cpus.1`.
pub fn cacheline_processes(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
) -> anyhow::Result<PingPong> {
    let (warmup, total) = counts(round_trips)?;
    let yield_each = match cpus {
        (Some(a), Some(b)) => a == b,
        _ => true,
    };
    let shared = SharedPage::new(c"msgbench-floor-line")?;
    let word = shared.word();
    let elapsed = std::thread::scope(|s| {
        s.spawn(|| -> anyhow::Result<Duration> {
            if let Some(c) = cpus.0 {
                pin_current_thread(c).context("pinning side A")?;
            }
            let parent = process::pid();
            // SAFETY: the child runs only `child`, which keeps to
            // async-signal-safe operations (system calls, atomics, vDSO
            // clock reads; no allocation) and ends in _exit.
            let pid = match unsafe { process::fork() }.context("fork")? {
                Fork::Child => child(word, cpus.1, parent, total, yield_each),
                Fork::Parent(pid) => pid,
            };
            let mut peer = Peer { pid, reaped: false };
            let d = timed(warmup, round_trips, |i| {
                let req = request_of(i);
                word.store(req, Ordering::Release);
                match wait_change(word, req, yield_each, &|| process::child_running(pid)) {
                    Some(v) if v == reply_of(i) => Ok(()),
                    Some(v) => Err(mismatch("A", i, reply_of(i), v)),
                    None => Err(anyhow!(
                        "side A: round trip {i}: the peer process exited or did not answer within {PEER_TIMEOUT:?}"
                    )),
                }
            });
            if d.is_err() {
                word.store(POISON, Ordering::Release);
            }
            let status = peer.reap();
            let d = d?;
            let status = status?;
            if status.exit_status() != Some(0) {
                bail!(
                    "the peer process failed (wait status {:#x})",
                    status.as_raw()
                );
            }
            Ok(d)
        })
        .join()
        .unwrap_or_else(|_| Err(anyhow!("side A of the ping-pong panicked")))
    })?;
    Ok(result(round_trips, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_placement_exchanges_correct_values() {
        for cpus in crate::pingpong::test_util::placements() {
            let p = cacheline_processes(cpus, 1000).unwrap_or_else(|e| panic!("{cpus:?}: {e:#}"));
            crate::pingpong::test_util::sane(&p, 1000);
        }
    }

    #[test]
    fn zero_round_trips_is_refused() {
        assert!(cacheline_processes((None, None), 0).is_err());
    }

    #[test]
    fn a_missing_cpu_fails_without_hanging() {
        let cpu = crate::measure::placement::online_cpus()[0];
        let t = Instant::now();
        assert!(cacheline_processes((Some(cpu), Some(usize::MAX)), 1000).is_err());
        assert!(t.elapsed() < PEER_TIMEOUT * 3);
    }
}
