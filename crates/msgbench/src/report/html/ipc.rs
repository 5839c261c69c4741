//! Ipc: the best transport per placement first (answers::ipc), then per
//! placement small multiples, a panel per group of transports (polling
//! and hybrid ones together, blocking ones by five in order of their
//! p50), each with the run's floor for that kind of wait where the run
//! measured one (`--vs-floor`): p50 (solid) and p99 (dashed) latency
//! against message size (log axes), and latency distributions (CDF) from
//! the histograms the rows carry; then the scale axes (`ipc_scale`).
//! The rows and the floor are read typed, as the suite wrote them
//! (`suites::ipc::Row`, `FloorReport`), never a field by name.

use std::collections::{BTreeMap, BTreeSet};

use anyhow::{Context as _, Result};
use serde::Deserialize as _;

use super::chart::{self, Chart, Marker, Series, XyPlot};
use super::{answers, key, multiples, of_suite, para, series_label, verdicts, Input, Section};
use crate::measure::hist::fmt_ns;
use crate::pingpong::floor::FloorReport;
use crate::results::envelope::Figure;
use crate::suites::ipc::{Layout, Row, WaitClass};

/// Same CPU first, as the terminal prints them.
fn placement_order(p: &str) -> (u8, String) {
    (u8::from(p != "same"), p.to_string())
}

/// Blocking transports per panel, at most.
pub const PER_PANEL: usize = 5;

/// What the line styles mean.
pub const LINE_STYLES: &str = "Per panel: solid lines p50, dashed p99 (by size); in the distributions, solid the smallest size, dashed the largest. floor (dotted, near black): the run's bare round trip of the same kind of wait on the same placement (msgbench floor, measured with --vs-floor): a cache line between threads for polling and hybrid transports, a futex wait/wake for blocking ones.";

/// A panel: its title and its transports.
#[derive(Debug, Clone, PartialEq)]
pub struct Panel {
    /// e.g. "blocking, 1 to 5 by p50".
    pub title: String,
    /// Polling and hybrid (spinning) transports, else blocking.
    pub spinning: bool,
    /// The transports drawn.
    pub transports: Vec<String>,
}

/// The ipc section, or `None` without ipc figures or histograms.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let inputs = of_suite(inputs, "ipc");
    let runs = inputs
        .iter()
        .map(|&input| {
            Ok(IpcRun {
                input,
                rows: input.run.rows_as().context(input.label.clone())?,
                floor: floor_of(input)?,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    let mut placements: BTreeSet<((u8, String), String)> = BTreeSet::new();
    for r in &runs {
        placements.extend(
            r.input
                .run
                .figures
                .iter()
                .filter(|f| !f.key.contains_key("clients") && !f.key.contains_key("idle_clients"))
                .map(|f| {
                    (
                        placement_order(key(f, "placement")),
                        figure_layout(f).to_string(),
                    )
                }),
        );
        placements.extend(r.rows.iter().map(|r| {
            (
                placement_order(r.placement.name()),
                r.layout.name().to_string(),
            )
        }));
    }
    let mut charts = String::new();
    for ((_, placement), layout) in &placements {
        let at = At {
            placement: placement.clone(),
            layout: layout.clone(),
        };
        charts.push_str(&placement_html(&runs, &at)?);
    }
    if !charts.is_empty() {
        charts.push_str(&para(LINE_STYLES));
    }
    charts.push_str(&super::ipc_scale::html(&inputs)?);
    if charts.is_empty() {
        return Ok(None);
    }
    let answers: Vec<(&str, Vec<String>)> = inputs
        .iter()
        .map(|i| (i.label.as_str(), answers::ipc(&i.run)))
        .collect();
    let mut html = verdicts(&answers);
    html.push_str(&charts);
    Ok(Some(Section {
        id: "ipc",
        title: "IPC",
        html,
    }))
}

/// An ipc run as the report reads it: its input (label, figures), its
/// rows as the suite wrote them, and its floor (`--vs-floor`).
pub struct IpcRun<'a> {
    /// The run and its label.
    pub input: &'a Input,
    /// Its rows, typed.
    pub rows: Vec<Row>,
    /// Its floor, where it measured one.
    pub floor: Option<FloorReport>,
}

/// The run's floor, typed, where it has one.
fn floor_of(input: &Input) -> Result<Option<FloorReport>> {
    input
        .run
        .floor
        .as_ref()
        .filter(|f| !f.is_null())
        .map(|f| {
            FloorReport::deserialize(f)
                .with_context(|| format!("{}: its floor is not a floor report", input.label))
        })
        .transpose()
}

/// A figure's layout; a figure from before layouts were recorded ran the
/// server as a thread (as its rows read: `Layout::before_layouts`).
fn figure_layout(f: &Figure) -> &str {
    match key(f, "layout") {
        "" => Layout::before_layouts().name(),
        l => l,
    }
}

/// Where a chart's rows ran: a placement, and a layout (`process`,
/// `thread`).
pub struct At {
    /// `same` or `cross`.
    pub placement: String,
    /// `process` or `thread`.
    pub layout: String,
}

impl At {
    /// True for a figure of this placement and layout.
    fn holds(&self, f: &Figure) -> bool {
        key(f, "placement") == self.placement && figure_layout(f) == self.layout
    }

    /// True for a row of this placement and layout.
    fn holds_row(&self, r: &Row) -> bool {
        r.placement.name() == self.placement && r.layout.name() == self.layout
    }
}

/// The small multiples of one placement and layout: percentiles, then
/// distributions.
fn placement_html(runs: &[IpcRun], at: &At) -> Result<String> {
    let panels = panels(runs, at);
    let mut by_size: Vec<Chart> = Vec::new();
    let mut dists: Vec<Chart> = Vec::new();
    for panel in &panels {
        by_size.extend(chart::xy(&percentiles(runs, at, panel))?);
        dists.extend(chart::xy(&cdf(runs, at, panel))?);
    }
    let mut html = String::new();
    let name = at_title(at);
    if !by_size.is_empty() {
        html.push_str(&format!(
            "<h3>Latency p50 and p99 by size{}</h3>\n{}",
            super::escape(&name),
            multiples(&by_size)
        ));
    }
    if !dists.is_empty() {
        html.push_str(&format!(
            "<h3>Latency distributions{}</h3>\n{}",
            super::escape(&name),
            multiples(&dists)
        ));
    }
    Ok(html)
}

fn placement_title(p: &str) -> String {
    if p.is_empty() {
        String::new()
    } else {
        format!(", placement {p}")
    }
}

/// ", placement same, two processes".
fn at_title(at: &At) -> String {
    let layout = match at.layout.as_str() {
        "" => "",
        "process" => ", two processes",
        "thread" => ", two threads",
        other => other,
    };
    format!("{}{layout}", placement_title(&at.placement))
}

/// True for the figures of one client alone: figures with idle clients
/// beside it, or of several active clients, have charts of their own
/// (`ipc_scale`).
fn alone(f: &Figure) -> bool {
    matches!(key(f, "idle_clients"), "" | "0") && !f.key.contains_key("clients")
}

/// True for a row of one client alone (as [`alone`]).
fn alone_row(r: &Row) -> bool {
    matches!(r.idle_clients, None | Some(0)) && r.clients.is_none()
}

/// The panels of `placement`: the polling and hybrid transports in one,
/// the blocking ones by [`PER_PANEL`] in order of their lowest p50.
pub fn panels(runs: &[IpcRun], at: &At) -> Vec<Panel> {
    let mut best: BTreeMap<String, (bool, f64)> = BTreeMap::new();
    for run in runs {
        for f in run
            .input
            .run
            .figures
            .iter()
            .filter(|f| f.metric == "p50_ns" && at.holds(f) && alone(f))
        {
            let t = key(f, "transport").to_string();
            let spinning = spins(&run.rows, &t);
            let e = best.entry(t).or_insert((spinning, f64::INFINITY));
            e.1 = e.1.min(f.value);
        }
    }
    let mut ranked: Vec<(String, bool, f64)> =
        best.into_iter().map(|(t, (s, ns))| (t, s, ns)).collect();
    ranked.sort_by(|a, b| a.2.total_cmp(&b.2));
    let spin: Vec<String> = ranked.iter().filter(|r| r.1).map(|r| r.0.clone()).collect();
    let block: Vec<String> = ranked
        .iter()
        .filter(|r| !r.1)
        .map(|r| r.0.clone())
        .collect();
    let mut out = Vec::new();
    if !spin.is_empty() {
        out.push(Panel {
            title: "polling and hybrid".into(),
            spinning: true,
            transports: spin,
        });
    }
    let chunks = block.len().div_ceil(PER_PANEL);
    for (n, chunk) in block.chunks(PER_PANEL).enumerate() {
        let title = if chunks == 1 {
            "blocking".to_string()
        } else {
            let first = n * PER_PANEL + 1;
            format!("blocking, {first} to {} by p50", first + chunk.len() - 1)
        };
        out.push(Panel {
            title,
            spinning: false,
            transports: chunk.to_vec(),
        });
    }
    out
}

/// True when the rows give `transport` a polling or hybrid wait.
fn spins(rows: &[Row], transport: &str) -> bool {
    rows.iter()
        .find(|r| r.transport == transport)
        .is_some_and(|r| matches!(r.wait, WaitClass::Polling | WaitClass::Hybrid))
}

/// The run's floor for a panel's kind of wait at `placement` (the lowest
/// figure of that kind on one CPU or two), ns, with what it is.
pub fn floor_ns(
    floor: Option<&FloorReport>,
    spinning: bool,
    placement: &str,
) -> Option<(f64, String)> {
    let (floor, same) = (floor?, placement == "same");
    let (ns, what) = if spinning {
        (floor.cacheline_ns(same)?, "cache line between threads")
    } else {
        (floor.futex_ns(same)?, "futex wait/wake")
    };
    Some((ns, what.to_string()))
}

/// The floor series of a panel, one per run that measured one: a level
/// from x `across.0` to `across.1`, or without `across` a rule at the
/// floor across fractions 0 to 1.
fn floor_series(
    runs: &[IpcRun],
    panel: &Panel,
    placement: &str,
    across: Option<(f64, f64)>,
) -> Vec<Series> {
    let overlaid = runs.len() > 1;
    runs.iter()
        .filter_map(|run| {
            let input = run.input;
            let (ns, what) = floor_ns(run.floor.as_ref(), panel.spinning, placement)?;
            let label = format!("floor: {what}, {}", fmt_ns(ns));
            let points = match across {
                Some((lo, hi)) => vec![(lo, ns), (hi, ns)],
                None => vec![(ns, 0.0), (ns, 1.0)],
            };
            Some(Series::floor(
                series_label(overlaid, &input.label, &label),
                points,
            ))
        })
        .collect()
}

/// p50 (dots, solid) and p99 (triangles, dashed) against size, one colour
/// per run and transport of `panel`; the floor as a level.
fn percentiles(runs: &[IpcRun], at: &At, panel: &Panel) -> XyPlot {
    let placement = at.placement.as_str();
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    let mut colour = 0;
    for input in runs.iter().map(|r| r.input) {
        let mut by: BTreeMap<(String, &str), Vec<(f64, f64)>> = BTreeMap::new();
        for f in &input.run.figures {
            let (m, t) = (f.metric.as_str(), key(f, "transport"));
            if !at.holds(f)
                || !(m == "p50_ns" || m == "p99_ns")
                || !panel.transports.iter().any(|p| p == t)
                || !alone(f)
            {
                continue;
            }
            if let Ok(size) = key(f, "size").parse::<f64>() {
                by.entry((t.to_string(), m))
                    .or_default()
                    .push((size.max(1.0), f.value));
            }
        }
        for t in &panel.transports {
            for (m, marker) in [("p50_ns", Marker::Circle), ("p99_ns", Marker::Triangle)] {
                let Some(mut points) = by.remove(&(t.clone(), m)) else {
                    continue;
                };
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                let what = format!("{t} {}", &m[..3]);
                let mut s =
                    Series::data(series_label(overlaid, &input.label, &what), points, colour);
                s.marker = marker;
                s.dashed = m == "p99_ns";
                series.push(s);
            }
            colour += 1;
        }
    }
    let sizes = || series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let lo = sizes().fold(f64::INFINITY, f64::min);
    let hi = sizes().fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() {
        series.extend(floor_series(runs, panel, placement, Some((lo, hi))));
    }
    XyPlot {
        title: format!("{}{}", panel.title, at_title(at)),
        x_desc: "message size, bytes (log)".into(),
        y_desc: "round trip, ns (log)".into(),
        x_log: true,
        y_log: true,
        series,
        small: true,
    }
}

/// The distributions of `panel`'s rows at the smallest (solid) and the
/// largest (dashed) size, a colour per run and transport; the floor as a
/// rule.
fn cdf(runs: &[IpcRun], at: &At, panel: &Panel) -> XyPlot {
    let placement = at.placement.as_str();
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    let mut colour = 0;
    for run in runs {
        let rows: Vec<&Row> = run
            .rows
            .iter()
            .filter(|r| at.holds_row(r) && alone_row(r))
            .collect();
        let small = rows.iter().map(|r| r.size).min();
        let large = rows.iter().map(|r| r.size).max();
        for t in &panel.transports {
            for r in rows.iter().filter(|r| r.transport == *t) {
                let size = Some(r.size);
                if size != small && size != large {
                    continue;
                }
                let points = cumulative(histogram(r));
                if points.is_empty() {
                    continue;
                }
                let what = format!("{t} {} B", r.size);
                let mut s = Series::data(
                    series_label(overlaid, &run.input.label, &what),
                    points,
                    colour,
                );
                s.marker = Marker::None;
                s.dashed = size == large && large != small;
                series.push(s);
            }
            colour += 1;
        }
    }
    series.extend(floor_series(runs, panel, placement, None));
    XyPlot {
        title: format!("{}{}: distribution", panel.title, at_title(at)),
        x_desc: "round trip, ns (log)".into(),
        y_desc: "fraction at or below".into(),
        x_log: true,
        y_log: false,
        series,
        small: true,
    }
}

/// The row's distribution: its `histogram`, or in a run from before rows
/// carried one, its latency run's.
pub fn histogram(row: &Row) -> Vec<(f64, f64)> {
    let h = match (&row.histogram[..], &row.latency) {
        ([], Some(l)) => &l.histogram[..],
        (h, _) => h,
    };
    h.iter().map(|&(ns, n)| (ns, n as f64)).collect()
}

/// Cumulative fractions of a histogram, at positive bounds.
pub fn cumulative(h: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let total: f64 = h.iter().map(|p| p.1).sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let mut acc = 0.0;
    h.into_iter()
        .filter_map(|(ns, n)| {
            acc += n;
            (ns > 0.0).then_some((ns, acc / total))
        })
        .collect()
}
