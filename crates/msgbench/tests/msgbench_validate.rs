//! `msgbench validate`: runs the real binary next to the installed
//! reference tools and checks every row has both figures as positive
//! numbers (never that they agree: that is a property of the machine).
//!
//! When a reference tool is missing, the test skips with a printed reason,
//! unless the `CI` environment variable is set, where it fails.

mod common;

use common::{run, skip, Bin, TestDir};

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
    assert!(v["header"]["environment"].is_object(), "{text}");
    let rows = v["rows"].as_array().expect("rows");
    let missing: Vec<String> = rows
        .iter()
        .filter(|r| r["verdict"] == "missing")
        .map(|r| r["note"].as_str().unwrap_or("").to_string())
        .collect();
    if !missing.is_empty() {
        return skip(&missing.join("; "));
    }
    out.assert_ok();
    for name in [
        "perf",
        "ptsematest",
        "pmqtest",
        "svsematest",
        "sigwaittest",
        "cyclictest",
    ] {
        assert!(
            rows.iter().any(|r| r["tool"] == name),
            "no {name} row: {text}"
        );
    }
    for r in rows {
        for side in ["reference", "ours"] {
            let avg = r[side]["avg_us"].as_f64();
            assert!(
                avg.is_some_and(|a| a.is_finite() && a > 0.0),
                "{side} of {}: {r}",
                r["name"]
            );
        }
        assert!(r["ratio"].as_f64().is_some_and(|x| x > 0.0), "{r}");
        assert!(
            ["agree", "disagree"].contains(&r["verdict"].as_str().unwrap_or("")),
            "{r}"
        );
        assert!(out.stdout.contains(r["name"].as_str().unwrap()), "{out}");
    }
}

#[test]
fn validate_option_errors_are_one_line_naming_the_option() {
    for (args, option) in [
        (&["--loops", "0"][..], "--loops 0"),
        (&["--loops", "many"][..], "--loops many"),
        (&["--fifo", "200"][..], "--fifo 200"),
        (&["--cpus", "9999"][..], "--cpus 9999"),
        (&["--cpus", "x"][..], "--cpus x"),
    ] {
        let mut a = vec!["validate"];
        a.extend_from_slice(args);
        let line = run(Bin::Msgbench, &a).assert_one_line_error(1);
        let prefix = "msgbench: error: ";
        assert!(
            line.starts_with(prefix) && line[prefix.len()..].starts_with(option),
            "{args:?}: must name {option:?}: {line}"
        );
    }
}
