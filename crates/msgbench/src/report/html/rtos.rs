//! Rtos: the summary line first (passed, failed, ... as the terminal
//! prints it), then each test's result next to the QNX 6.5 column (the lab's
//! figure): timing tests' averages as dots with the QNX 6.5 average as a
//! grey cross, and a table of every test with its verdict.

use anyhow::Result;
use serde_json::Value;

use super::chart::Series;
use super::dots::{dots, DotPlot};
use super::fields::field;
use super::{answers, chart_html, key, of_suite, para, table, verdicts, Input, Section};
use crate::results::envelope::Figure;

/// Microseconds per unit, for the units timing tests use.
fn us_per(unit: &str) -> Option<f64> {
    match unit {
        "ns" => Some(1e-3),
        "us" | "µs" => Some(1.0),
        "ms" => Some(1e3),
        "s" => Some(1e6),
        _ => None,
    }
}

fn test_name(id: &str, variant: &str) -> String {
    if variant.is_empty() {
        id.to_string()
    } else {
        format!("{id} {variant}")
    }
}

/// The row of test `id`/`variant` in a run.
fn row<'a>(input: &'a Input, id: &str, variant: &str) -> Option<&'a Value> {
    input
        .run
        .rows
        .iter()
        .find(|r| field(r, "id") == id && field(r, "variant") == variant)
}

/// The rtos section, or `None` without rtos figures or rows.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let runs = of_suite(inputs, "rtos");
    if runs
        .iter()
        .all(|i| i.run.figures.is_empty() && i.run.rows.is_empty())
    {
        return Ok(None);
    }
    let answers: Vec<(&str, Vec<String>)> = runs
        .iter()
        .map(|i| (i.label.as_str(), answers::rtos(&i.run)))
        .collect();
    let mut html = verdicts(&answers);
    if let Some(c) = dots(&timing_plot(&runs))? {
        html.push_str(&chart_html(&c));
    }
    html.push_str(&para(
        "QNX 6.5: the independent lab's figure for the same test (Pentium MMX 200 MHz), as the lab gave it (docs/methodology.md, \"The RTOS catalogue\").",
    ));
    html.push_str(&result_table(&runs));
    Ok(Some(Section {
        id: "rtos",
        title: "RTOS",
        html,
    }))
}

fn avg_figures(input: &Input) -> impl Iterator<Item = &Figure> {
    input.run.figures.iter().filter(|f| f.metric == "avg")
}

/// Averages of timing tests in µs, one dot per run; QNX 6.5 as crosses.
fn timing_plot(runs: &[&Input]) -> DotPlot {
    let mut categories: Vec<String> = Vec::new();
    let mut series = Vec::new();
    let mut qnx = Vec::new();
    for (n, input) in runs.iter().enumerate() {
        let mut points = Vec::new();
        for f in avg_figures(input) {
            let Some(scale) = us_per(&f.unit) else {
                continue;
            };
            let (id, variant) = (key(f, "id"), key(f, "variant"));
            let name = test_name(id, variant);
            let at = categories
                .iter()
                .position(|c| *c == name)
                .unwrap_or_else(|| {
                    categories.push(name.clone());
                    categories.len() - 1
                });
            points.push((f.value * scale, at as f64));
            let reference =
                row(input, id, variant).and_then(|r| r.get("reference")?.get("avg")?.as_f64());
            if let Some(r) = reference.filter(|_| n == 0) {
                qnx.push((r * scale, at as f64));
            }
        }
        let mut s = Series::data(input.label.clone(), points, n);
        s.line = false;
        series.push(s);
    }
    series.push(Series::reference("QNX 6.5 (lab's average)".into(), qnx, 0));
    DotPlot {
        title: "RTOS timing tests: average, with the QNX 6.5 figure".into(),
        x_desc: "average, µs (log)".into(),
        x_log: true,
        categories,
        series,
        bands: Vec::new(),
        rule: None,
        bars: false,
    }
}

/// A result's verdict: PASS or FAIL for a behaviour, else its kind.
fn verdict(outcome: &Value) -> String {
    let kind = outcome.get("kind").and_then(Value::as_str).unwrap_or("");
    match outcome.get("pass").and_then(Value::as_bool) {
        Some(true) => "PASS".into(),
        Some(false) => "FAIL".into(),
        None => kind.to_string(),
    }
}

fn num(v: Option<&Value>) -> String {
    v.and_then(Value::as_f64)
        .map_or(String::new(), |x| format!("{x:.3}"))
}

/// Every test of every run: result, verdict, QNX 6.5.
fn result_table(runs: &[&Input]) -> String {
    let mut rows = Vec::new();
    for input in runs {
        for r in &input.run.rows {
            let outcome = r.get("outcome");
            let result = outcome.map_or(String::new(), verdict);
            let unit = outcome
                .and_then(|o| o.get("unit"))
                .and_then(Value::as_str)
                .unwrap_or("");
            let ours = match outcome.and_then(|o| o.get("avg")) {
                Some(v) => format!("{} {unit}", num(Some(v))),
                None => String::new(),
            };
            let reference = r
                .get("reference")
                .and_then(|x| x.get("text"))
                .and_then(Value::as_str)
                .unwrap_or("");
            rows.push(vec![
                input.label.clone(),
                test_name(&field(r, "id"), &field(r, "variant")),
                result,
                ours,
                reference.to_string(),
            ]);
        }
    }
    table(
        &["run", "test", "outcome", "average here", "QNX 6.5"],
        &rows,
    )
}
