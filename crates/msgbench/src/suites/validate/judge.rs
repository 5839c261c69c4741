//! The verdict of a comparison: the ratio of ours to the reference, and
//! whether it falls in the documented tolerance band (docs/methodology.md,
//! "Validation").

use super::row::{Figure, Row, Tolerance, Verdict};

/// Latency averages of the rt-tests tools and cyclictest, which print
/// whole microseconds.
pub const LATENCY: Tolerance = Tolerance {
    low: 0.67,
    high: 1.5,
    slack_us: 1.0,
};

/// perf's pipe round trip (printed to the nanosecond).
pub const ROUND_TRIP: Tolerance = Tolerance {
    low: 0.67,
    high: 1.5,
    slack_us: 0.0,
};

/// Ratio of the averages and whether they agree under `tol`.
pub fn judge(reference: &Figure, ours: &Figure, tol: &Tolerance) -> (f64, Verdict) {
    let ratio = ours.avg_us / reference.avg_us;
    let agree = (tol.low..=tol.high).contains(&ratio)
        || (ours.avg_us - reference.avg_us).abs() <= tol.slack_us;
    (
        ratio,
        if agree {
            Verdict::Agree
        } else {
            Verdict::Disagree
        },
    )
}

/// The run's answer: how many comparisons agree with the reference tool
/// within their tolerance and how many do not, lack the tool or failed
/// (the table's verdict column counted); none for a run without rows.
pub fn verdicts(rows: &[Row]) -> Vec<String> {
    if rows.is_empty() {
        return Vec::new();
    }
    let n = |v: Verdict| rows.iter().filter(|r| r.verdict == v).count();
    vec![format!(
        "{} of {} comparisons agree with the reference tool within their tolerance; \
         {} DISAGREE, {} missing (tool not installed), {} error.",
        n(Verdict::Agree),
        rows.len(),
        n(Verdict::Disagree),
        n(Verdict::Missing),
        n(Verdict::Error)
    )]
}

#[cfg(test)]
mod tests {
    use super::super::row::example;
    use super::*;

    #[test]
    fn the_answer_counts_each_verdict() {
        let rows = [
            example("a", Verdict::Agree, LATENCY, None),
            example("b", Verdict::Disagree, LATENCY, None),
            example("c", Verdict::Missing, LATENCY, Some("not installed")),
            example("d", Verdict::Agree, ROUND_TRIP, None),
        ];
        assert_eq!(
            verdicts(&rows),
            [
                "2 of 4 comparisons agree with the reference tool within their tolerance; \
              1 DISAGREE, 1 missing (tool not installed), 0 error."
            ]
        );
        assert!(verdicts(&[]).is_empty());
    }

    #[test]
    fn ratios_inside_the_band_or_the_slack_agree() {
        let r = Figure::avg(10.0);
        assert_eq!(judge(&r, &Figure::avg(12.0), &ROUND_TRIP).1, Verdict::Agree);
        assert_eq!(judge(&r, &Figure::avg(15.0), &ROUND_TRIP).1, Verdict::Agree);
        assert_eq!(
            judge(&r, &Figure::avg(16.0), &ROUND_TRIP).1,
            Verdict::Disagree
        );
        assert_eq!(
            judge(&r, &Figure::avg(6.0), &ROUND_TRIP).1,
            Verdict::Disagree
        );
        // Whole-microsecond tools: within 1 us agrees whatever the ratio.
        let r = Figure::avg(2.0);
        assert_eq!(judge(&r, &Figure::avg(3.0), &LATENCY).1, Verdict::Agree);
        assert_eq!(judge(&r, &Figure::avg(3.5), &LATENCY).1, Verdict::Disagree);
        assert_eq!(judge(&r, &Figure::avg(3.0), &LATENCY).0, 1.5);
    }
}
