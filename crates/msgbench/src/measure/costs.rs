//! What reading a clock and entering the kernel cost: tight loops of
//! `calls` back-to-back calls, timed as a whole with [`Instant`], reported
//! as nanoseconds per call (the loop's own cost included, which is a few
//! cycles).

use std::hint::black_box;
use std::time::Instant;

use super::clock::monotonic_ns;

/// Nanoseconds per call of `f`, over `calls` calls timed as one run.
fn per_call<T>(calls: u64, mut f: impl FnMut() -> T) -> f64 {
    let calls = calls.max(1);
    let t = Instant::now();
    for _ in 0..calls {
        black_box(f());
    }
    t.elapsed().as_nanos() as f64 / calls as f64
}

/// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO, ns per call.
pub fn clock_gettime_ns(calls: u64) -> f64 {
    per_call(calls, monotonic_ns)
}

/// `rdtsc`, ns per call; `None` where there is no TSC instruction (not
/// x86_64).
pub fn rdtsc_ns(calls: u64) -> Option<f64> {
    #[cfg(target_arch = "x86_64")]
    {
        Some(per_call(calls, crate::measure::clock::rdtsc))
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = calls;
        None
    }
}

/// The spin-wait hint (`pause` on x86-64, `yield`/`isb` on AArch64:
/// `std::hint::spin_loop`), ns per hint: the step of every spinning wait,
/// whose length varies tenfold between CPU generations (10 to 140 cycles
/// on x86), so the figure tells how finely a spinning waiter sees its
/// peer's write.
pub fn spin_hint_ns(calls: u64) -> f64 {
    per_call(calls, std::hint::spin_loop)
}

/// A trivial system call, `syscall(SYS_getppid)` (raw: the C library may
/// cache process ids, never a raw system call), ns per call.
pub fn syscall_ns(calls: u64) -> f64 {
    per_call(calls, raw_getppid)
}

/// One `syscall(SYS_getppid)`: the cheapest real system call, whose cost
/// IS the measurement (here and in MUT-P-ARN). Deliberately raw and kept
/// out of oslayer: the C library may cache process ids, and a wrapper
/// would change what is timed.
#[inline(always)]
pub(crate) fn raw_getppid() -> libc::c_long {
    // SAFETY: getppid takes no arguments, touches no memory and cannot fail.
    // libc: the raw system call is what is timed (see above).
    unsafe { libc::syscall(libc::SYS_getppid) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_cost_is_a_positive_figure() {
        for v in [clock_gettime_ns(1000), syscall_ns(1000), spin_hint_ns(1000)] {
            assert!(v.is_finite() && v > 0.0, "{v}");
        }
        if cfg!(target_arch = "x86_64") {
            let v = rdtsc_ns(1000).unwrap();
            assert!(v.is_finite() && v > 0.0, "{v}");
        }
    }

    #[test]
    fn zero_calls_counts_as_one() {
        assert!(syscall_ns(0).is_finite());
    }
}
