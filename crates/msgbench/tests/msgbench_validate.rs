//! `msgbench validate`: runs the real binary next to the installed
//! reference tools and checks every row has both figures as positive
//! numbers (never that they agree: that is a property of the machine),
//! in the results envelope every suite writes.
//!
//! When a reference tool is missing, the test skips with a printed reason,
//! unless the `CI` environment variable is set, where it fails.

mod common;

use common::{run, skip, Bin, TestDir};

/// The reference tools, one row each at least.
const TOOLS: [&str; 6] = [
    "perf",
    "ptsematest",
    "pmqtest",
    "svsematest",
    "sigwaittest",
    "cyclictest",
];

/// The notes of the rows whose reference tool is missing.
fn missing(rows: &[serde_json::Value]) -> Vec<String> {
    rows.iter()
        .filter(|r| r["verdict"] == "missing")
        .map(|r| r["note"].as_str().unwrap_or("").to_string())
        .collect()
}

/// A compared row: both averages positive, a positive ratio, its band,
/// a verdict of agree or disagree.
fn check_row(r: &serde_json::Value) {
    for side in ["reference", "ours"] {
        let avg = r[side]["avg_us"].as_f64();
        assert!(
            avg.is_some_and(|a| a.is_finite() && a > 0.0),
            "{side} of {}: {r}",
            r["name"]
        );
    }
    assert!(r["ratio"].as_f64().is_some_and(|x| x > 0.0), "{r}");
    let (low, high) = (&r["tolerance"]["low"], &r["tolerance"]["high"]);
    assert!(
        low.as_f64()
            .zip(high.as_f64())
            .is_some_and(|(l, h)| 0.0 < l && l < 1.0 && h > 1.0),
        "{r}"
    );
    assert!(
        ["agree", "disagree"].contains(&r["verdict"].as_str().unwrap_or("")),
        "{r}"
    );
}

/// The figures of a compared row: its ratio, and the average of each side.
fn check_figures(doc: &serde_json::Value, name: &str) {
    let figures = doc["figures"].as_array().expect("figures");
    let of = |side: Option<&str>, metric: &str| {
        figures.iter().any(|f| {
            f["key"]["check"] == name
                && f["key"].get("side").and_then(|s| s.as_str()) == side
                && f["metric"] == metric
        })
    };
    assert!(of(None, "ratio"), "no ratio of {name}: {figures:?}");
    assert!(of(Some("reference"), "avg_us"), "{name}: {figures:?}");
    assert!(of(Some("ours"), "avg_us"), "{name}: {figures:?}");
}

#[test]
fn validate_quick_gives_both_figures_for_every_row() {
    let dir = TestDir::new("validate");
    let json = dir.file("v.json");
    let out = run(
        Bin::Msgbench,
        ["validate", "--quick", "--json", json.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&json).unwrap_or_else(|e| panic!("no JSON ({e}): {out}"));
    let v: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    assert_eq!((&v["schema"], &v["suite"]), (&1.into(), &"validate".into()));
    assert!(v["environment"].is_object(), "{text}");
    let rows = v["rows"].as_array().expect("rows");
    let missing = missing(rows);
    assert_eq!(v["outcome"]["skipped"], missing.len(), "{text}");
    if !missing.is_empty() {
        return skip(&missing.join("; "));
    }
    out.assert_ok();
    assert_eq!(v["outcome"]["failed"], 0, "{text}");
    assert_eq!(v["outcome"]["rows"], rows.len(), "{text}");
    for name in TOOLS {
        assert!(
            rows.iter().any(|r| r["tool"] == name),
            "no {name} row: {text}"
        );
    }
    for r in rows {
        check_row(r);
        let name = r["name"].as_str().unwrap();
        check_figures(&v, name);
        assert!(out.stdout.contains(name), "{out}");
    }
    assert!(out.stdout.contains("tolerance"), "{out}");
}

/// `--format json` prints one envelope, nothing else; `--format csv` only
/// the CSV table. A tiny run: the figures do not matter here, and a
/// missing tool only makes its row `missing`.
#[test]
fn validate_formats_print_the_envelope_or_only_csv() {
    let base = ["validate", "--loops", "4", "--cpus", "0"];
    let out = run(Bin::Msgbench, base.iter().chain(&["--format", "json"]));
    let v: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {out}"));
    assert_eq!(v["schema"], 1, "{v}");
    assert_eq!(v["suite"], "validate", "{v}");
    assert_eq!(v["settings"]["loops"], 4, "{v}");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(v["outcome"]["rows"], rows.len(), "{v}");
    for r in rows {
        assert!(r["tolerance"]["low"].is_f64(), "{r}");
        assert!(r["tolerance"]["high"].is_f64(), "{r}");
    }

    let out = run(Bin::Msgbench, base.iter().chain(&["--format", "csv"]));
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert!(
        lines[0].starts_with("comparison,reference,") && lines[0].contains(",tolerance,"),
        "{out}"
    );
    assert_eq!(lines.len(), 1 + rows.len(), "only the table: {out}");
    let fields = lines[0].split(',').count();
    for l in &lines[1..] {
        assert!(!l.starts_with("msgbench validate"), "{out}");
        assert!(l.split(',').count() >= fields, "{l}");
    }
}

#[test]
fn validate_option_errors_are_one_line_naming_the_option() {
    for (args, option) in [
        (&["--loops", "0"][..], "--loops 0"),
        (&["--loops", "many"][..], "--loops many"),
        (&["--fifo", "200"][..], "--fifo 200"),
    ] {
        let mut a = vec!["validate"];
        a.extend_from_slice(args);
        // Refused by clap's value parsers: usage errors, exit 2.
        let line = run(Bin::Msgbench, &a).assert_one_line_error(2);
        let prefix = "msgbench: error: ";
        assert!(
            line.starts_with(prefix) && line[prefix.len()..].starts_with(option),
            "{args:?}: must name {option:?}: {line}"
        );
    }
}

#[test]
fn validate_bad_cpus_are_one_line_usage_errors() {
    for (bad, option) in [("9999", "--cpus 9999: "), ("x", "--cpus x: ")] {
        let line = run(Bin::Msgbench, ["validate", "--cpus", bad]).assert_one_line_error(2);
        assert!(
            line.starts_with(&format!("msgbench: error: {option}")),
            "{bad}: must name {option:?}: {line}"
        );
    }
}

#[test]
fn validate_unknown_format_is_a_usage_error() {
    let out = run(Bin::Msgbench, ["validate", "--format", "xml"]);
    assert_eq!(out.code(), 2, "{out}");
}
