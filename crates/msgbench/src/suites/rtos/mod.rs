//! `msgbench rtos`: the RTOS evaluation catalogue (docs/methodology.md, "msgbench rtos")
//! on Linux: behaviour tests (PASS/FAIL with the observed order of events)
//! and timing tests (samples, avg, min, max, p50, p99, p99.9, next to the
//! lab's QNX 6.5 figure), by test ID or group.
//!
//! Layout: `def.rs` says what a test is ([`TestDef`], [`Variant`]);
//! `run.rs` lists every test, runs one, and runs a plan's tests in order;
//! each group lives in its own file (`cal.rs`, `clk.rs`, `thr.rs`,
//! `sem.rs`, `mutex.rs`, `irq.rs`, `mem.rs`, `msg.rs` with `msginv.rs`) and
//! returns its definitions; `msgpeer.rs` is the MSG tests' server process
//! (the hidden `msgbench rtos-peer`) and `msgserver.rs` the side both MSG
//! files share (starting it, connecting, the WORK call); `row.rs` holds what a test produces;
//! `ctx.rs` what a test is given; `rt.rs` the real-time helpers
//! (SCHED_FIFO threads, pinning); `judge.rs` counts the outcomes;
//! `render.rs` draws the tables and the generic figures; [`Rtos`] runs it
//! all through the suite pipeline ([`crate::suites::execute`]).

mod ctx;
mod def;
mod inherit_table; // MSG-P-PRI against MSG-P-SRR per transport
mod judge;
mod options;
mod render;
mod row;
pub mod rt;
mod run;

mod cal;
mod clk;
mod irq;
mod mem;
mod msg; // MSG: round trips between processes (MSG-P-SRR, MSG-P-PRI)
mod msginv; // MSG-B-PRI
pub mod msgpeer; // the MSG tests' server process (`msgbench rtos-peer`)
mod msgserver; // the MSG tests' server process, connection and WORK call
mod mutex;
pub mod prims; // SEM and MUT primitives (prims/)
mod rtthread;
mod sem;
mod thr; // threads with explicit scheduling, futex gate (CAL, CLK, THR)

use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

pub use ctx::{Ctx, SemKind};
pub use def::{TestDef, Variant};
pub use options::{Plan, RtosArgs};
pub use render::figures as result_figures;
pub use row::{Group, Outcome, Reference, Sample, TestResult, Timing, Unit};
pub use run::catalogue;

use super::{Results, RunContext, Suite};
use crate::measure::sched::SchedArgs;
use crate::results::envelope::Figure;
use crate::results::table::Section;

/// `msgbench rtos`.
///
/// Outcome counts: FAIL verdicts and errors are `failed` (exit status
/// 1), skipped tests `skipped`; an inconclusive verdict is neither, and
/// the rtos summary line (passed, failed, inconclusive, measured,
/// skipped, errors) is kept in the envelope's `verdicts` for that reason.
pub struct Rtos;

impl Suite for Rtos {
    const NAME: &'static str = "rtos";
    type Args = RtosArgs;
    type Plan = Plan;
    type Row = TestResult;

    fn plan(args: &RtosArgs) -> Result<Plan> {
        options::plan(args)
    }

    fn sched(args: &RtosArgs) -> Option<&SchedArgs> {
        Some(&args.sched)
    }

    fn estimate(plan: &Plan) -> Duration {
        plan.tests
            .iter()
            .map(|t| run::planned(t, plan.quick, plan.duration) * run::times(t, plan))
            .sum()
    }

    fn banner(plan: &Plan, cx: &RunContext) -> String {
        format!(
            "msgbench rtos: {} tests, clock {}, semaphores: {}\n{}",
            plan.tests.len(),
            cx.clock.describe(),
            plan.sem.name(),
            if rt::fifo_allowed() {
                "Real-time priority available: priority tests run pinned at SCHED_FIFO."
            } else {
                "No real-time priority (needs CAP_SYS_NICE): priority tests are skipped."
            }
        )
    }

    fn run(plan: &Plan, cx: &RunContext) -> Result<Results<TestResult>> {
        let mut ctx = Ctx::new(
            plan.quick,
            plan.sem,
            plan.duration,
            cx.clock,
            Arc::clone(&cx.stop),
        );
        ctx.msg_inherit = plan.msg_inherit;
        run::run(&plan.tests, plan, &mut ctx, cx)
    }

    fn sections(plan: &Plan, results: &Results<TestResult>) -> Vec<Section> {
        render::sections(plan, &results.rows, results.outcome.interrupted)
    }

    fn figures(results: &Results<TestResult>) -> Vec<Figure> {
        results.rows.iter().flat_map(render::figures).collect()
    }

    fn judge(_plan: &Plan, results: &Results<TestResult>) -> Vec<String> {
        judge::verdicts(&results.rows, results.outcome.interrupted)
    }
}
