//! The `veth` path of `msgbench smp` (root): real Ethernet frames from a
//! generator namespace, through the forwarder namespace, to a sink
//! namespace ([`veth`](super::veth)). One cell is either our workers (a
//! table variant, N workers, each pinned, each reading its share of the
//! input port through an AF_PACKET fanout group and sending out of the
//! other port) or the kernel's own IPv4 forwarding, measured by the same
//! RFC 2544 search with the same generator and sink.
//!
//! A trial's loss is every frame due that did not reach the sink: frames
//! the generator could not send on time (`late`, `refused`) count, since
//! the rate was not offered. The generator and the sink are threads of
//! this process on the same CPUs as the workers: that competition is part
//! of every veth figure here, and is said under the table.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};

use super::lpm::Dir24;
use super::measured::CellRun;
use super::options::SmpPlan;
use super::packet::{self, Spec, FCS};
use super::row::Forwarder;
use super::search::{SearchParams, SearchResult, Trial as SearchTrial};
use super::setup::{by_size, search_unless_stopped, Routes, TRAFFIC_SEED};
use super::synth::{Destinations, Route};
use super::tables::{LockStats, Table, UpdaterReport, Variant};
use super::veth::afpacket::{self, Relayed};
use super::veth::kernel::{kernel_trial, run_trial, Outcome, Trial};
use super::veth::topology::{Topology, FWD0, FWD1, GEN0, SINK0};
use crate::measure::cpu::{usage, CpuStat};
use crate::measure::placement::{cpu_count, pin_current_thread};
use crate::suites::RunContext;

/// Frames in the generator's pool per size.
const POOL: usize = 4096;
/// Offered rate of the probe that sets the search's upper bound, fps.
const PROBE_RATE: f64 = 5_000_000.0;
/// Longest probe.
const PROBE: Duration = Duration::from_millis(300);
/// Fanout group id of the workers' receivers.
const FANOUT_GROUP: u16 = 0x5a1;

/// What every veth cell shares: the test bed, the table and the frames.
pub struct Setup {
    /// The namespaces (removed when this is dropped).
    pub topo: Topology,
    /// The synthetic routes (one output port: the sink's side) and their FIB.
    routes: Routes,
    pools: Vec<(usize, Vec<Vec<u8>>)>,
}

/// Why veth mode cannot run here, if it cannot.
pub fn unavailable() -> Option<String> {
    if oslayer::ids::euid() != 0 {
        return Some("--ports veth needs root (network namespaces and packet sockets)".into());
    }
    match std::process::Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("--ports veth needs the `ip` program (apt-get install iproute2)".into()),
    }
}

impl Setup {
    /// Builds the test bed (sweeping a dead run's leftovers first), the
    /// table (one output port: the sink's side) and the frames.
    pub fn build(plan: &SmpPlan) -> Result<Setup> {
        if let Some(why) = unavailable() {
            bail!("{why}");
        }
        let topo = Topology::create()?;
        let routes = Routes::build(plan, 1);
        let mut pools = Vec::new();
        for &size in &plan.sizes {
            pools.push((size, frames(&routes.routes, plan, size)?));
        }
        Ok(Setup {
            topo,
            routes,
            pools,
        })
    }
}

/// Whether `dst` is on one of the test bed's own links (198.18.0.0/23),
/// which the forwarder namespace would deliver rather than forward.
fn on_our_links(dst: u32) -> bool {
    dst >> 9 == u32::from_be_bytes([198, 18, 0, 0]) >> 9
}

/// The generator's frames: gen0 to fwd0, destinations from the table as
/// `--flows` says, without the FCS (veth does not carry it).
fn frames(routes: &[Route], plan: &SmpPlan, size: usize) -> Result<Vec<Vec<u8>>> {
    let mut dsts = Destinations::new(routes, plan.flows, TRAFFIC_SEED)
        .context("no destinations: the table is empty")?;
    let mut spec = Spec {
        dst_mac: FWD0.mac,
        src_mac: GEN0.mac,
        src: u32::from_be_bytes(GEN0.ip),
        ..Spec::default()
    };
    (0..POOL)
        .map(|k| {
            spec.dst = loop {
                let d = dsts.next_addr();
                if !on_our_links(d) {
                    break d;
                }
            };
            let mut f = packet::build(size, &spec, k as u64)
                .map_err(|e| anyhow!("building {size}-byte frames: {e}"))?;
            f.truncate(size - FCS);
            Ok(f)
        })
        .collect()
}

/// One trial's figures beside the search's record.
struct TrialFigures {
    rate: f64,
    passed: bool,
    locks: Vec<LockStats>,
    busy: Option<f64>,
    unrouted: u64,
    late_only: bool,
}

/// Measures one cell: `forwarder` (with `workers` workers) at `size`.
pub fn measure(
    plan: &SmpPlan,
    setup: &Setup,
    (size, forwarder, workers): (usize, Forwarder, usize),
    cx: &RunContext,
) -> Result<CellRun> {
    let pool = by_size(&setup.pools, size)?;
    match forwarder {
        Forwarder::Kernel => search(plan, size, cx, |rate, d| {
            let t = Trial {
                size,
                rate,
                duration: d,
            };
            let out = kernel_trial(&setup.topo, &t, pool, &cx.stop)?;
            Ok((out, Vec::new(), 0))
        })
        .map(|(search, figures)| summarise(search, &figures, 0, UpdaterReport::default())),
        Forwarder::Table(v) => ours(plan, setup, (size, v, workers), pool, cx),
    }
}

/// Our workers around the generator and sink, the route-update thread
/// changing routes meanwhile.
fn ours(
    plan: &SmpPlan,
    setup: &Setup,
    (size, variant, workers): (usize, Variant, usize),
    pool: &[Vec<u8>],
    cx: &RunContext,
) -> Result<CellRun> {
    let table = setup.routes.table(variant, workers);
    let updater = setup.routes.start_updates(&table, plan, workers)?;
    let searched = search(plan, size, cx, |rate, d| {
        let t = Trial {
            size,
            rate,
            duration: d,
        };
        relay_trial(plan, setup, &table, workers, &t, pool, cx)
    });
    let updates = updater.stop();
    let (search, figures) = searched?;
    Ok(summarise(search, &figures, workers, updates))
}

/// One trial through `workers` relay workers, each pinned and with its
/// own table handle.
fn relay_trial(
    plan: &SmpPlan,
    setup: &Setup,
    table: &Table<Dir24>,
    workers: usize,
    trial: &Trial,
    pool: &[Vec<u8>],
    cx: &RunContext,
) -> Result<(Outcome, Vec<LockStats>, u64)> {
    let rx = afpacket::open_receivers(&setup.topo, FWD0, workers, FANOUT_GROUP)?;
    let tx = afpacket::open_sender(&setup.topo, FWD1)?;
    let relay_stop = AtomicBool::new(false);
    let bytes = trial.size as u32;
    std::thread::scope(|s| {
        let handles: Vec<_> = rx
            .iter()
            .enumerate()
            .map(|(k, r)| {
                let (tx, stop, cpu) = (&tx, &relay_stop, plan.cpus.get(k).copied());
                std::thread::Builder::new()
                    .name(format!("smp-relay-{k}"))
                    .spawn_scoped(s, move || -> Result<(Relayed, LockStats, u64)> {
                        if let Some(c) = cpu {
                            pin_current_thread(c).map_err(|e| anyhow!("worker {k}: {e}"))?;
                        }
                        let mut h = table.worker(k);
                        let mut unrouted = 0;
                        let relayed = afpacket::relay(r, tx, stop, |f| {
                            let hop = packet::forward_in_place(f).ok().and_then(|()| {
                                let dst = u32::from_be_bytes(f[30..34].try_into().ok()?);
                                h.forward(dst, bytes)
                            });
                            if hop.is_none() {
                                unrouted += 1;
                                return false;
                            }
                            f[0..6].copy_from_slice(&SINK0.mac);
                            f[6..12].copy_from_slice(&FWD1.mac);
                            true
                        })?;
                        Ok((relayed, h.stats(), unrouted))
                    })
            })
            .collect::<std::io::Result<_>>()?;
        let out = run_trial(&setup.topo, trial, pool, &cx.stop);
        relay_stop.store(true, Ordering::Relaxed);
        let mut locks = Vec::new();
        let mut unrouted = 0;
        for h in handles {
            let (_, l, u) = h.join().map_err(|_| anyhow!("a relay worker panicked"))??;
            locks.push(l);
            unrouted += u;
        }
        Ok((out?, locks, unrouted))
    })
}

/// The probe (a short overload: what crosses sets the upper bound), then
/// the search; `trial(rate, duration)` runs one trial.
fn search(
    plan: &SmpPlan,
    size: usize,
    cx: &RunContext,
    mut trial: impl FnMut(f64, Duration) -> Result<(Outcome, Vec<LockStats>, u64)>,
) -> Result<(SearchResult, Vec<TrialFigures>)> {
    let probe_d = plan.trial().min(PROBE);
    let (probe, _, _) = trial(PROBE_RATE, probe_d)?;
    let crossed = probe.received.frames as f64 / probe_d.as_secs_f64();
    if probe.received.frames == 0 {
        bail!(
            "no frame crossed the forwarder in the probe (sent {})",
            probe.sent.frames
        );
    }
    let line = super::ports::line_rate_pps(plan.line_rate_bps, size).min(PROBE_RATE);
    let hi = (crossed * 1.25).min(line);
    let mut figures = Vec::new();
    let params = SearchParams::new(hi / 1000.0, hi, plan.resolution);
    let result = search_unless_stopped(params, line, cx, |rate| {
        let before = CpuStat::read().ok();
        let (out, locks, unrouted) = trial(rate, plan.trial())?;
        let busy = before
            .zip(CpuStat::read().ok())
            .and_then(|(b, a)| usage(&b, &a, cpu_count()))
            .map(|u| u.busy_pct / 100.0 / cpu_count() as f64);
        let t = as_trial(rate, &out, unrouted).with_tolerance(plan.loss_tolerance);
        figures.push(TrialFigures {
            rate,
            passed: t.passed(),
            locks,
            busy,
            unrouted,
            late_only: out.lost() <= unrouted && out.sent.late + out.sent.refused > 0,
        });
        Ok(t)
    })?;
    Ok((result, figures))
}

/// A veth trial as the search sees it: every frame due that did not
/// reach the sink is lost, except those the workers dropped for want of a
/// route (a router's job, not a loss).
fn as_trial(rate: f64, out: &Outcome, unrouted: u64) -> SearchTrial {
    let due = out.sent.frames + out.sent.late + out.sent.refused;
    let lost = out.lost().saturating_sub(unrouted) + out.sent.late + out.sent.refused;
    SearchTrial {
        rate,
        sent: due,
        lost,
        allowed: 0,
    }
}

fn summarise(
    search: SearchResult,
    figures: &[TrialFigures],
    workers: usize,
    updates: UpdaterReport,
) -> CellRun {
    let mut locks = vec![LockStats::default(); workers];
    let (mut busy, mut n, mut unrouted) = (0.0, 0, 0);
    for f in figures.iter().filter(|f| f.passed && f.rate == search.rate) {
        for (k, s) in f.locks.iter().enumerate().take(workers) {
            locks[k].merge(s);
        }
        if let Some(b) = f.busy {
            busy += b;
            n += 1;
        }
        unrouted += f.unrouted;
    }
    let generator_limited = figures
        .iter()
        .any(|f| !f.passed && f.rate > search.rate && f.late_only);
    CellRun {
        search,
        capacity_pps: None,
        locks,
        busy: (n > 0).then(|| busy / n as f64),
        max_gap_us: Vec::new(),
        first_loss: None,
        unrouted,
        updates,
        generator_limited,
        books: None,
    }
}
