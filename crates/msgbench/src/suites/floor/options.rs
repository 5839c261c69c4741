//! The options of `msgbench floor` ([`FloorArgs`]) and their checked
//! settings ([`FloorPlan`]): the CPU list, checked with one-line errors
//! naming the option.

use anyhow::{anyhow, Result};
use clap::Args;
use serde::Serialize;

use crate::measure::placement::cpus_option;
use crate::measure::sched::SchedArgs;
use crate::pingpong::floor::RUNS;
use crate::suites::OutputArgs;

/// Options of `msgbench floor`.
#[derive(Debug, Clone, Default, Args)]
pub struct FloorArgs {
    /// A short run (about a second), each figure over fewer round trips.
    #[arg(long = "quick")]
    pub quick: bool,
    /// CPUs to measure between, e.g. 0-3,6 [default: every online CPU].
    #[arg(long = "cpus", value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// Scheduling controls: --fifo (spinning rows are then left out),
    /// --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: SchedArgs,
    /// --format, --json.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The checked settings of `msgbench floor`.
#[derive(Debug, Clone, Serialize)]
pub struct FloorPlan {
    /// `--quick`.
    pub quick: bool,
    /// The CPUs measured between, in order.
    pub cpus: Vec<usize>,
    /// Runs behind each figure.
    pub runs_per_figure: usize,
}

/// The checked settings of `args`: the scheduling controls and the CPU
/// list.
pub fn plan(args: &FloorArgs) -> Result<FloorPlan> {
    args.sched.parse()?;
    Ok(FloorPlan {
        quick: args.quick,
        cpus: cpus(args.cpus.as_deref())?,
        runs_per_figure: RUNS,
    })
}

/// The CPUs to measure between: `list` (ranges allowed, repeats dropped,
/// every CPU online) or, without it, every online CPU.
pub fn cpus(list: Option<&str>) -> Result<Vec<usize>> {
    cpus_option(list).map_err(|e| anyhow!(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::placement::online_cpus;

    #[test]
    fn default_is_every_online_cpu() {
        assert_eq!(cpus(None).unwrap(), online_cpus());
    }

    #[test]
    fn lists_keep_order_and_drop_repeats() {
        let first = online_cpus()[0];
        let l = format!("{first},{first}");
        assert_eq!(cpus(Some(&l)).unwrap(), vec![first]);
    }

    #[test]
    fn bad_lists_name_the_option() {
        for bad in ["x", "", "99999", "1-0", "0,,1"] {
            let e = cpus(Some(bad)).unwrap_err().to_string();
            assert!(e.starts_with("--cpus "), "{bad}: {e}");
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }
}
