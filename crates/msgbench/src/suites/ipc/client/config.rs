//! What the client of a row is given ([`ClientConfig`]), and the bounds
//! and helpers its runs share (message counts, clock ticks, the stop flag).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use msgpass::{Namespace, Options};

use super::super::row::{Api, Timing};
use super::super::stop::Stop;
use crate::measure::clock::Clock;

/// Fewest messages in a measured run (unless the time cap comes first).
const MIN_MESSAGES: u64 = 100;
/// Most messages in a measured run (bounds the sample memory: 16 MiB).
pub(crate) const MAX_MESSAGES: u64 = 2_000_000;
/// Fewest warm-up round trips (unless a whole row's time runs out).
pub(super) const MIN_WARMUP: u64 = 50;
/// A latency run of `--count` round trips stops after this long.
pub(crate) const COUNT_CAP_SECS: f64 = 120.0;
/// A measured run stops at this many times its target length.
pub(super) const CAP_FACTOR: f64 = 2.0;

/// What one client thread needs (owned: the thread may outlive a hung row).
pub struct ClientConfig {
    /// The row's private namespace.
    pub ns: Namespace,
    /// Endpoint name of the row's server.
    pub endpoint: String,
    /// Transport name.
    pub transport: String,
    /// The API measured.
    pub api: Api,
    /// msgpass tuning.
    pub opts: Options,
    /// Message size, bytes.
    pub size: usize,
    /// CPU to pin the client thread to.
    pub cpu: usize,
    /// Target seconds of each measured run.
    pub row_secs: f64,
    /// Timestamp source.
    pub clock: Clock,
    /// Set by SIGINT/SIGTERM.
    pub stop: Arc<AtomicBool>,
    /// Warm-up before each latency run, seconds (`None`: the default).
    pub warmup_secs: Option<f64>,
    /// Latency runs.
    pub repeats: usize,
    /// Whether a throughput run follows the latency runs.
    pub throughput: bool,
    /// Round trips of each latency run when an earlier pass of the row
    /// sized them (capped as a row is, unlike `count`).
    pub sized: Option<u64>,
    /// How latency runs are timed.
    pub timing: Timing,
    /// Open loop: messages per second.
    pub rate: Option<f64>,
    /// Throughput window asked for (`--window`).
    pub window: u32,
    /// A remote row's server (`msgbench serve ipc`): connect there over
    /// tcp instead of to `endpoint` in `ns`.
    pub remote: Option<std::net::SocketAddr>,
    /// `--count`: round trips in each latency run (`None`: sized from the
    /// warm-up's rate and `row_secs`).
    pub count: Option<u64>,
    /// The server's process when it is not this one (`--layout process`):
    /// its CPU time counts in the rows' "CPU all".
    pub server_pid: Option<i32>,
}

/// Messages for a run of `secs` at `rate`.
pub(super) fn target(rate: f64, secs: f64) -> u64 {
    ((rate * secs) as u64).clamp(MIN_MESSAGES, MAX_MESSAGES)
}

/// Clock ticks in `secs`.
pub(super) fn ticks(clock: &Clock, secs: f64) -> u64 {
    (secs * 1e6 * clock.ticks_per_us()) as u64
}

/// [`Stop::Interrupted`] once the run's stop flag is set.
pub(super) fn check_stop(cfg: &ClientConfig) -> Result<(), Stop> {
    if cfg.stop.load(Ordering::Relaxed) {
        return Err(Stop::Interrupted);
    }
    Ok(())
}
