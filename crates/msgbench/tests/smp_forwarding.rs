//! The in-memory SMP forwarder end to end, for every table variant
//! (`mutex`, `rwlock`, `rcu`, `per-cpu`) with 1 and 2 unpinned workers:
//! real Ethernet/IPv4/UDP frames from `ports::Pool`s arrive on 2 ports at
//! a modest open-loop rate for a short trial, each worker does what the
//! `smp_memory` bench's workers do (`packet::forward_in_place`, then a
//! lookup in a DIR-24-8 table of a small synthetic Internet table through
//! its own `tables::WorkerHandle`), and a recording sink keeps every frame
//! that left, with its output port. Meanwhile a `tables::Updater` applies
//! a fast, deterministic stream of route changes (2,000 per second).
//!
//! What it proves, frame by frame and counter by counter:
//! - Every forwarded frame left by a port its route had at some point (the
//!   route's first port, or a `NextHop` change of it among the changes
//!   applied), the route's prefix contained the frame's destination at
//!   some point (the first table, or an `Insert` applied), and where no
//!   applied change touched a prefix covering the destination, the route
//!   is the longest match of the first table (`fib::Reference`). Without
//!   updates, the route and port are exactly the reference's, always.
//! - The router rewrote the frame as a router must: TTL one less, IPv4
//!   header checksum valid, the rest as sent. Frames with TTL 1 and
//!   frames to unrouted space (10/8) never leave.
//! - No frame left twice (per input port, each sequence number at most
//!   once, and only sequence numbers that arrived).
//! - Every packet is accounted for exactly: per receive port the books
//!   balance, forwarded frames match the recorded ones per input port and
//!   per output port, and the table's per-route counters match the
//!   recorded frames route by route.
//!
//! Behaviour only: nothing here asserts a speed or the absence of
//! overruns (a loaded machine may overrun a ring; overruns are counted,
//! and the checks hold either way).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use msgbench::measure::clock::Clock;
use msgbench::suites::smp::fib::{Fib, Prefix, Reference, RouteId};
use msgbench::suites::smp::forwarder::{self, ForwarderConfig, TrialReport, TrialRun};
use msgbench::suites::smp::lpm::Dir24;
use msgbench::suites::smp::packet::{self, Spec};
use msgbench::suites::smp::ports::{FrameSource, Offered, Pool, Sink};
use msgbench::suites::smp::synth::{self, Destinations, Flows, Route};
use msgbench::suites::smp::tables::{Counts, RouteChange, Table, UpdatePlan, Updater, Variant};

/// Routes of the synthetic table: small, so a debug build sets it up fast.
const ROUTES: usize = 2_000;
/// Ports: each receives and transmits.
const PORTS: usize = 2;
/// Frame size, FCS included.
const FRAME: usize = packet::MIN_FRAME;
/// Distinct frames per port (packet `seq` is pool frame `seq % POOL`).
const POOL: usize = 4_096;
/// Offered load per port, packets per second.
const RATE: f64 = 100_000.0;
/// How long packets arrive.
const TRIAL: Duration = Duration::from_millis(150);
/// Route changes per second while a trial runs.
const UPDATES_PER_S: f64 = 2_000.0;

/// Frame offsets: Ethernet 0..14, IPv4 14..34 (TTL at 22, checksum at
/// 24..26, destination at 30..34), UDP header 34..42, then the payload,
/// which starts with `packet::write`'s 8-byte sequence number (42..50).
const IP: usize = packet::ETH_HEADER;
const IP_TTL: usize = IP + 8;
const IP_CSUM: usize = IP + 10;
const SEQ_AT: usize = IP + packet::IPV4_HEADER + packet::UDP_HEADER;
/// Where the route closure stamps the route id the lookup found (4 bytes).
const ROUTE_AT: usize = SEQ_AT + 8;
/// Where the frame source writes the input port (2 bytes).
const IN_PORT_AT: usize = ROUTE_AT + 4;
/// Payload bytes after it, left as `packet::write` made them.
const REST: std::ops::Range<usize> = IN_PORT_AT + 2..FRAME - packet::FCS;

/// What must become of a pool frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A routable destination and a TTL above 1: forwarded (unless a
    /// withdrawal leaves it without a route for a moment).
    Routed,
    /// TTL 1: `forward_in_place` refuses it, so it is unrouted.
    Expired,
    /// A destination in 10/8, which `synth::generate` never routes and no
    /// change ever adds: unrouted.
    NoRoute,
}

/// What the test knows of every frame it sends.
struct Setup {
    routes: Vec<Route>,
    fib: Dir24,
    reference: Reference,
    /// Per port, the pool frames as built, and what must become of each.
    frames: Vec<Vec<[u8; FRAME]>>,
    expect: Vec<Vec<Expect>>,
}

/// Built once for all the tests of this binary.
fn setup() -> &'static Setup {
    static SETUP: OnceLock<Setup> = OnceLock::new();
    SETUP.get_or_init(|| {
        let routes = synth::generate(ROUTES, PORTS as u16, 11);
        let mut fib = Dir24::new();
        synth::fill(&mut fib, &routes);
        let mut reference = Reference::new();
        synth::fill(&mut reference, &routes);
        let (mut frames, mut expect) = (Vec::new(), Vec::new());
        for port in 0..PORTS {
            let mut dsts = Destinations::new(&routes, Flows::Zipf(1.0), 200 + port as u64)
                .expect("destinations");
            let (mut fs, mut es) = (Vec::new(), Vec::new());
            for k in 0..POOL {
                let mut spec = Spec {
                    dst: dsts.next_addr(),
                    ttl: 2 + (k % 250) as u8,
                    ..Spec::default()
                };
                let mut e = Expect::Routed;
                if k % 61 == 60 {
                    spec.ttl = 1;
                    e = Expect::Expired;
                } else if k % 67 == 66 {
                    spec.dst = 0x0A00_0000 | ((k as u32 * 7919) & 0x00FF_FFFF);
                    assert_eq!(reference.lookup(spec.dst), None, "10/8 is unrouted");
                    e = Expect::NoRoute;
                }
                let mut f = [0u8; FRAME];
                packet::write(&mut f, &spec, k as u64).expect("a valid size");
                packet::seal(&mut f);
                fs.push(f);
                es.push(e);
            }
            frames.push(fs);
            expect.push(es);
        }
        Setup {
            routes,
            fib,
            reference,
            frames,
            expect,
        }
    })
}

/// Port `port`'s frames: pool frame `seq % POOL`, with the per-port
/// sequence number written over the pool index `packet::write` put there,
/// and the input port after it (the FCS goes stale; routers do not check
/// it here, and `forward_in_place` leaves it stale anyway).
struct Source {
    pool: Pool,
    port: u16,
}

impl FrameSource for Source {
    fn fill(&mut self, seq: u64, frame: &mut [u8]) {
        self.pool.fill(seq, frame);
        frame[SEQ_AT..SEQ_AT + 8].copy_from_slice(&seq.to_be_bytes());
        frame[IN_PORT_AT..IN_PORT_AT + 2].copy_from_slice(&self.port.to_be_bytes());
    }
}

/// Every frame that left, with its output port.
#[derive(Default)]
struct Recorder(Vec<(u16, [u8; FRAME])>);

impl Sink for Recorder {
    fn deliver(&mut self, port: u16, frame: &[u8]) {
        self.0
            .push((port, frame.try_into().expect("frames of FRAME bytes")));
    }
}

/// The changes applied during a trial, as the checks need them.
#[derive(Default)]
struct History {
    /// (route, port) of every `NextHop`.
    next_hops: HashSet<(RouteId, u16)>,
    /// (prefix, route) of every `Insert`.
    inserts: Vec<(Prefix, RouteId)>,
    /// Prefixes inserted or withdrawn.
    touched: HashSet<Prefix>,
    applied: u64,
}

impl History {
    fn of(changes: impl Iterator<Item = RouteChange>, applied: u64) -> History {
        let mut h = History {
            applied,
            ..History::default()
        };
        for c in changes.take(applied as usize) {
            match c {
                RouteChange::NextHop { route, port } => {
                    h.next_hops.insert((route, port));
                }
                RouteChange::Insert { prefix, route } => {
                    h.inserts.push((prefix, route));
                    h.touched.insert(prefix);
                }
                RouteChange::Withdraw { prefix } => {
                    h.touched.insert(prefix);
                }
            }
        }
        h
    }
}

/// One trial of `variant` with `workers` workers, with route changes at
/// `updates` per second (0: none): checks everything and returns the
/// number of changes applied.
fn trial(variant: Variant, workers: usize, updates: f64) -> u64 {
    let s = setup();
    let label = format!("{variant} x{workers}, {updates} changes/s");
    let ports: Vec<u16> = s.routes.iter().map(|r| r.port).collect();
    let table = Arc::new(Table::new(variant, s.fib.clone(), ports, workers));
    let plan = UpdatePlan {
        rate: updates,
        seed: 23,
        prefixes: s
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| (r.prefix, i as RouteId))
            .collect(),
        routes: ROUTES as u32,
        ports: PORTS as u16,
    };
    let pools: Vec<Pool> = s
        .frames
        .iter()
        .map(|fs| Pool::build(POOL, FRAME, |k, f| f.copy_from_slice(&fs[k as usize])))
        .collect();
    let cfg = ForwarderConfig::new(workers, PORTS, FRAME, Offered::Rate(RATE), TRIAL);
    assert!(cfg.cpus.0.is_empty(), "workers float");
    let clock = Clock::best();
    let route = |k: usize| {
        let mut handle = table.worker(k);
        move |f: &mut [u8]| -> Option<u16> {
            packet::forward_in_place(f).ok()?;
            let dst = packet::dst(f)?;
            let hop = handle.forward(dst, f.len() as u32)?;
            f[ROUTE_AT..ROUTE_AT + 4].copy_from_slice(&hop.route.to_be_bytes());
            Some(hop.port)
        }
    };
    let source = |p: u16| Source {
        pool: pools[usize::from(p)].clone(),
        port: p,
    };
    let updater = (updates > 0.0).then(|| Updater::start(Arc::clone(&table), &plan).unwrap());
    let run = forwarder::run(&cfg, &clock, route, source, |_| Recorder::default());
    let applied = updater.map_or(0, |u| u.stop().applied);
    let run = run.unwrap_or_else(|e| panic!("{label}: {e}"));
    // The route closures, and with them the worker handles, were dropped
    // inside `run`: the table's totals are complete.
    let totals = table.totals();
    let history = History::of(plan.changes(), applied);
    check(s, &label, workers, &run, &totals, &history);
    applied
}

/// All the checks of one trial.
fn check(
    s: &Setup,
    label: &str,
    workers: usize,
    run: &TrialRun<Recorder>,
    totals: &[Counts],
    h: &History,
) {
    let r = &run.report;
    assert_eq!((r.rx.len(), r.tx.len()), (PORTS, PORTS), "{label}");
    assert_eq!(run.sinks.len(), workers, "{label}");
    let tally = check_frames(s, label, run, h);
    check_rx(s, label, r, &tally, h);
    check_tx(label, r, &tally);
    check_totals(label, workers, r, totals, &tally);
}

/// What the recorded frames add up to: per input port, per output port,
/// per route.
struct Tally {
    by_in: [u64; PORTS],
    by_out: [u64; PORTS],
    by_route: HashMap<RouteId, u64>,
}

/// Checks every recorded frame (3: never twice, and one that was sent;
/// 2: rewritten as a router must; 1: the right port and route) and counts
/// them.
fn check_frames(s: &Setup, label: &str, run: &TrialRun<Recorder>, h: &History) -> Tally {
    let r = &run.report;
    let mut seen: Vec<Vec<bool>> =
        r.rx.iter()
            .map(|c| vec![false; c.generated as usize])
            .collect();
    let mut t = Tally {
        by_in: [0; PORTS],
        by_out: [0; PORTS],
        by_route: HashMap::new(),
    };
    for (out, f) in run.sinks.iter().flat_map(|k| &k.0) {
        let out = *out;
        let in_port = usize::from(u16::from_be_bytes([f[IN_PORT_AT], f[IN_PORT_AT + 1]]));
        let seq = u64::from_be_bytes(f[SEQ_AT..SEQ_AT + 8].try_into().unwrap());
        let route = RouteId::from_be_bytes(f[ROUTE_AT..ROUTE_AT + 4].try_into().unwrap());
        let at = format!("{label}: frame {seq} of port {in_port}, out {out}, route {route}");
        // 3. Not duplicated, and one that arrived.
        assert!(in_port < PORTS && usize::from(out) < PORTS, "{at}");
        let slot = seen[in_port].get_mut(seq as usize);
        let slot = slot.unwrap_or_else(|| panic!("{at}: never generated"));
        assert!(!*slot, "{at}: left twice");
        *slot = true;
        t.by_in[in_port] += 1;
        t.by_out[usize::from(out)] += 1;
        *t.by_route.entry(route).or_default() += 1;
        check_rewrite(s, &at, f, in_port, seq);
        check_route(s, h, &at, f, route, out);
    }
    t
}

/// Check 2: rewritten as a router must (TTL down by one, checksum
/// redone), the rest as sent.
fn check_rewrite(s: &Setup, at: &str, f: &[u8], in_port: usize, seq: u64) {
    let k = (seq % POOL as u64) as usize;
    let sent = &s.frames[in_port][k];
    assert_eq!(s.expect[in_port][k], Expect::Routed, "{at}: must not leave");
    assert_eq!(packet::ttl(f), Some(sent[IP_TTL] - 1), "{at}: TTL");
    let csum = u16::from_be_bytes([f[IP_CSUM], f[IP_CSUM + 1]]);
    assert_eq!(
        packet::ipv4_checksum(&f[IP..IP + packet::IPV4_HEADER]),
        csum,
        "{at}: checksum"
    );
    assert_eq!(f[..IP_TTL], sent[..IP_TTL], "{at}: headers");
    assert_eq!(f[IP_TTL + 1..IP_CSUM], sent[IP_TTL + 1..IP_CSUM], "{at}");
    assert_eq!(f[IP_CSUM + 2..SEQ_AT], sent[IP_CSUM + 2..SEQ_AT], "{at}");
    assert_eq!(f[REST], sent[REST], "{at}: payload");
}

/// Check 1: the right port for its route, the right route for its
/// destination.
fn check_route(s: &Setup, h: &History, at: &str, f: &[u8], route: RouteId, out: u16) {
    let dst = packet::dst(f).unwrap_or_else(|| panic!("{at}: not a valid frame"));
    let first = s.routes.get(route as usize);
    let first = first.unwrap_or_else(|| panic!("{at}: no such route"));
    assert!(
        out == first.port || h.next_hops.contains(&(route, out)),
        "{at}: route {route} never left by port {out} (first {})",
        first.port
    );
    assert!(
        first.prefix.contains(dst)
            || h.inserts
                .iter()
                .any(|&(p, r)| r == route && p.contains(dst)),
        "{at}: route {route} never covered {dst:#010x}"
    );
    if !h.touched.iter().any(|p| p.contains(dst)) {
        assert_eq!(
            s.reference.lookup(dst),
            Some(route),
            "{at}: not the longest match of {dst:#010x}"
        );
    }
    if h.applied == 0 {
        assert_eq!(out, first.port, "{at}: not the route's port");
    }
}

/// Check 4: every packet received accounted for, port by port.
fn check_rx(s: &Setup, label: &str, r: &TrialReport, t: &Tally, h: &History) {
    for (p, c) in r.rx.iter().enumerate() {
        let at = format!("{label}: rx port {p}: {c:?}");
        // Workers keep going after the trial until their rings are empty,
        // so nothing is left in a ring.
        assert!(c.balanced(0), "{at}");
        assert_eq!(
            c.generated,
            c.forwarded + c.rx_dropped + c.tx_dropped + c.unrouted,
            "{at}"
        );
        // The line rate is unlimited: a transmit ring takes every frame.
        assert_eq!(c.tx_dropped, 0, "{at}");
        assert_eq!(c.forwarded, t.by_in[p], "{at}: forwarded but not recorded");
        // A worker drains its ring after the trial whatever happened
        // during it, so some packets always get through.
        assert!(c.forwarded > 0, "{at}: nothing forwarded");
        // Frames that cannot be forwarded (TTL 1, no route ever) are
        // unrouted whenever they were received; a withdrawal may leave
        // others without a route for a moment, so only without changes is
        // this an upper bound too.
        let doomed = (0..c.generated)
            .filter(|&q| s.expect[p][(q % POOL as u64) as usize] != Expect::Routed)
            .count() as u64;
        assert!(c.unrouted + c.rx_dropped >= doomed, "{at}: {doomed} doomed");
        if h.applied == 0 {
            assert!(c.unrouted <= doomed, "{at}: {doomed} doomed");
        }
    }
}

/// Every packet sent accounted for, port by port.
fn check_tx(label: &str, r: &TrialReport, t: &Tally) {
    for (p, c) in r.tx.iter().enumerate() {
        let at = format!("{label}: tx port {p}: {c:?}");
        assert_eq!(c.forwarded, t.by_out[p], "{at}");
        assert_eq!(c.bytes, t.by_out[p] * FRAME as u64, "{at}");
        assert_eq!(c.tx_dropped, 0, "{at}");
    }
}

/// The totals agree: ports, workers and the table's route counters.
fn check_totals(label: &str, workers: usize, r: &TrialReport, totals: &[Counts], t: &Tally) {
    let total = r.total();
    assert_eq!(
        r.tx.iter().map(|t| t.forwarded).sum::<u64>(),
        total.forwarded,
        "{label}"
    );
    // A worker's `forwarded` counts every frame it took from its rings,
    // whatever became of it (as forwarder.rs's own tests have it).
    assert_eq!(r.workers.len(), workers, "{label}");
    assert_eq!(
        r.workers.iter().map(|w| w.forwarded).sum::<u64>(),
        total.received,
        "{label}"
    );
    // The table counts a packet on its route when the lookup finds one,
    // and every such packet leaves (no TX drops): the counters are the
    // recorded frames, route by route.
    assert_eq!(totals.len(), ROUTES, "{label}");
    for (route, c) in totals.iter().enumerate() {
        let want = t.by_route.get(&(route as RouteId)).copied().unwrap_or(0);
        assert_eq!(c.packets, want, "{label}: route {route} counted");
        assert_eq!(c.bytes, want * FRAME as u64, "{label}: route {route} bytes");
    }
    assert_eq!(
        totals.iter().map(|c| c.packets).sum::<u64>(),
        total.forwarded,
        "{label}"
    );
}

/// Both worker counts of `variant` under 2,000 changes per second.
fn under_updates(variant: Variant) {
    for workers in [1, 2] {
        let applied = trial(variant, workers, UPDATES_PER_S);
        // Not a speed: the updater runs for the whole trial, whose 150 ms
        // hold hundreds of due changes.
        assert!(applied > 0, "{variant} x{workers}: no change applied");
    }
}

#[test]
fn mutex_forwards_right_under_updates() {
    under_updates(Variant::Mutex);
}

#[test]
fn rwlock_forwards_right_under_updates() {
    under_updates(Variant::RwLock);
}

#[test]
fn rcu_forwards_right_under_updates() {
    under_updates(Variant::Rcu);
}

#[test]
fn per_cpu_forwards_right_under_updates() {
    under_updates(Variant::PerCpu);
}

/// Without changes every frame leaves by the port of the reference's
/// longest match, and carries that route.
#[test]
fn without_updates_every_frame_takes_the_longest_match() {
    for variant in Variant::ALL {
        for workers in [1, 2] {
            assert_eq!(trial(variant, workers, 0.0), 0);
        }
    }
}
