//! Smp: for each kind of ports and frame size, the zero-loss throughput
//! against workers, one line per run and table variant (the kernel's own
//! forwarding as a flat grey line), the QNX study's figure as grey
//! crosses; a table of the rows next to the study's column; each run's
//! lessons (its `notes`, the suite's judged lessons) first.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use serde_json::Value;

use super::chart::{self, Marker, Series, XyPlot};
use super::fields::field;
use super::{
    answers, chart_html, key, of_suite, para, series_label, table, verdicts, Input, Section,
};

/// Where the study's figures come from, as shown under the charts.
pub const STUDY_SOURCE: &str = "Grey crosses: the QNX study's figure for the same case (QNX 6.2.1, dual-core 600 MHz MIPS, two 1 Gbit/s ports; the study gives packets/s per port, drawn here times the row's input ports). Grey line: the kernel's own IPv4 forwarding in the same run (veth ports). The table gives the study's figure per port, its unit (docs/methodology.md, \"SMP forwarding (RFC 2544)\").";

/// The table variants in the study's order of interest, then any other.
const ORDER: [&str; 5] = ["mutex", "rwlock", "rcu", "per-cpu", "kernel"];

fn rank(forwarder: &str) -> usize {
    ORDER
        .iter()
        .position(|f| *f == forwarder)
        .unwrap_or(ORDER.len())
}

/// A chart or table group: ports, then frame size (numeric order).
type Group = (String, u64, String);

fn group(ports: &str, size: &str) -> Group {
    (
        ports.to_string(),
        size.parse().unwrap_or(u64::MAX),
        size.to_string(),
    )
}

/// A row's forwarder: `mutex`, ..., `kernel` (the name its figures use).
fn forwarder(row: &Value) -> String {
    row.get("forwarder")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// A row's workers: the number, or `-` (the kernel).
fn workers(row: &Value) -> String {
    row.get("workers")
        .and_then(Value::as_u64)
        .map_or("-".into(), |n| n.to_string())
}

fn size(row: &Value) -> String {
    row.get("size")
        .and_then(Value::as_u64)
        .map_or(String::new(), |n| n.to_string())
}

fn num(row: &Value, name: &str) -> Option<f64> {
    row.get(name).and_then(Value::as_f64)
}

/// `12.3M`, `456k`, `789`; empty when absent.
fn si(v: Option<f64>) -> String {
    match v {
        Some(v) if v >= 1e6 => format!("{:.2}M", v / 1e6),
        Some(v) if v >= 1e4 => format!("{:.0}k", v / 1e3),
        Some(v) => format!("{v:.0}"),
        None => String::new(),
    }
}

/// The smp section, or `None` without smp figures or rows.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let runs = of_suite(inputs, "smp");
    let mut groups: BTreeSet<Group> = BTreeSet::new();
    for i in &runs {
        groups.extend(
            i.run
                .figures
                .iter()
                .filter(|f| f.metric == "zero_loss_pps")
                .map(|f| group(key(f, "ports"), key(f, "size"))),
        );
        groups.extend(
            i.run
                .rows
                .iter()
                .map(|r| group(&field(r, "ports"), &size(r))),
        );
    }
    if groups.is_empty() {
        return Ok(None);
    }
    let lessons: Vec<(&str, Vec<String>)> = runs
        .iter()
        .map(|i| (i.label.as_str(), answers::kept(&i.run)))
        .collect();
    let mut html = verdicts(&lessons);
    for g in &groups {
        html.push_str(&format!(
            "<h3>{} ports, {} B frames</h3>\n",
            super::escape(&g.0),
            super::escape(&g.2)
        ));
        if let Some(c) = chart::xy(&plot(&runs, g))? {
            html.push_str(&chart_html(&c));
        }
        html.push_str(&rows_table(&runs, g));
    }
    html.push_str(&para(STUDY_SOURCE));
    Ok(Some(Section {
        id: "smp",
        title: "SMP forwarding",
        html,
    }))
}

/// Zero-loss pps against workers for group `g`: one line per run and
/// table variant, the kernel flat across the workers drawn, the study's
/// figures as crosses.
fn plot(runs: &[&Input], g: &Group) -> XyPlot {
    let (mut series, kernels) = lines(runs, g);
    let xs = || {
        series
            .iter()
            .flat_map(|s: &Series| s.points.iter().map(|p| p.0))
    };
    let (lo, hi) = (
        xs().fold(f64::INFINITY, f64::min),
        xs().fold(f64::NEG_INFINITY, f64::max),
    );
    let (lo, hi) = if lo.is_finite() {
        (lo, hi.max(lo + 1.0))
    } else {
        (1.0, 2.0)
    };
    for (n, (label, pps)) in kernels.into_iter().enumerate() {
        let mut s = Series::reference(label, vec![(lo, pps), (hi, pps)], n);
        s.line = true;
        s.marker = Marker::None;
        series.push(s);
    }
    let study = study_points(runs, g);
    if !study.is_empty() {
        series.push(Series::reference(
            "QNX study (dual-core MIPS, QNX 6.2.1)".into(),
            study,
            0,
        ));
    }
    XyPlot {
        title: format!("SMP, {} ports, {} B: zero-loss throughput", g.0, g.2),
        x_desc: "workers".into(),
        y_desc: "pps, all input ports (log)".into(),
        x_log: false,
        y_log: true,
        series,
        small: false,
    }
}

/// The data lines of group `g` (one per run and table variant) and the
/// kernel's figures (label, pps) of each run that measured it.
fn lines(runs: &[&Input], g: &Group) -> (Vec<Series>, Vec<(String, f64)>) {
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    let mut kernels: Vec<(String, f64)> = Vec::new();
    for input in runs {
        let mut lines: BTreeMap<(usize, String), Vec<(f64, f64)>> = BTreeMap::new();
        for f in
            input.run.figures.iter().filter(|f| {
                f.metric == "zero_loss_pps" && group(key(f, "ports"), key(f, "size")) == *g
            })
        {
            let fw = key(f, "forwarder");
            match key(f, "workers").parse::<f64>() {
                Ok(n) => lines
                    .entry((rank(fw), fw.to_string()))
                    .or_default()
                    .push((n, f.value)),
                Err(_) if fw == "kernel" => kernels.push((
                    series_label(overlaid, &input.label, "kernel forwarding"),
                    f.value,
                )),
                Err(_) => {}
            }
        }
        for ((_, fw), mut points) in lines {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut s = Series::data(
                series_label(overlaid, &input.label, &fw),
                points,
                series.len(),
            );
            if fw == "per-cpu" {
                s.marker = Marker::Triangle;
            }
            series.push(s);
        }
    }
    (series, kernels)
}

/// The study's figure for each of its columns and worker counts in
/// group `g` (per port times the row's input ports), as (workers, pps).
fn study_points(runs: &[&Input], g: &Group) -> Vec<(f64, f64)> {
    let mut study: BTreeMap<(String, u64), (f64, f64)> = BTreeMap::new();
    for input in runs {
        for r in input
            .run
            .rows
            .iter()
            .filter(|r| group(&field(r, "ports"), &size(r)) == *g)
        {
            let (Some(n), Some(q)) = (
                r.get("workers").and_then(Value::as_u64),
                r.get("reference").filter(|q| !q.is_null()),
            ) else {
                continue;
            };
            let Some(per_port) = num(q, "pps_per_port") else {
                continue;
            };
            let ports = num(r, "input_ports").unwrap_or(1.0);
            let column = q.get("column").and_then(Value::as_str).unwrap_or("");
            study
                .entry((column.to_string(), n))
                .or_insert((n as f64, per_port * ports));
        }
    }
    study.into_values().collect()
}

/// The rows of group `g`, every run: throughput, flat out, lock wait and
/// the study's column.
fn rows_table(runs: &[&Input], g: &Group) -> String {
    let mut rows: Vec<(usize, u64, Vec<String>)> = Vec::new();
    for (n, input) in runs.iter().enumerate() {
        for r in input
            .run
            .rows
            .iter()
            .filter(|r| group(&field(r, "ports"), &size(r)) == *g)
        {
            let (fw, w) = (forwarder(r), workers(r));
            let order = (n * 100 + rank(&fw), w.parse::<u64>().unwrap_or(u64::MAX));
            let mut cells = vec![input.label.clone(), fw.clone(), w.clone()];
            cells.extend(measured_cells(input, g, r, &fw, &w));
            cells.push(reference_cell(r));
            rows.push((order.0, order.1, cells));
        }
    }
    rows.sort_by_key(|r| (r.0, r.1));
    let rows: Vec<Vec<String>> = rows.into_iter().map(|r| r.2).collect();
    table(
        &[
            "run",
            "forwarder",
            "workers",
            "zero-loss pps",
            "per port",
            "Mbit/s",
            "flat out pps",
            "lock wait ns/packet",
            "QNX study, per port",
        ],
        &rows,
    )
}

/// The study's column for a row: `167k (1 CPU)`, `line rate (1 CPU)`,
/// or `-`.
fn reference_cell(r: &Value) -> String {
    let Some(q) = r.get("reference").filter(|q| !q.is_null()) else {
        return "-".into();
    };
    let column = q.get("column").and_then(Value::as_str).unwrap_or("");
    if q.get("line_rate").and_then(Value::as_bool) == Some(true) {
        format!("line rate ({column})")
    } else {
        format!("{} ({column})", si(num(q, "pps_per_port")))
    }
}

/// The five measured cells of a row (zero-loss pps, per port, Mbit/s,
/// flat out, lock wait); for a row skipped or failed, why, then empties.
fn measured_cells(input: &Input, g: &Group, r: &Value, fw: &str, w: &str) -> Vec<String> {
    if let Some(e) = r.get("error").and_then(Value::as_str) {
        let what = if r.get("skipped").and_then(Value::as_bool) == Some(true) {
            "skipped"
        } else {
            "FAILED"
        };
        let mut cells = vec![format!("{what}: {e}")];
        cells.extend(std::iter::repeat_n(String::new(), 4));
        return cells;
    }
    vec![
        si(num(r, "pps")),
        si(num(r, "pps_per_port")),
        num(r, "mbit_s").map_or(String::new(), |m| format!("{m:.0}")),
        si(num(r, "capacity_pps")),
        lock_wait(input, g, fw, w),
    ]
}

/// The run's `lock_wait_ns_per_packet` figure for a row, or "".
fn lock_wait(input: &Input, g: &Group, fw: &str, w: &str) -> String {
    input
        .run
        .figures
        .iter()
        .find(|f| {
            f.metric == "lock_wait_ns_per_packet"
                && group(key(f, "ports"), key(f, "size")) == *g
                && key(f, "forwarder") == fw
                && key(f, "workers") == w
        })
        .map_or(String::new(), |f| format!("{:.1}", f.value))
}
