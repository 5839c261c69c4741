//! Bencher Metric Format JSON (Bencher's `json` adapter reads it;
//! docs/bmf.schema.json): `{"BENCHMARK": {"MEASURE": {"value": V,
//! "lower_value": L, "upper_value": U}}}`.
//!
//! A benchmark is a row: the suite and the figure's key, `ipc
//! api=in-place placement=same size=64 transport=uds`. A measure is a
//! metric, named with its unit where the metric's name does not say it
//! (`p50_ns`, `throughput_msg_per_s`, `avg_us`: one Bencher measure has
//! one unit), its value in the envelope's unit. Where the figure has
//! repeats, `lower_value` and `upper_value` are the lowest and highest of
//! the repeats and the value; without repeats there are none.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{units, ExportError, Exporter, Subject};
use crate::results::envelope::Figure;

/// The BMF exporter.
pub struct Bmf;

impl Exporter for Bmf {
    fn export(&self, s: &Subject) -> Result<String, ExportError> {
        let mut doc: BTreeMap<String, BTreeMap<String, Value>> = BTreeMap::new();
        for f in s.exported() {
            let bench = benchmark(s.suite, f);
            let m = measure(f);
            let measures = doc.entry(bench.clone()).or_default();
            if measures.contains_key(&m) {
                return Err(ExportError::Duplicate(format!("{bench:?} {m:?}")));
            }
            measures.insert(m, metric(f));
        }
        // A map of strings to numbers always serialises.
        let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
        Ok(text + "\n")
    }
}

/// The benchmark a figure belongs to: its suite and row.
pub fn benchmark(suite: &str, f: &Figure) -> String {
    if f.key.is_empty() {
        suite.to_string()
    } else {
        format!("{suite} {}", f.key_text())
    }
}

/// The measure: the metric, and its unit unless the name says it.
pub fn measure(f: &Figure) -> String {
    let u = units::of(&f.unit);
    if u.slug.is_empty() || units::named_in(&f.metric, &u) {
        f.metric.clone()
    } else {
        format!("{}_{}", f.metric, u.slug)
    }
}

/// The value, and the repeats' range around it where there are repeats.
fn metric(f: &Figure) -> Value {
    let spread = f
        .repeats
        .iter()
        .copied()
        .filter(|r| r.is_finite())
        .chain(std::iter::once(f.value));
    if f.repeats.is_empty() {
        return json!({ "value": f.value });
    }
    let lo = spread.clone().fold(f64::INFINITY, f64::min);
    let hi = spread.fold(f64::NEG_INFINITY, f64::max);
    json!({ "value": f.value, "lower_value": lo, "upper_value": hi })
}
