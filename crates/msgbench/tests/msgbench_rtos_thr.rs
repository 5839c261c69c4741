//! `msgbench rtos CAL CLK THR --quick`: the real binary runs the
//! calibration, clock and thread tests; every ID is in the JSON, the
//! behaviour tests pass (as root, where SCHED_FIFO is available), and every
//! timing result carries its raw samples. Nothing here asserts a speed.

mod common;

use common::*;

/// The IDs of the three groups.
const IDS: [&str; 8] = [
    "CAL-P-TRC",
    "CAL-P-CPU",
    "CLK-B-CFG",
    "CLK-P-DUR",
    "THR-B-NEW",
    "THR-B-RR",
    "THR-P-SLS",
    "THR-P-NEW",
];

#[test]
fn cal_clk_thr_quick_results_and_json() {
    let _serial = serial();
    let dir = TestDir::new("rtos-thr");
    let json = dir.file("rtos.json");
    let out = run(
        Bin::Msgbench,
        [
            "rtos",
            "CAL",
            "CLK",
            "THR",
            "--quick",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let doc = read_json(&json);
    let results = doc["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {doc}"));
    for id in IDS {
        assert!(
            results.iter().any(|r| r["id"] == id),
            "{id} missing from the JSON"
        );
    }
    let root = is_root();
    for r in results {
        let id = r["id"].as_str().unwrap_or("?");
        let variant = r["variant"].as_str().unwrap_or("");
        let outcome = &r["outcome"];
        match outcome["kind"].as_str() {
            Some("behaviour") => {
                let observed = outcome["observed"].as_array();
                assert!(
                    observed.is_some_and(|o| !o.is_empty()),
                    "{id} {variant}: no observed events: {r}"
                );
                if root {
                    assert_eq!(outcome["pass"], true, "{id} {variant} failed: {r}");
                }
            }
            Some("timing") => {
                let count = outcome["count"].as_u64().unwrap_or(0);
                assert!(count > 0, "{id} {variant}: no samples: {r}");
                let samples = outcome["samples"]
                    .as_array()
                    .unwrap_or_else(|| panic!("{id} {variant}: no raw samples: {r}"));
                assert_eq!(samples.len() as u64, count, "{id} {variant}");
                assert!(
                    samples
                        .iter()
                        .all(|s| s.as_f64().is_some_and(|x| x.is_finite() && x >= 0.0)),
                    "{id} {variant}: bad sample: {r}"
                );
                assert!(num(outcome, "min") <= num(outcome, "max"), "{r}");
            }
            Some("skipped") => {
                let reason = outcome["reason"].as_str().unwrap_or("");
                assert!(!reason.is_empty(), "{id} {variant}: no reason: {r}");
                assert!(
                    !(root && reason.contains("CAP_SYS_NICE")),
                    "{id} {variant} skipped for privilege as root: {r}"
                );
            }
            other => panic!("{id} {variant}: unexpected outcome {other:?}: {r}"),
        }
    }
    if root {
        out.assert_ok();
    } else {
        skip("not root: SCHED_FIFO tests are skipped and behaviour verdicts not asserted");
    }
}
