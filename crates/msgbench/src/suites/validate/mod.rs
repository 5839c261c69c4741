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

mod handover;
mod judge;
mod mutex;
mod options;
mod parse;
mod pmq;
mod render;
mod run;
mod sched;
mod sigwait;
mod svsem;
mod timer;
mod tools;

use std::time::Duration;

use anyhow::Result;

pub use judge::{Figure, Row, Tolerance, Verdict};
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
        run::specs(plan).iter().map(|s| s.planned).sum()
    }

    fn banner(plan: &Plan, _: &RunContext) -> String {
        banner(plan)
    }

    fn run(plan: &Plan, cx: &RunContext) -> Result<Results<Row>> {
        let memory_locked = sched::lock_memory();
        let mut rows = Vec::new();
        for spec in run::specs(plan) {
            if cx.stopped() {
                break;
            }
            cx.progress.start(spec.name);
            rows.push(run::run(&spec));
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
            Section::Table(render::table(&results.rows)),
            Section::Text(render::details(&results.rows, &results.notes)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn row(verdict: Verdict, measured: bool) -> Row {
        Row {
            name: "pipe".into(),
            tool: "perf".into(),
            command: "perf".into(),
            runs: 4,
            ours_method: "ours".into(),
            placement: "CPU 0".into(),
            priority: "normal".into(),
            reference: measured.then(|| Figure::avg(10.0)),
            ours: measured.then(|| Figure::avg(12.0)),
            ratio: measured.then_some(1.2),
            tolerance: judge::ROUND_TRIP,
            verdict,
            note: None,
        }
    }

    #[test]
    fn a_compared_row_gives_its_ratio_and_both_sides() {
        let f = figures(&row(Verdict::Agree, true));
        let got: Vec<(String, &str, f64)> = f
            .iter()
            .map(|f| (f.key_text(), f.metric.as_str(), f.value))
            .collect();
        assert_eq!(
            got,
            [
                ("check=pipe".to_string(), "ratio", 1.2),
                ("check=pipe side=reference".to_string(), "avg_us", 10.0),
                ("check=pipe side=ours".to_string(), "avg_us", 12.0),
            ]
        );
        assert_eq!(f[0].better, Better::Neither);
        assert_eq!(f[1].unit, "us");
        assert!(figures(&row(Verdict::Missing, false)).is_empty());
    }

    #[test]
    fn errors_fail_and_missing_tools_skip() {
        let rows = [
            row(Verdict::Error, false),
            row(Verdict::Missing, false),
            row(Verdict::Disagree, true),
        ];
        assert_eq!(count(&rows, Verdict::Error), 1);
        assert_eq!(count(&rows, Verdict::Missing), 1);
    }

    #[test]
    fn every_row_is_planned_and_the_banner_tells_the_plan() {
        let plan = ValidateArgs {
            cpus: Some("0".into()),
            loops: Some("40".into()),
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
