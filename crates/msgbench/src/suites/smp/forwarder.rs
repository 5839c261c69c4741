//! The worker loop of the `memory` packet path: N pinned worker threads,
//! each draining its own receive ports ([`RxPort`]) and handing every
//! frame to its output port ([`TxPort`]) as a forwarding closure says,
//! for one trial.
//!
//! The loop knows nothing of tables or packet formats: the closure
//! (`FnMut(&mut [u8]) -> Option<u16>`, one per worker, so a per-CPU table
//! is just a closure owning its copy) looks the frame up, may rewrite it in
//! place (TTL, checksum) and answers the output port, or `None` to drop it
//! (counted as unrouted). Receive port `p` belongs to worker `p % workers`.
//!
//! A worker, in a loop: reads the clock, polls each of its ports (arrivals
//! since the last poll go into the ring or are dropped, see
//! [`ports`](super::ports)), and forwards up to `burst` frames from each.
//! After the trial's end it keeps going until its rings are empty, so
//! what arrived in time is forwarded or counted, never left behind.

use std::sync::{Barrier, Mutex};
use std::time::Duration;

use super::ports::{
    line_rate_pps, Discard, Fate, FrameSource, Offered, RxCounters, RxPort, Sink, TxCounters,
    TxPort,
};
use super::search::{bounds, try_search, SearchParams, SearchResult, Trial};
use crate::measure::clock::Clock;
use crate::measure::placement::{pin_current_thread, CpuList, PlacementError};

/// One trial's settings.
#[derive(Debug, Clone)]
pub struct ForwarderConfig {
    /// Worker threads (at least 1).
    pub workers: usize,
    /// Ports: each receives and transmits (at least 1).
    pub ports: usize,
    /// Worker `k` is pinned to `cpus.for_thread(k)`, verified; empty:
    /// workers float (tests only: runs pass `--cpus` or the online CPUs).
    pub cpus: CpuList,
    /// Frame size in bytes, every frame of the trial.
    pub frame_len: usize,
    /// Receive ring size, frames.
    pub rx_ring: usize,
    /// Transmit ring size, frames.
    pub tx_ring: usize,
    /// Offered load on every receive port.
    pub offered: Offered,
    /// Port speed, bits/s (`None`: unlimited).
    pub line_rate: Option<u64>,
    /// How long packets arrive.
    pub trial: Duration,
    /// Frames forwarded per port between two polls.
    pub burst: usize,
}

impl ForwarderConfig {
    /// `workers` workers, `ports` ports, `frame_len`-byte frames at
    /// `offered` for `trial`; rings of 1024 (RX) and 512 (TX), bursts of
    /// 32, unlimited line rate, unpinned.
    pub fn new(
        workers: usize,
        ports: usize,
        frame_len: usize,
        offered: Offered,
        trial: Duration,
    ) -> Self {
        ForwarderConfig {
            workers,
            ports,
            cpus: CpuList::default(),
            frame_len,
            rx_ring: 1024,
            tx_ring: 512,
            offered,
            line_rate: None,
            trial,
            burst: 32,
        }
    }
}

/// Why a trial could not run.
#[derive(Debug, thiserror::Error)]
pub enum ForwardError {
    /// A worker could not be pinned where asked.
    #[error("worker {worker}: {source}")]
    Pin {
        /// The worker.
        worker: usize,
        /// Why.
        source: PlacementError,
    },
    /// Settings that cannot work.
    #[error("forwarder: {0}")]
    Config(String),
    /// A worker thread panicked.
    #[error("forwarder: worker {0} panicked")]
    Panicked(usize),
}

/// What one worker did.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct WorkerReport {
    /// The CPU it was pinned to (verified), if pinned.
    pub cpu: Option<usize>,
    /// The receive ports it drained.
    pub rx_ports: Vec<u16>,
    /// Frames it took from its rings and dealt with (forwarded, dropped
    /// at a full transmit ring, or unrouted).
    pub forwarded: u64,
    /// Times it went round its loop.
    pub polls: u64,
    /// Rounds in which it found nothing to do.
    pub idle_polls: u64,
    /// The longest time between two of its polls, ns: how long it was
    /// away (preempted, interrupted, kept waiting by a lock or its own
    /// work). A receive ring of `r` frames at `p` packets/s overruns when
    /// this exceeds `r / p`.
    pub max_gap_ns: u64,
}

/// What a trial did, per port and per worker.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize)]
pub struct TrialReport {
    /// By the port frames arrived on.
    pub rx: Vec<RxCounters>,
    /// By the port frames left by.
    pub tx: Vec<TxCounters>,
    /// By worker.
    pub workers: Vec<WorkerReport>,
    /// From the start to the last worker done.
    pub elapsed: Duration,
}

impl TrialReport {
    /// All receive ports together.
    pub fn total(&self) -> RxCounters {
        let mut t = RxCounters::default();
        self.rx.iter().for_each(|c| t.add(c));
        t
    }
}

impl TrialReport {
    /// The trial as the RFC 2544 search sees it: packets offered on all
    /// ports, and lost for want of capacity ([`RxCounters::overrun`];
    /// unrouted packets are dropped by design, not lost).
    pub fn as_trial(&self, rate: f64) -> Trial {
        let t = self.total();
        Trial {
            rate,
            sent: t.generated,
            lost: t.overrun(),
            allowed: 0,
        }
    }
}

/// A trial's report, and the sinks back from the workers (for checks).
pub struct TrialRun<K> {
    /// The counters.
    pub report: TrialReport,
    /// Worker `k`'s sink at index `k`.
    pub sinks: Vec<K>,
}

/// What one worker thread owns.
struct Worker<F, S, K> {
    index: usize,
    cpu: Option<usize>,
    route: F,
    rx: Vec<RxPort<S>>,
    sink: K,
    tx: Vec<TxCounters>,
    report: WorkerReport,
}

/// Runs one trial. `route(k)` makes worker `k`'s forwarding closure,
/// `source(p)` port `p`'s frame source, `sink(k)` worker `k`'s sink.
pub fn run<F, S, K>(
    cfg: &ForwarderConfig,
    clock: &Clock,
    route: impl Fn(usize) -> F,
    source: impl Fn(u16) -> S,
    sink: impl Fn(usize) -> K,
) -> Result<TrialRun<K>, ForwardError>
where
    F: FnMut(&mut [u8]) -> Option<u16> + Send,
    S: FrameSource + Send,
    K: Sink + Send,
{
    check(cfg)?;
    let tx: Vec<TxPort> = (0..cfg.ports)
        .map(|p| TxPort::new(p as u16, cfg.tx_ring, cfg.line_rate, cfg.frame_len))
        .collect();
    let workers = make_workers(cfg, route, source, sink);
    let start = Barrier::new(cfg.workers + 1);
    let go = Barrier::new(cfg.workers + 1);
    let t0 = Mutex::new(0u64);
    let done = std::thread::scope(|s| {
        let handles: Vec<_> = workers
            .into_iter()
            .map(|w| {
                let (tx, start, go, t0) = (&tx, &start, &go, &t0);
                s.spawn(move || worker_thread(w, cfg, clock, tx, (start, go, t0)))
            })
            .collect();
        start.wait();
        *t0.lock().unwrap_or_else(|e| e.into_inner()) = clock.now();
        go.wait();
        let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
        let t0 = *t0.lock().unwrap_or_else(|e| e.into_inner());
        (joined, clock.now().saturating_sub(t0))
    });
    collect(cfg, clock, done)
}

fn check(cfg: &ForwarderConfig) -> Result<(), ForwardError> {
    let bad = |m: &str| Err(ForwardError::Config(m.into()));
    if cfg.workers == 0 || cfg.ports == 0 {
        return bad("needs at least one worker and one port");
    }
    if cfg.ports > usize::from(u16::MAX) {
        return bad("too many ports");
    }
    if cfg.workers > cfg.ports {
        return bad("more workers than ports: a worker would have nothing to drain");
    }
    if let Offered::Rate(r) = cfg.offered {
        if !(r.is_finite() && r >= 0.0) {
            return bad("offered rate must be a finite number of pps");
        }
    }
    Ok(())
}

fn make_workers<F, S, K>(
    cfg: &ForwarderConfig,
    route: impl Fn(usize) -> F,
    source: impl Fn(u16) -> S,
    sink: impl Fn(usize) -> K,
) -> Vec<Worker<F, S, K>>
where
    S: FrameSource,
{
    let trial_ns = cfg.trial.as_nanos().min(u128::from(u64::MAX)) as u64;
    let mut workers: Vec<Worker<F, S, K>> = (0..cfg.workers)
        .map(|k| Worker {
            index: k,
            cpu: cfg.cpus.for_thread(k),
            route: route(k),
            rx: Vec::new(),
            sink: sink(k),
            tx: vec![TxCounters::default(); cfg.ports],
            report: WorkerReport::default(),
        })
        .collect();
    for p in 0..cfg.ports {
        let id = p as u16;
        let port = RxPort::new(
            id,
            cfg.rx_ring,
            cfg.frame_len,
            cfg.offered,
            trial_ns,
            source(id),
        );
        let w = &mut workers[p % cfg.workers];
        w.report.rx_ports.push(id);
        w.rx.push(port);
    }
    workers
}

type Gates<'a> = (&'a Barrier, &'a Barrier, &'a Mutex<u64>);

/// One worker: pin, wait for the start, forward until done.
fn worker_thread<F, S, K>(
    mut w: Worker<F, S, K>,
    cfg: &ForwarderConfig,
    clock: &Clock,
    tx: &[TxPort],
    (start, go, t0): Gates<'_>,
) -> Result<Worker<F, S, K>, ForwardError>
where
    F: FnMut(&mut [u8]) -> Option<u16>,
    S: FrameSource,
    K: Sink,
{
    let pinned = w.cpu.map(pin_current_thread).transpose();
    // Wait at both gates even when pinning failed, so no one waits forever.
    start.wait();
    go.wait();
    if let Err(source) = pinned {
        return Err(ForwardError::Pin {
            worker: w.index,
            source,
        });
    }
    w.report.cpu = w.cpu;
    let t0 = *t0.lock().unwrap_or_else(|e| e.into_inner());
    forward_loop(&mut w, cfg.burst.max(1), clock, t0, tx);
    Ok(w)
}

/// The loop proper: poll, forward a burst from each port, until every
/// port of this worker is finished.
fn forward_loop<F, S, K>(
    w: &mut Worker<F, S, K>,
    burst: usize,
    clock: &Clock,
    t0: u64,
    tx: &[TxPort],
) where
    F: FnMut(&mut [u8]) -> Option<u16>,
    S: FrameSource,
    K: Sink,
{
    let mut last = 0;
    loop {
        let now = clock.ticks_to_ns(clock.now().saturating_sub(t0)) as u64;
        w.report.max_gap_ns = w.report.max_gap_ns.max(now.saturating_sub(last));
        last = now;
        let mut moved = 0;
        let mut finished = true;
        for rx in w.rx.iter_mut() {
            rx.poll(now);
            moved += forward_burst(rx, burst, now, &mut w.route, tx, &mut w.tx, &mut w.sink);
            finished &= rx.finished(now);
        }
        w.report.polls += 1;
        w.report.forwarded += moved;
        if moved == 0 {
            w.report.idle_polls += 1;
            if finished {
                return;
            }
            std::hint::spin_loop();
        }
    }
}

/// Forwards up to `burst` frames from `rx`; returns how many it took.
#[inline]
fn forward_burst<S: FrameSource>(
    rx: &mut RxPort<S>,
    burst: usize,
    now: u64,
    route: &mut impl FnMut(&mut [u8]) -> Option<u16>,
    tx: &[TxPort],
    counters: &mut [TxCounters],
    sink: &mut impl Sink,
) -> u64 {
    let mut n = 0;
    while n < burst as u64 {
        let Some(frame) = rx.recv() else { break };
        n += 1;
        let fate = match route(frame).filter(|&p| usize::from(p) < tx.len()) {
            None => Fate::Unrouted,
            Some(p) => {
                let c = &mut counters[usize::from(p)];
                if tx[usize::from(p)].offer(now) {
                    c.forwarded += 1;
                    c.bytes += frame.len() as u64;
                    sink.deliver(p, frame);
                    Fate::Forwarded
                } else {
                    c.tx_dropped += 1;
                    Fate::TxDropped
                }
            }
        };
        rx.count(fate);
    }
    n
}

type Joined<F, S, K> = Vec<std::thread::Result<Result<Worker<F, S, K>, ForwardError>>>;

/// Sums the workers' counters into the report.
fn collect<F, S, K>(
    cfg: &ForwarderConfig,
    clock: &Clock,
    (joined, ticks): (Joined<F, S, K>, u64),
) -> Result<TrialRun<K>, ForwardError> {
    let mut report = TrialReport {
        rx: vec![RxCounters::default(); cfg.ports],
        tx: vec![TxCounters::default(); cfg.ports],
        workers: Vec::new(),
        elapsed: Duration::from_nanos(clock.ticks_to_ns(ticks) as u64),
    };
    let mut sinks = Vec::new();
    for (k, j) in joined.into_iter().enumerate() {
        let w = j.map_err(|_| ForwardError::Panicked(k))??;
        for rx in &w.rx {
            report.rx[usize::from(rx.id())].add(&rx.counters());
        }
        for (total, c) in report.tx.iter_mut().zip(&w.tx) {
            total.add(c);
        }
        report.workers.push(w.report);
        sinks.push(w.sink);
    }
    Ok(TrialRun { report, sinks })
}

/// The forwarder's capacity: frames forwarded per second per port in a
/// flat-out trial of `trial` (a starting point for the search).
pub fn probe_capacity<F, S>(
    cfg: &ForwarderConfig,
    clock: &Clock,
    route: impl Fn(usize) -> F,
    source: impl Fn(u16) -> S,
) -> Result<f64, ForwardError>
where
    F: FnMut(&mut [u8]) -> Option<u16> + Send,
    S: FrameSource + Send,
{
    let flat = ForwarderConfig {
        offered: Offered::FlatOut,
        ..cfg.clone()
    };
    let run = run(&flat, clock, route, source, |_| super::ports::Discard)?;
    let secs = cfg.trial.as_secs_f64().max(1e-9);
    Ok(run.report.total().forwarded as f64 / secs / cfg.ports as f64)
}

/// The RFC 2544 throughput of the forwarder as `cfg` sets it up (its
/// `offered` is ignored): a flat-out probe of at most 200 ms sets the
/// upper bound (capped by the line rate, see [`bounds`]), then the binary
/// search runs trials of `cfg.trial` to `resolution` (fraction of the
/// rate). Rates are per port.
pub fn throughput<F, S>(
    cfg: &ForwarderConfig,
    clock: &Clock,
    resolution: f64,
    route: impl Fn(usize) -> F,
    source: impl Fn(u16) -> S,
) -> Result<SearchResult, ForwardError>
where
    F: FnMut(&mut [u8]) -> Option<u16> + Send,
    S: FrameSource + Send,
{
    let probe_cfg = ForwarderConfig {
        trial: cfg.trial.min(Duration::from_millis(200)),
        ..cfg.clone()
    };
    let probe = probe_capacity(&probe_cfg, clock, &route, &source)?;
    let (lo, hi) = bounds(line_rate_pps(cfg.line_rate, cfg.frame_len), Some(probe));
    try_search(SearchParams::new(lo, hi, resolution), |rate| {
        let at = ForwarderConfig {
            offered: Offered::Rate(rate),
            ..cfg.clone()
        };
        let run = run(&at, clock, &route, &source, |_| Discard)?;
        Ok(run.report.as_trial(rate))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::placement::online_cpus;
    use std::collections::HashSet;

    /// Test frames: [0..2) input port, [2..10) sequence number, [10] the
    /// output port the frame asks for (255: none), [11] rewritten by the
    /// forwarder (0 on arrival).
    struct Stamp {
        port: u16,
        ports: u16,
    }

    impl Stamp {
        fn out_port(port: u16, seq: u64, ports: u16) -> Option<u16> {
            (seq % 17 != 16).then(|| ((seq + u64::from(port) * 7) % u64::from(ports)) as u16)
        }
    }

    impl FrameSource for Stamp {
        fn fill(&mut self, seq: u64, f: &mut [u8]) {
            f[..2].copy_from_slice(&self.port.to_le_bytes());
            f[2..10].copy_from_slice(&seq.to_le_bytes());
            f[10] = Stamp::out_port(self.port, seq, self.ports).map_or(255, |p| p as u8);
            f[11] = 0;
        }
    }

    fn by_byte(_: usize) -> impl FnMut(&mut [u8]) -> Option<u16> {
        |f: &mut [u8]| {
            f[11] = f[11].wrapping_add(1); // a rewrite, as a TTL decrement
            (f[10] != 255).then_some(u16::from(f[10]))
        }
    }

    /// Every frame a worker's sink saw: (output port, frame).
    #[derive(Default)]
    struct Recorder(Vec<(u16, Vec<u8>)>);

    impl Sink for Recorder {
        fn deliver(&mut self, port: u16, frame: &[u8]) {
            self.0.push((port, frame.to_vec()));
        }
    }

    fn trial(cfg: &ForwarderConfig) -> TrialRun<Recorder> {
        let ports = cfg.ports as u16;
        run(
            cfg,
            &Clock::best(),
            by_byte,
            |port| Stamp { port, ports },
            |_| Recorder::default(),
        )
        .unwrap()
    }

    /// Checks every forwarded frame (right port, rewritten once, seen
    /// once, one that arrived) and the books of every port.
    fn check_every_frame(cfg: &ForwarderConfig, run: &TrialRun<Recorder>) {
        let r = &run.report;
        let mut seen = HashSet::new();
        let mut by_in = vec![0u64; cfg.ports];
        let mut by_out = vec![0u64; cfg.ports];
        for (out, f) in run.sinks.iter().flat_map(|s| &s.0) {
            let port = u16::from_le_bytes([f[0], f[1]]);
            let seq = u64::from_le_bytes(f[2..10].try_into().unwrap());
            assert_eq!(f.len(), cfg.frame_len);
            assert_eq!(Some(*out), Stamp::out_port(port, seq, cfg.ports as u16));
            assert_eq!(f[11], 1, "rewritten exactly once");
            assert!(seq < r.rx[usize::from(port)].generated, "arrived");
            assert!(seen.insert((port, seq)), "duplicate {port}/{seq}");
            by_in[usize::from(port)] += 1;
            by_out[usize::from(*out)] += 1;
        }
        let want = (cfg.trial.as_nanos() as f64 * rate(cfg) / 1e9) as u64;
        for p in 0..cfg.ports {
            let c = r.rx[p];
            assert!(c.balanced(0), "port {p}: {c:?}");
            assert_eq!(c.generated, want, "port {p}: open loop, exact");
            assert_eq!(c.forwarded, by_in[p], "port {p}");
            assert_eq!(r.tx[p].forwarded, by_out[p], "port {p}");
            assert_eq!(r.tx[p].bytes, by_out[p] * cfg.frame_len as u64);
        }
        let t = r.total();
        let tx_dropped: u64 = r.tx.iter().map(|c| c.tx_dropped).sum();
        assert_eq!(t.tx_dropped, tx_dropped);
        assert_eq!(t.generated, t.forwarded + t.lost());
        let by_workers: u64 = r.workers.iter().map(|w| w.forwarded).sum();
        assert_eq!(by_workers, t.forwarded + t.tx_dropped + t.unrouted);
    }

    fn rate(cfg: &ForwarderConfig) -> f64 {
        match cfg.offered {
            Offered::Rate(r) => r,
            Offered::FlatOut => unreachable!(),
        }
    }

    #[test]
    fn every_frame_reaches_its_port_exactly_once() {
        // Two workers, three ports (worker 0 drains two), a light load.
        let cfg = ForwarderConfig::new(
            2,
            3,
            64,
            Offered::Rate(100_000.0),
            Duration::from_millis(100),
        );
        let run = trial(&cfg);
        check_every_frame(&cfg, &run);
        let t = run.report.total();
        assert!(t.forwarded > 0 && t.unrouted > 0, "{t:?}");
        assert_eq!(run.report.workers[0].rx_ports, vec![0, 2]);
        assert_eq!(run.report.workers[1].rx_ports, vec![1]);
    }

    #[test]
    fn overload_and_a_slow_wire_are_counted_exactly() {
        // 10^9 pps (one per ns) overruns any ring; 100 Mbit/s ports with
        // 4-frame rings take 148,809 frames/s each and drop the rest.
        let mut cfg = ForwarderConfig::new(2, 2, 64, Offered::Rate(1e9), Duration::from_millis(50));
        cfg.rx_ring = 64;
        cfg.tx_ring = 4;
        cfg.line_rate = Some(100_000_000);
        let run = trial(&cfg);
        check_every_frame(&cfg, &run);
        let t = run.report.total();
        assert!(t.rx_dropped > 0 && t.tx_dropped > 0, "{t:?}");
        // The wire carried no more than its rate allows (plus the rings).
        let wire = line_rate_pps(cfg.line_rate, 64) * run.report.elapsed.as_secs_f64();
        for c in &run.report.tx {
            assert!(c.forwarded as f64 <= wire + 4.0 + 1.0, "{c:?} > {wire}");
        }
    }

    #[test]
    fn pins_workers_and_says_where() {
        let cpus = online_cpus();
        let n = cpus.len().min(2);
        let mut cfg = ForwarderConfig::new(
            n,
            n,
            128,
            Offered::Rate(10_000.0),
            Duration::from_millis(20),
        );
        cfg.cpus = CpuList(cpus.clone());
        let run = trial(&cfg);
        check_every_frame(&cfg, &run);
        for (k, w) in run.report.workers.iter().enumerate() {
            assert_eq!(w.cpu, Some(cpus[k]));
        }
        cfg.cpus = CpuList(vec![crate::measure::placement::MAX_CPU_ID]);
        let e = run_err(&cfg);
        assert!(matches!(e, ForwardError::Pin { worker: 0, .. }), "{e}");
    }

    fn run_err(cfg: &ForwarderConfig) -> ForwardError {
        let ports = cfg.ports as u16;
        let r = run(
            cfg,
            &Clock::best(),
            by_byte,
            |port| Stamp { port, ports },
            |_| Recorder::default(),
        );
        r.err().expect("an error")
    }

    #[test]
    fn refuses_settings_that_cannot_work() {
        let ok = ForwarderConfig::new(1, 1, 64, Offered::Rate(1.0), Duration::from_millis(1));
        for cfg in [
            ForwarderConfig {
                workers: 0,
                ..ok.clone()
            },
            ForwarderConfig {
                ports: 0,
                ..ok.clone()
            },
            ForwarderConfig {
                workers: 2,
                ..ok.clone()
            },
            ForwarderConfig {
                offered: Offered::Rate(f64::NAN),
                ..ok.clone()
            },
        ] {
            assert!(matches!(run_err(&cfg), ForwardError::Config(_)));
        }
    }

    #[test]
    fn the_search_runs_on_the_forwarder() {
        // Machine-independent: whatever the rate found, the search ended
        // on a trial without loss at it, or found none.
        let mut cfg = ForwarderConfig::new(1, 1, 64, Offered::FlatOut, Duration::from_millis(20));
        cfg.line_rate = Some(10_000_000); // 14,880 pps at 64 B: fast enough anywhere
        let source = |_| |_, f: &mut [u8]| f[10..12].fill(0); // all to port 0
        let r = throughput(&cfg, &Clock::best(), 0.05, by_byte, source).unwrap();
        let last = r.trials.last().unwrap();
        assert!(
            r.rate == 0.0 || (last.passed() && last.rate == r.rate),
            "{r:?}"
        );
        assert!(r.rate <= line_rate_pps(cfg.line_rate, 64));
        assert!(r.trials.iter().all(|t| t.sent > 0));
    }

    #[test]
    fn a_flat_out_probe_forwards() {
        let cfg = ForwarderConfig::new(1, 2, 64, Offered::Rate(0.0), Duration::from_millis(20));
        let pps = probe_capacity(&cfg, &Clock::best(), by_byte, |port| Stamp {
            port,
            ports: 2,
        })
        .unwrap();
        assert!(pps > 0.0);
    }

    /// How fast the bare loop goes here (no table: a byte picks the
    /// port), flat out, 64-byte frames: run by hand in release mode with
    /// `--ignored --nocapture`. Prints, asserts nothing about speed.
    #[test]
    #[ignore]
    fn bare_loop_speed() {
        for (workers, ports) in [(1, 1), (1, 2), (2, 2)] {
            let cfg = ForwarderConfig::new(
                workers,
                ports,
                64,
                Offered::Rate(0.0),
                Duration::from_millis(500),
            );
            let route = |_: usize| |f: &mut [u8]| Some(u16::from(f[10]));
            let pool = |p: u16| {
                super::super::ports::Pool::build(256, 64, move |k, f| {
                    f[10] = ((k + u64::from(p)) % ports as u64) as u8
                })
            };
            let pps = probe_capacity(&cfg, &Clock::best(), route, pool).unwrap();
            println!(
                "{workers} worker(s), {ports} port(s): {:.2} Mpps per port, {:.2} Mpps in all",
                pps / 1e6,
                pps * ports as f64 / 1e6
            );
        }
    }
}
