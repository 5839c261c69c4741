//! The rows of `msgbench adder`, as stored in the envelope's `rows`.

use serde::{Deserialize, Serialize};

use crate::suites::{RowStatus, SuiteRow};

use super::{Mode, Placement};
use crate::devctl::client::ClientRun;
use crate::devctl::options::Api;
use crate::measure::hist::LatencySummary;

/// One row: a transport, placement, mode and X, with its figures or why
/// it failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// Transport name.
    pub transport: String,
    /// Pinned or unpinned.
    pub placement: Placement,
    /// Server layout.
    pub mode: Mode,
    /// X: client threads and server threads (instances, or a pool's
    /// threads).
    pub threads: u32,
    /// The msgpass API client and servers used: `in-place` (the default)
    /// or `copy` (the rows `--copy` adds).
    pub api: Api,
    /// Why the row failed (a wrong reply or final value, a failed call, a
    /// server that would not start or stop cleanly); `null` when it ran.
    pub error: Option<String>,
    /// The figures, flattened into the row; absent when it failed.
    #[serde(flatten)]
    pub measured: Option<Measured>,
}

/// The figures of a row that ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Measured {
    /// Round trips per thread.
    pub samples_per_thread: u64,
    /// Busy during the idle baseline, % summed over CPUs.
    pub idle_pct: Option<f64>,
    /// Busy during the run, % summed over CPUs; `None` (JSON `null`) when
    /// /proc/stat could not be read.
    pub busy_pct: Option<f64>,
    /// CPU stolen by the hypervisor during the run, %; `None` as `busy_pct`.
    pub steal_pct: Option<f64>,
    /// Mean thread duration, ms.
    pub ave_duration_ms: f64,
    /// Samples / mean duration (the seed's "Rate").
    pub rate_per_thread: f64,
    /// All round trips / wall time of the whole run.
    pub aggregate_rate: f64,
    /// Aggregate rate at X over X times the rate at X = 1 (same
    /// transport, placement, mode and API).
    pub efficiency: Option<f64>,
    /// All threads' latencies merged.
    pub latency: Option<LatencySummary>,
    /// The time limit stopped a thread before its sample count.
    pub cut: bool,
    /// The full client run (the last one when the row was run again).
    pub run: ClientRun,
    /// Earlier runs of this row that were too short and run again (see
    /// docs/methodology.md, "Row size"), oldest first; empty when the
    /// first measured run was kept.
    #[serde(default)]
    pub discarded_runs: Vec<DiscardedRun>,
}

/// A measured run of a row that was thrown away and run again (JSON
/// `discarded_runs`), with its figures and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DiscardedRun {
    /// Round trips per thread.
    pub samples_per_thread: u64,
    /// Mean thread duration, ms.
    pub ave_duration_ms: f64,
    /// Samples / mean duration.
    pub rate_per_thread: f64,
    /// All round trips / wall time of the run.
    pub aggregate_rate: f64,
    /// Busy during the run, % summed over CPUs; `None` when unmeasured.
    pub busy_pct: Option<f64>,
    /// All threads' latencies merged.
    pub latency: Option<LatencySummary>,
    /// Why it was discarded, e.g. "lasted 12 ms, under a third of
    /// --row-secs 1 (333 ms)".
    pub reason: String,
}

impl Row {
    /// True when the row failed.
    pub fn failed(&self) -> bool {
        self.error.is_some()
    }

    /// Scaling efficiency, when measured.
    pub fn efficiency(&self) -> Option<f64> {
        self.measured.as_ref().and_then(|m| m.efficiency)
    }
}

impl Measured {
    /// The figures of `run` at X threads; `base_rate` is the per-thread
    /// rate of the X = 1 row it scales against.
    pub fn new(x: u32, run: ClientRun, idle_pct: Option<f64>, base_rate: Option<f64>) -> Measured {
        let efficiency = match (x, base_rate) {
            (1, _) => Some(1.0),
            (_, Some(b)) if b > 0.0 => Some(run.aggregate_rate / (x as f64 * b)),
            _ => None,
        };
        Measured {
            samples_per_thread: run.samples,
            idle_pct,
            busy_pct: run.busy.map(|b| b.busy_pct),
            steal_pct: run.busy.map(|b| b.steal_pct),
            ave_duration_ms: run.ave_duration_ns / 1e6,
            rate_per_thread: run.rate_per_thread,
            aggregate_rate: run.aggregate_rate,
            efficiency,
            latency: run.latency.clone(),
            cut: run.threads.iter().any(|t| t.cut),
            run,
            discarded_runs: Vec::new(),
        }
    }
}

impl DiscardedRun {
    /// `old`'s figures, thrown away for `reason`.
    pub fn new(old: &ClientRun, reason: String) -> DiscardedRun {
        DiscardedRun {
            samples_per_thread: old.samples,
            ave_duration_ms: old.ave_duration_ns / 1e6,
            rate_per_thread: old.rate_per_thread,
            aggregate_rate: old.aggregate_rate,
            busy_pct: old.busy.map(|b| b.busy_pct),
            latency: old.latency.clone(),
            reason,
        }
    }
}

impl SuiteRow for Row {
    fn status(&self) -> RowStatus {
        match self.failed() {
            true => RowStatus::Failed,
            false => RowStatus::Ok,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devctl::client::ClientRun;

    fn row(error: Option<&str>) -> Row {
        let run = ClientRun {
            transport: "uds".into(),
            api: Api::InPlace,
            samples: 1000,
            threads: Vec::new(),
            busy: None,
            ave_duration_ns: 1e7,
            rate_per_thread: 1e5,
            aggregate_rate: 1.9e5,
            latency: None,
            histogram: Vec::new(),
        };
        Row {
            transport: "uds".into(),
            placement: Placement::Pinned,
            mode: Mode::Pool,
            threads: 2,
            api: Api::InPlace,
            error: error.map(Into::into),
            measured: error
                .is_none()
                .then(|| Measured::new(2, run, None, Some(1e5))),
        }
    }

    /// A row reads back as it was written, measured or failed (a failed
    /// row has no figures to flatten in).
    #[test]
    fn rows_read_back_as_written() {
        for error in [None, Some("wrong final value")] {
            let written = serde_json::to_value(row(error)).unwrap();
            let read: Row = serde_json::from_value(written.clone()).unwrap();
            assert_eq!(read.error.as_deref(), error);
            assert_eq!(read.measured.is_some(), error.is_none());
            assert_eq!(serde_json::to_value(&read).unwrap(), written);
        }
        let m = Row::deserialize(serde_json::to_value(row(None)).unwrap()).unwrap();
        assert_eq!(m.efficiency(), Some(0.95));
    }
}
