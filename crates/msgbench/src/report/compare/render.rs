//! Drawing a [`Comparison`]: one table (a column per key field, then the
//! metric, both values, the change, the verdict and why) with the counts,
//! the rule and the remarks under it; or the comparison as JSON.

use super::verdict::Verdict;
use super::{Comparison, Row};
use crate::results::table::{render as draw, Align, Format, Section, Table};
use crate::results::thousands;

/// The comparison in `format`.
pub fn render(cmp: &Comparison, format: Format) -> String {
    if format == Format::Json {
        return serde_json::to_string_pretty(cmp).unwrap_or_default() + "\n";
    }
    draw(&[Section::Table(table(cmp, format))], format)
}

/// The key fields of all rows, in order of first appearance.
fn key_names(rows: &[Row]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for k in rows.iter().flat_map(|r| r.key.keys()) {
        if !names.contains(k) {
            names.push(k.clone());
        }
    }
    names
}

/// The one table.
fn table(cmp: &Comparison, format: Format) -> Table {
    let keys = key_names(&cmp.rows);
    let mut head: Vec<&str> = keys.iter().map(String::as_str).collect();
    head.extend(["metric", "unit", "base", "new", "change", "verdict", "why"]);
    let mut align = vec![Align::Left; keys.len() + 2];
    align.extend([Align::Right, Align::Right, Align::Right]);
    align.extend([Align::Left, Align::Left]);
    let title = format!(
        "msgbench compare ({}): {} ({}) -> {} ({})",
        cmp.suite, cmp.base.path, cmp.base.started, cmp.new.path, cmp.new.started
    );
    let mut t = Table::new(title, &head).aligned(&align);
    for r in &cmp.rows {
        t.row(cells(r, &keys, format));
    }
    t.notes.push(summary(cmp));
    t.notes.push(rule(cmp.threshold_pct));
    t.notes.extend(cmp.notes.iter().cloned());
    t
}

/// A row's cells.
fn cells(r: &Row, keys: &[String], format: Format) -> Vec<String> {
    let num = |v: Option<f64>| v.map_or(String::from("-"), |v| number(v, format));
    let mut out: Vec<String> = keys
        .iter()
        .map(|k| r.key.get(k).cloned().unwrap_or_default())
        .collect();
    out.push(r.metric.clone());
    out.push(r.unit.clone());
    out.push(num(r.base));
    out.push(num(r.new));
    out.push(change(r, format));
    out.push(r.verdict.label().to_string());
    out.push(r.why.clone());
    out
}

/// The change cell: `+12.3%`, `n/a` from 0, empty for a one-run row.
fn change(r: &Row, format: Format) -> String {
    match (r.base.zip(r.new), r.change_pct) {
        (None, _) => String::new(),
        (Some(_), None) => "n/a".into(),
        (Some(_), Some(c)) if format == Format::Csv => format!("{c}"),
        (Some(_), Some(c)) => format!("{c:+.1}%"),
    }
}

/// A value as shown: CSV gets it whole; text gets thousands separators
/// from 1000 and about three significant digits below.
fn number(v: f64, format: Format) -> String {
    let a = v.abs();
    let sign = if v < 0.0 { "-" } else { "" };
    match format {
        Format::Csv => format!("{v}"),
        _ if a >= 1000.0 => format!("{sign}{}", thousands(a)),
        _ if a >= 100.0 => format!("{v:.0}"),
        _ if a >= 10.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

/// `12 rows: 1 slower, 11 no change.`
fn summary(cmp: &Comparison) -> String {
    let all = [
        Verdict::Faster,
        Verdict::Slower,
        Verdict::Changed,
        Verdict::NoChange,
        Verdict::Incomparable,
        Verdict::OnlyBase,
        Verdict::OnlyNew,
    ];
    let counts: Vec<String> = all
        .iter()
        .map(|v| (v, cmp.rows.iter().filter(|r| r.verdict == *v).count()))
        .filter(|(_, n)| *n > 0)
        .map(|(v, n)| format!("{n} {}", v.label()))
        .collect();
    format!("{} rows: {}.", cmp.rows.len(), counts.join(", "))
}

/// The verdict rule in one line.
fn rule(threshold: f64) -> String {
    format!(
        "A change is called when it exceeds {threshold}% and, where both runs have repeats, their ranges do not overlap (msgbench compare --help)."
    )
}
