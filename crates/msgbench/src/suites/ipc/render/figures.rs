//! The rows as generic figures (docs/results.md): keyed by transport,
//! API (`in-place`, `copy`), size (bytes) and placement, and the count of
//! idle clients (`idle_clients`) or active clients (`clients`) where the
//! row has one; latency percentiles and mean, throughput, CPU per message
//! and the ratio to the floor; what an idle connection costs; the
//! active clients' aggregate rate, percentiles and fairness. Rows without
//! figures (not `ok`) give none, nor do figures a timing mode does not
//! measure.

use super::super::crowd::ActiveRun;
use super::super::row::{Row, Status, Timing};
use super::vs_floor;
use crate::pingpong::floor::FloorReport;
use crate::results::envelope::{Better, Figure};

/// Every figure of `rows`; `vs_floor` only when a floor was measured.
pub fn figures(rows: &[Row], floor: Option<&FloorReport>) -> Vec<Figure> {
    rows.iter().flat_map(|r| row_figures(r, floor)).collect()
}

/// A row's key: what it measured, and with how many clients.
fn key(r: &Row) -> Vec<(&'static str, String)> {
    let mut key = vec![
        ("transport", r.transport.clone()),
        ("api", r.api.name().to_string()),
        ("size", r.size.to_string()),
        ("placement", r.placement.name().to_string()),
        ("layout", r.layout.name().to_string()),
    ];
    if let Some(n) = r.idle_clients {
        key.push(("idle_clients", n.to_string()));
    }
    if let Some(n) = r.clients {
        key.push(("clients", n.to_string()));
    }
    key
}

/// The figures of one measured row.
fn row_figures(r: &Row, floor: Option<&FloorReport>) -> Vec<Figure> {
    if r.status != Status::Ok {
        return Vec::new();
    }
    if let Some(a) = &r.active {
        return active_figures(&key(r), a);
    }
    let Some(l) = r.latency.as_ref() else {
        return Vec::new();
    };
    let key = key(r);
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
    let mut out: Vec<Figure> = candidates
        .into_iter()
        .filter(|c| c.1.is_finite())
        .map(|(m, v, unit, better, reps)| Figure::new(&key, &m, v, unit, better).with_repeats(reps))
        .collect();
    if let Some(i) = &r.idle {
        out.push(Figure::new(
            &key,
            "rss_bytes_per_conn",
            i.rss_bytes_per_conn,
            "bytes",
            Better::Lower,
        ));
        out.push(Figure::new(
            &key,
            "fds_per_conn",
            i.fds_per_conn,
            "fds",
            Better::Lower,
        ));
    }
    out
}

/// The figures of an active-clients row.
fn active_figures(key: &[(&str, String)], a: &ActiveRun) -> Vec<Figure> {
    let ns = |m: &str, v: f64| Figure::new(key, m, v, "ns", Better::Lower);
    [
        Figure::new(
            key,
            "aggregate_msgs_per_s",
            a.msgs_per_s,
            "msg/s",
            Better::Higher,
        ),
        ns("client_p50_median_ns", a.p50_median_ns),
        ns("client_p50_worst_ns", a.p50_worst_ns),
        ns("client_p99_median_ns", a.p99_median_ns),
        ns("client_p99_worst_ns", a.p99_worst_ns),
        Figure::new(
            key,
            "slowest_over_fastest",
            a.slowest_over_fastest,
            "ratio",
            Better::Higher,
        ),
        Figure::new(key, "rate_cv", a.rate_cv, "ratio", Better::Lower),
    ]
    .into_iter()
    .filter(|f| f.value.is_finite())
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
            "api=in-place layout=process placement=cross size=64 transport=uds"
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
    fn scale_rows_are_keyed_by_their_count() {
        let mut r = measured(Timing::PerMessage);
        r.idle_clients = Some(1000);
        r.idle = Some(crate::suites::ipc::crowd::IdleCost {
            connections: 1000,
            processes: 1,
            rss_before_bytes: 0,
            rss_after_bytes: 4_096_000,
            fds_before: 10,
            fds_after: 1010,
            rss_bytes_per_conn: 4096.0,
            fds_per_conn: 1.0,
            client_fds_per_conn: 1.0,
            connect_secs: 0.5,
        });
        let f = figures(&[r], None);
        assert!(f.iter().all(|x| x.key["idle_clients"] == "1000"), "{f:?}");
        let rss = f.iter().find(|x| x.metric == "rss_bytes_per_conn").unwrap();
        assert_eq!((rss.value, rss.unit.as_str()), (4096.0, "bytes"));
        assert!(f
            .iter()
            .any(|x| x.metric == "fds_per_conn" && x.value == 1.0));

        let mut a = Row::new("uds", "uds", Api::InPlace, 64, Placement::Same);
        a.clients = Some(2);
        a.active = Some(crate::suites::ipc::clients::summarise(vec![]));
        let f = figures(std::slice::from_ref(&a), None);
        // No client, no rate: nothing finite but the sums.
        assert!(f.iter().all(|x| x.key["clients"] == "2"), "{f:?}");
        assert!(
            f.iter().any(|x| x.metric == "aggregate_msgs_per_s"),
            "{f:?}"
        );
        let failed = a.end(Status::Failed, "client 1: stale");
        assert!(figures(&[failed], None).is_empty());
    }

    #[test]
    fn rows_without_figures_give_none() {
        let r = measured(Timing::PerMessage).end(Status::Failed, "bad byte");
        assert!(figures(&[r], None).is_empty());
    }
}
