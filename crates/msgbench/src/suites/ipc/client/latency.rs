//! One latency run of a row: closed loop (a timestamp around each call),
//! open loop (`--rate`: each message sent at its intended time) or
//! whole-run timing (the mean only), and the figures of its samples.

use msgpass::transport::ClientConnection;
use msgpass::Connection;

use super::super::echo::Echo;
use super::super::row::{ExactStats, LatencyRun, Timing};
use super::super::stats::{exact, histogram, subtract_overhead};
use super::super::stop::Stop;
use super::config::{check_stop, ticks, ClientConfig, CAP_FACTOR, COUNT_CAP_SECS, MAX_MESSAGES};
use super::cpu_marks::CpuMark;
use crate::measure::clock::Clock;
use crate::measure::hist::LatencySummary;

/// How long a latency run is.
#[derive(Debug, Clone, Copy)]
pub(super) enum Sizing {
    /// This many messages (capped at [`CAP_FACTOR`] rows), at about this
    /// rate (messages per second).
    Count(u64, f64),
    /// Exactly this many messages (`--count`; capped at
    /// [`COUNT_CAP_SECS`]), at about this rate (0: not known).
    Exactly(u64, f64),
    /// As many as fit in one row's time (no warm-up measured a rate).
    Time,
}

/// The bounds of one measured latency loop.
struct Bounds {
    /// Messages to send.
    target: u64,
    /// Clock reading at the start.
    start: u64,
    /// The clock reading at which the loop stops early.
    deadline: u64,
    /// About how many round trips per second (for whole-run timing).
    est_rate: f64,
}

/// One latency run: closed loop (a timestamp around each call), open loop
/// (`--rate`: each message sent at its intended time and timed from it) or
/// whole-run timing (the mean only). Per-message samples have one
/// timestamp's cost subtracted (clamped at 0).
pub(super) fn latency<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    echo: &mut Echo,
    sizing: Sizing,
) -> Result<LatencyRun, Stop> {
    let clock = &cfg.clock;
    let (target, cap_secs, est_rate) = match sizing {
        Sizing::Count(n, r) => (n, cfg.row_secs * CAP_FACTOR, r),
        Sizing::Exactly(n, r) => (n.min(MAX_MESSAGES), COUNT_CAP_SECS, r),
        Sizing::Time => (MAX_MESSAGES, cfg.row_secs, 0.0),
    };
    let per_message = cfg.timing == Timing::PerMessage;
    let mut samples: Vec<u64> = Vec::with_capacity(if per_message { target as usize } else { 0 });
    let cpu0 = CpuMark::before(conn, cfg.server_pid)?;
    let start = clock.now();
    let b = Bounds {
        target,
        start,
        deadline: start.wrapping_add(ticks(clock, cap_secs)),
        est_rate,
    };
    echo.begin_run(b.target, b.deadline);
    let n = match (cfg.timing, cfg.rate) {
        (Timing::Whole, _) => loop_whole(cfg, conn, echo, &b)?,
        (Timing::PerMessage, Some(rate)) => loop_open(cfg, conn, echo, &b, rate, &mut samples)?,
        (Timing::PerMessage, None) => loop_closed(cfg, conn, echo, &b, &mut samples)?,
    };
    echo.end_run();
    let end = clock.now();
    let cpu1 = CpuMark::after(conn, cfg.server_pid)?;
    let duration_ns = clock.ticks_to_ns(end.wrapping_sub(start));
    let (summary, exact, histogram, subtracted) = if per_message {
        per_message_stats(&mut samples, clock)
    } else {
        whole_run_stats(duration_ns, n)
    };
    Ok(LatencyRun {
        target,
        samples: n,
        time_capped: !matches!(sizing, Sizing::Time) && n < target,
        duration_ns,
        timing: cfg.timing,
        rate: cfg.rate,
        overhead_subtracted_ns: subtracted,
        summary,
        exact,
        histogram,
        cpu: cpu0.per_message(&cpu1, n),
    })
}

/// Whole-run timing: no clock around each call; the clock is read about
/// once per millisecond, only for the cap. Returns the round trips done.
fn loop_whole<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    echo: &mut Echo,
    b: &Bounds,
) -> Result<u64, Stop> {
    let mask = ((b.est_rate / 1000.0) as u64)
        .clamp(1, 1024)
        .next_power_of_two()
        - 1;
    let mut n: u64 = 0;
    while n < b.target {
        // The clock is read after every `mask + 1`-th round trip.
        let look = (n + 1) & mask == 0;
        let now = echo.round_untimed(conn, look.then_some(&cfg.clock))?;
        n += 1;
        if let Some(now) = now {
            if now >= b.deadline {
                break;
            }
            check_stop(cfg)?;
        }
    }
    Ok(n)
}

/// Open loop: message k is sent at start + k / `rate` and timed from that
/// intended time. Returns the round trips done.
fn loop_open<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    echo: &mut Echo,
    b: &Bounds,
    rate: f64,
    samples: &mut Vec<u64>,
) -> Result<u64, Stop> {
    let clock = &cfg.clock;
    let period = clock.ticks_per_us() * 1e6 / rate;
    let mut n: u64 = 0;
    while n < b.target {
        let intended = b.start.wrapping_add((n as f64 * period) as u64);
        let t1 = echo.round_at(conn, clock, intended)?;
        samples.push(t1.saturating_sub(intended));
        n += 1;
        if t1 >= b.deadline {
            break;
        }
        check_stop(cfg)?;
    }
    Ok(n)
}

/// Closed loop: a timestamp before and after each call. Returns the round
/// trips done.
fn loop_closed<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    echo: &mut Echo,
    b: &Bounds,
    samples: &mut Vec<u64>,
) -> Result<u64, Stop> {
    let mut n: u64 = 0;
    while n < b.target {
        let (t0, t1) = echo.round(conn, &cfg.clock)?;
        samples.push(t1.wrapping_sub(t0));
        n += 1;
        if t1 >= b.deadline {
            break;
        }
        check_stop(cfg)?;
    }
    Ok(n)
}

/// What a latency run's samples give: the HDR summary, the exact figures,
/// the histogram's buckets, and the cost subtracted from each sample (ns).
type RunStats = (LatencySummary, ExactStats, Vec<(f64, u64)>, f64);

/// The figures of per-message samples (ticks), one timestamp's cost
/// taken out of each first.
fn per_message_stats(samples: &mut [u64], clock: &Clock) -> RunStats {
    let overhead_ticks = (clock.overhead_ns() / 1000.0 * clock.ticks_per_us()).round() as u64;
    subtract_overhead(samples, overhead_ticks);
    let (summary, histogram) = histogram(samples, clock);
    let exact = exact(samples, clock);
    (summary, exact, histogram, clock.ticks_to_ns(overhead_ticks))
}

/// The figures of a run timed as a whole: the mean only, the rest NaN.
fn whole_run_stats(duration_ns: f64, n: u64) -> RunStats {
    let mean = duration_ns / n.max(1) as f64;
    let summary = LatencySummary {
        count: n,
        mean_ns: mean,
        min_ns: f64::NAN,
        stddev_ns: f64::NAN,
        p50_ns: f64::NAN,
        p90_ns: f64::NAN,
        p99_ns: f64::NAN,
        p999_ns: f64::NAN,
        max_ns: f64::NAN,
    };
    let exact = ExactStats {
        min_ns: f64::NAN,
        max_ns: f64::NAN,
        mean_ns: mean,
        stddev_ns: f64::NAN,
    };
    (summary, exact, Vec::new(), 0.0)
}
