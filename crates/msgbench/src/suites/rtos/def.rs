//! What a test of the catalogue is: its definition, and the variants of
//! result its `run` returns.

use super::ctx::Ctx;
use super::row::{Group, Outcome, Reference};

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
