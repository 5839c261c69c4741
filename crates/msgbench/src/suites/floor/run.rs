//! Running `msgbench floor`: the measurement of [`crate::pingpong::floor`]
//! as one progress item, stopped early when the run is interrupted.

use std::time::Duration;

use anyhow::Result;

use super::options::FloorPlan;
use crate::pingpong::floor::{self as measurement, FloorRow};
use crate::suites::{Results, RowStatus, RunContext, SuiteRow};

/// Measures the floor of `plan`; `estimate` is the item's planned length.
pub fn run(plan: &FloorPlan, cx: &RunContext, estimate: Duration) -> Result<Results<FloorRow>> {
    cx.progress.start("ping-pongs and costs");
    let floor = measurement::measure_until(plan.quick, &plan.cpus, &cx.stop)?;
    cx.progress.done(estimate);
    Ok(Results::new(floor.rows))
}

/// Every floor row counts as measured: an interruption is the stop
/// flag's, read by the pipeline.
impl SuiteRow for FloorRow {
    fn status(&self) -> RowStatus {
        RowStatus::Ok
    }
}
