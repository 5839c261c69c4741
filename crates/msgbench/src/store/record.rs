//! A run as the store keeps it: the envelope's text, exactly as `--json`
//! writes it, with the columns a listing filters on, the figures one per
//! row (for trends), a digest that makes a run unique in a store, and a
//! headline figure.

use std::fmt::Write as _;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::headline;
use super::StoreError;
use crate::results::envelope::{Run, SCHEMA_VERSION};

/// How a run came into the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// Recorded by the suite that ran it.
    Run,
    /// Loaded with `msgbench history import`.
    Import,
}

impl Origin {
    /// As stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Run => "run",
            Origin::Import => "import",
        }
    }
}

/// One figure as stored: its key as canonical JSON text.
#[derive(Debug, Clone, PartialEq)]
pub struct FigureRow {
    /// The metric.
    pub metric: String,
    /// The key, a JSON object with its fields in order.
    pub key: String,
    /// The value (finite: others are not stored).
    pub value: f64,
    /// The unit.
    pub unit: String,
}

/// A run ready to be written.
#[derive(Debug, Clone)]
pub struct NewRun {
    /// The envelope, byte for byte.
    pub text: String,
    /// SHA-256 of the envelope's canonical JSON (keys sorted, no space):
    /// the same run written twice, or reformatted, has the same digest.
    pub digest: String,
    /// The suite.
    pub suite: String,
    /// Start, RFC 3339 UTC.
    pub started: String,
    /// End, RFC 3339 UTC.
    pub finished: String,
    /// Host name.
    pub host: String,
    /// Kernel.
    pub kernel: String,
    /// CPU model.
    pub cpu_model: String,
    /// msgbench version that ran it.
    pub tool_version: String,
    /// The envelope's format version.
    pub format: i64,
    /// `ok`, `failed` or `interrupted`.
    pub outcome: &'static str,
    /// The headline figure, as shown by `msgbench history`.
    pub headline: String,
    /// How it came in.
    pub origin: Origin,
    /// How its suite printed it (JSON of [`super::Rendering`]), for runs
    /// recorded by their suite.
    pub rendering: Option<String>,
    /// Its figures.
    pub figures: Vec<FigureRow>,
    /// The campaign entry it is the run of, if any.
    pub campaign: Option<super::Tag>,
}

impl NewRun {
    /// Reads an envelope's text: a JSON envelope of the format this
    /// msgbench reads, else an error in one line.
    pub fn from_text(
        text: String,
        origin: Origin,
        rendering: Option<String>,
    ) -> Result<NewRun, StoreError> {
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| StoreError::NotEnvelope(format!("not JSON: {e}")))?;
        match value.get("schema").and_then(Value::as_u64) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => {
                return Err(StoreError::NotEnvelope(format!(
                    "results format version {v}, this msgbench reads version {SCHEMA_VERSION}"
                )))
            }
            None => {
                return Err(StoreError::NotEnvelope(
                    "not a msgbench results file (no \"schema\" field)".into(),
                ))
            }
        }
        let digest = digest(&value);
        let run: Run = serde_json::from_value(value)
            .map_err(|e| StoreError::NotEnvelope(format!("not a msgbench results file: {e}")))?;
        Ok(NewRun::of(text, digest, &run, origin, rendering))
    }

    fn of(
        text: String,
        digest: String,
        run: &Run,
        origin: Origin,
        rendering: Option<String>,
    ) -> NewRun {
        let env = &run.environment;
        let o = &run.outcome;
        let outcome = if o.interrupted {
            "interrupted"
        } else if o.failed > 0 {
            "failed"
        } else {
            "ok"
        };
        NewRun {
            text,
            digest,
            suite: run.suite.clone(),
            started: run.started.clone(),
            finished: run.finished.clone(),
            host: env.hostname.clone(),
            kernel: env.kernel.clone(),
            cpu_model: env.cpu_model.clone(),
            tool_version: env.tool_version.clone(),
            format: i64::from(run.schema),
            outcome,
            headline: headline::of(run),
            origin,
            rendering,
            figures: figure_rows(run),
            campaign: None,
        }
    }
}

/// The run's finite figures as rows.
fn figure_rows(run: &Run) -> Vec<FigureRow> {
    run.figures
        .iter()
        .filter(|f| f.value.is_finite())
        .map(|f| FigureRow {
            metric: f.metric.clone(),
            key: serde_json::to_string(&f.key).unwrap_or_default(),
            value: f.value,
            unit: f.unit.clone(),
        })
        .collect()
}

/// SHA-256 (hex) of `v` written canonically.
pub fn digest(v: &Value) -> String {
    let mut text = String::new();
    canonical(v, &mut text);
    let sum = Sha256::digest(text.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in sum {
        let _ = write!(hex, "{b:02x}");
    }
    hex
}

/// `v` as compact JSON with every object's keys in order, so the text
/// does not depend on how the envelope was formatted.
fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(x) = m.get(k) {
                    canonical(x, out);
                }
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                canonical(x, out);
            }
            out.push(']');
        }
        x => out.push_str(&x.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_ignores_layout_and_key_order_but_not_values() {
        let a: Value = serde_json::from_str(r#"{"b": [1, {"y": 2, "x": "s"}], "a": 1.5}"#).unwrap();
        let b: Value = serde_json::from_str(r#"{"a":1.5,"b":[1,{"x":"s","y":2}]}"#).unwrap();
        let c: Value = serde_json::from_str(r#"{"a":1.5,"b":[1,{"x":"s","y":3}]}"#).unwrap();
        assert_eq!(digest(&a), digest(&b));
        assert_ne!(digest(&a), digest(&c));
        assert_eq!(digest(&a).len(), 64);
    }

    #[test]
    fn what_is_not_an_envelope_is_refused_in_one_line() {
        for (text, why) in [
            ("nope", "not JSON"),
            ("{}", "no \"schema\" field"),
            (r#"{"schema": 7}"#, "results format version 7"),
            (r#"{"schema": 1}"#, "not a msgbench results file"),
        ] {
            let e = NewRun::from_text(text.into(), Origin::Import, None)
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "{text}: {e}");
            assert!(!e.contains('\n'), "{e}");
        }
    }
}
