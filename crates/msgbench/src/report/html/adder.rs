//! Adder: rate per thread and aggregate rate against threads, one line
//! per run, transport, mode (one process: dots, multi-process: triangles,
//! thread pool on one path: squares) and placement, with the seed's
//! published QNX figures as grey reference marks.

use std::collections::BTreeMap;

use anyhow::Result;

use super::chart::{self, Marker, Series, XyPlot};
use super::{chart_html, key, of_suite, para, series_label, Input, Section};

/// The seed's published QNX figures: rate per thread (msg/s) for 1 to 6
/// threads, `adder -n$X -I`, 2,000,000 round trips per thread, on a
/// Raspberry Pi 4 (4 cores). Source: the seed's published results, as
/// docs/methodology.md gives them ("The adder benchmark (QNX devctl)").
pub const QNX: [(&str, &str, [f64; 6]); 4] = [
    (
        "QNX 8.0",
        "one",
        [
            165_300.0, 133_050.0, 124_770.0, 143_450.0, 95_225.0, 81_870.0,
        ],
    ),
    (
        "QNX 8.0",
        "multi",
        [
            166_681.0, 132_890.0, 124_062.0, 147_690.0, 91_651.0, 76_432.0,
        ],
    ),
    (
        "QNX 7.1",
        "one",
        [264_550.0, 129_282.0, 74_783.0, 54_990.0, 41_401.0, 34_541.0],
    ),
    (
        "QNX 7.1",
        "multi",
        [247_893.0, 127_299.0, 73_621.0, 53_496.0, 39_164.0, 32_606.0],
    ),
];

/// Where [`QNX`] comes from, as shown under the charts.
pub const QNX_SOURCE: &str = "Grey crosses: the seed's published QNX figures (QNX 8.0 dark, QNX 7.1 light; Raspberry Pi 4, 4 cores, adder -n$X -I, 2,000,000 round trips per thread; docs/methodology.md, \"The adder benchmark (QNX devctl)\"). Aggregate = threads x rate per thread.";

/// The adder section, or `None` without adder figures.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let runs = of_suite(inputs, "adder");
    let mut html = String::new();
    for (metric, title, aggregate) in [
        ("rate_per_thread", "Adder: rate per thread", false),
        ("aggregate_rate", "Adder: aggregate rate", true),
    ] {
        let mut series = data_series(&runs, metric);
        if series.is_empty() {
            continue;
        }
        series.extend(reference_series(aggregate));
        let plot = XyPlot {
            title: title.into(),
            x_desc: "threads".into(),
            y_desc: "msg/s".into(),
            x_log: false,
            y_log: false,
            series,
        };
        if let Some(c) = chart::xy(&plot)? {
            html.push_str(&chart_html(&c));
        }
    }
    if html.is_empty() {
        return Ok(None);
    }
    html.push_str(&para(QNX_SOURCE));
    Ok(Some(Section {
        id: "adder",
        title: "Adder",
        html,
    }))
}

/// One series per run, transport, mode and placement: `metric` against
/// threads.
fn data_series(runs: &[&Input], metric: &str) -> Vec<Series> {
    let overlaid = runs.len() > 1;
    let mut out = Vec::new();
    for input in runs {
        let mut groups: BTreeMap<(String, String, String), Vec<(f64, f64)>> = BTreeMap::new();
        for f in input.run.figures.iter().filter(|f| f.metric == metric) {
            let Ok(threads) = key(f, "threads").parse::<f64>() else {
                continue;
            };
            let g = (
                key(f, "transport").to_string(),
                key(f, "mode").to_string(),
                key(f, "placement").to_string(),
            );
            groups.entry(g).or_default().push((threads, f.value));
        }
        for ((transport, mode, placement), mut points) in groups {
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            let what = [transport.as_str(), mode_name(&mode), placement.as_str()]
                .iter()
                .filter(|s| !s.is_empty())
                .copied()
                .collect::<Vec<_>>()
                .join(", ");
            let mut s = Series::data(
                series_label(overlaid, &input.label, &what),
                points,
                out.len(),
            );
            s.marker = mode_marker(&mode);
            out.push(s);
        }
    }
    out
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
    QNX.iter()
        .map(|(os, mode, rates)| {
            let points = rates
                .iter()
                .enumerate()
                .map(|(i, r)| {
                    let t = (i + 1) as f64;
                    (t, if aggregate { r * t } else { *r })
                })
                .collect();
            let grey = usize::from(*os == "QNX 7.1");
            let label = format!("{os}, {} (Raspberry Pi 4)", mode_name(mode));
            Series::reference(label, points, grey)
        })
        .collect()
}
