//! OpenMetrics text (Prometheus): one gauge family per metric, one
//! sample per figure, the row as labels.
//!
//! A family is named `msgbench_<suite>_<metric>_<base unit>`: the metric
//! without the words that say its unit ([`units::stem`]), the value in
//! the base unit (`p50_ns` 1234 -> `msgbench_ipc_p50_seconds`
//! 0.000001234; msg/s -> `_messages_per_second`; % -> `_ratio`), with
//! `# HELP`, `# TYPE gauge` and, where there is a unit, `# UNIT` (the
//! name ends in it); the text ends with `# EOF`. Labels: `suite`, `host`,
//! `kernel`, then every field of the figure's key (`transport`, `size`,
//! `placement`...; a field named like one of ours, or `job`, `instance`,
//! `le`, `quantile`, is written `key_<field>`), values escaped (`\\`,
//! `\"`, `\n`). The same text is valid in Prometheus's older text format
//! (0.0.4), where `# UNIT` and `# EOF` are comments: what
//! `promtool check metrics` and a Pushgateway read.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use super::units::{self, Unit};
use super::{ExportError, Exporter, Subject};
use crate::results::envelope::{Better, Figure};

/// The OpenMetrics exporter.
pub struct OpenMetrics;

/// The content type of the text, for a scrape (`Accept`) or a push.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Label names the exporter writes itself, or Prometheus and a
/// Pushgateway give a meaning: a key field of one of these names is
/// written `key_<name>`.
const RESERVED: [&str; 7] = [
    "suite", "host", "kernel", "job", "instance", "le", "quantile",
];

/// One metric family as it is gathered.
struct Family {
    help: String,
    unit: &'static str,
    samples: Vec<String>,
    labels_seen: BTreeSet<String>,
}

impl Exporter for OpenMetrics {
    fn export(&self, s: &Subject) -> Result<String, ExportError> {
        let mut families: BTreeMap<String, Family> = BTreeMap::new();
        for f in s.exported() {
            let u = units::of(&f.unit);
            let name = family_name(s.suite, &f.metric, &u);
            let labels = labels(s, f)?;
            let fam = families.entry(name.clone()).or_insert_with(|| Family {
                help: help(s.suite, f, &u),
                unit: u.base,
                samples: Vec::new(),
                labels_seen: BTreeSet::new(),
            });
            if !fam.labels_seen.insert(labels.clone()) {
                return Err(ExportError::Duplicate(format!("{name}{{{labels}}}")));
            }
            let value = number(f.value / u.per_base);
            fam.samples.push(format!("{name}{{{labels}}} {value}"));
        }
        let mut out = String::new();
        for (name, fam) in &families {
            let _ = writeln!(out, "# HELP {name} {}", fam.help);
            let _ = writeln!(out, "# TYPE {name} gauge");
            if !fam.unit.is_empty() {
                let _ = writeln!(out, "# UNIT {name} {}", fam.unit);
            }
            for sample in &fam.samples {
                let _ = writeln!(out, "{sample}");
            }
        }
        out.push_str("# EOF\n");
        Ok(out)
    }
}

/// `s` with every character a name cannot hold as `_`.
fn name_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// The family of a figure: `msgbench_<suite>_<stem>_<base unit>`.
pub fn family_name(suite: &str, metric: &str, u: &Unit) -> String {
    let parts = [
        "msgbench".to_string(),
        name_safe(suite),
        name_safe(&units::stem(metric, u)),
        u.base.to_string(),
    ];
    let kept: Vec<&str> = parts
        .iter()
        .map(String::as_str)
        .filter(|p| !p.is_empty())
        .collect();
    kept.join("_")
}

/// The HELP text: plain words only, so it needs no escape in either
/// text format.
fn help(suite: &str, f: &Figure, u: &Unit) -> String {
    let unit = if !u.base.is_empty() {
        format!(", in {}", u.base.replace('_', " "))
    } else if !f.unit.is_empty() {
        format!(", in {}", name_safe(&f.unit))
    } else {
        String::new()
    };
    let better = match f.better {
        Better::Lower => ", lower is better",
        Better::Higher => ", higher is better",
        Better::Neither => "",
    };
    format!(
        "msgbench {} figure {}{unit}{better}",
        name_safe(suite),
        name_safe(&f.metric)
    )
}

/// A key field's label name: letters, digits and `_`, not starting with
/// a digit or `__`, and not one of the names reserved (`RESERVED`).
pub fn label_name(field: &str) -> String {
    let mut n = name_safe(field);
    if n.is_empty() || n.starts_with(|c: char| c.is_ascii_digit()) || n.starts_with("__") {
        n = format!("key{n}");
    }
    if RESERVED.contains(&n.as_str()) {
        n = format!("key_{n}");
    }
    n
}

/// A label value between double quotes: `\`, `"` and a newline escaped.
pub fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// A sample's labels, `suite="ipc",host="h",...`.
fn labels(s: &Subject, f: &Figure) -> Result<String, ExportError> {
    let mut names: BTreeMap<String, &str> = BTreeMap::new();
    let mut out = format!(
        "suite=\"{}\",host=\"{}\",kernel=\"{}\"",
        escape(s.suite),
        escape(s.host),
        escape(s.kernel)
    );
    for (field, value) in &f.key {
        let n = label_name(field);
        if let Some(other) = names.insert(n.clone(), field) {
            return Err(ExportError::LabelClash(other.into(), field.clone(), n));
        }
        let _ = write!(out, ",{n}=\"{}\"", escape(value));
    }
    Ok(out)
}

/// A value as both text formats write it (finite values only reach
/// here; Rust's shortest representation, never an exponent).
fn number(v: f64) -> String {
    format!("{v}")
}
