//! End to end, in memory: the RFC 2544 zero-loss throughput of the
//! `memory` forwarder for each `--table` variant with 1 and 2 workers.
//!
//! The setup: a synthetic Internet table (`--routes`, default 1,000,000)
//! in a DIR-24-8 FIB (`smp::lpm::Dir24`) routing to 2 output ports; 2
//! receive ports, port `p` drained by worker `p % N`, each fed from its own
//! pool of 65,536 real Ethernet/IPv4/UDP frames (`--size`, 64 or up to
//! 1518 bytes) whose destinations are Zipf (s = 1) over the routes. Per
//! frame a worker does what a router does: header checks, TTL and checksum
//! update (`packet::forward_in_place`, dropped on error), then the lookup
//! of the destination through its own table handle. A route-update thread
//! applies 300 changes/s during the whole search. Workers are pinned to
//! the online CPUs in order.
//!
//! Printed per (variant, N): the zero-loss rate (total over both ports),
//! in Mbit/s of frame bytes (FCS included, no preamble or gap), scaling
//! against N = 1 of the same variant, each worker's lock wait and hold per
//! packet (from the trials at the zero-loss rate), and the trial count.
//!
//! Run: `cargo bench -p msgbench --bench smp_memory [-- --quick]
//! [--routes N] [--size BYTES] [--trial SECONDS] [--updates PER_S]` (`--quick`: 100,000
//! routes).

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use anyhow::{bail, Context};
use msgbench::measure::clock::Clock;
use msgbench::measure::placement::{online_cpus, CpuList};
use msgbench::suites::smp::fib::RouteId;
use msgbench::suites::smp::forwarder::{self, ForwarderConfig};
use msgbench::suites::smp::lpm::Dir24;
use msgbench::suites::smp::packet::{self, Spec};
use msgbench::suites::smp::ports::{Offered, Pool};
use msgbench::suites::smp::search::SearchResult;
use msgbench::suites::smp::synth::{self, Destinations, Flows, Route};
use msgbench::suites::smp::tables::{
    LockStats, Table, UpdatePlan, Updater, UpdaterReport, Variant, WorkerHandle,
};

const PORTS: usize = 2;
const POOL_FRAMES: usize = 65_536;
const UPDATES_PER_S: f64 = 300.0;
const RESOLUTION: f64 = 0.01;
const ZIPF_S: f64 = 1.0;

struct Args {
    routes: usize,
    size: usize,
    trial: Duration,
    updates: f64,
    probe: bool,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        routes: synth::DEFAULT_ROUTES,
        size: packet::MIN_FRAME,
        trial: Duration::from_millis(500),
        updates: UPDATES_PER_S,
        probe: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--quick" => a.routes = 100_000,
            "--probe" => a.probe = true,
            "--routes" => a.routes = value("--routes")?.parse()?,
            "--size" => a.size = value("--size")?.parse()?,
            "--trial" => a.trial = Duration::from_secs_f64(value("--trial")?.parse()?),
            "--updates" => a.updates = value("--updates")?.parse()?,
            _ => {} // cargo bench passes --bench
        }
    }
    if !(packet::MIN_FRAME..=packet::MAX_FRAME).contains(&a.size) {
        bail!(
            "--size must be in {}..={}",
            packet::MIN_FRAME,
            packet::MAX_FRAME
        );
    }
    Ok(a)
}

/// Port `p`'s frames: destinations from its own Zipf stream.
fn pool(routes: &[Route], size: usize, port: usize) -> anyhow::Result<Pool> {
    let mut dsts = Destinations::new(routes, Flows::Zipf(ZIPF_S), 100 + port as u64)
        .context("destinations")?;
    let mut spec = Spec::default();
    let mut err = None;
    let pool = Pool::build(POOL_FRAMES, size, |k, frame| {
        spec.dst = dsts.next_addr();
        match packet::write(frame, &spec, k) {
            Ok(()) => packet::seal(frame),
            Err(e) => err = Some(e),
        }
    });
    match err {
        Some(e) => Err(e.into()),
        None => Ok(pool),
    }
}

/// Lock figures of every worker handle, in the order they were dropped
/// (one per worker per trial, trials in order).
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

struct Row {
    result: SearchResult,
    /// Lock figures per worker, over the trials at the zero-loss rate.
    locks: Vec<LockStats>,
    updates: UpdaterReport,
}

fn measure(
    v: Variant,
    workers: usize,
    a: &Args,
    fib: &Dir24,
    routes: &[Route],
    pools: &[Pool],
    clock: &Clock,
) -> anyhow::Result<Row> {
    let ports: Vec<u16> = routes.iter().map(|r| r.port).collect();
    let table = Arc::new(Table::new(v, fib.clone(), ports, workers));
    let plan = UpdatePlan {
        rate: a.updates,
        seed: 7,
        prefixes: routes
            .iter()
            .enumerate()
            .map(|(i, r)| (r.prefix, i as RouteId))
            .collect(),
        routes: routes.len() as u32,
        ports: PORTS as u16,
    };
    let mut cfg = ForwarderConfig::new(workers, PORTS, a.size, Offered::FlatOut, a.trial);
    cfg.cpus = CpuList(online_cpus());
    let collected: Collected = Mutex::new(Vec::new());
    let bytes = a.size as u32;
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
    let updater = Updater::start(Arc::clone(&table), &plan).context("updater thread")?;
    let result = forwarder::throughput(&cfg, clock, RESOLUTION, route, |p| {
        pools[usize::from(p)].clone()
    });
    let updates = updater.stop();
    let result = result.map_err(|e| anyhow::anyhow!("{e}"))?;
    // Group k+1 of the figures is trial k (group 0: the probe).
    let all = collected
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    let mut locks = vec![LockStats::default(); workers];
    for (t, group) in result.trials.iter().zip(all.chunks(workers).skip(1)) {
        if t.rate == result.rate && t.passed() {
            for (k, s) in group {
                locks[*k].merge(s);
            }
        }
    }
    Ok(Row {
        result,
        locks,
        updates,
    })
}

fn main() -> anyhow::Result<()> {
    let a = args()?;
    let clock = Clock::best();
    let t = std::time::Instant::now();
    let routes = synth::generate(a.routes, PORTS as u16, 1);
    let mut fib = Dir24::new();
    synth::fill(&mut fib, &routes);
    let pools = (0..PORTS)
        .map(|p| pool(&routes, a.size, p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    println!(
        "smp_memory: {} routes (Dir24 {} MiB), {} ports, {} x {}-byte frames per port, zipf s={ZIPF_S}, \
         {} updates/s, trial {:?}, resolution {}%, clock {}, CPUs {:?}, setup {:.1?}",
        routes.len(),
        fib.table_bytes() >> 20,
        PORTS,
        POOL_FRAMES,
        a.size,
        a.updates,
        a.trial,
        RESOLUTION * 100.0,
        clock.describe(),
        online_cpus(),
        t.elapsed(),
    );
    if a.probe {
        return probe(&a, &fib, &routes, &pools, &clock);
    }
    println!(
        "{:<8} {:>2} {:>12} {:>9} {:>7} {:>24} {:>24} {:>6} {:>7} {:>10} {:>12}",
        "table",
        "N",
        "pps",
        "Mbit/s",
        "scale",
        "wait ns/pkt (per worker)",
        "hold ns/pkt (per worker)",
        "trials",
        "updates",
        "max update",
        "lost at"
    );
    for v in Variant::ALL {
        let mut base = None;
        for workers in [1, 2] {
            let row = measure(v, workers, &a, &fib, &routes, &pools, &clock)?;
            let pps = row.result.rate * PORTS as f64;
            let base = *base.get_or_insert(pps);
            let list = |f: &dyn Fn(&LockStats) -> f64| {
                row.locks
                    .iter()
                    .map(|s| format!("{:.1}", f(s)))
                    .collect::<Vec<_>>()
                    .join(" / ")
            };
            println!(
                "{:<8} {:>2} {:>12.0} {:>9.0} {:>7.2} {:>24} {:>24} {:>6} {:>7} {:>10} {:>12}{}",
                v.name(),
                workers,
                pps,
                pps * (a.size * 8) as f64 / 1e6,
                if base > 0.0 { pps / base } else { 0.0 },
                list(&LockStats::mean_wait_ns),
                list(&LockStats::mean_hold_ns),
                row.result.trial_count(),
                row.updates.applied,
                format!("{:.2?}", row.updates.apply_max),
                row.result
                    .failed_at
                    .map_or("-".into(), |r| format!("{:.0}", r * PORTS as f64)),
                match (&row.result.note, row.result.converged) {
                    (Some(n), _) => format!("  ({n})"),
                    (None, false) => "  (not converged)".into(),
                    _ => String::new(),
                }
            );
        }
    }
    Ok(())
}

/// `--probe`: flat-out capacity (no search), per variant and N, and of
/// the parts alone: the bare loop, plus the router's header work, plus
/// the lookup without a table around it.
fn probe(a: &Args, fib: &Dir24, routes: &[Route], pools: &[Pool], clock: &Clock) -> anyhow::Result<()> {
    let bytes = a.size as u32;
    for workers in [1, 2] {
        let mut cfg = ForwarderConfig::new(workers, PORTS, a.size, Offered::FlatOut, a.trial);
        cfg.cpus = CpuList(online_cpus());
        let src = |p: u16| pools[usize::from(p)].clone();
        let show = |what: &str, pps: f64| {
            println!("{what:<12} N={workers} {:>8.2} Mpps  {:>6.1} ns/pkt/worker", pps * PORTS as f64 / 1e6,
                1e9 * workers as f64 / (pps * PORTS as f64));
        };
        let bare = forwarder::probe_capacity(&cfg, clock, |_| |f: &mut [u8]| Some(u16::from(f[33] & 1)), src)
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        show("bare", bare);
        let hdr = forwarder::probe_capacity(&cfg, clock, |_| |f: &mut [u8]| {
            packet::forward_in_place(f).ok()?;
            Some(u16::from(f[33] & 1))
        }, src).map_err(|e| anyhow::anyhow!("{e}"))?;
        show("+header", hdr);
        let ports: Vec<u16> = routes.iter().map(|r| r.port).collect();
        let look = forwarder::probe_capacity(&cfg, clock, |_| |f: &mut [u8]| {
            packet::forward_in_place(f).ok()?;
            let dst = u32::from_be_bytes(f[30..34].try_into().ok()?);
            use msgbench::suites::smp::fib::Fib;
            let r = fib.lookup(dst)?;
            ports.get(r as usize).copied()
        }, src).map_err(|e| anyhow::anyhow!("{e}"))?;
        show("+lookup", look);
        for v in Variant::ALL {
            let table = Table::new(v, fib.clone(), ports.clone(), workers);
            let pps = forwarder::probe_capacity(&cfg, clock, |k| {
                let mut h = table.worker(k);
                move |frame: &mut [u8]| -> Option<u16> {
                    packet::forward_in_place(frame).ok()?;
                    let dst = u32::from_be_bytes(frame[30..34].try_into().ok()?);
                    h.forward(dst, bytes).map(|hop| hop.port)
                }
            }, src).map_err(|e| anyhow::anyhow!("{e}"))?;
            show(v.name(), pps);
            let table = Arc::new(table);
            let plan = UpdatePlan {
                rate: a.updates,
                seed: 7,
                prefixes: routes.iter().enumerate().map(|(i, r)| (r.prefix, i as RouteId)).collect(),
                routes: routes.len() as u32,
                ports: PORTS as u16,
            };
            let updater = Updater::start(Arc::clone(&table), &plan)?;
            let mut at = cfg.clone();
            at.offered = Offered::Rate(pps * 0.7);
            at.trial = Duration::from_secs(1);
            let run = forwarder::run(&at, clock, |k| {
                let mut h = table.worker(k);
                move |frame: &mut [u8]| -> Option<u16> {
                    packet::forward_in_place(frame).ok()?;
                    let dst = u32::from_be_bytes(frame[30..34].try_into().ok()?);
                    h.forward(dst, bytes).map(|hop| hop.port)
                }
            }, src, |_| forwarder_discard()).map_err(|e| anyhow::anyhow!("{e}"))?;
            let u = updater.stop();
            let t = run.report.total();
            println!("   at 70%: overrun {} unrouted {} of {}; max gap {:?} us; updates {} max {:?}", t.overrun(), t.unrouted, t.generated,
                run.report.workers.iter().map(|w| w.max_gap_ns / 1000).collect::<Vec<_>>(), u.applied, u.apply_max);
        }
    }
    Ok(())
}

fn forwarder_discard() -> msgbench::suites::smp::ports::Discard {
    msgbench::suites::smp::ports::Discard
}
