//! `msgbench rtos`: the RTOS evaluation catalogue (../shared/spec/rtos.md)
//! on Linux: behaviour tests (PASS/FAIL with the observed order of events)
//! and timing tests (samples, avg, min, max, p50, p99, p99.9, next to the
//! lab's QNX 6.5 figure), by test ID or group.
//!
//! Layout: `def.rs` says what a test is ([`TestDef`], [`Variant`]);
//! `catalogue.rs` lists every test and runs one; each group lives
//! in its own file (`cal.rs`, `clk.rs`, `thr.rs`, `sem.rs`, `mutex.rs`,
//! `irq.rs`, `mem.rs`) and returns its definitions; `outcome.rs` holds what
//! a test produces; `ctx.rs` what a test is given; `rt.rs` the real-time
//! helpers (SCHED_FIFO threads, pinning); `report.rs` prints and writes.

mod catalogue;
mod ctx;
mod def;
mod options;
mod outcome;
mod report;
pub mod rt;

mod cal;
mod clk;
mod irq;
mod mem;
mod mutex;
pub mod prims; // SEM and MUT primitives (prims/)
mod rtthread;
mod sem;
mod thr; // threads with explicit scheduling, futex gate (CAL, CLK, THR)

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;

pub use catalogue::catalogue;
pub use ctx::{Ctx, SemKind};
pub use def::{TestDef, Variant};
pub use options::RtosArgs;
pub use outcome::{Group, Outcome, Reference, Sample, TestResult, Timing, Unit};
pub use report::Report;

use crate::measure::clock::Clock;
use crate::report::Header;

/// Runs the selected tests, printing each group's table as it completes.
pub fn run(args: &RtosArgs, stop: Arc<AtomicBool>) -> Result<Report> {
    let plan = options::plan(args)?;
    let _applied = args.sched.apply()?;
    let clock = Clock::best();
    let header = Header::capture(&clock);
    let ctx = Ctx::new(
        plan.quick,
        plan.sem,
        plan.duration,
        clock,
        Arc::clone(&stop),
    );
    println!(
        "msgbench rtos: {} tests, clock {}, semaphores: {}\n{}\n{}",
        plan.tests.len(),
        clock.describe(),
        plan.sem.name(),
        header.environment.context_line(),
        if ctx.fifo_allowed {
            "Real-time priority available: priority tests run pinned at SCHED_FIFO."
        } else {
            "No real-time priority (needs CAP_SYS_NICE): priority tests are skipped."
        }
    );
    let mut results = Vec::new();
    let mut group = None;
    let mut in_group: Vec<TestResult> = Vec::new();
    for def in &plan.tests {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        if group != Some(def.group) {
            if let Some(g) = group {
                report::print_group(g, &in_group, &plan);
                results.append(&mut in_group);
            }
            group = Some(def.group);
        }
        in_group.extend(catalogue::run_one(def, &ctx));
    }
    if let Some(g) = group {
        report::print_group(g, &in_group, &plan);
        results.append(&mut in_group);
    }
    let report = Report::new(header, &plan, results, stop.load(Ordering::Relaxed));
    report::print_summary(&report, &plan);
    if let Some(path) = &plan.json {
        crate::report::json::write(path, &report)?;
        println!("JSON: {}", path.display());
    }
    if report.summary.interrupted {
        anyhow::bail!("interrupted");
    }
    if report.summary.failed > 0 || report.summary.errors > 0 {
        anyhow::bail!(
            "{} test(s) failed, {} error(s)",
            report.summary.failed,
            report.summary.errors
        );
    }
    Ok(report)
}
