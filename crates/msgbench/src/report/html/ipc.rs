//! Ipc: the best transport per placement first (answers::ipc), then per
//! placement small multiples, a panel per group of transports (polling
//! and hybrid ones together, blocking ones by five in order of their
//! p50), each with the run's floor for that kind of wait where the run
//! measured one (`--vs-floor`): p50 (solid) and p99 (dashed) latency
//! against message size (log axes), and latency distributions (CDF) from
//! the histograms the rows carry; then the scale axes (`ipc_scale`).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use serde_json::Value;

use super::chart::{self, Chart, Marker, Series, XyPlot};
use super::fields::{field, placement_order};
use super::{answers, key, multiples, of_suite, para, series_label, verdicts, Input, Section};
use crate::measure::hist::fmt_ns;

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
    let runs = of_suite(inputs, "ipc");
    let mut placements: BTreeSet<((u8, String), String)> = BTreeSet::new();
    for i in &runs {
        placements.extend(
            i.run
                .figures
                .iter()
                .filter(|f| !f.key.contains_key("clients") && !f.key.contains_key("idle_clients"))
                .map(|f| {
                    (
                        placement_order(key(f, "placement")),
                        key(f, "layout").to_string(),
                    )
                }),
        );
        placements.extend(
            i.run
                .rows
                .iter()
                .map(|r| (placement_order(&field(r, "placement")), field(r, "layout"))),
        );
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
    charts.push_str(&super::ipc_scale::html(&runs)?);
    if charts.is_empty() {
        return Ok(None);
    }
    let answers: Vec<(&str, Vec<String>)> = runs
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

/// Where a chart's rows ran: a placement, and a layout (`process`,
/// `thread`; empty in a run from before layouts).
pub struct At {
    /// `same` or `cross`.
    pub placement: String,
    /// `process`, `thread` or empty.
    pub layout: String,
}

impl At {
    /// True for a figure of this placement and layout.
    fn holds(&self, f: &crate::results::envelope::Figure) -> bool {
        key(f, "placement") == self.placement && key(f, "layout") == self.layout
    }

    /// True for a row of this placement and layout.
    fn holds_row(&self, r: &Value) -> bool {
        field(r, "placement") == self.placement && field(r, "layout") == self.layout
    }
}

/// The small multiples of one placement and layout: percentiles, then
/// distributions.
fn placement_html(runs: &[&Input], at: &At) -> Result<String> {
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

/// True for the rows and figures of one client alone at `placement`:
/// rows with idle clients beside it, or of several active clients, have
/// charts of their own (`ipc_scale`).
fn alone(idle: &str, clients: bool) -> bool {
    matches!(idle, "" | "0") && !clients
}

/// The panels of `placement`: the polling and hybrid transports in one,
/// the blocking ones by [`PER_PANEL`] in order of their lowest p50.
pub fn panels(runs: &[&Input], at: &At) -> Vec<Panel> {
    let mut best: BTreeMap<String, (bool, f64)> = BTreeMap::new();
    for input in runs {
        for f in input.run.figures.iter().filter(|f| {
            f.metric == "p50_ns"
                && at.holds(f)
                && alone(key(f, "idle_clients"), f.key.contains_key("clients"))
        }) {
            let t = key(f, "transport").to_string();
            let spinning = spins(&input.run.rows, &t);
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
fn spins(rows: &[Value], transport: &str) -> bool {
    rows.iter()
        .find(|r| field(r, "transport") == transport)
        .is_some_and(|r| matches!(field(r, "wait").as_str(), "polling" | "hybrid"))
}

/// The run's floor for a panel's kind of wait at `placement` (the lowest
/// figure of that kind on one CPU or two), ns, with what it is.
pub fn floor_ns(floor: Option<&Value>, spinning: bool, placement: &str) -> Option<(f64, String)> {
    let (kind, what) = if spinning {
        ("cacheline_threads", "cache line between threads")
    } else {
        ("futex", "futex wait/wake")
    };
    let same = placement == "same";
    let ns = floor?
        .get("rows")?
        .as_array()?
        .iter()
        .filter(|r| field(r, "kind") == kind)
        .filter(|r| r.get("same_cpu").and_then(Value::as_bool) == Some(same))
        .filter_map(|r| r.get("ns").and_then(Value::as_f64))
        .filter(|ns| ns.is_finite() && *ns > 0.0)
        .min_by(f64::total_cmp)?;
    Some((ns, what.to_string()))
}

/// The floor series of a panel, one per run that measured one: a level
/// from x `across.0` to `across.1`, or without `across` a rule at the
/// floor across fractions 0 to 1.
fn floor_series(
    runs: &[&Input],
    panel: &Panel,
    placement: &str,
    across: Option<(f64, f64)>,
) -> Vec<Series> {
    let overlaid = runs.len() > 1;
    runs.iter()
        .filter_map(|input| {
            let (ns, what) = floor_ns(input.run.floor.as_ref(), panel.spinning, placement)?;
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
fn percentiles(runs: &[&Input], at: &At, panel: &Panel) -> XyPlot {
    let placement = at.placement.as_str();
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    let mut colour = 0;
    for input in runs {
        let mut by: BTreeMap<(String, &str), Vec<(f64, f64)>> = BTreeMap::new();
        for f in &input.run.figures {
            let (m, t) = (f.metric.as_str(), key(f, "transport"));
            if !at.holds(f)
                || !(m == "p50_ns" || m == "p99_ns")
                || !panel.transports.iter().any(|p| p == t)
                || !alone(key(f, "idle_clients"), f.key.contains_key("clients"))
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
fn cdf(runs: &[&Input], at: &At, panel: &Panel) -> XyPlot {
    let placement = at.placement.as_str();
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    let mut colour = 0;
    for input in runs {
        let rows: Vec<&Value> = input
            .run
            .rows
            .iter()
            .filter(|r| at.holds_row(r))
            .filter(|r| {
                alone(
                    &field(r, "idle_clients"),
                    r.get("clients").is_some_and(|c| !c.is_null()),
                )
            })
            .collect();
        let sizes: Vec<u64> = rows
            .iter()
            .filter_map(|r| r.get("size")?.as_u64())
            .collect();
        let (small, large) = (sizes.iter().min().copied(), sizes.iter().max().copied());
        for t in &panel.transports {
            for r in rows.iter().filter(|r| field(r, "transport") == *t) {
                let size = r.get("size").and_then(Value::as_u64);
                if size != small && size != large {
                    continue;
                }
                let Some(points) = histogram(r).map(cumulative).filter(|p| !p.is_empty()) else {
                    continue;
                };
                let what = format!("{t} {} B", field(r, "size"));
                let mut s =
                    Series::data(series_label(overlaid, &input.label, &what), points, colour);
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

/// The row's `histogram` (`[[upper_ns, count], ...]`), at the top or in
/// any object within the row.
pub fn histogram(row: &Value) -> Option<Vec<(f64, f64)>> {
    match row {
        Value::Object(m) => {
            if let Some(Value::Array(h)) = m.get("histogram") {
                let pairs: Vec<(f64, f64)> = h
                    .iter()
                    .filter_map(|p| Some((p.get(0)?.as_f64()?, p.get(1)?.as_f64()?)))
                    .collect();
                return Some(pairs);
            }
            m.values().find_map(histogram)
        }
        _ => None,
    }
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
