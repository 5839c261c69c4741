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
//! The server of each row is, by `--layout`, a process of its own
//! (`msgbench ipc-peer server`, the default, as the study ran) or a thread
//! of this one, serving in a private namespace directory (removed at the
//! end, also after SIGINT). A row that
//! breaks (a wrong, lost or stale reply) shows `FAILED` and the run goes on;
//! the exit status is 1 if any row failed.
//!
//! Scale (`scale`, `idle`, `clients`, `peer`): `--idle-clients` runs every
//! row beside N idle clients held by child processes and reports what an
//! idle connection costs the server; `--clients` adds rows of N active
//! client processes on one server (aggregate rate, percentiles, fairness).

mod client;
mod clients;
mod connect;
mod context;
mod crowd;
mod echo;
mod idle;
mod interleave;
mod judge;
mod load;
mod one_row;
mod options;
pub mod peer;
mod protocol;
mod remote;
mod render;
mod row;
mod run;
mod scale;
mod server;
mod server_error;
mod server_process;
mod stats;
mod stop;
mod vs_peers;

use std::time::Duration;

use anyhow::Result;

pub use judge::GroupSummary;
pub(crate) use options::usable_cpus;
pub use options::{IpcArgs, Plan};
pub use peer::PeerArgs;
pub use row::{
    Api, CpuCost, CpuMethod, ExactStats, LatencyRun, Layout, Placement, Row, RowSpec, Status,
    ThroughputRun, WaitClass,
};
pub(crate) use server::ServerThread;

use super::{Results, RunContext, Suite};
use crate::measure::placement;
use crate::measure::sched::SchedArgs;
use crate::results::envelope::Figure;
use crate::results::table::Section;

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
             Transports {}; sizes {} bytes; placements {}; layouts {}{}{}",
            placement::cpu_count(),
            cx.clock.describe(),
            plan.row_secs,
            plan.transports.join(", "),
            list(plan.sizes.iter().map(|s| s.to_string()).collect()),
            list(plan.placements.iter().map(|p| p.name().into()).collect()),
            list(plan.layouts.iter().map(|l| l.name().into()).collect()),
            counts("idle clients", &plan.idle_clients),
            counts("active clients", &plan.clients),
        )
    }

    fn run(plan: &Plan, cx: &RunContext) -> Result<Results<Row>> {
        run::run(plan, cx)
    }

    fn sections(plan: &Plan, results: &Results<Row>) -> Vec<Section> {
        render::sections(plan, results)
    }

    fn figures(results: &Results<Row>) -> Vec<Figure> {
        let mut f = render::figures::figures(&results.rows, results.floor.as_ref());
        f.extend(render::peers::figures(&results.peers));
        f
    }

    fn judge(_plan: &Plan, results: &Results<Row>) -> Vec<String> {
        judge::answers(&results.rows)
    }
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
