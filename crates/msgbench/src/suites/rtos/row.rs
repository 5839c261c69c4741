//! What a test produces: a behaviour verdict with the events observed, or
//! timing samples with their statistics, or a reason it did not run.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::suites::{RowStatus, SuiteRow};

/// The lab's test groups, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Group {
    /// Calibration: timestamp cost, CPU and memory speed.
    CAL,
    /// The clock tick.
    CLK,
    /// Threads: creation, scheduling, switching.
    THR,
    /// Semaphores.
    SEM,
    /// Mutexes and priority inheritance.
    MUT,
    /// Interrupts (user-space substitutes on Linux).
    IRQ,
    /// Resource leaks.
    MEM,
    /// Message passing between processes (send/receive/reply, priority
    /// inheritance through messages).
    MSG,
}

impl Group {
    /// Every group, in report order.
    pub const ALL: [Group; 8] = [
        Group::CAL,
        Group::CLK,
        Group::THR,
        Group::SEM,
        Group::MUT,
        Group::IRQ,
        Group::MEM,
        Group::MSG,
    ];

    /// The group's name as in test IDs ("THR").
    pub fn name(self) -> &'static str {
        match self {
            Group::CAL => "CAL",
            Group::CLK => "CLK",
            Group::THR => "THR",
            Group::SEM => "SEM",
            Group::MUT => "MUT",
            Group::IRQ => "IRQ",
            Group::MEM => "MEM",
            Group::MSG => "MSG",
        }
    }

    /// A heading for the report.
    pub fn title(self) -> &'static str {
        match self {
            Group::CAL => "Calibration",
            Group::CLK => "Clock tick",
            Group::THR => "Threads",
            Group::SEM => "Semaphores",
            Group::MUT => "Mutexes",
            Group::IRQ => "Interrupts (user-space substitutes)",
            Group::MEM => "Memory and resource leaks",
            Group::MSG => "Message passing (send/receive/reply between processes)",
        }
    }
}

/// The unit a timing test reports in (the spec's unit for that test).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unit {
    /// Nanoseconds.
    Ns,
    /// Microseconds.
    Us,
    /// Milliseconds.
    Ms,
    /// A plain number (a ratio, a rate); samples are stored as given.
    Count,
}

impl Unit {
    /// Nanoseconds per unit (1 for [`Unit::Count`]).
    pub fn ns(self) -> f64 {
        match self {
            Unit::Ns | Unit::Count => 1.0,
            Unit::Us => 1e3,
            Unit::Ms => 1e6,
        }
    }

    /// Label for the table.
    pub fn label(self) -> &'static str {
        match self {
            Unit::Ns => "ns",
            Unit::Us => "us",
            Unit::Ms => "ms",
            Unit::Count => "",
        }
    }
}

/// The QNX figure for a result, in the result's unit: the lab's QNX 6.5
/// one, or for the MSG group the QNX 8.0 adder figure (its text says so).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reference {
    /// Average, when the lab gave one.
    pub avg: Option<f64>,
    /// Maximum, when given.
    pub max: Option<f64>,
    /// Minimum, when given.
    pub min: Option<f64>,
    /// The lab's figure as the lab gave it (e.g. "12.7 / 12.1 us").
    pub text: Cow<'static, str>,
}

impl Reference {
    /// A reference given only as text (a verdict, a range).
    pub const fn text(text: &'static str) -> Reference {
        Reference {
            avg: None,
            max: None,
            min: None,
            text: Cow::Borrowed(text),
        }
    }

    /// A reference with an average.
    pub const fn avg(avg: f64, text: &'static str) -> Reference {
        Reference {
            avg: Some(avg),
            max: None,
            min: None,
            text: Cow::Borrowed(text),
        }
    }
}

/// One sample, in the result's unit (kept raw for plots over the index).
pub type Sample = f64;

/// Statistics of a timing result, in its unit.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Timing {
    /// The unit of every figure and sample.
    pub unit: Unit,
    /// Number of samples.
    pub count: usize,
    /// Mean.
    pub avg: f64,
    /// Smallest.
    pub min: f64,
    /// Largest.
    pub max: f64,
    /// Median.
    pub p50: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Every sample, in measurement order.
    pub samples: Vec<Sample>,
}

impl Timing {
    /// Statistics of `samples` (in `unit`); `None` when there are none.
    pub fn of(unit: Unit, samples: Vec<Sample>) -> Option<Timing> {
        if samples.is_empty() {
            return None;
        }
        let mut sorted = samples.clone();
        sorted.sort_by(f64::total_cmp);
        let q = |p: f64| {
            let i = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
            sorted[i]
        };
        Some(Timing {
            unit,
            count: samples.len(),
            avg: samples.iter().sum::<f64>() / samples.len() as f64,
            min: sorted[0],
            max: sorted[sorted.len() - 1],
            p50: q(0.5),
            p99: q(0.99),
            p999: q(0.999),
            samples,
        })
    }
}

/// What one test (or one variant of it) produced.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Outcome {
    /// A behaviour test: the verdict and the events observed, in order.
    Behaviour {
        /// The behaviour held.
        pass: bool,
        /// What was observed, in order (e.g. the priorities in wake-up
        /// order), so a FAIL says what happened instead.
        observed: Vec<String>,
        /// What was expected, in the same terms.
        expected: String,
    },
    /// A behaviour test that ran but reached no verdict either way (e.g.
    /// no trial reached the target count within the time allowed): neither
    /// PASS nor FAIL, with why and what was observed.
    Inconclusive {
        /// Why no verdict was reached.
        reason: String,
        /// What was observed, in order.
        observed: Vec<String>,
    },
    /// A timing test.
    Timing(Timing),
    /// Not run here, with the reason (e.g. "needs CAP_SYS_NICE").
    Skipped {
        /// Why.
        reason: String,
    },
    /// The test could not be carried out (a system call failed...).
    Error {
        /// What went wrong.
        message: String,
    },
}

/// One row of the report. The strings a test's definition holds are
/// borrowed when the suite writes a row and owned when a reader reads one
/// back from a results file.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TestResult {
    /// Test ID, e.g. "THR-P-SLS".
    pub id: Cow<'static, str>,
    /// Its group.
    pub group: Group,
    /// What it checks or measures.
    pub title: Cow<'static, str>,
    /// The variant, e.g. "128 threads" ("" when the test has one).
    pub variant: String,
    /// Set for tests that stand in for hardware the lab used (interrupts).
    pub substitute: Option<Cow<'static, str>>,
    /// The lab's figure.
    pub reference: Option<Reference>,
    /// Notes on how it was measured here (method, conditions).
    pub note: Option<String>,
    /// The outcome.
    pub outcome: Outcome,
}

impl TestResult {
    /// "MSG-P-SRR 2 threads", or the ID alone.
    pub fn name(&self) -> String {
        if self.variant.is_empty() {
            self.id.to_string()
        } else {
            format!("{} {}", self.id, self.variant)
        }
    }
}

impl SuiteRow for TestResult {
    fn status(&self) -> RowStatus {
        match &self.outcome {
            Outcome::Behaviour { pass: false, .. } | Outcome::Error { .. } => RowStatus::Failed,
            Outcome::Skipped { .. } => RowStatus::Skipped,
            Outcome::Behaviour { pass: true, .. }
            | Outcome::Inconclusive { .. }
            | Outcome::Timing(_) => RowStatus::Ok,
        }
    }
}
