//! `msgbench validate`: msgbench's measurements next to the installed
//! reference tools, same placement and priority.
//!
//! - `perf bench sched pipe -T` against [`crate::pingpong::pipe`] (round trip
//!   over two pipes), on one CPU and floating on two;
//! - rt-tests' ptsematest, pmqtest, svsematest and sigwaittest against
//!   hand-overs measured the same way (`handover`);
//! - cyclictest against a periodic `clock_nanosleep` (`timer`).
//!
//! Each row shows the reference figure, ours, the ratio and whether they
//! agree within the tolerance band documented in docs/methodology.md
//! ("Validation"), which the row carries. Disagreement is reported
//! (exit 0); a missing tool skips its row and says how to install it; a
//! tool that fails or prints something unparsable is an error for its
//! row (a failed row of the envelope's outcome), and the exit status is
//! then 1. The suite runs through [`crate::suites::execute`], like every
//! suite.

mod handover;
mod judge;
mod mutex;
mod options;
mod parse;
mod pmq;
mod render;
mod row;
mod run;
mod sched;
mod sigwait;
mod svsem;
mod timer;
mod tools;

use std::time::Duration;

use anyhow::Result;

pub use options::{Plan, ValidateArgs};
pub use render::figures as row_figures;
pub use row::{Figure, Row, Tolerance, Verdict};

use super::{Results, RunContext, Suite};
use crate::results::envelope;
use crate::results::table::Section;

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
        run::specs(plan).iter().map(|s| s.planned).sum()
    }

    fn banner(plan: &Plan, _: &RunContext) -> String {
        banner(plan)
    }

    fn run(plan: &Plan, cx: &RunContext) -> Result<Results<Row>> {
        run::run(plan, cx)
    }

    fn sections(_: &Plan, results: &Results<Row>) -> Vec<Section> {
        vec![
            Section::Table(render::table(&results.rows)),
            Section::Text(render::details(&results.rows, &results.notes)),
        ]
    }

    fn figures(results: &Results<Row>) -> Vec<envelope::Figure> {
        results.rows.iter().flat_map(render::figures).collect()
    }

    fn judge(_: &Plan, results: &Results<Row>) -> Vec<String> {
        judge::verdicts(&results.rows)
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_planned_and_the_banner_tells_the_plan() {
        let plan = ValidateArgs {
            cpus: crate::suites::args::Cpus::of(crate::measure::placement::CpuList(vec![0])),
            loops: Some(40),
            ..ValidateArgs::default()
        }
        .plan()
        .unwrap();
        // One CPU: no two-CPU pipe row; 4 hand-overs and the timer.
        let specs = run::specs(&plan);
        assert_eq!(specs.len(), 6);
        assert!(specs.iter().all(|s| s.planned > Duration::ZERO));
        // Each latency row: 4 runs of 10 loops, both sides, 1 ms apart.
        assert_eq!(specs[1].planned, Duration::from_millis(80));
        let b = banner(&plan);
        assert!(b.contains("CPU 0; no two-CPU row"), "{b}");
        assert!(b.contains("40 per latency row"), "{b}");
    }
}
