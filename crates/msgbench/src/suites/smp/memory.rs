//! The `memory` path of `msgbench smp`: one cell (a table variant, N
//! workers, one frame size) measured by the RFC 2544 search over the
//! simulated NIC ports, with a route-update thread changing routes all the
//! while.
//!
//! Per frame a worker does what a router does: header checks, TTL and
//! checksum update ([`packet::forward_in_place`]; a frame it refuses is
//! unrouted), then the lookup of the destination and the per-route
//! counters through its own table handle. Each input port is fed from its
//! own pool of real frames whose destinations follow `--flows` over the
//! routes that leave by the next port (port 0's traffic goes out of port
//! 1, and so on round; route changes move a few routes meanwhile). Every
//! trial's books are checked (every frame that arrived was forwarded or
//! counted as lost); one that does not balance fails the row.

use std::sync::{Mutex, PoisonError};

use anyhow::{anyhow, bail, Context, Result};

use super::forwarder::{self, ForwarderConfig, TrialReport};
use super::lpm::Dir24;
use super::measured::{CellRun, FirstLoss};
use super::options::SmpPlan;
use super::packet::{self, Spec};
use super::ports::{Discard, Offered, Pool};
use super::search::{bounds, SearchParams, SearchResult};
use super::setup::{by_size, search_unless_stopped, Routes, TRAFFIC_SEED};
use super::synth::{Destinations, Route};
use super::tables::{LockStats, UpdaterReport, Variant, WorkerHandle};
use crate::measure::placement::CpuList;
use crate::suites::RunContext;

/// Bytes of frames per pool (the pool's frame count is this over the
/// frame size, within [`MIN_POOL`] and [`MAX_POOL`]).
const POOL_BYTES: usize = 16 << 20;
const MIN_POOL: usize = 4096;
const MAX_POOL: usize = 65_536;
/// Longest flat-out probe.
const PROBE_MS: u64 = 200;
/// What every cell of a run shares: the table and the traffic.
pub struct Setup {
    /// The synthetic routes (one output port per input port) and their
    /// FIB; each cell's table starts from a copy.
    pub routes: Routes,
    /// Input ports.
    pub ports: usize,
    /// Per frame size, one pool of frames per input port.
    pools: Vec<(usize, Vec<Pool>)>,
}

impl Setup {
    /// Builds the table and the frames of every size in `plan`.
    pub fn build(plan: &SmpPlan) -> Result<Setup> {
        let ports = plan.memory_ports();
        let routes = Routes::build(plan, ports as u16);
        let mut pools = Vec::new();
        for &size in &plan.sizes {
            let per_port = (0..ports)
                .map(|p| pool(&routes.routes, plan, size, p))
                .collect::<Result<Vec<_>>>()?;
            pools.push((size, per_port));
        }
        Ok(Setup {
            routes,
            ports,
            pools,
        })
    }
}

/// Input port `port`'s frames: destinations from its own stream, over
/// the routes that leave by the next port (`port + 1`, round), as in the
/// study, where each port's traffic was forwarded to the other: so no
/// output port is offered more than an input port carries.
fn pool(routes: &[Route], plan: &SmpPlan, size: usize, port: usize) -> Result<Pool> {
    let ports = plan.memory_ports();
    let out = ((port + 1) % ports) as u16;
    let onward: Vec<Route> = routes.iter().filter(|r| r.port == out).copied().collect();
    let targets = if onward.is_empty() { routes } else { &onward };
    let mut dsts = Destinations::new(targets, plan.flows, TRAFFIC_SEED + port as u64)
        .context("no destinations: the table is empty")?;
    let count = (POOL_BYTES / size).clamp(MIN_POOL, MAX_POOL);
    let mut spec = Spec::default();
    let mut err = None;
    let pool = Pool::build(count, size, |k, frame| {
        spec.dst = dsts.next_addr();
        match packet::write(frame, &spec, k) {
            Ok(()) => packet::seal(frame),
            Err(e) => err = Some(e),
        }
    });
    match err {
        Some(e) => Err(anyhow!("building {size}-byte frames: {e}")),
        None => Ok(pool),
    }
}

/// One trial's extra figures, kept beside the search's own record.
struct TrialFigures {
    rate: f64,
    passed: bool,
    locks: Vec<LockStats>,
    report: TrialReport,
}

/// Lock figures of the worker handles, handed over as they are dropped
/// at the end of each trial.
type Collected = Mutex<Vec<(usize, LockStats)>>;

/// A worker's table handle that hands its lock figures over when dropped.
struct Handle<'a> {
    handle: WorkerHandle<'a, Dir24>,
    out: &'a Collected,
}

impl Drop for Handle<'_> {
    fn drop(&mut self) {
        let s = self.handle.stats();
        self.out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((self.handle.index(), s));
    }
}

/// Measures one cell: `variant` with `workers` workers at `size` bytes.
pub fn measure(
    plan: &SmpPlan,
    setup: &Setup,
    (size, variant, workers): (usize, Variant, usize),
    cx: &RunContext,
) -> Result<CellRun> {
    let pools = by_size(&setup.pools, size)?;
    let table = setup.routes.table(variant, workers);
    let mut cfg = ForwarderConfig::new(workers, setup.ports, size, Offered::FlatOut, plan.trial());
    cfg.cpus = CpuList(plan.cpus.clone());
    cfg.rx_ring = plan.ring;
    cfg.tx_ring = plan.ring;
    cfg.line_rate = plan.line_rate_bps;
    let collected: Collected = Mutex::new(Vec::new());
    let bytes = size as u32;
    let route = |k: usize| {
        let mut h = Handle {
            handle: table.worker(k),
            out: &collected,
        };
        move |frame: &mut [u8]| -> Option<u16> {
            packet::forward_in_place(frame).ok()?;
            let dst = u32::from_be_bytes(frame[30..34].try_into().ok()?);
            h.handle.forward(dst, bytes).map(|hop| hop.port)
        }
    };
    let source = |p: u16| pools[usize::from(p)].clone();
    let updater = setup.routes.start_updates(&table, plan, workers)?;
    let searched = search(plan, &cfg, cx, |at| {
        let run = forwarder::run(at, &cx.clock, route, source, |_| Discard)?;
        let mut locks =
            std::mem::take(&mut *collected.lock().unwrap_or_else(PoisonError::into_inner));
        locks.sort_by_key(|(k, _)| *k);
        Ok((run.report, locks.into_iter().map(|(_, s)| s).collect()))
    });
    let updates = updater.stop();
    let (search, capacity_pps, figures) = searched?;
    Ok(summarise(search, capacity_pps, &figures, workers, updates))
}

/// The probe, then the search, each trial's books checked.
fn search(
    plan: &SmpPlan,
    cfg: &ForwarderConfig,
    cx: &RunContext,
    mut trial: impl FnMut(
        &ForwarderConfig,
    ) -> Result<(TrialReport, Vec<LockStats>), forwarder::ForwardError>,
) -> Result<(SearchResult, f64, Vec<TrialFigures>)> {
    let probe_cfg = ForwarderConfig {
        trial: cfg.trial.min(std::time::Duration::from_millis(PROBE_MS)),
        offered: Offered::FlatOut,
        ..cfg.clone()
    };
    let (probe, _) = trial(&probe_cfg).map_err(|e| anyhow!("{e}"))?;
    let secs = probe_cfg.trial.as_secs_f64().max(1e-9);
    let capacity = probe.total().forwarded as f64 / secs;
    let line = super::ports::line_rate_pps(plan.line_rate_bps, cfg.frame_len);
    let (lo, hi) = bounds(line, Some(capacity / cfg.ports as f64));
    let mut figures = Vec::new();
    let params = SearchParams::new(lo, hi, plan.resolution);
    let result = search_unless_stopped(params, line, cx, |rate| {
        let at = ForwarderConfig {
            offered: Offered::Rate(rate),
            ..cfg.clone()
        };
        let (report, locks) = trial(&at).map_err(|e| anyhow!("{e}"))?;
        check_books(&report)?;
        let t = report.as_trial(rate).with_tolerance(plan.loss_tolerance);
        figures.push(TrialFigures {
            rate,
            passed: t.passed(),
            locks,
            report,
        });
        Ok(t)
    })?;
    Ok((result, capacity, figures))
}

/// Every frame that arrived on a port was forwarded or counted as lost,
/// and every frame forwarded left by a transmit port.
fn check_books(r: &TrialReport) -> Result<()> {
    for (p, c) in r.rx.iter().enumerate() {
        if !c.balanced(0) {
            bail!("port {p}: the books do not balance: {c:?}");
        }
    }
    let t = r.total();
    let out: u64 = r.tx.iter().map(|c| c.forwarded).sum();
    if out != t.forwarded {
        bail!(
            "{} frames forwarded by input port, {out} by output port",
            t.forwarded
        );
    }
    Ok(())
}

/// The figures of the trials at the zero-loss rate.
fn summarise(
    search: SearchResult,
    capacity_pps: f64,
    figures: &[TrialFigures],
    workers: usize,
    updates: UpdaterReport,
) -> CellRun {
    let mut locks = vec![LockStats::default(); workers];
    let mut gaps = vec![0u64; workers];
    let (mut polls, mut idle, mut unrouted) = (0u64, 0u64, 0u64);
    let mut books = None;
    for f in figures.iter().filter(|f| f.passed && f.rate == search.rate) {
        books = Some((f.report.rx.clone(), f.report.tx.clone()));
        for (k, s) in f.locks.iter().enumerate().take(workers) {
            locks[k].merge(s);
        }
        for (k, w) in f.report.workers.iter().enumerate().take(workers) {
            gaps[k] = gaps[k].max(w.max_gap_ns);
            polls += w.polls;
            idle += w.idle_polls;
        }
        unrouted += f.report.total().unrouted;
    }
    let ports = figures.first().map_or(1, |f| f.report.rx.len()) as f64;
    let first_loss = figures
        .iter()
        .filter(|f| !f.passed && f.rate > search.rate)
        .min_by(|a, b| a.rate.total_cmp(&b.rate))
        .map(|f| FirstLoss {
            pps: f.rate * ports,
            lost: f.report.total().overrun(),
            stall_us: f
                .report
                .workers
                .iter()
                .map(|w| w.max_gap_ns)
                .max()
                .unwrap_or(0) as f64
                / 1e3,
        });
    CellRun {
        search,
        capacity_pps: Some(capacity_pps),
        first_loss,
        locks,
        busy: (polls > 0).then(|| 1.0 - idle as f64 / polls as f64),
        max_gap_us: gaps.iter().map(|&g| g as f64 / 1000.0).collect(),
        unrouted,
        updates,
        generator_limited: false,
        books,
    }
}
