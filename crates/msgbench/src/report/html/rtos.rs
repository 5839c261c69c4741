//! Rtos: the summary line first (passed, failed, ... as the terminal
//! prints it), then each test's result next to the QNX 6.5 column (the lab's
//! figure): timing tests' averages as dots with the QNX 6.5 average as a
//! grey cross, and a table of every test with its verdict.

use anyhow::Result;

use super::chart::Series;
use super::dots::{dots, DotPlot};
use super::{answers, chart_html, of_suite, para, table, typed, verdicts, Input, Section, Typed};
use crate::suites::rtos::{Outcome, TestResult, Unit};

/// A run's rows, read as the suite wrote them.
type RtosRun<'a> = Typed<'a, TestResult>;

/// Microseconds per unit, for the units timing tests use.
fn us_per(unit: Unit) -> Option<f64> {
    match unit {
        Unit::Count => None,
        u => Some(u.ns() / 1e3),
    }
}

/// The rtos section, or `None` without rtos figures or rows.
pub fn section(inputs: &[Input]) -> Result<Option<Section>> {
    let inputs = of_suite(inputs, "rtos");
    if inputs
        .iter()
        .all(|i| i.run.figures.is_empty() && i.run.rows.is_empty())
    {
        return Ok(None);
    }
    let runs: Vec<RtosRun> = typed(&inputs)?;
    let answers: Vec<(&str, Vec<String>)> = inputs
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

/// Averages of timing tests in µs, one dot per run; QNX 6.5 as crosses.
fn timing_plot(runs: &[RtosRun]) -> DotPlot {
    let mut categories: Vec<String> = Vec::new();
    let mut series = Vec::new();
    let mut qnx = Vec::new();
    for (n, run) in runs.iter().enumerate() {
        let mut points = Vec::new();
        for r in &run.rows {
            let Outcome::Timing(t) = &r.outcome else {
                continue;
            };
            let Some(scale) = us_per(t.unit) else {
                continue;
            };
            let name = r.name();
            let at = categories
                .iter()
                .position(|c| *c == name)
                .unwrap_or_else(|| {
                    categories.push(name);
                    categories.len() - 1
                });
            points.push((t.avg * scale, at as f64));
            let reference = r.reference.as_ref().and_then(|x| x.avg);
            if let Some(x) = reference.filter(|_| n == 0) {
                qnx.push((x * scale, at as f64));
            }
        }
        let mut s = Series::data(run.label.to_string(), points, n);
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
fn verdict(outcome: &Outcome) -> &'static str {
    match outcome {
        Outcome::Behaviour { pass: true, .. } => "PASS",
        Outcome::Behaviour { pass: false, .. } => "FAIL",
        Outcome::Inconclusive { .. } => "inconclusive",
        Outcome::Timing(_) => "timing",
        Outcome::Skipped { .. } => "skipped",
        Outcome::Error { .. } => "error",
    }
}

/// Every test of every run: result, verdict, QNX 6.5.
fn result_table(runs: &[RtosRun]) -> String {
    let mut rows = Vec::new();
    for run in runs {
        for r in &run.rows {
            let ours = match &r.outcome {
                Outcome::Timing(t) => format!("{:.3} {}", t.avg, t.unit.label()),
                _ => String::new(),
            };
            let reference = r.reference.as_ref().map_or("", |x| &x.text);
            rows.push(vec![
                run.label.to_string(),
                r.name(),
                verdict(&r.outcome).to_string(),
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
