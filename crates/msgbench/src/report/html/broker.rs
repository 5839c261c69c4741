//! Broker: for each number of clients, the p50 latency of
//! `GetInteger(numInts)` against numInts, one line per run and
//! arrangement (`direct/uds`, `broker/uds`, `dbus-daemon/libdbus`, ...); a
//! table of the rows next to the D-Bus study's figure; the D-Bus libraries
//! side by side; each run's kept answers (the study's question answered
//! per library and the goals judged) first. The rows are read typed, as
//! the suite wrote them (`suites::broker::BrokerRow`).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::chart::{self, Series, XyPlot};
use super::dots::{dots, DotPlot};
use super::{
    answers, chart_html, of_suite, para, series_label, table, typed, verdicts, Input, Section,
    Typed,
};
use crate::suites::broker::dbus::DbusLib;
use crate::suites::broker::{BrokerRow, Via};

/// Where the study's figures come from, as shown under the tables.
pub const STUDY_SOURCE: &str = "Study column: the D-Bus study's figure for the same case, per call or round trip (libdbus and dbus-daemon, D-Bus 1.2.4, on QNX 6.4 on a BeagleBoard, OMAP3530; docs/methodology.md, \"The D-Bus broker study\"). CPU per call: every process's CPU clock over the calls (client, middle = the broker or daemon, service), divided by the calls.";

/// A run's rows, read as the suite wrote them.
type BrokerRun<'a> = Typed<'a, BrokerRow>;

impl BrokerRun<'_> {
    /// The rows with `clients` clients.
    fn of(&self, clients: usize) -> impl Iterator<Item = &BrokerRow> {
        self.rows.iter().filter(move |r| r.clients == clients)
    }
}

/// Where a row sorts among its size's: the arrangements in the study's
/// order (`Via::ALL`), the D-Bus libraries in report order within each.
type Rank = (Via, Option<DbusLib>);

fn rank(r: &BrokerRow) -> Rank {
    (r.via, r.dbus_lib)
}

/// Nanoseconds as `850ns`, `12.3us`, `4.56ms`; empty when absent.
fn ns(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 1e6 => format!("{:.2}ms", v / 1e6),
        Some(v) if v >= 1e3 => format!("{:.1}us", v / 1e3),
        Some(v) => format!("{v:.0}ns"),
        None => String::new(),
    }
}

/// `1.23M`, `45.6k`, `789`; empty when absent.
fn rate(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 1e6 => format!("{:.2}M", v / 1e6),
        Some(v) if v >= 1e3 => format!("{:.1}k", v / 1e3),
        Some(v) => format!("{v:.0}"),
        None => String::new(),
    }
}

/// The broker section, or `None` without broker rows.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let inputs = of_suite(inputs, "broker");
    let runs: Vec<BrokerRun> = typed(&inputs)?;
    let groups: BTreeSet<usize> = runs
        .iter()
        .flat_map(|r| r.rows.iter().map(|r| r.clients))
        .collect();
    if groups.is_empty() {
        return Ok(None);
    }
    let answers: Vec<(&str, Vec<String>)> = inputs
        .iter()
        .map(|i| (i.label.as_str(), answers::kept(&i.run)))
        .collect();
    let mut html = verdicts(&answers);
    for &c in &groups {
        html.push_str(&format!("<h3>{c} client(s)</h3>\n"));
        let xy = plot(&runs, c);
        let drawn = match as_bars(&xy) {
            Some(bars) => dots(&bars)?,
            None => chart::xy(&xy)?,
        };
        if let Some(chart) = drawn {
            html.push_str(&chart_html(&chart));
        }
        html.push_str(&rows_table(&runs, c));
        html.push_str(&libraries_table(&runs, c));
    }
    html.push_str(&para(STUDY_SOURCE));
    Ok(Some(Section {
        id: "broker",
        title: "Broker overhead (D-Bus study)",
        html,
    }))
}

/// p50 (microseconds) against numInts for `clients`: one line per run
/// and arrangement.
fn plot(runs: &[BrokerRun], clients: usize) -> XyPlot {
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    for run in runs {
        let mut lines: BTreeMap<(Rank, String), Vec<(f64, f64)>> = BTreeMap::new();
        for r in run.of(clients).filter(|r| r.measured()) {
            lines
                .entry((rank(r), r.label()))
                .or_default()
                .push((f64::from(r.ints), r.latency.p50_ns / 1e3));
        }
        for ((_, label), mut points) in lines {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            series.push(Series::data(
                series_label(overlaid, run.label, &label),
                points,
                series.len(),
            ));
        }
    }
    XyPlot {
        title: format!("Broker, {clients} client(s): p50 latency per call"),
        x_desc: "numInts (log)".into(),
        y_desc: "p50, us".into(),
        x_log: true,
        y_log: false,
        series,
        small: false,
    }
}

/// `p` as a bar chart when all its data lie at one x (one numInts): a
/// line chart would stack every arrangement's dot in one column. A bar per
/// series (arrangement, and run when several are overlaid), top to
/// bottom in the series' order, in the series' colour.
fn as_bars(p: &XyPlot) -> Option<DotPlot> {
    let data: Vec<&Series> = p.series.iter().filter(|s| !s.reference).collect();
    let xs: BTreeSet<u64> = data
        .iter()
        .flat_map(|s| s.points.iter().map(|q| q.0.to_bits()))
        .collect();
    let [x] = xs.into_iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    // The plot's first category is drawn lowest: the first series last.
    let n = data.len();
    let series = data
        .iter()
        .enumerate()
        .map(|(i, s)| Series {
            points: s.points.iter().map(|q| (q.1, (n - 1 - i) as f64)).collect(),
            line: false,
            ..(*s).clone()
        })
        .collect();
    Some(DotPlot {
        title: format!("{} (numInts {})", p.title, f64::from_bits(x)),
        x_desc: p.y_desc.clone(),
        x_log: false,
        categories: data.iter().rev().map(|s| s.label.clone()).collect(),
        series,
        bands: Vec::new(),
        rule: None,
        bars: true,
    })
}

/// The rows of `clients`, every run: latency, calls/s, CPU per call and
/// the study's figure; skipped and failed rows with their reason.
fn rows_table(runs: &[BrokerRun], clients: usize) -> String {
    let mut rows: Vec<((usize, u32, Rank), Vec<String>)> = Vec::new();
    for (n, run) in runs.iter().enumerate() {
        for r in run.of(clients) {
            let mut cells = vec![run.label.to_string(), r.ints.to_string(), r.label()];
            cells.extend(measured_cells(r));
            cells.push(reference(r));
            rows.push(((n, r.ints, rank(r)), cells));
        }
    }
    rows.sort_by_key(|a| a.0);
    let rows: Vec<Vec<String>> = rows.into_iter().map(|r| r.1).collect();
    table(
        &[
            "run",
            "ints",
            "via",
            "p50",
            "p99",
            "p99.9",
            "calls/s",
            "CPU/call",
            "client",
            "middle",
            "service",
            "QNX 6.4 BeagleBoard",
        ],
        &rows,
    )
}

/// Why a row was not measured (`skipped: ...`, `FAILED: ...`), if so.
fn not_measured(r: &BrokerRow) -> Option<String> {
    let given = |s: &Option<String>| s.clone().filter(|s| !s.is_empty());
    if let Some(why) = given(&r.skipped) {
        return Some(format!("skipped: {why}"));
    }
    given(&r.error).map(|why| format!("FAILED: {why}"))
}

/// The eight measured cells: p50, p99, p99.9, calls/s, CPU per call and
/// its three parts; for a row not measured, the reason then empties.
fn measured_cells(r: &BrokerRow) -> Vec<String> {
    if let Some(why) = not_measured(r) {
        let mut cells = vec![why];
        cells.extend(std::iter::repeat_n(String::new(), 7));
        return cells;
    }
    let (l, cpu) = (&r.latency, &r.cpu_ns_per_call);
    let mut cells = vec![
        ns(Some(l.p50_ns)),
        ns(Some(l.p99_ns)),
        ns(Some(l.p999_ns)),
        rate(Some(r.calls_per_s)),
        ns(Some(cpu.total())),
    ];
    cells.extend([cpu.client, cpu.middle, cpu.service].map(|v| ns(Some(v))));
    if !has_middle(r.via) {
        cells[6] = "-".into();
    }
    cells
}

/// False for the arrangements with no process between client and
/// service (their `middle` CPU is 0 by construction, shown as `-`).
fn has_middle(via: Via) -> bool {
    !matches!(via, Via::Direct | Via::DbusP2p)
}

/// The study's figure for the row (`324 us (QNX local socket, 1 KB)`),
/// or "".
fn reference(r: &BrokerRow) -> String {
    match &r.reference {
        None => String::new(),
        Some(q) if q.label.is_empty() => format!("{} us", q.us),
        Some(q) => format!("{} us ({})", q.us, q.label),
    }
}

/// A measured row's p50, ns.
fn p50(r: &BrokerRow) -> Option<f64> {
    not_measured(r).is_none().then_some(r.latency.p50_ns)
}

/// One library's cell of the side-by-side table: the p50, and for the
/// daemons what they add over the library's peer-to-peer call (same run
/// and size), for peer to peer the library's marshalling.
fn library_cell(rows: &[&BrokerRow], via: Via, lib: DbusLib, ints: u32) -> String {
    let find = |v: Via| {
        rows.iter()
            .copied()
            .find(|r| r.via == v && r.dbus_lib == Some(lib) && r.ints == ints)
    };
    let Some(r) = find(via) else {
        return String::new();
    };
    if let Some(why) = not_measured(r) {
        return why;
    }
    let Some(p) = p50(r) else {
        return String::new();
    };
    let extra = match via {
        Via::DbusP2p => r.marshal_ns.map(|m| format!("marshalling {}", ns(Some(m)))),
        _ => find(Via::DbusP2p)
            .and_then(p50)
            .map(|q| format!("daemon {}", ns(Some(p - q)))),
    };
    match extra {
        Some(e) => format!("{} ({e})", ns(Some(p))),
        None => ns(Some(p)),
    }
}

/// The D-Bus arrangements of `clients` with one column per library
/// (p50; the daemon's share; peer to peer, the marshalling), every run;
/// empty when no row names a library.
fn libraries_table(runs: &[BrokerRun], clients: usize) -> String {
    let libs: BTreeSet<DbusLib> = runs
        .iter()
        .flat_map(|run| run.rows.iter().filter_map(|r| r.dbus_lib))
        .collect();
    if libs.is_empty() {
        return String::new();
    }
    let mut out: Vec<Vec<String>> = Vec::new();
    for run in runs {
        let rows: Vec<&BrokerRow> = run.of(clients).filter(|r| r.dbus_lib.is_some()).collect();
        let cases: BTreeSet<(u32, Via)> = rows.iter().map(|r| (r.ints, r.via)).collect();
        for (ints, via) in cases {
            let mut cells = vec![run.label.to_string(), ints.to_string(), via.name().into()];
            cells.extend(libs.iter().map(|&l| library_cell(&rows, via, l, ints)));
            out.push(cells);
        }
    }
    let mut head = vec!["run", "ints", "via"];
    head.extend(libs.iter().map(|l| l.name()));
    format!(
        "<h4>The D-Bus libraries side by side (p50)</h4>\n{}",
        table(&head, &out)
    )
}

#[cfg(test)]
mod bar_tests {
    use super::*;

    fn plot(points: &[(&str, f64, f64)]) -> XyPlot {
        XyPlot {
            title: "Broker, 1 client(s): p50 latency per call".into(),
            x_desc: "numInts (log)".into(),
            y_desc: "p50, us".into(),
            x_log: true,
            y_log: false,
            series: points
                .iter()
                .enumerate()
                .map(|(i, &(l, x, y))| Series::data(l.into(), vec![(x, y)], i))
                .collect(),
            small: false,
        }
    }

    #[test]
    fn one_size_is_drawn_as_bars_and_two_as_lines() {
        let one = plot(&[("direct/uds", 1.0, 9.5), ("broker/uds", 1.0, 23.1)]);
        let bars = as_bars(&one).expect("bars at one numInts");
        assert!(bars.bars && !bars.x_log);
        // Drawn from the bottom up: the first arrangement on top.
        assert_eq!(bars.categories, ["broker/uds", "direct/uds"]);
        assert_eq!(bars.series[0].points, [(9.5, 1.0)]);
        assert_eq!(bars.series[1].points, [(23.1, 0.0)]);
        assert!(bars.title.ends_with("(numInts 1)"), "{}", bars.title);
        let svg = dots(&bars).expect("drawn").expect("a chart").svg;
        assert_eq!(
            svg.matches("stroke-width=\"14\"").count(),
            2,
            "a bar per arrangement: {svg}"
        );
        assert!(svg.contains("broker/uds"), "its label: {svg}");
        let two = plot(&[("direct/uds", 1.0, 9.5), ("direct/uds", 256.0, 11.0)]);
        assert!(as_bars(&two).is_none());
    }
}
