//! `msgbench adder`: the seed's whole experiment in one command. For each
//! placement (client and server pinned, or left to the scheduler), each
//! transport, each mode ("One process": one server process with X
//! threads, a path each; "Multi-process": X server processes; "Thread
//! pool (one path)": one server process serving one path from a pool of
//! X threads) and each X, run X client threads against embedded servers;
//! the seed's table, plus aggregate rate and scaling efficiency, is
//! printed at the end by the suite pipeline ([`crate::suites::execute`]).
//!
//! The idle baseline, measured once before the rows, is kept in each
//! row (`idle_pct`) and stated once in the results' `notes`.

pub mod judge;
mod options;
mod render;
mod row;
mod run;
mod servers;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, ValueEnum};
use serde::Serialize;

pub use options::AdderPlan;

pub use row::{DiscardedRun, Measured, Row};

use super::{OutputArgs, Results, RunContext, Suite};
use crate::measure::placement;
use crate::measure::sched::SchedArgs;
use crate::report::envelope::{Better, Figure};
use crate::report::table::Section;

/// How the X server threads are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One server process with X threads, each serving its own path
    /// (adder/0..adder/X-1), client thread k calling adder/k (the seed's).
    One,
    /// X server processes, one path each; client thread k calls adder/k
    /// (the seed's).
    Multi,
    /// One server process serving the one path adder/0 from a pool of X
    /// threads (1 to 64), every client thread calling that path (QNX's
    /// multithreaded resource manager).
    Pool,
}

impl Mode {
    /// The table's label (the seed's for `one` and `multi`).
    pub fn label(self) -> &'static str {
        match self {
            Mode::One => "One process",
            Mode::Multi => "Multi-process",
            Mode::Pool => "Thread pool (one path)",
        }
    }

    /// The figures' key value: `one`, `multi` or `pool`.
    pub fn key(self) -> &'static str {
        match self {
            Mode::One => "one",
            Mode::Multi => "multi",
            Mode::Pool => "pool",
        }
    }

    /// What it means, for the legend under the tables.
    pub fn describe(self) -> &'static str {
        match self {
            Mode::One => "one server process, X threads, each serving its own path",
            Mode::Multi => "X server processes, one path each",
            Mode::Pool => {
                "one server process serving the one path adder/0 from a pool of X threads, \
                 every client thread calling that path"
            }
        }
    }

    /// True when every client thread calls the one path adder/0.
    pub fn one_path(self) -> bool {
        self == Mode::Pool
    }
}

/// Where clients and servers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Client thread k and server instance (or pool thread) k pinned: to
    /// the k-th CPU of --client-cpus / --server-cpus, or both to the k-th
    /// online CPU (one client/server pair per CPU) when those are not
    /// given.
    Pinned,
    /// Every thread left to the scheduler.
    Unpinned,
}

impl Placement {
    /// The figures' key value: `pinned` or `unpinned`.
    pub fn key(self) -> &'static str {
        match self {
            Placement::Pinned => "pinned",
            Placement::Unpinned => "unpinned",
        }
    }
}

/// Options of `msgbench adder`.
#[derive(Debug, Clone, Args)]
pub struct AdderArgs {
    /// Thread counts X to run, e.g. 1,2,4 or 1-6 (1 to 128; 1 to 64 with
    /// pool mode) [default: 1 to CPUs+2, within those bounds].
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
    /// Server models to run at every X, comma-separated, each once: one,
    /// multi, pool (the tables' Mode column).
    #[arg(
        long = "modes",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "one,multi,pool"
    )]
    pub modes: Vec<Mode>,
    /// Placements to run, in order: pinned (--client-cpus/--server-cpus,
    /// else one client/server pair per CPU), unpinned [default: pinned
    /// when --client-cpus or --server-cpus is given, else unpinned].
    #[arg(long = "placement", value_name = "LIST", value_delimiter = ',')]
    pub placements: Vec<Placement>,
    /// Pin client thread k to the k-th CPU of LIST (pinned rows).
    #[arg(long = "client-cpus", value_name = "LIST")]
    pub client_cpus: Option<String>,
    /// Pin server instance (or pool thread) k to the k-th CPU of LIST
    /// (pinned rows).
    #[arg(long = "server-cpus", value_name = "LIST")]
    pub server_cpus: Option<String>,
    /// Namespace under which a private run directory is made.
    #[arg(long = "ns", value_name = "DIR")]
    pub ns: Option<PathBuf>,
    /// Hybrid waiting: spin budget in microseconds.
    #[arg(long = "spin-us", value_name = "US", default_value_t = 20)]
    pub spin_us: u64,
    /// Time whole runs only (no per-request timestamps).
    #[arg(long = "no-timestamps")]
    pub no_timestamps: bool,
    /// Also run every row with the copying API (Connection::call /
    /// Request::reply with buffers of our own), each right after its
    /// in-place twin, side by side in the tables [default: in place only].
    #[arg(long = "copy")]
    pub copy: bool,
    /// Scheduling controls: --fifo, --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: SchedArgs,
    /// --format, --json.
    #[command(flatten)]
    pub output: OutputArgs,
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

/// `msgbench adder`.
pub struct Adder;

impl Suite for Adder {
    const NAME: &'static str = "adder";
    type Args = AdderArgs;
    type Plan = AdderPlan;
    type Row = Row;

    fn plan(args: &AdderArgs) -> Result<AdderPlan> {
        options::plan(args)
    }

    fn sched(args: &AdderArgs) -> Option<&SchedArgs> {
        Some(&args.sched)
    }

    fn estimate(plan: &AdderPlan) -> Duration {
        Duration::from_secs_f64(plan.idle_secs) + plan.row_estimate() * plan.row_count() as u32
    }

    fn banner(plan: &AdderPlan, cx: &RunContext) -> String {
        format!(
            "msgbench adder: {} CPUs, clock {}, {}",
            placement::cpu_count(),
            cx.clock.describe(),
            match plan.samples {
                Some(s) => format!("{s} round trips per thread"),
                None => format!("about {} s per row", plan.row_secs),
            },
        )
    }

    fn run(plan: &AdderPlan, cx: &RunContext) -> Result<Results<Row>> {
        run::run(plan, cx)
    }

    fn sections(plan: &AdderPlan, results: &Results<Row>) -> Vec<Section> {
        render::sections(plan, results)
    }

    fn figures(results: &Results<Row>) -> Vec<Figure> {
        results.rows.iter().flat_map(figures).collect()
    }
}

/// A row's figures, keyed by transport, mode, threads and placement,
/// plus `api: copy` for the copying rows of `--copy` (so the default
/// in-place rows keep the keys of earlier results; docs/results.md); a
/// failed row has none.
fn figures(r: &Row) -> Vec<Figure> {
    let Some(m) = &r.measured else {
        return Vec::new();
    };
    let key = vec![
        ("transport", r.transport.clone()),
        ("api", r.api.key().to_string()),
        ("mode", r.mode.key().to_string()),
        ("threads", r.threads.to_string()),
        ("placement", r.placement.key().to_string()),
    ];
    let mut out = vec![
        Figure::new(
            &key,
            "rate_per_thread",
            m.rate_per_thread,
            "msg/s",
            Better::Higher,
        ),
        Figure::new(
            &key,
            "aggregate_rate",
            m.aggregate_rate,
            "msg/s",
            Better::Higher,
        ),
    ];
    if let Some(b) = m.busy_pct {
        out.push(Figure::new(&key, "cpu_busy", b, "%", Better::Neither));
    }
    if let Some(l) = &m.latency {
        out.push(Figure::new(&key, "p50_ns", l.p50_ns, "ns", Better::Lower));
        out.push(Figure::new(&key, "p99_ns", l.p99_ns, "ns", Better::Lower));
    }
    out
}
