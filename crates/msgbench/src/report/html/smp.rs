//! Smp: for each kind of ports and frame size, the zero-loss throughput
//! against workers, one line per run and table variant (the kernel's own
//! forwarding as a flat grey line), the QNX study's figure as grey
//! crosses; a table of the rows next to the study's column; each run's
//! lessons (its kept verdicts) first. The rows are read typed, as the
//! suite wrote them (`suites::smp::SmpRow`).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::chart::{self, Marker, Series, XyPlot};
use super::{
    answers, chart_html, of_suite, para, series_label, table, typed, verdicts, Input, Section,
    Typed,
};
use crate::suites::smp::{Forwarder, SmpRow};

/// Where the study's figures come from, as shown under the charts.
pub const STUDY_SOURCE: &str = "Grey crosses: the QNX study's figure for the same case (QNX 6.2.1, dual-core 600 MHz MIPS, two 1 Gbit/s ports; the study gives packets/s per port, drawn here times the row's input ports). Grey line: the kernel's own IPv4 forwarding in the same run (veth ports). The table gives the study's figure per port, its unit (docs/methodology.md, \"SMP forwarding (RFC 2544)\").";

/// A run's rows, read as the suite wrote them.
type SmpRun<'a> = Typed<'a, SmpRow>;

/// A forwarder's place: the table variants in the study's order of
/// interest, then the kernel.
fn rank(f: Forwarder) -> usize {
    use crate::suites::smp::Variant;
    match f {
        Forwarder::Table(v) => Variant::ALL.iter().position(|x| *x == v).unwrap_or(0),
        Forwarder::Kernel => Variant::ALL.len(),
    }
}

/// A chart or table group: ports, then frame size.
type Group = (&'static str, usize);

fn group(r: &SmpRow) -> Group {
    (r.ports.name(), r.size)
}

/// The rows of group `g`.
fn of_group<'r>(run: &'r SmpRun, g: &Group) -> impl Iterator<Item = &'r SmpRow> {
    let g = *g;
    run.rows.iter().filter(move |r| group(r) == g)
}

/// A row's workers: the number, or `-` (the kernel).
fn workers(r: &SmpRow) -> String {
    r.workers.map_or("-".into(), |n| n.to_string())
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

/// The smp section, or `None` without smp rows.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let inputs = of_suite(inputs, "smp");
    let runs: Vec<SmpRun> = typed(&inputs)?;
    let groups: BTreeSet<Group> = runs.iter().flat_map(|r| r.rows.iter().map(group)).collect();
    if groups.is_empty() {
        return Ok(None);
    }
    let lessons: Vec<(&str, Vec<String>)> = inputs
        .iter()
        .map(|i| (i.label.as_str(), answers::kept(&i.run)))
        .collect();
    let mut html = verdicts(&lessons);
    for g in &groups {
        html.push_str(&format!("<h3>{} ports, {} B frames</h3>\n", g.0, g.1));
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
fn plot(runs: &[SmpRun], g: &Group) -> XyPlot {
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
        title: format!("SMP, {} ports, {} B: zero-loss throughput", g.0, g.1),
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
fn lines(runs: &[SmpRun], g: &Group) -> (Vec<Series>, Vec<(String, f64)>) {
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    let mut kernels: Vec<(String, f64)> = Vec::new();
    for run in runs {
        let mut lines: BTreeMap<(usize, &str), Vec<(f64, f64)>> = BTreeMap::new();
        for r in of_group(run, g).filter(|r| r.measured()) {
            let fw = r.forwarder;
            match r.workers {
                Some(n) => lines
                    .entry((rank(fw), fw.name()))
                    .or_default()
                    .push((n as f64, r.pps)),
                None => kernels.push((
                    series_label(overlaid, run.label, "kernel forwarding"),
                    r.pps,
                )),
            }
        }
        for ((_, fw), mut points) in lines {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut s = Series::data(series_label(overlaid, run.label, fw), points, series.len());
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
fn study_points(runs: &[SmpRun], g: &Group) -> Vec<(f64, f64)> {
    let mut study: BTreeMap<(&str, usize), (f64, f64)> = BTreeMap::new();
    for r in runs.iter().flat_map(|run| of_group(run, g)) {
        let (Some(n), Some(q)) = (r.workers, &r.reference) else {
            continue;
        };
        let ports = r.input_ports.max(1) as f64;
        study
            .entry((&q.column, n))
            .or_insert((n as f64, q.pps_per_port * ports));
    }
    study.into_values().collect()
}

/// The rows of group `g`, every run: throughput, flat out, lock wait and
/// the study's column.
fn rows_table(runs: &[SmpRun], g: &Group) -> String {
    let mut rows: Vec<((usize, usize, usize), Vec<String>)> = Vec::new();
    for (n, run) in runs.iter().enumerate() {
        for r in of_group(run, g) {
            let order = (n, rank(r.forwarder), r.workers.unwrap_or(usize::MAX));
            let mut cells = vec![
                run.label.to_string(),
                r.forwarder.name().to_string(),
                workers(r),
            ];
            cells.extend(measured_cells(r));
            cells.push(reference_cell(r));
            rows.push((order, cells));
        }
    }
    rows.sort_by_key(|r| r.0);
    let rows: Vec<Vec<String>> = rows.into_iter().map(|r| r.1).collect();
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
fn reference_cell(r: &SmpRow) -> String {
    match &r.reference {
        None => "-".into(),
        Some(q) if q.line_rate => format!("line rate ({})", q.column),
        Some(q) => format!("{} ({})", si(Some(q.pps_per_port)), q.column),
    }
}

/// The five measured cells of a row (zero-loss pps, per port, Mbit/s,
/// flat out, lock wait); for a row skipped or failed, why, then empties.
fn measured_cells(r: &SmpRow) -> Vec<String> {
    if let Some(e) = &r.error {
        let what = if r.skipped { "skipped" } else { "FAILED" };
        let mut cells = vec![format!("{what}: {e}")];
        cells.extend(std::iter::repeat_n(String::new(), 4));
        return cells;
    }
    let lock_wait = r
        .lock_wait_ns()
        .map_or(String::new(), |w| format!("{w:.1}"));
    vec![
        si(Some(r.pps)),
        si(Some(r.pps_per_port)),
        format!("{:.0}", r.mbit_s),
        si(r.capacity_pps),
        lock_wait,
    ]
}
