//! The verdict of `msgbench ipc`: the best transport of each size and
//! placement, by median round trip, among all transports and among the
//! blocking ones (the winners the tables mark), and the answers kept in
//! the envelope's `verdicts` for the report to show as they are.

use serde::Serialize;

use super::row::{Api, Layout, Placement, Row, Status, WaitClass};
use crate::measure::hist::fmt_ns;

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

/// The run's answers, one per placement and layout (same CPU first,
/// processes first): which transport had the lowest median round trip at
/// each size (and count of idle clients), in one sentence, then per size
/// the figure and the best blocking transport when another won. Rows with
/// active clients are not contenders (their figures are per client).
pub fn answers(rows: &[Row]) -> Vec<String> {
    let mut out = Vec::new();
    for placement in [Placement::Same, Placement::Cross] {
        for layout in [Layout::Process, Layout::Thread] {
            let mine: Vec<&Row> = rows
                .iter()
                .filter(|r| r.placement == placement && r.layout == layout)
                .filter(|r| r.status == Status::Ok && r.clients.is_none())
                .collect();
            out.extend(answer(placement, layout, &mine));
        }
    }
    out
}

/// The answer of one placement and layout over its measured `rows`.
fn answer(placement: Placement, layout: Layout, rows: &[&Row]) -> Option<String> {
    let mut groups: Vec<(usize, u32)> = rows
        .iter()
        .map(|r| (r.size, r.idle_clients.unwrap_or(0)))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    let mut wins: Vec<(String, String)> = Vec::new();
    let mut clauses = Vec::new();
    for (size, idle) in groups {
        let of: Vec<&Row> = rows
            .iter()
            .copied()
            .filter(|r| r.size == size && r.idle_clients.unwrap_or(0) == idle)
            .collect();
        let at = match idle {
            0 => format!("{size} B"),
            n => format!("{size} B beside {n} idle clients"),
        };
        if let Some((who, clause)) = winners(&of) {
            wins.push((who, at.clone()));
            clauses.push(format!("{at}: {clause}"));
        }
    }
    let headline = headline(&wins)?;
    let layout = super::render::layouts::label(layout);
    let placement = match placement {
        Placement::Same => "Same CPU (client and server pinned to one CPU)",
        Placement::Cross => "Cross CPU (client and server pinned to two CPUs)",
    };
    Some(format!(
        "{placement}, {layout}, lowest p50: {headline}. By size: {}.",
        clauses.join("; ")
    ))
}

/// Who won where: "uds at every size" when one transport won all of
/// several, else "shm-spin at 64 B and 256 B, uds at 16384 B".
fn headline(wins: &[(String, String)]) -> Option<String> {
    let first = &wins.first()?.0;
    if wins.len() > 1 && wins.iter().all(|(w, _)| w == first) {
        return Some(format!("{first} at every size"));
    }
    let mut runs: Vec<(&str, Vec<&str>)> = Vec::new();
    for (who, at) in wins {
        match runs.last_mut() {
            Some((w, ats)) if *w == who.as_str() => ats.push(at),
            _ => runs.push((who, vec![at])),
        }
    }
    let parts: Vec<String> = runs
        .into_iter()
        .map(|(who, ats)| format!("{who} at {}", and_list(&ats)))
        .collect();
    Some(parts.join(", "))
}

/// "a", "a and b", "a, b and c".
fn and_list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// The winner of one table (its name with its API when not in place) and
/// its clause: "shm-spin 812ns (blocking: uds 5.2us)".
fn winners(rows: &[&Row]) -> Option<(String, String)> {
    let best = |blocking: bool| {
        rows.iter()
            .filter(|r| !blocking || r.wait == WaitClass::Blocking)
            .filter_map(|r| r.p50_ns().map(|p| (p, *r)))
            .min_by(|a, b| a.0.total_cmp(&b.0))
    };
    let who = |r: &Row| match r.api {
        Api::InPlace => r.transport.clone(),
        api => format!("{} ({} API)", r.transport, api.name()),
    };
    let (ns, all) = best(false)?;
    let mut s = format!("{} {}", who(all), fmt_ns(ns));
    match best(true) {
        Some((_, b)) if std::ptr::eq(b, all) => s.push_str(" (a blocking transport)"),
        Some((bns, b)) => s.push_str(&format!(" (blocking: {} {})", who(b), fmt_ns(bns))),
        None => {}
    }
    Some((who(all), s))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ipc::row::{LatencyRun, Status};

    #[test]
    fn winners_ignore_failed_rows_and_polling_for_blocking() {
        use WaitClass::{Blocking, Hybrid, Polling};
        let rows = vec![
            measured("uds", Blocking, 1, 9000.0),
            measured("shm-spin", Polling, 1, 200.0),
            measured("shm", Hybrid, 1, 500.0),
            measured("shm-block", Blocking, 1, 3000.0).end(Status::Failed, "bad byte"),
        ];
        let g = GroupSummary::of(1, Placement::Same, &rows);
        assert_eq!(g.fastest.as_deref(), Some("shm-spin"));
        assert_eq!(g.fastest_blocking.as_deref(), Some("uds"));
    }

    fn measured(t: &str, wait: WaitClass, size: usize, p50: f64) -> Row {
        let mut r = Row::new(t, t, Api::InPlace, size, Placement::Same);
        r.wait = wait;
        r.latency = Some(LatencyRun::with_p50(p50, 1));
        r
    }

    #[test]
    fn the_answer_names_one_winner_or_each_sizes_and_keeps_the_figures_after() {
        use WaitClass::{Blocking, Polling};
        let mut rows = vec![
            measured("shm-spin", Polling, 64, 200.0),
            measured("uds", Blocking, 64, 9000.0),
            measured("shm-spin", Polling, 256, 6000.0),
            measured("uds", Blocking, 256, 5000.0),
        ];
        // Rows with active clients, failed rows and threads are not in the
        // processes' answer.
        let mut crowd = measured("pipe", Blocking, 64, 1.0);
        crowd.clients = Some(8);
        rows.push(crowd);
        rows.push(measured("pipe", Blocking, 256, 1.0).end(Status::Failed, "bad byte"));
        let mut thread = measured("pipe", Blocking, 64, 1.0);
        thread.layout = Layout::Thread;
        rows.push(thread);
        let a = answers(&rows);
        assert_eq!(a.len(), 2, "{a:?}");
        assert_eq!(
            a[0],
            "Same CPU (client and server pinned to one CPU), two processes, lowest p50: shm-spin at 64 B, uds at 256 B. \
             By size: 64 B: shm-spin 200ns (blocking: uds 9.00us); 256 B: uds 5.00us (a blocking transport)."
        );
        assert!(a[1].starts_with("Same CPU (client and server pinned to one CPU), two threads of one process, lowest p50: pipe at 64 B."), "{a:?}");
        // One winner everywhere: said once.
        rows[2].latency.as_mut().unwrap().summary.p50_ns = 100.0;
        let a = answers(&rows);
        assert!(
            a[0].contains("lowest p50: shm-spin at every size. By size:"),
            "{a:?}"
        );
        assert!(answers(&[]).is_empty());
    }
}
