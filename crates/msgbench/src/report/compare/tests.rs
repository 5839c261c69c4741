//! The verdict rule on synthetic figures: every verdict comes out both
//! ways (called and not), at the threshold's edge, with and without
//! repeats, for each `better`; matching, the gate and the drawing.

use super::verdict::{change_pct, judge, trips, Verdict};
use super::*;
use crate::measure::env::Environment;
use crate::results::envelope::Outcome;
use crate::results::ClockInfo;

fn fig(key: &str, metric: &str, value: f64, better: Better) -> Figure {
    Figure::new(&[("row", key.to_string())], metric, value, "ns", better)
}

fn lat(v: f64) -> Figure {
    fig("a", "p50_ns", v, Better::Lower)
}

fn rate(v: f64) -> Figure {
    fig("a", "rate", v, Better::Higher)
}

fn v(base: Figure, new: Figure) -> Verdict {
    judge(&base, &new, DEFAULT_THRESHOLD_PCT).verdict
}

#[test]
fn lower_is_better_both_ways() {
    assert_eq!(v(lat(100.0), lat(120.0)), Verdict::Slower);
    assert_eq!(v(lat(100.0), lat(80.0)), Verdict::Faster);
    assert_eq!(v(lat(100.0), lat(100.0)), Verdict::NoChange);
}

#[test]
fn higher_is_better_both_ways() {
    assert_eq!(v(rate(100.0), rate(80.0)), Verdict::Slower);
    assert_eq!(v(rate(100.0), rate(120.0)), Verdict::Faster);
    assert_eq!(v(rate(100.0), rate(100.0)), Verdict::NoChange);
}

#[test]
fn the_threshold_edge_is_not_called() {
    // Exactly the threshold is not "more than" it.
    assert_eq!(v(lat(100.0), lat(110.0)), Verdict::NoChange);
    assert_eq!(v(lat(100.0), lat(110.001)), Verdict::Slower);
    assert_eq!(v(lat(100.0), lat(90.0)), Verdict::NoChange);
    assert_eq!(v(lat(100.0), lat(89.999)), Verdict::Faster);
    let j = judge(&lat(100.0), &lat(105.0), 4.0);
    assert_eq!(j.verdict, Verdict::Slower, "a lower --threshold calls 5%");
    assert_eq!(
        judge(&lat(100.0), &lat(105.0), 6.0).verdict,
        Verdict::NoChange
    );
    assert_eq!(j.why, "beyond threshold, single");
}

#[test]
fn with_repeats_the_ranges_must_be_apart() {
    let b = lat(100.0).with_repeats(vec![95.0, 100.0, 105.0]);
    // 20% more, every repeat above every base repeat: called.
    let n = lat(120.0).with_repeats(vec![115.0, 120.0, 125.0]);
    let j = judge(&b, &n, DEFAULT_THRESHOLD_PCT);
    assert_eq!(j.verdict, Verdict::Slower);
    assert_eq!(j.why, "repeats apart 3+3");
    // 20% more on the values, but one new repeat inside the base range.
    let n = lat(120.0).with_repeats(vec![104.0, 120.0, 125.0]);
    let j = judge(&b, &n, DEFAULT_THRESHOLD_PCT);
    assert_eq!(j.verdict, Verdict::NoChange);
    assert_eq!(j.why, "repeats overlap 3+3");
    // The same both ways for faster.
    let n = lat(80.0).with_repeats(vec![78.0, 80.0, 82.0]);
    assert_eq!(v(b.clone(), n), Verdict::Faster);
    let n = lat(80.0).with_repeats(vec![78.0, 80.0, 96.0]);
    assert_eq!(v(b.clone(), n), Verdict::NoChange);
}

#[test]
fn tight_repeats_do_not_call_a_change_under_the_threshold() {
    let b = lat(100.0).with_repeats(vec![100.0, 100.1]);
    let n = lat(105.0).with_repeats(vec![105.0, 105.1]);
    let j = judge(&b, &n, DEFAULT_THRESHOLD_PCT);
    assert_eq!(
        (j.verdict, j.why.as_str()),
        (Verdict::NoChange, "within threshold")
    );
    assert_eq!(judge(&b, &n, 1.0).verdict, Verdict::Slower);
}

#[test]
fn repeats_on_one_side_only_fall_back_to_the_threshold() {
    let b = lat(100.0).with_repeats(vec![50.0, 100.0, 150.0]);
    let j = judge(&b, &lat(120.0), DEFAULT_THRESHOLD_PCT);
    assert_eq!(j.verdict, Verdict::Slower);
    assert_eq!(j.why, "beyond threshold, single");
    // One repeat is no spread either.
    let n = lat(120.0).with_repeats(vec![120.0]);
    assert_eq!(v(b, n), Verdict::Slower);
}

#[test]
fn neither_is_changed_or_not_and_never_gates() {
    let f = |x| fig("a", "cpu_busy", x, Better::Neither);
    let up = judge(&f(50.0), &f(90.0), DEFAULT_THRESHOLD_PCT);
    assert_eq!(up.verdict, Verdict::Changed);
    assert!(!trips(up.verdict, up.change_pct, 0.0));
    assert_eq!(v(f(50.0), f(10.0)), Verdict::Changed);
    assert_eq!(v(f(50.0), f(52.0)), Verdict::NoChange);
}

#[test]
fn from_zero_and_across_units() {
    assert_eq!(change_pct(0.0, 0.0), Some(0.0));
    assert_eq!(change_pct(0.0, 5.0), None);
    assert_eq!(change_pct(-10.0, -5.0), Some(50.0));
    let j = judge(&lat(0.0), &lat(5.0), DEFAULT_THRESHOLD_PCT);
    assert_eq!((j.verdict, j.change_pct), (Verdict::Slower, None));
    assert!(trips(j.verdict, j.change_pct, 1e9));
    let mut us = lat(100.0);
    us.unit = "us".into();
    let j = judge(&lat(100.0), &us, DEFAULT_THRESHOLD_PCT);
    assert_eq!(j.verdict, Verdict::Incomparable);
    assert!(!trips(j.verdict, j.change_pct, 0.0));
}

#[test]
fn the_gate_trips_only_on_slower_beyond_its_percentage() {
    assert!(trips(Verdict::Slower, Some(-30.0), 25.0));
    assert!(trips(Verdict::Slower, Some(30.0), 25.0));
    assert!(!trips(Verdict::Slower, Some(25.0), 25.0));
    assert!(!trips(Verdict::Faster, Some(90.0), 25.0));
    assert!(!trips(Verdict::NoChange, Some(90.0), 25.0));
    assert!(!trips(Verdict::OnlyBase, None, 0.0));
}

#[test]
fn rows_match_by_key_and_metric_and_one_sided_rows_are_listed() {
    let base = vec![
        fig("a", "p50_ns", 100.0, Better::Lower),
        fig("b", "p50_ns", 100.0, Better::Lower),
        fig("a", "p99_ns", 100.0, Better::Lower),
    ];
    let new = vec![
        fig("c", "p50_ns", 100.0, Better::Lower),
        fig("a", "p99_ns", 300.0, Better::Lower),
        fig("a", "p50_ns", 100.0, Better::Lower),
    ];
    let rows = match_rows(&base, &new, DEFAULT_THRESHOLD_PCT);
    let got: Vec<(String, Verdict)> = rows.iter().map(|r| (r.name(), r.verdict)).collect();
    assert_eq!(
        got,
        vec![
            ("row=a p50_ns".to_string(), Verdict::NoChange),
            ("row=b p50_ns".to_string(), Verdict::OnlyBase),
            ("row=a p99_ns".to_string(), Verdict::Slower),
            ("row=c p50_ns".to_string(), Verdict::OnlyNew),
        ]
    );
    assert_eq!((rows[1].base, rows[1].new), (Some(100.0), None));
    assert_eq!((rows[3].base, rows[3].new), (None, Some(100.0)));
}

fn run(suite: &str, figures: Vec<Figure>) -> Run {
    Run {
        schema: crate::results::envelope::SCHEMA_VERSION,
        suite: suite.into(),
        command_line: vec!["msgbench".into()],
        started: "2026-01-01T00:00:00Z".into(),
        finished: "2026-01-01T00:00:01Z".into(),
        environment: Environment::capture(),
        clock: ClockInfo {
            name: "clock_monotonic".into(),
            ticks_per_us: 1000.0,
            overhead_ns: 20.0,
            requested: "auto".into(),
        },
        floor: None,
        settings: serde_json::Value::Null,
        rows: Vec::new(),
        figures,
        outcome: Outcome::default(),
        notes: Vec::new(),
        verdicts: Vec::new(),
    }
}

fn both(base: &Run, new: &Run, fail: Option<f64>) -> Result<Comparison> {
    compare(
        ("base.json", base),
        ("new.json", new),
        DEFAULT_THRESHOLD_PCT,
        fail,
    )
}

#[test]
fn another_suite_is_refused_in_one_line() {
    let e = both(&run("floor", vec![]), &run("ipc", vec![]), None)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("base.json is a floor run") && e.contains("new.json a ipc run"),
        "{e}"
    );
    assert!(!e.contains('\n'), "{e}");
}

#[test]
fn the_gate_names_the_slower_rows() {
    let base = run("adder", vec![rate(1000.0), lat(100.0), lat(50.0)]);
    let mut other = lat(50.0);
    other.key.insert("row".into(), "b".into());
    let new = run("adder", vec![rate(500.0), lat(110.0), other]);
    let c = both(&base, &new, Some(20.0)).unwrap();
    assert_eq!(c.failing, vec!["row=a rate".to_string()]);
    let c = both(&base, &new, Some(60.0)).unwrap();
    assert!(c.failing.is_empty());
    let c = both(&base, &new, None).unwrap();
    assert!(c.failing.is_empty());
}

#[test]
fn a_run_against_itself_is_no_change_everywhere_in_every_format() {
    let figs = vec![
        lat(100.0).with_repeats(vec![90.0, 100.0, 130.0]),
        rate(12345.6),
        fig("a", "busy", 0.0, Better::Neither),
    ];
    let r = run("floor", figs);
    let c = both(&r, &r, Some(0.0)).unwrap();
    assert!(c.rows.iter().all(|r| r.verdict == Verdict::NoChange));
    assert!(c.failing.is_empty());
    let text = render::render(&c, Format::Table);
    assert!(text.contains("3 rows: 3 no change."), "{text}");
    assert!(text.contains("12,346") && text.contains("+0.0%"), "{text}");
    let csv = render::render(&c, Format::Csv);
    assert!(
        csv.starts_with("row,metric,unit,base,new,change,verdict,why\n"),
        "{csv}"
    );
    assert!(csv.contains(",12345.6,12345.6,0,no change,"), "{csv}");
    let md = render::render(&c, Format::Markdown);
    assert!(md.contains("| no change"), "{md}");
    let json: serde_json::Value = serde_json::from_str(&render::render(&c, Format::Json)).unwrap();
    assert_eq!(json["rows"][0]["verdict"], "no change");
    assert_eq!(json["rows"][0]["base_repeats"][2], 130.0);
}

#[test]
fn percentages_are_finite_and_not_negative() {
    assert_eq!(super::percent("2.5"), Ok(2.5));
    assert_eq!(super::percent("0"), Ok(0.0));
    for bad in ["-1", "nan", "inf", "x", ""] {
        assert!(super::percent(bad).is_err(), "{bad}");
    }
}
