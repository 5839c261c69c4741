//! The run of `msgbench smp`: every cell of the plan (veth mode: the
//! kernel's row first at each size) through the suites' shared sweep
//! (repeated `-r` times, interleaved), then one row per cell from the
//! median repeat, with its scaling against N = 1.

use std::time::Duration;

use anyhow::Result;

use super::measured::CellRun;
use super::memory;
use super::options::{PortsMode, SmpPlan};
use super::row::{reference, Forwarder, SmpRow};
use super::search::SearchResult;
use super::wire;
use crate::suites::sweep::{Sweep, Tally};
use crate::suites::{Results, RunContext};

/// A cell: frame size, forwarder, workers (0 for the kernel).
pub type Cell = (usize, Forwarder, usize);

/// The built path: the table and frames, and in veth mode the test bed.
enum Path {
    Memory(memory::Setup),
    Veth(Box<wire::Setup>),
}

impl Path {
    fn input_ports(&self) -> usize {
        match self {
            Path::Memory(s) => s.ports,
            Path::Veth(_) => 1,
        }
    }
}

/// Every cell in run order.
pub fn cells(plan: &SmpPlan) -> Vec<Cell> {
    let mut out = Vec::new();
    for &size in &plan.sizes {
        if plan.ports == PortsMode::Veth {
            out.push((size, Forwarder::Kernel, 0));
        }
        for &v in &plan.variants {
            for &n in &plan.workers {
                out.push((size, Forwarder::Table(v), n));
            }
        }
    }
    out
}

/// About how long one cell takes: the probe and the search's trials.
pub fn cell_estimate(plan: &SmpPlan) -> Duration {
    let steps = (1.0 / plan.resolution).log2().ceil() + 4.0;
    let per_trial = plan.trial_secs
        + match plan.ports {
            PortsMode::Memory => 0.03,
            PortsMode::Veth => 0.1,
        };
    Duration::from_secs_f64(plan.trial_secs.min(0.2) + steps * per_trial)
}

/// Runs the sweep.
pub fn run(plan: &SmpPlan, cx: &RunContext) -> Result<Results<SmpRow>> {
    cx.progress.start("building the table and the frames");
    let path = match plan.ports {
        PortsMode::Memory => Path::Memory(memory::Setup::build(plan)?),
        PortsMode::Veth => Path::Veth(Box::new(wire::Setup::build(plan)?)),
    };
    let cells = cells(plan);
    let swept = Sweep::new(&cells, plan.repeats, cell_estimate(plan), cx).run(
        |&(_, _, n)| plan.skip_reason(n),
        |&cell, rep| label(plan, cell, rep),
        |_, &cell, _| measure(plan, &path, cell, cx),
    );
    let rows = rows(plan, &path, &cells, swept.cells);
    drop(path); // the test bed goes before the results are printed
    Ok(Results::new(rows))
}

fn label(plan: &SmpPlan, (size, f, n): Cell, rep: usize) -> String {
    let who = match f {
        Forwarder::Kernel => "kernel".to_string(),
        Forwarder::Table(v) => format!("{} x{n}", v.name()),
    };
    if plan.repeats > 1 {
        format!("{size} B, {who} (run {}/{})", rep + 1, plan.repeats)
    } else {
        format!("{size} B, {who}")
    }
}

fn measure(plan: &SmpPlan, path: &Path, (size, f, n): Cell, cx: &RunContext) -> Result<CellRun> {
    match (path, f) {
        (Path::Memory(s), Forwarder::Table(v)) => memory::measure(plan, s, (size, v, n), cx),
        (Path::Memory(_), Forwarder::Kernel) => {
            anyhow::bail!("the kernel forwards only in veth mode")
        }
        (Path::Veth(s), f) => wire::measure(plan, s, (size, f, n), cx),
    }
}

/// One row per cell, from the median repeat; scaling against N = 1.
fn rows(plan: &SmpPlan, path: &Path, cells: &[Cell], tallies: Vec<Tally<CellRun>>) -> Vec<SmpRow> {
    let ports = path.input_ports();
    let mut rows: Vec<SmpRow> = cells
        .iter()
        .zip(tallies)
        .filter_map(|(&cell, tally)| row(plan, ports, cell, tally))
        .collect();
    let base: Vec<Option<f64>> = rows
        .iter()
        .map(|r| {
            rows.iter()
                .find(|b| {
                    b.forwarder == r.forwarder
                        && b.size == r.size
                        && b.workers == Some(1)
                        && b.measured()
                })
                .map(|b| b.pps)
        })
        .collect();
    for (r, b) in rows.iter_mut().zip(base) {
        if r.measured() && r.workers.is_some() {
            r.scaling = b.filter(|&b| b > 0.0).map(|b| r.pps / b);
        }
    }
    rows
}

fn row(
    plan: &SmpPlan,
    ports: usize,
    (size, forwarder, n): Cell,
    mut tally: Tally<CellRun>,
) -> Option<SmpRow> {
    if !tally.reached() {
        return None; // interrupted before this cell: no row
    }
    let repeats_pps: Vec<f64> = tally
        .runs
        .iter()
        .map(|m| m.search.rate * ports as f64)
        .collect();
    let median = tally.median(|m| m.search.rate).cloned();
    let skipped = tally.skipped.is_some();
    let error = tally.skipped.or(tally.error);
    let per_port = median.as_ref().map_or(0.0, |m| m.search.rate);
    let m = median.unwrap_or_else(|| CellRun::empty(plan.resolution));
    let (rx_ports, tx_ports) = m.books.clone().unwrap_or_default();
    let pps = per_port * ports as f64;
    let elapsed = m.updates.elapsed.as_secs_f64();
    Some(SmpRow {
        ports: plan.ports,
        forwarder,
        workers: (forwarder != Forwarder::Kernel).then_some(n),
        size,
        input_ports: ports,
        pps,
        pps_per_port: per_port,
        mbit_s: pps * (size * 8) as f64 / 1e6,
        repeats_pps,
        capacity_pps: m.capacity_pps,
        line_pps: plan
            .line_rate_bps
            .map(|b| super::ports::line_rate_pps(Some(b), size)),
        scaling: None,
        locks: m.locks,
        cpu_busy: m.busy,
        max_gap_us: m.max_gap_us,
        first_loss: m.first_loss,
        search: SearchResult {
            note: match (m.search.note.clone(), m.generator_limited) {
                (n, false) => n,
                (Some(n), true) => Some(format!("{n}; the generator could not offer more")),
                (None, true) => Some("the generator could not offer more: a lower bound".into()),
            },
            ..m.search
        },
        updates_per_s: if elapsed > 0.0 {
            m.updates.applied as f64 / elapsed
        } else {
            0.0
        },
        update_max_us: m.updates.apply_max.as_secs_f64() * 1e6,
        unrouted: m.unrouted,
        rx_ports,
        tx_ports,
        reference: reference(forwarder, n, size),
        skipped,
        error,
    })
}
