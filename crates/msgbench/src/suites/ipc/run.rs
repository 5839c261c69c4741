//! Running a plan: a private namespace directory, the floor with
//! `--vs-floor`, every row in run order, size by size, its repeats
//! interleaved with the size's other rows (`interleave.rs`; one progress
//! item a pass), and the outcome. Nothing is printed here: the pipeline
//! prints at the end.

use std::path::Path;
use std::time::Duration;

use anyhow::Result;
use msgpass::Namespace;

use super::context::RowContext;
use super::interleave::{self, Pass};
use super::load::LoadMeter;
use super::one_row;
use super::options::Plan;
use super::row::{Api, Row, RowSpec, Status};
use super::vs_peers::Session;
use crate::measure::rundir::RunDir;
use crate::pingpong::floor::{self, FloorReport, QUICK_BUDGET};
use crate::suites::{Results, RunContext};

/// Time a row takes besides its measured runs (server start, connect,
/// stop), for the progress estimate.
const ROW_SETUP_SECS: f64 = 0.05;

/// This run's private namespace, `ipc-run-<pid>-<nanos>` under `--ns` (or
/// msgpass's default), removed on drop (also after SIGINT: the run
/// returns what it measured).
fn run_dir(base: Option<&Path>) -> Result<RunDir> {
    let base = Namespace::resolve(base)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let name = format!("ipc-run-{}-{nanos}", std::process::id());
    Ok(RunDir::create(&base, &name)?)
}

/// Time an idle-clients row takes to start its children, besides
/// [`IDLE_CONNECT_SECS`] for each idle connection.
const IDLE_SETUP_SECS: f64 = 0.2;
/// Time an idle connection takes to be made and called once, on most
/// transports (measured on a 2-CPU VM: 0.4 s for 1000 on uds).
const IDLE_CONNECT_SECS: f64 = 0.0005;
/// The same on the shm transports, whose server takes new clients once a
/// tick while it has many (3.5 s for 1000).
const IDLE_CONNECT_SECS_SHM: f64 = 0.004;
/// Time an active-clients row takes besides its run, for each client
/// (process start, connect, warm-up).
const ACTIVE_SETUP_SECS: f64 = 0.05;

/// About how long row `spec` takes. A single-client row: per repeat a
/// warm-up and a latency run, then the throughput run and the setup, and
/// the connecting of its idle clients. An active-clients row: one run,
/// and the setup of each client.
pub fn row_estimate(plan: &Plan, spec: &RowSpec) -> Duration {
    if let Some(n) = spec.clients {
        let secs = plan.row_secs + ROW_SETUP_SECS + f64::from(n) * ACTIVE_SETUP_SECS;
        return Duration::from_secs_f64(secs);
    }
    let warm = plan.warmup_secs.unwrap_or(plan.row_secs / 5.0);
    let secs = plan.repeats.max(1) as f64 * (warm + plan.row_secs + ROW_SETUP_SECS) + plan.row_secs;
    let idle = match spec.idle {
        Some(n) if n > 0 => {
            let shm =
                msgpass::transport::info(spec.transport).is_ok_and(|t| t.family_name() == "shm");
            let each = if shm {
                IDLE_CONNECT_SECS_SHM
            } else {
                IDLE_CONNECT_SECS
            };
            IDLE_SETUP_SECS + f64::from(n) * each
        }
        _ => 0.0,
    };
    Duration::from_secs_f64(secs + ROW_SETUP_SECS + idle)
}

/// About how long one pass of row `spec` takes under the pass's `plan`
/// (see `interleave.rs`): the whole row for a row run once, else one
/// warm-up and latency run, and the throughput run in the `first`.
fn pass_estimate(plan: &Plan, spec: &RowSpec, first: bool) -> Duration {
    let whole = row_estimate(plan, spec);
    if first || spec.idle.is_some() || spec.clients.is_some() {
        return whole;
    }
    whole.saturating_sub(Duration::from_secs_f64(plan.row_secs))
}

/// About how long the whole plan takes.
pub fn estimate(plan: &Plan) -> Duration {
    let floor = if plan.vs_floor {
        QUICK_BUDGET
    } else {
        Duration::ZERO
    };
    let rows: Duration = plan.row_order().iter().map(|r| row_estimate(plan, r)).sum();
    rows + floor
}

/// Runs the plan: the floor (with `--vs-floor`), then every row.
pub fn run(plan: &Plan, cx: &RunContext) -> Result<Results<Row>> {
    let dir = run_dir(plan.ns.as_deref())?;
    let mut notes = Vec::new();
    let floor = if plan.vs_floor {
        measure_floor(plan, cx, &mut notes)
    } else {
        None
    };
    let mut peers = match plan.vs_ipc_bench {
        true => Session::start(plan, cx)
            .map_err(|note| notes.push(note))
            .ok(),
        false => None,
    };
    let meter = LoadMeter::start();
    let rows = run_rows(plan, cx, dir.ns(), peers.as_mut());
    if let Some(l) = meter.finish() {
        notes.push(l.describe());
    }
    drop(dir);
    let mut r = results(plan, cx, rows, floor, notes);
    r.peers = peers.map(|s| s.runs).unwrap_or_default();
    Ok(r)
}

/// A quick floor between the first two CPUs (one progress item), or
/// `None` with a note saying why not.
fn measure_floor(plan: &Plan, cx: &RunContext, notes: &mut Vec<String>) -> Option<FloorReport> {
    cx.progress.start("floor");
    let cpus = &plan.cpus[..plan.cpus.len().min(2)];
    let floor = floor::measure_until(true, cpus, &cx.stop);
    cx.progress.done(QUICK_BUDGET);
    floor
        .map_err(|e| notes.push(format!("Floor not measured (--vs-floor): {e:#}")))
        .ok()
}

/// Every row in run order, until SIGINT; with `peers`, the reference
/// programs of each size right after its rows.
fn run_rows(
    plan: &Plan,
    cx: &RunContext,
    ns: &Namespace,
    mut peers: Option<&mut Session>,
) -> Vec<Row> {
    let opts = msgpass::Options {
        spin: plan.spin(),
        wait: Some(Duration::from_secs(2)),
        ..msgpass::Options::default()
    };
    let ctx = RowContext {
        ns,
        opts: &opts,
        row_secs: plan.row_secs,
        clock: cx.clock,
        stop: &cx.stop,
        fault: plan.fault,
        plan,
        throughput: true,
        sized: None,
    };
    let mut rows = Vec::new();
    let order = plan.row_order();
    let mut endpoints = 0..;
    for specs in order.chunk_by(|a, b| a.size == b.size) {
        let measured = interleave::run_size(
            &ctx,
            specs,
            || cx.stopped(),
            |ctx, pass| {
                let row = one_pass(ctx, cx, endpoints.next().unwrap_or_default(), &pass);
                cx.progress
                    .done(pass_estimate(ctx.plan, pass.spec, pass.first));
                row
            },
        );
        rows.extend(measured);
        if let Some(p) = peers.as_deref_mut().filter(|_| !cx.stopped()) {
            p.run_size(specs[0].size, &rows, cx);
        }
        if cx.stopped() {
            break;
        }
    }
    rows
}

/// One pass of a row as endpoint `row-<index>`, under its progress item.
fn one_pass(ctx: &RowContext, cx: &RunContext, index: usize, pass: &Pass) -> Row {
    let spec = pass.spec;
    let copy = if spec.api == Api::Copy { " (copy)" } else { "" };
    let with = match (spec.idle, spec.clients) {
        (Some(n), _) => format!(", {n} idle clients"),
        (_, Some(n)) => format!(", {n} clients"),
        _ => String::new(),
    };
    let repeats = ctx.plan.repeats.max(1);
    let repeat = match (repeats, pass.first) {
        (1, _) => String::new(),
        (_, true) => format!(", repeat 1 of {repeats}"),
        (_, false) => String::from(", a further repeat"),
    };
    cx.progress.start(format!(
        "{}{copy} {} B {}{with}{repeat}",
        spec.transport,
        spec.size,
        spec.placement.name()
    ));
    let mut row = one_row(ctx, index, spec);
    // A call broken by the stop (the server returns on the flag) is
    // an interruption, not a fault of the transport.
    if cx.stopped() && row.status == Status::Failed {
        row.status = Status::Interrupted;
    }
    row
}

/// One row as endpoint `row-<index>` (against the remote server with
/// `--server`), or skipped when its placement cannot be had here.
fn one_row(ctx: &RowContext, index: usize, spec: &RowSpec) -> Row {
    if let Some(server) = &ctx.plan.server {
        return super::remote::run(ctx, server, spec);
    }
    match ctx.plan.cpus_for(spec.placement) {
        Ok(cpus) => one_row::run(ctx, &format!("row-{index}"), spec, cpus),
        Err(reason) => Row::for_spec(spec).end(Status::Skipped, reason.to_string()),
    }
}

/// The rows with the floor and the notes, one of them saying how far an
/// interrupted run got (the pipeline counts the outcome from the rows).
fn results(
    plan: &Plan,
    cx: &RunContext,
    rows: Vec<Row>,
    floor: Option<FloorReport>,
    mut notes: Vec<String>,
) -> Results<Row> {
    let interrupted = cx.stopped() || rows.iter().any(|r| r.status == Status::Interrupted);
    if interrupted {
        notes.push(format!(
            "Interrupted: {} of {} rows run.",
            rows.len(),
            plan.row_order().len()
        ));
    }
    if let Some(s) = &plan.server {
        notes.insert(0, s.describe("ipc"));
    }
    let mut r = Results::new(rows);
    r.floor = floor;
    r.notes = notes;
    r
}
