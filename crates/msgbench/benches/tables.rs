//! A quick timing comparison of the four `--table` variants with 1 and 2
//! worker threads (not a test: figures only, nothing fails on them).
//!
//! Each row: `threads` workers, pinned to CPUs 0.. when possible, forward
//! random destinations through one table for `RUN` while the route-update
//! thread applies 300 changes/s. Printed: total packets/s, ns per packet
//! per worker, and the workers' lock figures (mean wait, mean hold,
//! contended share, uncontended samples dropped as interrupted). Two FIBs:
//! - `direct16`: a bench-only table of prefixes up to /16, one array read
//!   per lookup (L2-resident), so the lock is most of the cost;
//! - `reference`: `fib::Reference` with 50,000 prefixes of /16, /20, /24
//!   (three hash look-ups), a slow lookup that dilutes the lock.
//!
//! `cargo bench -p msgbench --bench tables`

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use msgbench::measure::clock::Clock;
use msgbench::measure::placement::pin_current_thread;
use msgbench::suites::smp::fib::{Fib, Prefix, Reference, RouteId};
use msgbench::suites::smp::tables::{LockStats, Table, UpdatePlan, Updater, Variant};

const RUN: Duration = Duration::from_millis(500);
const ROUTES: u32 = 1024;
const PORTS: u16 = 4;
const UPDATES_PER_S: f64 = 300.0;
const NONE: u32 = u32::MAX;

/// Prefixes up to /16 in a direct array of 65,536 slots (the exact set
/// kept in a `Reference` to refill slots after a change).
#[derive(Clone)]
struct Direct16 {
    slots: Vec<u32>,
    exact: Reference,
}

impl Direct16 {
    fn new() -> Direct16 {
        Direct16 {
            slots: vec![NONE; 1 << 16],
            exact: Reference::new(),
        }
    }

    fn refill(&mut self, p: Prefix) {
        let first = (p.addr >> 16) as usize;
        for s in first..first + (1usize << (16 - p.len)) {
            self.slots[s] = self.exact.lookup((s as u32) << 16).unwrap_or(NONE);
        }
    }
}

impl Fib for Direct16 {
    fn lookup(&self, addr: u32) -> Option<RouteId> {
        let r = self.slots[(addr >> 16) as usize];
        (r != NONE).then_some(r)
    }

    fn insert(&mut self, prefix: Prefix, route: RouteId) {
        assert!(prefix.len <= 16, "direct16 holds prefixes up to /16");
        self.exact.insert(prefix, route);
        self.refill(prefix);
    }

    fn remove(&mut self, prefix: Prefix) -> bool {
        let had = self.exact.remove(prefix);
        if had {
            self.refill(prefix);
        }
        had
    }

    fn len(&self) -> usize {
        self.exact.len()
    }
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// `n` random prefixes of the given lengths plus a default route.
fn build<F: Fib>(mut fib: F, n: usize, lens: &[u8], seed: u64) -> (F, Vec<(Prefix, RouteId)>) {
    let mut rng = Rng(seed);
    let mut prefixes = vec![(Prefix::new(0, 0).unwrap(), 0)];
    fib.insert(prefixes[0].0, 0);
    while fib.len() < n + 1 {
        let len = lens[(rng.next() % lens.len() as u64) as usize];
        let p = Prefix::new(rng.next() as u32, len).unwrap();
        let route = (rng.next() % u64::from(ROUTES)) as RouteId;
        fib.insert(p, route);
        prefixes.push((p, route));
    }
    (fib, prefixes)
}

struct Row {
    pps: f64,
    ns_per_packet: f64,
    stats: LockStats,
    updates: u64,
}

fn run<F: Fib>(
    v: Variant,
    threads: usize,
    fib: &F,
    prefixes: &[(Prefix, RouteId)],
    dsts: &[u32],
) -> Row {
    let ports = (0..ROUTES).map(|r| (r % u32::from(PORTS)) as u16).collect();
    let table = Arc::new(Table::new(v, fib.clone(), ports, threads));
    let plan = UpdatePlan {
        rate: UPDATES_PER_S,
        seed: 42,
        prefixes: prefixes.to_vec(),
        routes: ROUTES,
        ports: PORTS,
    };
    let updater = Updater::start(Arc::clone(&table), &plan).expect("updater thread");
    let stop = AtomicBool::new(false);
    let start = Instant::now();
    let per_worker: Vec<(u64, LockStats)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|w| {
                let (table, stop) = (&table, &stop);
                s.spawn(move || worker(table, w, dsts, stop))
            })
            .collect();
        std::thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
        workers.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let updates = updater.stop().applied;
    let packets: u64 = per_worker.iter().map(|p| p.0).sum();
    let mut stats = LockStats::default();
    per_worker.iter().for_each(|p| stats.merge(&p.1));
    Row {
        pps: packets as f64 / secs,
        ns_per_packet: secs * 1e9 * threads as f64 / packets as f64,
        stats,
        updates,
    }
}

fn worker<F: Fib>(table: &Table<F>, w: usize, dsts: &[u32], stop: &AtomicBool) -> (u64, LockStats) {
    let _ = pin_current_thread(w);
    let mut h = table.worker(w);
    let mut n = 0u64;
    let mut i = w * 7919;
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..1024 {
            i = (i + 1) & (dsts.len() - 1);
            std::hint::black_box(h.forward(dsts[i], 64));
        }
        n += 1024;
    }
    (n, h.finish())
}

fn sweep<F: Fib>(name: &str, fib: &F, prefixes: &[(Prefix, RouteId)]) {
    let mut rng = Rng(7);
    let dsts: Vec<u32> = (0..1 << 16).map(|_| rng.next() as u32).collect();
    for v in Variant::ALL {
        for threads in [1, 2] {
            let r = run(v, threads, fib, prefixes, &dsts);
            println!(
                "{name:<9} {:<7} {threads:>2} {:>8.2} {:>8.1} {:>8.1} {:>8.1} {:>8.2}% {:>5} {:>5}",
                v.name(),
                r.pps / 1e6,
                r.ns_per_packet,
                r.stats.mean_wait_ns(),
                r.stats.mean_hold_ns(),
                r.stats.contended_fraction() * 100.0,
                r.stats.interrupted,
                r.updates,
            );
        }
    }
}

fn main() {
    println!(
        "{} CPUs, clock {}; each row {RUN:?}, {UPDATES_PER_S} route updates/s",
        cpus(),
        Clock::best().describe()
    );
    println!(
        "{:<9} {:<7} {:>2} {:>8} {:>8} {:>8} {:>8} {:>9} {:>5} {:>5}",
        "fib", "table", "n", "Mpps", "ns/pkt", "wait ns", "hold ns", "contended", "intr", "upd"
    );
    let (direct, dp) = build(Direct16::new(), 4000, &[8, 12, 14, 16], 1);
    sweep("direct16", &direct, &dp);
    let (reference, rp) = build(Reference::new(), 50_000, &[16, 20, 24], 2);
    sweep("reference", &reference, &rp);
}

fn cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
