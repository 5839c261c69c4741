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
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
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

/// Whether process `pid` (our child) has not exited yet; does not reap it.
fn running(pid: libc::pid_t) -> bool {
    // SAFETY: siginfo_t is plain data; waitid with WNOWAIT only reports.
    unsafe {
        let mut info: libc::siginfo_t = std::mem::zeroed();
        let r = libc::waitid(
            libc::P_PID,
            pid as libc::id_t,
            &mut info,
            libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
        );
        r == 0 && info.si_pid() == 0
    }
}

/// The child: pins itself, answers `total` requests, exits. Never returns.
fn child(
    word: &AtomicU32,
    cpu: Option<usize>,
    parent: libc::pid_t,
    total: u64,
    yield_each: bool,
) -> ! {
    // SAFETY: prctl, getppid, sched_setaffinity and _exit are system calls
    // (async-signal-safe); the cpu_set_t is plain data on the stack and
    // the CPU number is checked below CPU_SETSIZE.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::getppid() != parent {
            libc::_exit(CHILD_FAILED);
        }
        if let Some(c) = cpu {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if c >= libc::CPU_SETSIZE as usize {
                libc::_exit(CHILD_FAILED);
            }
            libc::CPU_SET(c, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                word.store(POISON, Ordering::Release);
                libc::_exit(CHILD_FAILED);
            }
        }
    }
    let mut last = 0;
    for i in 0..total {
        // SAFETY: getppid is a system call with no preconditions.
        let alive = || unsafe { libc::getppid() } == parent;
        match wait_change(word, last, yield_each, &alive) {
            Some(v) if v == request_of(i) => {}
            _ => {
                word.store(POISON, Ordering::Release);
                // SAFETY: _exit ends the process without running anything.
                unsafe { libc::_exit(CHILD_FAILED) };
            }
        }
        last = reply_of(i);
        word.store(last, Ordering::Release);
    }
    // SAFETY: as above.
    unsafe { libc::_exit(0) }
}

/// The forked peer: killed (if still running) and reaped on drop.
struct Peer {
    pid: libc::pid_t,
    reaped: bool,
}

impl Peer {
    /// Waits up to [`PEER_TIMEOUT`] for the child to exit, then kills it;
    /// returns its wait status.
    fn reap(&mut self) -> anyhow::Result<i32> {
        let start = Instant::now();
        loop {
            let mut status = 0;
            // SAFETY: waitpid on our own child, status is a valid out-pointer.
            let r = unsafe { libc::waitpid(self.pid, &mut status, libc::WNOHANG) };
            if r == self.pid {
                self.reaped = true;
                return Ok(status);
            }
            if r < 0 {
                self.reaped = true;
                bail!("waitpid: {}", std::io::Error::last_os_error());
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
            // SAFETY: kill and a blocking waitpid on our own, unreaped
            // child (SIGKILL cannot be caught, so the wait ends).
            unsafe {
                libc::kill(self.pid, libc::SIGKILL);
                libc::waitpid(self.pid, std::ptr::null_mut(), 0);
            }
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
            // SAFETY: getpid has no preconditions.
            let parent = unsafe { libc::getpid() };
            // SAFETY: the child runs only `child`, which keeps to
            // async-signal-safe operations and ends in _exit.
            let pid = unsafe { libc::fork() };
            if pid < 0 {
                return Err(std::io::Error::last_os_error()).context("fork");
            }
            if pid == 0 {
                child(word, cpus.1, parent, total, yield_each);
            }
            let mut peer = Peer { pid, reaped: false };
            let d = timed(warmup, round_trips, |i| {
                let req = request_of(i);
                word.store(req, Ordering::Release);
                match wait_change(word, req, yield_each, &|| running(pid)) {
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
            if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
                bail!("the peer process failed (wait status {status:#x})");
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
        for cpus in crate::floor::test_util::placements() {
            let p = cacheline_processes(cpus, 1000).unwrap_or_else(|e| panic!("{cpus:?}: {e:#}"));
            crate::floor::test_util::sane(&p, 1000);
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
