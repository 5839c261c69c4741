//! The one results format: every suite writes the same versioned
//! envelope around its own rows (`docs/results.schema.json` describes it).
//!
//! Two views of the results travel together:
//! - `rows`: the suite's own rows, complete (histograms, per-thread
//!   figures, observed events), documented by the suite's types;
//! - `figures`: the same results flattened into one generic shape, a key
//!   (which row: transport, size, placement, mode, threads...), a metric
//!   name, a value, a unit and which way is better. `msgbench compare`
//!   and `msgbench report` read these, so they need no knowledge of any
//!   suite's row types.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::ClockInfo;
use crate::measure::env::Environment;
use crate::pingpong::floor::FloorReport;

/// Version of the envelope. Bump it when a field changes meaning or
/// disappears; adding an optional field does not need a bump.
pub const SCHEMA_VERSION: u32 = 1;

/// Which way a figure improves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Better {
    /// Smaller is better (latency, CPU per message).
    Lower,
    /// Larger is better (messages per second).
    Higher,
    /// Neither: a property of the machine or a setting (a clock's rate).
    Neither,
}

/// One measured figure in the generic shape.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Which row: the fields that identify it within its suite, e.g.
    /// `{"transport": "uds", "size": "64", "placement": "cross"}`.
    pub key: BTreeMap<String, String>,
    /// What was measured, e.g. `p50_ns`, `rate_per_thread`.
    pub metric: String,
    /// The figure.
    pub value: f64,
    /// Its unit, e.g. `ns`, `msg/s`, `%`, `ratio`.
    pub unit: String,
    /// Which way it improves.
    pub better: Better,
    /// The value of each repeat behind it, where the suite repeats (the
    /// spread `msgbench compare` weighs a change against); empty when it
    /// was measured once.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub repeats: Vec<f64>,
}

impl Figure {
    /// A figure measured once.
    pub fn new(
        key: &[(&str, String)],
        metric: &str,
        value: f64,
        unit: &str,
        better: Better,
    ) -> Figure {
        Figure {
            key: key
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.clone()))
                .collect(),
            metric: metric.to_string(),
            value,
            unit: unit.to_string(),
            better,
            repeats: Vec::new(),
        }
    }

    /// The same figure, with the values of the repeats behind it.
    pub fn with_repeats(mut self, repeats: Vec<f64>) -> Figure {
        self.repeats = repeats;
        self
    }

    /// The key as one line, `transport=uds size=64`, in key order.
    pub fn key_text(&self) -> String {
        let parts: Vec<String> = self.key.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.join(" ")
    }
}

/// How a run ended, the same for every suite.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// Rows measured (or verdicts reached).
    pub rows: usize,
    /// Rows that failed: a wrong answer, a broken call, a FAIL verdict,
    /// an error. The exit status is 1 when this is not 0.
    pub failed: usize,
    /// Rows not run here, each with its reason in the rows.
    pub skipped: usize,
    /// Stopped by SIGINT or SIGTERM before the end.
    pub interrupted: bool,
}

/// The envelope as written: borrowed parts, the suite's settings and rows
/// as whatever serialisable types the suite has.
#[derive(Debug, Serialize)]
pub struct Envelope<'a, S: Serialize, R: Serialize> {
    /// [`SCHEMA_VERSION`].
    pub schema: u32,
    /// The suite, e.g. `ipc`.
    pub suite: &'static str,
    /// The program's arguments, program name first.
    pub command_line: &'a [String],
    /// Start of the run, RFC 3339 UTC.
    pub started: &'a str,
    /// End of the run, RFC 3339 UTC.
    pub finished: String,
    /// Machine, kernel, idle states, PM-QoS, policy, mlock.
    pub environment: &'a Environment,
    /// The clock used for timestamps.
    pub clock: &'a ClockInfo,
    /// The machine's floor, where the suite measured one in the same run.
    pub floor: Option<&'a FloorReport>,
    /// The suite's checked settings (what the plan was).
    pub settings: &'a S,
    /// The suite's rows, complete.
    pub rows: &'a [R],
    /// The rows as generic figures.
    pub figures: &'a [Figure],
    /// How the run ended.
    pub outcome: &'a Outcome,
    /// Remarks that hold for the whole run (warnings about the machine,
    /// methods), one sentence each.
    pub notes: &'a [String],
    /// Reference programs run beside the rows (`msgbench ipc
    /// --vs-ipc-bench`); absent when none ran.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub peers: &'a [super::peer::PeerRun],
    /// The suite's answers, judged from its rows when it ran (`Suite::
    /// judge`); absent when the suite gives none.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub verdicts: &'a [String],
}

/// An envelope read back from a file: the parts every reader needs typed,
/// the suite's own parts as JSON values.
#[derive(Debug, Clone, Deserialize)]
pub struct Run {
    /// [`SCHEMA_VERSION`] of the writer.
    pub schema: u32,
    /// The suite.
    pub suite: String,
    /// The program's arguments.
    pub command_line: Vec<String>,
    /// Start of the run.
    pub started: String,
    /// End of the run.
    pub finished: String,
    /// Machine and kernel.
    pub environment: Environment,
    /// The clock.
    pub clock: ClockInfo,
    /// The floor, where measured.
    #[serde(default)]
    pub floor: Option<serde_json::Value>,
    /// The suite's settings.
    pub settings: serde_json::Value,
    /// The suite's rows.
    pub rows: Vec<serde_json::Value>,
    /// The generic figures.
    pub figures: Vec<Figure>,
    /// How the run ended.
    pub outcome: Outcome,
    /// Remarks.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The suite's answers as judged when it ran (none in runs from
    /// before they were kept, or of suites that give none).
    #[serde(default)]
    pub verdicts: Vec<String>,
}

impl Run {
    /// The rows as the suite's own row type, as it wrote them: a row
    /// that does not read as one is refused, naming the suite, the row's
    /// index and the field at fault, in one line.
    pub fn rows_as<T: serde::de::DeserializeOwned>(&self) -> Result<Vec<T>> {
        self.rows
            .iter()
            .enumerate()
            .map(|(i, r)| {
                T::deserialize(r)
                    .with_context(|| format!("{} run: row {i} is not one of its rows", self.suite))
            })
            .collect()
    }

    /// Reads a results file, refusing what is not an envelope of this
    /// version, with the path and the fault in one line.
    pub fn load(path: &Path) -> Result<Run> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("{}: cannot read", path.display()))?;
        Run::parse(&text, &path.display().to_string())
    }

    /// Reads an envelope's text (`what` names where it came from in the
    /// one-line error: a file, a stored run).
    pub fn parse(text: &str, what: &str) -> Result<Run> {
        let value: serde_json::Value =
            serde_json::from_str(text).with_context(|| format!("{what}: not JSON"))?;
        match value.get("schema").and_then(serde_json::Value::as_u64) {
            Some(v) if v == u64::from(SCHEMA_VERSION) => {}
            Some(v) => bail!(
                "{what}: results format version {v}, this msgbench reads version {SCHEMA_VERSION}"
            ),
            None => bail!(
                "{what}: not a msgbench results file (no \"schema\" field; written by --json?)"
            ),
        }
        serde_json::from_value(value)
            .with_context(|| format!("{what}: not a msgbench results file"))
    }

    /// A short label for the run: the file's stem, else suite and time.
    pub fn label(&self, path: &Path) -> String {
        path.file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| format!("{} {}", self.suite, self.started))
    }
}

/// `value` as `--json` writes it: pretty JSON and a newline.
pub fn text(value: &impl Serialize) -> Result<String> {
    Ok(serde_json::to_string_pretty(value).context("serialising results")? + "\n")
}

/// Writes `value` to `path` as pretty JSON, creating parent directories;
/// errors name the option (`--json FILE`).
pub fn write(path: &Path, value: &impl Serialize) -> Result<()> {
    write_text(path, &text(value)?)
}

/// Writes an envelope's `text` to `path`, creating parent directories;
/// errors name the option (`--json FILE`).
pub fn write_text(path: &Path, text: &str) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| {
            format!("--json {}: cannot create {}", path.display(), dir.display())
        })?;
    }
    std::fs::write(path, text).with_context(|| format!("--json {}: cannot write", path.display()))
}

/// Now, RFC 3339 UTC to the second.
pub fn now() -> String {
    humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_key_reads_in_key_order() {
        let f = Figure::new(
            &[("transport", "uds".into()), ("size", "64".into())],
            "p50_ns",
            1.0,
            "ns",
            Better::Lower,
        );
        assert_eq!(f.key_text(), "size=64 transport=uds");
    }

    #[test]
    fn a_file_without_a_schema_or_of_another_version_is_refused() {
        let dir = std::env::temp_dir().join(format!("msgbench-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let old = dir.join("old.json");
        std::fs::write(&old, r#"{"environment": {}}"#).unwrap();
        let e = Run::load(&old).unwrap_err().to_string();
        assert!(e.contains("no \"schema\" field"), "{e}");
        let next = dir.join("next.json");
        std::fs::write(&next, r#"{"schema": 99}"#).unwrap();
        let e = Run::load(&next).unwrap_err().to_string();
        assert!(e.contains("version 99"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
