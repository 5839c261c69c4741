//! The results as text (one table per group, like the lab's report, the
//! observed events under it, a summary line) and as generic figures.

use super::judge::Summary;
use super::options::Plan;
use super::row::{Group, Outcome, TestResult, Timing, Unit};
use crate::results::envelope::{Better, Figure};
use crate::results::table::{Align, Section, Table};

/// Number with 3 significant digits at most, no exponent.
fn num(v: f64) -> String {
    if v == 0.0 {
        "0".into()
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else if v.abs() >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// The column names, with the reference column when it is shown.
fn head(reference: bool) -> Vec<&'static str> {
    let mut h = vec![
        "Test", "Variant", "Result", "Samples", "Avg", "Min", "Max", "p50", "p99", "p99.9", "Unit",
    ];
    if reference {
        h.push("QNX 6.5 (avg / max / min)");
    }
    h
}

/// Names and words to the left, figures (samples to p99.9) to the right.
fn align(reference: bool) -> Vec<Align> {
    use Align::{Left, Right};
    let mut a = vec![Left, Left, Left];
    a.extend([Right; 7]);
    a.push(Left);
    if reference {
        a.push(Left);
    }
    a
}

/// The result column: a verdict or a state in one word (the reasons are
/// in the notes under the table, so the columns stay narrow).
fn verdict(o: &Outcome) -> &'static str {
    match o {
        Outcome::Behaviour { pass: true, .. } => "PASS",
        Outcome::Behaviour { pass: false, .. } => "FAIL",
        Outcome::Timing(_) => "measured",
        Outcome::Inconclusive { .. } => "INCONCLUSIVE",
        Outcome::Skipped { .. } => "skipped",
        Outcome::Error { .. } => "ERROR",
    }
}

/// The figures of a timing result: samples, avg, min, max, p50, p99,
/// p99.9, unit.
fn timing_cells(t: &Timing) -> Vec<String> {
    vec![
        t.count.to_string(),
        num(t.avg),
        num(t.min),
        num(t.max),
        num(t.p50),
        num(t.p99),
        num(t.p999),
        t.unit.label().into(),
    ]
}

/// The cells of one row: ID (marked when a substitute), variant, result,
/// the figures of a timing result, the reference when shown.
fn cells(r: &TestResult, reference: bool) -> Vec<String> {
    let id = match r.substitute {
        Some(_) => format!("{} (subst.)", r.id),
        None => r.id.to_string(),
    };
    let mut c = vec![id, r.variant.clone(), verdict(&r.outcome).into()];
    match &r.outcome {
        Outcome::Timing(t) => c.extend(timing_cells(t)),
        _ => c.extend(std::iter::repeat_n(String::new(), 8)),
    }
    if reference {
        c.push(
            r.reference
                .as_ref()
                .map_or(String::new(), |x| x.text.to_string()),
        );
    }
    c
}

/// What a row says beyond its cells: the reason it was not measured,
/// what was observed and expected, the substitute, the method.
fn details(r: &TestResult) -> Vec<String> {
    let mut v = Vec::new();
    match &r.outcome {
        Outcome::Behaviour {
            observed, expected, ..
        } => {
            v.push(format!("observed: {}", observed.join(", ")));
            v.push(format!("expected: {expected}"));
        }
        Outcome::Inconclusive { reason, observed } => {
            v.push(format!("inconclusive: {reason}"));
            v.push(format!("observed: {}", observed.join(", ")));
        }
        Outcome::Skipped { reason } => v.push(format!("skipped: {reason}")),
        Outcome::Error { message } => v.push(format!("error: {message}")),
        Outcome::Timing(_) => {}
    }
    if let Some(s) = &r.substitute {
        v.push(format!("substitute: {s}"));
    }
    v.extend(r.note.clone());
    v
}

/// The row a note belongs to: "THR-P-SLS 128 threads".
/// One group's table: a row per result, the details as notes named by
/// their row.
pub fn group_table(g: Group, rows: &[&TestResult], plan: &Plan) -> Table {
    let mut t = Table::new(
        format!("{} ({})", g.title(), g.name()),
        &head(plan.reference),
    )
    .aligned(&align(plan.reference));
    for r in rows {
        t.row(cells(r, plan.reference));
        let name = r.name();
        t.notes
            .extend(details(r).into_iter().map(|d| format!("{name}: {d}")));
    }
    t
}

/// A table per group that has results, in report order, then the summary.
pub fn sections(plan: &Plan, rows: &[TestResult], interrupted: bool) -> Vec<Section> {
    let mut out: Vec<Section> = Group::ALL
        .into_iter()
        .filter_map(|g| {
            let in_group: Vec<&TestResult> = rows.iter().filter(|r| r.group == g).collect();
            (!in_group.is_empty()).then(|| Section::Table(group_table(g, &in_group, plan)))
        })
        .collect();
    out.extend(super::inherit_table::table(plan, rows).map(Section::Table));
    out.push(Section::Text(format!(
        "Summary: {}",
        Summary::of(rows).line(interrupted)
    )));
    out
}

/// The figures' unit: the test's unit, `count` for a plain number.
fn unit_name(u: Unit) -> &'static str {
    match u {
        Unit::Count => "count",
        u => u.label(),
    }
}

/// A result as generic figures (docs/results.md): a timing result's avg,
/// p50, p99 and max in its unit (lower is better), a verdict as `pass`
/// (1 or 0, higher is better); nothing for the others.
pub fn figures(r: &TestResult) -> Vec<Figure> {
    let key = [("id", r.id.to_string()), ("variant", r.variant.clone())];
    match &r.outcome {
        Outcome::Timing(t) => [
            ("avg", t.avg),
            ("p50", t.p50),
            ("p99", t.p99),
            ("max", t.max),
        ]
        .into_iter()
        .map(|(m, v)| Figure::new(&key, m, v, unit_name(t.unit), Better::Lower))
        .collect(),
        Outcome::Behaviour { pass, .. } => {
            let v = if *pass { 1.0 } else { 0.0 };
            vec![Figure::new(&key, "pass", v, "", Better::Higher)]
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::results::table::{render, Format};

    pub(in crate::suites::rtos) fn row(
        id: &'static str,
        variant: &str,
        outcome: Outcome,
    ) -> TestResult {
        TestResult {
            id: id.into(),
            group: Group::THR,
            title: "".into(),
            variant: variant.into(),
            substitute: None,
            reference: None,
            note: None,
            outcome,
        }
    }

    fn plan(reference: bool) -> Plan {
        Plan {
            reference,
            ..plan_with("uds")
        }
    }

    /// A plan whose MSG tests run on `msg_transport` (a comma list).
    pub(in crate::suites::rtos) fn plan_with(msg_transport: &str) -> Plan {
        Plan {
            tests: Vec::new(),
            quick: true,
            sem: super::super::ctx::SemKind::Posix,
            duration: std::time::Duration::from_secs(1),
            reference: true,
            msg_inherit: true,
            msg_transport: msg_transport.into(),
        }
    }

    pub(in crate::suites::rtos) fn sample() -> Vec<TestResult> {
        let timing = Timing::of(Unit::Us, vec![1.0, 2.0, 3.0]).unwrap();
        vec![
            row("THR-P-NEW", "", Outcome::Timing(timing)),
            row(
                "THR-B-RR",
                "2 threads",
                Outcome::Behaviour {
                    pass: false,
                    observed: vec!["a".into(), "b".into()],
                    expected: "b, a".into(),
                },
            ),
            row(
                "THR-B-NEW",
                "",
                Outcome::Skipped {
                    reason: "needs CAP_SYS_NICE".into(),
                },
            ),
        ]
    }

    #[test]
    fn a_group_table_keeps_reasons_and_observations_as_notes() {
        let s = render(&sections(&plan(true), &sample(), false), Format::Table);
        assert!(s.starts_with("Threads (THR)\n"), "{s}");
        assert!(s.contains("QNX 6.5 (avg / max / min)"), "{s}");
        assert!(s.contains("THR-B-RR 2 threads: observed: a, b"), "{s}");
        assert!(s.contains("THR-B-RR 2 threads: expected: b, a"), "{s}");
        assert!(s.contains("THR-B-NEW: skipped: needs CAP_SYS_NICE"), "{s}");
        assert!(
            s.trim_end().ends_with(
                "Summary: 0 passed, 1 failed, 0 inconclusive, 1 measured, 1 skipped, 0 errors"
            ),
            "{s}"
        );
        let s = render(&sections(&plan(false), &sample(), true), Format::Table);
        assert!(!s.contains("QNX"), "{s}");
        assert!(s.trim_end().ends_with("(interrupted)"), "{s}");
    }

    #[test]
    fn figures_are_timing_percentiles_and_verdicts() {
        let f: Vec<Figure> = sample().iter().flat_map(figures).collect();
        let metrics: Vec<&str> = f.iter().map(|x| x.metric.as_str()).collect();
        assert_eq!(metrics, ["avg", "p50", "p99", "max", "pass"]);
        assert_eq!(f[0].unit, "us");
        assert_eq!(f[0].key_text(), "id=THR-P-NEW variant=");
        assert_eq!(f[4].value, 0.0);
        assert_eq!(f[4].better, Better::Higher);
    }
}
