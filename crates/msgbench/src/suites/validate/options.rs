//! The options of `msgbench validate`, checked into a [`Plan`]. Every
//! value is parsed here, so that every mistake is one line naming the
//! option (exit status 1).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::Args;

use crate::measure::placement::{self, CpuList};

/// Latency loops per row by default (about 60 s in all).
const LOOPS: u64 = 4000;
/// Latency loops per row with `--quick` (about 15 s in all).
const QUICK_LOOPS: u64 = 800;
/// Pipe round trips per latency loop (perf is fast per operation).
pub const PERF_PER_LOOP: u64 = 20;
/// The interval of rt-tests and cyclictest (their default, 1000 us).
pub const INTERVAL: Duration = Duration::from_micros(1000);
/// Each row alternates this many reference runs and ours, each of a
/// share of the loops.
pub const CHUNKS: u64 = 4;
/// Largest `--loops`.
const MAX_LOOPS: u64 = 1_000_000;

/// Options of `msgbench validate`.
#[derive(Debug, Clone, Default, Args)]
pub struct ValidateArgs {
    /// CPUs: same-CPU rows use the first, the cross-CPU row floats on the
    /// first two [default: the first two online CPUs].
    #[arg(long = "cpus", value_name = "LIST", allow_hyphen_values = true)]
    pub cpus: Option<String>,
    /// SCHED_FIFO priority for both sides, 2 to 99 (the waking side runs
    /// one below, as rt-tests does) [default: normal scheduling].
    #[arg(long = "fifo", value_name = "PRIO", allow_hyphen_values = true)]
    pub fifo: Option<String>,
    /// Hand-overs and timer wake-ups per latency row (perf pipe rows: 20x
    /// as many round trips) [default: 4000, about 60 s; --quick: 800].
    #[arg(long = "loops", value_name = "N", allow_hyphen_values = true)]
    pub loops: Option<String>,
    /// A short run (about 15 s).
    #[arg(long = "quick")]
    pub quick: bool,
    /// Write the environment and every row to FILE.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
}

/// What a run does, every option checked.
#[derive(Debug, Clone)]
pub struct Plan {
    /// CPU of the same-CPU rows.
    pub cpu: usize,
    /// CPUs of the cross-CPU row (absent with one CPU).
    pub pair: Option<(usize, usize)>,
    /// SCHED_FIFO priority, or normal scheduling.
    pub fifo: Option<i32>,
    /// Latency loops per row.
    pub loops: u64,
    /// Round trips per pipe row.
    pub perf_loops: u64,
    /// JSON output.
    pub json: Option<PathBuf>,
}

impl ValidateArgs {
    /// Checks every option.
    pub fn plan(&self) -> Result<Plan> {
        let cpus = match &self.cpus {
            Some(s) => CpuList::parse(s).map_err(|e| anyhow!("--cpus {s}: {e}"))?.0,
            None => placement::online_cpus().into_iter().take(2).collect(),
        };
        let cpu = *cpus
            .first()
            .ok_or_else(|| anyhow!("--cpus: no CPU online"))?;
        let pair = cpus.iter().copied().find(|&c| c != cpu).map(|c| (cpu, c));
        let fifo = match &self.fifo {
            None => None,
            Some(s) => match s.parse::<i32>() {
                Ok(p) if (2..=99).contains(&p) => Some(p),
                _ => bail!("--fifo {s}: must be a priority from 2 to 99"),
            },
        };
        let loops = match &self.loops {
            None if self.quick => QUICK_LOOPS,
            None => LOOPS,
            Some(s) => match s.parse::<u64>() {
                Ok(n) if (1..=MAX_LOOPS).contains(&n) => n,
                _ => bail!("--loops {s}: must be a whole number from 1 to {MAX_LOOPS}"),
            },
        };
        Ok(Plan {
            cpu,
            pair,
            fifo,
            loops,
            perf_loops: loops * PERF_PER_LOOP,
            json: self.json.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cpus: Option<&str>, fifo: Option<&str>, loops: Option<&str>) -> ValidateArgs {
        ValidateArgs {
            cpus: cpus.map(Into::into),
            fifo: fifo.map(Into::into),
            loops: loops.map(Into::into),
            ..ValidateArgs::default()
        }
    }

    #[test]
    fn bad_values_name_their_option() {
        for (a, opt) in [
            (args(Some("x"), None, None), "--cpus x"),
            (args(Some("99999"), None, None), "--cpus 99999"),
            (args(None, Some("1"), None), "--fifo 1"),
            (args(None, Some("100"), None), "--fifo 100"),
            (args(None, Some("rt"), None), "--fifo rt"),
            (args(None, None, Some("0")), "--loops 0"),
            (args(None, None, Some("-3")), "--loops -3"),
        ] {
            let e = a.plan().unwrap_err().to_string();
            assert!(e.starts_with(opt), "{opt}: {e}");
        }
    }

    #[test]
    fn defaults_and_quick() {
        let p = args(Some("0"), None, None).plan().unwrap();
        assert_eq!((p.cpu, p.pair, p.fifo, p.loops), (0, None, None, LOOPS));
        assert_eq!(p.perf_loops, LOOPS * PERF_PER_LOOP);
        let q = ValidateArgs {
            quick: true,
            ..args(Some("0"), Some("80"), None)
        }
        .plan()
        .unwrap();
        assert_eq!((q.fifo, q.loops), (Some(80), QUICK_LOOPS));
    }
}
