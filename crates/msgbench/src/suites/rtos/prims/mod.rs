//! The synchronisation primitives the SEM and MUT tests exercise:
//! counting semaphores behind one [`semaphore::Semaphore`] trait (POSIX,
//! System V, futex, and a deliberately FIFO-waking test double), and
//! pthread mutexes with or without priority inheritance
//! ([`pi_mutex::PthreadMutex`]); plus the small real-time helpers the
//! tests share ([`rt_thread`]).

pub mod pi_mutex;
pub mod semaphore;

use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Result};

use crate::measure::placement::pin_current_thread;
use crate::measure::sched::set_thread_fifo;

pub use super::rt::join;
pub use super::rtthread::test_cpu;

/// Starts `f` on a thread at SCHED_FIFO `prio` pinned to `cpu` (see
/// [`super::rt::enter`] for the order).
pub fn rt_thread<T, F>(name: &str, prio: i32, cpu: usize, f: F) -> Result<JoinHandle<Result<T>>>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    super::rt::spawn(name, Some(prio), Some(cpu), f)
}

/// Runs `f` as the controller of a priority test whose real-time threads
/// all run on `cpu`: on another CPU at normal priority when there is one,
/// otherwise on `cpu` at SCHED_FIFO 95, above every test thread, so the
/// controller can always run (and the test threads it starts begin above
/// their final priority).
pub fn controlled<T, F>(cpus: &[usize], cpu: usize, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let other = cpus.iter().copied().find(|&c| c != cpu);
    let h = std::thread::Builder::new()
        .name("rt-controller".into())
        .spawn(move || {
            match other {
                Some(c) => pin_current_thread(c).map_err(|e| anyhow!("pin to CPU {c}: {e}"))?,
                None => {
                    set_thread_fifo(95).map_err(|e| anyhow!("SCHED_FIFO 95: {e}"))?;
                    pin_current_thread(cpu).map_err(|e| anyhow!("pin to CPU {cpu}: {e}"))?;
                }
            }
            f()
        })
        .map_err(|e| anyhow!("start the controller: {e}"))?;
    join(h)
}

/// Waits (sleeping 100 us at a time) until `cond` holds or `limit` passes;
/// true when it held.
pub fn wait_until(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let end = std::time::Instant::now() + limit;
    loop {
        if cond() {
            return true;
        }
        if std::time::Instant::now() >= end {
            return false;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
}

/// Serialises the unit tests that use SCHED_FIFO on one CPU, so two of
/// them never share it.
#[cfg(test)]
pub static RT_TEST_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// For unit tests that need SCHED_FIFO: true when it is available;
/// otherwise prints why the test is skipped (or fails under `CI`). The
/// line goes straight to stderr, past the test harness's capture, so the
/// skip is seen in a plain `cargo test` run.
#[cfg(test)]
pub fn fifo_or_skip() -> bool {
    if super::rt::fifo_allowed() {
        return true;
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    assert!(
        std::env::var_os("CI").is_none(),
        "CI is set, so {test} may not be skipped: needs CAP_SYS_NICE"
    );
    use std::io::Write;
    // Best effort: a closed stderr must not fail the test.
    let _ = writeln!(std::io::stderr(), "skipped {test}: needs CAP_SYS_NICE");
    false
}
