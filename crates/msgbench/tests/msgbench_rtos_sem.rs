//! `msgbench rtos SEM MUT --quick --json F` for each `--sem` kind: every
//! test ID present, the behaviour tests PASS where Linux provides the
//! behaviour, and a System V FIFO wake-up reported as a FAIL with the
//! observed order.

mod common;

use common::{is_root, read_json, run, skip, Bin, TestDir};
use serde_json::Value;

const IDS: [&str; 8] = [
    "SEM-B-LCK",
    "SEM-B-REL",
    "SEM-P-NEW",
    "SEM-P-ARN",
    "SEM-P-ARC",
    "MUT-B-ARC",
    "MUT-P-ARC",
    "MUT-P-ARN",
];

fn results_for(kind: &str) -> (i32, Vec<Value>) {
    // Never two runs at once: both would put SCHED_FIFO threads on one CPU.
    let _one_at_a_time = common::serial();
    let dir = TestDir::new(&format!("rtos-sem-{kind}"));
    let json = dir.file("out.json");
    let out = run(
        Bin::Msgbench,
        [
            "rtos",
            "SEM",
            "MUT",
            "--quick",
            "--sem",
            kind,
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let v = read_json(&json);
    let results = v["results"].as_array().cloned().unwrap_or_default();
    for id in IDS {
        assert!(
            results.iter().any(|r| r["id"] == id),
            "{kind}: {id} missing\n{}",
            out.stdout
        );
    }
    for r in &results {
        let kind_of = r["outcome"]["kind"].as_str().unwrap_or("");
        assert_ne!(kind_of, "error", "{kind}: {r}");
    }
    (out.code(), results)
}

fn behaviours(results: &[Value]) -> Vec<(String, bool, Vec<String>)> {
    results
        .iter()
        .filter(|r| r["outcome"]["kind"] == "behaviour")
        .map(|r| {
            let obs = r["outcome"]["observed"]
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|s| s.as_str().map(String::from))
                        .collect()
                })
                .unwrap_or_default();
            (
                format!(
                    "{} {}",
                    r["id"].as_str().unwrap_or(""),
                    r["variant"].as_str().unwrap_or("")
                ),
                r["outcome"]["pass"].as_bool().unwrap_or(false),
                obs,
            )
        })
        .collect()
}

#[test]
fn posix_and_futex_pass_every_behaviour_test() {
    for kind in ["posix", "futex"] {
        let (code, results) = results_for(kind);
        for (name, pass, obs) in behaviours(&results) {
            assert!(pass, "{kind}: {name} failed: {obs:?}");
        }
        assert_eq!(code, 0, "{kind}");
    }
    if !is_root() {
        skip("priority tests need CAP_SYS_NICE");
    }
}

#[test]
fn sysv_reports_its_wake_up_order() {
    let (code, results) = results_for("sysv");
    let b = behaviours(&results);
    let failed: Vec<_> = b.iter().filter(|(_, pass, _)| !pass).collect();
    // Only SEM-B-REL may fail with System V (FIFO wake-up is its semantics).
    for (name, _, obs) in &failed {
        assert!(name.starts_with("SEM-B-REL"), "{name} failed: {obs:?}");
        assert!(!obs.is_empty(), "a FAIL must say what was observed");
        let rel = results.iter().find(|r| r["id"] == "SEM-B-REL").unwrap();
        let note = rel["note"].as_str().unwrap_or("");
        assert!(note.contains("System V semantics"), "{note}");
    }
    assert_eq!(code, if failed.is_empty() { 0 } else { 1 }, "{b:?}");
}
