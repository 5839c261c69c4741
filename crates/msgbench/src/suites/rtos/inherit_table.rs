//! What priority inheritance costs, per transport, in one table: MSG-P-PRI
//! against MSG-P-SRR (p50, one CPU and two), whether every call was
//! served at its caller's priority, MSG-B-PRI's verdict, and QNX 8.0's
//! adder figure beside. Built from the MSG rows of a run; with several
//! `--msg-transport`s their variants are named "TRANSPORT, VARIANT".

use super::options::Plan;
use super::row::{Outcome, TestResult};
use crate::results::table::{Align, Table};

/// QNX 8.0's adder round trip on a Raspberry Pi 4, us (2,000,000 calls in
/// 12.1 s: 165,300 a second per thread).
const QNX_ADDER_US: f64 = 6.05;

/// The transport a MSG row of `plan` ran on, and its variant without it.
pub fn transport_of<'a>(plan: &'a Plan, variant: &'a str) -> (&'a str, &'a str) {
    let all = plan.msg_transports();
    if all.len() > 1 {
        if let Some((t, rest)) = variant.split_once(", ") {
            return (t, rest);
        }
        return (variant, "");
    }
    (all.first().copied().unwrap_or(""), variant)
}

/// The row of test `id`, transport `t`, variant `v`, if it ran.
fn find<'a>(
    rows: &'a [TestResult],
    plan: &Plan,
    id: &str,
    t: &str,
    v: &str,
) -> Option<&'a TestResult> {
    rows.iter()
        .find(|r| r.id == id && transport_of(plan, &r.variant) == (t, v))
}

/// The p50 of a measured row, us.
fn p50(r: Option<&TestResult>) -> Option<f64> {
    match &r?.outcome {
        Outcome::Timing(t) => Some(t.p50),
        _ => None,
    }
}

/// A figure, or a dash when it was not measured.
fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.digits$}"))
}

/// A verdict row's word, or a dash.
fn word(r: Option<&TestResult>) -> String {
    match r.map(|r| &r.outcome) {
        Some(Outcome::Behaviour { pass: true, .. }) => "PASS".into(),
        Some(Outcome::Behaviour { pass: false, .. }) => "FAIL".into(),
        Some(Outcome::Inconclusive { .. }) => "INCONCLUSIVE".into(),
        Some(Outcome::Skipped { .. }) => "skipped".into(),
        Some(Outcome::Error { .. }) => "ERROR".into(),
        Some(Outcome::Timing(_)) | None => "-".into(),
    }
}

/// One placement's cells: SRR p50, PRI p50, their ratio.
fn placement(rows: &[TestResult], plan: &Plan, t: &str, v: &str) -> Vec<String> {
    let srr = p50(find(rows, plan, "MSG-P-SRR", t, v));
    let pri = p50(find(rows, plan, "MSG-P-PRI", t, v));
    let ratio = srr.zip(pri).map(|(s, p)| p / s);
    vec![cell(srr, 2), cell(pri, 2), cell(ratio, 2)]
}

/// The transport and verdicts to the left, the figures to the right.
fn align() -> Vec<Align> {
    let mut a = vec![Align::Left];
    a.extend([Align::Right; 6]);
    a.extend([Align::Left, Align::Left, Align::Right]);
    a
}

/// The table, when the run has MSG-P-PRI rows; else `None`.
pub fn table(plan: &Plan, rows: &[TestResult]) -> Option<Table> {
    if !rows.iter().any(|r| r.id == "MSG-P-PRI") {
        return None;
    }
    let mut t = Table::new(
        "Priority inheritance per transport: MSG-P-PRI against MSG-P-SRR (p50, us)",
        &[
            "Transport",
            "1 CPU: SRR",
            "PRI",
            "PRI/SRR",
            "2 CPUs: SRR",
            "PRI",
            "PRI/SRR",
            "Every PRI call at the caller's",
            "MSG-B-PRI",
            "QNX 8.0 adder",
        ],
    )
    .aligned(&align());
    for tr in plan.msg_transports() {
        let mut c = vec![tr.to_string()];
        c.extend(placement(rows, plan, tr, "one CPU"));
        c.extend(placement(rows, plan, tr, "two CPUs"));
        let checked = [
            "one CPU, every call checked",
            "two CPUs, every call checked",
        ]
        .map(|v| word(find(rows, plan, "MSG-P-PRI", tr, v)));
        c.push(checked.join(" / "));
        let inversion = rows
            .iter()
            .find(|r| r.id == "MSG-B-PRI" && transport_of(plan, &r.variant).0 == tr);
        c.push(word(inversion));
        c.push(format!("{QNX_ADDER_US:.2}"));
        t.row(c);
    }
    t.notes.push(
        "PRI/SRR: what inheritance costs a call, both tests on the same transport in this run; \
         a server keeps its caller's priority until its next message (as on QNX), so this is \
         the cost for a caller calling again. Every call checked: one CPU / two CPUs. The QNX \
         figure is another machine's (a Raspberry Pi 4), for scale"
            .into(),
    );
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::rtos::render::tests::{plan_with, row};
    use crate::suites::rtos::row::{Timing, Unit};

    fn timed(id: &'static str, variant: &str, p50: f64) -> TestResult {
        let t = Timing::of(Unit::Us, vec![p50]).expect("one sample");
        row(id, variant, Outcome::Timing(t))
    }

    #[test]
    fn a_row_per_transport_with_the_ratio_of_its_own_tests() {
        let plan = plan_with("uds,shm-block");
        let rows = vec![
            timed("MSG-P-SRR", "uds, one CPU", 10.0),
            timed("MSG-P-PRI", "uds, one CPU", 12.0),
            timed("MSG-P-SRR", "shm-block, one CPU", 5.0),
            timed("MSG-P-PRI", "shm-block, one CPU", 6.0),
            row(
                "MSG-B-PRI",
                "shm-block, inheritance on",
                Outcome::Behaviour {
                    pass: true,
                    observed: Vec::new(),
                    expected: String::new(),
                },
            ),
        ];
        let t = table(&plan, &rows).expect("a table");
        let text = format!("{:?}", t);
        assert!(
            text.contains("\"uds\", \"10.00\", \"12.00\", \"1.20\""),
            "{text}"
        );
        assert!(
            text.contains("\"shm-block\", \"5.00\", \"6.00\", \"1.20\""),
            "{text}"
        );
        assert!(
            text.contains("\"PASS\", \"6.05\""),
            "shm-block's MSG-B-PRI: {text}"
        );
        assert!(
            text.contains("\"-\", \"6.05\""),
            "uds's MSG-B-PRI did not run: {text}"
        );
        assert!(text.contains("\"6.05\""), "{text}");
    }

    #[test]
    fn no_table_without_the_inheritance_test() {
        let plan = plan_with("uds");
        assert!(table(&plan, &[timed("MSG-P-SRR", "one CPU", 10.0)]).is_none());
        assert_eq!(transport_of(&plan, "one CPU"), ("uds", "one CPU"));
    }
}
