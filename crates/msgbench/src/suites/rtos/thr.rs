//! The THR tests (docs/methodology.md, "msgbench rtos"): creation semantics
//! (THR-B-NEW), SCHED_RR fairness and slice (THR-B-RR), switch latency of
//! yielding threads (THR-P-SLS), and create/delete time (THR-P-NEW).
//!
//! Every priority test runs on one CPU with a controlling thread at a
//! higher SCHED_FIFO priority that only sleeps or blocks (bounded), so the
//! threads under test never starve it; every busy thread is bounded in
//! time by its own deadline as well.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, Result};

use super::ctx::Ctx;
use super::def::{TestDef, Variant};
use super::row::Group;
use super::row::{Outcome, Reference, Timing, Unit};
use super::rtthread::{rr_interval, run_on, spawn, spin_for, test_cpu, yield_now, Gate, Policy};
use crate::measure::clock::Clock;

/// Priority of the controlling threads (above every thread under test).
const CTRL: i32 = 30;
/// Priority of the creating thread in THR-B-NEW and THR-P-NEW.
const CREATOR: i32 = 20;
/// Priority of the threads under test in THR-B-RR and THR-P-SLS.
const WORKER: i32 = 10;
/// Stack of the many small test threads.
const SMALL_STACK: usize = 64 * 1024;
/// Longest any test thread waits for a gate before giving up.
const GATE_WAIT: Duration = Duration::from_secs(10);

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    vec![
        TestDef {
            id: "THR-B-NEW",
            group: Group::THR,
            title: "creation: lower priority does not run first; equal goes to the ready tail; yield lets it run; higher preempts",
            needs_fifo: true,
            substitute: None,
            run: new_semantics,
        },
        TestDef {
            id: "THR-B-RR",
            group: Group::THR,
            title: "SCHED_RR fairness between equal-priority threads; time slice length",
            needs_fifo: true,
            substitute: None,
            run: rr,
        },
        TestDef {
            id: "THR-P-SLS",
            group: Group::THR,
            title: "switch latency between equal-priority SCHED_FIFO threads yielding (2, 10, 128, 1000 threads)",
            needs_fifo: true,
            substitute: None,
            run: sls,
        },
        TestDef {
            id: "THR-P-NEW",
            group: Group::THR,
            title: "thread create and delete time: never-run, run-and-terminate, run-and-block",
            needs_fifo: false,
            substitute: None,
            run: create_delete,
        },
    ]
}

// ------------------------------------------------------------ THR-B-NEW

/// The creation cases of THR-B-NEW.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    /// Child below the creator; the creator spins, then blocks.
    Lower,
    /// Child at the creator's priority; the creator spins, then blocks.
    EqualTail,
    /// Child at the creator's priority; the creator yields.
    EqualYield,
    /// Child above the creator.
    Higher,
}

impl Case {
    const ALL: [Case; 4] = [Case::Lower, Case::EqualTail, Case::EqualYield, Case::Higher];

    fn name(self) -> &'static str {
        match self {
            Case::Lower => "lower priority does not run first",
            Case::EqualTail => "equal priority goes to the ready tail",
            Case::EqualYield => "sched_yield lets the equal one run",
            Case::Higher => "higher priority preempts at once",
        }
    }

    fn child_prio(self) -> i32 {
        match self {
            Case::Lower => CREATOR - 5,
            Case::EqualTail | Case::EqualYield => CREATOR,
            Case::Higher => CREATOR + 5,
        }
    }

    /// The order of events a POSIX real-time scheduler must produce.
    fn expected(self) -> Vec<&'static str> {
        match self {
            Case::Lower => vec![
                "creator continues",
                "creator still running after spinning",
                "creator blocks",
                "child runs",
                "creator resumes",
            ],
            Case::EqualTail => vec![
                "creator continues",
                "creator still running after spinning",
                "creator blocks",
                "child runs",
                "creator resumes",
            ],
            Case::EqualYield => vec![
                "creator continues",
                "creator yields",
                "child runs",
                "yield returns",
            ],
            Case::Higher => vec!["child runs", "creator continues"],
        }
    }
}

/// The THR-B-NEW verdict: the events happened exactly in the expected order.
fn order_holds(observed: &[String], expected: &[&str]) -> bool {
    observed.len() == expected.len() && observed.iter().zip(expected).all(|(o, e)| o == e)
}

/// Runs one creation case on `cpu`; returns the events in order.
fn creation_case(cpu: usize, case: Case) -> Result<Vec<String>> {
    run_on(Policy::Fifo(CREATOR), Some(cpu), move || {
        let log = Arc::new(Mutex::new(Vec::<String>::new()));
        let ran = Arc::new(Gate::new());
        let push = |log: &Mutex<Vec<String>>, e: &str| {
            log.lock().unwrap_or_else(|e| e.into_inner()).push(e.into());
        };
        let (l2, r2) = (Arc::clone(&log), Arc::clone(&ran));
        let child = spawn(
            Policy::Fifo(case.child_prio()),
            Some(cpu),
            Some(SMALL_STACK),
            move || {
                push(&l2, "child runs");
                r2.open();
            },
        )?;
        push(&log, "creator continues");
        match case {
            Case::Lower | Case::EqualTail => {
                spin_for(Duration::from_millis(2), || ran.is_open());
                if !ran.is_open() {
                    push(&log, "creator still running after spinning");
                }
                push(&log, "creator blocks");
                ran.wait(GATE_WAIT);
                push(&log, "creator resumes");
            }
            Case::EqualYield => {
                push(&log, "creator yields");
                yield_now();
                push(&log, "yield returns");
            }
            Case::Higher => {}
        }
        ran.wait(GATE_WAIT);
        child.join()?;
        let events = log.lock().unwrap_or_else(|e| e.into_inner()).clone();
        Ok(events)
    })
}

fn new_semantics(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let mut out = Vec::new();
    for case in Case::ALL {
        let expected = case.expected();
        let observed = creation_case(cpu, case)?;
        let pass = order_holds(&observed, &expected);
        out.push(
            Variant::new(
                case.name(),
                Outcome::Behaviour {
                    pass,
                    observed,
                    expected: expected.join(", "),
                },
            )
            .reference(Reference::text("all pass"))
            .note(format!(
                "creator SCHED_FIFO {CREATOR}, child created with explicit SCHED_FIFO {}, both on CPU {cpu}{}",
                case.child_prio(),
                match case {
                    Case::Lower | Case::EqualTail => "; the creator spins 2 ms, then blocks on a futex",
                    Case::EqualYield => "; the creator calls sched_yield",
                    Case::Higher => "",
                }
            )),
        );
    }
    Ok(out)
}

// ------------------------------------------------------------- THR-B-RR

/// One thread's uninterrupted runs: (first, last) timestamp, ticks.
type Runs = Vec<(u64, u64)>;

/// What the RR runs show once merged.
#[derive(Debug, Clone, PartialEq)]
struct RrAnalysis {
    /// Each uninterrupted run: (thread, start, end), in time order, with
    /// consecutive runs of the same thread merged.
    runs: Vec<(usize, u64, u64)>,
    /// Complete rounds used for the shares.
    rounds: usize,
    /// Each thread's time on the CPU over those rounds, ticks: the sum of
    /// its uninterrupted runs, so time in which neither worker ran (RT
    /// throttling, the host preempting the vCPU, an interrupt) is no one's
    /// share, whoever it interrupted.
    shares: Vec<u64>,
    /// Lengths of the complete runs (the one cut by the end dropped), ticks.
    slices: Vec<u64>,
}

/// Merges the per-thread runs into one timeline and measures fairness over
/// the complete rounds (every thread's first `k` runs, `k` the smallest
/// count once the run cut by the end of the test is dropped).
fn analyse_rr(per_thread: &[Vec<(u64, u64)>]) -> RrAnalysis {
    let mut all: Vec<(usize, u64, u64)> = per_thread
        .iter()
        .enumerate()
        .flat_map(|(i, v)| v.iter().map(move |&(s, e)| (i, s, e)))
        .collect();
    all.sort_by_key(|r| r.1);
    let mut runs: Vec<(usize, u64, u64)> = Vec::new();
    // Each merged run's time on the CPU (its pieces, without the gaps).
    let mut busy: Vec<u64> = Vec::new();
    for r in all {
        let piece = r.2.saturating_sub(r.1);
        match (runs.last_mut(), busy.last_mut()) {
            (Some(last), Some(b)) if last.0 == r.0 => {
                last.2 = last.2.max(r.2);
                *b += piece;
            }
            _ => {
                runs.push(r);
                busy.push(piece);
            }
        }
    }
    // The last run of the timeline was cut by the end of the test.
    let complete = &runs[..runs.len().saturating_sub(1)];
    let n = per_thread.len();
    let mut counts = vec![0usize; n];
    for r in complete {
        counts[r.0] += 1;
    }
    let rounds = counts.iter().copied().min().unwrap_or(0);
    let mut shares = vec![0u64; n];
    let mut taken = vec![0usize; n];
    for (r, b) in complete.iter().zip(&busy) {
        if taken[r.0] < rounds {
            taken[r.0] += 1;
            shares[r.0] += b;
        }
    }
    let slices = complete.iter().map(|r| r.2.saturating_sub(r.1)).collect();
    RrAnalysis {
        runs,
        rounds,
        shares,
        slices,
    }
}

/// The fairness verdict: at least one complete round, and every share
/// within `tolerance` (a fraction) of the mean share.
fn fair(shares: &[u64], rounds: usize, tolerance: f64) -> bool {
    if rounds == 0 || shares.is_empty() {
        return false;
    }
    let mean = shares.iter().sum::<u64>() as f64 / shares.len() as f64;
    mean > 0.0
        && shares
            .iter()
            .all(|&s| ((s as f64 - mean) / mean).abs() <= tolerance)
}

/// Threads of THR-B-RR.
const RR_THREADS: usize = 2;
/// How far a share may stray from the mean share in THR-B-RR.
const RR_TOLERANCE: f64 = 0.2;

/// The clock figures every THR-B-RR worker works with.
#[derive(Clone, Copy)]
struct RrTiming {
    /// The timestamp clock.
    clock: Clock,
    /// Length of the run, ticks.
    span: u64,
    /// A step above this between two reads means the thread was off the
    /// CPU, ticks.
    split: u64,
}

/// What the THR-B-RR workers and their controller share.
struct RrShared {
    gate: Gate,
    start: AtomicU64,
    done: AtomicBool,
    slots: Mutex<Vec<Option<Runs>>>,
    interval: Mutex<Option<Duration>>,
}

impl RrShared {
    fn new() -> RrShared {
        RrShared {
            gate: Gate::new(),
            start: AtomicU64::new(0),
            done: AtomicBool::new(false),
            slots: Mutex::new(vec![None; RR_THREADS]),
            interval: Mutex::new(None),
        }
    }

    /// Every worker has stored its runs.
    fn filled(&self) -> bool {
        self.slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .all(Option::is_some)
    }
}

fn rr(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    // Under the RT throttling budget (950 ms per second).
    let run = if ctx.quick {
        Duration::from_millis(300)
    } else {
        Duration::from_millis(800)
    };
    let clock = ctx.clock;
    let timing = RrTiming {
        clock,
        span: (run.as_nanos() as f64 * clock.ticks_per_us() / 1e3) as u64,
        split: (20_000.0 * clock.ticks_per_us() / 1e3) as u64,
    };
    let stop = Arc::clone(&ctx.stop);
    let (per_thread, interval) = run_on(Policy::Fifo(CTRL), Some(cpu), move || {
        rr_measure(timing, cpu, run, &stop)
    })?;
    let a = analyse_rr(&per_thread);
    let mut out = vec![rr_fairness(&a, interval, run, clock, cpu)];
    out.push(rr_slice(&a, run, clock));
    if let Some(t) = interval.and_then(|d| Timing::of(Unit::Ms, vec![d.as_secs_f64() * 1e3])) {
        out.push(
            Variant::new("sched_rr_get_interval", Outcome::Timing(t))
                .note("the slice the kernel announces (/proc/sys/kernel/sched_rr_timeslice_ms)"),
        );
    }
    Ok(out)
}

/// On the controlling thread: starts the SCHED_RR workers, waits out the
/// run, and returns each worker's runs and the announced slice.
fn rr_measure(
    timing: RrTiming,
    cpu: usize,
    run: Duration,
    stop: &AtomicBool,
) -> Result<(Vec<Runs>, Option<Duration>)> {
    let shared = Arc::new(RrShared::new());
    let mut threads = Vec::new();
    for i in 0..RR_THREADS {
        let sh = Arc::clone(&shared);
        threads.push(spawn(
            Policy::Rr(WORKER),
            Some(cpu),
            Some(SMALL_STACK),
            move || rr_worker(i, &sh, timing),
        )?);
    }
    shared.start.store(timing.clock.now(), Ordering::Release);
    shared.gate.open();
    rr_wait(&shared, run, stop);
    shared.done.store(true, Ordering::Relaxed);
    for t in threads {
        t.join()?;
    }
    let per: Vec<Runs> = shared
        .slots
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter_mut()
        .map(|s| s.take().unwrap_or_default())
        .collect();
    let iv = *shared.interval.lock().unwrap_or_else(|e| e.into_inner());
    Ok((per, iv))
}

/// One SCHED_RR worker: (the first also asks for the announced slice)
/// waits at the gate, records its runs until the end, stores them.
fn rr_worker(i: usize, sh: &RrShared, timing: RrTiming) {
    if i == 0 {
        *sh.interval.lock().unwrap_or_else(|e| e.into_inner()) = rr_interval().ok();
    }
    if !sh.gate.wait(GATE_WAIT) {
        return;
    }
    let t0 = sh.start.load(Ordering::Acquire);
    let runs = rr_runs(timing, t0, &sh.done);
    sh.slots.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(runs);
}

/// Reads the clock in a busy loop from `t0` for the run's span (or until
/// `done`), and returns the uninterrupted runs (start, end) it saw.
fn rr_runs(timing: RrTiming, t0: u64, done: &AtomicBool) -> Runs {
    let clock = timing.clock;
    let mut runs = Vec::with_capacity(4096);
    let mut run_start = clock.now();
    let mut prev = run_start;
    let mut k = 0u32;
    loop {
        let t = clock.now();
        if t.wrapping_sub(prev) > timing.split {
            if runs.len() < runs.capacity() {
                runs.push((run_start, prev));
            }
            run_start = t;
        }
        prev = t;
        if t.wrapping_sub(t0) >= timing.span {
            break;
        }
        k = k.wrapping_add(1);
        if k % 1024 == 0 && done.load(Ordering::Relaxed) {
            break;
        }
    }
    // A run that began after the deadline is only the thread noticing the
    // end, not a slice.
    if run_start.wrapping_sub(t0) < timing.span {
        runs.push((run_start, prev));
    }
    runs
}

/// The controller sleeps (it outranks the workers, so it always gets the
/// CPU back) until the run is over, every worker has reported, or `stop`.
fn rr_wait(shared: &RrShared, run: Duration, stop: &AtomicBool) {
    let limit = run + Duration::from_millis(200);
    let t0 = std::time::Instant::now();
    while t0.elapsed() < limit && !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(10));
        if shared.filled() {
            break;
        }
    }
}

/// The fairness verdict of THR-B-RR with what was observed: the announced
/// slice, the timeline, each thread's share.
fn rr_fairness(
    a: &RrAnalysis,
    interval: Option<Duration>,
    run: Duration,
    clock: Clock,
    cpu: usize,
) -> Variant {
    let ms = |t: u64| clock.ticks_to_ns(t) / 1e6;
    let pass = fair(&a.shares, a.rounds, RR_TOLERANCE);
    let mut observed = vec![match interval {
        Some(d) => format!("sched_rr_get_interval = {:.3} ms", d.as_secs_f64() * 1e3),
        None => "sched_rr_get_interval failed".into(),
    }];
    observed.push(rr_timeline(a, run, clock));
    for (i, s) in a.shares.iter().enumerate() {
        observed.push(format!(
            "thread {i}: {:.1} ms over the first {} complete round(s)",
            ms(*s),
            a.rounds
        ));
    }
    Variant::new(
        "fairness",
        Outcome::Behaviour {
            pass,
            observed,
            expected: format!(
                "{RR_THREADS} SCHED_RR threads alternate; each gets within {:.0}% of an equal share",
                RR_TOLERANCE * 100.0
            ),
        },
    )
    .reference(Reference::text("4 ms slice"))
    .note(format!(
        "{RR_THREADS} busy SCHED_RR {WORKER} threads on CPU {cpu}, controller SCHED_FIFO {CTRL} sleeping"
    ))
}

/// The first 40 runs of the timeline, "thread: start+length ms".
fn rr_timeline(a: &RrAnalysis, run: Duration, clock: Clock) -> String {
    let ms = |t: u64| clock.ticks_to_ns(t) / 1e6;
    let origin = a.runs.first().map_or(0, |r| r.1);
    format!(
        "{} runs in {} ms (thread: start+length ms): {}",
        a.runs.len(),
        run.as_millis(),
        a.runs
            .iter()
            .take(40)
            .map(|r| format!(
                "{}: {:.1}+{:.1}",
                r.0,
                ms(r.1.wrapping_sub(origin)),
                ms(r.2.saturating_sub(r.1))
            ))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// The observed slice of THR-B-RR: the length of each complete run.
fn rr_slice(a: &RrAnalysis, run: Duration, clock: Clock) -> Variant {
    let slices: Vec<f64> = a
        .slices
        .iter()
        .map(|t| clock.ticks_to_ns(*t) / 1e6)
        .collect();
    match Timing::of(Unit::Ms, slices) {
        Some(t) => Variant::new("observed slice", Outcome::Timing(t))
            .reference(Reference::avg(4.0, "4 ms slice"))
            .note(
                "length of each uninterrupted run (the last, cut by the end of the test, dropped)",
            ),
        None => Variant::new(
            "observed slice",
            Outcome::Skipped {
                reason: format!(
                    "no complete slice in {} ms (the slice is longer than the run)",
                    run.as_millis()
                ),
            },
        ),
    }
}

// ------------------------------------------------------------ THR-P-SLS

/// Marks "no valid previous yield" in the shared last-yield record.
const NOBODY: usize = usize::MAX;

/// What the yielding threads of THR-P-SLS and their controller share.
struct SlsShared {
    gate: Gate,
    /// When the run started, ticks.
    start: AtomicU64,
    /// The timestamp of the last thread before its yield.
    last_t: AtomicU64,
    /// Which thread yielded last ([`NOBODY`] when none validly did).
    last_id: AtomicUsize,
    /// Set to make every thread stop.
    quit: AtomicBool,
    /// Threads that have ended.
    finished: AtomicUsize,
    /// (when, switch time): sorted by when at the end, so the samples
    /// are in measurement order.
    out: Mutex<Vec<(u64, u64)>>,
}

impl SlsShared {
    fn new() -> SlsShared {
        SlsShared {
            gate: Gate::new(),
            start: AtomicU64::new(0),
            last_t: AtomicU64::new(0),
            last_id: AtomicUsize::new(NOBODY),
            quit: AtomicBool::new(false),
            finished: AtomicUsize::new(0),
            out: Mutex::new(Vec::new()),
        }
    }
}

/// Runs `n` yielding SCHED_FIFO threads on `cpu`; returns the switch
/// times in ticks (next thread's return from yield minus the previous
/// thread's timestamp before its yield).
fn sls_run(
    clock: Clock,
    cpu: usize,
    n: usize,
    rounds: usize,
    run: Duration,
    stop: Arc<AtomicBool>,
) -> Result<Vec<u64>> {
    run_on(Policy::Fifo(CTRL), Some(cpu), move || {
        let span = (run.as_nanos() as f64 * clock.ticks_per_us() / 1e3) as u64;
        let sh = Arc::new(SlsShared::new());
        let mut threads = Vec::with_capacity(n);
        for i in 0..n {
            let s = Arc::clone(&sh);
            let t = spawn(
                Policy::Fifo(WORKER),
                Some(cpu),
                Some(SMALL_STACK),
                move || sls_worker(i, &s, clock, rounds, span),
            );
            match t {
                Ok(t) => threads.push(t),
                Err(e) => {
                    // Release the ones created so they end, then report.
                    sh.quit.store(true, Ordering::Relaxed);
                    sh.gate.open();
                    drop(threads);
                    return Err(e.context(format!("creating thread {} of {n}", i + 1)));
                }
            }
        }
        sh.start.store(clock.now(), Ordering::Release);
        sh.gate.open();
        sls_wait(&sh, n, run, &stop)?;
        for t in threads {
            t.join()?;
        }
        let mut v = std::mem::take(&mut *sh.out.lock().unwrap_or_else(|e| e.into_inner()));
        v.sort_by_key(|s| s.0);
        Ok(v.into_iter().map(|s| s.1).collect())
    })
}

/// One yielding thread of THR-P-SLS: after the gate, up to `rounds`
/// times within `span` ticks, records its timestamp and yields; on its
/// return, the time since the previous thread's timestamp is a switch.
fn sls_worker(i: usize, sh: &SlsShared, clock: Clock, rounds: usize, span: u64) {
    let mut mine = Vec::with_capacity(rounds);
    if sh.gate.wait(GATE_WAIT) {
        let t0 = sh.start.load(Ordering::Acquire);
        for _ in 0..rounds {
            let t = clock.now();
            if sh.quit.load(Ordering::Relaxed) || t.wrapping_sub(t0) >= span {
                break;
            }
            sh.last_id.store(i, Ordering::Relaxed);
            sh.last_t.store(t, Ordering::Relaxed);
            yield_now();
            let a = clock.now();
            let from = sh.last_id.load(Ordering::Relaxed);
            if from != i && from != NOBODY {
                mine.push((a, a.wrapping_sub(sh.last_t.load(Ordering::Relaxed))));
            }
        }
    }
    // Whoever runs next did not come from a yield of ours.
    sh.last_id.store(NOBODY, Ordering::Relaxed);
    sh.out
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .extend(mine);
    sh.finished.fetch_add(1, Ordering::Release);
}

/// The controller waits for the `n` threads to end, telling them to quit
/// past the run's length (with a margin) or on `stop`; an error if they
/// do not end.
fn sls_wait(sh: &SlsShared, n: usize, run: Duration, stop: &AtomicBool) -> Result<()> {
    let limit = run + Duration::from_secs(2);
    let t0 = std::time::Instant::now();
    while sh.finished.load(Ordering::Acquire) < n {
        if t0.elapsed() > limit || stop.load(Ordering::Relaxed) {
            sh.quit.store(true, Ordering::Relaxed);
        }
        if t0.elapsed() > limit + GATE_WAIT {
            return Err(anyhow!("the yielding threads did not end"));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Ok(())
}

fn sls(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let total = ctx.samples(20_000);
    let run = if ctx.quick {
        Duration::from_millis(200)
    } else {
        Duration::from_millis(500)
    };
    let cases: [(usize, f64, &'static str); 4] = [
        (2, 2.4, "2.4 us"),
        (10, 3.0, "3.0 us"),
        (128, 5.1, "5.1 us"),
        (1000, 5.0, "5.0 us"),
    ];
    let mut out = Vec::new();
    for (n, refv, reft) in cases {
        let name = format!("{n} threads");
        if ctx.stopped() {
            break;
        }
        let rounds = total.div_ceil(n).max(2);
        let v = match sls_run(ctx.clock, cpu, n, rounds, run, Arc::clone(&ctx.stop)) {
            Ok(ticks) => {
                let us: Vec<f64> = ticks.iter().map(|t| ctx.interval_ns(*t) / 1e3).collect();
                match Timing::of(Unit::Us, us) {
                    Some(t) => Variant::new(name, Outcome::Timing(t)),
                    None => Variant::new(
                        name,
                        Outcome::Error {
                            message: "no switch observed".into(),
                        },
                    ),
                }
            }
            Err(e) => Variant::new(
                name,
                Outcome::Error {
                    message: format!("{e:#}"),
                },
            ),
        };
        out.push(v.reference(Reference::avg(refv, reft)).note(format!(
            "SCHED_FIFO {WORKER} threads on CPU {cpu} released together; each stamps, yields; sample = next thread's return from sched_yield - that stamp; up to {rounds} rounds or {} ms",
            run.as_millis()
        )));
    }
    Ok(out)
}

// ------------------------------------------------------------ THR-P-NEW

/// The THR-P-NEW scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Life {
    /// Created below the creator, deleted before it ever ran.
    NeverRun,
    /// Runs and returns; then joined.
    RunTerminate,
    /// Runs and blocks; woken to exit, then joined.
    RunBlock,
}

impl Life {
    const ALL: [Life; 3] = [Life::NeverRun, Life::RunTerminate, Life::RunBlock];

    fn name(self) -> &'static str {
        match self {
            Life::NeverRun => "never-run",
            Life::RunTerminate => "run-and-terminate",
            Life::RunBlock => "run-and-block",
        }
    }
}

/// Create and delete times (ticks) of `n` threads living `life`, and how
/// many never-run threads did run before the delete request.
fn life_run(
    clock: Clock,
    cpu: usize,
    fifo: bool,
    life: Life,
    n: usize,
    stop: Arc<AtomicBool>,
) -> Result<(Vec<u64>, Vec<u64>, usize)> {
    let ctrl = if fifo {
        Policy::Fifo(CREATOR)
    } else {
        Policy::Inherit
    };
    run_on(ctrl, Some(cpu), move || {
        let child_policy = match (fifo, life) {
            (false, _) => Policy::Inherit,
            (true, Life::NeverRun) => Policy::Fifo(CREATOR - 5),
            (true, _) => Policy::Fifo(CREATOR),
        };
        let early = Arc::new(AtomicUsize::new(0));
        let mut create = Vec::with_capacity(n);
        let mut delete = Vec::with_capacity(n);
        for _ in 0..n {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let ran = Arc::new(Gate::new());
            let exit = Arc::new(Gate::new());
            let (r2, x2, e2) = (Arc::clone(&ran), Arc::clone(&exit), Arc::clone(&early));
            let body = move || match life {
                Life::NeverRun => {
                    if !x2.is_open() {
                        e2.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Life::RunTerminate => r2.open(),
                Life::RunBlock => {
                    r2.open();
                    x2.wait(GATE_WAIT);
                }
            };
            let t0 = clock.now();
            let th = spawn(child_policy, Some(cpu), None, body)?;
            let t1 = clock.now();
            if life != Life::NeverRun {
                ran.wait(GATE_WAIT);
            }
            let t2 = clock.now();
            exit.open();
            th.join()?;
            let t3 = clock.now();
            create.push(t1.wrapping_sub(t0));
            delete.push(t3.wrapping_sub(t2));
        }
        Ok((create, delete, early.load(Ordering::Relaxed)))
    })
}

fn create_delete(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let n = ctx.samples(1000);
    let fifo = ctx.fifo_allowed;
    let policy = if fifo {
        format!("creator SCHED_FIFO {CREATOR} on CPU {cpu}")
    } else {
        format!("creator SCHED_OTHER on CPU {cpu} (no real-time priority)")
    };
    let mut out = Vec::new();
    for life in Life::ALL {
        let (create, delete, early) =
            life_run(ctx.clock, cpu, fifo, life, n, Arc::clone(&ctx.stop))?;
        let us =
            |v: Vec<u64>| -> Vec<f64> { v.iter().map(|t| ctx.interval_ns(*t) / 1e3).collect() };
        let how = match life {
            Life::NeverRun => format!(
                "child created at a lower priority, never scheduled before the exit request ({early} of {n} ran early)"
            ),
            Life::RunTerminate => "child at the creator's priority runs and returns while the creator waits".into(),
            Life::RunBlock => "child at the creator's priority runs and blocks on a futex".into(),
        };
        if let Some(t) = Timing::of(Unit::Us, us(create)) {
            out.push(
                Variant::new(format!("create, {}", life.name()), Outcome::Timing(t))
                    .reference(Reference::avg(215.0, "about 215 us"))
                    .note(format!(
                        "duration of pthread_create (default stack); {how}; {policy}"
                    )),
            );
        }
        let del_how = match life {
            Life::NeverRun => "exit request (flag) to pthread_join return: the child's first run, exit and reaping",
            Life::RunTerminate => "pthread_join of the thread that already returned",
            Life::RunBlock => "wake to exit (futex) to pthread_join return",
        };
        if let Some(t) = Timing::of(Unit::Us, us(delete)) {
            out.push(
                Variant::new(format!("delete, {}", life.name()), Outcome::Timing(t))
                    .reference(Reference::text("15-155 us"))
                    .note(del_how),
            );
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn expected_orders_pass_and_a_broken_scheduler_fails() {
        for case in Case::ALL {
            let exp = case.expected();
            assert!(order_holds(&strings(&exp), &exp), "{case:?}");
        }
        // A scheduler that runs a lower-priority child at once.
        let broken = strings(&[
            "child runs",
            "creator continues",
            "creator blocks",
            "creator resumes",
        ]);
        assert!(!order_holds(&broken, &Case::Lower.expected()));
        // One that lets the equal child run before the creator blocks.
        let broken = strings(&[
            "creator continues",
            "child runs",
            "creator blocks",
            "creator resumes",
        ]);
        assert!(!order_holds(&broken, &Case::EqualTail.expected()));
        // One where yield returns before the child ran.
        let broken = strings(&[
            "creator continues",
            "creator yields",
            "yield returns",
            "child runs",
        ]);
        assert!(!order_holds(&broken, &Case::EqualYield.expected()));
        // One where the higher child waits for the creator.
        let broken = strings(&["creator continues", "child runs"]);
        assert!(!order_holds(&broken, &Case::Higher.expected()));
    }

    #[test]
    fn rr_analysis_merges_runs_and_drops_the_cut_one() {
        // Thread 0: 0-100, 200-300 (split by a short interrupt at 50),
        // thread 1: 100-200, 300-340 (cut by the end).
        let per = vec![
            vec![(0, 50), (52, 100), (200, 300)],
            vec![(100, 200), (300, 340)],
        ];
        let a = analyse_rr(&per);
        assert_eq!(
            a.runs,
            vec![(0, 0, 100), (1, 100, 200), (0, 200, 300), (1, 300, 340)]
        );
        assert_eq!(a.rounds, 1);
        // Thread 0's first run is two pieces (50 + 48) around a gap.
        assert_eq!(a.shares, vec![98, 100]);
        assert_eq!(a.slices, vec![100, 100, 100]);
        assert!(fair(&a.shares, a.rounds, 0.2));
    }

    /// A stall inside one thread's slice (RT throttling, the host taking
    /// the vCPU) is nobody's share: the threads still get equal time.
    #[test]
    fn a_stall_inside_a_slice_is_nobodys_share() {
        let per = vec![
            // Thread 0: 4 of its slice, a 50 stall, the 4 left; the
            // last run is cut by the end.
            vec![(0, 4), (54, 58), (66, 74), (82, 90)],
            vec![(58, 66), (74, 82)],
        ];
        let a = analyse_rr(&per);
        assert_eq!(a.rounds, 2);
        // Timed from the first piece's start to the last's end, thread
        // 0's first run would be 58 and the verdict unfair.
        assert_eq!(a.shares, vec![16, 16]);
        assert!(fair(&a.shares, a.rounds, 0.2));
        // An unequal split is still seen as one.
        let per = vec![vec![(0, 8), (16, 40), (48, 50)], vec![(8, 16), (40, 48)]];
        let a = analyse_rr(&per);
        assert_eq!(a.shares, vec![32, 16]);
        assert!(!fair(&a.shares, a.rounds, 0.2));
    }

    #[test]
    fn fairness_verdict() {
        assert!(fair(&[100, 110], 3, 0.2));
        assert!(!fair(&[100, 200], 3, 0.2), "one thread got twice the other");
        assert!(!fair(&[100, 0], 3, 0.2), "a starved thread");
        assert!(!fair(&[100, 100], 0, 0.2), "no complete round");
        assert!(!fair(&[], 1, 0.2));
        // A FIFO-like scheduler: one thread ran the whole time.
        let a = analyse_rr(&[vec![(0, 1000)], vec![]]);
        assert!(!fair(&a.shares, a.rounds, 0.2));
    }
}
