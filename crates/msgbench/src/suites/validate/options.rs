//! The options of `msgbench validate`, checked into a [`Plan`]. Every
//! value is parsed by its clap value parser here, so that every mistake
//! is one line naming the option (a usage error, exit status 2).

use std::time::Duration;

use anyhow::{anyhow, Result};
use clap::Args;
use serde::Serialize;

use crate::measure::placement::{self, CpuList};
use crate::suites::args::{Cpus, CpusSpec};
use crate::suites::parse::ValueError;
use crate::suites::OutputArgs;

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

/// What validate's `--cpus` (an ordered list) means.
#[derive(Debug, Clone, Default)]
pub struct ValidateSpec;

impl CpusSpec for ValidateSpec {
    type Cpus = CpuList;
    const HELP: &'static str = "CPUs: same-CPU rows use the first, the cross-CPU row floats on \
        the first two [default: the first two online CPUs]";
    fn parse(list: &str) -> std::result::Result<CpuList, ValueError> {
        crate::suites::parse::cpu_list(list)
    }
}

/// Options of `msgbench validate`.
#[derive(Debug, Clone, Default, Args)]
pub struct ValidateArgs {
    /// --cpus: the CPUs of the same-CPU rows and of the cross-CPU row.
    #[command(flatten)]
    pub cpus: Cpus<ValidateSpec>,
    /// SCHED_FIFO priority for both sides, 2 to 99 (the waking side runs
    /// one below, as rt-tests does) [default: normal scheduling].
    #[arg(
        long = "fifo",
        value_name = "PRIO",
        allow_hyphen_values = true,
        value_parser = parse_fifo
    )]
    pub fifo: Option<i32>,
    /// Hand-overs and timer wake-ups per latency row (perf pipe rows: 20x
    /// as many round trips) [default: 4000, about 60 s; --quick: 800].
    #[arg(
        long = "loops",
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = parse_loops
    )]
    pub loops: Option<u64>,
    /// A short run (about 15 s).
    #[arg(long = "quick")]
    pub quick: bool,
    /// --format, --json.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// What a run does, every option checked (stored in the envelope as
/// `settings`).
#[derive(Debug, Clone, Serialize)]
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
    /// Interval of the latency rows, microseconds.
    pub interval_us: u64,
    /// Alternating runs of the reference and of ours per row.
    pub runs_per_row: u64,
}

impl ValidateArgs {
    /// Checks every option's value (whether SCHED_FIFO is allowed is
    /// checked by the suite's plan, on a throw-away thread).
    pub fn plan(&self) -> Result<Plan> {
        let (cpu, pair) = self.placement()?;
        let loops = self
            .loops
            .unwrap_or(if self.quick { QUICK_LOOPS } else { LOOPS });
        Ok(Plan {
            cpu,
            pair,
            fifo: self.fifo,
            loops,
            perf_loops: loops * PERF_PER_LOOP,
            interval_us: INTERVAL.as_micros() as u64,
            runs_per_row: CHUNKS,
        })
    }

    /// `--cpus`: the same-CPU rows' CPU and the two-CPU row's pair.
    fn placement(&self) -> Result<(usize, Option<(usize, usize)>)> {
        let cpus = match self.cpus.given() {
            Some(list) => list.0.clone(),
            None => placement::online_cpus().into_iter().take(2).collect(),
        };
        let cpu = *cpus
            .first()
            .ok_or_else(|| anyhow!("--cpus: no CPU online"))?;
        let pair = cpus.iter().copied().find(|&c| c != cpu).map(|c| (cpu, c));
        Ok((cpu, pair))
    }
}

/// Why a value of a validate option was refused (clap prints it after
/// `--option value: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadValue {
    /// `--fifo`: not 2 to 99.
    #[error("must be a priority from 2 to 99")]
    Fifo,
    /// `--loops`: not 1 to [`MAX_LOOPS`].
    #[error("must be a whole number from 1 to {MAX_LOOPS}")]
    Loops,
}

/// Value parser of `--fifo`: a SCHED_FIFO priority from 2 to 99 (the
/// waking side runs one below).
fn parse_fifo(s: &str) -> Result<i32, BadValue> {
    match s.parse::<i32>() {
        Ok(p) if (2..=99).contains(&p) => Ok(p),
        _ => Err(BadValue::Fifo),
    }
}

/// Value parser of `--loops`: 1 to [`MAX_LOOPS`].
fn parse_loops(s: &str) -> Result<u64, BadValue> {
    match s.parse::<u64>() {
        Ok(n) if (1..=MAX_LOOPS).contains(&n) => Ok(n),
        _ => Err(BadValue::Loops),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(cpus: Option<&str>, fifo: Option<i32>, loops: Option<u64>) -> ValidateArgs {
        ValidateArgs {
            cpus: cpus
                .map(|c| Cpus::of(CpuList::parse(c).expect("a good list")))
                .unwrap_or_default(),
            fifo,
            loops,
            ..ValidateArgs::default()
        }
    }

    #[test]
    fn the_parser_refuses_bad_values_naming_their_option() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: ValidateArgs,
        }
        for (opt, bad, why) in [
            ("--fifo", "1", "must be a priority from 2 to 99"),
            ("--fifo", "100", "must be a priority from 2 to 99"),
            ("--fifo", "rt", "must be a priority from 2 to 99"),
            ("--loops", "0", "must be a whole number from 1 to 1000000"),
            ("--loops", "-3", "must be a whole number from 1 to 1000000"),
            (
                "--loops",
                "1000001",
                "must be a whole number from 1 to 1000000",
            ),
        ] {
            let e = Cli::try_parse_from(["validate", opt, bad])
                .err()
                .unwrap_or_else(|| panic!("{opt} {bad} accepted"));
            assert_eq!(crate::cli::one_line(&e), format!("{opt} {bad}: {why}"));
        }
        let a = Cli::try_parse_from(["validate", "--fifo", "2", "--loops", "1000000"]).unwrap();
        assert_eq!((a.a.fifo, a.a.loops), (Some(2), Some(1_000_000)));
    }

    #[test]
    fn defaults_and_quick() {
        let p = args(Some("0"), None, None).plan().unwrap();
        assert_eq!((p.cpu, p.pair, p.fifo, p.loops), (0, None, None, LOOPS));
        assert_eq!(p.perf_loops, LOOPS * PERF_PER_LOOP);
        let q = ValidateArgs {
            quick: true,
            ..args(Some("0"), Some(80), None)
        }
        .plan()
        .unwrap();
        assert_eq!((q.fifo, q.loops), (Some(80), QUICK_LOOPS));
    }
}
