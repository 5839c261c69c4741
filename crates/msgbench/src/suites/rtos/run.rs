//! Running `msgbench rtos`: the catalogue (every test ID with its group),
//! how one test is run, and a plan's tests run in order into rows with
//! their outcome.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::OnceLock;
use std::time::Duration;

use anyhow::Result;

use super::ctx::Ctx;
use super::def::{TestDef, Variant};
use super::options::Plan;
use super::row::{Group, Outcome, TestResult};
use crate::suites::{Results, RunContext};

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
        v.extend(super::msg::tests());
        v
    })
}

/// About how long the longer tests take, seconds: (ID, with `--quick`,
/// without); MEM-B-LEK takes `--duration` more.
const LONG: [(&str, f64, f64); 7] = [
    ("CAL-P-CPU", 3.0, 10.0),
    ("THR-B-RR", 0.4, 0.9),
    ("IRQ-P-TLT", 1.0, 5.0),
    ("IRQ-S-SUS", 1.7, 10.5),
    ("MEM-B-LEK", 0.5, 1.0),
    ("MSG-P-SRR", 0.5, 2.8),
    ("MSG-P-PRI", 0.7, 4.8),
];

/// About how long any other test takes, seconds: (with `--quick`,
/// without).
const SHORT: (f64, f64) = (0.2, 1.0);

/// About how long `def` takes (the progress bar's plan for it).
pub fn planned(def: &TestDef, quick: bool, duration: Duration) -> Duration {
    let (q, full) = LONG
        .iter()
        .find(|l| l.0 == def.id)
        .map_or(SHORT, |l| (l.1, l.2));
    let leak = if def.id == "MEM-B-LEK" {
        duration.as_secs_f64()
    } else {
        0.0
    };
    Duration::from_secs_f64(if quick { q } else { full } + leak)
}

/// Runs `def` (or says why not), one result per variant.
pub fn run_one(def: &TestDef, ctx: &Ctx) -> Vec<TestResult> {
    let row = |variant: Variant| TestResult {
        id: def.id.into(),
        group: def.group,
        title: def.title.into(),
        variant: variant.name,
        substitute: def.substitute.map(Into::into),
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

/// How many times `def` runs in `plan`: once per `--msg-transport` for
/// a MSG test, else once.
pub fn times(def: &TestDef, plan: &Plan) -> u32 {
    match def.group {
        Group::MSG => plan.msg_transports().len() as u32,
        _ => 1,
    }
}

/// Runs MSG test `def` on each of the plan's transports in turn; with
/// several, its variants are named "TRANSPORT, VARIANT" (see
/// [`super::inherit_table::transport_of`]).
fn run_per_transport(def: &TestDef, plan: &Plan, ctx: &mut Ctx) -> Vec<TestResult> {
    let all = plan.msg_transports();
    let mut rows = Vec::new();
    for t in &all {
        if ctx.stopped() {
            break;
        }
        (*t).clone_into(&mut ctx.msg_transport);
        rows.extend(run_one(def, ctx).into_iter().map(|mut r| {
            if all.len() > 1 {
                r.variant = match r.variant.is_empty() {
                    true => t.to_string(),
                    false => format!("{t}, {}", r.variant),
                };
            }
            r
        }));
    }
    rows
}

/// Runs `tests` in order with `ctx` (the plan's settings), one progress
/// item each, until the run is stopped.
pub fn run(
    tests: &[&TestDef],
    plan: &Plan,
    ctx: &mut Ctx,
    cx: &RunContext,
) -> Result<Results<TestResult>> {
    let mut rows = Vec::new();
    for def in tests {
        if cx.stopped() {
            break;
        }
        cx.progress.start(def.id);
        if def.group == Group::MSG {
            rows.extend(run_per_transport(def, plan, ctx));
        } else {
            rows.extend(run_one(def, ctx));
        }
        cx.progress
            .done(planned(def, ctx.quick, ctx.duration) * times(def, plan));
    }
    // The summary line is judged once the run ended (`Suite::judge`).
    Ok(Results::new(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_long_test_exists_and_the_quick_catalogue_is_planned_short() {
        for (id, _, _) in LONG {
            assert!(catalogue().iter().any(|t| t.id == id), "{id}");
        }
        let d = Duration::from_secs(2);
        let quick: Duration = catalogue().iter().map(|t| planned(t, true, d)).sum();
        assert!(quick < Duration::from_secs(30), "{quick:?}");
    }

    #[test]
    fn ids_are_unique_and_match_their_group() {
        let mut seen = std::collections::BTreeSet::new();
        for t in catalogue() {
            assert!(seen.insert(t.id), "duplicate {}", t.id);
            assert!(t.id.starts_with(t.group.name()), "{}", t.id);
        }
    }
}
