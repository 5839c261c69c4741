//! One metric per line, for the engines that read a test's output line
//! by line: `lines`, `NAME: VALUE UNIT` (LKP's parse step reads
//! `name: value`), and `lava`, `lava-test-case NAME --result pass
//! --measurement VALUE --units UNIT` (a LAVA test shell runs the lines).
//!
//! A name is the suite, the key's fields and the metric, joined by `.`:
//! `ipc.api_in-place.placement_same.size_64.transport_uds.p50_ns`, each
//! field `FIELD_VALUE`, in the key's order. Names hold only letters,
//! digits, `_`, `-` and `.` (a LAVA test case name has no white space,
//! and LAVA splits a result's fields at `=`): in each part, any run of
//! other characters (and `-`) is one `-`, none at the part's ends
//! (`cache line, threads` -> `cache-line-threads`, `0->1` -> `0-1`).
//! Values are in the envelope's unit, written as plain decimals (never an
//! exponent); units keep letters, digits and `_-/%.`. A behaviour verdict
//! (`pass`, 1 or 0) is `--result pass` or `--result fail`.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::{ExportError, Exporter, Subject};
use crate::results::envelope::Figure;

/// `name: value unit`, one line a figure.
pub struct Lines;

/// `lava-test-case name --result pass --measurement value --units unit`,
/// one line a figure.
pub struct Lava;

impl Exporter for Lines {
    fn export(&self, s: &Subject) -> Result<String, ExportError> {
        each(s, |out, name, f| {
            let unit = unit_safe(&f.unit);
            let _ = write!(out, "{name}: {}", f.value);
            if !unit.is_empty() {
                let _ = write!(out, " {unit}");
            }
        })
    }
}

impl Exporter for Lava {
    fn export(&self, s: &Subject) -> Result<String, ExportError> {
        each(s, |out, name, f| {
            let result = if f.metric == "pass" && f.value == 0.0 {
                "fail"
            } else {
                "pass"
            };
            let _ = write!(
                out,
                "lava-test-case {name} --result {result} --measurement {}",
                f.value
            );
            let unit = unit_safe(&f.unit);
            if !unit.is_empty() {
                let _ = write!(out, " --units {unit}");
            }
        })
    }
}

/// One line per exported figure, each written by `line` after its
/// name; a name given twice is an error.
fn each(s: &Subject, line: impl Fn(&mut String, &str, &Figure)) -> Result<String, ExportError> {
    let mut out = String::new();
    let mut seen = BTreeSet::new();
    for f in s.exported() {
        let n = name(s.suite, f);
        if !seen.insert(n.clone()) {
            return Err(ExportError::Duplicate(n));
        }
        line(&mut out, &n, f);
        out.push('\n');
    }
    Ok(out)
}

/// A figure's name: `suite.field_value....metric`.
pub fn name(suite: &str, f: &Figure) -> String {
    let mut parts = vec![part(suite)];
    parts.extend(
        f.key
            .iter()
            .map(|(k, v)| format!("{}_{}", part(k), part(v))),
    );
    parts.push(part(&f.metric));
    parts.join(".")
}

/// `s` with every run of characters other than letters, digits and `_`
/// as one `-`, none at either end (`-` alone for a value of none of
/// them: the broker's transport `-`).
fn part(s: &str) -> String {
    let p = squeeze(s, |c| c.is_ascii_alphanumeric() || c == '_');
    match p.trim_matches('-') {
        "" if !s.is_empty() => "-".to_string(),
        t => t.to_string(),
    }
}

/// A unit as a single word: letters, digits, `_`, `-`, `/`, `%`, `.`.
fn unit_safe(s: &str) -> String {
    squeeze(s, |c| c.is_ascii_alphanumeric() || "_-/%.".contains(c))
}

/// `s` with every run of characters `keep` refuses as one `-`.
fn squeeze(s: &str, keep: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.chars() {
        if keep(c) {
            if gap {
                out.push('-');
                gap = false;
            }
            out.push(c);
        } else {
            gap = true;
        }
    }
    if gap {
        out.push('-');
    }
    out
}
