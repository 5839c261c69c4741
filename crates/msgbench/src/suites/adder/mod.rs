//! `msgbench adder`: the seed's whole experiment in one command. For each
//! transport, each mode ("One process": one server process with X threads;
//! "Multi-process": X server processes) and each X, run X client threads
//! against embedded servers and print the seed's table, plus aggregate rate
//! and scaling efficiency.

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use msgpass::Namespace;
use serde::Serialize;

use crate::devctl::client::{self, ClientRun, RunConfig};
use crate::devctl::options::check_samples;
use crate::measure::clock::Clock;
use crate::measure::cpu::CpuUsage;
use crate::measure::hist::{fmt_ns, LatencySummary};
use crate::measure::placement::{self, CpuList};
use crate::measure::sched::SchedArgs;
use crate::report::{self, Header};

mod servers;
mod table;

use servers::Servers;

/// How the X server instances are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
pub enum Mode {
    /// One dev-adder process with X server threads.
    One,
    /// X dev-adder processes with one instance each.
    Multi,
}

impl Mode {
    /// The seed's label.
    pub fn label(self) -> &'static str {
        match self {
            Mode::One => "One process",
            Mode::Multi => "Multi-process",
        }
    }
}

/// Options of `msgbench adder`.
#[derive(Debug, Clone, Args)]
pub struct AdderArgs {
    /// Thread counts X to run, e.g. 1,2,4 or 1-6 [default: 1 to CPUs+2].
    #[arg(long = "threads", value_name = "LIST")]
    pub threads: Option<String>,
    /// Transports, comma-separated; one table each.
    #[arg(
        short = 't',
        long = "transport",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "shm"
    )]
    pub transports: Vec<String>,
    /// Round trips per thread for every row [default: picked so a row takes about --row-secs].
    #[arg(short = 'S', value_name = "SAMPLES")]
    pub samples: Option<u64>,
    /// Target duration of one row when -S is not given.
    #[arg(
        long = "row-secs",
        value_name = "SECS",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub row_secs: f64,
    /// Length of the idle baseline measured once before the runs (0: skip;
    /// else 0.1 to 600).
    #[arg(
        long = "idle-secs",
        value_name = "SECS",
        default_value_t = 2.0,
        allow_negative_numbers = true
    )]
    pub idle_secs: f64,
    /// Modes to run.
    #[arg(
        long = "modes",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "one,multi"
    )]
    pub modes: Vec<Mode>,
    /// Pin client thread k to the k-th CPU of LIST.
    #[arg(long = "client-cpus", value_name = "LIST")]
    pub client_cpus: Option<String>,
    /// Pin server instance k to the k-th CPU of LIST.
    #[arg(long = "server-cpus", value_name = "LIST")]
    pub server_cpus: Option<String>,
    /// Namespace under which a private run directory is made.
    #[arg(long = "ns", value_name = "DIR")]
    pub ns: Option<PathBuf>,
    /// Hybrid waiting: spin budget in microseconds.
    #[arg(long = "spin-us", value_name = "US", default_value_t = 20)]
    pub spin_us: u64,
    /// Write every row, its percentiles and the environment to FILE.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Time whole runs only (no per-request timestamps).
    #[arg(long = "no-timestamps")]
    pub no_timestamps: bool,
    /// Scheduling controls: --fifo, --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: SchedArgs,
}

impl Default for AdderArgs {
    fn default() -> AdderArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: AdderArgs,
        }
        Wrap::parse_from(["msgbench"]).a
    }
}

/// One row of the table.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// Server layout.
    pub mode: Mode,
    /// X: client threads and server instances.
    pub threads: u32,
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
    /// Aggregate rate at X over X times the rate at X = 1 (same mode).
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
    pub discarded_runs: Vec<DiscardedRun>,
}

/// One table: a transport.
#[derive(Debug, Clone, Serialize)]
pub struct Table {
    /// Transport name.
    pub transport: String,
    /// Rows in run order.
    pub rows: Vec<Row>,
}

/// The whole report.
#[derive(Debug, Serialize)]
pub struct Report {
    #[serde(flatten)]
    header: Header,
    /// Idle baseline.
    pub idle: Option<CpuUsage>,
    /// One table per transport.
    pub tables: Vec<Table>,
}

/// Checked settings.
struct Plan {
    threads: Vec<u32>,
    client_cpus: CpuList,
    server_cpus: CpuList,
}

fn plan(args: &AdderArgs) -> Result<Plan> {
    let threads: Vec<u32> = match &args.threads {
        Some(l) => placement::parse_ranges(l, crate::devctl::MAX_INSTANCES as usize)
            .map_err(|e| anyhow::anyhow!("--threads {l}: {e}"))?
            .into_iter()
            .map(|x| x as u32)
            .collect(),
        None => (1..=placement::cpu_count() as u32 + 2).collect(),
    };
    for &x in &threads {
        if !(1..=crate::devctl::MAX_INSTANCES).contains(&x) {
            bail!(
                "--threads {x}: thread counts must be between 1 and {}",
                crate::devctl::MAX_INSTANCES
            );
        }
    }
    if args.transports.is_empty() {
        bail!("--transport: give at least one transport");
    }
    for t in &args.transports {
        msgpass::transport::by_name(t).map_err(|e| anyhow::anyhow!("--transport {t}: {e}"))?;
    }
    if let Some(s) = args.samples {
        check_samples(s)?;
    }
    if !(args.row_secs.is_finite() && args.row_secs > 0.0 && args.row_secs <= 3600.0) {
        bail!(
            "--row-secs {}: must be more than 0 and at most 3600 seconds",
            crate::cli::show_num(args.row_secs)
        );
    }
    if !(args.idle_secs == 0.0 || (0.1..=600.0).contains(&args.idle_secs)) {
        bail!(
            "--idle-secs {}: must be 0 (no baseline) or from 0.1 to 600 seconds \
             (a shorter baseline is below /proc/stat's resolution)",
            crate::cli::show_num(args.idle_secs)
        );
    }
    crate::cli::check_spin_us(args.spin_us)?;
    if args.modes.is_empty() {
        bail!("--modes: give at least one of one, multi");
    }
    let cpus = |flag: &str, l: &Option<String>| -> Result<CpuList> {
        match l {
            Some(l) => CpuList::parse(l).map_err(|e| anyhow::anyhow!("{flag} {l}: {e}")),
            None => Ok(CpuList::default()),
        }
    };
    Ok(Plan {
        threads,
        client_cpus: cpus("--client-cpus", &args.client_cpus)?,
        server_cpus: cpus("--server-cpus", &args.server_cpus)?,
    })
}

/// A private namespace directory for one run, removed on drop.
struct RunDir(Namespace);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0.root());
    }
}

/// True for a transport whose waits spin without bound.
fn spins(transport: &str) -> bool {
    msgpass::transport::info(transport).is_ok_and(|t| t.wait == msgpass::transport::Wait::Spin)
}

/// Runs the experiment, printing each table as it fills.
pub fn run(args: &AdderArgs, stop: Arc<AtomicBool>) -> Result<Report> {
    let plan = plan(args)?;
    let controls = args.sched.parse()?;
    if controls.fifo_priority.is_some() {
        if let Some(t) = args.transports.iter().find(|t| spins(t)) {
            bail!(
                "--fifo: transport {t} spins, and a spinning real-time thread never yields \
                 its CPU; choose a blocking or hybrid transport"
            );
        }
    }
    let _applied = args.sched.apply()?;
    let base = Namespace::resolve(args.ns.as_deref())?;
    let dir = RunDir(Namespace::open(
        base.root()
            .join(format!("adder-run-{}", std::process::id())),
    )?);
    let clock = Clock::best();
    let header = Header::capture(&clock);
    println!(
        "msgbench adder: {} CPUs, clock {}, {}\n{}",
        placement::cpu_count(),
        clock.describe(),
        match args.samples {
            Some(s) => format!("{s} round trips per thread"),
            None => format!("about {} s per row", args.row_secs),
        },
        header.environment.context_line(),
    );
    let idle = if args.idle_secs > 0.0 {
        Some(client::idle_baseline(args.idle_secs)?)
    } else {
        None
    };
    if let Some(i) = &idle {
        println!(
            "Idle baseline: {:.2}% busy over {} s",
            i.busy_pct, args.idle_secs
        );
    }
    let mut tables = Vec::new();
    for transport in &args.transports {
        println!("\nTransport {transport}:");
        println!("{}", table::header());
        let mut rows: Vec<Row> = Vec::new();
        for &mode in &args.modes {
            for &x in &plan.threads {
                let r = run_row(args, &plan, &dir.0, transport, mode, x, &clock, &stop)
                    .with_context(|| format!("{transport}, {}, {x} threads", mode.label()))?;
                let base = rows
                    .iter()
                    .find(|b| b.mode == mode && b.threads == 1)
                    .map(|b| b.rate_per_thread);
                let mut row = make_row(mode, x, r.run, idle.as_ref(), base);
                row.discarded_runs = r.discarded;
                println!(
                    "{}",
                    table::line(&row, rows.last().is_none_or(|p| p.mode != mode))
                );
                rows.push(row);
            }
        }
        tables.push(Table {
            transport: transport.clone(),
            rows,
        });
    }
    println!("{}", table::legend(&clock));
    if tables.iter().flat_map(|t| &t.rows).any(|r| r.cut) {
        println!(
            "* The row hit its time limit before its sample count: the rate fell 3x or more\n\
             during the run (threads outnumbering CPUs can flip between fast and slow phases).\n\
             Its figures are over the round trips done; every reply was still checked."
        );
    }
    if tables
        .iter()
        .flat_map(|t| &t.rows)
        .any(|r| !r.discarded_runs.is_empty())
    {
        println!("{}", table::RERUN_NOTE);
    }
    if tables
        .iter()
        .flat_map(|t| &t.rows)
        .any(|r| r.efficiency.is_some_and(|e| e > 1.2))
    {
        println!(
            "Note: Scaling above 100% means the 1-thread row ran in a slower placement. Unpinned, a lone\n\
             client and server are often woken across CPUs, which on a virtual machine costs tens of\n\
             microseconds; with more threads the scheduler packs pairs onto one CPU. Pin with\n\
             --client-cpus/--server-cpus to compare placements."
        );
    }
    let report = Report {
        header,
        idle,
        tables,
    };
    if let Some(p) = &args.json {
        report::json::write(p, &report)?;
    }
    Ok(report)
}

fn make_row(
    mode: Mode,
    x: u32,
    run: ClientRun,
    idle: Option<&CpuUsage>,
    base_rate: Option<f64>,
) -> Row {
    let efficiency = match (x, base_rate) {
        (1, _) => Some(1.0),
        (_, Some(b)) if b > 0.0 => Some(run.aggregate_rate / (x as f64 * b)),
        _ => None,
    };
    Row {
        mode,
        threads: x,
        samples_per_thread: run.samples,
        idle_pct: idle.map(|i| i.busy_pct),
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

/// Starts the servers of one row, sizes the run, runs it, stops them.
#[allow(clippy::too_many_arguments)]
fn run_row(
    args: &AdderArgs,
    plan: &Plan,
    ns: &Namespace,
    transport: &str,
    mode: Mode,
    x: u32,
    clock: &Clock,
    stop: &AtomicBool,
) -> Result<Sized> {
    let mut servers = Servers::start(mode, x, transport, ns, &plan.server_cpus, args.spin_us)?;
    let cfg = |samples: u64, timestamps: bool| RunConfig {
        ns,
        transport,
        opts: msgpass::Options {
            wait: Some(Duration::from_secs(10)),
            spin: Duration::from_micros(args.spin_us),
            ..msgpass::Options::default()
        },
        n: x,
        first: 0,
        samples,
        cpus: &plan.client_cpus,
        timestamps,
        clock,
        abort: stop,
        // Rows the suite sizes itself get a hard limit: a workload whose
        // rate flips between phases can make any chosen count last 100x
        // too long; stop at 3x the target. With -S the user's count is honoured exactly.
        time_limit: args
            .samples
            .is_none()
            .then(|| Duration::from_secs_f64((args.row_secs * 3.0).max(2.0))),
    };
    // Short runs warm up (and wait for) the servers and size the row.
    let samples = match args.samples {
        Some(s) => {
            client::run(&cfg(s.min(1000), false))?;
            s
        }
        None => {
            let rate = probe_rate(&|s| client::run(&cfg(s, false)), args.row_secs)?;
            ((rate * args.row_secs) as u64).clamp(crate::devctl::MIN_SAMPLES, u32::MAX as u64)
        }
    };
    let first = client::run(&cfg(samples, !args.no_timestamps))?;
    let sized = match args.samples {
        Some(_) => Sized {
            run: first,
            discarded: Vec::new(),
        },
        None => rerun_short(
            &|s| client::run(&cfg(s, !args.no_timestamps)),
            first,
            args.row_secs,
        )?,
    };
    servers.stop()?;
    Ok(sized)
}

/// A row's kept run and the runs of it that were thrown away.
struct Sized {
    run: ClientRun,
    discarded: Vec<DiscardedRun>,
}

/// A measured run of a row that was thrown away and run again (JSON
/// `discarded_runs`), with its figures and why.
#[derive(Debug, Clone, Serialize)]
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

/// How many times a short row is run again at most.
const MAX_RERUNS: usize = 3;

/// A bimodal workload can still fool the probe: a measured run shorter
/// than a third of `row_secs` (too short for /proc/stat's 10 ms ticks to
/// mean much) is run again, up to [`MAX_RERUNS`] times, sized from its
/// own rate to last `row_secs` (at least twice its count). The last run is
/// kept; the earlier ones are returned as discarded, with why.
fn rerun_short(
    run: &dyn Fn(u64) -> Result<ClientRun>,
    first: ClientRun,
    row_secs: f64,
) -> Result<Sized> {
    let mut kept = first;
    let mut discarded = Vec::new();
    while discarded.len() < MAX_RERUNS && kept.ave_duration_ns / 1e9 < row_secs / 3.0 {
        let s = ((kept.rate_per_thread * row_secs) as u64)
            .max(kept.samples * 2)
            .min(u32::MAX as u64);
        if s == kept.samples {
            break;
        }
        let next = run(s)?;
        let old = std::mem::replace(&mut kept, next);
        discarded.push(DiscardedRun {
            samples_per_thread: old.samples,
            ave_duration_ms: old.ave_duration_ns / 1e6,
            rate_per_thread: old.rate_per_thread,
            aggregate_rate: old.aggregate_rate,
            busy_pct: old.busy.map(|b| b.busy_pct),
            latency: old.latency.clone(),
            reason: format!(
                "lasted {:.0} ms, under a third of --row-secs {} ({:.0} ms); run again with {s} round trips per thread",
                old.ave_duration_ns / 1e6,
                crate::cli::show_num(row_secs),
                row_secs / 3.0 * 1e3
            ),
        });
    }
    Ok(Sized {
        run: kept,
        discarded,
    })
}

/// Per-thread rate from probe runs long enough to mean something: the
/// sample count grows until a probe lasts a tenth of the row (at least
/// 50 ms), because a very short probe can catch a fast or a slow phase of
/// a bimodal workload (spinning threads outnumbering CPUs) and size the row
/// a hundred times wrong.
fn probe_rate(run: &dyn Fn(u64) -> Result<ClientRun>, row_secs: f64) -> Result<f64> {
    let want = (row_secs / 10.0).max(0.05);
    let mut samples: u64 = 1000;
    loop {
        let probe = run(samples)?;
        let secs = probe.ave_duration_ns / 1e9;
        if secs >= want || samples >= u32::MAX as u64 / 4 {
            return Ok(probe.rate_per_thread);
        }
        let scale = if secs > 0.0 {
            (want * 1.2 / secs).clamp(2.0, 100.0)
        } else {
            100.0
        };
        samples = ((samples as f64 * scale) as u64).min(u32::MAX as u64 / 4);
    }
}

/// One-line summary of a row's latency, for the table.
pub(crate) fn latency_cells(l: &Option<LatencySummary>) -> (String, String) {
    match l {
        Some(l) => (fmt_ns(l.p50_ns), fmt_ns(l.p99_ns)),
        None => ("-".into(), "-".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `samples` round trips per thread at `rate` per second.
    fn fake(samples: u64, rate: f64) -> ClientRun {
        ClientRun {
            transport: "shm".into(),
            samples,
            threads: Vec::new(),
            busy: None,
            ave_duration_ns: samples as f64 / rate * 1e9,
            rate_per_thread: rate,
            aggregate_rate: rate,
            latency: None,
        }
    }

    #[test]
    fn a_short_row_is_rerun_and_the_json_keeps_the_discarded_run() {
        // The probe said 10k/s, the row ran at 1M/s: 1000 round trips in
        // 1 ms, far under a third of 0.3 s.
        let asked = std::cell::RefCell::new(Vec::new());
        let sized = rerun_short(
            &|s| {
                asked.borrow_mut().push(s);
                Ok(fake(s, 1e6))
            },
            fake(1000, 1e6),
            0.3,
        )
        .expect("runs");
        assert_eq!(*asked.borrow(), [300_000], "sized from its own rate");
        assert_eq!(sized.run.samples, 300_000);
        assert_eq!(sized.discarded.len(), 1);
        let mut row = make_row(Mode::One, 1, sized.run, None, None);
        row.discarded_runs = sized.discarded;
        assert!(
            table::line(&row, true).contains("ms+"),
            "marked in the table"
        );
        let json = serde_json::to_value(&row).expect("serialises");
        let d = &json["discarded_runs"];
        assert_eq!(d.as_array().map(Vec::len), Some(1), "{json}");
        assert_eq!(d[0]["samples_per_thread"], 1000, "{d}");
        assert_eq!(d[0]["ave_duration_ms"], 1.0, "{d}");
        assert_eq!(d[0]["rate_per_thread"], 1e6, "{d}");
        let why = d[0]["reason"].as_str().unwrap_or("");
        assert!(why.contains("under a third of --row-secs 0.3"), "{why}");
        assert_eq!(json["samples_per_thread"], 300_000, "the kept run: {json}");
    }

    #[test]
    fn a_row_of_the_asked_length_is_kept_and_nothing_is_discarded() {
        let sized =
            rerun_short(&|_| panic!("must not run again"), fake(300_000, 1e6), 0.3).expect("runs");
        assert!(sized.discarded.is_empty());
        let row = make_row(Mode::One, 1, sized.run, None, None);
        assert!(!table::line(&row, true).contains('+'));
        let json = serde_json::to_value(&row).expect("serialises");
        assert_eq!(json["discarded_runs"], serde_json::json!([]), "{json}");
    }

    #[test]
    fn reruns_stop_after_three() {
        // A row that stays short (every run lasts 1 ms) keeps the last run
        // and the three before it as discarded.
        let ms = |s: u64| fake(s, s as f64 * 1e3);
        let sized = rerun_short(&|s| Ok(ms(s)), ms(1000), 1.0).expect("runs");
        assert_eq!(sized.discarded.len(), MAX_RERUNS);
        let counts: Vec<u64> = sized
            .discarded
            .iter()
            .map(|d| d.samples_per_thread)
            .collect();
        assert_eq!(counts, [1000, 1_000_000, 1_000_000_000]);
        assert_eq!(sized.run.samples, u32::MAX as u64);
    }
}
