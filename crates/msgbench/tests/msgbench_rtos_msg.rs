//! `msgbench rtos MSG`: message passing between real processes (the
//! suite's client threads and its `rtos-peer` server process). MSG-B-PRI
//! PASSes with priority inheritance through messages and the same
//! scenario FAILs with `--msg-inherit off`, both through the command, each
//! with the order of events that decides it; `msgbench rtos MSG` runs the
//! three tests with their timing rows and the QNX 8.0 reference, and
//! checks every call's priority (MSG-P-PRI FAILs that check with
//! `--msg-inherit off`); nothing
//! is left in the namespace. Behaviour only: nothing here asserts a speed.
//!
//! Needs root (SCHED_FIFO): skipped with the reason by hand without it, a
//! failure under `CI`.

mod common;

use serde_json::Value;

use common::*;

/// Runs `msgbench rtos ARGS --quick --json F` with the test's namespace;
/// the output and the envelope.
fn rtos(dir: &TestDir, args: &[&str]) -> (Output, Value) {
    let json = dir.file("out.json");
    let mut all = vec!["rtos"];
    all.extend_from_slice(args);
    let json_arg = json.display().to_string();
    all.extend_from_slice(&["--quick", "--json", &json_arg]);
    let mut cmd = Bin::Msgbench.cmd(all);
    cmd.env("MSGBENCH_NS", dir.ns());
    let o = run_cmd("msgbench rtos", cmd);
    let doc = read_json(&json);
    dir.assert_ns_clean();
    (o, doc)
}

/// The rows of an envelope.
fn rows(doc: &Value) -> &Vec<Value> {
    assert_eq!(doc["suite"], "rtos", "{doc}");
    doc["rows"].as_array().expect("rows")
}

/// MSG-B-PRI's one row: its verdict and the events observed.
fn b_pri(doc: &Value) -> (bool, Vec<String>) {
    let r: Vec<&Value> = rows(doc)
        .iter()
        .filter(|r| r["id"] == "MSG-B-PRI")
        .collect();
    assert_eq!(r.len(), 1, "{doc}");
    verdict(r[0])
}

/// A behaviour row's verdict and what it observed, in order.
fn verdict(row: &Value) -> (bool, Vec<String>) {
    let o = &row["outcome"];
    assert_eq!(o["kind"], "behaviour", "no verdict: {o}");
    let observed = o["observed"]
        .as_array()
        .expect("observed")
        .iter()
        .map(|e| e.as_str().expect("an event").to_string())
        .collect();
    (o["pass"].as_bool().expect("pass"), observed)
}

/// Where the event starting with `what` is in `seen`.
fn at(seen: &[String], what: &str) -> usize {
    seen.iter()
        .position(|e| e.starts_with(what))
        .unwrap_or_else(|| panic!("no {what:?} in {seen:?}"))
}

fn root_or_skip() -> bool {
    if is_root() {
        return true;
    }
    skip("not root: the MSG tests need SCHED_FIFO (CAP_SYS_NICE)");
    false
}

#[test]
fn msg_b_pri_passes_with_inheritance_and_fails_without() {
    if !root_or_skip() {
        return;
    }
    let _one = serial();
    let dir = TestDir::new("rtos-msg-pri");

    let (o, doc) = rtos(&dir, &["MSG-B-PRI"]);
    o.assert_ok();
    let (pass, seen) = b_pri(&doc);
    assert!(pass, "inheritance on must PASS: {seen:?}\n{o}");
    assert!(
        at(&seen, "H replied") < at(&seen, "M completes"),
        "{seen:?}"
    );
    assert!(
        seen.iter().any(|e| e == "H replied (server at FIFO 30)"),
        "{seen:?}"
    );
    assert_eq!(doc["settings"]["msg_inherit"], true, "{doc}");
    assert!(o.stdout.contains("MSG-B-PRI   inheritance on"), "{o}");

    let (o, doc) = rtos(&dir, &["MSG-B-PRI", "--msg-inherit", "off"]);
    assert_eq!(o.code(), 1, "a FAIL exits 1: {o}");
    let (pass, seen) = b_pri(&doc);
    assert!(!pass, "inheritance off must FAIL: {seen:?}\n{o}");
    assert!(
        at(&seen, "M completes") < at(&seen, "H replied"),
        "{seen:?}"
    );
    assert!(
        seen.iter()
            .any(|e| e == "L replied (server worked at FIFO 5, up to 5)"),
        "{seen:?}"
    );
    assert_eq!(doc["settings"]["msg_inherit"], false, "{doc}");
    assert!(o.stdout.contains("observed: L calls, H calls"), "{o}");
}

#[test]
fn msg_group_runs_the_three_tests() {
    if !root_or_skip() {
        return;
    }
    let _one = serial();
    let dir = TestDir::new("rtos-msg");
    let (o, doc) = rtos(&dir, &["msg"]);
    o.assert_ok();
    let got: Vec<(String, String, String)> = rows(&doc)
        .iter()
        .map(|r| {
            let s = |v: &Value| v.as_str().unwrap_or("").to_string();
            (s(&r["id"]), s(&r["variant"]), s(&r["outcome"]["kind"]))
        })
        .collect();
    let want = |id: &str, v: &str, k: &str| (id.to_string(), v.to_string(), k.to_string());
    let mut expected = Vec::new();
    for id in ["MSG-P-SRR", "MSG-P-PRI"] {
        expected.push(want(id, "one CPU", "timing"));
        expected.push(want(id, "one CPU, every call checked", "behaviour"));
        for v in ["two CPUs", "two CPUs, every call checked"] {
            let kind = match (cpu_count() >= 2, v.ends_with("checked")) {
                (false, _) => "skipped",
                (true, false) => "timing",
                (true, true) => "behaviour",
            };
            expected.push(want(id, v, kind));
        }
    }
    expected.push(want("MSG-B-PRI", "inheritance on", "behaviour"));
    assert_eq!(got, expected, "{o}");
    for r in rows(&doc)
        .iter()
        .filter(|r| r["outcome"]["kind"] == "timing")
    {
        let t = &r["outcome"];
        assert_eq!(t["unit"], "us", "{r}");
        assert_eq!(t["count"], 2000, "--quick: a tenth of 20000: {r}");
        assert_eq!(t["samples"].as_array().map(Vec::len), Some(2000), "{r}");
        assert!(num(t, "min") > 0.0 && num(t, "min") <= num(t, "p50"), "{r}");
        assert!(num(t, "p50") <= num(t, "max"), "{r}");
        assert_eq!(r["reference"]["avg"], 6.05, "{r}");
        assert!(
            r["reference"]["text"]
                .as_str()
                .is_some_and(|s| s.contains("QNX 8.0")),
            "{r}"
        );
    }
    let pri_note = rows(&doc)
        .iter()
        .find(|r| r["id"] == "MSG-P-PRI")
        .and_then(|r| r["note"].as_str())
        .unwrap_or("");
    assert!(
        pri_note.contains("raised to FIFO 50 at the first"),
        "{pri_note}"
    );
    assert!(o.stdout.contains("Message passing"), "{o}");
    assert!(o.stdout.contains("165,300 msgs/s"), "{o}");
    // Every call checked: the caller's 50 with inheritance, the server's
    // own 40 without it asked.
    for (id, fifo) in [("MSG-P-SRR", 40), ("MSG-P-PRI", 50)] {
        let (pass, seen) = checked(&doc, id, "one CPU, every call checked");
        assert!(pass, "{id}: {seen:?}\n{o}");
        assert_eq!(
            seen[0],
            format!("2000 of 2000 calls (100.0%) served at FIFO {fifo}"),
            "{id}"
        );
    }
}

/// The verdict and observations of `id`'s variant `variant`.
fn checked(doc: &Value, id: &str, variant: &str) -> (bool, Vec<String>) {
    let r = rows(doc)
        .iter()
        .find(|r| r["id"] == id && r["variant"] == variant)
        .unwrap_or_else(|| panic!("no {id} {variant}: {doc}"));
    verdict(r)
}

#[test]
fn msg_p_pri_checks_every_call_and_fails_without_inheritance() {
    if !root_or_skip() {
        return;
    }
    let _one = serial();
    let dir = TestDir::new("rtos-msg-check");
    let (o, doc) = rtos(&dir, &["MSG-P-PRI", "--msg-inherit", "off"]);
    assert_eq!(o.code(), 1, "a FAIL exits 1: {o}");
    let (pass, seen) = checked(&doc, "MSG-P-PRI", "one CPU, every call checked");
    assert!(!pass, "served below its caller must FAIL: {seen:?}\n{o}");
    assert_eq!(
        seen,
        [
            "0 of 2000 calls (0.0%) served at FIFO 50",
            "2000 served at FIFO 40",
            "the first call not at FIFO 50: call 0, at FIFO 40",
        ],
        "{o}"
    );
    let t = rows(&doc)
        .iter()
        .find(|r| r["id"] == "MSG-P-PRI" && r["variant"] == "one CPU")
        .expect("the timed row");
    assert_eq!(t["outcome"]["kind"], "timing", "{t}");
}

#[test]
fn msg_transport_carries_the_tests_and_a_refused_inheritance_is_named() {
    if !root_or_skip() {
        return;
    }
    let _one = serial();
    let dir = TestDir::new("rtos-msg-transport");
    let (o, doc) = rtos(
        &dir,
        &["MSG-P-SRR", "MSG-P-PRI", "--msg-transport", "sysv-msg"],
    );
    assert_eq!(o.code(), 1, "an error row exits 1: {o}");
    assert_eq!(doc["settings"]["msg_transport"], "sysv-msg", "{doc}");
    let srr = rows(&doc)
        .iter()
        .find(|r| r["id"] == "MSG-P-SRR" && r["variant"] == "one CPU")
        .expect("MSG-P-SRR");
    assert_eq!(srr["outcome"]["kind"], "timing", "{srr}");
    assert!(
        srr["note"]
            .as_str()
            .is_some_and(|n| n.starts_with("msgpass sysv-msg:")),
        "{srr}"
    );
    let (pass, _) = checked(&doc, "MSG-P-SRR", "one CPU, every call checked");
    assert!(pass, "{o}");
    // Inheritance is not carried on sysv-msg (yet): MSG-P-PRI says why, in
    // the server's own words, rather than timing calls without it.
    let pri: Vec<&Value> = rows(&doc)
        .iter()
        .filter(|r| r["id"] == "MSG-P-PRI")
        .collect();
    assert_eq!(pri.len(), 1, "{doc}");
    assert_eq!(pri[0]["outcome"]["kind"], "error", "{}", pri[0]);
    let message = pri[0]["outcome"]["message"].as_str().unwrap_or("");
    assert!(message.contains("not on transport sysv-msg"), "{message}");
    // A server spinning at a real-time priority on its callers' CPU never
    // lets them run: refused before anything starts, in one line.
    let mut cmd = Bin::Msgbench.cmd(["rtos", "MSG-P-SRR", "--msg-transport", "uds,shm-spin"]);
    cmd.env("MSGBENCH_NS", dir.ns());
    let o = run_cmd("msgbench rtos", cmd);
    let line = o.assert_one_line_error(1);
    assert!(line.contains("--msg-transport shm-spin"), "{line}");
    dir.assert_ns_clean();
}

#[test]
fn several_transports_run_in_turn_and_compare_in_one_table() {
    if !root_or_skip() {
        return;
    }
    let _one = serial();
    let dir = TestDir::new("rtos-msg-transports");
    // On pipe, eventfd (whose claim is a call) and shm-block (a word of
    // its slot), as on uds, in one run: every call served at the caller's
    // priority, and a busy server raised when a higher caller sends; the
    // variants named by transport, and one table comparing them.
    let all = ["pipe", "eventfd", "shm-block"];
    let (o, doc) = rtos(
        &dir,
        &[
            "MSG-P-SRR",
            "MSG-P-PRI",
            "MSG-B-PRI",
            "--msg-transport",
            "pipe,eventfd,shm-block",
        ],
    );
    o.assert_ok();
    let inversions: Vec<&Value> = rows(&doc)
        .iter()
        .filter(|r| r["id"] == "MSG-B-PRI")
        .collect();
    assert_eq!(
        inversions.len(),
        all.len(),
        "one MSG-B-PRI per transport: {doc}"
    );
    let table = o
        .stdout
        .split_once("Priority inheritance per transport")
        .map(|(_, t)| t)
        .unwrap_or_else(|| panic!("no table per transport: {o}"));
    for (tr, row) in all.iter().zip(&inversions) {
        let variant = format!("{tr}, one CPU, every call checked");
        let (pass, seen) = checked(&doc, "MSG-P-PRI", &variant);
        assert!(pass, "{tr}: {seen:?}\n{o}");
        assert!(
            row["variant"].as_str().is_some_and(|v| v.starts_with(tr)),
            "{row}"
        );
        let (pass, seen) = verdict(row);
        assert!(pass, "{tr}: {seen:?}\n{o}");
        let line = table
            .lines()
            .find(|l| l.starts_with(&format!("{tr} ")))
            .unwrap_or_else(|| panic!("no {tr} row: {table}"));
        assert!(line.contains("PASS / PASS"), "{line}");
        assert!(line.trim_end().ends_with("6.05"), "{line}");
    }
    dir.assert_ns_clean();
}
