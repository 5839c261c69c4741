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
mod past_cores;
mod render;
mod row;
mod run;
mod servers;

use std::time::Duration;

use anyhow::Result;

pub use options::{AdderArgs, AdderPlan, Mode, Placement};

pub use row::{DiscardedRun, Measured, Row};

use super::{Results, RunContext, Suite};
use crate::measure::placement;
use crate::measure::sched::SchedArgs;
use crate::results::envelope::Figure;
use crate::results::table::Section;

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
        results.rows.iter().flat_map(render::row_figures).collect()
    }

    /// Does messaging scale or is there a global lock, and which server
    /// model scales best: the sentences printed under the tables.
    fn judge(_plan: &AdderPlan, results: &Results<Row>) -> Vec<String> {
        let cpus = placement::cpu_count();
        [
            judge::verdict(&results.rows, cpus),
            judge::models(&results.rows, cpus),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}
