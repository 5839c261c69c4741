//! The floor of this machine, as a set of rows: which figures are
//! measured, how long each run is, and the median and spread of [`RUNS`]
//! runs. `msgbench floor` prints it; other suites embed it in their
//! results.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{bail, Result};
use serde::{Deserialize, Serialize};

use crate::measure::costs;
use crate::pingpong::{self, PingPong};

/// Time budget of the whole measurement (default, `--quick`): each run is
/// shortened so that all rows fit.
pub const BUDGET: Duration = Duration::from_secs(6);
/// The same with `--quick`.
pub const QUICK_BUDGET: Duration = Duration::from_millis(500);
/// Target length of one run (default, `--quick`), before the budget.
const RUN_TARGET: Duration = Duration::from_millis(60);
const QUICK_RUN_TARGET: Duration = Duration::from_millis(8);
/// Shortest target length of one run.
const MIN_RUN: Duration = Duration::from_millis(1);
/// Round trips (or calls) of the probe that sizes the runs, and the bounds
/// of a run's count.
const PROBE: u64 = 200;
/// The second probe is this fraction of a run.
const PROBE_SHARE: u32 = 10;
const MIN_COUNT: u64 = 500;
const MAX_COUNT: u64 = 20_000_000;

/// Runs behind every figure (the median is reported).
pub const RUNS: usize = 5;

/// The floor of this machine: every row, as embedded in JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FloorReport {
    /// Whether the short (`--quick`) lengths were used.
    pub quick: bool,
    /// Runs behind each figure.
    pub runs_per_figure: usize,
    /// The CPUs measured between, in order.
    pub cpus: Vec<usize>,
    /// Every figure, in measurement order.
    pub rows: Vec<FloorRow>,
}

impl FloorReport {
    /// The lowest cache-line round trip between threads, ns, on one CPU
    /// (yielding) or on two; `None` if not measured.
    pub fn cacheline_ns(&self, same_cpu: bool) -> Option<f64> {
        self.lowest(FloorKind::CachelineThreads, same_cpu)
    }

    /// The lowest futex wait/wake round trip, ns, on one CPU or on two;
    /// `None` if not measured.
    pub fn futex_ns(&self, same_cpu: bool) -> Option<f64> {
        self.lowest(FloorKind::Futex, same_cpu)
    }

    /// The figure of a cost row (clock read, system call), ns per call.
    pub fn cost_ns(&self, kind: FloorKind) -> Option<f64> {
        self.rows.iter().find(|r| r.kind == kind).map(|r| r.ns)
    }

    /// The lowest figure of `kind` on one CPU or two; a figure that is
    /// not a positive number (a report read back from a file) is none.
    fn lowest(&self, kind: FloorKind, same_cpu: bool) -> Option<f64> {
        self.rows
            .iter()
            .filter(|r| r.kind == kind && r.same_cpu == Some(same_cpu))
            .map(|r| r.ns)
            .filter(|ns| ns.is_finite() && *ns > 0.0)
            .min_by(f64::total_cmp)
    }
}

/// Measures the floor between `cpus` (same-CPU rows on the first one,
/// cross-CPU rows for every ordered pair of distinct ones). `quick` keeps
/// it to well under a second for one or two CPUs.
pub fn measure(quick: bool, cpus: &[usize]) -> Result<FloorReport> {
    measure_until(quick, cpus, &AtomicBool::new(false))
}

/// What a row measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FloorKind {
    /// One cache line between two threads of one process.
    CachelineThreads,
    /// One cache line of a shared memfd mapping between two processes.
    CachelineProcesses,
    /// Process-shared futex wait/wake, both sides sleeping.
    Futex,
    /// `clock_gettime(CLOCK_MONOTONIC)` through the vDSO.
    ClockMonotonic,
    /// `rdtsc`.
    Rdtsc,
    /// `syscall(SYS_getppid)`.
    Syscall,
    /// The spin-wait hint (`pause`), the step of every spinning wait.
    SpinHint,
}

impl FloorKind {
    /// What the row is, for the table.
    pub fn describe(self, same_cpu: Option<bool>) -> &'static str {
        match (self, same_cpu) {
            (FloorKind::CachelineThreads, Some(true)) => "cache line, threads, yielding",
            (FloorKind::CachelineThreads, _) => "cache line, threads, spinning",
            (FloorKind::CachelineProcesses, Some(true)) => "cache line, processes, yielding",
            (FloorKind::CachelineProcesses, _) => "cache line, processes, spinning",
            (FloorKind::Futex, _) => "futex wait/wake, both sleeping",
            (FloorKind::ClockMonotonic, _) => "clock_gettime(CLOCK_MONOTONIC), vDSO",
            (FloorKind::Rdtsc, _) => "rdtsc",
            (FloorKind::Syscall, _) => "system call, syscall(SYS_getppid)",
            (FloorKind::SpinHint, _) => "spin-wait hint (pause), one step of a spin",
        }
    }

    /// Whether the figure is per round trip (a ping-pong) or per call.
    pub fn per_round_trip(self) -> bool {
        matches!(
            self,
            FloorKind::CachelineThreads | FloorKind::CachelineProcesses | FloorKind::Futex
        )
    }
}

/// One figure of the floor.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FloorRow {
    /// What is measured.
    pub kind: FloorKind,
    /// The same, in words.
    pub what: String,
    /// `round_trip` or `call`: what `ns` is per.
    pub unit: String,
    /// (side A, side B) CPUs of a ping-pong; `None` for a cost (unpinned).
    pub cpus: Option<(usize, usize)>,
    /// Whether both sides share one CPU (`None` for a cost).
    pub same_cpu: Option<bool>,
    /// Round trips (or calls) the next run would have made: each run is
    /// sized from the figure of the one before.
    pub count: u64,
    /// Median over the runs, ns per round trip (or per call).
    pub ns: f64,
    /// (max - min) / median of the runs.
    pub spread: f64,
    /// Every run's figure, ns, in run order.
    pub runs_ns: Vec<f64>,
}

/// One measurement to make: its kind, CPUs and the function that runs it
/// `count` times and returns ns per round trip or call.
struct Item {
    kind: FloorKind,
    cpus: Option<(usize, usize)>,
    run: Box<dyn Fn(u64) -> Result<f64>>,
}

/// A floor ping-pong: `(cpus, round_trips) -> figure`.
type PingPongFn = fn((Option<usize>, Option<usize>), u64) -> Result<PingPong>;

fn pingpong(kind: FloorKind, a: usize, b: usize, f: PingPongFn) -> Item {
    Item {
        kind,
        cpus: Some((a, b)),
        run: Box::new(move |n| f((Some(a), Some(b)), n).map(|p| p.ns_per_round_trip)),
    }
}

fn cost(kind: FloorKind, f: fn(u64) -> f64) -> Item {
    Item {
        kind,
        cpus: None,
        run: Box::new(move |n| Ok(f(n))),
    }
}

/// Every measurement: same-CPU pairs on the first CPU, every ordered pair
/// of distinct CPUs, then the costs.
fn items(cpus: &[usize]) -> Vec<Item> {
    let mut pairs: Vec<(usize, usize)> = cpus.first().map(|&c| (c, c)).into_iter().collect();
    for &a in cpus {
        for &b in cpus {
            if a != b {
                pairs.push((a, b));
            }
        }
    }
    let mut v = Vec::new();
    let kinds: [(FloorKind, PingPongFn); 3] = [
        (FloorKind::CachelineThreads, pingpong::cacheline),
        (FloorKind::CachelineProcesses, pingpong::cacheline_processes),
        (FloorKind::Futex, pingpong::futex),
    ];
    for (kind, f) in kinds {
        for &(a, b) in &pairs {
            v.push(pingpong(kind, a, b, f));
        }
    }
    v.push(cost(FloorKind::ClockMonotonic, costs::clock_gettime_ns));
    if costs::rdtsc_ns(1).is_some() {
        v.push(cost(FloorKind::Rdtsc, |n| {
            costs::rdtsc_ns(n).unwrap_or(f64::NAN)
        }));
    }
    v.push(cost(FloorKind::Syscall, costs::syscall_ns));
    v.push(cost(FloorKind::SpinHint, costs::spin_hint_ns));
    v
}

/// Measures every row between `cpus`, stopping early (with an error) when
/// `stop` is set.
pub fn measure_until(quick: bool, cpus: &[usize], stop: &AtomicBool) -> Result<FloorReport> {
    if cpus.is_empty() {
        bail!("no CPU to measure on");
    }
    let mut items = items(cpus);
    if crate::measure::sched::in_effect().fifo_priority.is_some() {
        // A spinning SCHED_FIFO thread never yields its CPU: keep only the
        // rows whose sides sleep or yield.
        items.retain(|i| !spins(i));
    }
    let (budget, target) = if quick {
        (QUICK_BUDGET, QUICK_RUN_TARGET)
    } else {
        (BUDGET, RUN_TARGET)
    };
    // Each row runs about RUNS + 1 times its target (warm-up included).
    let per_run = (budget / (items.len() * (RUNS + 1)) as u32).clamp(MIN_RUN, target);
    let mut rows = Vec::new();
    for item in &items {
        if stop.load(Ordering::Relaxed) {
            bail!("interrupted");
        }
        rows.push(row(item, per_run)?);
    }
    Ok(FloorReport {
        quick,
        runs_per_figure: RUNS,
        cpus: cpus.to_vec(),
        rows,
    })
}

/// True for a row whose two sides spin on different CPUs.
fn spins(item: &Item) -> bool {
    matches!(
        item.kind,
        FloorKind::CachelineThreads | FloorKind::CachelineProcesses
    ) && item.cpus.is_some_and(|(a, b)| a != b)
}

/// Sizes the runs with two probes (a fixed count, then about a tenth of a
/// run: a first probe can be far off, e.g. when no side had to sleep yet),
/// then takes the median of [`RUNS`] runs, each resized from the figure
/// of the one before so that a wrong estimate never makes the run long.
fn row(item: &Item, per_run: Duration) -> Result<FloorRow> {
    let probe = (item.run)(PROBE)?;
    let probe = (item.run)(count_for(per_run / PROBE_SHARE, probe))?;
    let mut count = count_for(per_run, probe);
    let mut runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let ns = (item.run)(count)?;
        runs.push(ns);
        count = count_for(per_run, ns);
    }
    let (ns, spread) = median_spread(&runs);
    let same_cpu = item.cpus.map(|(a, b)| a == b);
    Ok(FloorRow {
        kind: item.kind,
        what: item.kind.describe(same_cpu).to_string(),
        unit: if item.kind.per_round_trip() {
            "round_trip"
        } else {
            "call"
        }
        .into(),
        cpus: item.cpus,
        same_cpu,
        count,
        ns,
        spread,
        runs_ns: runs,
    })
}

/// Round trips (or calls) that take about `per_run` at `ns_each` ns each.
fn count_for(per_run: Duration, ns_each: f64) -> u64 {
    let n = per_run.as_nanos() as f64 / ns_each.max(0.1);
    (n as u64).clamp(MIN_COUNT, MAX_COUNT)
}

/// The median of `v` and (max - min) / median (0 when the median is 0).
fn median_spread(v: &[f64]) -> (f64, f64) {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let Some((&min, &max)) = s.first().zip(s.last()) else {
        return (f64::NAN, f64::NAN);
    };
    let mid = s.len() / 2;
    let median = if s.len() % 2 == 1 {
        s[mid]
    } else {
        (s[mid - 1] + s[mid]) / 2.0
    };
    let spread = if median > 0.0 {
        (max - min) / median
    } else {
        0.0
    };
    (median, spread)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_spread() {
        assert_eq!(median_spread(&[3.0, 1.0, 2.0]), (2.0, 1.0));
        assert_eq!(median_spread(&[4.0, 2.0]), (3.0, 2.0 / 3.0));
        assert!(median_spread(&[]).0.is_nan());
    }

    #[test]
    fn counts_fit_the_run_and_stay_bounded() {
        assert_eq!(count_for(Duration::from_millis(10), 1000.0), 10_000);
        assert_eq!(count_for(Duration::from_millis(10), 1e9), MIN_COUNT);
        assert_eq!(count_for(Duration::from_secs(10), 0.0), MAX_COUNT);
    }

    #[test]
    fn items_cover_same_and_every_ordered_pair() {
        let v = items(&[0, 1, 2]);
        let line: Vec<_> = v
            .iter()
            .filter(|i| i.kind == FloorKind::CachelineThreads)
            .map(|i| i.cpus.unwrap())
            .collect();
        assert_eq!(
            line,
            [(0, 0), (0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
        );
        assert!(v.iter().any(|i| i.kind == FloorKind::Syscall));
        assert!(v.iter().any(|i| i.kind == FloorKind::ClockMonotonic));
        assert!(v.iter().any(|i| i.kind == FloorKind::SpinHint));
    }

    #[test]
    fn empty_cpu_list_is_refused() {
        assert!(measure_until(true, &[], &AtomicBool::new(false)).is_err());
    }
}
