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
//! agree within the tolerance band documented in docs/methodology.md
//! ("Validation"), which the row carries. Disagreement is reported
//! (exit 0); a missing tool skips its row and says how to install it; a
//! tool that fails or prints something unparsable is an error for its
//! row (a failed row of the envelope's outcome), and the exit status is
//! then 1. The suite runs through [`crate::suites::execute`], like every
//! suite.

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

use std::time::Duration;

use anyhow::Result;

pub use compare::{Figure, Row, Tolerance, Verdict};
pub use options::{Plan, ValidateArgs};

use super::{Results, RunContext, Suite};
use crate::report::envelope::{self, Better};
use crate::report::table::Section;

/// `msgbench validate`.
pub struct Validate;

impl Suite for Validate {
    const NAME: &'static str = "validate";
    type Args = ValidateArgs;
    type Plan = Plan;
    type Row = Row;

    fn plan(args: &ValidateArgs) -> Result<Plan> {
        let plan = args.plan()?;
        if let Some(p) = plan.fifo {
            sched::check_fifo_allowed(p)?;
        }
        Ok(plan)
    }

    fn estimate(plan: &Plan) -> Duration {
        rows::specs(plan).iter().map(|s| s.planned).sum()
    }

    fn banner(plan: &Plan, _: &RunContext) -> String {
        banner(plan)
    }

    fn run(plan: &Plan, cx: &RunContext) -> Result<Results<Row>> {
        let memory_locked = sched::lock_memory();
        let mut rows = Vec::new();
        for spec in rows::specs(plan) {
            if cx.stopped() {
                break;
            }
            cx.progress.start(spec.name);
            rows.push(rows::run(&spec));
            cx.progress.done(spec.planned);
        }
        let mut r = Results::new(rows);
        r.outcome.failed = count(&r.rows, Verdict::Error);
        r.outcome.skipped = count(&r.rows, Verdict::Missing);
        r.outcome.interrupted = cx.stopped();
        r.notes.push(format!(
            "memory locked (as the tools' -m): {}",
            if memory_locked { "yes" } else { "no" }
        ));
        Ok(r)
    }

    fn sections(_: &Plan, results: &Results<Row>) -> Vec<Section> {
        vec![
            Section::Table(table::table(&results.rows)),
            Section::Text(table::details(&results.rows, &results.notes)),
        ]
    }

    fn figures(results: &Results<Row>) -> Vec<envelope::Figure> {
        results.rows.iter().flat_map(figures).collect()
    }
}

/// Rows with `verdict`.
fn count(rows: &[Row], verdict: Verdict) -> usize {
    rows.iter().filter(|r| r.verdict == verdict).count()
}

/// What is run, where, at which priority, how long.
fn banner(plan: &Plan) -> String {
    let placement = match plan.pair {
        Some((a, b)) => format!("two-CPU row floating on CPUs {a},{b}"),
        None => "no two-CPU row (one CPU)".into(),
    };
    let priority = match plan.fifo {
        Some(p) => format!(
            "SCHED_FIFO {p} (rt-tests rows: receiver {p}, waker {})",
            handover::sender_prio(p)
        ),
        None => "normal scheduling (SCHED_OTHER); --fifo PRIO for SCHED_FIFO".into(),
    };
    format!(
        "msgbench validate: msgbench next to the reference tools\n\
         placement: same-CPU rows on CPU {}; {placement}\n\
         priority: {priority}\n\
         loops: {} per latency row ({} us interval), {} round trips per pipe row",
        plan.cpu, plan.loops, plan.interval_us, plan.perf_loops,
    )
}

/// A row as generic figures: the ratio (keyed by `check`), and each
/// side's average (keyed by `check` and `side`), where measured.
fn figures(r: &Row) -> Vec<envelope::Figure> {
    let check = || ("check", r.name.clone());
    let mut v = Vec::new();
    if let Some(x) = r.ratio {
        v.push(envelope::Figure::new(
            &[check()],
            "ratio",
            x,
            "ratio",
            Better::Neither,
        ));
    }
    for (side, f) in [("reference", &r.reference), ("ours", &r.ours)] {
        if let Some(f) = f {
            v.push(envelope::Figure::new(
                &[check(), ("side", side.to_string())],
                "avg_us",
                f.avg_us,
                "us",
                Better::Lower,
            ));
        }
    }
    v
}
