//! `msgbench floor`: the table and JSON of a quick run, option errors, and
//! the floor embedded by `msgbench ipc --vs-floor`. Behaviour only: nothing
//! here asserts a speed. Every program runs under the common watchdog.

mod common;

use common::*;

/// The rows of a kind in a floor document.
fn rows_of<'a>(doc: &'a serde_json::Value, kind: &str) -> Vec<&'a serde_json::Value> {
    doc["rows"]
        .as_array()
        .unwrap_or_else(|| panic!("no rows: {doc}"))
        .iter()
        .filter(|r| r["kind"] == kind)
        .collect()
}

/// Checks a row's figures are usable: median and every run positive and
/// finite, spread not negative.
fn check_row(r: &serde_json::Value) {
    assert!(num(r, "ns") > 0.0, "{r}");
    assert!(num(r, "spread") >= 0.0, "{r}");
    let runs = r["runs_ns"].as_array().unwrap_or_else(|| panic!("{r}"));
    assert!(!runs.is_empty(), "{r}");
    assert!(
        runs.iter().all(|v| v.as_f64().is_some_and(|x| x > 0.0)),
        "{r}"
    );
}

#[test]
fn floor_quick_table_and_json() {
    let dir = TestDir::new("floor-quick");
    let json = dir.file("floor.json");
    let out = run(
        Bin::Msgbench,
        ["floor", "--quick", "--json", json.to_str().unwrap()],
    );
    out.assert_ok();
    let doc = read_json(&json);
    assert!(doc.get("environment").is_some() && doc.get("clock").is_some());
    let cpus = cpu_count();
    for kind in ["cacheline_threads", "cacheline_processes", "futex"] {
        let rows = rows_of(&doc, kind);
        // One same-CPU pair plus every ordered pair of distinct CPUs.
        assert_eq!(rows.len(), 1 + cpus * (cpus - 1), "{kind}: {doc}");
        assert_eq!(rows[0]["same_cpu"], true, "{kind}");
        for r in &rows {
            check_row(r);
            assert_eq!(r["unit"], "round_trip");
        }
        if cpus >= 2 {
            assert!(rows.iter().any(|r| r["same_cpu"] == false), "{kind}");
        }
    }
    let mut costs = vec!["clock_monotonic", "syscall"];
    if cfg!(target_arch = "x86_64") {
        costs.push("rdtsc");
    }
    for kind in costs {
        let rows = rows_of(&doc, kind);
        assert_eq!(rows.len(), 1, "{kind}: {doc}");
        check_row(rows[0]);
        assert_eq!(rows[0]["unit"], "call");
    }
    for what in [
        "cache line, threads",
        "cache line, processes",
        "futex",
        "rdtsc",
    ] {
        if what != "rdtsc" || cfg!(target_arch = "x86_64") {
            assert!(out.stdout.contains(what), "{what}: {out}");
        }
    }
    assert!(out.stdout.contains("Spread"), "{out}");
}

#[test]
fn floor_on_one_cpu_has_only_same_cpu_rows() {
    let out = run(Bin::Msgbench, ["floor", "--quick", "--cpus", "0"]);
    out.assert_ok();
    assert!(out.stdout.contains("0 -> 0"), "{out}");
    assert!(!out.stdout.contains("0 -> 1"), "{out}");
}

#[test]
fn bad_cpus_are_one_line_naming_the_option() {
    for bad in ["99", "x", "1-0", ""] {
        let out = run(Bin::Msgbench, ["floor", "--cpus", bad]);
        let line = out.assert_one_line_error(2);
        assert!(line.contains("--cpus"), "{bad}: {line}");
    }
}

#[test]
fn unknown_option_is_a_usage_error() {
    let out = run(Bin::Msgbench, ["floor", "--bogus"]);
    assert_eq!(out.code(), 2, "{out}");
}

#[test]
fn ipc_embeds_the_floor_and_shows_the_column() {
    let dir = TestDir::new("floor-ipc");
    let json = dir.file("ipc.json");
    let mut args: Vec<String> = [
        "ipc",
        "--quick",
        "-t",
        "uds",
        "--sizes",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--vs-floor",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(dir.ns_args());
    let out = run(Bin::Msgbench, &args);
    out.assert_ok();
    assert!(out.stdout.contains("x floor"), "{out}");
    let doc = read_json(&json);
    let floor = &doc["floor"];
    assert!(floor.is_object(), "no floor: {doc}");
    let futex = rows_of(floor, "futex");
    assert!(!futex.is_empty(), "{floor}");
    futex.iter().for_each(|r| check_row(r));
    assert_eq!(doc["suite"], "ipc", "{doc}");
    let ratios = doc["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .filter(|f| f["metric"] == "vs_floor" && f["unit"] == "ratio")
        .count();
    assert!(ratios > 0, "no vs_floor figure: {doc}");
    // Every measured uds row shows a ratio ("...x") in the last column.
    let uds: Vec<&str> = out.stdout.lines().filter(|l| is_uds_row(l)).collect();
    assert!(!uds.is_empty(), "{out}");
    for l in uds {
        assert!(l.trim_end().ends_with('x'), "{l}");
    }
}

/// Whether a table line is a measured `uds` row: `[mark] uds <wait> ...`.
fn is_uds_row(line: &str) -> bool {
    let t: Vec<&str> = line.split_whitespace().collect();
    let wait = |w: Option<&&str>| w.is_some_and(|w| ["poll", "hybrid", "block"].contains(w));
    (t.first() == Some(&"uds") && wait(t.get(1))) || (t.get(1) == Some(&"uds") && wait(t.get(2)))
}
