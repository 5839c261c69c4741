//! What a row is given by the run ([`RowContext`]), whichever kind of
//! row it is (one client, idle clients beside it, active clients).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use msgpass::{Namespace, Options};

use super::options::Plan;
use super::server::Fault;
use super::stop::Stop;
use crate::measure::clock::Clock;
use crate::measure::peers::Peer;

/// Longest the server may take to stop once the client is done.
pub const SERVER_STOP_LIMIT: Duration = Duration::from_secs(3);

/// What a row needs from the run.
pub struct RowContext<'a> {
    /// The run's private namespace.
    pub ns: &'a Namespace,
    /// msgpass tuning (wait for the endpoint, spin budget).
    pub opts: &'a Options,
    /// Target seconds per measured run.
    pub row_secs: f64,
    /// Timestamp source.
    pub clock: Clock,
    /// Set by SIGINT/SIGTERM.
    pub stop: &'a Arc<AtomicBool>,
    /// Test hook: the reply every server breaks.
    pub fault: Option<Fault>,
    /// The checked options (warm-up, repeats, timing, rate).
    pub plan: &'a Plan,
    /// Whether the row measures one-way throughput after its latency
    /// runs (not in the second and later passes of `-r N`, see
    /// `interleave.rs`).
    pub throughput: bool,
    /// Round trips of each latency run, as the row's first pass sized
    /// them (`None`: sized from the warm-up's rate; see `interleave.rs`).
    pub sized: Option<u64>,
}

impl RowContext<'_> {
    /// The next line of helper process `p` within `limit`;
    /// [`Stop::Interrupted`] once the run's stop flag is set.
    pub fn line_of(&self, p: &mut Peer, limit: Duration) -> Result<String, Stop> {
        match p.line_unless(limit, self.stop) {
            Ok(Some(line)) => Ok(line),
            Ok(None) => Err(Stop::Interrupted),
            Err(e) => Err(Stop::Failed(format!("{e:#}"))),
        }
    }

    /// Longest a row may take in all: its phases are capped by time (per
    /// repeat a warm-up of at most the longer of `--warmup` and a row and
    /// a latency run of 2 rows, or of `COUNT_CAP_SECS` with `--count`;
    /// throughput 2 rows), so only a call that
    /// never returns reaches this.
    pub fn hard_limit(&self) -> Duration {
        let warm = self.plan.warmup_secs.unwrap_or(0.0).max(self.row_secs);
        let run = match self.plan.count {
            Some(_) => super::client::COUNT_CAP_SECS,
            None => self.row_secs * 2.0,
        };
        let per_repeat = warm + run;
        Duration::from_secs_f64(
            per_repeat * self.plan.repeats.max(1) as f64 + self.row_secs * 3.0 + 5.0,
        )
    }
}
