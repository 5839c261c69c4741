//! Ipc with `--idle-clients` and `--clients`: each transport's p50
//! against the number of idle clients beside the measured one, and the
//! aggregate rate of N active clients against N, one chart per size and
//! placement; a table of the active clients' fairness. Read from the
//! figures only (keys `idle_clients`, `clients`; docs/results.md).

use std::collections::{BTreeMap, BTreeSet};

use anyhow::Result;

use super::chart::{self, Marker, Series, XyPlot};
use super::{chart_html, key, series_label, table, Input};
use crate::results::envelope::Figure;

/// The scale charts and table of the ipc runs, as HTML ("" without
/// scale figures).
pub fn html(runs: &[&Input]) -> Result<String> {
    let mut html = String::new();
    for (axis, metric) in [
        ("idle_clients", "p50_ns"),
        ("clients", "aggregate_msgs_per_s"),
    ] {
        for (size, placement) in cases(runs, axis) {
            if let Some(c) = chart::xy(&against(runs, axis, metric, &size, &placement))? {
                html.push_str(&chart_html(&c));
            }
        }
    }
    let rows = fairness(runs);
    if !rows.is_empty() {
        html.push_str(&table(
            &[
                "Run",
                "Transport",
                "Size",
                "Placement",
                "Clients",
                "Msgs/s",
                "p99 worst, ns",
                "Slowest/fastest",
                "CV of rates",
            ],
            &rows,
        ));
    }
    Ok(html)
}

/// The (size, placement) pairs with figures keyed by `axis`.
fn cases(runs: &[&Input], axis: &str) -> BTreeSet<(String, String)> {
    runs.iter()
        .flat_map(|i| i.run.figures.iter())
        .filter(|f| f.key.contains_key(axis))
        .map(|f| (key(f, "size").to_string(), key(f, "placement").to_string()))
        .collect()
}

/// `metric` against the count `axis`, one series per run, transport and
/// API, at one size and placement.
fn against(runs: &[&Input], axis: &str, metric: &str, size: &str, placement: &str) -> XyPlot {
    let overlaid = runs.len() > 1;
    let mut series = Vec::new();
    for input in runs {
        let mut by: BTreeMap<String, Vec<(f64, f64)>> = BTreeMap::new();
        for f in input.run.figures.iter().filter(|f| {
            f.metric == metric && key(f, "size") == size && key(f, "placement") == placement
        }) {
            if let Ok(n) = key(f, axis).parse::<f64>() {
                by.entry(who(f)).or_default().push((n, f.value));
            }
        }
        for (what, mut points) in by {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut s = Series::data(
                series_label(overlaid, &input.label, &what),
                points,
                series.len(),
            );
            s.marker = Marker::Circle;
            series.push(s);
        }
    }
    let (title, x_desc, y_desc, x_log) = if axis == "idle_clients" {
        (
            "IPC p50 against idle clients beside the measured one",
            "idle clients",
            "round trip p50, ns (log)",
            false,
        )
    } else {
        (
            "IPC aggregate rate of N active clients",
            "active clients N (log)",
            "round trips per second, all clients (log)",
            true,
        )
    };
    XyPlot {
        title: format!("{title}, {size} B, placement {placement}"),
        x_desc: x_desc.into(),
        y_desc: y_desc.into(),
        x_log,
        y_log: true,
        series,
        small: false,
    }
}

/// A figure's transport, with its API when not the default.
fn who(f: &Figure) -> String {
    match key(f, "api") {
        "" | "in-place" => key(f, "transport").to_string(),
        api => format!("{} ({api})", key(f, "transport")),
    }
}

/// One table row per active-clients row of every run.
fn fairness(runs: &[&Input]) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for input in runs {
        let mut rows: BTreeMap<String, BTreeMap<&str, f64>> = BTreeMap::new();
        let mut keys: BTreeMap<String, &Figure> = BTreeMap::new();
        for f in input
            .run
            .figures
            .iter()
            .filter(|f| f.key.contains_key("clients"))
        {
            let k = f.key_text();
            rows.entry(k.clone())
                .or_default()
                .insert(&f.metric, f.value);
            keys.entry(k).or_insert(f);
        }
        for (k, m) in rows {
            let f = keys[&k];
            let v = |name: &str| m.get(name).map_or("-".to_string(), |v| chart::short(*v));
            let ratio = |name: &str| m.get(name).map_or("-".to_string(), |v| format!("{v:.2}"));
            out.push(vec![
                input.label.clone(),
                who(f),
                key(f, "size").to_string(),
                key(f, "placement").to_string(),
                key(f, "clients").to_string(),
                v("aggregate_msgs_per_s"),
                v("client_p99_worst_ns"),
                ratio("slowest_over_fastest"),
                ratio("rate_cv"),
            ]);
        }
    }
    out
}
