//! The layouts side by side: a single-client row's server is a process
//! of its own (`--layout process`, the study's way) or a thread of this
//! one (`thread`). [`split`] gives each layout its own table, and
//! [`side_by_side`] sets each transport's process row against its thread
//! row when a run measured both: what a switch of address space adds.

use super::super::row::{Layout, Row};
use crate::measure::hist::fmt_ns;
use crate::results::table::{Align, Table};

/// How a table's title names a layout.
pub fn label(l: Layout) -> &'static str {
    match l {
        Layout::Process => "two processes",
        Layout::Thread => "two threads of one process",
    }
}

/// The rows of one size and placement, split by (idle clients, layout)
/// in the order they first appear, each keeping its run order.
pub fn split(rows: &[Row]) -> Vec<Vec<Row>> {
    /// A group's key: its count of idle clients and its layout.
    type Key = (Option<u32>, Layout);
    let mut out: Vec<(Key, Vec<Row>)> = Vec::new();
    for r in rows {
        let k = (r.idle_clients, r.layout);
        match out.iter_mut().find(|(key, _)| *key == k) {
            Some((_, g)) => g.push(r.clone()),
            None => out.push((k, vec![r.clone()])),
        }
    }
    out.into_iter().map(|(_, g)| g).collect()
}

/// The columns of the side-by-side table.
const HEAD: [&str; 8] = [
    "Transport",
    "API",
    "Process avg",
    "Thread avg",
    "Process / thread",
    "Process p50",
    "Thread p50",
    "CPU all, process / thread",
];

/// Each transport (and API) measured in both layouts at this size and
/// placement: the process row against the thread row, by average and
/// p50, and the CPU both sides spent; `None` unless some transport has
/// both rows measured.
pub fn side_by_side(rows: &[Row]) -> Option<Table> {
    let plain = |l: Layout| {
        rows.iter()
            .filter(move |r| r.layout == l && r.idle_clients.is_none() && r.clients.is_none())
            .filter(|r| r.latency.is_some() && r.p50_ns().is_some())
    };
    let pairs: Vec<(&Row, &Row)> = plain(Layout::Process)
        .filter_map(|p| {
            plain(Layout::Thread)
                .find(|t| (&t.transport, t.api) == (&p.transport, p.api))
                .map(|t| (p, t))
        })
        .collect();
    let first = pairs.first()?.0;
    let title = format!(
        "{} B, {} CPU: process against thread (the same transport, server in another process or in this one)",
        first.size,
        first.placement.name()
    );
    let mut align = vec![Align::Right; HEAD.len()];
    align[..2].fill(Align::Left);
    let mut t = Table::new(title, &HEAD).aligned(&align);
    let mut ratios: Vec<f64> = Vec::new();
    for (p, th) in &pairs {
        t.row(cells(p, th));
        let (a, b) = (mean(p), mean(th));
        if a > 0.0 && b > 0.0 {
            ratios.push(a / b);
        }
    }
    let repeats = pairs
        .iter()
        .map(|(p, t)| p.repeats.len().min(t.repeats.len()));
    t.notes = vec![summary(&mut ratios, repeats.min().unwrap_or(0))];
    Some(t)
}

/// A row's mean round trip, ns (0 without one).
fn mean(r: &Row) -> f64 {
    r.latency.as_ref().map_or(0.0, |l| l.exact.mean_ns)
}

/// What the ratios say: their median and range, and what could make a
/// process slower than a thread; to be read against the spread of the
/// rows' `repeats` (at least that many each), or of repeats not run.
fn summary(ratios: &mut [f64], repeats: usize) -> String {
    ratios.sort_by(f64::total_cmp);
    let Some((&lo, &hi)) = ratios.first().zip(ratios.last()) else {
        return String::new();
    };
    let median = super::super::stats::median(ratios);
    let verdict = if median > 1.1 {
        "processes slower"
    } else if median < 0.9 {
        "processes faster"
    } else {
        "no difference beyond 10%"
    };
    let spread = match repeats {
        0 | 1 => "Read a single run against its repeats (-r 3).".to_string(),
        n => format!(
            "Each row is the median of {n} interleaved repeats (their spread is in the tables)."
        ),
    };
    format!(
        "  Process / thread by average: median {median:.2}x over {} transports ({lo:.2}x to {hi:.2}x): {verdict}. \
         A switch between two processes\n  also changes address space (page tables, TLB entries not \
         shared); one between two threads does not. {spread}",
        ratios.len()
    )
}

/// One transport's pair of rows.
fn cells(p: &Row, t: &Row) -> Vec<String> {
    let avg = |r: &Row| r.latency.as_ref().map_or(0.0, |l| l.exact.mean_ns);
    let cpu = |r: &Row| r.latency.as_ref().map_or(0.0, |l| l.cpu.total_ns);
    let ratio = if avg(t) > 0.0 {
        format!("{:.2}x", avg(p) / avg(t))
    } else {
        "-".to_string()
    };
    vec![
        p.transport.clone(),
        p.api.label().to_string(),
        fmt_ns(avg(p)),
        fmt_ns(avg(t)),
        ratio,
        fmt_ns(p.p50_ns().unwrap_or(0.0)),
        fmt_ns(t.p50_ns().unwrap_or(0.0)),
        format!("{} / {}", fmt_ns(cpu(p)), fmt_ns(cpu(t))),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ipc::row::{Api, LatencyRun, Placement};

    fn row(t: &str, layout: Layout, mean: f64) -> Row {
        let mut r = Row::new(t, t, Api::InPlace, 64, Placement::Same);
        r.layout = layout;
        r.latency = Some(LatencyRun::with_p50(mean, 10));
        r
    }

    #[test]
    fn the_summary_comes_out_either_way() {
        assert!(summary(&mut [0.8, 0.85], 1).contains("processes faster"));
        assert!(summary(&mut [1.0, 1.05, 0.95], 1).contains("no difference beyond 10%"));
        assert!(summary(&mut [], 1).is_empty());
        assert!(summary(&mut [1.2, 1.3], 1).contains("processes slower"));
        assert!(summary(&mut [1.2], 1).contains("against its repeats (-r 3)"));
        assert!(summary(&mut [1.2], 3).contains("the median of 3 interleaved repeats"));
    }

    #[test]
    fn layouts_split_in_order_and_pair_by_transport() {
        let rows = vec![
            row("uds", Layout::Process, 12_000.0),
            row("uds", Layout::Thread, 8_000.0),
            row("pipe", Layout::Process, 9_000.0),
            row("pipe", Layout::Thread, 9_900.0),
        ];
        let g = split(&rows);
        assert_eq!(g.len(), 2);
        assert!(g[0].iter().all(|r| r.layout == Layout::Process));
        assert_eq!(g[1][1].transport, "pipe");
        let t = side_by_side(&rows).expect("both layouts");
        use crate::results::table::{render, Format, Section};
        let text = render(&[Section::Table(t)], Format::Table);
        // Either way: uds slower as processes, pipe faster.
        assert!(text.contains("1.50x"), "{text}");
        assert!(text.contains("0.91x"), "{text}");
        assert!(text.contains("median 1.20x over 2 transports"), "{text}");
        assert!(text.contains("processes slower"), "{text}");
        assert!(side_by_side(&rows[..1]).is_none());
    }
}
