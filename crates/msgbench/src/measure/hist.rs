//! Latency histograms (HDR, in clock ticks) and their summaries in ns.

use hdrhistogram::Histogram;

use super::clock::Clock;

/// Latency recorder in clock ticks (HDR, 3 significant digits,
/// auto-resizing; never panics on a large value).
#[derive(Debug, Clone)]
pub struct Recorder {
    h: Histogram<u64>,
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Recorder {
        let mut h = Histogram::new(3).expect("3 significant digits is a valid precision");
        h.auto(true);
        Recorder { h }
    }

    /// Records one latency, in ticks. Values beyond what the histogram can
    /// ever track are clamped to its maximum instead of being lost.
    #[inline]
    pub fn record(&mut self, ticks: u64) {
        if self.h.record(ticks).is_err() {
            self.h.saturating_record(ticks);
        }
    }

    /// Adds every sample of `other` (e.g. another thread's recorder).
    pub fn merge(&mut self, other: &Recorder) {
        if self.h.add(&other.h).is_err() {
            // Only possible if the other side could not be covered even
            // after resizing: fall back to clamping sample by sample.
            for v in other.h.iter_recorded() {
                for _ in 0..v.count_at_value() {
                    self.record(v.value_iterated_to());
                }
            }
        }
    }

    /// Number of samples recorded.
    pub fn count(&self) -> u64 {
        self.h.len()
    }

    /// The raw distribution: for each non-empty bucket, its highest value
    /// in ns (to 0.1 ns) and its count, in increasing order; buckets that
    /// round to the same ns value are merged, so every sample is counted
    /// once and the bounds strictly increase (the envelope's `histogram`).
    pub fn buckets(&self, clock: &Clock) -> Vec<(f64, u64)> {
        let mut out: Vec<(f64, u64)> = Vec::new();
        for v in self.h.iter_recorded() {
            let ns = clock.ticks_to_ns(v.value_iterated_to());
            push_bucket(&mut out, (ns * 10.0).round() / 10.0, v.count_at_value());
        }
        out
    }

    /// Summary statistics converted to ns with `clock`.
    pub fn summary(&self, clock: &Clock) -> LatencySummary {
        if self.h.is_empty() {
            return LatencySummary::default();
        }
        let ns = |t: u64| clock.ticks_to_ns(t);
        let q = |p: f64| ns(self.h.value_at_quantile(p));
        LatencySummary {
            count: self.h.len(),
            min_ns: ns(self.h.min()),
            mean_ns: clock.ticks_to_ns(1) * self.h.mean(),
            stddev_ns: clock.ticks_to_ns(1) * self.h.stdev(),
            p50_ns: q(0.50),
            p90_ns: q(0.90),
            p99_ns: q(0.99),
            p999_ns: q(0.999),
            max_ns: ns(self.h.max()),
        }
    }
}

/// Appends a bucket, or adds its count to the last one when both round
/// to the same ns value, so that upper bounds stay strictly increasing.
fn push_bucket(out: &mut Vec<(f64, u64)>, upper_ns: f64, count: u64) {
    match out.last_mut() {
        Some(last) if last.0 >= upper_ns => last.1 += count,
        _ => out.push((upper_ns, count)),
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Recorder::new()
    }
}

/// Latency statistics of one measurement, in nanoseconds (values are
/// HDR bucket values, exact to 3 significant digits).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct LatencySummary {
    /// Number of samples.
    pub count: u64,
    /// Smallest sample.
    pub min_ns: f64,
    /// Arithmetic mean.
    pub mean_ns: f64,
    /// Standard deviation.
    pub stddev_ns: f64,
    /// Median.
    pub p50_ns: f64,
    /// 90th percentile.
    pub p90_ns: f64,
    /// 99th percentile.
    pub p99_ns: f64,
    /// 99.9th percentile.
    pub p999_ns: f64,
    /// Largest sample.
    pub max_ns: f64,
}

/// Per-request capture for hot loops. Recording straight into the HDR
/// histogram costs about 3.5 ns per sample in a tight loop but about 35 ns
/// inside a request/reply loop, where its chain of dependent operations
/// sits on the critical path between one reply and the next request. Here
/// a sample is one store into a fixed buffer (1 MiB), folded into the
/// histogram in a tight loop when the buffer fills and at the end.
pub struct SampleBuffer {
    raw: Vec<u32>,
    /// Samples too large for a u32 (over about 1.6 s of TSC ticks).
    big: Vec<u64>,
    hist: Recorder,
}

impl SampleBuffer {
    /// Samples held before folding into the histogram.
    pub const CAPACITY: usize = 1 << 18;

    /// An empty buffer (allocates [`SampleBuffer::CAPACITY`] samples).
    pub fn new() -> SampleBuffer {
        SampleBuffer {
            raw: Vec::with_capacity(Self::CAPACITY),
            big: Vec::new(),
            hist: Recorder::new(),
        }
    }

    /// Records one latency, in ticks.
    #[inline(always)]
    pub fn push(&mut self, ticks: u64) {
        if self.raw.len() == Self::CAPACITY {
            self.fold();
        }
        match u32::try_from(ticks) {
            Ok(t) => self.raw.push(t),
            Err(_) => self.big.push(ticks),
        }
    }

    #[cold]
    #[inline(never)]
    fn fold(&mut self) {
        for &t in &self.raw {
            self.hist.record(t as u64);
        }
        for &t in &self.big {
            self.hist.record(t);
        }
        self.raw.clear();
        self.big.clear();
    }

    /// Folds what is left and returns the histogram.
    pub fn finish(mut self) -> Recorder {
        self.fold();
        self.hist
    }
}

impl Default for SampleBuffer {
    fn default() -> SampleBuffer {
        SampleBuffer::new()
    }
}

/// Human-readable duration with 3 significant digits and a unit: "812ns",
/// "5.12us", "12.3us", "1.20ms", "2.00s". Non-finite values print as "n/a".
pub fn fmt_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "n/a".to_string();
    }
    if ns == 0.0 {
        return "0ns".to_string();
    }
    const UNITS: [&str; 4] = ["ns", "us", "ms", "s"];
    let sign = if ns < 0.0 { "-" } else { "" };
    let mut v = ns.abs();
    let mut u = 0;
    let mut r = round3(v);
    while r >= 1000.0 && u < UNITS.len() - 1 {
        v /= 1000.0;
        u += 1;
        r = round3(v);
    }
    let decimals = if r >= 100.0 {
        0
    } else if r >= 10.0 {
        1
    } else {
        2
    };
    format!("{sign}{r:.decimals$}{}", UNITS[u])
}

/// `v` (> 0) rounded to 3 significant digits.
fn round3(v: f64) -> f64 {
    let scale = 10f64.powi(2 - v.log10().floor() as i32);
    (v * scale).round() / scale
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fmt_ns_three_digits_and_unit() {
        assert_eq!(fmt_ns(812.0), "812ns");
        assert_eq!(fmt_ns(8.4), "8.40ns");
        assert_eq!(fmt_ns(5123.0), "5.12us");
        assert_eq!(fmt_ns(12_345.0), "12.3us");
        assert_eq!(fmt_ns(1_199_999.0), "1.20ms");
        assert_eq!(fmt_ns(2e9), "2.00s");
        assert_eq!(fmt_ns(999.7), "1.00us");
        assert_eq!(fmt_ns(0.0), "0ns");
        assert_eq!(fmt_ns(-1500.0), "-1.50us");
        assert_eq!(fmt_ns(3.6e12), "3600s");
        assert_eq!(fmt_ns(f64::NAN), "n/a");
    }

    #[test]
    fn recorder_summarises_and_merges() {
        let clock = Clock::monotonic(); // 1 tick = 1 ns
        let mut a = Recorder::new();
        for v in 1..=1000 {
            a.record(v);
        }
        let mut b = Recorder::default();
        b.record(u64::MAX); // must not panic
        b.record(0);
        a.merge(&b);
        assert_eq!(a.count(), 1002);
        let s = a.summary(&clock);
        assert_eq!(s.count, 1002);
        assert_eq!(s.min_ns, 0.0);
        assert!((499.0..=502.0).contains(&s.p50_ns), "{s:?}");
        assert!(s.max_ns > 1e18);
        assert_eq!(Recorder::new().summary(&clock), LatencySummary::default());
    }

    #[test]
    fn buckets_count_every_sample_once_in_increasing_order() {
        let clock = Clock::monotonic();
        let mut r = Recorder::new();
        for v in [5, 5, 7, 1000, 1001, 250_000] {
            r.record(v);
        }
        let b = r.buckets(&clock);
        assert_eq!(b.iter().map(|x| x.1).sum::<u64>(), 6, "{b:?}");
        assert!(b.windows(2).all(|w| w[0].0 < w[1].0), "{b:?}");
        assert_eq!(b[0], (5.0, 2));
        assert!(Recorder::new().buckets(&clock).is_empty());
    }

    #[test]
    fn buckets_rounding_alike_are_merged() {
        let mut b = Vec::new();
        push_bucket(&mut b, 1.0, 2);
        push_bucket(&mut b, 1.0, 3);
        push_bucket(&mut b, 1.5, 1);
        assert_eq!(b, vec![(1.0, 5), (1.5, 1)]);
    }
}

#[cfg(test)]
mod buffer_tests {
    use super::*;

    #[test]
    fn buffer_keeps_every_sample_across_folds() {
        let mut b = SampleBuffer::new();
        let n = SampleBuffer::CAPACITY as u64 * 2 + 7;
        for i in 0..n {
            b.push(100 + i % 10);
        }
        b.push(u32::MAX as u64 + 5);
        let r = b.finish();
        assert_eq!(r.count(), n + 1);
    }
}
