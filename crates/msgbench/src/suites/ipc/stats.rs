//! Statistics of a latency run's raw samples (clock ticks): the timestamp
//! cost taken out, the HDR summary and buckets, the exact figures the old
//! study printed; and how a row's repeats agree.

use super::row::{ExactStats, RepeatStats};
use crate::measure::clock::Clock;
use crate::measure::hist::{LatencySummary, Recorder};

/// The HDR summary and the histogram's non-empty buckets as (highest
/// value of the bucket in ns, count), through the suite's [`Recorder`].
pub fn histogram(samples: &[u64], clock: &Clock) -> (LatencySummary, Vec<(f64, u64)>) {
    let mut rec = Recorder::new();
    for &t in samples {
        rec.record(t);
    }
    (rec.summary(clock), rec.buckets(clock))
}

/// Repeats whose spread, or a first repeat whose distance from the
/// others' median, exceeds this percentage are warned about.
pub const REPEAT_WARN_PCT: f64 = 10.0;

/// Takes one timestamp's cost (`overhead` ticks) out of each sample, at 0
/// at least: each per-message interval contains about one clock read.
pub fn subtract_overhead(samples: &mut [u64], overhead: u64) {
    for s in samples {
        *s = s.saturating_sub(overhead);
    }
}

/// Median of `v` (the mean of the middle two for an even count); NaN when
/// empty.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// How the repeats' central figures agree; `None` for fewer than two.
pub fn repeat_stats(central_ns: &[f64]) -> Option<RepeatStats> {
    if central_ns.len() < 2 {
        return None;
    }
    let med = median(central_ns);
    let spread = |v: &[f64], m: f64| {
        let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let min = v.iter().copied().fold(f64::INFINITY, f64::min);
        if m > 0.0 {
            (max - min) / m * 100.0
        } else {
            0.0
        }
    };
    let first_outlier = central_ns.len() >= 3 && {
        let others = &central_ns[1..];
        let m = median(others);
        m > 0.0
            && spread(others, m) <= REPEAT_WARN_PCT
            && (central_ns[0] - m).abs() / m * 100.0 > REPEAT_WARN_PCT
    };
    Some(RepeatStats {
        central_ns: central_ns.to_vec(),
        median_ns: med,
        spread_pct: spread(central_ns, med),
        first_outlier,
    })
}

/// Index of the repeat whose figure is the median (the lower middle one
/// for an even count); 0 when empty.
pub fn median_index(central_ns: &[f64]) -> usize {
    let mut idx: Vec<usize> = (0..central_ns.len()).collect();
    idx.sort_by(|&a, &b| central_ns[a].total_cmp(&central_ns[b]));
    idx.get(central_ns.len().saturating_sub(1) / 2)
        .copied()
        .unwrap_or(0)
}

/// Exact min, max, mean and population standard deviation, in ns.
pub fn exact(samples: &[u64], clock: &Clock) -> ExactStats {
    if samples.is_empty() {
        return ExactStats::default();
    }
    let ns: Vec<f64> = samples.iter().map(|&t| clock.ticks_to_ns(t)).collect();
    let n = ns.len() as f64;
    let mean = ns.iter().sum::<f64>() / n;
    let var = ns.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
    ExactStats {
        min_ns: ns.iter().copied().fold(f64::INFINITY, f64::min),
        max_ns: ns.iter().copied().fold(0.0, f64::max),
        mean_ns: mean,
        stddev_ns: var.sqrt(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_hdr_agree_on_simple_samples() {
        let clock = Clock::monotonic(); // 1 tick = 1 ns
        let samples = [100u64, 200, 300, 400, 5_000_000];
        let e = exact(&samples, &clock);
        assert_eq!((e.min_ns, e.max_ns), (100.0, 5_000_000.0));
        assert!((e.mean_ns - 1_000_200.0).abs() < 1e-6, "{e:?}");
        assert!((e.stddev_ns - 1_999_900.0).abs() < 1.0, "{e:?}");
        let (s, buckets) = histogram(&samples, &clock);
        assert_eq!(s.count, 5);
        assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), 5);
        assert_eq!(buckets.len(), 5);
        let top = buckets[4].0;
        assert!((4_995_000.0..=5_005_000.0).contains(&top), "{buckets:?}");
        assert_eq!(exact(&[], &clock).max_ns, 0.0);
    }

    #[test]
    fn overhead_is_subtracted_and_clamped() {
        let mut s = [100u64, 5, 20];
        subtract_overhead(&mut s, 20);
        assert_eq!(s, [80, 0, 0]);
    }

    #[test]
    fn repeats_median_spread_and_first_outlier() {
        assert!(repeat_stats(&[100.0]).is_none());
        let r = repeat_stats(&[100.0, 110.0, 90.0]).unwrap();
        assert_eq!(r.median_ns, 100.0);
        assert!((r.spread_pct - 20.0).abs() < 1e-9);
        assert!(!r.first_outlier);
        let r = repeat_stats(&[150.0, 100.0, 101.0, 99.0]).unwrap();
        assert!(r.first_outlier, "{r:?}");
        assert_eq!(r.median_ns, 100.5);
        // The others disagree: no claim about the first.
        assert!(!repeat_stats(&[150.0, 100.0, 130.0]).unwrap().first_outlier);
        assert_eq!(median_index(&[3.0, 1.0, 2.0]), 2);
        assert_eq!(median_index(&[3.0, 1.0, 2.0, 4.0]), 2);
        assert_eq!(median(&[4.0, 1.0]), 2.5);
    }
}
