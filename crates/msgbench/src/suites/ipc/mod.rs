//! `msgbench ipc`: the ipc-bench catalogue (docs/methodology.md, "msgbench ipc")
//! measured the same way for every msgpass transport: for each transport,
//! message size and placement (client and server threads pinned to one CPU
//! or to two), round-trip latency percentiles, one-way throughput, and the
//! CPU both sides spend per message, every reply checked. Rows measure
//! msgpass's in-place API by default (only the echo's stamps rewritten,
//! the body checked whole now and then: see protocol.rs); `--copy` adds a
//! row of the copying API (every byte transformed and checked) right after
//! each.
//!
//! The server of each row is a thread of this process in a private
//! namespace directory (removed at the end, also after SIGINT). A row that
//! breaks (a wrong, lost or stale reply) shows `FAILED` and the run goes on;
//! the exit status is 1 if any row failed.
//!
//! Scale (`scale`, `idle`, `clients`, `peer`): `--idle-clients` runs every
//! row beside N idle clients held by child processes and reports what an
//! idle connection costs the server; `--clients` adds rows of N active
//! client processes on one server (aggregate rate, percentiles, fairness).

mod client;
mod clients;
mod echo;
mod idle;
mod load;
mod one_row;
mod options;
pub mod peer;
mod protocol;
mod render;
mod row;
mod run;
mod scale;
mod server;
mod stats;

use std::time::Duration;

use anyhow::Result;

pub use options::{IpcArgs, Plan, RowSpec};
pub use peer::PeerArgs;
pub use row::{
    Api, CpuCost, CpuMethod, ExactStats, GroupSummary, LatencyRun, Placement, Row, Status,
    ThroughputRun, WaitClass,
};

use super::{Results, RunContext, Suite};
use crate::measure::clock::Clock;
use crate::measure::placement;
use crate::measure::sched::SchedArgs;
use crate::report::envelope::Figure;
use crate::report::table::{Format, Section};

/// `msgbench ipc`.
pub struct Ipc;

impl Suite for Ipc {
    const NAME: &'static str = "ipc";
    type Args = IpcArgs;
    type Plan = Plan;
    type Row = Row;

    fn plan(args: &IpcArgs) -> Result<Plan> {
        options::plan(args)
    }

    fn sched(args: &IpcArgs) -> Option<&SchedArgs> {
        Some(&args.sched)
    }

    fn estimate(plan: &Plan) -> Duration {
        run::estimate(plan)
    }

    fn banner(plan: &Plan, cx: &RunContext) -> String {
        let list = |v: Vec<String>| v.join(", ");
        let counts = |what: &str, v: &[u32]| {
            if v.is_empty() {
                String::new()
            } else {
                format!(
                    "; {what} {}",
                    list(v.iter().map(|n| n.to_string()).collect())
                )
            }
        };
        format!(
            "msgbench ipc: {} CPUs, clock {}, about {} s per measured run\n\
             Transports {}; sizes {} bytes; placements {}{}{}",
            placement::cpu_count(),
            cx.clock.describe(),
            plan.row_secs,
            plan.transports.join(", "),
            list(plan.sizes.iter().map(|s| s.to_string()).collect()),
            list(plan.placements.iter().map(|p| p.name().into()).collect()),
            counts("idle clients", &plan.idle_clients),
            counts("active clients", &plan.clients),
        )
    }

    fn run(plan: &Plan, cx: &RunContext) -> Result<Results<Row>> {
        run::run(plan, cx)
    }

    fn sections(plan: &Plan, results: &Results<Row>) -> Vec<Section> {
        sections(plan, results)
    }

    fn figures(results: &Results<Row>) -> Vec<Figure> {
        render::figures::figures(&results.rows, results.floor.as_ref())
    }
}

/// The text output. Table and markdown: a table per size, placement and
/// count of idle clients (with `--ipcbench-block`, the old study's blocks
/// after each); with `--idle-clients`, each transport's p50 against the
/// count per size and placement; with `--clients`, the active-clients
/// table per size and placement; then the legends and the run's notes.
/// CSV: one flat table of every row.
fn sections(plan: &Plan, results: &Results<Row>) -> Vec<Section> {
    let floor = results.floor.as_ref();
    if plan.format == Format::Csv {
        return vec![Section::Table(render::flat(&results.rows, floor))];
    }
    let (active, single): (Vec<Row>, Vec<Row>) = results
        .rows
        .iter()
        .cloned()
        .partition(|r| r.clients.is_some());
    let cpus = |r: Option<&Row>| r.and_then(|r| plan.cpus_for(r.placement).ok());
    let mut out = Vec::new();
    for g in single.chunk_by(|a, b| {
        (a.size, a.placement, a.idle_clients) == (b.size, b.placement, b.idle_clients)
    }) {
        out.push(Section::Table(render::group(g, cpus(g.first()), floor)));
        if plan.ipcbench_block {
            let blocks: Vec<String> = g.iter().map(render::ipcbench::row).collect();
            out.push(Section::Text(blocks.join("\n")));
        }
    }
    if !plan.idle_clients.is_empty() {
        for g in single.chunk_by(|a, b| (a.size, a.placement) == (b.size, b.placement)) {
            out.push(Section::Table(render::scale::idle_summary(
                g,
                cpus(g.first()),
            )));
        }
    }
    for g in active.chunk_by(|a, b| (a.size, a.placement) == (b.size, b.placement)) {
        out.push(Section::Table(render::scale::active(g, cpus(g.first()))));
    }
    // The clock of the run: Clock::best() is chosen once per process.
    let clock = Clock::best();
    out.push(Section::Text(render::legend(
        &single,
        &clock,
        plan.row_secs,
    )));
    if let Some(l) = render::scale::legend(&results.rows) {
        out.push(Section::Text(l));
    }
    if let Some(f) = floor {
        out.push(Section::Text(render::floor_legend(f)));
    }
    out.push(Section::Text(render::notes::legend(plan, &clock)));
    if !results.notes.is_empty() {
        out.push(Section::Text(results.notes.join("\n")));
    }
    out
}

#[cfg(test)]
mod tests {
    use msgpass::transport::Transport;

    #[test]
    fn typed_shm_transports_are_the_named_ones() {
        for name in ["shm", "shm-spin", "shm-block", "shm-hybrid"] {
            let typed = msgpass::transport::shm::Shm::by_name(name).expect(name);
            let info = msgpass::transport::info(name).expect(name);
            assert_eq!(typed.name(), info.name, "{name}");
        }
        for name in ["uds", "pipe", "tcp", "shmx"] {
            assert!(
                msgpass::transport::shm::Shm::by_name(name).is_none(),
                "{name}"
            );
        }
    }
}
