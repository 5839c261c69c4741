//! Validate: the verdicts counted first, then each check's ratio (ours /
//! the reference tool's) as a dot per run, over its tolerance band (grey)
//! and the line at ratio 1. The rows are read typed, as the suite wrote
//! them (`suites::validate::Row`).

use anyhow::{Context as _, Result};

use super::chart::Series;
use super::dots::{dots, DotPlot};
use super::{answers, chart_html, key, of_suite, table, verdicts, Input, Section};
use crate::results::envelope::Figure;
use crate::suites::validate::Row;

fn check_name(f: &Figure) -> String {
    match key(f, "side") {
        "" => key(f, "check").to_string(),
        side => format!("{} ({side})", key(f, "check")),
    }
}

/// The row of check `name`.
fn row_of<'a>(rows: &'a [Row], name: &str) -> Option<&'a Row> {
    rows.iter().find(|r| r.name == name)
}

/// The validate section, or `None` without ratios.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let runs = of_suite(inputs, "validate");
    let mut plot = DotPlot {
        title: "Validate: ours / reference, with the tolerance band".into(),
        x_desc: "ratio (ours / reference tool)".into(),
        x_log: false,
        categories: Vec::new(),
        series: Vec::new(),
        bands: Vec::new(),
        rule: Some(1.0),
        bars: false,
    };
    let mut rows = Vec::new();
    for (n, input) in runs.iter().enumerate() {
        let typed: Vec<Row> = input.run.rows_as().context(input.label.clone())?;
        let mut points = Vec::new();
        for f in input.run.figures.iter().filter(|f| f.metric == "ratio") {
            let name = check_name(f);
            let at = match plot.categories.iter().position(|c| *c == name) {
                Some(at) => at,
                None => {
                    plot.categories.push(name.clone());
                    plot.categories.len() - 1
                }
            };
            points.push((f.value, at as f64));
            let row = row_of(&typed, key(f, "check"));
            let band = row.map(|r| (r.tolerance.low, r.tolerance.high));
            if let Some((lo, hi)) = band.filter(|_| !plot.bands.iter().any(|b| b.0 == at)) {
                plot.bands.push((at, lo, hi));
            }
            rows.push(table_row(input, f, row));
        }
        let mut s = Series::data(input.label.clone(), points, n);
        s.line = false;
        plot.series.push(s);
    }
    let Some(chart) = dots(&plot)? else {
        return Ok(None);
    };
    let answers: Vec<(&str, Vec<String>)> = runs
        .iter()
        .map(|i| (i.label.as_str(), answers::validate(&i.run)))
        .collect();
    let mut html = verdicts(&answers);
    html.push_str(&chart_html(&chart));
    html.push_str(&table(
        &["run", "check", "ratio", "tolerance", "verdict"],
        &rows,
    ));
    Ok(Some(Section {
        id: "validate",
        title: "Validate",
        html,
    }))
}

fn table_row(input: &Input, f: &Figure, row: Option<&Row>) -> Vec<String> {
    vec![
        input.label.clone(),
        check_name(f),
        format!("{:.3}", f.value),
        row.map_or(String::new(), |r| {
            format!("{} to {}", r.tolerance.low, r.tolerance.high)
        }),
        row.map_or("", |r| r.verdict.label()).to_string(),
    ]
}
