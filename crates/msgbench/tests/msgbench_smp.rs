//! `msgbench smp` through the command: the rows and verdicts of short
//! memory runs, the search landing on a known capacity (an emulated line
//! rate), option errors, the veth path against the real kernel (root), and
//! Ctrl-C leaving nothing behind. Behaviour only: nothing here asserts a
//! speed of this machine.

mod common;

use std::time::Duration;

use common::*;
use serde_json::Value;

/// A short memory run's options: a small table and short trials.
const SHORT: [&str; 6] = [
    "--quick",
    "--routes",
    "2000",
    "--trial",
    "0.05",
    "--updates",
];

fn smp(extra: &[&str], dir: &TestDir) -> (Output, Value) {
    let json = dir.file("smp.json");
    let mut args = vec!["smp"];
    args.extend_from_slice(&SHORT);
    args.push("1000");
    args.extend_from_slice(extra);
    args.extend(["--json", json.to_str().unwrap()]);
    let out = run(Bin::Msgbench, &args);
    out.assert_ok();
    (out, read_json(&json))
}

fn rows(doc: &Value) -> &Vec<Value> {
    doc["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows: {doc}"))
}

/// A measured row's search: the rate found is a trial that passed, every
/// trial above it that was run lost frames or the rate is capped (said in
/// the note), and the locks are reported per worker.
fn check_row(r: &Value) {
    assert!(r["error"].is_null(), "{r}");
    let pps = num(r, "pps_per_port");
    assert!(pps > 0.0, "{r}");
    let trials = r["search"]["trials"].as_array().expect("trials");
    assert!(!trials.is_empty(), "{r}");
    let passed = |t: &Value| num(t, "lost") == 0.0;
    assert!(
        trials.iter().any(|t| num(t, "rate") == pps && passed(t)),
        "the rate found is a passing trial: {r}"
    );
    let capped = r["search"]["note"]
        .as_str()
        .is_some_and(|n| n.contains("capped"));
    assert!(
        capped || trials.iter().any(|t| num(t, "rate") > pps && !passed(t)),
        "a faster trial lost frames: {r}"
    );
    let n = r["workers"].as_u64().expect("workers") as usize;
    assert_eq!(r["locks"].as_array().expect("locks").len(), n, "{r}");
    assert!(
        r["locks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|l| num(l, "acquisitions") > 0.0),
        "every worker took its lock: {r}"
    );
}

#[test]
fn a_memory_sweep_gives_every_row_the_studys_column_and_judges_the_lessons() {
    let dir = TestDir::new("smp-memory");
    let (out, doc) = smp(&["--sizes", "64,1518", "--table", "mutex,per-cpu"], &dir);
    let cpus = cpu_count();
    let rows = rows(&doc);
    assert_eq!(rows.len(), 2 * 2 * cpus, "{doc}");
    for r in rows {
        check_row(r);
        assert_eq!(r["ports"], "memory");
        assert_eq!(
            r["reference"].is_null(),
            r["workers"] != 1 && r["workers"] != 2,
            "the study has 1 and 2 CPUs: {r}"
        );
        if r["workers"] == 1 {
            assert_eq!(num(r, "scaling"), 1.0, "{r}");
        }
    }
    let notes = doc["verdicts"].as_array().expect("verdicts");
    for k in 1..=3 {
        assert!(
            notes
                .iter()
                .any(|n| n.as_str().unwrap().starts_with(&format!("Lesson {k} "))),
            "{notes:?}"
        );
    }
    let figures = doc["figures"].as_array().expect("figures");
    assert!(
        figures.iter().any(|f| f["metric"] == "zero_loss_pps"
            && f["key"]["forwarder"] == "per-cpu"
            && f["key"]["size"] == "64"),
        "{figures:?}"
    );
    for needle in [
        "Zero-loss pps",
        "QNX study",
        "Lesson 1",
        "Lesson 2",
        "Lesson 3",
        "167k (1 CPU)",
    ] {
        assert!(out.stdout.contains(needle), "{needle}: {out}");
    }
}

#[test]
fn the_search_finds_an_emulated_line_rate_and_judges_lesson_three() {
    // 100 Mbit/s ports carry 148,809 pps at 64 B and 8,127 at 1518 B,
    // far below what any machine forwards: the search must land just
    // under the line rate (within its 5% resolution), at every size.
    let dir = TestDir::new("smp-line");
    let (out, doc) = smp(
        &[
            "--sizes",
            "64,1518",
            "--table",
            "per-cpu",
            "--line-rate",
            "100m",
        ],
        &dir,
    );
    for r in rows(&doc) {
        check_row(r);
        let line = num(r, "line_pps");
        let pps = num(r, "pps_per_port");
        assert!(
            pps <= line && pps >= 0.9 * line,
            "{pps} against {line}: {r}"
        );
    }
    let lesson3 = doc["verdicts"][2].as_str().unwrap();
    assert!(!lesson3.contains("not judged"), "{lesson3}");
    assert!(lesson3.contains("reaches the line rate"), "{lesson3}");
    assert!(out.stdout.contains("(line)"), "{out}");
}

#[test]
fn bad_options_fail_in_one_line() {
    for (args, code, needle) in [
        // Values clap's value parsers refuse: usage errors, exit 2.
        (vec!["smp", "--table", "spinlock"], 2, "--table"),
        (vec!["smp", "--sizes", "9000"], 2, "--sizes"),
        (vec!["smp", "--routes", "0"], 2, "--routes"),
        (vec!["smp", "--line-rate", "fast"], 2, "--line-rate"),
        (vec!["smp", "--trial", "-1"], 2, "--trial"),
        // More workers than CPUs: the plan's check, exit 1.
        (vec!["smp", "--workers", "64"], 1, "--workers"),
    ] {
        let out = run(Bin::Msgbench, &args);
        let line = out.assert_one_line_error(code);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
    // A value clap itself refuses: its usage error, exit 2.
    let out = run(Bin::Msgbench, ["smp", "--ports", "usb"]);
    assert_eq!(out.code(), 2, "{out}");
    assert!(
        out.stderr.lines().next().unwrap().contains("--ports"),
        "{out}"
    );
}

#[test]
fn ctrl_c_stops_a_memory_sweep_with_what_was_measured() {
    let dir = TestDir::new("smp-int");
    let json = dir.file("smp.json");
    let mut p = Proc::start(
        Bin::Msgbench,
        [
            "smp",
            "--routes",
            "2000",
            "--trial",
            "0.2",
            "--sizes",
            "all",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    std::thread::sleep(Duration::from_secs(3));
    p.signal(libc::SIGINT);
    // A liveness bound: the stop is looked at between cells, and a cell
    // (trials of 0.2 s, searched) took over 10 s on a loaded machine.
    let out = p.wait_within(Duration::from_secs(30), "exit after SIGINT");
    assert_eq!(out.code(), 1, "{out}");
    assert!(out.stderr.contains("interrupted"), "{out}");
    let doc = read_json(&json);
    assert_eq!(doc["outcome"]["interrupted"], true, "{doc}");
}

/// Why this machine cannot run the veth path, if it cannot.
fn veth_unavailable() -> Option<String> {
    if !is_root() {
        return Some("needs root (network namespaces and packet sockets)".into());
    }
    match std::process::Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("needs the `ip` program (iproute2)".into()),
    }
}

/// Namespaces of ours whose name carries `pid`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip netns list");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("msgbench-smp-{pid}-")))
        .map(String::from)
        .collect()
}

#[test]
fn the_veth_path_forwards_real_frames_next_to_the_kernel_and_cleans_up() {
    let _serial = serial();
    if let Some(why) = veth_unavailable() {
        return skip(&why);
    }
    let dir = TestDir::new("smp-veth");
    let json = dir.file("smp.json");
    let mut p = Proc::start(
        Bin::Msgbench,
        [
            "smp",
            "--ports",
            "veth",
            "--quick",
            "--routes",
            "2000",
            "--sizes",
            "64",
            "--table",
            "per-cpu",
            "--workers",
            "1",
            "--trial",
            "0.05",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let pid = p.pid();
    let out = p.wait_within(Duration::from_secs(120), "a quick veth run");
    out.assert_ok();
    let doc = read_json(&json);
    let rows = rows(&doc);
    assert_eq!(rows.len(), 2, "kernel and per-cpu x1: {doc}");
    assert_eq!(rows[0]["forwarder"], "kernel");
    assert!(rows[0]["workers"].is_null());
    assert!(num(&rows[0], "pps") > 0.0, "{doc}");
    check_row(&rows[1]);
    assert_eq!(rows[1]["ports"], "veth");
    assert!(
        namespaces_of(pid).is_empty(),
        "left behind: {:?}",
        namespaces_of(pid)
    );
}

#[test]
fn ctrl_c_in_a_veth_run_removes_the_namespaces() {
    let _serial = serial();
    if let Some(why) = veth_unavailable() {
        return skip(&why);
    }
    let mut p = Proc::start(
        Bin::Msgbench,
        ["smp", "--ports", "veth", "--routes", "2000", "--trial", "1"],
    );
    let pid = p.pid();
    p.wait_until("its namespaces exist", |_| namespaces_of(pid).len() == 3);
    std::thread::sleep(Duration::from_millis(1500));
    p.signal(libc::SIGINT);
    let out = p.wait_within(Duration::from_secs(15), "exit after SIGINT");
    assert_eq!(out.code(), 1, "{out}");
    assert!(
        namespaces_of(pid).is_empty(),
        "left behind: {:?}",
        namespaces_of(pid)
    );
}
