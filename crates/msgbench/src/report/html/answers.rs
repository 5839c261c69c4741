//! The sentences each suite's section opens with, from the envelope
//! alone: the adder's verdict and server models (the suite's own
//! functions, on rows read back from the envelope), ipc's answers as the
//! run judged and kept them (`verdicts`: the lowest p50 per placement,
//! layout and size), rtos's summary line (the suite's own wording),
//! validate's verdicts counted; smp's lessons and broker's answer are the
//! run's `notes` as written.

use std::collections::BTreeMap;

use clap::ValueEnum;
use serde_json::Value;

use super::fields::field;
use crate::devctl::client::ClientRun;
use crate::devctl::options::Api;
use crate::results::envelope::Run;
use crate::suites::adder::{self, judge, Measured};
use crate::suites::rtos::Summary;

/// The adder's verdict (does messaging scale, or is there a global
/// lock?) and which server model scales best, as the terminal prints them
/// under the tables: the suite's functions on the envelope's rows, with
/// the run's CPU count.
pub fn adder(run: &Run) -> Vec<String> {
    let rows: Vec<adder::Row> = run.rows.iter().filter_map(adder_row).collect();
    let cpus = run.environment.cpu_count;
    [judge::verdict(&rows, cpus), judge::models(&rows, cpus)]
        .into_iter()
        .flatten()
        .collect()
}

/// An adder row read back from its JSON (the fields the verdicts weigh;
/// the rest left empty); `None` when it is not one.
fn adder_row(v: &Value) -> Option<adder::Row> {
    let text = |k: &str| v.get(k).and_then(Value::as_str);
    let api = match text("api") {
        Some("copy") => Api::Copy,
        _ => Api::InPlace,
    };
    let transport = text("transport")?.to_string();
    let error = text("error").map(str::to_string);
    let measured = match error {
        Some(_) => None,
        None => adder_measured(v, &transport, api),
    };
    Some(adder::Row {
        placement: adder::Placement::from_str(text("placement")?, false).ok()?,
        mode: adder::Mode::from_str(text("mode")?, false).ok()?,
        threads: u32::try_from(v.get("threads")?.as_u64()?).ok()?,
        transport,
        api,
        error,
        measured,
    })
}

/// The figures of a measured adder row (its flattened `Measured` fields).
fn adder_measured(v: &Value, transport: &str, api: Api) -> Option<Measured> {
    let num = |k: &str| v.get(k).and_then(Value::as_f64);
    let samples = v.get("samples_per_thread").and_then(Value::as_u64);
    let aggregate_rate = num("aggregate_rate")?;
    let rate_per_thread = num("rate_per_thread").unwrap_or(0.0);
    let ave_duration_ms = num("ave_duration_ms").unwrap_or(0.0);
    let run = ClientRun {
        transport: transport.to_string(),
        api,
        samples: samples.unwrap_or(0),
        threads: Vec::new(),
        busy: None,
        ave_duration_ns: ave_duration_ms * 1e6,
        rate_per_thread,
        aggregate_rate,
        latency: None,
        histogram: Vec::new(),
    };
    Some(Measured {
        samples_per_thread: samples.unwrap_or(0),
        idle_pct: num("idle_pct"),
        busy_pct: num("busy_pct"),
        steal_pct: num("steal_pct"),
        ave_duration_ms,
        rate_per_thread,
        aggregate_rate,
        efficiency: num("efficiency"),
        latency: None,
        cut: v.get("cut").and_then(Value::as_bool).unwrap_or(false),
        run,
        discarded_runs: Vec::new(),
    })
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
