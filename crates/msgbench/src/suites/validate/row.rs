//! One comparison row: the reference figure, ours, their ratio, the
//! tolerance band it is judged under and the verdict.

use serde::{Deserialize, Serialize};

use super::handover::Latency;
use crate::suites::{RowStatus, SuiteRow};

/// A figure, microseconds: the average always, min and max when the tool
/// reports them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Figure {
    /// Smallest sample.
    pub min_us: Option<f64>,
    /// The compared statistic: mean per operation.
    pub avg_us: f64,
    /// Largest sample (reported, never compared: it is noise).
    pub max_us: Option<f64>,
}

impl From<Latency> for Figure {
    fn from(l: Latency) -> Figure {
        Figure {
            min_us: Some(l.min_us),
            avg_us: l.avg_us,
            max_us: Some(l.max_us),
        }
    }
}

impl Figure {
    /// A figure with only an average (perf).
    pub fn avg(avg_us: f64) -> Figure {
        Figure {
            min_us: None,
            avg_us,
            max_us: None,
        }
    }
}

/// The band of agreeing ratios: ours agrees with the reference when
/// `low <= ours / reference <= high`, or when the two averages differ by
/// at most `slack_us` (the reference's resolution). Every row carries
/// its own, so that a reader can draw the ratio inside its band.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Lowest agreeing ratio (ours / reference; `lo` as first written).
    #[serde(alias = "lo")]
    pub low: f64,
    /// Highest agreeing ratio (ours / reference; `hi` as first written).
    #[serde(alias = "hi")]
    pub high: f64,
    /// Absolute difference that always agrees, microseconds (none in
    /// rows written before it).
    #[serde(default)]
    pub slack_us: f64,
}

/// The outcome of a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Within the tolerance.
    Agree,
    /// Outside it: reported, not an error.
    Disagree,
    /// The reference tool is not installed.
    Missing,
    /// The tool failed, its output could not be parsed, or ours failed.
    Error,
}

impl Tolerance {
    /// The band as printed: `0.67-1.50`, with `or +-1 us` where there is
    /// slack.
    pub fn label(&self) -> String {
        let band = format!("{:.2}-{:.2}", self.low, self.high);
        if self.slack_us > 0.0 {
            format!("{band} or +-{} us", self.slack_us)
        } else {
            band
        }
    }
}

impl Verdict {
    /// As printed in the table.
    pub fn label(self) -> &'static str {
        match self {
            Verdict::Agree => "agree",
            Verdict::Disagree => "DISAGREE",
            Verdict::Missing => "missing",
            Verdict::Error => "ERROR",
        }
    }
}

/// One comparison (the descriptive fields read as empty from a row that
/// lacks them).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// What is compared.
    pub name: String,
    /// The reference tool.
    #[serde(default)]
    pub tool: String,
    /// The reference command line as run (each of `runs` times).
    #[serde(default)]
    pub command: String,
    /// Alternating runs of the reference and of ours; figures merge them.
    #[serde(default)]
    pub runs: u64,
    /// How msgbench measures the same quantity.
    #[serde(default)]
    pub ours_method: String,
    /// Where both sides ran.
    #[serde(default)]
    pub placement: String,
    /// Their scheduling.
    #[serde(default)]
    pub priority: String,
    /// The reference figure.
    pub reference: Option<Figure>,
    /// Ours.
    pub ours: Option<Figure>,
    /// ours / reference, averages.
    pub ratio: Option<f64>,
    /// The band `ratio` must fall in to agree (`low`, `high`, and the
    /// absolute `slack_us` that always agrees).
    pub tolerance: Tolerance,
    /// The outcome.
    pub verdict: Verdict,
    /// Why the row is `missing` or `error`.
    pub note: Option<String>,
}

/// A row for the tests: reference 10 us, ours 12 us (min 9, max 30),
/// ratio 1.2, unless `verdict` is `Missing` (nothing measured).
#[cfg(test)]
pub(super) fn example(
    name: &str,
    verdict: Verdict,
    tolerance: Tolerance,
    note: Option<&str>,
) -> Row {
    let measured = verdict != Verdict::Missing;
    Row {
        name: name.into(),
        tool: "tool".into(),
        command: "tool -q".into(),
        runs: 4,
        ours_method: "ours".into(),
        placement: "CPU 0".into(),
        priority: "normal".into(),
        reference: measured.then(|| Figure::avg(10.0)),
        ours: measured.then_some(Figure {
            min_us: Some(9.0),
            avg_us: 12.0,
            max_us: Some(30.0),
        }),
        ratio: measured.then_some(1.2),
        tolerance,
        verdict,
        note: note.map(Into::into),
    }
}

impl SuiteRow for Row {
    fn status(&self) -> RowStatus {
        match self.verdict {
            Verdict::Agree | Verdict::Disagree => RowStatus::Ok,
            Verdict::Missing => RowStatus::Skipped,
            Verdict::Error => RowStatus::Failed,
        }
    }
}
