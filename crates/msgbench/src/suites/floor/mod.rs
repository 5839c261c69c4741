//! `msgbench floor`: the hardware and kernel limits of this machine, the
//! figures every transport is compared with.
//!
//! - one cache line bouncing between two spinning threads, and between two
//!   processes sharing a memfd mapping (the peer is forked), for each
//!   ordered pair of distinct CPUs, plus one same-CPU pair where each look
//!   is followed by `sched_yield`;
//! - a bare process-shared futex wait/wake ping-pong, same CPU and
//!   different CPUs;
//! - the cost of one `clock_gettime(CLOCK_MONOTONIC)` (vDSO), one `rdtsc`,
//!   one trivial system call and one spin-wait hint (`pause`).
//!
//! Every figure is the median of [`RUNS`] runs, each timed as a whole, and
//! is shown with its spread, (max - min) / median. The length of a run is
//! chosen from a short probe so that the whole measurement fits a time
//! budget. The measurement itself is [`crate::pingpong::floor`], which
//! other suites call to embed a floor in their results.

mod options;
mod render;
mod run;

use std::time::Duration;

use anyhow::Result;

pub use crate::pingpong::floor::{FloorKind, FloorReport, FloorRow, RUNS};
pub use options::{FloorArgs, FloorPlan};

use super::{Results, RunContext, Suite};
use crate::measure::placement::format_list;
use crate::measure::sched::SchedArgs;
use crate::pingpong::floor::{BUDGET, QUICK_BUDGET};
use crate::results::envelope::Figure;
use crate::results::table::Section;

/// `msgbench floor`.
pub struct Floor;

impl Suite for Floor {
    const NAME: &'static str = "floor";
    type Args = FloorArgs;
    type Plan = FloorPlan;
    type Row = FloorRow;

    fn plan(args: &FloorArgs) -> Result<FloorPlan> {
        options::plan(args)
    }

    fn sched(args: &FloorArgs) -> Option<&SchedArgs> {
        Some(&args.sched)
    }

    fn estimate(plan: &FloorPlan) -> Duration {
        if plan.quick {
            QUICK_BUDGET
        } else {
            BUDGET
        }
    }

    fn banner(plan: &FloorPlan, cx: &RunContext) -> String {
        format!(
            "msgbench floor: CPUs {}, clock {}; each figure the median of {RUNS} runs",
            format_list(&plan.cpus),
            cx.clock.describe(),
        )
    }

    fn run(plan: &FloorPlan, cx: &RunContext) -> Result<Results<FloorRow>> {
        run::run(plan, cx, Self::estimate(plan))
    }

    fn sections(_: &FloorPlan, results: &Results<FloorRow>) -> Vec<Section> {
        vec![
            Section::Table(render::table(&results.rows)),
            Section::Text(render::legend()),
        ]
    }

    fn figures(results: &Results<FloorRow>) -> Vec<Figure> {
        results.rows.iter().map(render::figure).collect()
    }
}
