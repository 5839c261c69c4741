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
//! budget. The measurement itself is [`crate::pingpong::floor`], which
//! other suites call to embed a floor in their results.

mod options;
mod table;

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use clap::Args;
use serde::Serialize;

pub use crate::pingpong::floor::{FloorKind, FloorReport, FloorRow, RUNS};

use crate::measure::clock::Clock;
use crate::measure::placement::format_list;
use crate::report::{self, Header};

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

/// The JSON document of `msgbench floor --json`.
#[derive(Debug, Serialize)]
struct Document<'a> {
    #[serde(flatten)]
    header: Header,
    #[serde(flatten)]
    floor: &'a FloorReport,
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
    let floor = crate::pingpong::floor::measure_until(args.quick, &cpus, &stop)?;
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
