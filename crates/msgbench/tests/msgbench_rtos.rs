//! `msgbench rtos`: the whole catalogue with `--quick` (every result has
//! an outcome, timing results carry their raw samples, the interrupt
//! substitutes are labelled), selection by ID and group, one-line option
//! errors, and the markdown / no-reference output.
//! Behaviour only: nothing here asserts a speed.

mod common;

use serde_json::Value;

use common::*;

/// The results of a JSON report.
fn results(doc: &Value) -> &Vec<Value> {
    doc["results"].as_array().expect("a results array")
}

/// Asserts a run succeeded, or failed only because behaviour tests
/// FAILed (each with what it observed), never because of an error.
fn assert_ok_or_behaviour_fail(o: &Output, doc: &Value) {
    if o.status.success() {
        return;
    }
    assert_eq!(o.code(), 1, "exit code: {o}");
    let failed: Vec<&Value> = results(doc)
        .iter()
        .filter(|r| r["outcome"]["kind"] == "behaviour" && r["outcome"]["pass"] == false)
        .collect();
    assert!(!failed.is_empty(), "non-zero exit without a FAIL: {o}");
    assert_eq!(doc["summary"]["errors"], 0, "errors: {o}");
    for r in failed {
        let observed = r["outcome"]["observed"].as_array().expect("observed");
        assert!(!observed.is_empty(), "a FAIL without observations: {r}");
    }
    assert!(o.stdout.contains("FAIL"), "{o}");
    assert!(o.stdout.contains("observed: "), "{o}");
    assert!(o.stderr.contains("test(s) failed, 0 error(s)"), "{o}");
}

#[test]
fn rtos_quick_whole_catalogue() {
    // Real-time threads pinned to the CPUs: one run at a time.
    let _one = serial();
    let dir = TestDir::new("rtos");
    let json = dir.file("rtos.json");
    let o = run(
        Bin::Msgbench,
        ["rtos", "--quick", "--json", &json.display().to_string()],
    );
    assert!(json.exists(), "no JSON written: {o}");
    let doc = read_json(&json);
    assert_ok_or_behaviour_fail(&o, &doc);
    assert!(o.stdout.contains("\nSummary: "), "no summary line: {o}");

    let res = results(&doc);
    assert!(!res.is_empty(), "no results: {o}");
    for r in res {
        let kind = r["outcome"]["kind"].as_str().unwrap_or("");
        assert!(
            ["behaviour", "timing", "skipped", "error"].contains(&kind),
            "a result without an outcome: {r}"
        );
        if kind == "timing" {
            let samples = r["outcome"]["samples"].as_array().expect("samples");
            assert!(!samples.is_empty(), "timing without samples: {r}");
            assert_eq!(samples.len() as f64, num(&r["outcome"], "count"), "{r}");
        }
    }
    // The whole catalogue ran: the interrupt and leak tests are there.
    for id in [
        "IRQ-P-LAT",
        "IRQ-P-DLT",
        "IRQ-P-TLT",
        "IRQ-S-SUS",
        "MEM-B-LEK",
    ] {
        assert!(res.iter().any(|r| r["id"] == id), "{id} missing: {o}");
    }
    for r in res.iter().filter(|r| r["id"] == "IRQ-P-LAT") {
        assert_eq!(r["outcome"]["kind"], "skipped", "{r}");
        assert!(
            r["outcome"]["reason"]
                .as_str()
                .unwrap()
                .contains("no user-space equivalent"),
            "{r}"
        );
        assert!(r["reference"]["text"].is_string(), "{r}");
    }
    // Substitutes are labelled in the JSON and in the table.
    for id in ["IRQ-P-TLT", "IRQ-S-SUS"] {
        for r in res.iter().filter(|r| r["id"] == id) {
            assert!(
                r["substitute"].as_str().is_some_and(|s| !s.is_empty()),
                "{id} not labelled a substitute: {r}"
            );
        }
        assert!(
            o.stdout.contains(&format!("{id} (subst.)")),
            "{id} not labelled in the table: {o}"
        );
    }
    assert!(!o.stdout.contains("IRQ-P-LAT (subst.)"), "{o}");
    let lek = res.iter().find(|r| r["id"] == "MEM-B-LEK").unwrap();
    if lek["outcome"]["kind"] == "behaviour" {
        let observed = lek["outcome"]["observed"].as_array().unwrap();
        assert!(
            observed[0].as_str().unwrap().starts_with("rss start "),
            "{lek}"
        );
        assert!(
            observed[1].as_str().unwrap().starts_with("fds start "),
            "{lek}"
        );
    }
}

#[test]
fn rtos_selection_runs_only_what_is_named() {
    let _one = serial();
    let dir = TestDir::new("rtos-sel");
    let json = dir.file("sel.json");
    let o = run(
        Bin::Msgbench,
        [
            "rtos",
            "irq-s-sus",
            "MEM",
            "--quick",
            "--duration",
            "0.5",
            "--json",
            &json.display().to_string(),
        ],
    );
    let doc = read_json(&json);
    assert_ok_or_behaviour_fail(&o, &doc);
    let mut ids: Vec<&str> = results(&doc)
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    ids.dedup();
    assert_eq!(ids, ["IRQ-S-SUS", "MEM-B-LEK"], "{o}");
    assert_eq!(doc["settings"]["duration_secs"], 0.5, "{doc}");
    assert!(o.stdout.contains("msgbench rtos: 2 tests"), "{o}");
}

#[test]
fn rtos_option_errors_are_one_line() {
    let cases: [(&[&str], &str); 4] = [
        (&["rtos", "NOPE"], "NOPE"),
        (&["rtos", "--sem", "foo"], "--sem foo"),
        (&["rtos", "--duration", "0"], "--duration 0"),
        (&["rtos", "--format", "x"], "--format x"),
    ];
    for (args, needle) in cases {
        let o = run(Bin::Msgbench, args);
        let line = o.assert_one_line_error(1);
        assert!(line.contains(needle), "{args:?}: {line}");
        assert!(!o.stdout.contains("Summary"), "{args:?} ran tests: {o}");
    }
}

#[test]
fn rtos_markdown_and_no_reference() {
    let o = run(
        Bin::Msgbench,
        ["rtos", "IRQ-P-LAT", "IRQ-P-DLT", "--format", "markdown"],
    );
    o.assert_ok();
    assert!(o.stdout.contains("| --- |"), "no markdown table: {o}");
    assert!(o.stdout.contains("**Summary:**"), "{o}");
    assert!(o.stdout.contains("QNX"), "no reference column: {o}");
    assert!(o.stdout.contains("1.8 us"), "no reference figure: {o}");

    let o = run(
        Bin::Msgbench,
        ["rtos", "IRQ-P-LAT", "IRQ-P-DLT", "--no-reference"],
    );
    o.assert_ok();
    assert!(o.stdout.contains("IRQ-P-LAT"), "{o}");
    assert!(
        !o.stdout.contains("QNX 6.5 ("),
        "reference column shown: {o}"
    );
    assert!(!o.stdout.contains("1.8 us"), "reference figure shown: {o}");
}

/// SIGINT during the catalogue: the run stops promptly, says it was
/// interrupted (exit 1), reports no test as failed or broken because it was
/// cut short, and leaves no System V semaphore behind.
#[test]
fn rtos_sigint_stops_cleanly() {
    let _one = serial();
    let before = sysv_sems();
    let mut p = Proc::start(Bin::Msgbench, ["rtos", "--quick"]);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    p.signal(libc::SIGINT);
    let o = p.wait_within(std::time::Duration::from_secs(15), "SIGINT");
    assert_eq!(o.code(), 1, "{o}");
    assert!(
        o.stderr
            .trim_end()
            .ends_with("msgbench: error: interrupted"),
        "{o}"
    );
    assert!(o.stdout.contains("(interrupted)"), "{o}");
    assert!(o.stdout.contains(" 0 failed, "), "{o}");
    assert!(o.stdout.contains(" 0 errors"), "{o}");
    assert_eq!(sysv_sems(), before, "System V semaphores left behind");
}

/// System V semaphore sets on the machine (tests run one at a time here).
fn sysv_sems() -> usize {
    std::fs::read_to_string("/proc/sysvipc/sem")
        .map(|t| t.lines().skip(1).count())
        .unwrap_or(0)
}
