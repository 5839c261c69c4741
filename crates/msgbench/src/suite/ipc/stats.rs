//! Statistics of a latency run's raw samples (clock ticks): the HDR
//! summary and buckets, and the exact figures the old study printed.

use hdrhistogram::Histogram;

use super::results::ExactStats;
use crate::measure::clock::Clock;
use crate::measure::hist::{LatencySummary, Recorder};

/// The HDR summary (through the suite's [`Recorder`]) and the histogram's
/// non-empty buckets as (highest value of the bucket in ns, count).
pub fn histogram(samples: &[u64], clock: &Clock) -> (LatencySummary, Vec<(f64, u64)>) {
    let mut rec = Recorder::new();
    // Auto-resizing (Histogram::new starts tiny and grows on record();
    // saturating_record would clamp instead).
    let mut h = Histogram::<u64>::new(3).ok();
    for &t in samples {
        rec.record(t);
        if let Some(h) = h.as_mut() {
            if h.record(t).is_err() {
                h.saturating_record(t);
            }
        }
    }
    let buckets = h.map_or_else(Vec::new, |h| {
        h.iter_recorded()
            .map(|v| {
                let ns = clock.ticks_to_ns(v.value_iterated_to());
                ((ns * 10.0).round() / 10.0, v.count_at_value())
            })
            .collect()
    });
    (rec.summary(clock), buckets)
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
}
