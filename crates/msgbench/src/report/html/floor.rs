//! Floor: each floor figure (ping-pongs, clock and system-call costs) as
//! a dot per run on a log axis, and the same in a table.

use anyhow::Result;

use super::chart::Series;
use super::dots::{dots, DotPlot};
use super::{chart_html, key, of_suite, table, Input, Section};
use crate::results::envelope::Figure;

/// A floor figure's category: what, and between which CPUs.
fn category(f: &Figure) -> String {
    match key(f, "cpus") {
        "" | "-" => key(f, "floor").to_string(),
        cpus => format!("{} ({cpus})", key(f, "floor")),
    }
}

/// The floor section, or `None` without floor figures.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let runs = of_suite(inputs, "floor");
    let mut categories: Vec<String> = Vec::new();
    for i in &runs {
        for f in &i.run.figures {
            let c = category(f);
            if !categories.contains(&c) {
                categories.push(c);
            }
        }
    }
    let series: Vec<Series> = runs
        .iter()
        .enumerate()
        .map(|(n, i)| {
            let points = i
                .run
                .figures
                .iter()
                .filter_map(|f| {
                    let at = categories.iter().position(|c| *c == category(f))?;
                    Some((f.value, at as f64))
                })
                .collect();
            let mut s = Series::data(i.label.clone(), points, n);
            s.line = false;
            s
        })
        .collect();
    let plot = DotPlot {
        title: "Floor: the machine's limits".into(),
        x_desc: "ns per round trip or call (log)".into(),
        x_log: true,
        categories: categories.clone(),
        series,
        bands: Vec::new(),
        rule: None,
        bars: false,
    };
    let Some(chart) = dots(&plot)? else {
        return Ok(None);
    };
    let mut html = chart_html(&chart);
    html.push_str(&figure_table(&runs));
    Ok(Some(Section {
        id: "floor",
        title: "Floor",
        html,
    }))
}

fn figure_table(runs: &[&Input]) -> String {
    let rows: Vec<Vec<String>> = runs
        .iter()
        .flat_map(|i| {
            i.run.figures.iter().map(|f| {
                vec![
                    i.label.clone(),
                    category(f),
                    f.metric.clone(),
                    format!("{:.1} {}", f.value, f.unit),
                ]
            })
        })
        .collect();
    table(&["run", "floor", "metric", "value"], &rows)
}
