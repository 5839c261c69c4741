//! `msgbench validate`: msgbench's measurements next to the installed
//! reference tools, same placement and priority.
//!
//! - `perf bench sched pipe -T` against [`crate::pingpong::pipe`] (round trip
//!   over two pipes), on one CPU and floating on two;
//! - rt-tests' ptsematest, pmqtest, svsematest and sigwaittest against
//!   hand-overs measured the same way ([`handover`]);
//! - cyclictest against a periodic `clock_nanosleep` ([`timer`]).
//!
//! Each row shows the reference figure, ours, the ratio and whether they
//! agree within the tolerance documented in docs/methodology.md
//! ("Validation"). Disagreement is reported (exit 0); a missing tool says
//! how to install it; a tool that fails or prints something unparsable is
//! an error for its row, and the exit status is then 1.

mod compare;
mod handover;
mod mutex;
mod options;
mod parse;
mod pmq;
mod rows;
mod sched;
mod sigwait;
mod svsem;
mod table;
mod timer;
mod tools;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Result};
use serde::Serialize;

pub use compare::{Figure, Row, Tolerance, Verdict};
pub use options::ValidateArgs;

use crate::measure::clock::Clock;
use crate::report::{self, Header};

/// The settings a run used, as stored in JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// CPU of the same-CPU rows.
    pub cpu: usize,
    /// CPUs of the cross-CPU row.
    pub pair: Option<(usize, usize)>,
    /// SCHED_FIFO priority (receivers; wakers one below), or none.
    pub fifo: Option<i32>,
    /// Latency loops per row.
    pub loops: u64,
    /// Round trips per pipe row.
    pub perf_loops: u64,
    /// Interval of the latency rows, microseconds.
    pub interval_us: u64,
    /// Whether msgbench's memory was locked (as the tools lock theirs).
    pub memory_locked: bool,
}

/// The whole report (`--json`).
#[derive(Debug, Serialize)]
pub struct Report {
    /// Environment and clock.
    pub header: Header,
    /// What was run.
    pub settings: Settings,
    /// One per comparison.
    pub rows: Vec<Row>,
}

/// Runs every comparison and prints the table.
pub fn run(args: &ValidateArgs, stop: Arc<AtomicBool>) -> Result<Report> {
    let plan = args.plan()?;
    if let Some(p) = plan.fifo {
        sched::check_fifo_allowed(p)?;
    }
    let memory_locked = sched::lock_memory();
    let settings = Settings {
        cpu: plan.cpu,
        pair: plan.pair,
        fifo: plan.fifo,
        loops: plan.loops,
        perf_loops: plan.perf_loops,
        interval_us: options::INTERVAL.as_micros() as u64,
        memory_locked,
    };
    println!("msgbench validate: msgbench next to the reference tools");
    println!(
        "placement: same-CPU rows on CPU {}; {}",
        plan.cpu,
        match plan.pair {
            Some((a, b)) => format!("two-CPU row floating on CPUs {a},{b}"),
            None => "no two-CPU row (one CPU)".into(),
        }
    );
    println!(
        "priority: {}",
        match plan.fifo {
            Some(p) => format!(
                "SCHED_FIFO {p} (rt-tests rows: receiver {p}, waker {})",
                handover::sender_prio(p)
            ),
            None => "normal scheduling (SCHED_OTHER); --fifo PRIO for SCHED_FIFO".into(),
        }
    );
    println!(
        "loops: {} per latency row ({} us interval), {} round trips per pipe row; memory locked: {}\n",
        plan.loops,
        settings.interval_us,
        plan.perf_loops,
        if memory_locked { "yes" } else { "no" }
    );
    let mut rows = Vec::new();
    for spec in rows::specs(&plan) {
        if stop.load(Ordering::SeqCst) {
            bail!("interrupted");
        }
        rows.push(rows::run(&spec));
    }
    print!("{}", table::render(&rows));
    let report = Report {
        header: Header::capture(&Clock::monotonic()),
        settings,
        rows,
    };
    if let Some(path) = &plan.json {
        report::json::write(path, &report)?;
    }
    let errors = report
        .rows
        .iter()
        .filter(|r| r.verdict == Verdict::Error)
        .count();
    if errors > 0 {
        bail!("{errors} row(s) could not be compared (see the notes above)");
    }
    Ok(report)
}
