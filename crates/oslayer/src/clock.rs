//! Clocks and sleeps: `clock_gettime`/`clock_getres` (glibc's, through the
//! vDSO), `clock_nanosleep` absolute and `nanosleep` relative (rustix).
//!
//! The clock is read through libc rather than rustix: rustix finds the
//! vDSO itself by walking the auxiliary vector's ELF image, which valgrind
//! does not map as the kernel does (bytecodealliance/rustix#1559: every
//! program died at its first clock read under callgrind), while glibc's
//! lookup is the one valgrind is built to serve. The cost is the same vDSO
//! call.

use std::io;
use std::time::Duration;

use rustix::time::{ClockId, Timespec};

/// The clocks msgbench reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clock {
    /// CLOCK_MONOTONIC.
    Monotonic,
    /// CLOCK_MONOTONIC_COARSE (the tick-resolution clock).
    MonotonicCoarse,
    /// CLOCK_REALTIME.
    Realtime,
    /// CLOCK_THREAD_CPUTIME_ID: CPU time of the calling thread.
    ThreadCpu,
    /// CLOCK_PROCESS_CPUTIME_ID: CPU time of the whole process.
    ProcessCpu,
}

impl Clock {
    #[inline(always)]
    fn id(self) -> ClockId {
        match self {
            Clock::Monotonic => ClockId::Monotonic,
            Clock::MonotonicCoarse => ClockId::MonotonicCoarse,
            Clock::Realtime => ClockId::Realtime,
            Clock::ThreadCpu => ClockId::ThreadCPUTime,
            Clock::ProcessCpu => ClockId::ProcessCPUTime,
        }
    }

    /// The clock's id as libc names it.
    #[inline(always)]
    fn raw(self) -> libc::clockid_t {
        match self {
            Clock::Monotonic => libc::CLOCK_MONOTONIC,
            Clock::MonotonicCoarse => libc::CLOCK_MONOTONIC_COARSE,
            Clock::Realtime => libc::CLOCK_REALTIME,
            Clock::ThreadCpu => libc::CLOCK_THREAD_CPUTIME_ID,
            Clock::ProcessCpu => libc::CLOCK_PROCESS_CPUTIME_ID,
        }
    }
}

/// `clock_gettime(clock)` through glibc (see the module's header). The
/// clocks of `Clock` always exist, so the call cannot fail.
#[inline(always)]
pub(crate) fn read(clock: Clock) -> Timespec {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec for the call to write; the clock id
    // is one of the fixed clocks every Linux kernel has.
    unsafe { libc::clock_gettime(clock.raw(), &mut ts) };
    Timespec {
        tv_sec: ts.tv_sec as _,
        tv_nsec: ts.tv_nsec as _,
    }
}

#[inline(always)]
fn ns_of(ts: Timespec) -> u64 {
    (ts.tv_sec as u64)
        .wrapping_mul(1_000_000_000)
        .wrapping_add(ts.tv_nsec as u64)
}

#[inline(always)]
fn timespec_of_ns(ns: u64) -> Timespec {
    Timespec {
        tv_sec: (ns / 1_000_000_000) as _,
        tv_nsec: (ns % 1_000_000_000) as _,
    }
}

/// `d` as a timespec (seconds saturate).
#[inline]
pub fn timespec(d: Duration) -> Timespec {
    Timespec {
        tv_sec: i64::try_from(d.as_secs()).unwrap_or(i64::MAX) as _,
        tv_nsec: d.subsec_nanos() as _,
    }
}

/// `clock` now, in ns (one vDSO read, no system call for the monotonic
/// and realtime clocks; no allocation).
#[inline(always)]
pub fn now_ns(clock: Clock) -> u64 {
    ns_of(read(clock))
}

/// CLOCK_MONOTONIC now, in ns.
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    now_ns(Clock::Monotonic)
}

/// The resolution of `clock`, in ns (clock_getres).
pub fn resolution_ns(clock: Clock) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: as in `read`: a valid timespec, a clock every kernel has.
    unsafe { libc::clock_getres(clock.raw(), &mut ts) };
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_REALTIME now plus `d`: the absolute deadline the POSIX timed
/// calls (`sem_timedwait`, `mq_timedreceive`, ...) take.
pub fn realtime_deadline(d: Duration) -> Timespec {
    let now = read(Clock::Realtime);
    let d = timespec(d);
    let mut sec = now.tv_sec.saturating_add(d.tv_sec);
    let mut nsec = now.tv_nsec + d.tv_nsec;
    if nsec >= 1_000_000_000 {
        nsec -= 1_000_000_000;
        sec = sec.saturating_add(1);
    }
    Timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

/// Sleeps until `deadline_ns` on `clock` (clock_nanosleep with
/// TIMER_ABSTIME). An interruption returns `ErrorKind::Interrupted`: the
/// caller decides whether to sleep again.
#[inline]
pub fn sleep_until_ns(clock: Clock, deadline_ns: u64) -> io::Result<()> {
    Ok(rustix::thread::clock_nanosleep_absolute(
        clock.id(),
        &timespec_of_ns(deadline_ns),
    )?)
}

/// Sleeps `d` with nanosleep, restarted with the remainder on EINTR (at
/// most 100 times).
pub fn sleep(d: Duration) {
    use rustix::thread::NanosleepRelativeResult as R;
    let mut req = timespec(d);
    for _ in 0..100 {
        match rustix::thread::nanosleep(&req) {
            R::Interrupted(rem) => req = rem,
            R::Ok | R::Err(_) => return,
        }
    }
}

/// CPU time in ns of another process `pid`, all its threads (its CPU-time
/// clock from `clock_getcpuclockid`, read with `clock_gettime`): what it
/// has cost so far, to the nanosecond, without its cooperation. Fails
/// with `ESRCH` once it is gone, `EPERM` for a process we may not watch.
pub fn process_cpu_ns_of(pid: i32) -> io::Result<u64> {
    let mut id: libc::clockid_t = 0;
    // SAFETY: `id` is a valid place for the clock id; the call only
    // writes it and returns an error number, never sets errno.
    let rc = unsafe { libc::clock_getcpuclockid(pid, &mut id) };
    if rc != 0 {
        return Err(io::Error::from_raw_os_error(rc));
    }
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write; `id` came from the kernel.
    if unsafe { libc::clock_gettime(id, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64)
}

/// CPU time in ns, user and system, of every child process of this one
/// that has ended and been waited for (`getrusage(RUSAGE_CHILDREN)`,
/// microsecond resolution): what helper processes cost once reaped.
pub fn reaped_children_cpu_ns() -> u64 {
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid rusage to write; RUSAGE_CHILDREN cannot
    // fail with a valid pointer.
    if unsafe { libc::getrusage(libc::RUSAGE_CHILDREN, &mut ru) } != 0 {
        return 0;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(ru.ru_utime) + us(ru.ru_stime)) * 1000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reaped_child_counts_its_cpu() {
        let before = reaped_children_cpu_ns();
        let status = std::process::Command::new("sh")
            .args(["-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"])
            .status()
            .expect("sh");
        assert!(status.success());
        assert!(reaped_children_cpu_ns() > before);
    }

    #[test]
    fn now_ns_is_monotonic_on_monotonic() {
        let a = now_ns(Clock::Monotonic);
        let b = monotonic_ns();
        assert!(b >= a && a > 0);
        assert!(now_ns(Clock::Realtime) > 1_500_000_000 * 1_000_000_000);
    }

    #[test]
    fn thread_cpu_clock_advances_with_work() {
        let a = now_ns(Clock::ThreadCpu);
        let mut x = 0u64;
        while now_ns(Clock::ThreadCpu) == a {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(now_ns(Clock::ProcessCpu) >= now_ns(Clock::ThreadCpu));
    }

    #[test]
    fn monotonic_ns_matches_now_ns() {
        let a = monotonic_ns();
        assert!(now_ns(Clock::Monotonic) >= a);
    }

    #[test]
    fn resolution_is_positive_and_coarse_is_coarser() {
        let fine = resolution_ns(Clock::Monotonic);
        let coarse = resolution_ns(Clock::MonotonicCoarse);
        assert!(fine > 0 && coarse >= fine);
    }

    #[test]
    fn realtime_deadline_is_ahead_and_normalised() {
        let now = now_ns(Clock::Realtime);
        let d = realtime_deadline(Duration::from_millis(1500));
        assert!((0..1_000_000_000).contains(&d.tv_nsec));
        assert!(ns_of(d) >= now + 1_500_000_000);
    }

    #[test]
    fn timespec_splits_and_saturates() {
        let t = timespec(Duration::new(3, 7));
        assert_eq!((t.tv_sec, t.tv_nsec), (3, 7));
        assert_eq!(timespec(Duration::MAX).tv_sec, i64::MAX as _);
    }

    #[test]
    fn sleep_until_ns_does_not_wake_early() {
        let end = monotonic_ns() + 2_000_000;
        sleep_until_ns(Clock::Monotonic, end).unwrap();
        assert!(monotonic_ns() >= end);
        // A deadline in the past returns at once.
        sleep_until_ns(Clock::Monotonic, 0).unwrap();
    }

    #[test]
    fn sleep_sleeps_at_least_the_duration() {
        let t = std::time::Instant::now();
        sleep(Duration::from_millis(2));
        assert!(t.elapsed() >= Duration::from_millis(2));
    }

    #[test]
    fn another_process_cpu_clock_reads_and_a_dead_one_fails() {
        let me = std::process::id() as i32;
        let mut x = 0u64;
        for i in 0..2_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        assert!(super::process_cpu_ns_of(me).expect("own process") > 0);
        let mut child = std::process::Command::new("true").spawn().expect("true");
        let pid = child.id() as i32;
        child.wait().expect("reaped");
        assert!(super::process_cpu_ns_of(pid).is_err());
    }
}
