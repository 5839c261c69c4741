//! Broker: for each number of clients, the p50 latency of
//! `GetInteger(numInts)` against numInts, one line per run and
//! arrangement (`direct/uds`, `broker/uds`, `dbus-daemon/libdbus`, ...); a
//! table of the rows next to the D-Bus study's figure; the D-Bus libraries
//! side by side; each run's notes (the study's question answered per
//! library and the goals judged) first.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use serde_json::Value;

use super::chart::{self, Series, XyPlot};
use super::dots::{dots, DotPlot};
use super::fields::field;
use super::{
    answers, chart_html, key, of_suite, para, series_label, table, verdicts, Input, Section,
};

/// Where the study's figures come from, as shown under the tables.
pub const STUDY_SOURCE: &str = "Study column: the D-Bus study's figure for the same case, per call or round trip (libdbus and dbus-daemon, D-Bus 1.2.4, on QNX 6.4 on a BeagleBoard, OMAP3530; docs/methodology.md, \"The D-Bus broker study\"). CPU per call: every process's CPU clock over the calls (client, middle = the broker or daemon, service), divided by the calls.";

/// The D-Bus libraries in report order (the study's first), then any
/// other.
const LIBS: [&str; 3] = ["libdbus", "sd-bus", "zbus"];

/// The arrangements in the study's order, then any other.
const ORDER: [&str; 6] = [
    "direct",
    "broker",
    "broker-validate",
    "dbus-p2p",
    "dbus-daemon",
    "dbus-broker",
];

fn rank(via: &str) -> usize {
    ORDER.iter().position(|v| *v == via).unwrap_or(ORDER.len())
}

/// An arrangement's label: `via/transport`, `via/library` (the D-Bus
/// rows), or `via` alone where there is neither (`-` or absent).
fn arrangement(via: &str, transport: &str, lib: &str) -> String {
    let given = |s: &str| !s.is_empty() && s != "-";
    match (given(transport), given(lib)) {
        (true, _) => format!("{via}/{transport}"),
        (false, true) => format!("{via}/{lib}"),
        (false, false) => via.to_string(),
    }
}

/// A row's arrangement label.
fn row_arrangement(row: &Value) -> String {
    arrangement(
        &field(row, "via"),
        &field(row, "transport"),
        &field(row, "dbus_lib"),
    )
}

/// Where a library sorts: report order, then any other.
fn lib_rank(lib: &str) -> usize {
    LIBS.iter().position(|l| *l == lib).unwrap_or(LIBS.len())
}

/// A row's number of clients (a chart and table group), "" when absent.
fn row_clients(row: &Value) -> String {
    field(row, "clients")
}

/// Orders groups by number (then as text): `1` before `10`.
fn clients_order(c: &str) -> (u64, String) {
    (c.parse().unwrap_or(u64::MAX), c.to_string())
}

/// `obj.name` as a number, if it is one.
fn num(obj: &Value, name: &str) -> Option<f64> {
    obj.get(name).and_then(Value::as_f64)
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

/// The broker section, or `None` without broker figures or rows.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let runs = of_suite(inputs, "broker");
    let mut groups: BTreeSet<(u64, String)> = BTreeSet::new();
    for i in &runs {
        groups.extend(
            i.run
                .figures
                .iter()
                .filter(|f| f.metric == "p50_ns")
                .map(|f| clients_order(key(f, "clients"))),
        );
        groups.extend(i.run.rows.iter().map(|r| clients_order(&row_clients(r))));
    }
    if groups.is_empty() {
        return Ok(None);
    }
    let answers: Vec<(&str, Vec<String>)> = runs
        .iter()
        .map(|i| (i.label.as_str(), answers::kept(&i.run)))
        .collect();
    let mut html = verdicts(&answers);
    for (_, c) in &groups {
        html.push_str(&format!(
            "<h3>{} client(s)</h3>\n",
            super::escape(if c.is_empty() { "?" } else { c })
        ));
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
fn plot(runs: &[&Input], clients: &str) -> XyPlot {
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    for input in runs {
        let mut lines: BTreeMap<(usize, String), Vec<(f64, f64)>> = BTreeMap::new();
        for f in input
            .run
            .figures
            .iter()
            .filter(|f| f.metric == "p50_ns" && key(f, "clients") == clients)
        {
            let Ok(n) = key(f, "ints").parse::<f64>() else {
                continue;
            };
            let via = key(f, "via");
            let lib = key(f, "dbus_lib");
            lines
                .entry((
                    rank(via) * 10 + lib_rank(lib),
                    arrangement(via, key(f, "transport"), lib),
                ))
                .or_default()
                .push((n, f.value / 1e3));
        }
        for ((_, label), mut points) in lines {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            series.push(Series::data(
                series_label(overlaid, &input.label, &label),
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
fn rows_table(runs: &[&Input], clients: &str) -> String {
    let mut rows: Vec<((usize, u64, usize), Vec<String>)> = Vec::new();
    for (n, input) in runs.iter().enumerate() {
        for r in input.run.rows.iter().filter(|r| row_clients(r) == clients) {
            let ints = field(r, "ints");
            let order = (
                n,
                ints.parse::<u64>().unwrap_or(u64::MAX),
                rank(&field(r, "via")) * 10 + lib_rank(&field(r, "dbus_lib")),
            );
            let mut cells = vec![input.label.clone(), ints, row_arrangement(r)];
            cells.extend(measured_cells(r));
            cells.push(reference(r));
            rows.push((order, cells));
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
fn not_measured(row: &Value) -> Option<String> {
    let text = |name: &str| {
        row.get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    if let Some(why) = text("skipped") {
        return Some(format!("skipped: {why}"));
    }
    text("error").map(|why| format!("FAILED: {why}"))
}

/// The eight measured cells: p50, p99, p99.9, calls/s, CPU per call and
/// its three parts; for a row not measured, the reason then empties.
fn measured_cells(r: &Value) -> Vec<String> {
    if let Some(why) = not_measured(r) {
        let mut cells = vec![why];
        cells.extend(std::iter::repeat_n(String::new(), 7));
        return cells;
    }
    let l = r.get("latency").unwrap_or(&Value::Null);
    let cpu = r.get("cpu_ns_per_call").unwrap_or(&Value::Null);
    let parts = ["client", "middle", "service"].map(|p| num(cpu, p));
    let total = parts.iter().flatten().copied().reduce(|a, b| a + b);
    let mut cells = vec![
        ns(num(l, "p50_ns")),
        ns(num(l, "p99_ns")),
        ns(num(l, "p999_ns")),
        rate(num(r, "calls_per_s")),
        ns(total),
    ];
    cells.extend(parts.map(ns));
    if !has_middle(&field(r, "via")) {
        cells[6] = "-".into();
    }
    cells
}

/// False for the arrangements with no process between client and
/// service (their `middle` CPU is 0 by construction, shown as `-`).
fn has_middle(via: &str) -> bool {
    !matches!(via, "direct" | "dbus-p2p")
}

/// The study's figure for the row (`324 us (QNX local socket, 1 KB)`),
/// or "".
fn reference(r: &Value) -> String {
    let Some(q) = r.get("reference").filter(|q| q.is_object()) else {
        return String::new();
    };
    let label = q.get("label").and_then(Value::as_str).unwrap_or("");
    match num(q, "us") {
        Some(us) if label.is_empty() => format!("{us} us"),
        Some(us) => format!("{us} us ({label})"),
        None => label.to_string(),
    }
}

/// A measured row's p50, ns.
fn p50(r: &Value) -> Option<f64> {
    if not_measured(r).is_some() {
        return None;
    }
    r.get("latency").and_then(|l| num(l, "p50_ns"))
}

/// One library's cell of the side-by-side table: the p50, and for the
/// daemons what they add over the library's peer-to-peer call (same run
/// and size), for peer to peer the library's marshalling.
fn library_cell(rows: &[&Value], via: &str, lib: &str, ints: &str) -> String {
    let find = |v: &str| {
        rows.iter().copied().find(|r| {
            field(r, "via") == v && field(r, "dbus_lib") == lib && field(r, "ints") == ints
        })
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
        "dbus-p2p" => num(r, "marshal_ns").map(|m| format!("marshalling {}", ns(Some(m)))),
        _ => find("dbus-p2p")
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
fn libraries_table(runs: &[&Input], clients: &str) -> String {
    let mut libs: Vec<String> = Vec::new();
    for input in runs {
        for r in &input.run.rows {
            let l = field(r, "dbus_lib");
            if !l.is_empty() && !libs.contains(&l) {
                libs.push(l);
            }
        }
    }
    if libs.is_empty() {
        return String::new();
    }
    libs.sort_by_key(|l| (lib_rank(l), l.clone()));
    let mut out: Vec<Vec<String>> = Vec::new();
    for input in runs {
        let rows: Vec<&Value> = input
            .run
            .rows
            .iter()
            .filter(|r| row_clients(r) == clients && !field(r, "dbus_lib").is_empty())
            .collect();
        let mut cases: Vec<(u64, usize, String, String)> = rows
            .iter()
            .map(|r| {
                let (ints, via) = (field(r, "ints"), field(r, "via"));
                (ints.parse().unwrap_or(u64::MAX), rank(&via), ints, via)
            })
            .collect();
        cases.sort();
        cases.dedup();
        for (_, _, ints, via) in cases {
            let mut cells = vec![input.label.clone(), ints.clone(), via.clone()];
            cells.extend(libs.iter().map(|l| library_cell(&rows, &via, l, &ints)));
            out.push(cells);
        }
    }
    let mut head = vec!["run", "ints", "via"];
    head.extend(libs.iter().map(String::as_str));
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
