//! Adder: the verdict sentences (global lock or not, which server model
//! scales best), then rate per thread and aggregate rate against threads
//! as small multiples, a chart per transport (and API): one line per run,
//! mode (one process: dots, multi-process: triangles, thread pool on one
//! path: squares) and placement (pinned solid, unpinned dashed), with the
//! seed's published QNX figures as grey reference marks.

use std::collections::BTreeMap;

use anyhow::Result;

use super::chart::{self, Marker, Series, XyPlot};
use super::{answers, key, multiples, of_suite, para, series_label, verdicts, Input, Section};
use crate::devctl::seed;
use crate::results::envelope::Figure;

/// Where the seed's figures ([`seed::QNX`]) come from, as shown under the charts.
pub const QNX_SOURCE: &str = "Grey crosses: the seed's published QNX figures (QNX 8.0 dark, QNX 7.1 light; Raspberry Pi 4, 4 cores, adder -n$X -I, 2,000,000 round trips per thread; docs/methodology.md, \"The adder benchmark (QNX devctl)\"). Aggregate = threads x rate per thread.";

/// What the line styles mean, under the charts when both placements ran.
pub const LINE_STYLES: &str = "Line style: solid = pinned (each client/server pair on CPUs of its own), dashed = unpinned (every thread left to the scheduler). Colour and marker: the server model.";

/// The adder section, or `None` without adder figures: the verdict
/// sentences first, then per metric a small chart per transport.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let runs = of_suite(inputs, "adder");
    let mut charts = String::new();
    for (metric, title, aggregate) in [
        ("rate_per_thread", "Rate per thread", false),
        ("aggregate_rate", "Aggregate rate", true),
    ] {
        let mut drawn = Vec::new();
        for panel in panels(&runs, metric) {
            let mut series = data_series(&runs, metric, &panel);
            series.extend(reference_series(aggregate));
            let plot = XyPlot {
                title: format!("Adder: {}, {panel}", title.to_lowercase()),
                x_desc: "threads".into(),
                y_desc: "msg/s".into(),
                x_log: false,
                y_log: false,
                series,
                small: true,
            };
            drawn.extend(chart::xy(&plot)?);
        }
        if !drawn.is_empty() {
            charts.push_str(&format!("<h3>{title}</h3>\n{}", multiples(&drawn)));
        }
    }
    if charts.is_empty() {
        return Ok(None);
    }
    let answers: Vec<(&str, Vec<String>)> = runs
        .iter()
        .map(|i| (i.label.as_str(), answers::adder(&i.run)))
        .collect();
    let mut html = verdicts(&answers);
    html.push_str(&charts);
    if both_placements(&runs) {
        html.push_str(&para(LINE_STYLES));
    }
    html.push_str(&para(QNX_SOURCE));
    Ok(Some(Section {
        id: "adder",
        title: "Adder",
        html,
    }))
}

/// A figure's panel: its transport, with the API when it is the copy.
fn panel_of(f: &Figure) -> String {
    match key(f, "api") {
        "" | "in-place" => key(f, "transport").to_string(),
        api => format!("{} ({api} API)", key(f, "transport")),
    }
}

/// The panels of `metric`, in first-seen order.
fn panels(runs: &[&Input], metric: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in runs.iter().flat_map(|i| &i.run.figures) {
        let p = panel_of(f);
        if f.metric == metric && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// True when the runs hold pinned and unpinned figures.
fn both_placements(runs: &[&Input]) -> bool {
    let has = |p: &str| {
        runs.iter()
            .flat_map(|i| &i.run.figures)
            .any(|f| key(f, "placement") == p)
    };
    has("pinned") && has("unpinned")
}

/// One series per run, mode and placement of `panel`: `metric` against
/// threads; colour and marker by mode, dashed when unpinned.
fn data_series(runs: &[&Input], metric: &str, panel: &str) -> Vec<Series> {
    let overlaid = runs.len() > 1;
    let mut out = Vec::new();
    for (n, input) in runs.iter().enumerate() {
        let mut groups: BTreeMap<(usize, String, String), Vec<(f64, f64)>> = BTreeMap::new();
        for f in input.run.figures.iter().filter(|f| f.metric == metric) {
            let Ok(threads) = key(f, "threads").parse::<f64>() else {
                continue;
            };
            if panel_of(f) != panel {
                continue;
            }
            let mode = key(f, "mode");
            let g = (
                mode_rank(mode),
                mode.to_string(),
                key(f, "placement").to_string(),
            );
            groups.entry(g).or_default().push((threads, f.value));
        }
        for ((rank, mode, placement), mut points) in groups {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let what = [mode_name(&mode), placement.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(", ");
            let mut s = Series::data(
                series_label(overlaid, &input.label, &what),
                points,
                n * 3 + rank,
            );
            s.marker = mode_marker(&mode);
            s.dashed = placement == "unpinned";
            out.push(s);
        }
    }
    out
}

/// Where a mode sorts (and its colour within a run).
fn mode_rank(mode: &str) -> usize {
    match mode {
        "one" => 0,
        "multi" => 1,
        _ => 2,
    }
}

fn mode_name(mode: &str) -> &str {
    match mode {
        "one" => "one process",
        "multi" => "multi-process",
        "pool" => "thread pool (one path)",
        m => m,
    }
}

/// Each mode's marker, so the curves of the three server models tell
/// apart without colour.
fn mode_marker(mode: &str) -> Marker {
    match mode {
        "multi" => Marker::Triangle,
        "pool" => Marker::Square,
        _ => Marker::Circle,
    }
}

/// The published figures as reference series (aggregate: times threads).
fn reference_series(aggregate: bool) -> Vec<Series> {
    seed::QNX
        .iter()
        .map(|s| {
            let points = s
                .rates
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let t = (i + 1) as f64;
                    (t, if aggregate { r * t } else { *r })
                })
                .collect();
            let grey = usize::from(s.os == "QNX 7.1");
            let label = format!("{}, {} (Raspberry Pi 4)", s.os, mode_name(s.layout.key()));
            Series::reference(label, points, grey)
        })
        .collect()
}
