//! What `msgbench ipc` measures, as kept in memory and in `--json`.

use serde::{Deserialize, Serialize};

use super::crowd::{ActiveRun, IdleCost};
use super::load::OtherLoad;
use crate::measure::hist::LatencySummary;
use crate::suites::{RowStatus, SuiteRow};

/// One row of the plan: what is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowSpec<'a> {
    /// Message size, bytes.
    pub size: usize,
    /// Where client and server run.
    pub placement: Placement,
    /// Whether the server is another process or a thread of this one.
    pub layout: Layout,
    /// Transport name as given.
    pub transport: &'a str,
    /// The API measured.
    pub api: Api,
    /// Idle clients beside the measured one (`--idle-clients`).
    pub idle: Option<u32>,
    /// Active clients instead of the single measured one (`--clients`).
    pub clients: Option<u32>,
}

/// Where the client and server threads run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Both threads pinned to one CPU.
    Same,
    /// Client and server pinned to two different CPUs.
    Cross,
}

impl Placement {
    /// The option value (`same`, `cross`).
    pub fn name(self) -> &'static str {
        match self {
            Placement::Same => "same",
            Placement::Cross => "cross",
        }
    }
}

/// Whether a row's client and server are two processes or two threads of
/// one process (`--layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Layout {
    /// The server is a process of its own (`msgbench ipc-peer server`),
    /// as in the ipc-bench study and every peer measured beside msgbench:
    /// a switch between them changes address space.
    Process,
    /// The server is a thread of the measuring process: a switch between
    /// them keeps the address space (no TLB or page-table change).
    Thread,
}

impl Layout {
    /// The layout of a row from before layouts were recorded: the server
    /// was a thread of the measuring process.
    pub fn before_layouts() -> Layout {
        Layout::Thread
    }

    /// The option value (`process`, `thread`).
    pub fn name(self) -> &'static str {
        match self {
            Layout::Process => "process",
            Layout::Thread => "thread",
        }
    }
}

/// How a transport waits for its peer: msgpass's transport table says
/// ([`msgpass::transport::Wait`]); this is its name in results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WaitClass {
    /// Both sides poll shared memory (burn a CPU each while waiting).
    Polling,
    /// Spin for a bounded time, then block (polling + blocking).
    Hybrid,
    /// Sleep in the kernel until woken.
    Blocking,
}

impl WaitClass {
    /// The wait class of the transport named `transport` (a name or an
    /// alias) in msgpass's transport table; a name it lacks (which no
    /// option lets through) counts as blocking.
    pub fn of(transport: &str) -> WaitClass {
        msgpass::transport::info(transport).map_or(WaitClass::Blocking, |t| t.wait.into())
    }

    /// Short label for the table.
    pub fn label(self) -> &'static str {
        match self {
            WaitClass::Polling => "poll",
            WaitClass::Hybrid => "hybrid",
            WaitClass::Blocking => "block",
        }
    }
}

impl From<msgpass::transport::Wait> for WaitClass {
    fn from(w: msgpass::transport::Wait) -> WaitClass {
        match w {
            msgpass::transport::Wait::Spin => WaitClass::Polling,
            msgpass::transport::Wait::Hybrid => WaitClass::Hybrid,
            msgpass::transport::Wait::Block => WaitClass::Blocking,
        }
    }
}

/// Which msgpass API a row's client and server use for the echo exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// In place: `Connection::call_with` and
    /// `Request::reply_with`, only the stamps rewritten and transformed
    /// (the default).
    InPlace,
    /// Copying: `Connection::call` and `Request::reply`, every byte
    /// transformed and checked (`--copy` adds these rows).
    Copy,
}

impl Api {
    /// The table's label (`in place`, `copy`).
    pub fn label(self) -> &'static str {
        match self {
            Api::InPlace => "in place",
            Api::Copy => "copy",
        }
    }

    /// The name in the JSON and CSV (`in-place`, `copy`).
    pub fn name(self) -> &'static str {
        match self {
            Api::InPlace => "in-place",
            Api::Copy => "copy",
        }
    }
}

/// How a latency run is timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Timing {
    /// A timestamp before and after each call: a distribution.
    PerMessage,
    /// The clock read only at the start and end: the mean only.
    Whole,
}

impl Timing {
    /// The option value.
    pub fn name(self) -> &'static str {
        match self {
            Timing::PerMessage => "per-message",
            Timing::Whole => "whole",
        }
    }
}

/// How a row ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// Measured; every reply checked.
    Ok,
    /// A call failed or a reply was wrong (corrupted, lost, mismatched).
    Failed,
    /// The transport cannot carry this message size.
    NotApplicable,
    /// The transport (or the placement) could not be set up here.
    Skipped,
    /// Stopped by SIGINT/SIGTERM.
    Interrupted,
}

/// How [`CpuCost::total_ns`] was counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CpuMethod {
    /// Client and server are threads of this one process: the total is
    /// the process CPU clock (CLOCK_PROCESS_CPUTIME_ID) over the run, so
    /// every thread of both sides counts, the library's helper threads too
    /// (fuse's reader, sysv-msg's ticker, the pokers of signal, eventfd
    /// and pipe).
    #[default]
    ProcessClock,
}

/// CPU time per message, ns: the client and server threads from their
/// thread CPU clocks, and every thread of both sides from the process CPU
/// clock.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct CpuCost {
    /// How `total_ns` was counted.
    pub method: CpuMethod,
    /// The client thread (it reads its own clock around the run).
    pub client_ns: f64,
    /// The server's serving thread (it reads its own clock when asked,
    /// before and after the run, and replies with it).
    pub server_ns: f64,
    /// Every other thread of the process over the run: the transports'
    /// helper threads (the main thread only waits). The process clock less
    /// the two threads above, at least 0.
    pub other_ns: f64,
    /// Every thread of both sides: client + server + other.
    pub total_ns: f64,
}

impl CpuCost {
    /// From the client and server threads' CPU time and the process's
    /// (all its threads) over `messages`. The server's figure spans a
    /// little more than the process's (its clock is read while it answers
    /// the CPU requests around the run), so `other` is clamped at 0 and
    /// the total never falls below the two threads.
    pub fn per_message(client_ns: u64, server_ns: u64, process_ns: u64, messages: u64) -> CpuCost {
        let m = messages.max(1) as f64;
        let other = process_ns.saturating_sub(client_ns + server_ns);
        CpuCost {
            method: CpuMethod::ProcessClock,
            client_ns: client_ns as f64 / m,
            server_ns: server_ns as f64 / m,
            other_ns: other as f64 / m,
            total_ns: (client_ns + server_ns + other) as f64 / m,
        }
    }
}

/// Exact figures over the raw samples (the old study's statistics).
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct ExactStats {
    /// Smallest round trip.
    pub min_ns: f64,
    /// Largest round trip.
    pub max_ns: f64,
    /// Mean round trip.
    pub mean_ns: f64,
    /// Population standard deviation.
    pub stddev_ns: f64,
}

/// A latency run: round trips of `size` bytes each way, timed per message
/// (one timestamp before and one after each call, or from each intended
/// send time in open loop) or as a whole (mean only).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LatencyRun {
    /// How it was timed: `per-message` (percentiles) or `whole` (the
    /// percentiles are null, only the mean is known).
    pub timing: Timing,
    /// Open loop: the fixed send rate, messages per second (latency from
    /// each intended send time); null: closed loop.
    pub rate: Option<f64>,
    /// Subtracted from each per-message sample (one timestamp's cost; a
    /// sample is clamped at 0), ns; 0 with whole-run timing.
    pub overhead_subtracted_ns: f64,
    /// Round trips asked for (sized from the warm-up's rate).
    pub target: u64,
    /// Round trips done (fewer when time-capped).
    pub samples: u64,
    /// The time cap stopped the run before `target`.
    pub time_capped: bool,
    /// Wall time of the run, ns.
    pub duration_ns: f64,
    /// Percentiles from the HDR histogram (3 significant digits).
    pub summary: LatencySummary,
    /// Exact min, max, mean and standard deviation.
    pub exact: ExactStats,
    /// The HDR histogram: (bucket value in ns, count) for each non-empty
    /// bucket, in increasing order.
    pub histogram: Vec<(f64, u64)>,
    /// CPU per round trip.
    pub cpu: CpuCost,
}

impl LatencyRun {
    /// A closed-loop, per-message run of `samples` round trips whose p50
    /// and mean are `ns`, everything else empty (for tests).
    #[cfg(test)]
    pub fn with_p50(ns: f64, samples: u64) -> LatencyRun {
        LatencyRun {
            timing: Timing::PerMessage,
            rate: None,
            overhead_subtracted_ns: 0.0,
            target: samples,
            samples,
            time_capped: false,
            duration_ns: ns * samples as f64,
            summary: crate::measure::hist::LatencySummary {
                p50_ns: ns,
                ..Default::default()
            },
            exact: ExactStats {
                mean_ns: ns,
                ..ExactStats::default()
            },
            histogram: Vec::new(),
            cpu: CpuCost::default(),
        }
    }

    /// The run's central figure: the p50, or the mean with whole-run timing.
    pub fn central_ns(&self) -> f64 {
        match self.timing {
            Timing::PerMessage => self.summary.p50_ns,
            Timing::Whole => self.summary.mean_ns,
        }
    }
}

/// How the repeats of a row's latency run agree (`-r N`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RepeatStats {
    /// Each repeat's central figure (p50, or mean with `--timing whole`), ns.
    pub central_ns: Vec<f64>,
    /// Their median: the row's figure, by which tables are sorted.
    pub median_ns: f64,
    /// (max - min) / median, percent.
    pub spread_pct: f64,
    /// The first repeat is off the others' median by more than the
    /// warning threshold while the others agree within it.
    pub first_outlier: bool,
}

/// The throughput run: `size` bytes one way, a 4-byte checksum back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ThroughputRun {
    /// Messages in flight at most: `--window` W where the transport has
    /// one-way messages (W-1 one-way, then a call acknowledging them), else
    /// 1 (each message waits for its reply).
    pub window: u32,
    /// Messages asked for.
    pub target: u64,
    /// Messages done, every checksum verified.
    pub messages: u64,
    /// The time cap stopped the run before `target`.
    pub time_capped: bool,
    /// Wall time, ns.
    pub duration_ns: f64,
    /// Messages per second.
    pub msgs_per_s: f64,
    /// Payload megabytes (10^6 bytes) per second, one way.
    pub mb_per_s: f64,
    /// CPU per message.
    pub cpu: CpuCost,
}

/// One transport at one size and placement.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// The transport as selected (`-t`).
    pub transport: String,
    /// Its canonical name (`shm` is `shm-hybrid`).
    pub mechanism: String,
    /// The API measured: `in-place` (`call_with`/`reply_with`) or `copy`
    /// (`call`/`reply`, with `--copy`).
    pub api: Api,
    /// How it waits.
    pub wait: WaitClass,
    /// Message size, bytes.
    pub size: usize,
    /// Placement.
    pub placement: Placement,
    /// Layout: the server a process of its own or a thread of the
    /// client's process (a run from before layouts ran threads).
    #[serde(default = "Layout::before_layouts")]
    pub layout: Layout,
    /// CPU of the client thread (pinned and verified), when it got that far.
    pub client_cpu: Option<usize>,
    /// CPU of the server thread (pinned and verified).
    pub server_cpu: Option<usize>,
    /// Outcome.
    pub status: Status,
    /// Why it is not `ok`.
    pub reason: Option<String>,
    /// Largest message the connection takes, when connected.
    pub max_msg: Option<usize>,
    /// Latency figures (status `ok`): the repeat whose figure is the
    /// median (the lower of the middle two for an even count).
    pub latency: Option<LatencyRun>,
    /// The latency run's distribution (of `latency`, the median repeat):
    /// `[upper_ns, count]` for each non-empty bucket of its HDR histogram,
    /// in increasing order, every sample counted once; empty without
    /// per-message timing or figures.
    #[serde(default)]
    pub histogram: Vec<(f64, u64)>,
    /// Every latency run of the row, in order (`-r N`).
    #[serde(default)]
    pub repeats: Vec<LatencyRun>,
    /// How the repeats agree.
    pub repeat_stats: Option<RepeatStats>,
    /// What else used the CPUs while the row ran.
    pub other_load: Option<OtherLoad>,
    /// Warnings about the row's figures (noise, spread, outliers).
    #[serde(default)]
    pub warnings: Vec<String>,
    /// Throughput figures (status `ok`).
    pub throughput: Option<ThroughputRun>,
    /// `--idle-clients`: how many idle, connected clients (other
    /// processes) the row's server held while it was measured; absent
    /// without the option.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_clients: Option<u32>,
    /// What those idle connections cost the server (this process), when
    /// there were any and they all connected.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleCost>,
    /// `--clients`: a row of this many active clients (processes) on one
    /// server instead of the single client of the other rows; absent on
    /// those.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clients: Option<u32>,
    /// The active clients' figures (status `ok`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub active: Option<ActiveRun>,
}

impl Row {
    /// A row with no figures yet.
    pub fn new(
        transport: &str,
        mechanism: &str,
        api: Api,
        size: usize,
        placement: Placement,
    ) -> Row {
        Row {
            transport: transport.to_string(),
            mechanism: mechanism.to_string(),
            api,
            wait: WaitClass::of(mechanism),
            size,
            placement,
            layout: Layout::Process,
            client_cpu: None,
            server_cpu: None,
            status: Status::Ok,
            reason: None,
            max_msg: None,
            latency: None,
            histogram: Vec::new(),
            repeats: Vec::new(),
            repeat_stats: None,
            other_load: None,
            warnings: Vec::new(),
            throughput: None,
            idle_clients: None,
            idle: None,
            clients: None,
            active: None,
        }
    }

    /// A row with no figures yet for the plan's row `spec`.
    pub fn for_spec(spec: &RowSpec) -> Row {
        let t = spec.transport;
        let mechanism = msgpass::transport::by_name(t).map_or(t, |t| t.name());
        let mut row = Row::new(t, mechanism, spec.api, spec.size, spec.placement);
        row.layout = spec.layout;
        row.idle_clients = spec.idle;
        row.clients = spec.clients;
        row
    }

    /// Ends the row with `status` and `reason`.
    pub fn end(mut self, status: Status, reason: impl Into<String>) -> Row {
        self.status = status;
        self.reason = Some(reason.into());
        self
    }

    /// The transport, with `(copy)` after it for a copying-API row and the
    /// number of idle or active clients where the row has one: how
    /// warnings and the old study's blocks name the row.
    pub fn label(&self) -> String {
        let mut l = self.transport.clone();
        if self.api == Api::Copy {
            l.push_str(" (copy)");
        }
        if let Some(n) = self.idle_clients {
            l.push_str(&format!(" ({n} idle)"));
        }
        if let Some(n) = self.clients {
            l.push_str(&format!(" ({n} clients)"));
        }
        l
    }

    /// Median round trip, when measured: with repeats, the median of their
    /// p50s (of their means with `--timing whole`).
    pub fn p50_ns(&self) -> Option<f64> {
        match (&self.status, &self.latency, &self.repeat_stats) {
            (Status::Ok, Some(_), Some(r)) => Some(r.median_ns),
            (Status::Ok, Some(l), None) => Some(l.central_ns()),
            _ => None,
        }
    }

    /// What the table prints instead of figures, e.g. `FAILED: ...`.
    pub fn note(&self) -> String {
        let r = self.reason.as_deref().unwrap_or("");
        match self.status {
            Status::Ok => String::new(),
            Status::Failed => format!("FAILED: {r}"),
            Status::NotApplicable => format!("n/a: {r}"),
            Status::Skipped => format!("skipped: {r}"),
            Status::Interrupted => "interrupted".to_string(),
        }
    }
}

impl SuiteRow for Row {
    fn status(&self) -> RowStatus {
        match self.status {
            Status::Ok => RowStatus::Ok,
            Status::Failed => RowStatus::Failed,
            Status::Skipped | Status::NotApplicable => RowStatus::Skipped,
            Status::Interrupted => RowStatus::Interrupted,
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_busy_helper_thread_counts_in_the_total() {
        use crate::measure::cpu::{process_cpu_ns, thread_cpu_ns};
        // As the client reads the clocks around a run, with a helper thread
        // (as fuse's reader or a poker) doing the work meanwhile.
        let p0 = process_cpu_ns();
        let c0 = thread_cpu_ns();
        let helper = std::thread::spawn(|| {
            let t0 = thread_cpu_ns();
            let mut x = 0u64;
            while thread_cpu_ns() - t0 < 30_000_000 {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
            }
            thread_cpu_ns() - t0
        });
        let burnt = helper.join().expect("helper");
        let c1 = thread_cpu_ns();
        let p1 = process_cpu_ns();
        let cost = super::CpuCost::per_message(c1 - c0, 0, p1 - p0, 1);
        assert_eq!(cost.method, super::CpuMethod::ProcessClock);
        // Other test threads may run meanwhile: at least the helper counts.
        assert!(
            cost.other_ns >= burnt as f64 * 0.99,
            "{cost:?}, helper {burnt} ns"
        );
        assert!(cost.total_ns >= cost.client_ns + cost.other_ns, "{cost:?}");
        assert!(cost.total_ns >= burnt as f64, "{cost:?}, helper {burnt} ns");
    }

    #[test]
    fn the_total_never_falls_below_the_two_threads() {
        // The server's window is a little wider than the process clock's.
        let cost = super::CpuCost::per_message(400, 700, 1000, 10);
        assert_eq!((cost.other_ns, cost.total_ns), (0.0, 110.0));
        let cost = super::CpuCost::per_message(400, 600, 1500, 10);
        assert_eq!((cost.other_ns, cost.total_ns), (50.0, 150.0));
    }

    use super::*;

    #[test]
    fn classifies_by_the_transport_table() {
        assert_eq!(WaitClass::of("shm-spin"), WaitClass::Polling);
        assert_eq!(WaitClass::of("shm"), WaitClass::Hybrid);
        assert_eq!(WaitClass::of("shm-hybrid"), WaitClass::Hybrid);
        assert_eq!(WaitClass::of("shm-block"), WaitClass::Blocking);
        assert_eq!(WaitClass::of("uds"), WaitClass::Blocking);
    }
}
