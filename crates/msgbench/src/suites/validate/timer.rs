//! cyclictest's equivalent: timer wake-up latency.
//!
//! One thread, pinned, SCHED_FIFO when asked, sleeps with
//! `clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME)` to the next multiple
//! of the interval (first wake-up one interval after the start) and
//! records how late each wake-up is, as cyclictest does. Each sleep is
//! bounded by the interval: nothing spins, and the run ends after its
//! loops.

use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::handover::Latency;
use super::sched::set_fifo;
use crate::measure::clock::monotonic_ns;
use crate::measure::placement::pin_current_thread;

/// Runs `loops` periodic wake-ups of `interval` on `cpu`.
pub fn run(cpu: usize, fifo: Option<i32>, loops: u64, interval: Duration) -> Result<Latency> {
    anyhow::ensure!(loops > 0, "at least one loop is needed");
    let period = interval.as_nanos() as u64;
    std::thread::scope(|s| {
        s.spawn(|| -> Result<Latency> {
            pin_current_thread(cpu).with_context(|| format!("pinning to CPU {cpu}"))?;
            if let Some(p) = fifo {
                set_fifo(p)?;
            }
            let mut samples = Vec::with_capacity(loops as usize);
            let mut next = monotonic_ns();
            for _ in 0..loops {
                next += period;
                loop {
                    match oslayer::clock::sleep_until_ns(oslayer::clock::Clock::Monotonic, next) {
                        Ok(()) => break,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => bail!("clock_nanosleep: error {}", e.raw_os_error().unwrap_or(0)),
                    }
                }
                samples.push(monotonic_ns().saturating_sub(next));
            }
            Latency::from_ns(&samples).ok_or_else(|| anyhow!("no sample"))
        })
        .join()
        .unwrap_or_else(|_| Err(anyhow!("the timer thread panicked")))
    })
}
