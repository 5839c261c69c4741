//! What both paths of `msgbench smp` (`memory` and the veth path in
//! `wire`) set up the same way: the synthetic table and the FIB built
//! from it, each cell's table over a copy of it, the route-update thread
//! on the CPUs the workers leave free, the frame pools found by size, and
//! the search loop that stops when the run is interrupted. The seeds are
//! the same on both paths, so every cell sees one table, one stream of
//! traffic and one stream of route changes.

use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};

use super::fib::RouteId;
use super::lpm::Dir24;
use super::options::SmpPlan;
use super::search::{try_search_raising, SearchParams, SearchResult, Trial};
use super::synth::{self, Route};
use super::tables::{Table, UpdatePlan, Updater, Variant};
use crate::suites::RunContext;

/// Seed of the synthetic table.
pub const TABLE_SEED: u64 = 1;
/// Seed of the traffic's destinations (plus the input port on the
/// memory path).
pub const TRAFFIC_SEED: u64 = 100;
/// Seed of the route changes.
const CHANGE_SEED: u64 = 7;

/// The synthetic routes and the FIB built from them: what every cell's
/// table starts from.
pub struct Routes {
    /// The routes (route id = index), each with its output port.
    pub routes: Vec<Route>,
    /// The FIB built from them.
    pub fib: Dir24,
    /// Output ports the routes leave by.
    pub ports: u16,
}

impl Routes {
    /// `plan.routes` synthetic routes over `ports` output ports, and
    /// their FIB.
    pub fn build(plan: &SmpPlan, ports: u16) -> Routes {
        let routes = synth::generate(plan.routes, ports, TABLE_SEED);
        let mut fib = Dir24::new();
        synth::fill(&mut fib, &routes);
        Routes { routes, fib, ports }
    }

    /// A cell's table: `variant` for `workers` workers over a copy of
    /// the FIB.
    pub fn table(&self, variant: Variant, workers: usize) -> Arc<Table<Dir24>> {
        let ports = self.routes.iter().map(|r| r.port).collect();
        Arc::new(Table::new(variant, self.fib.clone(), ports, workers))
    }

    /// Starts the route-update thread on `table` (`plan.updates` changes
    /// a second, the same stream for every cell), on the CPUs of
    /// `--cpus` that `workers` workers leave free.
    pub fn start_updates(
        &self,
        table: &Arc<Table<Dir24>>,
        plan: &SmpPlan,
        workers: usize,
    ) -> Result<Updater> {
        let changes = self.update_plan(plan.updates);
        Updater::start_on(Arc::clone(table), &changes, &spare_cpus(plan, workers))
            .context("cannot start the route-update thread")
    }

    /// `rate` changes per second to the routes: the same stream for
    /// every cell of a run.
    fn update_plan(&self, rate: f64) -> UpdatePlan {
        UpdatePlan {
            rate,
            seed: CHANGE_SEED,
            prefixes: (self.routes.iter().enumerate())
                .map(|(i, r)| (r.prefix, i as RouteId))
                .collect(),
            routes: self.routes.len() as u32,
            ports: self.ports,
        }
    }
}

/// The CPUs of `--cpus` that `workers` workers leave free (the
/// route-update thread runs there), or none when they take them all.
fn spare_cpus(plan: &SmpPlan, workers: usize) -> Vec<usize> {
    plan.cpus.iter().skip(workers).copied().collect()
}

/// The frames built for `size` bytes among `pools`.
pub fn by_size<T>(pools: &[(usize, T)], size: usize) -> Result<&T> {
    pools
        .iter()
        .find(|(s, _)| *s == size)
        .map(|(_, p)| p)
        .ok_or_else(|| anyhow!("no frames of {size} bytes were built"))
}

/// The RFC 2544 search from `params`, raised up to `ceiling`, each
/// `trial(rate)` run unless the run was interrupted meanwhile.
pub fn search_unless_stopped(
    params: SearchParams,
    ceiling: f64,
    cx: &RunContext,
    mut trial: impl FnMut(f64) -> Result<Trial>,
) -> Result<SearchResult> {
    try_search_raising(params, ceiling, |rate| {
        if cx.stopped() {
            bail!("interrupted");
        }
        trial(rate)
    })
}
