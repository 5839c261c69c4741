//! The IRQ tests (docs/methodology.md, "msgbench rtos").
//!
//! Linux gives user space no hardware interrupt to time, so IRQ-P-LAT and
//! IRQ-P-DLT are listed as skipped (the lab used a PCI bus exerciser), and
//! IRQ-P-TLT and IRQ-S-SUS run user-space substitutes, labelled as such:
//!
//! - IRQ-P-TLT "timer": a pinned SCHED_FIFO thread sleeps until absolute
//!   expiries of a 1 ms period (`clock_nanosleep(TIMER_ABSTIME)`); each
//!   sample is the wake-up time less the intended expiry (the cyclictest
//!   method). "eventfd" and "signal": a pinned thread on one CPU takes a
//!   timestamp and raises an event (an eventfd write, or a real-time signal
//!   sent with `tgkill`); a blocked, higher-priority SCHED_FIFO thread on
//!   another CPU takes a timestamp when it wakes.
//! - IRQ-S-SUS: a producer on one CPU posts events on an eventfd at a fixed
//!   period; a SCHED_FIFO consumer on another CPU acknowledges each one.
//!   An event is *lost* when the producer posts it while the previous one
//!   is still unacknowledged (an interrupt overrun). The period is halved
//!   from 100 us until events are lost; the lowest period with none lost
//!   is then confirmed over up to 1,000,000 events (100,000 with
//!   `--quick`), within a bounded time. PASS needs a loss-free run of the
//!   full target count (see [`sus_verdict`]); the headline period and rate
//!   are that run's achieved ones, measured.

use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use oslayer::poll::{self, PollFd};
use oslayer::signal::{self, SigSet};
use oslayer::{eventfd, thread};

use super::ctx::Ctx;
use super::def::{TestDef, Variant};
use super::row::Group;
use super::row::{Outcome, Reference, Timing, Unit};
use super::rt;
use crate::measure::clock::monotonic_ns;

/// Priority of the thread that is woken (the "handler's" thread).
const WAKE_PRIO: i32 = 90;
/// Priority of the thread that raises events.
const RAISE_PRIO: i32 = 80;
/// How long one blocking wait lasts before the waiter looks at its flags.
const POLL_MS: u64 = 50;
/// Longest wait for a peer before a run is abandoned.
const PEER_TIMEOUT: Duration = Duration::from_secs(2);

const NO_HARDWARE: &str =
    "hardware interrupt latency: no user-space equivalent (the lab used a PCI bus exerciser)";

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    vec![
        TestDef {
            id: "IRQ-P-LAT",
            group: Group::IRQ,
            title: "interrupt latency (hardware)",
            needs_fifo: false,
            substitute: None,
            run: lat,
        },
        TestDef {
            id: "IRQ-P-DLT",
            group: Group::IRQ,
            title: "return from handler to interrupted thread",
            needs_fifo: false,
            substitute: None,
            run: dlt,
        },
        TestDef {
            id: "IRQ-P-TLT",
            group: Group::IRQ,
            title: "handler to woken high-priority thread",
            needs_fifo: true,
            substitute: Some(
                "timer expiry woken in a pinned SCHED_FIFO thread (cyclictest method), and an \
                 eventfd / real-time signal raised on one CPU waking a blocked higher-priority \
                 thread on another",
            ),
            run: tlt,
        },
        TestDef {
            id: "IRQ-S-SUS",
            group: Group::IRQ,
            title: "highest sustained event rate with no event lost",
            needs_fifo: true,
            substitute: Some(
                "eventfd events posted at a fixed period on one CPU, each acknowledged by a \
                 SCHED_FIFO consumer on another; an event posted before the previous one was \
                 acknowledged is lost",
            ),
            run: sus,
        },
    ]
}

fn lat(_: &Ctx) -> Result<Vec<Variant>> {
    Ok(vec![Variant::new(
        "",
        Outcome::Skipped {
            reason: NO_HARDWARE.into(),
        },
    )
    .reference(Reference::avg(1.8, "1.8 us"))])
}

fn dlt(_: &Ctx) -> Result<Vec<Variant>> {
    Ok(vec![Variant::new(
        "",
        Outcome::Skipped {
            reason: NO_HARDWARE.into(),
        },
    )
    .reference(Reference::avg(1.4, "1.4 us"))])
}

/// The lab's IRQ-P-TLT figure.
const TLT_REF: Reference = Reference {
    avg: Some(3.7),
    max: Some(15.0),
    min: None,
    text: std::borrow::Cow::Borrowed("3.7 us avg, 15 us max"),
};

/// The CPU events are raised on and the CPU they are handled on (the same
/// one on a single-CPU machine).
fn cpu_pair(ctx: &Ctx) -> (usize, usize) {
    let first = ctx.cpus.first().copied().unwrap_or(0);
    let last = ctx.cpus.last().copied().unwrap_or(first);
    (first, last)
}

fn tlt(ctx: &Ctx) -> Result<Vec<Variant>> {
    let (raise_cpu, wake_cpu) = cpu_pair(ctx);
    let mut out = Vec::new();

    let n = ctx.samples(5_000);
    let samples = timer_latency(ctx, wake_cpu, 1_000_000, n)?;
    let t = Timing::of(Unit::Us, samples).ok_or_else(|| anyhow!("no timer samples"))?;
    out.push(
        Variant::new("timer", Outcome::Timing(t))
            .reference(TLT_REF)
            .note(format!(
                "absolute clock_nanosleep every 1 ms, SCHED_FIFO {WAKE_PRIO} on CPU {wake_cpu}; \
                 latency = wake-up time - intended expiry (CLOCK_MONOTONIC)"
            )),
    );

    let n = ctx.samples(10_000);
    for kind in [EventKind::Eventfd, EventKind::Signal] {
        let samples = event_latency(ctx, kind, raise_cpu, wake_cpu, n)?;
        let t =
            Timing::of(Unit::Us, samples).ok_or_else(|| anyhow!("no {} samples", kind.name()))?;
        out.push(
            Variant::new(
                format!("event from another CPU ({})", kind.name()),
                Outcome::Timing(t),
            )
            .reference(TLT_REF)
            .note(format!(
                "{} raised on CPU {raise_cpu} (SCHED_FIFO {RAISE_PRIO}) every 200 us, waking a \
                 blocked SCHED_FIFO {WAKE_PRIO} thread on CPU {wake_cpu}; latency = timestamp at \
                 wake-up - timestamp before raising{}",
                kind.how(),
                if raise_cpu == wake_cpu {
                    " (one CPU only: same CPU)"
                } else {
                    ""
                }
            )),
        );
    }
    Ok(out)
}

/// Sleeps until `deadline_ns` (CLOCK_MONOTONIC), absolute.
fn sleep_until(deadline_ns: u64) {
    // An interruption (EINTR) only wakes early, which the callers tolerate
    // (they measure the actual wake time).
    let _ = oslayer::clock::sleep_until_ns(oslayer::clock::Clock::Monotonic, deadline_ns);
}

/// Waits until `deadline_ns`: sleeps for long waits, spins (on a normal,
/// non-real-time thread) for the last tens of microseconds.
fn wait_until(deadline_ns: u64) {
    const SPIN_NS: u64 = 60_000;
    let now = monotonic_ns();
    if deadline_ns > now + SPIN_NS {
        sleep_until(deadline_ns - SPIN_NS);
    }
    while monotonic_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}

/// The cyclictest method: `n` wake-ups at absolute expiries `period_ns`
/// apart, in a SCHED_FIFO thread pinned to `cpu`; samples in us.
fn timer_latency(ctx: &Ctx, cpu: usize, period_ns: u64, n: usize) -> Result<Vec<f64>> {
    std::thread::scope(|s| {
        let h = s.spawn(|| -> Result<Vec<f64>> {
            rt::enter(Some(WAKE_PRIO), Some(cpu))?;
            let mut samples = Vec::with_capacity(n);
            let mut next = monotonic_ns() + period_ns;
            for _ in 0..n {
                if ctx.stopped() {
                    break;
                }
                sleep_until(next);
                let now = monotonic_ns();
                samples.push(now.saturating_sub(next) as f64 / 1e3);
                next += period_ns;
                // Overslept by more than a period: restart the schedule
                // rather than fire a burst of late expiries.
                if next <= now {
                    next = now + period_ns;
                }
            }
            Ok(samples)
        });
        h.join().map_err(|_| anyhow!("the timer thread panicked"))?
    })
}

/// How an event is raised in the IRQ-P-TLT event variants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventKind {
    /// An eventfd write, waited for with poll + read.
    Eventfd,
    /// A real-time signal sent with tgkill, waited for with sigtimedwait.
    Signal,
}

impl EventKind {
    fn name(self) -> &'static str {
        match self {
            EventKind::Eventfd => "eventfd",
            EventKind::Signal => "signal",
        }
    }

    fn how(self) -> &'static str {
        match self {
            EventKind::Eventfd => "an eventfd write (waiter in poll + read)",
            EventKind::Signal => "SIGRTMIN+6 sent with tgkill (waiter in sigtimedwait)",
        }
    }
}

/// Adds 1 to eventfd `fd`.
fn post(fd: BorrowedFd<'_>) -> Result<()> {
    eventfd::write(fd, 1).map_err(|e| anyhow!("eventfd write: {e}"))
}

/// Waits up to `POLL_MS` for eventfd `fd`; `Some(count)` when it had one.
fn take(fd: BorrowedFd<'_>) -> Result<Option<u64>> {
    let mut p = [PollFd::readable(fd)];
    // An interruption counts as nothing ready.
    let r = poll::poll(&mut p, Some(Duration::from_millis(POLL_MS)))
        .map_err(|e| anyhow!("poll: {e}"))?;
    if r == 0 {
        return Ok(None);
    }
    let v = eventfd::read(fd).map_err(|e| anyhow!("eventfd read: {e}"))?;
    Ok(Some(v))
}

fn rt_signal() -> i32 {
    signal::rt(6)
}

/// Blocks `sig` in the calling thread; returns the set holding it.
fn block_signal(sig: i32) -> Result<SigSet> {
    let set = SigSet::of(sig);
    signal::block_in_thread(&set).map_err(|e| anyhow!("pthread_sigmask: {e}"))?;
    Ok(set)
}

/// Waits up to `POLL_MS` for a signal of `set`; true when one came.
fn wait_signal(set: &SigSet) -> bool {
    signal::timed_wait(set, Duration::from_millis(POLL_MS)).is_ok_and(|s| s > 0)
}

/// State shared by the raising and the woken thread.
struct Shared {
    /// Timestamp (clock ticks) taken just before the last event was raised.
    t0: AtomicU64,
    /// Events handled by the woken thread.
    acked: AtomicU64,
    /// The woken thread's tid (signals), 0 until it is ready.
    tid: AtomicI32,
    /// Set by the raising thread when it is done (or gave up).
    done: AtomicBool,
}

/// `n` events raised on `raise_cpu`, each waking a blocked thread on
/// `wake_cpu`; samples in us.
fn event_latency(
    ctx: &Ctx,
    kind: EventKind,
    raise_cpu: usize,
    wake_cpu: usize,
    n: usize,
) -> Result<Vec<f64>> {
    let efd = eventfd::new().map_err(|e| anyhow!("eventfd: {e}"))?;
    let fd = efd.as_fd();
    let sh = Shared {
        t0: AtomicU64::new(0),
        acked: AtomicU64::new(0),
        tid: AtomicI32::new(0),
        done: AtomicBool::new(false),
    };
    let sh = &sh;
    std::thread::scope(|s| {
        let waker = s.spawn(move || -> Result<Vec<f64>> {
            let r = (|| {
                rt::enter(Some(WAKE_PRIO), Some(wake_cpu))?;
                let set = match kind {
                    EventKind::Signal => Some(block_signal(rt_signal())?),
                    EventKind::Eventfd => None,
                };
                sh.tid.store(thread::gettid(), Ordering::Release);
                let mut samples = Vec::with_capacity(n);
                while samples.len() < n && !sh.done.load(Ordering::Acquire) {
                    let got = match &set {
                        Some(set) => wait_signal(set),
                        None => take(fd)?.is_some(),
                    };
                    if got {
                        let now = ctx.clock.now();
                        let t0 = sh.t0.load(Ordering::Acquire);
                        samples.push(ctx.interval_ns(now.wrapping_sub(t0)) / 1e3);
                        sh.acked.fetch_add(1, Ordering::Release);
                    }
                }
                Ok(samples)
            })();
            if r.is_err() {
                sh.tid.store(-1, Ordering::Release);
            }
            r
        });
        let raiser = s.spawn(move || -> Result<()> {
            let r = raise(ctx, kind, fd, raise_cpu, sh, n);
            sh.done.store(true, Ordering::Release);
            r
        });
        let raised = raiser
            .join()
            .map_err(|_| anyhow!("the raising thread panicked"))?;
        let samples = waker
            .join()
            .map_err(|_| anyhow!("the woken thread panicked"))??;
        raised?;
        Ok(samples)
    })
}

/// The raising side of [`event_latency`].
fn raise(
    ctx: &Ctx,
    kind: EventKind,
    fd: BorrowedFd<'_>,
    cpu: usize,
    sh: &Shared,
    n: usize,
) -> Result<()> {
    rt::enter(Some(RAISE_PRIO), Some(cpu))?;
    let give_up = monotonic_ns() + PEER_TIMEOUT.as_nanos() as u64;
    let tid = loop {
        match sh.tid.load(Ordering::Acquire) {
            0 if monotonic_ns() < give_up => std::thread::sleep(Duration::from_millis(1)),
            0 => bail!("the woken thread did not start"),
            t if t < 0 => return Ok(()), // it failed; its error is reported
            t => break t,
        }
    };
    const GAP_NS: u64 = 200_000;
    let mut next = monotonic_ns() + GAP_NS;
    for k in 0..n as u64 {
        if ctx.stopped() {
            break;
        }
        sleep_until(next);
        // The previous event must have been handled: the next one then
        // finds the woken thread blocked again.
        let give_up = monotonic_ns() + PEER_TIMEOUT.as_nanos() as u64;
        while sh.acked.load(Ordering::Acquire) < k {
            if monotonic_ns() > give_up {
                bail!("event {k} was not handled within {PEER_TIMEOUT:?}");
            }
            sleep_until(monotonic_ns() + 50_000);
        }
        sh.t0.store(ctx.clock.now(), Ordering::Release);
        match kind {
            EventKind::Eventfd => post(fd)?,
            EventKind::Signal => {
                // The target thread blocks the signal, so it stays
                // pending for sigtimedwait.
                signal::send_to_thread(tid, rt_signal()).map_err(|e| anyhow!("tgkill: {e}"))?
            }
        }
        next = monotonic_ns() + GAP_NS;
    }
    // Let the last event be handled before `done` ends the waiter's loop.
    let give_up = monotonic_ns() + PEER_TIMEOUT.as_nanos() as u64;
    while sh.acked.load(Ordering::Acquire) < n as u64 && monotonic_ns() < give_up && !ctx.stopped()
    {
        sleep_until(monotonic_ns() + 50_000);
    }
    Ok(())
}

/// Counts lost events on the posting side: an event posted while the
/// previous one is still unacknowledged is lost (an overrun).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LossCounter {
    /// Events posted.
    pub posted: u64,
    /// Events posted before the previous one was acknowledged.
    pub lost: u64,
}

impl LossCounter {
    /// Records one event posted when `acked` events had been acknowledged.
    pub fn post(&mut self, acked: u64) {
        if acked < self.posted {
            self.lost += 1;
        }
        self.posted += 1;
    }
}

/// One IRQ-S-SUS trial.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Trial {
    /// The period asked for, ns.
    pub period_ns: u64,
    /// Events posted and lost.
    pub count: LossCounter,
    /// Time from the first to the last post, ns.
    pub elapsed_ns: u64,
}

impl Trial {
    /// The period achieved (time from the first to the last post over the
    /// gaps between them), ns; `None` with fewer than two posts.
    pub fn achieved_ns(&self) -> Option<f64> {
        (self.count.posted > 1).then(|| self.elapsed_ns as f64 / (self.count.posted - 1) as f64)
    }

    fn line(&self) -> String {
        let achieved = self
            .achieved_ns()
            .map(|a| format!(" (achieved {:.2} us)", a / 1e3))
            .unwrap_or_default();
        format!(
            "period {} us{achieved}: {} events, {} lost",
            fmt_us(self.period_ns),
            self.count.posted,
            self.count.lost
        )
    }
}

/// The IRQ-S-SUS verdict on the trials of one run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SusVerdict {
    /// A run of at least the target count lost nothing, at a period at
    /// which no trial ever lost: that run (the lowest such period).
    Pass(Trial),
    /// Every trial that posted anything lost events: no period tried is
    /// free of loss.
    Fail,
    /// Some period lost nothing, but no loss-free run reached the target
    /// count (time ran out, or the run was cut short): the longest clean
    /// trial at the lowest clean period, if any.
    Inconclusive(Option<Trial>),
}

/// The verdict on `trials` when `target` events must pass with none lost.
pub fn sus_verdict(trials: &[Trial], target: u64) -> SusVerdict {
    let confirmed = trials
        .iter()
        .filter(|t| t.count.posted >= target && t.count.lost == 0)
        .filter(|t| clean_at(trials, t.period_ns))
        .min_by_key(|t| (t.period_ns, std::cmp::Reverse(t.count.posted)));
    if let Some(t) = confirmed {
        return SusVerdict::Pass(*t);
    }
    match lowest_clean(trials) {
        Some(p) => SusVerdict::Inconclusive(
            trials
                .iter()
                .filter(|t| t.period_ns == p)
                .max_by_key(|t| t.count.posted)
                .copied(),
        ),
        None if trials.iter().any(|t| t.count.lost > 0) => SusVerdict::Fail,
        None => SusVerdict::Inconclusive(None),
    }
}

/// "period 400 us achieved 420.01 us, 2381 events/s" for a trial.
fn achieved_text(t: &Trial) -> String {
    match t.achieved_ns() {
        Some(a) => format!(
            "requested period {} us, achieved {:.2} us ({:.0} events/s)",
            fmt_us(t.period_ns),
            a / 1e3,
            1e9 / a
        ),
        None => format!("requested period {} us", fmt_us(t.period_ns)),
    }
}

fn fmt_us(ns: u64) -> String {
    let us = ns as f64 / 1e3;
    if us.fract() == 0.0 {
        format!("{us:.0}")
    } else {
        format!("{us:.3}")
            .trim_end_matches('0')
            .trim_end_matches('.')
            .to_string()
    }
}

/// The lowest period at which every trial lost nothing (and posted
/// something), or `None`.
pub fn lowest_clean(trials: &[Trial]) -> Option<u64> {
    trials
        .iter()
        .filter(|t| t.count.posted > 0)
        .map(|t| t.period_ns)
        .filter(|p| {
            trials
                .iter()
                .filter(|t| t.period_ns == *p)
                .all(|t| t.count.lost == 0)
        })
        .min()
}

/// Shortest period tried, ns.
const MIN_PERIOD_NS: u64 = 700;
/// Longest period tried, ns.
const MAX_PERIOD_NS: u64 = 1_600_000;

/// True when every trial at `period_ns` lost nothing.
fn clean_at(trials: &[Trial], period_ns: u64) -> bool {
    trials
        .iter()
        .filter(|t| t.period_ns == period_ns)
        .all(|t| t.count.lost == 0)
}

/// The next period to search after `trials`: halve from 100 us while
/// nothing is lost; while no period is clean, double the longest tried.
/// `None` once the search has settled (the lowest clean period is then
/// confirmed, see [`lowest_clean`]).
pub fn next_period(trials: &[Trial]) -> Option<u64> {
    let Some(last) = trials.last() else {
        return Some(100_000);
    };
    if clean_at(trials, last.period_ns) {
        let p = last.period_ns / 2;
        (p >= MIN_PERIOD_NS && !trials.iter().any(|t| t.period_ns == p)).then_some(p)
    } else if lowest_clean(trials).is_none() {
        let longest = trials
            .iter()
            .map(|t| t.period_ns)
            .max()
            .unwrap_or(last.period_ns);
        let p = longest * 2;
        (p <= MAX_PERIOD_NS).then_some(p)
    } else {
        None
    }
}

fn sus(ctx: &Ctx) -> Result<Vec<Variant>> {
    let (raise_cpu, wake_cpu) = cpu_pair(ctx);
    let target: u64 = if ctx.quick { 100_000 } else { 1_000_000 };
    let total = if ctx.quick {
        Duration::from_millis(1500)
    } else {
        Duration::from_secs(10)
    };
    let trials = sus_trials(ctx, target, total, (raise_cpu, wake_cpu))?;
    let lines: Vec<String> = trials.iter().map(Trial::line).collect();
    let placement =
        format!("producer on CPU {raise_cpu}, SCHED_FIFO {WAKE_PRIO} consumer on CPU {wake_cpu}");
    let expected = format!("a run of {target} events with none lost");
    let losses = |pass| {
        Variant::new(
            "losses by period",
            Outcome::Behaviour {
                pass,
                observed: lines.clone(),
                expected: expected.clone(),
            },
        )
    };
    Ok(match sus_verdict(&trials, target) {
        SusVerdict::Pass(t) => vec![sus_headline(&t, target, &placement)?, losses(true)],
        SusVerdict::Fail => vec![losses(false)],
        SusVerdict::Inconclusive(best) => {
            vec![sus_inconclusive(best, target, total, lines.clone()).note(placement)]
        }
    })
}

/// The trials of IRQ-S-SUS: a search with short trials, and once
/// settled, the lowest clean period confirmed over as many events as half
/// the time left allows (up to `target`), backing off while it loses.
fn sus_trials(
    ctx: &Ctx,
    target: u64,
    total: Duration,
    (raise_cpu, wake_cpu): (usize, usize),
) -> Result<Vec<Trial>> {
    let stage = total / 16;
    let end = monotonic_ns() + total.as_nanos() as u64;
    let events_for = |period: u64, budget_ns: u64| (budget_ns / period).clamp(1, target);
    let mut trials = Vec::new();
    loop {
        let left = end.saturating_sub(monotonic_ns());
        if ctx.stopped() || left < stage.as_nanos() as u64 / 2 {
            break;
        }
        if let Some(p) = next_period(&trials) {
            let n = events_for(p, stage.as_nanos() as u64);
            trials.push(sustain(ctx, p, n, raise_cpu, wake_cpu)?);
            continue;
        }
        let Some(p) = lowest_clean(&trials) else {
            break;
        };
        // Half the time left, so a loss still leaves time to back off.
        let t = sustain(ctx, p, events_for(p, left / 2), raise_cpu, wake_cpu)?;
        trials.push(t);
        if t.count.lost == 0 {
            break;
        }
    }
    Ok(trials)
}

/// The headline of a PASS: the period achieved by the confirming run `t`
/// (not the one asked for: a preempted producer spaces its posts further
/// apart).
fn sus_headline(t: &Trial, target: u64, placement: &str) -> Result<Variant> {
    let achieved = t
        .achieved_ns()
        .ok_or_else(|| anyhow!("a confirming run of one event"))?;
    let timing = Timing::of(Unit::Us, vec![achieved / 1e3]).ok_or_else(|| anyhow!("no period"))?;
    Ok(
        Variant::new("lowest period with none lost", Outcome::Timing(timing))
            .reference(Reference::avg(25.0, "none lost at 25 us period"))
            .note(format!(
                "achieved (measured) period and rate of the confirming run: {}; {} events \
                 with none lost (target {target}); {placement}",
                achieved_text(t),
                t.count.posted
            )),
    )
}

/// A run that never reached the target count is no verdict either way:
/// inconclusive, with the best clean trial and the trials observed.
fn sus_inconclusive(
    best: Option<Trial>,
    target: u64,
    total: Duration,
    lines: Vec<String>,
) -> Variant {
    let best = best.map_or(String::from("no clean trial"), |t| {
        format!(
            "lowest clean: {}, {} events with none lost",
            achieved_text(&t),
            t.count.posted
        )
    });
    Variant::new(
        "losses by period",
        Outcome::Inconclusive {
            reason: format!(
                "no loss-free run of {target} events within the {total:?} \
                 allowed ({best})"
            ),
            observed: lines,
        },
    )
}

/// Posts `n` events `period_ns` apart from `raise_cpu`, acknowledged one
/// by one by a SCHED_FIFO consumer on `wake_cpu`.
fn sustain(ctx: &Ctx, period_ns: u64, n: u64, raise_cpu: usize, wake_cpu: usize) -> Result<Trial> {
    let efd = eventfd::new().map_err(|e| anyhow!("eventfd: {e}"))?;
    let fd = efd.as_fd();
    let acked = AtomicU64::new(0);
    let ready = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let (acked, ready, done) = (&acked, &ready, &done);
    std::thread::scope(|s| {
        let consumer = s.spawn(move || -> Result<()> {
            let r = (|| {
                rt::enter(Some(WAKE_PRIO), Some(wake_cpu))?;
                ready.store(true, Ordering::Release);
                let mut seen = 0u64;
                while !done.load(Ordering::Acquire) {
                    if let Some(v) = take(fd)? {
                        seen += v;
                        acked.store(seen, Ordering::Release);
                    }
                }
                Ok(())
            })();
            // Unblock a producer waiting for us even on failure.
            ready.store(true, Ordering::Release);
            r
        });
        let producer = s.spawn(move || -> Result<Trial> {
            let r = (|| {
                // A normal (not real-time) thread: it may spin between
                // posts without starving anything.
                rt::enter(None, Some(raise_cpu))?;
                let give_up = monotonic_ns() + PEER_TIMEOUT.as_nanos() as u64;
                while !ready.load(Ordering::Acquire) {
                    if monotonic_ns() > give_up {
                        bail!("the consumer did not start");
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                // Let the consumer block first.
                std::thread::sleep(Duration::from_millis(2));
                let mut count = LossCounter::default();
                let start = monotonic_ns();
                let mut next = start;
                let mut last = start;
                for _ in 0..n {
                    if ctx.stopped() {
                        break;
                    }
                    wait_until(next);
                    count.post(acked.load(Ordering::Acquire));
                    last = monotonic_ns();
                    post(fd)?;
                    // A producer that was preempted does not catch up in a
                    // burst: posts stay at least one period apart, as from
                    // a fixed-rate source.
                    next = (next + period_ns).max(last + period_ns);
                }
                Ok(Trial {
                    period_ns,
                    count,
                    elapsed_ns: last - start,
                })
            })();
            done.store(true, Ordering::Release);
            r
        });
        let trial = producer
            .join()
            .map_err(|_| anyhow!("the producer panicked"))?;
        consumer
            .join()
            .map_err(|_| anyhow!("the consumer panicked"))?
            .context("consumer")?;
        trial
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(period_ns: u64, posted: u64, lost: u64) -> Trial {
        Trial {
            period_ns,
            count: LossCounter { posted, lost },
            elapsed_ns: 0,
        }
    }

    #[test]
    fn an_event_posted_before_the_previous_ack_is_lost() {
        let mut c = LossCounter::default();
        c.post(0); // first event: nothing outstanding
        c.post(1); // previous acknowledged
        c.post(1); // previous (2nd) not acknowledged: lost
        c.post(1); // still not: lost
        c.post(4); // all acknowledged
        assert_eq!(c, LossCounter { posted: 5, lost: 2 });
    }

    #[test]
    fn sus_passes_only_on_a_loss_free_run_at_the_target() {
        const TARGET: u64 = 1000;
        // Short clean trials are no confirmation, however many periods.
        let short = [trial(100_000, 10, 0), trial(50_000, 10, 0)];
        assert_eq!(
            sus_verdict(&short, TARGET),
            SusVerdict::Inconclusive(Some(trial(50_000, 10, 0)))
        );
        // A clean run of the target count passes, at its own period.
        let confirmed = [
            trial(100_000, 10, 0),
            trial(50_000, 10, 0),
            trial(25_000, 10, 3),
            trial(50_000, TARGET, 0),
        ];
        assert_eq!(
            sus_verdict(&confirmed, TARGET),
            SusVerdict::Pass(trial(50_000, TARGET, 0))
        );
        // A confirmation that lost: that period is not clean; the longer
        // clean one was only tried briefly: inconclusive, not PASS.
        let lost = [
            trial(100_000, 10, 0),
            trial(50_000, 10, 0),
            trial(50_000, TARGET, 1),
        ];
        assert_eq!(
            sus_verdict(&lost, TARGET),
            SusVerdict::Inconclusive(Some(trial(100_000, 10, 0)))
        );
        // A full clean run at a period that lost elsewhere does not pass.
        let mixed = [trial(50_000, 10, 2), trial(50_000, TARGET, 0)];
        assert_eq!(sus_verdict(&mixed, TARGET), SusVerdict::Fail);
        // Every period lost: FAIL; nothing run: inconclusive.
        let all_lost = [trial(100_000, 10, 1), trial(200_000, 10, 2)];
        assert_eq!(sus_verdict(&all_lost, TARGET), SusVerdict::Fail);
        assert_eq!(sus_verdict(&[], TARGET), SusVerdict::Inconclusive(None));
    }

    #[test]
    fn the_achieved_period_is_measured_not_requested() {
        let t = Trial {
            period_ns: 100_000,
            count: LossCounter {
                posted: 11,
                lost: 0,
            },
            elapsed_ns: 1_220_000,
        };
        assert_eq!(t.achieved_ns(), Some(122_000.0));
        assert_eq!(
            achieved_text(&t),
            "requested period 100 us, achieved 122.00 us (8197 events/s)"
        );
        assert_eq!(trial(100_000, 1, 0).achieved_ns(), None);
    }

    #[test]
    fn lowest_clean_ignores_periods_that_ever_lost() {
        let t = [
            trial(100_000, 10, 0),
            trial(50_000, 10, 0),
            trial(25_000, 10, 3),
            trial(50_000, 1000, 1),
        ];
        assert_eq!(lowest_clean(&t), Some(100_000));
        assert_eq!(lowest_clean(&t[..2]), Some(50_000));
        assert_eq!(lowest_clean(&[trial(100_000, 10, 1)]), None);
        assert_eq!(lowest_clean(&[trial(100_000, 0, 0)]), None);
    }

    #[test]
    fn search_halves_until_loss_and_doubles_when_the_start_loses() {
        assert_eq!(next_period(&[]), Some(100_000));
        assert_eq!(next_period(&[trial(100_000, 5, 0)]), Some(50_000));
        assert_eq!(
            next_period(&[trial(100_000, 5, 0), trial(50_000, 5, 2)]),
            None
        );
        assert_eq!(next_period(&[trial(100_000, 5, 2)]), Some(200_000));
        assert_eq!(next_period(&[trial(MAX_PERIOD_NS, 5, 2)]), None);
        // A failed confirmation with no clean period left: search upwards
        // from the longest period tried.
        assert_eq!(
            next_period(&[
                trial(100_000, 5, 2),
                trial(200_000, 5, 0),
                trial(200_000, 500, 1)
            ]),
            Some(400_000)
        );
        // A failed confirmation with a longer clean period: settled (that
        // one is confirmed next).
        let t = [
            trial(100_000, 5, 1),
            trial(200_000, 5, 0),
            trial(400_000, 5, 0),
            trial(200_000, 500, 1),
        ];
        assert_eq!(next_period(&t), None);
        assert_eq!(lowest_clean(&t), Some(400_000));
        // ... and with none: search upwards again.
        let t = [
            trial(100_000, 5, 0),
            trial(50_000, 5, 1),
            trial(100_000, 500, 1),
        ];
        assert_eq!(lowest_clean(&t), None);
        assert_eq!(next_period(&t), Some(200_000));
        let mut t = vec![];
        let mut steps = 0;
        while let Some(p) = next_period(&t) {
            t.push(trial(p, 5, 0));
            steps += 1;
            assert!(steps < 64, "the search must end");
        }
        assert!(t.last().unwrap().period_ns >= MIN_PERIOD_NS);
    }
}
