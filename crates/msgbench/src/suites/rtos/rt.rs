//! Real-time helpers for the tests: threads started at a SCHED_FIFO
//! priority, pinned to a CPU.

use std::thread::JoinHandle;

use anyhow::{anyhow, Result};

use crate::measure::placement::pin_current_thread;
use crate::measure::sched::set_thread_fifo;

/// True when this process may use SCHED_FIFO (tried on a throw-away
/// thread, so the caller's policy is unchanged).
pub fn fifo_allowed() -> bool {
    std::thread::spawn(|| set_thread_fifo(1).is_ok())
        .join()
        .unwrap_or(false)
}

/// Puts the calling thread at SCHED_FIFO `prio` (when given), then on
/// `cpu` (when given). In that order: a thread pinned first would sit at
/// SCHED_OTHER on a CPU that a real-time thread keeps busy, and never get
/// to raise its priority.
pub fn enter(prio: Option<i32>, cpu: Option<usize>) -> Result<()> {
    if let Some(p) = prio {
        set_thread_fifo(p).map_err(|e| anyhow!("SCHED_FIFO {p}: {e}"))?;
    }
    if let Some(c) = cpu {
        pin_current_thread(c).map_err(|e| anyhow!("pin to CPU {c}: {e}"))?;
    }
    Ok(())
}

/// Starts `f` on a new thread that first enters `prio` and `cpu`
/// (see [`enter`]); a failure to enter is `f`'s error.
pub fn spawn<T, F>(
    name: &str,
    prio: Option<i32>,
    cpu: Option<usize>,
    f: F,
) -> Result<JoinHandle<Result<T>>>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            enter(prio, cpu)?;
            f()
        })
        .map_err(|e| anyhow!("start thread {name}: {e}"))
}

/// Joins a thread started by [`spawn`], turning a panic into an error.
pub fn join<T>(h: JoinHandle<Result<T>>) -> Result<T> {
    h.join().map_err(|_| anyhow!("a test thread panicked"))?
}
