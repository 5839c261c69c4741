//! `msgbench rtos`: the whole catalogue with `--quick` (every result has
//! an outcome, timing results carry their raw samples, the interrupt
//! substitutes are labelled), selection by ID and group, one-line option
//! errors, and the markdown / no-reference output.
//! Behaviour only: nothing here asserts a speed.

mod common;

use serde_json::Value;

use common::*;

/// The results of a JSON envelope (its rows).
fn results(doc: &Value) -> &Vec<Value> {
    assert_eq!(doc["schema"], 1, "not a results envelope");
    assert_eq!(doc["suite"], "rtos", "not an rtos envelope");
    doc["rows"].as_array().expect("a rows array")
}

/// The FAIL verdicts and errors of the rows: what the envelope's
/// `outcome.failed` counts.
fn failures(res: &[Value]) -> u64 {
    res.iter()
        .filter(|r| {
            let o = &r["outcome"];
            o["kind"] == "error" || (o["kind"] == "behaviour" && o["pass"] == false)
        })
        .count() as u64
}

/// The behaviour verdicts of a run, checked for what they are for.
///
/// On this machine class (root, so SCHED_FIFO is allowed) every behaviour
/// test must PASS, except IRQ-S-SUS, whose outcome legitimately varies by
/// machine (on a VM the host's vCPU preemption decides it): for it only
/// the invariants of [`check_sus`] must hold. Without root the priority
/// tests are skipped and their verdicts cannot be asserted.
/// The exit status must agree with the verdicts: 1 exactly when a
/// behaviour FAILed, each FAIL saying what it observed; never an error.
fn check_verdicts(o: &Output, doc: &Value, quick: bool) {
    let res = results(doc);
    assert!(
        res.iter().all(|r| r["outcome"]["kind"] != "error"),
        "errors: {o}"
    );
    assert_eq!(doc["outcome"]["rows"], res.len(), "{}", doc["outcome"]);
    assert_eq!(
        doc["outcome"]["failed"],
        failures(res),
        "{}",
        doc["outcome"]
    );
    let failed: Vec<&Value> = res
        .iter()
        .filter(|r| r["outcome"]["kind"] == "behaviour" && r["outcome"]["pass"] == false)
        .collect();
    for r in &failed {
        let observed = r["outcome"]["observed"].as_array().expect("observed");
        assert!(!observed.is_empty(), "a FAIL without observations: {r}");
    }
    if failed.is_empty() {
        o.assert_ok();
    } else {
        assert_eq!(o.code(), 1, "exit code with a FAIL: {o}");
        assert!(o.stdout.contains("observed: "), "{o}");
    }
    if is_root() {
        for r in res.iter().filter(|r| r["outcome"]["kind"] == "behaviour") {
            if r["id"] != "IRQ-S-SUS" {
                assert_eq!(r["outcome"]["pass"], true, "must PASS here: {r}");
            }
        }
    } else {
        skip("not root: SCHED_FIFO tests are skipped and their verdicts not asserted");
    }
    if res.iter().any(|r| r["id"] == "IRQ-S-SUS") {
        check_sus(res, if quick { 100_000 } else { 1_000_000 });
    }
    if res.iter().any(|r| r["id"] == "MEM-B-LEK") {
        check_lek(res);
    }
}

/// One "period P us (achieved A us): N events, L lost" line of IRQ-S-SUS:
/// (achieved us, events, lost).
fn sus_trial(line: &str) -> (f64, u64, u64) {
    let parse = || -> Option<(f64, u64, u64)> {
        let achieved = line.split("(achieved ").nth(1)?.split(" us)").next()?;
        let rest = line.split("): ").nth(1)?;
        let events = rest.split(" events, ").next()?;
        let lost = rest.split(" events, ").nth(1)?.strip_suffix(" lost")?;
        Some((
            achieved.parse().ok()?,
            events.parse().ok()?,
            lost.parse().ok()?,
        ))
    };
    parse().unwrap_or_else(|| panic!("not a trial line: {line:?}"))
}

/// IRQ-S-SUS, whichever way it comes out: a PASS rests on a trial of at
/// least `target` events with none lost, and its headline is that
/// trial's achieved (measured) period; a FAIL lists trials that all lost;
/// otherwise it is inconclusive, with the trials and no headline figure.
fn check_sus(res: &[Value], target: u64) {
    let sus: Vec<&Value> = res.iter().filter(|r| r["id"] == "IRQ-S-SUS").collect();
    if sus.iter().all(|r| {
        r["outcome"]["reason"]
            .as_str()
            .is_some_and(|x| x.starts_with("needs CAP_SYS_NICE"))
    }) {
        return; // not run without the privilege (checked by check_verdicts)
    }
    let rows = |v: &str| sus.iter().filter(|r| r["variant"] == v).count();
    let losses = sus
        .iter()
        .find(|r| r["variant"] == "losses by period")
        .unwrap_or_else(|| panic!("no losses-by-period row: {sus:?}"));
    let o = &losses["outcome"];
    let headline = sus
        .iter()
        .find(|r| r["variant"] == "lowest period with none lost");
    match (o["kind"].as_str(), o["pass"].as_bool()) {
        (Some("behaviour"), Some(true)) => {
            let h = headline.unwrap_or_else(|| panic!("a PASS without a headline: {sus:?}"));
            check_sus_pass(o, h, target);
        }
        (Some("behaviour"), Some(false)) => {
            assert!(headline.is_none(), "a FAIL with a headline: {sus:?}");
            check_sus_fail(o);
        }
        (Some("inconclusive"), _) => {
            assert!(headline.is_none(), "inconclusive with a headline: {sus:?}");
            check_sus_inconclusive(o, losses, target);
        }
        (Some("skipped"), _) => {
            assert!(headline.is_none(), "skipped with a headline: {sus:?}");
            let reason = o["reason"].as_str().unwrap_or("");
            assert!(
                reason.starts_with("needs CAP_SYS_NICE") || reason.starts_with("interrupted"),
                "{losses}"
            );
        }
        other => panic!("IRQ-S-SUS: unexpected outcome {other:?}: {losses}"),
    }
    assert_eq!(rows("losses by period"), 1, "{sus:?}");
}

/// The trials of the losses-by-period row `o`: (achieved period, events,
/// lost) each.
fn sus_trials(o: &Value) -> Vec<(f64, u64, u64)> {
    o["observed"]
        .as_array()
        .expect("observed")
        .iter()
        .map(|l| sus_trial(l.as_str().expect("a line")))
        .collect()
}

/// A PASS: the headline `h` is the achieved period of a loss-free trial of
/// at least `target` events.
fn check_sus_pass(o: &Value, h: &Value, target: u64) {
    let period = num(&h["outcome"], "avg");
    let trials = sus_trials(o);
    assert!(
        trials.iter().any(|&(achieved, events, lost)| {
            events >= target && lost == 0 && (achieved - period).abs() < 0.01
        }),
        "the headline {period} us is not the achieved period of a loss-free run of \
         {target} events: {trials:?}"
    );
    assert!(h["note"].as_str().unwrap_or("").contains("achieved"), "{h}");
}

/// A FAIL: every period tried lost events in some trial.
fn check_sus_fail(o: &Value) {
    let lines: Vec<&str> = o["observed"]
        .as_array()
        .expect("observed")
        .iter()
        .map(|l| l.as_str().expect("a line"))
        .collect();
    let requested = |l: &str| l.split(" us").next().unwrap_or("").to_string();
    for l in &lines {
        assert!(
            lines
                .iter()
                .any(|m| requested(m) == requested(l) && sus_trial(m).2 > 0),
            "a FAIL with a clean period: {l} in {lines:?}"
        );
    }
}

/// Inconclusive: it says what was tried, and no trial reached the target
/// clean.
fn check_sus_inconclusive(o: &Value, losses: &Value, target: u64) {
    let reason = o["reason"].as_str().unwrap_or("");
    assert!(reason.starts_with("no loss-free run of "), "{losses}");
    let trials = sus_trials(o);
    assert!(
        !trials
            .iter()
            .any(|&(_, events, lost)| events >= target && lost == 0),
        "inconclusive although a trial reached the target clean: {trials:?}"
    );
}

/// "WHAT start A, end B" in MEM-B-LEK's observations: (A, B), or `None`
/// when that count was not taken here (e.g. /dev/mqueue not mounted).
fn lek_count(observed: &[Value], what: &str) -> Option<(u64, u64)> {
    let line = observed
        .iter()
        .filter_map(Value::as_str)
        .find(|l| l.starts_with(what))
        .unwrap_or_else(|| panic!("no {what:?} in {observed:?}"));
    let rest = line.strip_prefix(&format!("{what} start "))?;
    let (a, b) = rest.split_once(", end ")?;
    let a = a.trim_end_matches(" KiB");
    let b = b.split_whitespace().next()?;
    Some((a.parse().ok()?, b.parse().ok()?))
}

/// MEM-B-LEK PASSes here, with its descriptor and kernel-object counts
/// equal before and after the rounds, and resident memory within its
/// tolerance.
fn check_lek(res: &[Value]) {
    let lek = res
        .iter()
        .find(|r| r["id"] == "MEM-B-LEK")
        .expect("MEM-B-LEK");
    assert_eq!(lek["outcome"]["kind"], "behaviour", "{lek}");
    assert_eq!(lek["outcome"]["pass"], true, "{lek}");
    let observed = lek["outcome"]["observed"].as_array().expect("observed");
    for what in ["fds", "sysv msg queues", "named semaphores"] {
        let (a, b) = lek_count(observed, what).unwrap_or_else(|| panic!("{what}: {lek}"));
        assert_eq!(a, b, "{what} before and after differ: {lek}");
    }
    // Counted only where /dev/mqueue is mounted; then it must not change.
    if let Some((a, b)) = lek_count(observed, "posix mqueues") {
        assert_eq!(a, b, "posix mqueues before and after differ: {lek}");
    }
    let (a, b) = lek_count(observed, "rss").expect("rss");
    assert!(b <= a + 1024, "rss grew beyond the tolerance: {lek}");
    let rounds = observed
        .iter()
        .filter_map(Value::as_str)
        .find_map(|l| l.strip_prefix("rounds "))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(rounds > 0, "no rounds: {lek}");
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
    check_verdicts(&o, &doc, true);
    assert!(o.stdout.contains("\nSummary: "), "no summary line: {o}");

    let res = results(&doc);
    assert!(!res.is_empty(), "no results: {o}");
    for r in res {
        let kind = r["outcome"]["kind"].as_str().unwrap_or("");
        assert!(
            ["behaviour", "inconclusive", "timing", "skipped", "error"].contains(&kind),
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
    check_verdicts(&o, &doc, true);
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
    // An unknown test is the plan's error (exit 1); values clap's value
    // parsers refuse are usage errors (exit 2).
    let cases: [(&[&str], &str, i32); 4] = [
        (&["rtos", "NOPE"], "NOPE", 1),
        (
            &["rtos", "MSG-B-PRI", "--msg-inherit", "maybe"],
            "--msg-inherit maybe",
            2,
        ),
        (&["rtos", "--sem", "foo"], "--sem foo", 2),
        (&["rtos", "--duration", "0"], "--duration 0", 2),
    ];
    for (args, needle, code) in cases {
        let o = run(Bin::Msgbench, args);
        let line = o.assert_one_line_error(code);
        assert!(line.contains(needle), "{args:?}: {line}");
        assert!(!o.stdout.contains("Summary"), "{args:?} ran tests: {o}");
    }
    // --format is checked by the command-line parser (usage error, 2).
    let o = run(Bin::Msgbench, ["rtos", "--format", "x"]);
    assert_eq!(o.code(), 2, "{o}");
    assert!(o.stderr.contains("--format"), "{o}");
    assert!(!o.stdout.contains("Summary"), "ran tests: {o}");
}

/// `--format json` prints the envelope and nothing else; `--format csv`
/// prints only CSV (a header and rows per group, no banner, no notes).
#[test]
fn rtos_json_and_csv_formats() {
    let o = run(
        Bin::Msgbench,
        ["rtos", "IRQ-P-LAT", "IRQ-P-DLT", "--format", "json"],
    );
    o.assert_ok();
    let doc: Value = serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {o}"));
    let res = results(&doc);
    assert!(res.iter().any(|r| r["id"] == "IRQ-P-LAT"), "{doc}");
    assert_eq!(doc["outcome"]["rows"], res.len(), "{doc}");
    assert_eq!(doc["outcome"]["failed"], 0, "{doc}");
    assert!(
        res.iter()
            .filter(|r| r["id"] == "IRQ-P-LAT")
            .all(|r| r["reference"]["text"].is_string()),
        "IRQ-P-LAT without its reference: {doc}"
    );
    let verdicts = doc["verdicts"].as_array().expect("verdicts");
    assert!(
        verdicts
            .iter()
            .any(|n| n.as_str().is_some_and(|n| n.starts_with("Summary: "))),
        "{doc}"
    );
    for f in doc["figures"].as_array().expect("figures") {
        assert!(
            f["key"]["id"].is_string() && f["key"]["variant"].is_string(),
            "{f}"
        );
    }

    let o = run(
        Bin::Msgbench,
        ["rtos", "IRQ-P-LAT", "IRQ-P-DLT", "--format", "csv"],
    );
    o.assert_ok();
    let lines: Vec<&str> = o.stdout.lines().filter(|l| !l.is_empty()).collect();
    assert!(
        lines[0].starts_with("Test,Variant,Result,Samples,Avg"),
        "{o}"
    );
    for l in &lines {
        assert!(l.matches(',').count() >= 11, "not a CSV record: {l:?}\n{o}");
    }
    assert!(!o.stdout.contains("Summary"), "{o}");
    assert!(!o.stdout.contains("msgbench rtos:"), "{o}");
}

#[test]
fn rtos_markdown_and_no_reference() {
    let o = run(
        Bin::Msgbench,
        ["rtos", "IRQ-P-LAT", "IRQ-P-DLT", "--format", "markdown"],
    );
    o.assert_ok();
    assert!(o.stdout.contains("|---"), "no markdown table: {o}");
    assert!(o.stdout.contains("**Interrupts"), "no markdown title: {o}");
    assert!(o.stdout.contains("Summary: "), "{o}");
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
            .ends_with("msgbench: error: rtos: interrupted; the results so far are above"),
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
