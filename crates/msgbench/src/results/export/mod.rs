//! Exports for the engines labs run benchmarks with (issue 34): a run's
//! generic figures turned into the formats those engines read, one file
//! per format behind one small trait, [`Exporter`]:
//!
//! - [`bmf`]: Bencher Metric Format JSON (Bencher's CI thresholds);
//! - [`openmetrics`]: OpenMetrics text for Prometheus (and [`push`], the
//!   same text sent to a Pushgateway);
//! - [`lines`]: one metric per line, `name: value unit` (LKP's parse
//!   step) and `lava-test-case` invocations (LAVA).
//!
//! Every export reads the same [`Subject`]: the suite, the host, the
//! kernel and the figures, so a suite's run (`--format`) and a stored run
//! (`msgbench history export --format`) export alike. A figure whose value
//! is not a finite number is left out of every export (none of the suites
//! writes one; none of the formats can say it in all its consumers).

pub mod bmf;
pub mod lines;
pub mod openmetrics;
pub mod push;
pub mod units;

use clap::builder::PossibleValue;
use clap::ValueEnum;

use super::envelope::{Figure, Run};
use super::table::Format;

/// What an export is made of: which suite ran where, and its figures.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The suite, e.g. `ipc`.
    pub suite: &'a str,
    /// The machine's host name.
    pub host: &'a str,
    /// Its kernel (uname sysname, release and version).
    pub kernel: &'a str,
    /// The run's figures.
    pub figures: &'a [Figure],
}

impl<'a> Subject<'a> {
    /// The subject of a run read back from an envelope.
    pub fn of(run: &'a Run) -> Subject<'a> {
        Subject {
            suite: &run.suite,
            host: &run.environment.hostname,
            kernel: &run.environment.kernel,
            figures: &run.figures,
        }
    }

    /// The figures an export writes: those with a finite value.
    pub fn exported(&self) -> impl Iterator<Item = &'a Figure> {
        self.figures.iter().filter(|f| f.value.is_finite())
    }
}

/// Why a run could not be exported.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    /// Two figures would be written under one name (the format has room
    /// for one value per name).
    #[error("two figures of the run export as {0} (the format has room for one)")]
    Duplicate(String),
    /// Two fields of a figure's key would be one label.
    #[error("the key fields {0} and {1} both export as the label {2}")]
    LabelClash(String, String, String),
}

/// One export format: a run's figures in, the format's text out.
pub trait Exporter {
    /// The run's figures in this format, the whole text.
    fn export(&self, subject: &Subject) -> Result<String, ExportError>;
}

/// The export formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Export {
    /// Bencher Metric Format JSON: one benchmark per row, one measure per
    /// metric, the repeats' spread as lower and upper values.
    Bmf,
    /// OpenMetrics text (Prometheus): a gauge per metric in base units,
    /// the row as labels (--push URL sends it to a Pushgateway).
    Openmetrics,
    /// One metric per line, `name: value unit` (LKP's parse step).
    Lines,
    /// One `lava-test-case NAME --result pass --measurement V --units U`
    /// per metric (a LAVA test shell).
    Lava,
}

impl Export {
    /// The exporter of this format.
    pub fn exporter(self) -> &'static dyn Exporter {
        match self {
            Export::Bmf => &bmf::Bmf,
            Export::Openmetrics => &openmetrics::OpenMetrics,
            Export::Lines => &lines::Lines,
            Export::Lava => &lines::Lava,
        }
    }

    /// `subject` in this format.
    pub fn export(self, subject: &Subject) -> Result<String, ExportError> {
        self.exporter().export(subject)
    }

    /// The format's name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Export::Bmf => "bmf",
            Export::Openmetrics => "openmetrics",
            Export::Lines => "lines",
            Export::Lava => "lava",
        }
    }
}

/// A suite's `--format`: one of the text formats the tables are drawn
/// in (and `json`, the envelope), or an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SuiteFormat {
    /// Drawn as text, or `json`.
    Text(Format),
    /// Exported.
    Export(Export),
}

impl Default for SuiteFormat {
    fn default() -> SuiteFormat {
        SuiteFormat::Text(Format::Table)
    }
}

impl SuiteFormat {
    /// The text format the suite's sections are drawn for: an export
    /// draws none, as `json` does.
    pub fn text(self) -> Format {
        match self {
            SuiteFormat::Text(f) => f,
            SuiteFormat::Export(_) => Format::Json,
        }
    }

    /// True for the formats read by a person (the banner, the line
    /// saying where the run was recorded): table and markdown.
    pub fn for_people(self) -> bool {
        matches!(
            self,
            SuiteFormat::Text(Format::Table) | SuiteFormat::Text(Format::Markdown)
        )
    }
}

const SUITE_FORMATS: [SuiteFormat; 8] = [
    SuiteFormat::Text(Format::Table),
    SuiteFormat::Text(Format::Markdown),
    SuiteFormat::Text(Format::Csv),
    SuiteFormat::Text(Format::Json),
    SuiteFormat::Export(Export::Bmf),
    SuiteFormat::Export(Export::Openmetrics),
    SuiteFormat::Export(Export::Lines),
    SuiteFormat::Export(Export::Lava),
];

impl ValueEnum for SuiteFormat {
    fn value_variants<'a>() -> &'a [SuiteFormat] {
        &SUITE_FORMATS
    }

    fn to_possible_value(&self) -> Option<PossibleValue> {
        match self {
            SuiteFormat::Text(f) => f.to_possible_value(),
            SuiteFormat::Export(e) => e.to_possible_value(),
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
