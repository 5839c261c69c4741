//! The RFC 2544 throughput search: the highest offered rate at which a
//! trial loses not a single frame, found by binary search.
//!
//! [`search`] is generic over the trial (a closure from an offered rate to
//! what was sent and lost), so it runs the same on the forwarder and on a
//! model in the tests. The search:
//! 1. tries the upper bound (the line rate, or a little above the
//!    forwarder's flat-out capacity, see [`bounds`]); zero loss there ends
//!    the search at once;
//! 2. tries the lower bound; loss there ends it with rate 0 and the reason;
//! 3. halves the bracket (highest rate passed, lowest rate failed) until it
//!    is no wider than `resolution` times the rate passed, or the trials
//!    run out;
//! 4. repeats the trial at the rate found, to confirm it; a failed
//!    confirmation makes that rate the new failure and the search goes on
//!    below it.

/// One trial's outcome.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Trial {
    /// Offered rate, packets per second (per port).
    pub rate: f64,
    /// Packets offered.
    pub sent: u64,
    /// Packets lost (any cause).
    pub lost: u64,
    /// Packets it may lose and still pass: 0, RFC 2544's zero loss,
    /// unless a loss tolerance is asked for ([`Trial::with_tolerance`]).
    pub allowed: u64,
}

impl Trial {
    /// Whether no more packets were lost than allowed (none, by default).
    pub fn passed(&self) -> bool {
        self.lost <= self.allowed
    }

    /// The same trial, allowed to lose `fraction` of what was sent (as
    /// FD.io CSIT's partial drop rate does; 0 keeps RFC 2544's zero loss).
    pub fn with_tolerance(mut self, fraction: f64) -> Trial {
        self.allowed = (self.sent as f64 * fraction.max(0.0)).floor() as u64;
        self
    }
}

/// How the search is bounded.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct SearchParams {
    /// Lowest rate tried, pps (> 0).
    pub lo: f64,
    /// Highest rate tried, pps (>= lo).
    pub hi: f64,
    /// Stop when the bracket is no wider than this fraction of the rate
    /// found (0.005: 0.5%).
    pub resolution: f64,
    /// At most this many trials in all, confirmations included.
    pub max_trials: usize,
}

impl SearchParams {
    /// Bounds `lo..=hi` with a resolution of `resolution` and a trial
    /// budget large enough for it (bisection plus bounds and a few
    /// confirmations).
    pub fn new(lo: f64, hi: f64, resolution: f64) -> SearchParams {
        let steps = ((hi / lo.max(f64::MIN_POSITIVE)).max(2.0) / resolution)
            .log2()
            .ceil()
            .max(1.0) as usize;
        SearchParams {
            lo,
            hi,
            resolution,
            max_trials: steps + 6,
        }
    }
}

/// What the search found.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SearchResult {
    /// The zero-loss throughput, pps (0 if even `lo` lost frames).
    pub rate: f64,
    /// The lowest rate that lost frames, if one was seen (the true
    /// zero-loss rate lies between `rate` and this).
    pub failed_at: Option<f64>,
    /// Every trial in order, the confirmation last.
    pub trials: Vec<Trial>,
    /// The resolution asked for (fraction of the rate).
    pub resolution: f64,
    /// Whether the bracket closed to the resolution (false: out of
    /// trials, or ended at a bound).
    pub converged: bool,
    /// Why the search ended where it did, when not by converging.
    pub note: Option<String>,
}

impl SearchResult {
    /// Number of trials run.
    pub fn trial_count(&self) -> usize {
        self.trials.len()
    }
}

/// Search bounds: `hi` is the line rate when there is one and the
/// forwarder's flat-out capacity (`probe`, pps) is above it, else 10%
/// above the probe (a zero-loss rate is below what the forwarder does
/// flat out, but a probe is noisy), never above the line rate; `lo` is
/// `hi / 1000`.
pub fn bounds(line_pps: f64, probe: Option<f64>) -> (f64, f64) {
    let hi = match probe {
        Some(p) if p.is_finite() && p > 0.0 => (p * 1.1).min(line_pps),
        _ => line_pps,
    };
    (hi / 1000.0, hi)
}

/// The bracket while searching.
struct Bracket {
    pass: f64,
    fail: f64,
}

/// Runs the search (see the module's documentation); `trial` runs one
/// trial at an offered rate.
pub fn search(p: SearchParams, mut trial: impl FnMut(f64) -> Trial) -> SearchResult {
    let mut r = SearchResult {
        rate: 0.0,
        failed_at: None,
        trials: Vec::new(),
        resolution: p.resolution,
        converged: false,
        note: None,
    };
    let mut run = |r: &mut SearchResult, rate: f64| {
        let t = trial(rate);
        r.trials.push(t);
        t.passed()
    };
    if run(&mut r, p.hi) {
        r.rate = p.hi;
        r.note = Some("no loss at the upper bound: the rate is capped there".into());
        return r;
    }
    r.failed_at = Some(p.hi);
    if p.lo >= p.hi || !run(&mut r, p.lo) {
        r.failed_at = Some(p.lo.min(p.hi));
        r.note = Some(format!(
            "frames lost even at the lowest rate, {:.0} pps",
            p.lo
        ));
        return r;
    }
    let mut b = Bracket {
        pass: p.lo,
        fail: p.hi,
    };
    loop {
        bisect(&p, &mut b, &mut r, &mut run);
        if r.trials.len() >= p.max_trials {
            r.note = Some(format!(
                "out of trials ({}) before confirming",
                p.max_trials
            ));
            break;
        }
        if run(&mut r, b.pass) {
            r.converged = closed(&p, &b);
            if !r.converged {
                r.note = Some(format!("out of trials ({})", p.max_trials));
            }
            break;
        }
        // The rate found did not hold: it is a failure now, and the next
        // lower rate that passed is the floor again.
        b.fail = b.pass;
        match highest_pass_below(&r.trials, b.fail) {
            Some(pass) => b.pass = pass,
            None => {
                r.failed_at = Some(b.fail);
                r.note = Some(format!(
                    "frames lost at the lowest rate, {:.0} pps, when repeated",
                    p.lo
                ));
                return r;
            }
        }
    }
    r.rate = b.pass;
    r.failed_at = Some(b.fail);
    r
}

/// [`search`] with a trial that can fail: the first error ends the search
/// (later trials are not run) and is returned.
pub fn try_search<E>(
    p: SearchParams,
    mut trial: impl FnMut(f64) -> Result<Trial, E>,
) -> Result<SearchResult, E> {
    let mut err = None;
    let failed = |rate| Trial {
        rate,
        sent: 0,
        lost: 1,
        allowed: 0,
    };
    let r = search(p, |rate| {
        if err.is_some() {
            return failed(rate);
        }
        trial(rate).unwrap_or_else(|e| {
            err = Some(e);
            failed(rate)
        })
    });
    err.map_or(Ok(r), Err)
}

/// Most times [`try_search_raising`] raises the upper bound.
pub const MAX_RAISES: usize = 4;

/// [`try_search`], but when every trial passes at the upper bound (a
/// probe that underestimated the forwarder), the bound is doubled, up to
/// `ceiling` (the line rate) and at most [`MAX_RAISES`] times, and the
/// search runs again: a low probe does not cap the result. Every trial
/// run is in the result, in order.
pub fn try_search_raising<E>(
    mut p: SearchParams,
    ceiling: f64,
    mut trial: impl FnMut(f64) -> Result<Trial, E>,
) -> Result<SearchResult, E> {
    let mut earlier = Vec::new();
    let mut raises = 0;
    loop {
        let mut r = try_search(p, &mut trial)?;
        let capped = r.rate >= p.hi && r.trials.len() == 1;
        if !capped || p.hi >= ceiling || raises == MAX_RAISES {
            earlier.append(&mut r.trials);
            r.trials = earlier;
            return Ok(r);
        }
        earlier.append(&mut r.trials);
        raises += 1;
        // From the same floor: a repeat at the old bound may lose frames
        // (it was one trial), and then the search must go below it.
        p = SearchParams::new(p.lo, (p.hi * 2.0).min(ceiling), p.resolution);
    }
}

/// Whether the bracket is no wider than the resolution (relative to the
/// rate passed; 1 pps at least).
fn closed(p: &SearchParams, b: &Bracket) -> bool {
    b.fail - b.pass <= (p.resolution * b.pass).max(1.0)
}

/// Halves the bracket until it is closed or the budget (keeping one
/// trial for the confirmation) is spent.
fn bisect<F: FnMut(&mut SearchResult, f64) -> bool>(
    p: &SearchParams,
    b: &mut Bracket,
    r: &mut SearchResult,
    run: &mut F,
) {
    while !closed(p, b) && r.trials.len() + 1 < p.max_trials {
        let mid = (b.pass + b.fail) / 2.0;
        if run(r, mid) {
            b.pass = mid;
        } else {
            b.fail = mid;
        }
    }
}

/// The highest rate below `limit` whose trial passed.
fn highest_pass_below(trials: &[Trial], limit: f64) -> Option<f64> {
    trials
        .iter()
        .filter(|t| t.passed() && t.rate < limit)
        .map(|t| t.rate)
        .fold(None, |m, x| Some(m.map_or(x, |m: f64| m.max(x))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::smp::ports::{Offered, RxPort};

    /// A model forwarder: loses frames iff the rate is above `c`.
    fn model(c: f64) -> impl FnMut(f64) -> Trial {
        move |rate| Trial {
            rate,
            sent: rate as u64,
            lost: u64::from(rate > c),
            allowed: 0,
        }
    }

    #[test]
    fn converges_on_a_model_of_known_capacity() {
        for c in [1_000.0, 167_280.0, 323_429.0, 9_999_999.0] {
            let p = SearchParams::new(100.0, 20e6, 0.005);
            let r = search(p, model(c));
            assert!(r.converged, "{c}: {r:?}");
            assert!(r.rate <= c && c - r.rate <= 0.005 * c, "{c}: {}", r.rate);
            assert!(r.failed_at.unwrap() > c);
            assert_eq!(r.trials.last().unwrap().rate, r.rate, "confirmed last");
            assert!(r.trial_count() <= p.max_trials);
        }
    }

    #[test]
    fn nothing_passes_at_the_lowest_rate() {
        let r = search(SearchParams::new(10.0, 1e6, 0.01), model(5.0));
        assert_eq!(r.rate, 0.0);
        assert_eq!(r.trial_count(), 2);
        assert!(r.note.unwrap().contains("even at the lowest rate"));
    }

    #[test]
    fn everything_passes_at_the_line_rate() {
        let line = crate::suites::smp::ports::line_rate_pps(Some(1_000_000_000), 1518);
        let (lo, hi) = bounds(line, Some(5e6));
        assert_eq!(hi, line, "the line rate caps the probe");
        let r = search(SearchParams::new(lo, hi, 0.01), model(1e9));
        assert_eq!((r.rate, r.trial_count()), (line, 1));
        assert!(!r.converged && r.note.unwrap().contains("upper bound"));
        let (_, hi) = bounds(f64::INFINITY, Some(1e6));
        assert!((hi - 1.1e6).abs() < 1e-6);
    }

    #[test]
    fn a_failed_confirmation_searches_lower() {
        // Passes up to 1000, except that the first trial at or above 990
        // that passes is followed by one that fails (a flaky rate).
        let mut flaked = None;
        let mut calls = Vec::new();
        let r = search(SearchParams::new(10.0, 10_000.0, 0.01), |rate| {
            calls.push(rate);
            let seen_before = calls.iter().filter(|&&x| x == rate).count() > 1;
            let flaky = rate > 900.0 && seen_before && flaked.is_none();
            if flaky {
                flaked = Some(rate);
            }
            Trial {
                rate,
                sent: 1,
                lost: u64::from(rate > 1000.0 || flaky),
                allowed: 0,
            }
        });
        let flaked = flaked.expect("the confirmation failed once");
        assert!(r.rate < flaked && r.rate > 500.0, "{r:?}");
        assert_eq!(r.failed_at, Some(flaked));
        assert!(r.trials.last().unwrap().passed());
        assert_eq!(r.trials.last().unwrap().rate, r.rate);
    }

    #[test]
    fn stops_when_out_of_trials() {
        let p = SearchParams {
            max_trials: 4,
            ..SearchParams::new(1.0, 1e6, 0.001)
        };
        let r = search(p, model(12_345.0));
        assert!(r.trial_count() <= 4, "{}", r.trial_count());
        assert!(!r.converged && r.note.is_some());
        assert!(r.rate <= 12_345.0);
    }

    #[test]
    fn a_failing_trial_ends_the_search() {
        let mut calls = 0;
        let r = try_search(SearchParams::new(1.0, 1e6, 0.01), |rate| {
            calls += 1;
            if calls == 3 {
                Err("no CPU")
            } else {
                Ok(model(500.0)(rate))
            }
        });
        assert_eq!(r, Err("no CPU"));
        assert_eq!(calls, 3, "no trial after the error");
        let ok = try_search::<()>(SearchParams::new(1.0, 1e6, 0.01), |rate| {
            Ok(model(500.0)(rate))
        });
        assert!(ok.unwrap().converged);
    }

    /// A deterministic forwarder: one worker that takes `service_ns` per
    /// packet from a receive port, in virtual time. Its capacity is
    /// 1e9 / service_ns pps; the ring absorbs ring / trial more.
    fn simulated_trial(service_ns: u64, ring: usize, trial_ns: u64) -> impl FnMut(f64) -> Trial {
        move |rate| {
            let mut rx = RxPort::new(
                0,
                ring,
                8,
                Offered::Rate(rate),
                trial_ns,
                |_, _: &mut [u8]| {},
            );
            let mut now = 0;
            while !rx.finished(now) {
                rx.poll(now);
                if rx.recv().is_some() {
                    now += service_ns;
                } else {
                    // Idle until the next arrival is due.
                    let next = rx.counters().generated + 1;
                    now = ((next as f64 * 1e9 / rate).ceil() as u64).max(now + 1);
                }
            }
            let c = rx.counters();
            Trial {
                rate,
                sent: c.generated,
                lost: c.rx_dropped,
                allowed: 0,
            }
        }
    }

    #[test]
    fn converges_on_a_simulated_forwarder_through_a_real_ring() {
        // 1 us per packet: 1 Mpps. A 0.1 s trial with a 64-frame ring
        // lets at most 640 pps (0.064%) more through.
        let capacity = 1e6;
        let p = SearchParams::new(1e3, 4e6, 0.005);
        let r = search(p, simulated_trial(1000, 64, 100_000_000));
        assert!(r.converged, "{r:?}");
        assert!(r.rate <= capacity * 1.001, "{}", r.rate);
        assert!(capacity - r.rate <= 0.005 * capacity, "{}", r.rate);
        assert!(r.trials.iter().any(|t| t.sent > 0 && t.lost > 0));
    }

    #[test]
    fn a_low_upper_bound_is_raised_until_loss_is_seen() {
        // Capacity 10,000; the bound starts at 1,000 and doubles.
        let r = try_search_raising::<()>(
            SearchParams::new(1.0, 1_000.0, 0.01),
            f64::INFINITY,
            |rate| Ok(model(10_000.0)(rate)),
        )
        .unwrap();
        assert!(r.rate > 9_800.0 && r.rate <= 10_000.0, "{r:?}");
        assert_eq!(r.trials[0].rate, 1_000.0);
        assert!(r.trials.iter().any(|t| t.rate == 8_000.0 && t.passed()));
        // A ceiling caps it, and the note says so.
        let r = try_search_raising::<()>(SearchParams::new(1.0, 1_000.0, 0.01), 3_000.0, |rate| {
            Ok(model(10_000.0)(rate))
        })
        .unwrap();
        assert_eq!(r.rate, 3_000.0);
        assert!(r.note.is_some());
        // Raised at most MAX_RAISES times.
        let r =
            try_search_raising::<()>(SearchParams::new(1.0, 1.0, 0.01), f64::INFINITY, |rate| {
                Ok(model(1e12)(rate))
            })
            .unwrap();
        assert_eq!(r.trials.len(), MAX_RAISES + 1);
    }

    #[test]
    fn a_loss_tolerance_passes_small_losses_only() {
        let t = Trial {
            rate: 1.0,
            sent: 10_000,
            lost: 50,
            allowed: 0,
        };
        assert!(!t.passed(), "RFC 2544: any loss fails");
        assert!(t.with_tolerance(0.005).passed(), "0.5% of 10,000 is 50");
        assert!(!t.with_tolerance(0.004).passed());
    }
}
