//! The options of `msgbench ipc`, checked into a [`Plan`]. Each value is
//! parsed by its clap value parser here (a refused one is a usage error:
//! one line naming the option, exit status 2); what depends on several
//! options (the clients the server can hold, the time budget) is checked
//! by [`plan`], one line naming the option, exit status 1.

use crate::suites::parse::ValueError;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use super::row::{Api, Layout, Placement, RowSpec, Timing};
use super::scale;
use super::server::Fault;
use crate::measure::placement;
use crate::results::table::Format;
use crate::serve::remote::{RemoteArgs, RemoteServer};
use crate::suites::args::{Repeats, RepeatsSpec};
use crate::suites::OutputArgs;

/// Largest `--window`.
const MAX_WINDOW: u32 = 4096;

/// Default message sizes, bytes.
const SIZES: &[usize] = &[1, 64, 1024, 4096, 65536];
/// Message sizes of `--quick`.
const QUICK_SIZES: &[usize] = &[1, 4096];
/// Largest `--count`: the most samples a latency run keeps.
pub const MAX_COUNT: u64 = super::client::MAX_MESSAGES;

/// Target length of each measured run.
const ROW_SECS: f64 = 0.3;
/// Target length of each measured run with `--quick`.
const QUICK_ROW_SECS: f64 = 0.05;
/// Time budget of a whole run without `--row-secs` (default, `--quick`):
/// with many transports the row length shrinks to fit. A row takes about
/// 2.5 row lengths (warm-up, latency run, throughput run).
const BUDGET_SECS: f64 = 150.0;
const QUICK_BUDGET_SECS: f64 = 20.0;
/// Shortest row length the budget may impose.
const MIN_ROW_SECS: f64 = 0.02;

/// What ipc's `-r/--repeats` means.
#[derive(Debug, Clone)]
pub struct IpcSpec;

impl RepeatsSpec for IpcSpec {
    const HELP: &'static str =
        "Latency runs per row, interleaved with the other rows of the same size (A B C A B C); the table shows the median of their p50s and their spread";
    const DEFAULT: Option<&'static str> = Some("1");
    const MAX: usize = 1000;
}

/// Options of `msgbench ipc`.
#[derive(Debug, Clone, Args)]
pub struct IpcArgs {
    /// Transports, comma-separated [default: every transport msgpass has].
    #[arg(
        short = 't',
        long = "transport",
        value_name = "LIST",
        long_help = crate::cli::transport_long_help(
            "Transports, comma-separated [default: every transport msgpass has]:"
        ),
        value_parser = crate::suites::parse::transports
    )]
    pub transports: Option<std::vec::Vec<String>>,
    /// Message sizes in bytes, comma-separated (0 to 16777216, 16 MiB)
    /// [default: 1,64,1024,4096,65536; with --quick: 1,4096].
    #[arg(
        long = "sizes",
        value_name = "LIST",
        allow_hyphen_values = true,
        value_parser = parse_sizes
    )]
    pub sizes: Option<std::vec::Vec<usize>>,
    /// Placements, comma-separated: same (client and server pinned to one
    /// CPU), cross (pinned to two CPUs) [default: same,cross; cross with
    /// --server, whose server is on another host].
    #[arg(
        long = "placement",
        value_name = "LIST",
        default_value = "same,cross",
        default_value_if("server", clap::builder::ArgPredicate::IsPresent, "cross"),
        hide_default_value = true,
        value_parser = parse_placements
    )]
    pub placement: std::vec::Vec<Placement>,
    /// Layouts, comma-separated: process (the server a process of its
    /// own, `msgbench ipc-peer server`, as in the ipc-bench study and
    /// every peer), thread (the server a thread of this process: a switch
    /// between client and server keeps the address space). Crossed with
    /// --placement: `--layout process,thread --placement same,cross` is
    /// the 2x2 matrix. Rows with --idle-clients keep their server in this
    /// process (they measure its memory); --clients rows are processes
    /// [default: process].
    #[arg(
        long = "layout",
        value_name = "LIST",
        default_value = "process",
        value_parser = parse_layouts
    )]
    pub layout: std::vec::Vec<Layout>,
    /// Round trips in each latency run, as the ipc-bench study's `-c`
    /// (1 to 2000000) [default: as many as the warm-up's rate fits in
    /// --row-secs].
    #[arg(
        short = 'c',
        long = "count",
        value_name = "N",
        value_parser = clap::value_parser!(u64).range(1..=MAX_COUNT)
    )]
    pub count: Option<u64>,
    /// Also build and run the IPC comparison study's own programs
    /// (goldsborough/ipc-bench: domain, tcp, pipe, fifo, mq, signal, shm,
    /// eventfd-bi) and rigtorp/ipc-bench's (pipe_lat, unix_lat, tcp_lat)
    /// on the run's transports, sizes and placements, each beside
    /// msgbench's process row of the same mechanism: their average,
    /// minimum, maximum and rate as they print them, ours, and what each
    /// does differently. Needs a C compiler (cc, or $CC) and the sources
    /// in the repository's peers/ ($MSGBENCH_PEERS elsewhere); -c/--count
    /// is their -c [default: 1000].
    #[arg(long = "vs-ipc-bench")]
    pub vs_ipc_bench: bool,
    /// A short run: sizes 1,4096 and about 0.05 s per measured run.
    #[arg(long = "quick")]
    pub quick: bool,
    /// Target length of each measured run, seconds [default: 0.3, or less so that a run
    /// with many transports stays within about 150 s; with --quick: 0.05, within 20 s].
    #[arg(
        long = "row-secs",
        value_name = "SECS",
        allow_hyphen_values = true,
        value_parser = parse_row_secs
    )]
    pub row_secs: Option<f64>,
    /// Hybrid waiting: spin budget in microseconds.
    #[arg(
        long = "spin-us",
        value_name = "US",
        default_value = "20",
        allow_hyphen_values = true,
        value_parser = parse_spin_us
    )]
    pub spin_us: u64,
    /// With --format table or markdown: also print the old ipc-bench
    /// study's results block (message count, total, average, minimum and
    /// maximum duration, standard deviation, message rate) for every row,
    /// under the table of its size and placement.
    #[arg(long = "ipcbench-block")]
    pub ipcbench_block: bool,
    /// Namespace under which a private run directory is made.
    #[arg(long = "ns", value_name = "DIR")]
    pub ns: Option<PathBuf>,
    /// Add a column: each row's p50 as a multiple of this machine's floor (see `msgbench floor`).
    #[arg(long = "vs-floor")]
    pub vs_floor: bool,
    /// Scheduling controls: --fifo, --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: crate::measure::sched::SchedArgs,
    /// Warm-up before each measured latency run, seconds (0: none; the
    /// latency run is then sized by time) [default: a fifth of a row, at
    /// least 50 round trips].
    #[arg(
        long = "warmup",
        value_name = "SECS",
        allow_hyphen_values = true,
        value_parser = parse_secs
    )]
    pub warmup: Option<f64>,
    /// -r/--repeats: latency runs per row.
    #[command(flatten)]
    pub repeats: Repeats<IpcSpec>,
    /// Latency timing: per-message (a timestamp around each call:
    /// percentiles) or whole (no clock in the loop: the mean only).
    #[arg(
        long = "timing",
        value_name = "MODE",
        default_value = "per-message",
        value_parser = parse_timing
    )]
    pub timing: Timing,
    /// Open loop: send at a fixed schedule of R messages per second and
    /// measure latency from each message's intended send time.
    #[arg(
        long = "rate",
        value_name = "R",
        allow_hyphen_values = true,
        value_parser = parse_rate
    )]
    pub rate: Option<f64>,
    /// Throughput window: messages in flight (W-1 one-way messages, then a
    /// call that acknowledges them) where the transport has one-way
    /// messages; 1 = each message waits for its reply.
    #[arg(
        long = "window",
        value_name = "N",
        default_value = "16",
        allow_hyphen_values = true,
        value_parser = parse_window
    )]
    pub window: u32,
    /// Also show one-way throughput in the tables: SIZE bytes one way with
    /// up to --window messages in flight (columns "One-way msg/s" and
    /// "One-way MB/s"). It is measured and kept in the JSON and CSV
    /// either way; the default table shows the round-trip figures the
    /// ipc-bench study printed.
    #[arg(long = "throughput")]
    pub throughput: bool,
    /// Also measure the copying API (Connection::call, Request::reply:
    /// every byte transformed and checked), in rows next to the in-place
    /// ones (Connection::call_with, Request::reply_with), which are measured
    /// by default: column API, JSON field "api" ("in-place" or "copy").
    #[arg(long = "copy")]
    pub copy: bool,
    /// Idle clients beside the measured one, comma-separated counts (e.g.
    /// 0,1000,10000) [default: none]: every row is run once per count,
    /// its latency and throughput measured while that many other clients
    /// (processes of their own, each connection opened and called once
    /// to prove it valid) stay connected to its server and idle. Each row
    /// also reports what an idle connection costs the server: resident
    /// memory and descriptors per connection. A count the server cannot
    /// hold (RLIMIT_NOFILE, or the transport's own ceiling) is refused
    /// before anything runs.
    #[arg(
        long = "idle-clients",
        value_name = "LIST",
        allow_hyphen_values = true,
        value_parser = scale::idle_counts
    )]
    pub idle_clients: Option<std::vec::Vec<u32>>,
    /// Active clients on one server, comma-separated counts (e.g. 1,8,64)
    /// [default: none]: adds rows where that many client processes, pinned
    /// as the placement says (same: server and every client on one CPU;
    /// cross: the server on one, the clients on the other), are released
    /// together and make checked round trips for a row's time. Reported:
    /// the aggregate rate, the median and worst of the clients' p50 and
    /// p99, and fairness (slowest client's rate / fastest's, and the
    /// coefficient of variation of the rates).
    #[arg(
        long = "clients",
        value_name = "LIST",
        allow_hyphen_values = true,
        value_parser = scale::client_counts
    )]
    pub clients: Option<std::vec::Vec<u32>>,
    /// Test hook: every row's server breaks one reply (corrupt,
    /// corrupt-body, stale, checksum, oneway) or stalls once (stall).
    #[arg(
        long = "inject-fault",
        value_name = "KIND",
        hide = true,
        value_parser = parse_fault
    )]
    pub inject_fault: Option<Fault>,
    /// --server, --token-file: measure the tcp rows against `msgbench
    /// serve ipc` on another host.
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// --format (table, markdown, csv, json), --json FILE.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Checked settings, stored in the results envelope as `settings`.
#[derive(Debug, Clone, Serialize)]
pub struct Plan {
    /// Transport names, in the order given.
    pub transports: Vec<String>,
    /// Message sizes, in the order given, without repeats.
    pub sizes: Vec<usize>,
    /// Placements, in the order given, without repeats.
    pub placements: Vec<Placement>,
    /// Layouts of the single-client rows, in the order given.
    pub layouts: Vec<Layout>,
    /// `--count`: round trips in each latency run (null: sized by time).
    pub count: Option<u64>,
    /// `--vs-ipc-bench`: the reference programs run beside the rows.
    pub vs_ipc_bench: bool,
    /// Target seconds per measured run (time cap: twice that).
    pub row_secs: f64,
    /// Hybrid spin budget, microseconds.
    pub spin_us: u64,
    /// CPUs this process may run on (online and in its affinity mask), in
    /// the order placements use them.
    pub cpus: Vec<usize>,
    /// Namespace under which the private run directory is made (`--ns`;
    /// null: msgpass's default).
    pub ns: Option<PathBuf>,
    /// `--vs-floor`: the floor is measured first and each row's p50 shown
    /// as a multiple of it.
    pub vs_floor: bool,
    /// `--ipcbench-block`: the old study's block under each table.
    pub ipcbench_block: bool,
    /// `--copy`: the copying API is measured too, each copy row run right
    /// after the in-place row of its transport, size and placement.
    pub copy: bool,
    /// How results are printed (`--format`).
    #[serde(skip)]
    pub format: Format,
    /// Test hook: the reply every server breaks.
    #[serde(skip)]
    pub fault: Option<Fault>,
    /// Warm-up before each latency run, seconds; null: the default (a
    /// fifth of a row, at least 50 round trips).
    pub warmup_secs: Option<f64>,
    /// Latency runs per row (1 or more).
    pub repeats: usize,
    /// How latency runs are timed.
    pub timing: Timing,
    /// Open loop: messages per second; null: closed loop.
    pub rate: Option<f64>,
    /// Throughput window asked for (1 or more; rows whose transport has
    /// no one-way messages use 1).
    pub window: u32,
    /// `--throughput`: the tables show the one-way throughput columns.
    pub throughput: bool,
    /// `--idle-clients`: every row is run once per count (absent: once,
    /// with no idle clients).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub idle_clients: Vec<u32>,
    /// `--clients`: the counts of the active-clients rows (absent: none).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub clients: Vec<u32>,
    /// `--server`: the remote `msgbench serve ipc` every row measures
    /// against (absent: each row's server is a thread of this process).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<RemoteServer>,
}

impl Plan {
    /// The hybrid spin budget.
    pub fn spin(&self) -> Duration {
        Duration::from_micros(self.spin_us)
    }

    /// The APIs measured: in place, and with `--copy` the copying one.
    pub fn apis(&self) -> &'static [Api] {
        if self.copy {
            &[Api::InPlace, Api::Copy]
        } else {
            &[Api::InPlace]
        }
    }

    /// Every row in run order: for each size, each placement, each count
    /// of idle clients (once without `--idle-clients`), each transport,
    /// each layout, each API (so the process and thread rows, in-place and
    /// copy, of one transport, size and placement run back to back, under
    /// the same machine state); then,
    /// with `--clients`, the active-clients rows of that size and
    /// placement, for each count, transport and API.
    pub fn row_order(&self) -> Vec<RowSpec<'_>> {
        let idle: Vec<Option<u32>> = if self.idle_clients.is_empty() {
            vec![None]
        } else {
            self.idle_clients.iter().copied().map(Some).collect()
        };
        let kinds = idle
            .into_iter()
            .map(|n| (n, None))
            .chain(self.clients.iter().map(|&n| (None, Some(n))));
        let kinds: Vec<(Option<u32>, Option<u32>)> = kinds.collect();
        let mut out = Vec::new();
        for &size in &self.sizes {
            for &placement in &self.placements {
                for &(idle, clients) in &kinds {
                    for t in &self.transports {
                        for &layout in self.layouts_of(idle, clients) {
                            for &api in self.apis() {
                                out.push(RowSpec {
                                    size,
                                    placement,
                                    layout,
                                    transport: t.as_str(),
                                    api,
                                    idle,
                                    clients,
                                });
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The layouts a kind of row runs in: idle-clients rows keep their
    /// server in this process (they measure its memory), active-clients
    /// rows are client processes; a plain row runs in each `--layout`.
    fn layouts_of(&self, idle: Option<u32>, clients: Option<u32>) -> &[Layout] {
        match (idle, clients) {
            (Some(_), _) => &[Layout::Thread],
            (_, Some(_)) => &[Layout::Process],
            _ => &self.layouts,
        }
    }

    /// (client CPU, server CPU) of a placement, or why it cannot be had.
    pub fn cpus_for(&self, p: Placement) -> std::result::Result<(usize, usize), NoCpus> {
        let first = *self.cpus.first().ok_or(NoCpus::None)?;
        match p {
            Placement::Same => Ok((first, first)),
            Placement::Cross => match self.cpus.get(1) {
                Some(&second) => Ok((first, second)),
                None => Err(NoCpus::OnlyOne(first)),
            },
        }
    }
}

/// Why a placement cannot be had here (the row's skip reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NoCpus {
    /// The affinity mask is empty.
    #[error("no CPU is available to this process")]
    None,
    /// A cross-CPU row with one CPU.
    #[error("needs two CPUs; only CPU {0} is available to this process")]
    OnlyOne(usize),
}

/// Checks the options, every one, before anything runs.
pub fn plan(args: &IpcArgs) -> Result<Plan> {
    let transports = match (&args.transports, &args.remote.server) {
        (Some(l), _) => l.clone(),
        (None, Some(_)) => vec!["tcp".to_string()],
        (None, None) => msgpass::transport::NAMES
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let sizes = match &args.sizes {
        Some(l) => l.clone(),
        None if args.quick => QUICK_SIZES.to_vec(),
        None => SIZES.to_vec(),
    };
    let placements = args.placement.clone();
    let layouts = match args.remote.server {
        Some(_) => vec![Layout::Process],
        None => args.layout.clone(),
    };
    let apis = if args.copy { 2 } else { 1 };
    let rows = transports.len() * sizes.len() * placements.len() * apis * layouts.len();
    let (timing, rate) = timing_and_rate(args)?;
    let idle_clients = args.idle_clients.clone().unwrap_or_default();
    let clients = args.clients.clone().unwrap_or_default();
    scale::check_fit(&transports, &idle_clients, &clients)?;
    // Every kind of row counts against the time budget.
    let rows = rows * (idle_clients.len().max(1) + clients.len());
    let server = match args.remote.server {
        Some(_) => {
            check_remote(args, &transports)?;
            RemoteServer::reach(&args.remote, "ipc")?
        }
        None => None,
    };
    Ok(Plan {
        transports,
        sizes,
        placements,
        layouts,
        count: args.count,
        vs_ipc_bench: args.vs_ipc_bench,
        row_secs: row_secs(args, rows),
        spin_us: args.spin_us,
        cpus: usable_cpus(),
        ns: args.ns.clone(),
        vs_floor: args.vs_floor,
        ipcbench_block: args.ipcbench_block,
        copy: args.copy,
        format: args.output.format.text(),
        fault: args.inject_fault,
        warmup_secs: args.warmup,
        repeats: args.repeats.or(1),
        timing,
        rate,
        window: args.window,
        throughput: args.throughput,
        idle_clients,
        clients,
        server,
    })
}

/// With `--server`: what a remote server can be measured with. It serves
/// tcp rows, one client at a time, on a CPU of another host (so every row
/// is cross), its faults its own.
fn check_remote(args: &IpcArgs, transports: &[String]) -> Result<()> {
    if let Some(t) = transports.iter().find(|t| *t != "tcp") {
        bail!(
            "--server: the remote server is reached over tcp; -t {t} cannot cross hosts \
             (udp's sockets are made on 127.0.0.1 and handed over a local socket)"
        );
    }
    if args.placement.contains(&Placement::Same) {
        bail!("--placement same: the server is on another host, so every row is cross");
    }
    if args.layout.contains(&Layout::Thread) {
        bail!("--layout thread: the server is on another host, so every row is two processes");
    }
    let local_only = [
        ("--idle-clients", args.idle_clients.is_some()),
        ("--clients", args.clients.is_some()),
        ("--vs-floor", args.vs_floor),
        ("--inject-fault", args.inject_fault.is_some()),
        ("--vs-ipc-bench", args.vs_ipc_bench),
    ];
    if let Some((flag, _)) = local_only.iter().find(|(_, given)| *given) {
        bail!("{flag}: not with --server (it needs the server in this process or on this host)");
    }
    Ok(())
}

/// `--row-secs`, or the default for `rows` rows: the target length cut
/// so that the whole run fits its budget.
fn row_secs(args: &IpcArgs, rows: usize) -> f64 {
    let rows = rows.max(1) as f64;
    let fit = |secs: f64, budget: f64| {
        let s = secs.min(budget / (rows * 2.5)).max(MIN_ROW_SECS);
        (s * 1000.0).floor() / 1000.0
    };
    match args.row_secs {
        Some(v) => v,
        None if args.quick => fit(QUICK_ROW_SECS, QUICK_BUDGET_SECS),
        None => fit(ROW_SECS, BUDGET_SECS),
    }
}

/// `--rate`, which needs per-message timing.
fn timing_and_rate(args: &IpcArgs) -> Result<(Timing, Option<f64>)> {
    if args.rate.is_some() && args.timing == Timing::Whole {
        bail!("--rate: needs --timing per-message (latency from each intended send time)");
    }
    Ok((args.timing, args.rate))
}

/// Parses a warm-up length: seconds, 0 to 60.
fn parse_secs(s: &str) -> Result<f64, ValueError> {
    let (min, max) = (0.0, 60.0);
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (min..=max).contains(&v) => Ok(v),
        _ => Err(ValueError::Seconds { min, max }),
    }
}

/// Parses an open-loop rate: messages per second, more than 0, at most 10^8.
fn parse_rate(s: &str) -> Result<f64, ValueError> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 1e8 => Ok(v),
        _ => Err(ValueError::Rate),
    }
}

/// The largest `--sizes` entry, bytes (16 MiB): each side holds a few
/// buffers of this size, so a larger one only ends in an allocation
/// failure (an abort, not an error).
pub(crate) const MAX_SIZE: usize = 16 << 20;

/// Why a value of an ipc option was refused (clap prints it after
/// `--option value: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadValue {
    /// A `--sizes` entry above [`MAX_SIZE`].
    #[error("{0} bytes is above the maximum, {MAX_SIZE} (16 MiB)")]
    SizeTooBig(String),
    /// A `--sizes` entry that is not a whole number.
    #[error("{0:?} is not a size in bytes (a whole number, 0 or more)")]
    NotASize(String),
    /// A `--placement` entry other than same and cross.
    #[error("unknown placement {0:?} (known: same, cross)")]
    Placement(String),
    /// A `--layout` entry other than process and thread.
    #[error("unknown layout {0:?} (known: process, thread)")]
    Layout(String),
    /// `--row-secs` out of range.
    #[error("must be a number of seconds, more than 0 and at most 60")]
    RowSecs,
    /// `--spin-us` out of range.
    #[error(
        "must be a whole number of microseconds, 0 to {}",
        crate::cli::MAX_SPIN_US
    )]
    SpinUs,
    /// `--timing` other than per-message and whole.
    #[error("unknown timing (known: per-message, whole)")]
    Timing,
    /// `--window` out of range.
    #[error("must be a whole number of messages in flight, 1 to {MAX_WINDOW}")]
    Window,
    /// An unknown `--inject-fault`.
    #[error("unknown fault (known: corrupt, corrupt-body, stale, checksum, oneway, stall)")]
    Fault,
}

/// Parses `1,64,4096` (bytes, 0 to [`MAX_SIZE`]), keeping order, dropping
/// repeats.
fn parse_sizes(list: &str) -> Result<Vec<usize>, BadValue> {
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim) {
        let v = match s.parse::<usize>() {
            Ok(v) if v <= MAX_SIZE => v,
            Ok(_) => return Err(BadValue::SizeTooBig(s.to_string())),
            Err(_) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                return Err(BadValue::SizeTooBig(s.to_string()))
            }
            Err(_) => return Err(BadValue::NotASize(s.to_string())),
        };
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// Parses `same,cross`, keeping order, dropping repeats.
fn parse_placements(list: &str) -> Result<Vec<Placement>, BadValue> {
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim) {
        let p = match s {
            "same" => Placement::Same,
            "cross" => Placement::Cross,
            _ => return Err(BadValue::Placement(s.to_string())),
        };
        if !out.contains(&p) {
            out.push(p);
        }
    }
    Ok(out)
}

/// Parses `process,thread`, keeping order, dropping repeats.
fn parse_layouts(list: &str) -> Result<Vec<Layout>, BadValue> {
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim) {
        let l = match s {
            "process" => Layout::Process,
            "thread" => Layout::Thread,
            _ => return Err(BadValue::Layout(s.to_string())),
        };
        if !out.contains(&l) {
            out.push(l);
        }
    }
    Ok(out)
}

/// `--row-secs`: more than 0, at most 60 seconds.
fn parse_row_secs(s: &str) -> Result<f64, BadValue> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 60.0 => Ok(v),
        _ => Err(BadValue::RowSecs),
    }
}

/// `--spin-us`: microseconds, 0 to [`crate::cli::MAX_SPIN_US`].
pub(crate) fn parse_spin_us(s: &str) -> Result<u64, BadValue> {
    match s.trim().parse::<u64>() {
        Ok(us) if us <= crate::cli::MAX_SPIN_US => Ok(us),
        _ => Err(BadValue::SpinUs),
    }
}

/// `--timing`: per-message or whole.
fn parse_timing(s: &str) -> Result<Timing, BadValue> {
    match s {
        "per-message" => Ok(Timing::PerMessage),
        "whole" => Ok(Timing::Whole),
        _ => Err(BadValue::Timing),
    }
}

/// `--window`: 1 to [`MAX_WINDOW`] messages in flight.
fn parse_window(s: &str) -> Result<u32, BadValue> {
    match s.trim().parse::<u32>() {
        Ok(n) if (1..=MAX_WINDOW).contains(&n) => Ok(n),
        _ => Err(BadValue::Window),
    }
}

/// `--inject-fault`.
pub(super) fn parse_fault(s: &str) -> Result<Fault, BadValue> {
    Ok(match s {
        "corrupt" => Fault::Corrupt,
        "corrupt-body" => Fault::CorruptBody,
        "stale" => Fault::Stale,
        "checksum" => Fault::Checksum,
        "stall" => Fault::Stall,
        "oneway" => Fault::Oneway,
        _ => return Err(BadValue::Fault),
    })
}

/// Online CPUs that this process's affinity mask allows, in order.
pub(crate) fn usable_cpus() -> Vec<usize> {
    let online = placement::online_cpus();
    match oslayer::sched::affinity() {
        Ok(allowed) => online.into_iter().filter(|c| allowed.contains(c)).collect(),
        Err(_) => online,
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn sizes_allow_zero_and_refuse_negatives_and_words() {
        assert_eq!(parse_sizes("1,0,1,65536").unwrap(), vec![1, 0, 65536]);
        assert!(parse_sizes("-1").is_err());
        assert!(parse_sizes("4k").is_err());
        assert!(parse_sizes("").is_err());
        assert!(parse_sizes("1,,2").is_err());
        assert_eq!(parse_sizes("16777216").unwrap(), vec![MAX_SIZE]);
        for big in [
            "16777217",
            "18446744073709551615",
            "99999999999999999999999",
        ] {
            let e = parse_sizes(big).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("{big} bytes is above the maximum, 16777216 (16 MiB)")
            );
        }
        assert_eq!(
            parse_sizes("0x").unwrap_err().to_string(),
            "\"0x\" is not a size in bytes (a whole number, 0 or more)"
        );
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        ipc: IpcArgs,
    }

    /// `msgbench ipc ARGS` through clap: the options, or the one line
    /// clap's usage error prints.
    fn parsed(args: &[&str]) -> std::result::Result<IpcArgs, String> {
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("ipc").chain(args.iter().copied()))
            .map(|c| c.ipc)
            .map_err(|e| crate::cli::one_line(&e))
    }

    #[test]
    fn the_parser_refuses_each_bad_value_naming_its_option() {
        for (args, want) in [
            (&["--sizes", "0x"][..], "--sizes 0x: \"0x\" is not a size in bytes (a whole number, 0 or more)"),
            (&["--placement", "numa"], "--placement numa: unknown placement \"numa\" (known: same, cross)"),
            (&["--row-secs", "0"], "--row-secs 0: must be a number of seconds, more than 0 and at most 60"),
            (&["--spin-us", "-5"], "--spin-us -5: must be a whole number of microseconds, 0 to 1000000"),
            (&["--timing", "foo"], "--timing foo: unknown timing (known: per-message, whole)"),
            (&["--window", "0"], "--window 0: must be a whole number of messages in flight, 1 to 4096"),
            (&["--warmup", "-1"], "--warmup -1: must be a number of seconds, 0 to 60"),
            (&["--rate", "0"], "--rate 0: must be a number of messages per second, more than 0 and at most 1e8"),
            (&["--clients", "1,0"], "--clients 1,0: 0 is below the minimum, 1"),
            (&["--idle-clients", "x"], "--idle-clients x: \"x\" is not a number (a list of client counts, 0 to 1000000, like 1,8,64)"),
            (&["--inject-fault", "boom"], "--inject-fault boom: unknown fault (known: corrupt, corrupt-body, stale, checksum, oneway, stall)"),
            (&["-t", "uds,,shm"], "--transport uds,,shm: empty name (known: "),
            (&["-t", "uds,nope"], "--transport uds,nope: unknown transport \"nope\""),
        ] {
            let e = parsed(args).err().unwrap_or_else(|| panic!("{args:?} accepted"));
            assert!(e.starts_with(want), "{args:?}: {e}");
        }
    }

    #[test]
    fn the_parser_keeps_defaults_and_syntax() {
        let a = parsed(&[]).unwrap();
        assert_eq!(
            (a.spin_us, a.window, a.timing),
            (20, 16, Timing::PerMessage)
        );
        assert_eq!(a.placement, [Placement::Same, Placement::Cross]);
        assert_eq!(
            (a.sizes, a.row_secs, a.rate, a.warmup),
            (None, None, None, None)
        );
        let a = parsed(&[
            "-t",
            "uds,pipe,uds",
            "--sizes",
            "64, 1,64",
            "--placement",
            "cross",
            "--timing",
            "whole",
            "--window",
            "8",
            "--clients",
            "1-3",
            "--inject-fault",
            "stall",
        ])
        .unwrap();
        assert_eq!(
            a.transports.as_deref(),
            Some(&["uds".to_string(), "pipe".into()][..])
        );
        assert_eq!(a.sizes.as_deref(), Some(&[64, 1][..]));
        assert_eq!((a.timing, a.window), (Timing::Whole, 8));
        assert_eq!(a.clients.as_deref(), Some(&[1, 2, 3][..]));
        assert_eq!(a.inject_fault, Some(Fault::Stall));
        let p = plan(&a).unwrap();
        assert_eq!(p.placements, [Placement::Cross]);
    }

    #[test]
    fn warmup_and_rate_bounds() {
        assert_eq!(parse_secs("0").unwrap(), 0.0);
        assert_eq!(parse_secs(" 0.5 ").unwrap(), 0.5);
        assert!(parse_secs("-1").is_err());
        assert!(parse_secs("nan").is_err());
        assert!(parse_secs("61").is_err());
        assert_eq!(parse_rate("1000").unwrap(), 1000.0);
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("x").is_err());
        assert!(parse_rate("inf").is_err());
    }

    #[test]
    fn placements_are_same_or_cross() {
        assert_eq!(
            parse_placements("cross,same,cross").unwrap(),
            vec![Placement::Cross, Placement::Same]
        );
        assert_eq!(
            parse_placements("same,numa").unwrap_err(),
            BadValue::Placement("numa".into())
        );
    }

    /// A plan of the given transports, sizes, placements and CPUs, with
    /// every other field at its default.
    pub(in crate::suites::ipc) fn plan_of(
        transports: &[&str],
        sizes: Vec<usize>,
        placements: Vec<Placement>,
        cpus: Vec<usize>,
    ) -> Plan {
        Plan {
            transports: transports.iter().map(|t| t.to_string()).collect(),
            sizes,
            placements,
            layouts: vec![Layout::Process],
            count: None,
            vs_ipc_bench: false,
            row_secs: 0.1,
            spin_us: 0,
            cpus,
            ns: None,
            vs_floor: false,
            ipcbench_block: false,
            copy: false,
            format: Format::Table,
            fault: None,
            warmup_secs: None,
            repeats: 1,
            timing: Timing::PerMessage,
            rate: None,
            window: 16,
            throughput: false,
            idle_clients: Vec::new(),
            clients: Vec::new(),
            server: None,
        }
    }

    #[test]
    fn copy_rows_run_right_after_their_in_place_rows() {
        let mut p = plan_of(
            &["shm-spin", "uds"],
            vec![1, 64],
            vec![Placement::Same],
            vec![0],
        );
        let apis = |p: &Plan| {
            p.row_order()
                .iter()
                .map(|r| (r.size, r.transport.to_string(), r.api))
                .collect::<Vec<_>>()
        };
        assert!(apis(&p).iter().all(|r| r.2 == Api::InPlace));
        assert_eq!(apis(&p).len(), 4);
        p.copy = true;
        let order = apis(&p);
        assert_eq!(order.len(), 8);
        for pair in order.chunks(2) {
            assert_eq!(
                (pair[0].0, &pair[0].1),
                (pair[1].0, &pair[1].1),
                "{order:?}"
            );
            assert_eq!(
                (pair[0].2, pair[1].2),
                (Api::InPlace, Api::Copy),
                "{order:?}"
            );
        }
    }

    #[test]
    fn each_transport_runs_in_both_layouts_back_to_back() {
        let mut p = plan_of(&["uds", "pipe"], vec![64], vec![Placement::Same], vec![0]);
        p.layouts = parse_layouts("thread,process,thread").unwrap();
        assert_eq!(p.layouts, [Layout::Thread, Layout::Process]);
        let order: Vec<_> = p
            .row_order()
            .iter()
            .map(|r| (r.transport.to_string(), r.layout))
            .collect();
        let want = [
            ("uds", Layout::Thread),
            ("uds", Layout::Process),
            ("pipe", Layout::Thread),
            ("pipe", Layout::Process),
        ];
        assert_eq!(order.len(), want.len());
        for (got, want) in order.iter().zip(want) {
            assert_eq!((got.0.as_str(), got.1), want);
        }
        // Idle-clients rows keep their server here; active ones are processes.
        p.idle_clients = vec![10];
        p.clients = vec![2];
        for r in p.row_order() {
            match (r.idle, r.clients) {
                (Some(_), _) => assert_eq!(r.layout, Layout::Thread),
                (_, Some(_)) => assert_eq!(r.layout, Layout::Process),
                _ => panic!("only idle and active rows with --idle-clients: {r:?}"),
            }
        }
        assert_eq!(
            parse_layouts("process,fork").unwrap_err().to_string(),
            "unknown layout \"fork\" (known: process, thread)"
        );
    }

    #[test]
    fn count_is_a_bounded_number_of_round_trips() {
        let a = parsed(&["-c", "1000", "--layout", "thread"]).unwrap();
        assert_eq!(
            (a.count, a.layout.as_slice()),
            (Some(1000), &[Layout::Thread][..])
        );
        assert_eq!(parsed(&[]).unwrap().layout, [Layout::Process]);
        for bad in ["0", "2000001", "x"] {
            let e = parsed(&["--count", bad]).unwrap_err();
            assert!(e.starts_with(&format!("--count {bad}")), "{e}");
        }
    }

    #[test]
    fn cross_needs_two_cpus() {
        let mut p = plan_of(&[], vec![], vec![], vec![3]);
        assert_eq!(p.cpus_for(Placement::Same), Ok((3, 3)));
        assert_eq!(p.cpus_for(Placement::Cross), Err(NoCpus::OnlyOne(3)));
        assert_eq!(
            NoCpus::OnlyOne(3).to_string(),
            "needs two CPUs; only CPU 3 is available to this process"
        );
        p.cpus = vec![0, 1];
        assert_eq!(p.cpus_for(Placement::Cross), Ok((0, 1)));
        assert!(!usable_cpus().is_empty());
    }
}
