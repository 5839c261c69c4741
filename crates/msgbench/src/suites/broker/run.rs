//! The run of `msgbench broker`: every cell of the plan through the
//! suites' shared sweep (repeated `-r` times, interleaved, so a slow
//! minute of the machine falls on every arrangement alike), then one row
//! per cell from the repeat with the median p50.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::Result;

use super::dbus::{self, DbusLib};
use super::measure::{self, latency_clock, Cell, CellRun};
use super::options::{BrokerPlan, Via};
use super::row::{label, BrokerRow};
use crate::measure::placement::format_list;
use crate::measure::rundir::RunDir;
use crate::suites::sweep::{Sweep, Tally};
use crate::suites::{Results, RunContext};

/// Every cell in table order: by size, then arrangement, then transport
/// or D-Bus library; with `--inject-fault`, each broker cell followed by
/// its twin with the fault.
pub fn cells(plan: &BrokerPlan) -> Vec<Cell> {
    let mut out = Vec::new();
    for &ints in &plan.ints {
        for &via in &plan.vias {
            let kinds: Vec<(Option<String>, Option<DbusLib>)> = match via.on_msgpass() {
                true => plan
                    .transports
                    .iter()
                    .map(|t| (Some(t.clone()), None))
                    .collect(),
                false => plan.dbus_libs.iter().map(|&l| (None, Some(l))).collect(),
            };
            for (transport, lib) in kinds {
                let cell = Cell {
                    via,
                    transport,
                    ints,
                    lib,
                    fault: None,
                };
                if let Some(f) = plan.fault.filter(|_| via.via_broker()) {
                    out.push(cell.clone());
                    out.push(Cell {
                        fault: Some(f),
                        ..cell
                    });
                } else {
                    out.push(cell);
                }
            }
        }
    }
    out
}

/// About how long one cell takes: its calls, plus starting and stopping
/// its processes.
pub fn cell_estimate(plan: &BrokerPlan) -> Duration {
    plan.duration() + Duration::from_millis(250)
}

/// Runs the sweep.
pub fn run(plan: &BrokerPlan, cx: &RunContext) -> Result<Results<BrokerRow>> {
    // Every process started from here inherits it.
    oslayer::sched::set_affinity(&plan.cpus).map_err(|e| {
        anyhow::anyhow!(
            "--cpus: cannot run on CPUs {}: {e}",
            format_list(&plan.cpus)
        )
    })?;
    let base = msgpass::Namespace::resolve(None)?;
    let run_dir = RunDir::create(&base, &format!("broker-{}", std::process::id()))?;
    let cells = cells(plan);
    let swept = Sweep::new(&cells, plan.repeats, cell_estimate(plan), cx).run(
        unavailable,
        |c, rep| progress_label(plan, c, rep),
        |rep, c, i| {
            let dir = run_dir.path().join(format!("r{rep}-c{i}"));
            let measured = std::fs::create_dir(&dir)
                .map_err(anyhow::Error::from)
                .and_then(|()| measure::measure(plan, c, &dir));
            let _ = std::fs::remove_dir_all(&dir);
            measured
        },
    );
    cx.progress
        .start("timing the D-Bus libraries' marshalling alone");
    let marshal = marshal_costs(&cells);
    let rows: Vec<BrokerRow> = cells
        .iter()
        .zip(swept.cells)
        .map(|(c, mut tally)| {
            let mut row = BrokerRow::empty(c.via, c.transport.clone(), c.ints, plan.clients);
            row.dbus_lib = c.lib;
            row.fault = c.fault;
            if c.via.via_broker() {
                row.call_timeout_ms = Some(plan.call_timeout.as_millis() as u64);
            }
            fill(&mut row, &mut tally, plan.fault.is_some());
            row.skipped = tally.skipped;
            row.error = tally.error;
            if let (true, Some(lib)) = (row.measured(), c.lib) {
                row.marshal_ns = marshal.get(&(lib, c.ints)).copied().flatten();
            }
            row
        })
        .collect();
    Ok(Results::new(rows))
}

/// A cell's repeat on the progress bar.
fn progress_label(plan: &BrokerPlan, c: &Cell, rep: usize) -> String {
    format!(
        "{}{} GetInteger({}), repeat {}/{}",
        label(c.via, c.transport.as_deref()),
        c.lib.map_or(String::new(), |l| format!("/{}", l.name())),
        c.ints,
        rep + 1,
        plan.repeats
    )
}

/// Why a cell cannot run here (its daemon or D-Bus library missing),
/// with the install line; `None` when it can.
fn unavailable(c: &Cell) -> Option<String> {
    measure::available(c.via)
        .and_then(|()| c.lib.map_or(Ok(()), DbusLib::available))
        .err()
        .map(|e| e.to_string())
}

/// Each D-Bus library's marshal + unmarshal of a call's request and
/// reply, ns, once for each library and size a D-Bus cell calls with.
fn marshal_costs(cells: &[Cell]) -> BTreeMap<(DbusLib, u32), Option<f64>> {
    cells
        .iter()
        .filter_map(|c| c.lib.filter(|l| l.available().is_ok()).map(|l| (l, c.ints)))
        .collect::<BTreeSet<(DbusLib, u32)>>()
        .into_iter()
        .map(|(lib, n)| {
            let cost = lib.marshal_cost(n, 2000).ok();
            (
                (lib, n),
                cost.map(|m: dbus::MarshalCost| m.request_ns + m.reply_ns),
            )
        })
        .collect()
}

/// Fills `row` from the median repeat of `runs` (by p50), keeping every
/// repeat's p50 and rate; in a run with a fault, also the latency of the
/// clients the fault spares.
fn fill(row: &mut BrokerRow, tally: &mut Tally<CellRun>, with_fault: bool) {
    let clock = latency_clock();
    let p50 = |r: &CellRun| r.latency.summary(&clock).p50_ns;
    row.p50_repeats_ns = tally.runs.iter().map(p50).collect();
    row.calls_per_s_repeats = tally.runs.iter().map(|r| r.calls_per_s).collect();
    let Some(m) = tally.median(p50) else {
        return;
    };
    row.calls = m.calls;
    row.calls_per_s = m.calls_per_s;
    row.latency = m.latency.summary(&clock);
    row.histogram = m.latency.buckets(&clock);
    row.cpu_ns_per_call = m.cpu;
    row.timeouts = m.timeouts;
    if with_fault && row.via.via_broker() {
        row.others_latency = Some(m.others.summary(&clock));
    }
    if let Some(s) = &m.router {
        row.most_in_flight = Some(s.most_in_flight);
        if s.routed > 0 {
            row.routing_ns = Some(s.routing_ns / s.routed as f64);
            if row.via == Via::BrokerValidate {
                row.validate_ns = Some(s.validate_ns / s.routed as f64);
            }
        }
    }
}
