//! `msgbench floor`: the hardware and kernel limits of this machine, the
//! figures every transport is compared with.
//!
//! - one cache line bouncing between two spinning threads, and between two
//!   processes sharing a memfd mapping (the peer is forked), for each
//!   ordered pair of distinct CPUs, plus one same-CPU pair where each look
//!   is followed by `sched_yield`;
//! - a bare process-shared futex wait/wake ping-pong, same CPU and
//!   different CPUs;
//! - the cost of one `clock_gettime(CLOCK_MONOTONIC)` (vDSO), one `rdtsc`
//!   and one trivial system call.
//!
//! Every figure is the median of [`RUNS`] runs, each timed as a whole, and
//! is shown with its spread, (max - min) / median. The length of a run is
//! chosen from a short probe so that the whole measurement fits a time
//! budget. [`measure`] is what other suites call to embed a floor in their
//! JSON.

mod options;
mod rows;
mod table;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

pub use rows::{FloorKind, FloorRow};

use crate::measure::clock::Clock;
use crate::measure::placement::format_list;
use crate::report::{self, Header};

/// Runs behind every figure (the median is reported).
pub const RUNS: usize = 5;

/// Options of `msgbench floor`.
#[derive(Debug, Clone, Default, Args)]
pub struct FloorArgs {
    /// A short run (about a second), each figure over fewer round trips.
    #[arg(long = "quick")]
    pub quick: bool,
    /// Write the environment and every row to FILE.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// CPUs to measure between, e.g. 0-3,6 [default: every online CPU].
    #[arg(long = "cpus", value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// Scheduling controls: --fifo (spinning rows are then left out),
    /// --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: crate::measure::sched::SchedArgs,
}

/// The floor of this machine: every row, as embedded in JSON.
#[derive(Debug, Clone, Serialize)]
pub struct FloorReport {
    /// Whether the short (`--quick`) lengths were used.
    pub quick: bool,
    /// Runs behind each figure.
    pub runs_per_figure: usize,
    /// The CPUs measured between, in order.
    pub cpus: Vec<usize>,
    /// Every figure, in measurement order.
    pub rows: Vec<FloorRow>,
}

impl FloorReport {
    /// The lowest cache-line round trip between threads, ns, on one CPU
    /// (yielding) or on two; `None` if not measured.
    pub fn cacheline_ns(&self, same_cpu: bool) -> Option<f64> {
        self.lowest(FloorKind::CachelineThreads, same_cpu)
    }

    /// The lowest futex wait/wake round trip, ns, on one CPU or on two;
    /// `None` if not measured.
    pub fn futex_ns(&self, same_cpu: bool) -> Option<f64> {
        self.lowest(FloorKind::Futex, same_cpu)
    }

    /// The figure of a cost row (clock read, system call), ns per call.
    pub fn cost_ns(&self, kind: FloorKind) -> Option<f64> {
        self.rows.iter().find(|r| r.kind == kind).map(|r| r.ns)
    }

    fn lowest(&self, kind: FloorKind, same_cpu: bool) -> Option<f64> {
        self.rows
            .iter()
            .filter(|r| r.kind == kind && r.same_cpu == Some(same_cpu))
            .map(|r| r.ns)
            .min_by(f64::total_cmp)
    }
}

/// The JSON document of `msgbench floor --json`.
#[derive(Debug, Serialize)]
struct Document<'a> {
    #[serde(flatten)]
    header: Header,
    #[serde(flatten)]
    floor: &'a FloorReport,
}

/// Measures the floor between `cpus` (same-CPU rows on the first one,
/// cross-CPU rows for every ordered pair of distinct ones). `quick` keeps
/// it to well under a second for one or two CPUs.
pub fn measure(quick: bool, cpus: &[usize]) -> Result<FloorReport> {
    rows::measure(quick, cpus, &AtomicBool::new(false))
}

/// Runs `msgbench floor`: measures, prints the table, writes the JSON.
pub fn run(args: &FloorArgs, stop: Arc<AtomicBool>) -> Result<FloorReport> {
    let cpus = options::cpus(args.cpus.as_deref())?;
    let _applied = args.sched.apply()?;
    let clock = Clock::best();
    let header = Header::capture(&clock);
    println!(
        "msgbench floor: CPUs {}, clock {}; each figure the median of {RUNS} runs\n{}\n",
        format_list(&cpus),
        clock.describe(),
        header.environment.context_line(),
    );
    let floor = rows::measure(args.quick, &cpus, &stop)?;
    println!("{}\n\n{}", table::table(&floor.rows), table::legend());
    if let Some(p) = &args.json {
        report::json::write(
            p,
            &Document {
                header,
                floor: &floor,
            },
        )?;
    }
    Ok(floor)
}
