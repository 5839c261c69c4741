//! Printing (a table per group, like the lab's report, or markdown) and the
//! JSON document.

use serde::Serialize;

use super::options::{Format, Plan};
use super::outcome::Group;
use super::outcome::{Outcome, TestResult, Timing};
use crate::report::Header;

/// Counts of outcomes.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Summary {
    /// Behaviour tests that held.
    pub passed: usize,
    /// Behaviour tests that did not.
    pub failed: usize,
    /// Behaviour tests run without reaching a verdict.
    pub inconclusive: usize,
    /// Timing results measured.
    pub measured: usize,
    /// Not run here (privilege, kernel feature).
    pub skipped: usize,
    /// Could not be carried out.
    pub errors: usize,
    /// Stopped by SIGINT/SIGTERM before the end.
    pub interrupted: bool,
}

/// The whole report (`--json`).
#[derive(Debug, Serialize)]
pub struct Report {
    #[serde(flatten)]
    header: Header,
    /// `--quick`, `--sem`, `--duration`.
    pub settings: Settings,
    /// Every result, in run order, with raw samples.
    pub results: Vec<TestResult>,
    /// Outcome counts.
    pub summary: Summary,
}

/// The settings stored with the results.
#[derive(Debug, Serialize)]
pub struct Settings {
    /// `--quick`.
    pub quick: bool,
    /// `--sem`.
    pub sem: &'static str,
    /// `--duration`, seconds.
    pub duration_secs: f64,
}

impl Report {
    /// Assembles the report.
    pub fn new(header: Header, plan: &Plan, results: Vec<TestResult>, interrupted: bool) -> Report {
        let mut s = Summary {
            interrupted,
            ..Summary::default()
        };
        for r in &results {
            match &r.outcome {
                Outcome::Behaviour { pass: true, .. } => s.passed += 1,
                Outcome::Behaviour { pass: false, .. } => s.failed += 1,
                Outcome::Inconclusive { .. } => s.inconclusive += 1,
                Outcome::Timing(_) => s.measured += 1,
                Outcome::Skipped { .. } => s.skipped += 1,
                Outcome::Error { .. } => s.errors += 1,
            }
        }
        Report {
            header,
            settings: Settings {
                quick: plan.quick,
                sem: plan.sem.name(),
                duration_secs: plan.duration.as_secs_f64(),
            },
            results,
            summary: s,
        }
    }
}

/// Number with 3 significant digits at most, no exponent.
fn num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The cells of one row: ID, variant, result, count, avg, min, max, p50,
/// p99, p99.9, unit, reference.
fn cells(r: &TestResult, plan: &Plan) -> Vec<String> {
    let id = match r.substitute {
        Some(_) => format!("{} (subst.)", r.id),
        None => r.id.to_string(),
    };
    let mut c = vec![id, r.variant.clone()];
    match &r.outcome {
        Outcome::Behaviour { pass, observed, .. } => {
            c.push(if *pass { "PASS" } else { "FAIL" }.into());
            c.extend(std::iter::repeat_n(String::new(), 8));
            let _ = observed;
        }
        Outcome::Timing(t) => {
            c.push("measured".into());
            c.extend(timing_cells(t));
        }
        Outcome::Inconclusive { reason, .. } => {
            c.push(format!("INCONCLUSIVE: {reason}"));
            c.extend(std::iter::repeat_n(String::new(), 8));
        }
        Outcome::Skipped { reason } => {
            c.push(format!("skipped: {reason}"));
            c.extend(std::iter::repeat_n(String::new(), 8));
        }
        Outcome::Error { message } => {
            c.push(format!("ERROR: {message}"));
            c.extend(std::iter::repeat_n(String::new(), 8));
        }
    }
    if plan.reference {
        c.push(
            r.reference
                .as_ref()
                .map_or(String::new(), |x| x.text.into()),
        );
    }
    c
}

fn timing_cells(t: &Timing) -> Vec<String> {
    vec![
        t.count.to_string(),
        num(t.avg),
        num(t.min),
        num(t.max),
        num(t.p50),
        num(t.p99),
        num(t.p999),
        t.unit.label().into(),
    ]
}

/// The lines under a row: what was observed (behaviour), notes.
fn details(r: &TestResult) -> Vec<String> {
    let mut v = Vec::new();
    if let Outcome::Behaviour {
        observed, expected, ..
    } = &r.outcome
    {
        v.push(format!("observed: {}", observed.join(", ")));
        v.push(format!("expected: {expected}"));
    }
    if let Outcome::Inconclusive { observed, .. } = &r.outcome {
        v.push(format!("observed: {}", observed.join(", ")));
    }
    if let Some(s) = r.substitute {
        v.push(format!("substitute: {s}"));
    }
    if let Some(n) = &r.note {
        v.push(n.clone());
    }
    v
}

/// Prints one group's table.
pub fn print_group(g: Group, rows: &[TestResult], plan: &Plan) {
    let mut head: Vec<String> = [
        "Test", "Variant", "Result", "Samples", "Avg", "Min", "Max", "p50", "p99", "p99.9", "Unit",
    ]
    .map(String::from)
    .to_vec();
    if plan.reference {
        head.push("QNX 6.5 (avg / max / min)".into());
    }
    let body: Vec<(Vec<String>, Vec<String>)> =
        rows.iter().map(|r| (cells(r, plan), details(r))).collect();
    println!("\n{} ({})", g.title(), g.name());
    match plan.format {
        Format::Markdown => {
            println!("\n| {} |", head.join(" | "));
            println!("|{}", " --- |".repeat(head.len()));
            for (c, d) in &body {
                let mut c = c.clone();
                if !d.is_empty() {
                    c[2] = format!("{} ({})", c[2], d.join("; "));
                }
                println!("| {} |", c.join(" | ").replace('\n', " "));
            }
        }
        Format::Table => {
            // The result column of a skipped or failed row can be long:
            // it is not padded, so the figures stay aligned for the rest.
            let mut w: Vec<usize> = head.iter().map(|h| h.len()).collect();
            for (c, _) in &body {
                for (k, s) in c.iter().enumerate() {
                    if k != 2 || c[3].is_empty() {
                        w[k] = w[k].max(if k == 2 { 0 } else { s.len() });
                    }
                    if k == 2 && !c[3].is_empty() {
                        w[k] = w[k].max(s.len());
                    }
                }
            }
            w[2] = w[2].max("measured".len());
            let line = |c: &[String]| {
                c.iter()
                    .enumerate()
                    .map(|(k, s)| {
                        if (3..=9).contains(&k) {
                            format!("{s:>w$}", w = w[k])
                        } else {
                            format!("{s:<w$}", w = w[k])
                        }
                    })
                    .collect::<Vec<_>>()
                    .join("  ")
                    .trim_end()
                    .to_string()
            };
            println!("{}", line(&head));
            println!("{}", "-".repeat(line(&head).len()));
            for (c, d) in &body {
                if c[3].is_empty() && c[2].len() > w[2] {
                    // A long verdict: print it after ID and variant.
                    println!(
                        "{:<w0$}  {:<w1$}  {}",
                        c[0],
                        c[1],
                        c[2],
                        w0 = w[0],
                        w1 = w[1]
                    );
                } else {
                    println!("{}", line(c));
                }
                for l in d {
                    println!("    {l}");
                }
            }
        }
    }
}

/// Prints the summary at the end.
pub fn print_summary(r: &Report, plan: &Plan) {
    let s = &r.summary;
    let text = format!(
        "{} passed, {} failed, {} inconclusive, {} measured, {} skipped, {} errors{}",
        s.passed,
        s.failed,
        s.inconclusive,
        s.measured,
        s.skipped,
        s.errors,
        if s.interrupted { " (interrupted)" } else { "" }
    );
    match plan.format {
        Format::Markdown => println!("\n**Summary:** {text}"),
        Format::Table => println!("\nSummary: {text}"),
    }
}
