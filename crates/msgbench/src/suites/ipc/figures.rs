//! The rows as generic figures (docs/results.md): keyed by transport,
//! API (`in-place`, `copy`), size (bytes) and placement; latency percentiles and mean, throughput,
//! CPU per message and the ratio to the floor. Rows without figures (not
//! `ok`) give none, nor do figures a timing mode does not measure.

use super::results::{Row, Status, Timing};
use super::table::vs_floor;
use crate::pingpong::floor::FloorReport;
use crate::report::envelope::{Better, Figure};

/// Every figure of `rows`; `vs_floor` only when a floor was measured.
pub fn figures(rows: &[Row], floor: Option<&FloorReport>) -> Vec<Figure> {
    rows.iter().flat_map(|r| row_figures(r, floor)).collect()
}

/// The figures of one measured row.
fn row_figures(r: &Row, floor: Option<&FloorReport>) -> Vec<Figure> {
    let Some(l) = r.latency.as_ref().filter(|_| r.status == Status::Ok) else {
        return Vec::new();
    };
    let key = [
        ("transport", r.transport.clone()),
        ("api", r.api.name().to_string()),
        ("size", r.size.to_string()),
        ("placement", r.placement.name().to_string()),
    ];
    let repeats = r
        .repeat_stats
        .as_ref()
        .map_or_else(Vec::new, |s| s.central_ns.clone());
    // The repeats' central figures, and the row's: p50s with per-message
    // timing, means with whole-run timing.
    let central = r.p50_ns().unwrap_or(f64::NAN);
    let (p50, p50_repeats, mean, mean_repeats) = if l.timing == Timing::PerMessage {
        (central, repeats, l.summary.mean_ns, Vec::new())
    } else {
        (f64::NAN, Vec::new(), central, repeats)
    };
    let ns =
        |metric: &str, v: f64, reps: Vec<f64>| (metric.to_string(), v, "ns", Better::Lower, reps);
    let candidates = [
        ns("p50_ns", p50, p50_repeats),
        ns("p99_ns", l.summary.p99_ns, Vec::new()),
        ns("p999_ns", l.summary.p999_ns, Vec::new()),
        ns("mean_ns", mean, mean_repeats),
        (
            "throughput".to_string(),
            r.throughput.as_ref().map_or(f64::NAN, |t| t.msgs_per_s),
            "msg/s",
            Better::Higher,
            Vec::new(),
        ),
        ns("cpu_ns_per_msg", l.cpu.total_ns, Vec::new()),
        (
            "vs_floor".to_string(),
            floor.and_then(|f| vs_floor(r, f)).unwrap_or(f64::NAN),
            "ratio",
            Better::Lower,
            Vec::new(),
        ),
    ];
    candidates
        .into_iter()
        .filter(|c| c.1.is_finite())
        .map(|(m, v, unit, better, reps)| Figure::new(&key, &m, v, unit, better).with_repeats(reps))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::hist::LatencySummary;
    use crate::suites::ipc::{Api, CpuCost, ExactStats, LatencyRun, Placement};

    fn measured(timing: Timing) -> Row {
        let nan = if timing == Timing::Whole {
            f64::NAN
        } else {
            1.0
        };
        let mut r = Row::new("uds", "uds", Api::InPlace, 64, Placement::Cross);
        r.latency = Some(LatencyRun {
            timing,
            rate: None,
            overhead_subtracted_ns: 0.0,
            target: 1,
            samples: 1,
            time_capped: false,
            duration_ns: 1.0,
            summary: LatencySummary {
                p50_ns: 100.0 * nan,
                p99_ns: 200.0 * nan,
                p999_ns: 300.0 * nan,
                mean_ns: 150.0,
                ..LatencySummary::default()
            },
            exact: ExactStats::default(),
            histogram: Vec::new(),
            cpu: CpuCost {
                total_ns: 50.0,
                ..CpuCost::default()
            },
        });
        r
    }

    #[test]
    fn a_measured_row_has_every_figure_but_the_floor() {
        let f = figures(&[measured(Timing::PerMessage)], None);
        let names: Vec<&str> = f.iter().map(|x| x.metric.as_str()).collect();
        assert_eq!(
            names,
            ["p50_ns", "p99_ns", "p999_ns", "mean_ns", "cpu_ns_per_msg"]
        );
        assert_eq!(
            f[0].key_text(),
            "api=in-place placement=cross size=64 transport=uds"
        );
        assert_eq!((f[0].value, f[0].better), (100.0, Better::Lower));
    }

    #[test]
    fn whole_run_timing_has_a_mean_and_no_percentiles() {
        let f = figures(&[measured(Timing::Whole)], None);
        let names: Vec<&str> = f.iter().map(|x| x.metric.as_str()).collect();
        assert_eq!(names, ["mean_ns", "cpu_ns_per_msg"]);
        assert_eq!(f[0].value, 150.0);
    }

    #[test]
    fn rows_without_figures_give_none() {
        let r = measured(Timing::PerMessage).end(Status::Failed, "bad byte");
        assert!(figures(&[r], None).is_empty());
    }
}
