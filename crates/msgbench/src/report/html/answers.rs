//! The sentences each suite's section opens with, from the envelope
//! alone: the adder's verdict and server models and ipc's lowest p50 per
//! placement, layout and size, as the run judged and kept them
//! (`verdicts`), rtos's summary line (the suite's own wording),
//! validate's verdicts counted; smp's lessons and broker's answer are the
//! run's `notes` as written.

use std::collections::BTreeMap;

use serde_json::Value;

use super::fields::field;
use crate::results::envelope::Run;
use crate::suites::rtos::Summary;

/// The adder's verdict (does messaging scale, or is there a global
/// lock?) and which server model scales best, as the run judged them from
/// its typed rows and kept them (`Suite::judge`, the sentences the
/// terminal prints under the tables): none for a run from before.
pub fn adder(run: &Run) -> Vec<String> {
    run.verdicts.clone()
}

/// Ipc's answers as the run judged them from its typed rows (the best
/// transport per placement and layout; `suites/ipc/judge.rs`), kept in
/// the envelope: none for a run from before they were kept.
pub fn ipc(run: &Run) -> Vec<String> {
    run.verdicts.clone()
}

/// Rtos's summary line as the terminal prints it (`Summary: 3 passed, 1
/// failed, ...`), counted from the rows' outcomes, and the tests that
/// failed by name.
pub fn rtos(run: &Run) -> Vec<String> {
    let mut s = Summary::default();
    let mut failed = Vec::new();
    for r in &run.rows {
        let Some(o) = r.get("outcome") else {
            continue;
        };
        match (
            field(o, "kind").as_str(),
            o.get("pass").and_then(Value::as_bool),
        ) {
            ("behaviour", Some(true)) => s.passed += 1,
            ("behaviour", _) => {
                s.failed += 1;
                failed.push(test_name(r));
            }
            ("inconclusive", _) => s.inconclusive += 1,
            ("timing", _) => s.measured += 1,
            ("skipped", _) => s.skipped += 1,
            ("error", _) => s.errors += 1,
            _ => {}
        }
    }
    if s == Summary::default() {
        return Vec::new();
    }
    let mut out = vec![format!("Summary: {}", s.line(run.outcome.interrupted))];
    if !failed.is_empty() {
        out.push(format!("Failed: {}.", failed.join(", ")));
    }
    out
}

/// "MSG-P-SRR 2 threads", or the id alone.
fn test_name(r: &Value) -> String {
    match field(r, "variant").as_str() {
        "" => field(r, "id"),
        v => format!("{} {v}", field(r, "id")),
    }
}

/// Validate's verdicts counted: how many comparisons agree with the
/// reference tool within their tolerance, and how many do not, lack the
/// tool or failed (the table's verdict column).
pub fn validate(run: &Run) -> Vec<String> {
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for r in &run.rows {
        let v = field(r, "verdict");
        if !v.is_empty() {
            *counts.entry(v).or_default() += 1;
        }
    }
    let total: usize = counts.values().sum();
    if total == 0 {
        return Vec::new();
    }
    let n = |v: &str| counts.get(v).copied().unwrap_or(0);
    vec![format!(
        "{} of {total} comparisons agree with the reference tool within their tolerance; \
         {} DISAGREE, {} missing (tool not installed), {} error.",
        n("agree"),
        n("disagree"),
        n("missing"),
        n("error")
    )]
}
