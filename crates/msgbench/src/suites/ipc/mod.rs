//! `msgbench ipc`: the ipc-bench catalogue (../shared/spec/transports.md)
//! measured the same way for every msgpass transport: for each transport,
//! message size and placement (client and server threads pinned to one CPU
//! or to two), round-trip latency percentiles, one-way throughput, and the
//! CPU both sides spend per message, every payload byte checked.
//!
//! The server of each row is a thread of this process in a private
//! namespace directory (removed at the end, also after SIGINT). A row that
//! breaks (a wrong, lost or stale reply) shows `FAILED` and the run goes on;
//! the exit status is 1 if any row failed.

mod client;
mod ipcbench;
mod load;
mod notes;
mod options;
mod protocol;
mod results;
mod row;
mod server;
mod stats;
mod table;

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use msgpass::Namespace;
use serde::Serialize;

pub use options::IpcArgs;
pub use results::{
    CpuCost, CpuMethod, ExactStats, GroupSummary, LatencyRun, Placement, Row, Status,
    ThroughputRun, WaitClass,
};

use crate::measure::clock::Clock;
use crate::measure::placement;
use crate::pingpong::floor::FloorReport;
use crate::report::{self, Header};
use options::{Format, Plan};
use row::RowContext;

/// The settings a run used, as stored in JSON.
#[derive(Debug, Clone, Serialize)]
pub struct Settings {
    /// Transports, in run order.
    pub transports: Vec<String>,
    /// Message sizes, bytes.
    pub sizes: Vec<usize>,
    /// Placements.
    pub placements: Vec<Placement>,
    /// Target seconds of each measured run (time cap: twice that).
    pub row_secs: f64,
    /// Hybrid spin budget, microseconds.
    pub spin_us: u64,
    /// CPUs available to the run, in the order placements use them.
    pub cpus: Vec<usize>,
    /// Warm-up before each latency run, s (null: a fifth of a row).
    pub warmup_secs: Option<f64>,
    /// Latency runs per row.
    pub repeats: usize,
    /// Latency timing: `per-message` or `whole`.
    pub timing: results::Timing,
    /// Open-loop send rate, messages per second (null: closed loop).
    pub rate: Option<f64>,
    /// Cost of one timestamp, ns, subtracted from per-message samples.
    pub timestamp_overhead_ns: f64,
}

/// Counts of rows by outcome, and the winners of each group.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Rows run.
    pub rows: usize,
    /// Measured, every reply checked.
    pub ok: usize,
    /// Broken: a call failed or a reply was wrong.
    pub failed: usize,
    /// Size beyond the transport's maximum.
    pub not_applicable: usize,
    /// Transport or placement unavailable here.
    pub skipped: usize,
    /// Stopped by a signal.
    pub interrupted: usize,
    /// Fastest transports of each (size, placement).
    pub groups: Vec<GroupSummary>,
}

/// The whole report (`--json`).
#[derive(Debug, Serialize)]
pub struct Report {
    #[serde(flatten)]
    header: Header,
    /// What was asked for.
    pub settings: Settings,
    /// Every row, in run order.
    pub rows: Vec<Row>,
    /// What else used the CPUs meanwhile.
    pub other_load: Option<load::OtherLoad>,
    /// Outcome counts and winners.
    pub summary: Summary,
    /// This machine's floor (`msgbench floor --quick` between the run's
    /// first two CPUs), measured at the start; `None` if it could not be.
    pub floor: Option<FloorReport>,
}

/// A private namespace directory for one run, removed on drop.
struct RunDir(Namespace);

impl Drop for RunDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(self.0.root());
    }
}

/// Runs the catalogue, printing each group (or row) as it completes.
pub fn run(args: &IpcArgs, stop: Arc<AtomicBool>) -> Result<Report> {
    let plan = options::plan(args)?;
    let _applied = args.sched.apply()?;
    let base = Namespace::resolve(args.ns.as_deref())?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let dir = RunDir(Namespace::open(
        base.root()
            .join(format!("ipc-run-{}-{nanos}", std::process::id())),
    )?);
    let clock = Clock::best();
    let header = Header::capture(&clock);
    let floor = quick_floor(&plan.cpus);
    let vs_floor = floor.as_ref().filter(|_| args.vs_floor);
    println!(
        "msgbench ipc: {} CPUs, clock {}, about {} s per measured run\n{}\n\
         Transports {}; sizes {} bytes; placements {}",
        placement::cpu_count(),
        clock.describe(),
        plan.row_secs,
        header.environment.context_line(),
        plan.transports.join(", "),
        plan.sizes
            .iter()
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        plan.placements
            .iter()
            .map(|p| p.name())
            .collect::<Vec<_>>()
            .join(", "),
    );
    if plan.format == Format::IpcBench {
        println!();
    }
    let opts = msgpass::Options {
        spin: plan.spin,
        wait: Some(Duration::from_secs(2)),
        ..msgpass::Options::default()
    };
    let ctx = RowContext {
        ns: &dir.0,
        opts: &opts,
        row_secs: plan.row_secs,
        clock,
        stop: &stop,
        fault: plan.fault,
        plan: &plan,
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut summary = Summary::default();
    let meter = load::LoadMeter::start();
    'run: for &size in &plan.sizes {
        for &placement in &plan.placements {
            let group = run_group(&ctx, &plan, rows.len(), size, placement);
            let g = GroupSummary::of(size, placement, &group);
            if plan.format == Format::Table {
                print_group(&plan, &group, &g, vs_floor);
            }
            summary.groups.push(g);
            rows.extend(group);
            if stop.load(Ordering::Relaxed) {
                break 'run;
            }
        }
    }
    let other_load = meter.finish();
    if plan.format == Format::Table {
        println!("\n{}", table::legend(&rows, &clock, plan.row_secs));
        if let Some(f) = vs_floor {
            println!("{}", table::floor_legend(f));
        }
        println!("{}", notes::legend(&plan, &clock));
    }
    if let Some(l) = &other_load {
        println!("{}", l.describe());
    }
    count(&mut summary, &rows);
    let report = Report {
        header,
        settings: Settings {
            transports: plan.transports.clone(),
            sizes: plan.sizes.clone(),
            placements: plan.placements.clone(),
            row_secs: plan.row_secs,
            spin_us: plan.spin.as_micros() as u64,
            cpus: plan.cpus.clone(),
            warmup_secs: plan.warmup_secs,
            repeats: plan.repeats,
            timing: plan.timing,
            rate: plan.rate,
            timestamp_overhead_ns: clock.overhead_ns(),
        },
        rows,
        other_load,
        summary,
        floor,
    };
    if let Some(p) = &args.json {
        report::json::write(p, &report)?;
    }
    drop(dir);
    if report.summary.interrupted > 0 || stop.load(Ordering::Relaxed) {
        bail!("interrupted");
    }
    if report.summary.failed > 0 {
        let failed: Vec<String> = report
            .rows
            .iter()
            .filter(|r| r.status == Status::Failed)
            .map(|r| format!("{} {} B {}", r.transport, r.size, r.placement.name()))
            .collect();
        let more = match failed.len() {
            n if n > 4 => format!(" and {} more", n - 4),
            _ => String::new(),
        };
        bail!(
            "{} of {} rows FAILED ({}{more}): see the table",
            report.summary.failed,
            report.summary.rows,
            failed[..failed.len().min(4)].join(", ")
        );
    }
    Ok(report)
}

/// Every transport at one size and placement; in ipc-bench format each
/// row is printed as soon as it is done.
fn run_group(
    ctx: &RowContext,
    plan: &Plan,
    first_row: usize,
    size: usize,
    placement: Placement,
) -> Vec<Row> {
    let mut group = Vec::new();
    for (k, t) in plan.transports.iter().enumerate() {
        let row = match plan.cpus_for(placement) {
            Ok(cpus) => row::run(
                ctx,
                &format!("row-{}", first_row + k),
                t,
                size,
                placement,
                cpus,
            ),
            Err(reason) => {
                let mech = msgpass::transport::by_name(t).map_or(t.clone(), |x| x.name().into());
                Row::new(t, &mech, size, placement).end(Status::Skipped, reason)
            }
        };
        if plan.format == Format::IpcBench {
            println!("{}", ipcbench::row(&row));
            let _ = std::io::stdout().flush();
        }
        group.push(row);
        if ctx.stop.load(Ordering::Relaxed) {
            break;
        }
    }
    group
}

/// A quick floor between the first two of `cpus`, or `None` (said on
/// stdout) if it cannot be measured.
fn quick_floor(cpus: &[usize]) -> Option<FloorReport> {
    match crate::pingpong::floor::measure(true, &cpus[..cpus.len().min(2)]) {
        Ok(f) => Some(f),
        Err(e) => {
            println!("msgbench ipc: floor not measured: {e:#}");
            None
        }
    }
}

fn print_group(plan: &Plan, group: &[Row], g: &GroupSummary, floor: Option<&FloorReport>) {
    let cpus = plan.cpus_for(g.placement);
    println!(
        "\n{}",
        table::title(g.size, g.placement, cpus.as_ref().ok().copied())
    );
    match cpus {
        Err(reason) => println!("  skipped: {reason}"),
        Ok(_) => println!("{}", table::group(group, g, floor)),
    }
    for w in notes::warnings(group) {
        println!("{w}");
    }
    let _ = std::io::stdout().flush();
}

fn count(s: &mut Summary, rows: &[Row]) {
    s.rows = rows.len();
    for r in rows {
        match r.status {
            Status::Ok => s.ok += 1,
            Status::Failed => s.failed += 1,
            Status::NotApplicable => s.not_applicable += 1,
            Status::Skipped => s.skipped += 1,
            Status::Interrupted => s.interrupted += 1,
        }
    }
}
