//! Ipc: p50 and p99 latency against message size per transport (log
//! axes), one chart per placement; latency distributions (CDF) from the
//! histograms the latency rows carry; and the scale axes (`ipc_scale`).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;
use serde_json::Value;

use super::chart::{self, Marker, Series, XyPlot};
use super::{chart_html, key, of_suite, series_label, Input, Section};

/// The ipc section, or `None` without ipc figures or histograms.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let runs = of_suite(inputs, "ipc");
    let mut placements: BTreeSet<String> = BTreeSet::new();
    for i in &runs {
        placements.extend(
            i.run
                .figures
                .iter()
                .map(|f| key(f, "placement").to_string()),
        );
        placements.extend(i.run.rows.iter().map(|r| field(r, "placement")));
    }
    let mut html = String::new();
    for p in &placements {
        if let Some(c) = chart::xy(&percentiles(&runs, p))? {
            html.push_str(&chart_html(&c));
        }
        if let Some(c) = chart::xy(&cdf(&runs, p))? {
            html.push_str(&chart_html(&c));
        }
    }
    html.push_str(&super::ipc_scale::html(&runs)?);
    Ok((!html.is_empty()).then_some(Section {
        id: "ipc",
        title: "IPC",
        html,
    }))
}

fn placement_title(p: &str) -> String {
    if p.is_empty() {
        String::new()
    } else {
        format!(", placement {p}")
    }
}

/// p50 (dots) and p99 (triangles) against size, one colour per run and
/// transport.
fn percentiles(runs: &[&Input], placement: &str) -> XyPlot {
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    let mut colour = 0;
    for input in runs {
        let mut by: BTreeMap<(String, &str), Vec<(f64, f64)>> = BTreeMap::new();
        for f in &input.run.figures {
            let m = f.metric.as_str();
            if key(f, "placement") != placement || !(m == "p50_ns" || m == "p99_ns") {
                continue;
            }
            // One client alone: rows with idle clients beside it, or of
            // several active clients, have charts of their own.
            if !matches!(key(f, "idle_clients"), "" | "0") || f.key.contains_key("clients") {
                continue;
            }
            if let Ok(size) = key(f, "size").parse::<f64>() {
                let t = key(f, "transport").to_string();
                by.entry((t, m)).or_default().push((size.max(1.0), f.value));
            }
        }
        let transports: BTreeSet<String> = by.keys().map(|k| k.0.clone()).collect();
        for t in transports {
            for (m, marker) in [("p50_ns", Marker::Circle), ("p99_ns", Marker::Triangle)] {
                let Some(mut points) = by.remove(&(t.clone(), m)) else {
                    continue;
                };
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                let what = format!("{t} {}", &m[..3]);
                let mut s =
                    Series::data(series_label(overlaid, &input.label, &what), points, colour);
                s.marker = marker;
                series.push(s);
            }
            colour += 1;
        }
    }
    XyPlot {
        title: format!(
            "IPC latency p50 and p99 by size{}",
            placement_title(placement)
        ),
        x_desc: "message size, bytes (log)".into(),
        y_desc: "round trip, ns (log)".into(),
        x_log: true,
        y_log: true,
        series,
    }
}

/// One cumulative distribution per latency row with a histogram.
fn cdf(runs: &[&Input], placement: &str) -> XyPlot {
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    for input in runs {
        for row in input
            .run
            .rows
            .iter()
            .filter(|r| field(r, "placement") == placement)
        {
            let Some(points) = histogram(row).map(cumulative) else {
                continue;
            };
            if points.is_empty() {
                continue;
            }
            let idle = match field(row, "idle_clients").as_str() {
                "" => String::new(),
                n => format!(", {n} idle"),
            };
            let what = format!("{} {} B{idle}", field(row, "transport"), field(row, "size"));
            let mut s = Series::data(
                series_label(overlaid, &input.label, &what),
                points,
                series.len(),
            );
            s.marker = Marker::None;
            series.push(s);
        }
    }
    XyPlot {
        title: format!(
            "IPC latency distribution (CDF){}",
            placement_title(placement)
        ),
        x_desc: "round trip, ns (log)".into(),
        y_desc: "fraction of round trips at or below".into(),
        x_log: true,
        y_log: false,
        series,
    }
}

/// A row's field as text (a string, or a number written out), "" if absent.
pub fn field(row: &Value, name: &str) -> String {
    match row.get(name) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
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
