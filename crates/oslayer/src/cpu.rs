//! Which CPU the calling thread runs on.
//!
//! Hand-written over libc: glibc's `sched_getcpu` reads the rseq area the
//! kernel keeps up to date (no system call), where rustix calls `getcpu`;
//! it is on the hybrid waiters' per-message path.

/// The CPU this thread runs on, plus one (0 if unknown).
#[inline]
pub fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    if c < 0 {
        0
    } else {
        c as u32 + 1
    }
}

/// The one CPU the calling thread may run on, when its affinity allows
/// exactly one (it is pinned); `None` otherwise.
pub fn pinned_cpu() -> Option<u32> {
    match crate::sched::affinity().ok()?.as_slice() {
        [one] => u32::try_from(*one).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn names_a_cpu_that_exists() {
        let c = super::current_cpu();
        let n = std::thread::available_parallelism().map_or(1024, |n| n.get()) as u32;
        assert!(c >= 1, "sched_getcpu works on Linux");
        // available_parallelism may be lowered by affinity or cgroups, so
        // only a generous bound is checked.
        assert!(c <= 4096.max(n));
    }

    #[test]
    fn a_pinned_thread_knows_its_cpu() {
        let cpu = super::current_cpu() - 1;
        std::thread::spawn(move || {
            crate::sched::set_affinity(&[cpu as usize]).unwrap();
            assert_eq!(super::pinned_cpu(), Some(cpu));
        })
        .join()
        .unwrap();
    }
}
