//! The verdict of `msgbench rtos`: the outcomes counted (passed, failed,
//! inconclusive, measured, skipped, errors), the summary line the report
//! and the envelope's notes carry.

use super::row::{Outcome, TestResult};

/// Counts of outcomes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Behaviour tests that held.
    pub passed: usize,
    /// Behaviour tests that did not.
    pub failed: usize,
    /// Behaviour tests run without reaching a verdict.
    pub inconclusive: usize,
    /// Timing results measured.
    pub measured: usize,
    /// Not run here (privilege, kernel feature, interrupted).
    pub skipped: usize,
    /// Could not be carried out.
    pub errors: usize,
}

impl Summary {
    /// Counts the outcomes of `rows`.
    pub fn of(rows: &[TestResult]) -> Summary {
        let mut s = Summary::default();
        for r in rows {
            match &r.outcome {
                Outcome::Behaviour { pass: true, .. } => s.passed += 1,
                Outcome::Behaviour { pass: false, .. } => s.failed += 1,
                Outcome::Inconclusive { .. } => s.inconclusive += 1,
                Outcome::Timing(_) => s.measured += 1,
                Outcome::Skipped { .. } => s.skipped += 1,
                Outcome::Error { .. } => s.errors += 1,
            }
        }
        s
    }

    /// "3 passed, 0 failed, 1 inconclusive, 12 measured, 2 skipped, 0
    /// errors", with " (interrupted)" when the run was cut short.
    pub fn line(&self, interrupted: bool) -> String {
        format!(
            "{} passed, {} failed, {} inconclusive, {} measured, {} skipped, {} errors{}",
            self.passed,
            self.failed,
            self.inconclusive,
            self.measured,
            self.skipped,
            self.errors,
            if interrupted { " (interrupted)" } else { "" }
        )
    }
}
