//! The verdict of `msgbench rtos`: the outcomes counted (passed, failed,
//! inconclusive, measured, skipped, errors) and the tests that failed by
//! name, kept in the envelope (`verdicts`) for the report.

use super::row::{Outcome, TestResult};

/// The run's answer: the summary line as the terminal prints it and the
/// tests that failed by name; none for a run without rows.
pub fn verdicts(rows: &[TestResult], interrupted: bool) -> Vec<String> {
    if rows.is_empty() {
        return Vec::new();
    }
    let mut out = vec![format!("Summary: {}", Summary::of(rows).line(interrupted))];
    let failed: Vec<String> = rows
        .iter()
        .filter(|r| matches!(r.outcome, Outcome::Behaviour { pass: false, .. }))
        .map(TestResult::name)
        .collect();
    if !failed.is_empty() {
        out.push(format!("Failed: {}.", failed.join(", ")));
    }
    out
}

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

#[cfg(test)]
mod tests {
    use super::super::render::tests::{row, sample};
    use super::*;

    #[test]
    fn the_verdict_counts_outcomes_and_names_the_failures() {
        let v = verdicts(&sample(), false);
        assert_eq!(
            v,
            [
                "Summary: 0 passed, 1 failed, 0 inconclusive, 1 measured, 1 skipped, 0 errors",
                "Failed: THR-B-RR 2 threads."
            ]
        );
        // It comes out the other way: the failure passes, no names.
        let mut rows = sample();
        rows[1].outcome = Outcome::Behaviour {
            pass: true,
            observed: Vec::new(),
            expected: String::new(),
        };
        rows.push(row(
            "MUT-B-INV",
            "",
            Outcome::Inconclusive {
                reason: "no trial".into(),
                observed: Vec::new(),
            },
        ));
        let v = verdicts(&rows, true);
        assert_eq!(
            v,
            ["Summary: 1 passed, 0 failed, 1 inconclusive, 1 measured, 1 skipped, 0 errors (interrupted)"]
        );
        assert!(verdicts(&[], false).is_empty());
    }
}
