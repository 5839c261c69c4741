//! The CLK tests (docs/methodology.md, "msgbench rtos"): CLK-B-CFG (the tick and the
//! granularity of nanosleep) and CLK-P-DUR (time the kernel takes from a
//! busy CPU at each tick).

use oslayer::clock::Clock;
use std::time::Duration;

use anyhow::Result;

use super::ctx::Ctx;
use super::def::{TestDef, Variant};
use super::row::Group;
use super::row::{Outcome, Reference, Timing, Unit};
use super::rtthread::test_cpu;

/// Priority of the measuring threads when SCHED_FIFO is allowed.
const PRIO: i32 = 50;

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    vec![
        TestDef {
            id: "CLK-B-CFG",
            group: Group::CLK,
            title: "clock tick period and nanosleep granularity (high-resolution timers)",
            needs_fifo: false,
            substitute: None,
            run: cfg,
        },
        TestDef {
            id: "CLK-P-DUR",
            group: Group::CLK,
            title: "time the kernel takes from a busy CPU per tick (busy-loop disturbance)",
            needs_fifo: false,
            substitute: None,
            run: dur,
        },
    ]
}

/// Resolution of `clock`, ns.
fn clock_res_ns(clock: Clock) -> Result<u64> {
    Ok(oslayer::clock::resolution_ns(clock))
}

/// Sleeps `ns` with nanosleep (restarted on EINTR with the remainder).
fn nanosleep_ns(ns: u64) {
    oslayer::clock::sleep(Duration::from_nanos(ns));
}

/// The "adjustable" verdict: sleeps are finer than the tick when a
/// 100 us sleep (its median) ends well before one tick (half of it).
pub fn sleeps_finer_than_tick(sleep_median_ns: f64, tick_ns: f64) -> bool {
    tick_ns > 0.0 && sleep_median_ns.is_finite() && sleep_median_ns < tick_ns / 2.0
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Sleeps of CLK-B-CFG: each requested length (ns) with the actual
/// lengths (us).
type Sleeps = Vec<(u64, Vec<f64>)>;

/// CLK-B-CFG: clock resolutions and the actual length of short sleeps.
fn cfg(ctx: &Ctx) -> Result<Vec<Variant>> {
    let res = clock_res_ns(Clock::Monotonic)?;
    let tick = clock_res_ns(Clock::MonotonicCoarse)?;
    let prio = ctx.fifo_allowed.then_some(PRIO);
    let sleeps = cfg_sleeps(ctx, prio)?;
    let policy = if prio.is_some() {
        "SCHED_FIFO (timer slack 0)"
    } else {
        "SCHED_OTHER (default timer slack applies)"
    };
    let mut out = vec![cfg_verdict(res, tick, &sleeps, policy)];
    if let Some(t) = Timing::of(Unit::Ms, vec![tick as f64 / 1e6]) {
        out.push(
            Variant::new("tick period", Outcome::Timing(t))
                .reference(Reference::avg(1.0, "1 ms"))
                .note("clock_getres(CLOCK_MONOTONIC_COARSE): one jiffy (1/HZ)"),
        );
    }
    for (r, v) in sleeps {
        let Some(t) = Timing::of(Unit::Us, v) else {
            continue;
        };
        out.push(
            Variant::new(format!("nanosleep({} us)", r / 1000), Outcome::Timing(t)).note(format!(
                "actual length of the sleep, timestamps around nanosleep, at {policy}"
            )),
        );
    }
    Ok(out)
}

/// Times nanosleeps of 1 us, 100 us and 1 ms on a thread at `prio`
/// (SCHED_FIFO) or SCHED_OTHER.
fn cfg_sleeps(ctx: &Ctx, prio: Option<i32>) -> Result<Sleeps> {
    let n = ctx.samples(200);
    let clock = ctx.clock;
    let ts = ctx.timestamp_ns;
    let stop = std::sync::Arc::clone(&ctx.stop);
    let h = super::rt::spawn("clk-cfg", prio, None, move || {
        let mut out = Vec::new();
        for req_ns in [1_000u64, 100_000, 1_000_000] {
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let t0 = clock.now();
                nanosleep_ns(req_ns);
                let t1 = clock.now();
                v.push((clock.ticks_to_ns(t1.wrapping_sub(t0)) - ts).max(0.0) / 1e3);
            }
            out.push((req_ns, v));
        }
        Ok(out)
    })?;
    super::rt::join(h)
}

/// The verdict of CLK-B-CFG: a 100 us sleep ends before half a tick,
/// with the resolutions and each sleep's median observed.
fn cfg_verdict(res: u64, tick: u64, sleeps: &Sleeps, policy: &str) -> Variant {
    let hz = if tick > 0 { 1e9 / tick as f64 } else { 0.0 };
    let med100 = sleeps
        .iter()
        .find(|(r, _)| *r == 100_000)
        .map_or(f64::NAN, |(_, v)| median(v) * 1e3);
    let pass = sleeps_finer_than_tick(med100, tick as f64);
    let mut observed = vec![
        format!("clock_getres(CLOCK_MONOTONIC) = {res} ns"),
        format!(
            "CLOCK_MONOTONIC_COARSE resolution (one jiffy) = {:.3} ms, HZ = {hz:.0}",
            tick as f64 / 1e6
        ),
    ];
    for (r, v) in sleeps {
        observed.push(format!(
            "nanosleep({} us) lasts {:.1} us (median)",
            r / 1000,
            median(v)
        ));
    }
    Variant::new(
        "adjustable",
        Outcome::Behaviour {
            pass,
            observed,
            expected: "a 100 us nanosleep ends before half a tick (high-resolution timers)".into(),
        },
    )
    .reference(Reference::text("1 ms, adjustable"))
    .note(format!(
        "the tick from the coarse clock's resolution; sleeps at {policy}"
    ))
}

/// Finds the gaps in a stream of timestamps read back to back: a gap is
/// a step between two consecutive reads longer than the threshold.
#[derive(Debug)]
pub struct GapDetector {
    threshold: u64,
    prev: Option<u64>,
    cap: usize,
    /// Each gap's start (the read before it) and length, in ticks.
    pub gaps: Vec<(u64, u64)>,
}

impl GapDetector {
    /// A detector for steps above `threshold` ticks, keeping at most `cap`
    /// gaps.
    pub fn new(threshold: u64, cap: usize) -> GapDetector {
        GapDetector {
            threshold,
            prev: None,
            cap,
            gaps: Vec::with_capacity(cap),
        }
    }

    /// Feeds the next timestamp; false once the gap store is full.
    #[inline(always)]
    pub fn feed(&mut self, t: u64) -> bool {
        if let Some(p) = self.prev {
            let d = t.wrapping_sub(p);
            if d > self.threshold {
                if self.gaps.len() >= self.cap {
                    return false;
                }
                self.gaps.push((p, d));
            }
        }
        self.prev = Some(t);
        true
    }

    /// Intervals between consecutive gap starts, ticks.
    pub fn periods(&self) -> Vec<u64> {
        self.gaps
            .windows(2)
            .map(|w| w[1].0.wrapping_sub(w[0].0))
            .collect()
    }
}

/// CLK-P-DUR: a pinned busy loop reading the clock, recording every gap.
fn dur(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    // Below the RT throttling budget (950 ms of every second) so the
    // throttle does not show up as a gap.
    let run = if ctx.quick {
        Duration::from_millis(200)
    } else {
        Duration::from_millis(800)
    };
    let clock = ctx.clock;
    let per_ns = clock.ticks_per_us() / 1e3;
    let threshold_ns = 500.0_f64.max(ctx.timestamp_ns * 10.0);
    let threshold = (threshold_ns * per_ns) as u64;
    let span = (run.as_nanos() as f64 * per_ns) as u64;
    let prio = ctx.fifo_allowed.then_some(PRIO);
    let stop = std::sync::Arc::clone(&ctx.stop);
    let h = super::rt::spawn("clk-dur", prio, Some(cpu), move || {
        let mut det = GapDetector::new(threshold, 200_000);
        let start = clock.now();
        let mut i = 0u32;
        loop {
            let t = clock.now();
            if !det.feed(t) || t.wrapping_sub(start) >= span {
                break;
            }
            i = i.wrapping_add(1);
            if i % 4096 == 0 && stop.load(std::sync::atomic::Ordering::Relaxed) {
                break;
            }
        }
        Ok(det)
    })?;
    let det = super::rt::join(h)?;
    let policy = if prio.is_some() {
        format!("SCHED_FIFO {PRIO}")
    } else {
        "SCHED_OTHER (no real-time priority)".into()
    };
    let durs: Vec<f64> = det
        .gaps
        .iter()
        .map(|(_, d)| clock.ticks_to_ns(*d) / 1e3)
        .collect();
    let periods: Vec<f64> = det
        .periods()
        .iter()
        .map(|p| clock.ticks_to_ns(*p) / 1e6)
        .collect();
    let n_gaps = durs.len();
    let note = format!(
        "busy loop reading the {} clock for {} ms on CPU {cpu} at {policy}; a gap is a step above {threshold_ns:.0} ns ({n_gaps} gaps); ticks, other interrupts and host preemption all count",
        clock.name(),
        run.as_millis()
    );
    let mut out = Vec::new();
    out.push(match Timing::of(Unit::Us, durs) {
        Some(t) => Variant::new("gap duration", Outcome::Timing(t))
            .reference(Reference::text("5-11 us"))
            .note(note.clone()),
        None => Variant::new(
            "gap duration",
            Outcome::Skipped {
                reason: format!("no gap above {threshold_ns:.0} ns: the CPU was never interrupted"),
            },
        ),
    });
    if let Some(t) = Timing::of(Unit::Ms, periods) {
        out.push(
            Variant::new("gap period", Outcome::Timing(t)).note(format!(
                "time between consecutive gaps; the tick period (1/HZ = {:.3} ms) if the tick interrupts the busy CPU",
                clock_res_ns(Clock::MonotonicCoarse).unwrap_or(0) as f64 / 1e6
            )),
        );
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detector_finds_gaps_and_their_period() {
        // Reads every 10 ticks, a 300-tick gap every 1000 ticks.
        let mut det = GapDetector::new(100, 100);
        let mut t = 0u64;
        for i in 0..5000u64 {
            t += if i % 100 == 99 { 300 } else { 10 };
            assert!(det.feed(t));
        }
        assert_eq!(det.gaps.len(), 50);
        assert!(det.gaps.iter().all(|(_, d)| *d == 300));
        let p = det.periods();
        assert_eq!(p.len(), 49);
        assert!(p.iter().all(|x| *x == 99 * 10 + 300));
    }

    #[test]
    fn detector_ignores_steps_at_the_threshold_and_stops_when_full() {
        let mut det = GapDetector::new(100, 2);
        assert!(det.feed(0));
        assert!(det.feed(100), "a step equal to the threshold is no gap");
        assert!(det.feed(300));
        assert!(det.feed(500));
        assert!(!det.feed(700), "the third gap does not fit");
        assert_eq!(det.gaps, vec![(100, 200), (300, 200)]);
    }

    #[test]
    fn adjustable_verdict() {
        assert!(sleeps_finer_than_tick(160_000.0, 4_000_000.0));
        assert!(!sleeps_finer_than_tick(4_100_000.0, 4_000_000.0));
        assert!(!sleeps_finer_than_tick(2_000_000.0, 4_000_000.0));
        assert!(!sleeps_finer_than_tick(f64::NAN, 4_000_000.0));
        assert!(!sleeps_finer_than_tick(10.0, 0.0));
    }
}
