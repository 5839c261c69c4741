//! Scheduling for the validation runs, done the way the reference tools do
//! them, on the shared primitives of [`crate::measure::sched`] and
//! [`crate::measure::placement`].

use std::fs::File;

use anyhow::{bail, Context, Result};

use crate::measure::{placement, sched};

/// Puts the calling thread in SCHED_FIFO at `prio`.
pub fn set_fifo(prio: i32) -> Result<()> {
    sched::set_thread_fifo(prio).with_context(|| format!("SCHED_FIFO priority {prio}"))
}

/// Checks, on a throw-away thread, that SCHED_FIFO at `prio` is allowed;
/// the error names `--fifo` and what is missing.
pub fn check_fifo_allowed(prio: i32) -> Result<()> {
    let r = std::thread::spawn(move || set_fifo(prio))
        .join()
        .unwrap_or_else(|_| bail!("the SCHED_FIFO check panicked"));
    if let Err(e) = r {
        bail!("--fifo {prio}: cannot use SCHED_FIFO ({e:#}); it needs CAP_SYS_NICE (run as root) or an RLIMIT_RTPRIO of at least {prio}");
    }
    Ok(())
}

/// Restricts the calling thread (and the threads it creates later) to
/// `cpus`.
pub fn set_affinity(cpus: &[usize]) -> Result<()> {
    placement::restrict_current_thread(cpus).with_context(|| format!("sched_setaffinity {cpus:?}"))
}

/// Locks the process's memory (what `-m` of cyclictest and every rt-tests
/// tool do); true when it worked.
pub fn lock_memory() -> bool {
    sched::lock_memory().is_ok()
}

/// A held `/dev/cpu_dma_latency` request of 0 us (what cyclictest does):
/// the CPUs stay out of deep idle states while it is open.
pub struct DmaLatency {
    _file: Option<File>,
}

impl DmaLatency {
    /// Requests 0 us; without the device or the right, nothing is held.
    pub fn request() -> DmaLatency {
        DmaLatency {
            _file: sched::request_dma_latency(0).ok(),
        }
    }
}
