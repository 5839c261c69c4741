//! A reference program's run beside a suite's own rows: another
//! project's benchmark, built and run on this machine in the same run,
//! its figures as it printed them, and the suite's row it stands beside.
//! Kept in the envelope as `peers`.

use serde::Serialize;

/// How a reference program's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PeerStatus {
    /// It printed its figures.
    Ok,
    /// It printed none before its time ran out, and was killed.
    Hung,
    /// It failed (an exit status, an error, output not understood).
    Failed,
}

/// One run of a reference program.
#[derive(Debug, Clone, Serialize)]
pub struct PeerRun {
    /// The program as its project names it, e.g. `ipc-bench domain`.
    pub program: String,
    /// Where it comes from (repository and commit).
    pub upstream: String,
    /// Its command line as run.
    pub command: String,
    /// msgbench's transport on the same mechanism.
    pub transport: String,
    /// Message size, bytes.
    pub size: usize,
    /// Placement (`same`, `cross`) as msgbench's rows name it.
    pub placement: String,
    /// Round trips it was asked for.
    pub count: u64,
    /// How it ended.
    pub status: PeerStatus,
    /// Why it is not ok.
    pub reason: Option<String>,
    /// Its mean round trip, ns.
    pub mean_ns: Option<f64>,
    /// Its smallest round trip, ns, where it prints one.
    pub min_ns: Option<f64>,
    /// Its largest round trip, ns, where it prints one.
    pub max_ns: Option<f64>,
    /// Its message rate, round trips per second, where it prints one.
    pub rate_per_s: Option<f64>,
    /// The mean round trip of msgbench's row beside it (same transport,
    /// size and placement, two processes), ns.
    pub ours_mean_ns: Option<f64>,
    /// What it does differently from msgbench's row, one line.
    pub differs: String,
}
