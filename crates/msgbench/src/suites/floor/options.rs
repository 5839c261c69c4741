//! The options of `msgbench floor` ([`FloorArgs`]) and their checked
//! settings ([`FloorPlan`]): the CPU list, checked by its value parser
//! with a one-line error naming the option.

use anyhow::Result;
use clap::Args;
use serde::Serialize;

use crate::measure::placement::CpuSet;
use crate::measure::sched::SchedArgs;
use crate::pingpong::floor::RUNS;
use crate::suites::args::{Cpus, CpusSpec};
use crate::suites::parse::{self, ValueError};
use crate::suites::OutputArgs;

/// What floor's `--cpus` (a set) means.
#[derive(Debug, Clone)]
pub struct FloorSpec;

impl CpusSpec for FloorSpec {
    type Cpus = CpuSet;
    const HELP: &'static str = "CPUs to measure between, e.g. 0-3,6 [default: every online CPU]";
    fn parse(list: &str) -> std::result::Result<CpuSet, ValueError> {
        parse::cpu_set(list)
    }
}

/// Options of `msgbench floor`.
#[derive(Debug, Clone, Default, Args)]
pub struct FloorArgs {
    /// A short run (about a second), each figure over fewer round trips.
    #[arg(long = "quick")]
    pub quick: bool,
    /// --cpus: the CPUs measured between.
    #[command(flatten)]
    pub cpus: Cpus<FloorSpec>,
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
    Ok(FloorPlan {
        quick: args.quick,
        cpus: CpuSet::or_online(args.cpus.given()),
        runs_per_figure: RUNS,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::placement::online_cpus;

    fn args(extra: &[&str]) -> Result<FloorArgs> {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: FloorArgs,
        }
        let mut v = vec!["floor"];
        v.extend_from_slice(extra);
        Wrap::try_parse_from(v)
            .map(|w| w.a)
            .map_err(|e| anyhow::anyhow!(crate::cli::one_line(&e)))
    }

    #[test]
    fn default_is_every_online_cpu() {
        assert_eq!(plan(&args(&[]).unwrap()).unwrap().cpus, online_cpus());
    }

    #[test]
    fn lists_keep_order_and_drop_repeats() {
        let first = online_cpus()[0];
        let l = format!("{first},{first}");
        let p = plan(&args(&["--cpus", &l]).unwrap()).unwrap();
        assert_eq!(p.cpus, vec![first]);
    }

    #[test]
    fn bad_lists_name_the_option() {
        for bad in ["x", "", "99999", "1-0", "0,,1"] {
            let e = args(&["--cpus", bad]).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--cpus {bad}: ")), "{bad}: {e}");
            assert!(!e.contains('\n'), "{bad}: {e}");
        }
    }
}
