//! `msgbench smp`: SMP forwarding and lock
//! contention, after the dual-core QNX router study.
//!
//! The parts, each its own module:
//! - `fib`: what a forwarding table is ([`fib::Fib`]) and a slow, obviously
//!   right one ([`fib::Reference`]) every faster table is checked against.
//! - `ports`: the simulated NIC ports of the `memory` path: receive rings
//!   filled as time passes at the offered rate, overruns counted as loss
//!   ([`ports::RxPort`]), transmit rings draining at the line rate
//!   ([`ports::TxPort`]), `--line-rate` parsing.
//! - `forwarder`: N pinned workers, each draining its own receive ports
//!   into the transmit ports a forwarding closure chooses, for one trial
//!   ([`forwarder::run`]).
//! - `search`: the RFC 2544 throughput search ([`search::search`]).
//! - `veth`: the real-network path (root): our own namespaces and veth
//!   pairs, AF_PACKET generator, sink and relay, and the kernel's own
//!   forwarding as the reference row.
//! - `lpm`: the fast table, DIR-24-8 ([`lpm::Dir24`]): one or two memory
//!   reads per lookup.
//! - `synth`: a synthetic Internet-sized table ([`synth::generate`]) and
//!   the destinations of its traffic ([`synth::Destinations`]).
//! - `packet`: real Ethernet/IPv4/UDP frames in bytes, and what a router
//!   does to them ([`packet::forward_in_place`]).
//! - `tables`: the table variants of `--table` (`mutex`, `rwlock`, `rcu`,
//!   `per-cpu`) behind one worker interface, with per-worker lock wait and
//!   hold times, per-route counters, and the route-update thread.
//!
//! - `options`: the command line and the plan; `memory` and `wire`: one
//!   cell measured on each path, into one [`measured::CellRun`], both on
//!   `setup` (the table, the route-update thread, the search loop); `run`:
//!   every cell through the suites' shared sweep (repeated and
//!   interleaved), into rows ([`row::SmpRow`]); `judge`: the study's
//!   three lessons judged from the rows, once per run; `render`: tables
//!   and figures.

pub mod fib;
pub mod forwarder;
pub mod judge;
pub mod lpm;
pub mod measured;
pub mod memory;
pub mod options;
pub mod packet;
pub mod ports;
pub mod render;
pub mod row;
pub mod run;
pub mod search;
pub mod setup;
pub mod synth;
pub mod tables;
pub mod veth;
pub mod wire;

use std::time::Duration;

use anyhow::Result;

pub use options::{PortsMode, SmpArgs, SmpPlan};
pub use row::{Forwarder, Reference, SmpRow};
pub use tables::{LockStats, Variant};

use super::{Results, RunContext, Suite};
use crate::measure::sched::SchedArgs;
use crate::results::envelope::Figure;
use crate::results::table::Section;

/// `msgbench smp`.
pub struct Smp;

impl Suite for Smp {
    const NAME: &'static str = "smp";
    type Args = SmpArgs;
    type Plan = SmpPlan;
    type Row = SmpRow;

    fn plan(args: &SmpArgs) -> Result<SmpPlan> {
        let plan = options::plan(args)?;
        if plan.ports == PortsMode::Veth {
            if let Some(why) = wire::unavailable() {
                anyhow::bail!("{why}");
            }
        }
        Ok(plan)
    }

    fn sched(args: &SmpArgs) -> Option<&SchedArgs> {
        Some(&args.sched)
    }

    fn estimate(plan: &SmpPlan) -> Duration {
        run::cell_estimate(plan) * (run::cells(plan).len() * plan.repeats) as u32
    }

    fn banner(plan: &SmpPlan, cx: &RunContext) -> String {
        format!(
            "msgbench smp: RFC 2544 zero-loss forwarding throughput; {}; clock {}",
            plan.describe(),
            cx.clock.describe()
        )
    }

    fn run(plan: &SmpPlan, cx: &RunContext) -> Result<Results<SmpRow>> {
        run::run(plan, cx)
    }

    fn sections(plan: &SmpPlan, results: &Results<SmpRow>) -> Vec<Section> {
        render::sections(plan, &results.rows, &results.verdicts)
    }

    fn figures(results: &Results<SmpRow>) -> Vec<Figure> {
        render::figures(&results.rows)
    }

    fn judge(_plan: &SmpPlan, results: &Results<SmpRow>) -> Vec<String> {
        judge::judge(&results.rows)
            .into_iter()
            .map(|v| v.text)
            .collect()
    }
}
