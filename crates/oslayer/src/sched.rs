//! Scheduling of the calling thread: CPU affinity (rustix), yielding
//! (rustix), and the real-time policies (`sched_setscheduler` and
//! friends, which neither rustix nor nix wraps: plain libc here).

use std::io;
use std::time::Duration;

use rustix::thread::CpuSet;

/// Largest CPU number + 1 an affinity set can hold (`CPU_SETSIZE`).
pub const MAX_CPUS: usize = CpuSet::MAX_CPU;

/// A scheduling policy with its static priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// SCHED_OTHER (the time-sharing default; priority 0).
    Other,
    /// SCHED_FIFO at this priority (1 to 99).
    Fifo(i32),
    /// SCHED_RR at this priority (1 to 99).
    Rr(i32),
}

impl Policy {
    /// The kernel's policy number and priority.
    pub fn raw(self) -> (i32, i32) {
        match self {
            Policy::Other => (libc::SCHED_OTHER, 0),
            Policy::Fifo(p) => (libc::SCHED_FIFO, p),
            Policy::Rr(p) => (libc::SCHED_RR, p),
        }
    }
}

fn cpu_set(cpus: &[usize]) -> io::Result<CpuSet> {
    let mut set = CpuSet::new();
    for &c in cpus {
        if c >= MAX_CPUS {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("CPU {c} is beyond CPU_SETSIZE"),
            ));
        }
        set.set(c);
    }
    Ok(set)
}

/// Restricts the calling thread to the CPUs `cpus` (sched_setaffinity);
/// a CPU number at or beyond [`MAX_CPUS`] is `InvalidInput`.
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    let set = cpu_set(cpus)?;
    Ok(rustix::thread::sched_setaffinity(None, &set)?)
}

/// The CPUs the calling thread may run on (sched_getaffinity), ascending.
pub fn affinity() -> io::Result<Vec<usize>> {
    let set = rustix::thread::sched_getaffinity(None)?;
    Ok((0..MAX_CPUS).filter(|&c| set.is_set(c)).collect())
}

/// Gives up the CPU (sched_yield).
#[inline]
pub fn yield_now() {
    rustix::thread::sched_yield();
}

/// Sets the calling thread's policy and priority (sched_setscheduler).
pub fn set_policy(policy: Policy) -> io::Result<()> {
    let (pol, prio) = policy.raw();
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: `param` is a valid sched_param for the duration of the call;
    // pid 0 is the calling thread. (Neither rustix nor nix wraps this.)
    if unsafe { libc::sched_setscheduler(0, pol, &param) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The calling thread's policy and priority (sched_getscheduler and
/// sched_getparam); a policy other than FIFO or RR reads as `Other`.
pub fn policy() -> io::Result<Policy> {
    // SAFETY: pid 0 is the calling thread; no memory is passed.
    let pol = unsafe { libc::sched_getscheduler(0) };
    if pol < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut p = libc::sched_param { sched_priority: 0 };
    // SAFETY: `p` is a valid, writable sched_param.
    if unsafe { libc::sched_getparam(0, &mut p) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(match pol {
        libc::SCHED_FIFO => Policy::Fifo(p.sched_priority),
        libc::SCHED_RR => Policy::Rr(p.sched_priority),
        _ => Policy::Other,
    })
}

/// The SCHED_RR time slice of the calling thread (sched_rr_get_interval).
pub fn rr_interval() -> io::Result<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: pid 0 is the calling thread; `ts` is a valid, writable timespec.
    if unsafe { libc::sched_rr_get_interval(0, &mut ts) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` on a fresh thread so that affinity and policy changes do
    /// not leak into other tests.
    fn on_thread<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::spawn(f).join().unwrap()
    }

    #[test]
    fn set_affinity_restricts_and_affinity_reads_it_back() {
        on_thread(|| {
            let all = affinity().unwrap();
            assert!(!all.is_empty());
            let one = *all.last().unwrap();
            set_affinity(&[one]).unwrap();
            assert_eq!(affinity().unwrap(), vec![one]);
            assert!(set_affinity(&[MAX_CPUS]).is_err());
        });
    }

    #[test]
    fn a_pinned_thread_runs_on_its_cpu() {
        on_thread(|| {
            let one = *affinity().unwrap().last().unwrap();
            set_affinity(&[one]).unwrap();
            yield_now();
            assert_eq!(crate::cpu::current_cpu().saturating_sub(1) as usize, one);
        });
    }

    #[test]
    fn policy_raw_is_the_kernels_numbering() {
        assert_eq!(Policy::Other.raw(), (libc::SCHED_OTHER, 0));
        assert_eq!(Policy::Fifo(5).raw(), (libc::SCHED_FIFO, 5));
        assert_eq!(Policy::Rr(7).raw(), (libc::SCHED_RR, 7));
    }

    /// Rounds of [`other_runs_across`].
    const ROUNDS: usize = 100;

    /// On one CPU, at SCHED_FIFO 1 (no time slices: a thread keeps the CPU
    /// until it blocks or yields), a second thread at the same priority
    /// bumps a counter and yields (rustix's `sched_yield` itself, so that
    /// it never keeps the CPU whatever `give_up` is) in a loop; this thread
    /// calls `give_up` `ROUNDS` times and returns, for each call, whether
    /// the other thread ran during it (the counter moved). With a real
    /// yield the other thread must run every time (POSIX: the caller goes
    /// to the tail of its priority's queue); with a call that keeps the
    /// CPU it can never run, so the answer is event-driven both ways, not
    /// timed. `Err(EPERM)` without the right to SCHED_FIFO.
    fn other_runs_across(give_up: fn()) -> io::Result<Vec<bool>> {
        use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
        use std::sync::{mpsc, Arc};
        let one = *affinity()?.last().unwrap_or(&0);
        set_affinity(&[one])?;
        set_policy(Policy::Fifo(1))?;
        let count = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = mpsc::channel();
        let (c, s) = (Arc::clone(&count), Arc::clone(&stop));
        // Inherits this thread's CPU and SCHED_FIFO 1.
        let other = std::thread::spawn(move || {
            let _ = ready_tx.send(());
            while !s.load(Ordering::SeqCst) {
                c.fetch_add(1, Ordering::SeqCst);
                rustix::thread::sched_yield();
            }
        });
        // Blocking here lets the other thread start; it then runs until
        // its first `give_up`, this thread waiting at the queue's tail.
        let started = ready.recv().is_ok();
        let mut ran = Vec::with_capacity(ROUNDS);
        for _ in 0..ROUNDS {
            let before = count.load(Ordering::SeqCst);
            give_up();
            ran.push(count.load(Ordering::SeqCst) != before);
        }
        // Stop the other thread before judging, so that a failed check
        // never leaves a real-time thread spinning on this CPU.
        stop.store(true, Ordering::SeqCst);
        let joined = other.join().is_ok();
        assert!(started && joined, "the other thread did not run to its end");
        Ok(ran)
    }

    /// A no-op: what `yield_now` would be if it did not give up the CPU.
    fn keep_the_cpu() {}

    /// Runs `other_runs_across(give_up)` on its own thread; `None` (with
    /// the reason printed) when SCHED_FIFO is refused and CI is not set.
    fn yields_seen(give_up: fn()) -> Option<Vec<bool>> {
        // One at a time: the two tests' threads would share the CPU.
        static ONE: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _one = ONE.lock().unwrap_or_else(|e| e.into_inner());
        match on_thread(move || other_runs_across(give_up)) {
            Ok(ran) => Some(ran),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "sched_yield's test needs SCHED_FIFO (CAP_SYS_NICE; CI is set)"
                );
                eprintln!("skipped: sched_yield's test needs SCHED_FIFO (CAP_SYS_NICE): {e}");
                None
            }
            Err(e) => panic!("setting up the yield test: {e}"),
        }
    }

    #[test]
    fn yield_now_lets_an_equal_fifo_thread_on_its_cpu_run() {
        if let Some(ran) = yields_seen(yield_now) {
            let idle = ran.iter().filter(|&&r| !r).count();
            assert_eq!(idle, 0, "{idle} of {ROUNDS} yields let nobody run");
        }
    }

    /// The check above can fail: a "yield" that keeps the CPU never lets
    /// the other thread run.
    #[test]
    fn a_call_that_keeps_the_cpu_lets_nobody_run() {
        if let Some(ran) = yields_seen(keep_the_cpu) {
            let ran = ran.iter().filter(|&&r| r).count();
            assert_eq!(
                ran, 0,
                "the other thread ran during {ran} of {ROUNDS} calls"
            );
        }
    }

    #[test]
    fn set_policy_round_trips_or_is_refused() {
        on_thread(|| {
            assert_eq!(policy().unwrap(), Policy::Other);
            match set_policy(Policy::Rr(3)) {
                Ok(()) => assert_eq!(policy().unwrap(), Policy::Rr(3)),
                Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM)),
            }
            assert!(set_policy(Policy::Fifo(1000)).is_err());
        });
    }

    #[test]
    fn policy_reads_other_by_default() {
        on_thread(|| assert_eq!(policy().unwrap(), Policy::Other));
    }

    #[test]
    fn rr_interval_is_positive_under_rr() {
        on_thread(|| {
            if set_policy(Policy::Rr(1)).is_ok() {
                assert!(rr_interval().unwrap() > Duration::ZERO);
            } else {
                rr_interval().unwrap();
            }
        });
    }
}
