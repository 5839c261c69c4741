//! The verdict of `msgbench ipc`: the best transport of each size and
//! placement, by median round trip, among all transports and among the
//! blocking ones (the winners the tables mark).

use serde::Serialize;

use super::row::{Api, Placement, Row, WaitClass};

/// The winners of one (size, placement) group, by median round trip.
#[derive(Debug, Clone, Serialize)]
pub struct GroupSummary {
    /// Message size.
    pub size: usize,
    /// Placement.
    pub placement: Placement,
    /// Lowest p50 of all transports (the row's transport; see
    /// `fastest_api` for its API).
    pub fastest: Option<String>,
    /// Lowest p50 of the blocking transports (polling and hybrid excluded).
    pub fastest_blocking: Option<String>,
    /// The API of the `fastest` row.
    pub fastest_api: Option<Api>,
    /// The API of the `fastest_blocking` row.
    pub fastest_blocking_api: Option<Api>,
}

impl GroupSummary {
    /// Picks the winners among `rows` (all of one size and placement).
    pub fn of(size: usize, placement: Placement, rows: &[Row]) -> GroupSummary {
        let best = |blocking_only: bool| {
            rows.iter()
                .filter(|r| !blocking_only || r.wait == WaitClass::Blocking)
                .filter_map(|r| r.p50_ns().map(|p| (p, r)))
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(_, r)| (r.transport.clone(), r.api))
        };
        let (fastest, fastest_api) = best(false).unzip();
        let (fastest_blocking, fastest_blocking_api) = best(true).unzip();
        GroupSummary {
            size,
            placement,
            fastest,
            fastest_blocking,
            fastest_api,
            fastest_blocking_api,
        }
    }

    /// True when `r` is the fastest row (`blocking`: among blocking ones).
    pub fn is_fastest(&self, r: &Row, blocking: bool) -> bool {
        let (t, a) = if blocking {
            (&self.fastest_blocking, self.fastest_blocking_api)
        } else {
            (&self.fastest, self.fastest_api)
        };
        t.as_deref() == Some(r.transport.as_str()) && a == Some(r.api)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::hist::LatencySummary;
    use crate::suites::ipc::row::{CpuCost, ExactStats, LatencyRun, Status, Timing};

    #[test]
    fn winners_ignore_failed_rows_and_polling_for_blocking() {
        let ok = |t: &str, mech: &str, p50: f64| {
            let mut r = Row::new(t, mech, Api::InPlace, 1, Placement::Same);
            r.latency = Some(LatencyRun {
                timing: Timing::PerMessage,
                rate: None,
                overhead_subtracted_ns: 0.0,
                target: 1,
                samples: 1,
                time_capped: false,
                duration_ns: p50,
                summary: LatencySummary {
                    p50_ns: p50,
                    ..LatencySummary::default()
                },
                exact: ExactStats::default(),
                histogram: Vec::new(),
                cpu: CpuCost::default(),
            });
            r
        };
        let rows = vec![
            ok("uds", "uds", 9000.0),
            ok("shm-spin", "shm-spin", 200.0),
            ok("shm", "shm-hybrid", 500.0),
            ok("shm-block", "shm-block", 3000.0).end(Status::Failed, "bad byte"),
        ];
        let g = GroupSummary::of(1, Placement::Same, &rows);
        assert_eq!(g.fastest.as_deref(), Some("shm-spin"));
        assert_eq!(g.fastest_blocking.as_deref(), Some("uds"));
    }
}
