//! The catalogue: every test ID with its group, and how one is run.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;

use serde::Serialize;

use super::ctx::Ctx;
use super::outcome::{Outcome, Reference, TestResult};

/// The lab's test groups, in report order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
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
}

impl Group {
    /// Every group, in report order.
    pub const ALL: [Group; 7] = [
        Group::CAL,
        Group::CLK,
        Group::THR,
        Group::SEM,
        Group::MUT,
        Group::IRQ,
        Group::MEM,
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
        }
    }
}

/// One variant of a test's result, as a test's `run` returns it.
#[derive(Debug, Clone)]
pub struct Variant {
    /// e.g. "128 threads"; "" when the test has a single result.
    pub name: String,
    /// The lab's figure for this variant.
    pub reference: Option<Reference>,
    /// How it was measured here.
    pub note: Option<String>,
    /// The outcome.
    pub outcome: Outcome,
}

impl Variant {
    /// A variant with no reference and no note.
    pub fn new(name: impl Into<String>, outcome: Outcome) -> Variant {
        Variant {
            name: name.into(),
            reference: None,
            note: None,
            outcome,
        }
    }

    /// Sets the reference.
    pub fn reference(mut self, r: Reference) -> Variant {
        self.reference = Some(r);
        self
    }

    /// Sets the note.
    pub fn note(mut self, n: impl Into<String>) -> Variant {
        self.note = Some(n.into());
        self
    }
}

/// A test of the catalogue.
#[derive(Debug)]
pub struct TestDef {
    /// Its ID, e.g. "SEM-B-REL".
    pub id: &'static str,
    /// Its group.
    pub group: Group,
    /// What it checks or measures (one line).
    pub title: &'static str,
    /// Needs SCHED_FIFO (skipped with the reason without CAP_SYS_NICE).
    pub needs_fifo: bool,
    /// For the interrupt substitutes: what stands in for the lab's test.
    pub substitute: Option<&'static str>,
    /// Runs it: one [`Variant`] per result row. An error becomes an
    /// error row; the run goes on.
    pub run: fn(&Ctx) -> anyhow::Result<Vec<Variant>>,
}

/// Every test, in catalogue order.
pub fn catalogue() -> &'static [TestDef] {
    static ALL: OnceLock<Vec<TestDef>> = OnceLock::new();
    ALL.get_or_init(|| {
        let mut v = Vec::new();
        v.extend(super::cal::tests());
        v.extend(super::clk::tests());
        v.extend(super::thr::tests());
        v.extend(super::sem::tests());
        v.extend(super::mutex::tests());
        v.extend(super::irq::tests());
        v.extend(super::mem::tests());
        v
    })
}

/// Runs `def` (or says why not), one result per variant.
pub fn run_one(def: &TestDef, ctx: &Ctx) -> Vec<TestResult> {
    let row = |variant: Variant| TestResult {
        id: def.id,
        group: def.group,
        title: def.title,
        variant: variant.name,
        substitute: def.substitute,
        reference: variant.reference,
        note: variant.note,
        outcome: variant.outcome,
    };
    if def.needs_fifo && !ctx.fifo_allowed {
        return vec![row(Variant::new(
            "",
            Outcome::Skipped {
                reason: "needs CAP_SYS_NICE (run as root or grant it)".into(),
            },
        ))];
    }
    let got = catch_unwind(AssertUnwindSafe(|| (def.run)(ctx)));
    let variants = match got {
        Ok(Ok(v)) => v,
        Ok(Err(e)) => vec![Variant::new(
            "",
            Outcome::Error {
                message: format!("{e:#}"),
            },
        )],
        Err(p) => vec![Variant::new(
            "",
            Outcome::Error {
                message: format!(
                    "the test panicked: {}",
                    p.downcast_ref::<String>()
                        .map(String::as_str)
                        .or_else(|| p.downcast_ref::<&str>().copied())
                        .unwrap_or("?")
                ),
            },
        )],
    };
    let interrupted = ctx.stopped();
    variants
        .into_iter()
        .map(|mut v| {
            // A test cut short by SIGINT/SIGTERM did not go wrong: what
            // it saw so far is no verdict.
            if interrupted {
                let cut = match &v.outcome {
                    Outcome::Error { message } => Some(message.clone()),
                    Outcome::Behaviour {
                        pass: false,
                        observed,
                        ..
                    } => Some(format!("observed so far: {}", observed.join(", "))),
                    _ => None,
                };
                if let Some(what) = cut {
                    v.outcome = Outcome::Skipped {
                        reason: format!("interrupted ({what})"),
                    };
                }
            }
            row(v)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_match_their_group() {
        let mut seen = std::collections::BTreeSet::new();
        for t in catalogue() {
            assert!(seen.insert(t.id), "duplicate {}", t.id);
            assert!(t.id.starts_with(t.group.name()), "{}", t.id);
        }
    }
}
