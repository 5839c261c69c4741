//! `msgbench broker`: what a message broker costs, against real D-Bus
//! (docs/methodology.md, "The D-Bus broker study"). The same method, `GetInteger(numInts)`,
//! called in every arrangement with real processes: straight to the
//! service over a msgpass transport, through the msgbench broker (routing
//! on a fixed header, or also validating every body as D-Bus), over
//! peer-to-peer D-Bus, and through private dbus-daemon and dbus-broker
//! buses the suite starts and stops itself. Each call's time is split
//! into transport legs, routing, validation, marshalling and the
//! daemon's share, and the study's question is answered from the rows.
//!
//! The parts:
//! - `proto`: the fixed header the broker routes on; `service`: the
//!   msgpass service; `router`: the msgbench broker; `client`: the calls
//!   and their timing; `dbus`: the D-Bus side (libdbus, sd-bus and zbus,
//!   private buses, the answer per library).
//! - `role`: those as processes (`msgbench broker-peer`), started,
//!   talked to and stopped through `measure::peers`; `measure`: one
//!   cell measured once.
//! - `arithmetic`: the study's per-leg arithmetic done on our uds and
//!   shm rows.
//! - `options`: the command line and the plan; `run`: every cell through
//!   the suites' shared sweep (repeated and interleaved), into rows
//!   ([`row::BrokerRow`]); `judge`:
//!   the study's question and the goals judged; `render`: tables and
//!   figures.

pub mod arithmetic;
pub mod client;
pub mod dbus;
pub mod judge;
pub mod measure;
pub mod options;
pub mod proto;
pub mod render;
pub mod role;
pub mod router;
pub mod row;
pub mod run;
pub mod service;

use std::time::Duration;

use anyhow::Result;

pub use options::{BrokerArgs, BrokerPlan, Via};
pub use role::PeerArgs;
pub use row::BrokerRow;

use super::{Results, RunContext, Suite};
use crate::measure::sched::SchedArgs;
use crate::results::envelope::Figure;
use crate::results::table::Section;

/// `msgbench broker`.
pub struct Broker;

impl Suite for Broker {
    const NAME: &'static str = "broker";
    type Args = BrokerArgs;
    type Plan = BrokerPlan;
    type Row = BrokerRow;

    fn plan(args: &BrokerArgs) -> Result<BrokerPlan> {
        options::plan(args)
    }

    fn sched(args: &BrokerArgs) -> Option<&SchedArgs> {
        Some(&args.sched)
    }

    fn estimate(plan: &BrokerPlan) -> Duration {
        run::cell_estimate(plan) * (run::cells(plan).len() * plan.repeats) as u32
    }

    fn banner(plan: &BrokerPlan, cx: &RunContext) -> String {
        format!(
            "msgbench broker: GetInteger(numInts) direct, through a broker, and over D-Bus; {}; clock {}",
            plan.describe(),
            cx.clock.describe()
        )
    }

    fn run(plan: &BrokerPlan, cx: &RunContext) -> Result<Results<BrokerRow>> {
        run::run(plan, cx)
    }

    fn sections(plan: &BrokerPlan, results: &Results<BrokerRow>) -> Vec<Section> {
        render::sections(plan, &results.rows, &results.verdicts)
    }

    fn figures(results: &Results<BrokerRow>) -> Vec<Figure> {
        render::figures(&results.rows)
    }

    fn judge(_plan: &BrokerPlan, results: &Results<BrokerRow>) -> Vec<String> {
        judge::judge(&results.rows)
    }
}
