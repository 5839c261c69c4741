//! `msgbench ipc`: rows for each transport, size and placement, n/a for a
//! size beyond the transports' maximum, the results envelope, the formats
//! (table, markdown, csv, json) and the ipc-bench block, option errors,
//! the scale axes (idle clients beside the measured one, active clients,
//! counts the server cannot hold refused), and the namespace left clean
//! and no helper process left (also after SIGINT).
//! Behaviour only: nothing here asserts a speed.

mod common;

use std::time::Duration;

use common::*;

/// `msgbench ipc <args> --ns <dir>` as arguments.
fn ipc_args(dir: &TestDir, args: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = std::iter::once("ipc")
        .chain(args.iter().copied())
        .map(str::to_string)
        .collect();
    a.extend(dir.ns_args());
    a
}

/// The placements this machine can run (cross needs two CPUs).
fn placements() -> Vec<&'static str> {
    if cpu_count() >= 2 {
        vec!["same", "cross"]
    } else {
        vec!["same"]
    }
}

/// The lines of the table under the title starting with `title`, up to
/// the next blank line (header and rule included).
fn group<'a>(stdout: &'a str, title: &str) -> Vec<&'a str> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with(title));
    assert!(lines.next().is_some(), "no group {title:?}: {stdout}");
    lines.take_while(|l| !l.trim().is_empty()).collect()
}

#[test]
fn ipc_quick_rows_na_and_json() {
    let dir = TestDir::new("ipc");
    let json = dir.file("ipc.json");
    let json_s = json.display().to_string();
    let o = run(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &[
                "--quick",
                "-t",
                "shm-block,uds",
                "--sizes",
                "1,70000",
                "--json",
                &json_s,
            ],
        ),
    );
    o.assert_ok();
    check_quick_tables(&o.stdout);
    check_quick_envelope(&read_json(&json));
    dir.assert_ns_clean();
}

/// The tables of the quick shm-block,uds run at 1 and 70000 bytes: both
/// transports measured at 1 B, n/a at 70000 B, in every placement.
fn check_quick_tables(stdout: &str) {
    for p in placements() {
        let g = group(stdout, &format!("1 B, {p} CPU"));
        for col in [
            "Transport",
            "Wait",
            "Round trips",
            "Average",
            "Minimum",
            "p50",
            "p99",
            "Maximum",
            "Msg rate",
            "CPU all",
        ] {
            assert!(g[0].contains(col), "header lacks {col}: {stdout}");
        }
        for t in ["shm-block", "uds"] {
            let row = g
                .iter()
                .find(|l| l.split_whitespace().any(|w| w == t))
                .unwrap_or_else(|| panic!("no {t} row at 1 B {p}: {stdout}"));
            assert!(!row.contains("FAILED"), "{row}");
            assert!(row.contains("block"), "{row}");
        }
        let g = group(stdout, &format!("70000 B, {p} CPU"));
        for t in ["shm-block", "uds"] {
            let want = format!("n/a: {t} max message 65536 bytes");
            assert!(
                g.iter().any(|l| l.contains(&want)),
                "no {want:?} at {p}: {stdout}"
            );
        }
    }
    // One-way throughput is measured (the JSON) but shown only with
    // --throughput.
    assert!(!stdout.contains("One-way msg/s"), "{stdout}");
    assert!(!stdout.contains("Window: "), "legend: {stdout}");
}

/// The envelope of that run: header, every row (n/a or measured), the
/// outcome and one p50 figure per measured row.
fn check_quick_envelope(v: &serde_json::Value) {
    assert_eq!(v["schema"].as_u64(), Some(1), "{v}");
    assert_eq!(v["suite"], "ipc", "{v}");
    assert!(v["environment"]["kernel"].is_string(), "{v}");
    assert!(v["clock"]["name"].is_string(), "{v}");
    assert!(v["floor"].is_null(), "no floor without --vs-floor: {v}");
    assert_eq!(v["settings"]["sizes"], serde_json::json!([1, 70000]), "{v}");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2 * 2 * placements().len(), "{v}");
    for r in rows {
        let size = r["size"].as_u64().expect("size");
        let status = r["status"].as_str().expect("status");
        if size == 70000 {
            assert_eq!(status, "not_applicable", "{r}");
            assert_eq!(r["max_msg"].as_u64(), Some(65536), "{r}");
            assert!(r["latency"].is_null(), "{r}");
            continue;
        }
        assert_eq!(status, "ok", "{r}");
        check_measured_latency(r);
        check_measured_throughput(r);
    }
    let s = &v["outcome"];
    assert_eq!(s["failed"].as_u64(), Some(0), "{s}");
    assert_eq!(s["rows"].as_u64(), Some(rows.len() as u64), "{s}");
    assert_eq!(
        s["skipped"].as_u64(),
        Some(2 * placements().len() as u64),
        "{s}"
    );
    assert_eq!(s["interrupted"], false, "{s}");
    let figures = v["figures"].as_array().expect("figures");
    let p50s = figures.iter().filter(|f| f["metric"] == "p50_ns").count();
    assert_eq!(
        p50s,
        2 * placements().len(),
        "one p50 per measured row: {v}"
    );
}

/// A measured row's latency run: its samples, its histogram (holding every
/// sample, also as the row's) and its CPU per message.
fn check_measured_latency(r: &serde_json::Value) {
    let l = &r["latency"];
    let n = l["samples"].as_u64().expect("samples");
    assert!(n > 0, "{r}");
    check_latency(&l["summary"], n);
    let hist: u64 = l["histogram"]
        .as_array()
        .expect("histogram")
        .iter()
        .map(|b| b[1].as_u64().expect("bucket count"))
        .sum();
    assert_eq!(hist, n, "histogram holds every sample: {r}");
    assert_eq!(r["histogram"], l["histogram"], "the row's histogram: {r}");
    let cpu = &l["cpu"];
    let (c, s, o, t) = (
        num(cpu, "client_ns"),
        num(cpu, "server_ns"),
        num(cpu, "other_ns"),
        num(cpu, "total_ns"),
    );
    assert!(
        c > 0.0 && s > 0.0 && o >= 0.0,
        "both sides' CPU per message: {cpu}"
    );
    // Every thread of both sides: the total is the two threads and the rest.
    assert!((c + s + o - t).abs() <= 1e-6 * t.max(1.0), "{cpu}");
    assert_eq!(cpu["method"], "process-clock", "{cpu}");
}

/// A measured row's throughput run: its window, messages, rate and the
/// server's CPU.
fn check_measured_throughput(r: &serde_json::Value) {
    let tp = &r["throughput"];
    // The default window where one-way messages exist, else 1.
    let want_w = if r["transport"] == "uds" { 16 } else { 1 };
    assert_eq!(tp["window"].as_u64(), Some(want_w), "{tp}");
    assert!(tp["messages"].as_u64().unwrap_or(0) > 0, "{tp}");
    assert!(num(tp, "msgs_per_s") > 0.0, "{tp}");
    assert!(num(&tp["cpu"], "server_ns") > 0.0, "{tp}");
    assert_eq!(r["client_cpu"].is_u64(), r["server_cpu"].is_u64(), "{r}");
}

#[test]
fn ipcbench_block_prints_the_old_block_under_the_table() {
    let dir = TestDir::new("ipcfmt");
    let o = run(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &[
                "--quick",
                "-t",
                "uds",
                "--sizes",
                "0,1",
                "--placement",
                "same",
                "--ipcbench-block",
            ],
        ),
    );
    o.assert_ok();
    let lines: Vec<&str> = o.stdout.lines().collect();
    let starts: Vec<usize> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| **l == "============ RESULTS ================")
        .map(|(i, _)| i)
        .collect();
    assert_eq!(starts.len(), 2, "one block per size: {}", o.stdout);
    assert!(
        o.stdout.contains("0 B, same CPU"),
        "the tables too: {}",
        o.stdout
    );
    for (&i, size) in starts.iter().zip(["0", "1"]) {
        assert!(
            lines[i - 1].starts_with("uds: ") && lines[i - 1].contains(&format!("{size} B")),
            "title line: {}",
            o.stdout
        );
        let block = &lines[i + 1..i + 10];
        let labels = [
            ("Message size:       ", ""),
            ("Message count:      ", ""),
            ("Total duration:     ", "ms"),
            ("Average duration:   ", "us"),
            ("Minimum duration:   ", "us"),
            ("Maximum duration:   ", "us"),
            ("Standard deviation: ", "us"),
            ("Message rate:       ", "msg/s"),
        ];
        for (line, (label, unit)) in block.iter().zip(labels) {
            let rest = line
                .strip_prefix(label)
                .unwrap_or_else(|| panic!("{line:?} lacks {label:?}: {}", o.stdout));
            let mut parts = rest.split_whitespace();
            let value = parts.next().unwrap_or_default();
            value
                .parse::<f64>()
                .unwrap_or_else(|_| panic!("value in {line:?}"));
            assert_eq!(parts.next().unwrap_or(""), unit, "{line:?}");
            if !unit.is_empty() {
                let decimals = value.split_once('.').map_or(0, |(_, d)| d.len());
                assert_eq!(decimals, if unit == "msg/s" { 0 } else { 3 }, "{line:?}");
            }
        }
        assert_eq!(block[0], format!("Message size:       {size}"));
        assert_eq!(block[8], "=====================================");
    }
    dir.assert_ns_clean();
}

#[test]
fn ipc_wrong_replies_fail_their_row_and_the_run_goes_on() {
    let dir = TestDir::new("ipcfault");
    for (fault, want) in [
        ("corrupt", "(corrupted payload)"),
        ("stale", "the reply carries sequence number 99:"),
        ("checksum", "checksum reply"),
    ] {
        let json = dir.file(&format!("{fault}.json"));
        let json_s = json.display().to_string();
        let o = run(
            Bin::Msgbench,
            ipc_args(
                &dir,
                &[
                    "--quick",
                    "-t",
                    "uds,shm-block",
                    "--sizes",
                    "64",
                    "--placement",
                    "same",
                    "--inject-fault",
                    fault,
                    "--json",
                    &json_s,
                ],
            ),
        );
        let line = o.assert_one_line_error(1);
        assert!(
            line.contains("ipc: 2 of 2 row(s) failed"),
            "{fault}: {line}"
        );
        let g = group(&o.stdout, "64 B, same CPU");
        for t in ["uds", "shm-block"] {
            assert!(
                g.iter().any(|l| l.contains(&format!("{t}  "))
                    && l.contains("FAILED: ")
                    && l.contains(want)),
                "{fault}: no FAILED {t} row with {want:?}: {}",
                o.stdout
            );
        }
        let v = read_json(&json);
        for r in v["rows"].as_array().expect("rows") {
            assert_eq!(r["status"].as_str(), Some("failed"), "{r}");
            assert!(r["reason"].as_str().unwrap_or("").contains(want), "{r}");
        }
        assert_eq!(v["outcome"]["failed"].as_u64(), Some(2));
        assert!(v["figures"].as_array().is_some_and(|f| f.is_empty()), "{v}");
        dir.assert_ns_clean();
    }
}

/// `msgbench ipc <args> --ns DIR`: exit 1, one line naming `option`,
/// nothing created.
fn option_error(args: &[&str], option: &str) {
    option_error_code(args, option, 1);
}

/// As [`option_error`], for a value clap's value parser refuses: a usage
/// error, exit 2.
fn usage_error(args: &[&str], option: &str) {
    option_error_code(args, option, 2);
}

fn option_error_code(args: &[&str], option: &str, code: i32) {
    let dir = TestDir::new("ipcopt");
    let line = run(Bin::Msgbench, ipc_args(&dir, args)).assert_one_line_error(code);
    let prefix = "msgbench: error: ";
    assert!(
        line.starts_with(prefix) && line[prefix.len()..].starts_with(option),
        "{args:?}: must name {option:?}: {line}"
    );
    assert!(!dir.ns().exists(), "{args:?} created the namespace");
}

#[test]
fn ipc_option_errors() {
    // Values clap's value parsers refuse: usage errors, exit 2.
    usage_error(&["-t", "bogus"], "--transport bogus");
    usage_error(
        &["-t", "uds,bogus"],
        "--transport uds,bogus: unknown transport \"bogus\"",
    );
    usage_error(&["-t", "uds,,shm"], "--transport uds,,shm");
    usage_error(&["--sizes", "-1"], "--sizes -1");
    usage_error(&["--sizes", "1,abc"], "--sizes 1,abc");
    usage_error(&["--sizes", ""], "--sizes");
    usage_error(&["--placement", "numa"], "--placement numa");
    usage_error(&["--row-secs", "0"], "--row-secs 0");
    usage_error(&["--row-secs", "x"], "--row-secs x");
    usage_error(&["--spin-us", "-5"], "--spin-us -5");
    usage_error(&["-r", "0"], "--repeats 0");
    usage_error(&["--repeats", "x"], "--repeats x");
    usage_error(&["--rate", "0"], "--rate 0");
    usage_error(&["--rate", "x"], "--rate x");
    usage_error(&["--warmup", "-1"], "--warmup -1");
    usage_error(&["--timing", "foo"], "--timing foo");
    usage_error(&["--window", "0"], "--window 0");
    usage_error(&["--window", "x"], "--window x");
    usage_error(&["--window", "-3"], "--window -3");
    usage_error(&["--fifo", "0"], "--fifo 0");
    usage_error(&["--idle-clients", "x"], "--idle-clients x");
    usage_error(&["--idle-clients", "1,,2"], "--idle-clients 1,,2");
    usage_error(&["--idle-clients", "-1"], "--idle-clients -1");
    usage_error(
        &["--idle-clients", "99999999999999999999"],
        "--idle-clients 99999999999999999999",
    );
    usage_error(&["--clients", "0"], "--clients 0");
    usage_error(&["--clients", "1,0"], "--clients 1,0");
    usage_error(&["--clients", "5000"], "--clients 5000");
    usage_error(&["--clients", "many"], "--clients many");
    usage_error(&["--layout", "fork"], "--layout fork");
    usage_error(&["--count", "0"], "--count 0");
    usage_error(&["-c", "2000001"], "--count 2000001");
    // What depends on two options is checked by the plan: exit 1.
    option_error(&["--timing", "whole", "--rate", "100"], "--rate");
    // --format is checked by the command line parser: a usage error.
    let dir = TestDir::new("ipcfmtopt");
    let o = run(Bin::Msgbench, ipc_args(&dir, &["--format", "xml"]));
    assert_eq!(o.code(), 2, "{o}");
    assert!(o.stderr.contains("--format"), "{o}");
    assert!(!dir.ns().exists(), "--format xml created the namespace");
}

/// `--window 8`: pipe streams 8 messages per acknowledged window and says
/// so; shm has no one-way messages and falls back to window 1, also said.
#[test]
fn ipc_window_used_per_row_and_fallback_said() {
    let dir = TestDir::new("ipcwin");
    let json = dir.file("win.json");
    let json_s = json.display().to_string();
    let o = run(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &[
                "--quick",
                "-t",
                "pipe,shm",
                "--sizes",
                "64",
                "--placement",
                "same",
                "--window",
                "8",
                "--throughput",
                "--json",
                &json_s,
            ],
        ),
    );
    o.assert_ok();
    assert!(
        o.stdout
            .contains("Window: 8 for pipe; 1 for shm (no one-way messages"),
        "legend: {}",
        o.stdout
    );
    let v = read_json(&json);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{v}");
    for r in rows {
        assert_eq!(r["status"].as_str(), Some("ok"), "{r}");
        let tp = &r["throughput"];
        let want = if r["transport"] == "pipe" { 8 } else { 1 };
        assert_eq!(tp["window"].as_u64(), Some(want), "{r}");
        assert!(tp["messages"].as_u64().unwrap_or(0) > 0, "{tp}");
    }
    dir.assert_ns_clean();
}

/// A one-way message the server takes as corrupted fails its row (the
/// window's checksum reply disagrees), for every windowed transport.
#[test]
fn ipc_corrupted_oneway_message_fails_the_row() {
    let dir = TestDir::new("ipcowfault");
    let json = dir.file("ow.json");
    let json_s = json.display().to_string();
    let o = run(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &[
                "--quick",
                "-t",
                "uds,pipe",
                "--sizes",
                "64",
                "--placement",
                "same",
                "--window",
                "4",
                "--inject-fault",
                "oneway",
                "--json",
                &json_s,
            ],
        ),
    );
    let line = o.assert_one_line_error(1);
    assert!(line.contains("ipc: 2 of 2 row(s) failed"), "{line}");
    let v = read_json(&json);
    for r in v["rows"].as_array().expect("rows") {
        assert_eq!(r["status"].as_str(), Some("failed"), "{r}");
        assert!(
            r["reason"]
                .as_str()
                .unwrap_or("")
                .contains("checksum reply of the window"),
            "{r}"
        );
    }
    dir.assert_ns_clean();
}

/// Every row of envelope `v`, each checked measured (status ok, latency
/// samples), as "TRANSPORT FIELD" (its `field` as text), in run order.
fn measured_rows(v: &serde_json::Value, field: &str) -> Vec<String> {
    let rows = v["rows"].as_array().expect("rows");
    rows.iter()
        .map(|r| {
            assert_eq!(r["status"], "ok", "{r}");
            assert!(r["latency"]["samples"].as_u64().unwrap_or(0) > 0, "{r}");
            let f = match &r[field] {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            format!("{} {f}", r["transport"].as_str().expect("transport"))
        })
        .collect()
}

/// SIGINT: the run stops, prints what it measured, says so in the
/// envelope and in one line (exit 1: an incomplete run), and cleans up.
#[test]
fn ipc_sigint_mid_run_cleans_up() {
    let dir = TestDir::new("ipcint");
    let json = dir.file("int.json");
    let json_s = json.display().to_string();
    let mut mb = Proc::start(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &[
                "-t",
                "shm-block,uds",
                "--placement",
                "same",
                "--json",
                &json_s,
            ],
        ),
    );
    let prefix = format!("ipc-run-{}-", mb.pid());
    let ns = dir.ns();
    // A row's endpoint exists: the run is going.
    mb.wait_until("a row's endpoint", |_| {
        list_tree(&ns)
            .iter()
            .any(|p| p.starts_with(&prefix) && p.contains("row-"))
    });
    std::thread::sleep(Duration::from_millis(300));
    mb.signal(libc::SIGINT);
    let o = mb.wait_within(Duration::from_secs(15), "SIGINT");
    let line = o.assert_one_line_error(1);
    assert!(line.contains("ipc: interrupted"), "{line}");
    assert!(o.stdout.contains("Interrupted: "), "{o}");
    let v = read_json(&json);
    assert_eq!(v["outcome"]["interrupted"], true, "{v}");
    assert_eq!(v["outcome"]["failed"].as_u64(), Some(0), "{v}");
    let rows = v["rows"].as_array().expect("rows");
    assert!(rows.len() < 10, "stopped early: {} rows", rows.len());
    dir.assert_ns_clean();
}

/// `msgbench ipc --quick -t uds --sizes 1 --placement same <extra> --json F`:
/// the output and the JSON document.
fn ipc_uds_json(tag: &str, extra: &[&str]) -> (Output, serde_json::Value) {
    let mut args = vec![
        "--quick",
        "-t",
        "uds",
        "--sizes",
        "1",
        "--placement",
        "same",
    ];
    args.extend_from_slice(extra);
    ipc_json(tag, &args)
}

/// `msgbench ipc <args> --json F`, which must succeed and leave nothing
/// behind (namespace, helper processes): the output and the document.
fn ipc_json(tag: &str, args: &[&str]) -> (Output, serde_json::Value) {
    let dir = TestDir::new(tag);
    let json = dir.file("ipc.json");
    let json_s = json.display().to_string();
    let mut args = args.to_vec();
    args.extend(["--json", &json_s]);
    let o = run(Bin::Msgbench, ipc_args(&dir, &args));
    o.assert_ok();
    let v = read_json(&json);
    dir.assert_ns_clean();
    assert!(peers_left(&dir).is_empty(), "{:?}", peers_left(&dir));
    (o, v)
}

#[test]
fn ipc_repeats_are_all_kept_and_their_spread_shown() {
    let (o, v) = ipc_uds_json("ipcrep", &["-r", "3", "--warmup", "0.01"]);
    let g = group(&o.stdout, "1 B, same CPU");
    assert!(g[0].contains("Spread"), "{}", o.stdout);
    assert!(g[2].trim_end().ends_with('%'), "spread cell: {}", o.stdout);
    assert!(
        o.stdout.contains("Repeats: 3 latency runs per row"),
        "{}",
        o.stdout
    );
    assert_eq!(v["settings"]["repeats"].as_u64(), Some(3), "{v}");
    assert_eq!(num(&v["settings"], "warmup_secs"), 0.01, "{v}");
    let r = &v["rows"][0];
    let reps = r["repeats"].as_array().expect("repeats");
    assert_eq!(reps.len(), 3, "{r}");
    // Each repeat a pass of its own (interleaved with the size's other
    // rows), sized as the first: one count asked of all.
    let targets: Vec<u64> = reps.iter().filter_map(|l| l["target"].as_u64()).collect();
    assert_eq!(targets, [targets[0]; 3], "{r}");
    for l in reps {
        check_latency(&l["summary"], l["samples"].as_u64().expect("samples"));
        assert_eq!(l["timing"], "per-message", "{l}");
        assert!(l["rate"].is_null(), "closed loop: {l}");
    }
    let st = &r["repeat_stats"];
    let central: Vec<f64> = st["central_ns"]
        .as_array()
        .expect("central_ns")
        .iter()
        .map(|x| x.as_f64().expect("number"))
        .collect();
    assert_eq!(central.len(), 3, "{st}");
    let mut sorted = central.clone();
    sorted.sort_by(f64::total_cmp);
    assert_eq!(num(st, "median_ns"), sorted[1], "{st}");
    assert_eq!(num(&r["latency"]["summary"], "p50_ns"), sorted[1], "{r}");
    let spread = (sorted[2] - sorted[0]) / sorted[1] * 100.0;
    assert!((num(st, "spread_pct") - spread).abs() < 1e-6, "{st}");
    // Every warning printed under the table is in the JSON too.
    let warnings = r["warnings"].as_array().expect("warnings");
    assert_eq!(
        o.stdout.matches("warning: uds 1 B same: ").count(),
        warnings.len(),
        "{}",
        o.stdout
    );
}

#[test]
fn ipc_timestamp_cost_is_subtracted_and_said() {
    let (o, v) = ipc_uds_json("ipcts", &[]);
    assert!(
        o.stdout.contains("Timing: per-message")
            && o.stdout.contains("subtracted from each sample"),
        "{}",
        o.stdout
    );
    let oh = num(&v["clock"], "overhead_ns");
    let sub = num(&v["rows"][0]["latency"], "overhead_subtracted_ns");
    assert!(oh >= 0.0 && sub >= 0.0, "{v}");
    // Rounded to whole clock ticks.
    assert!(
        (oh - sub).abs() <= 1.0,
        "overhead {oh} ns, subtracted {sub} ns"
    );
}

#[test]
fn ipc_whole_run_timing_has_only_a_mean() {
    let (o, v) = ipc_uds_json("ipcwhole", &["--timing", "whole"]);
    assert!(o.stdout.contains("Timing: whole run"), "{}", o.stdout);
    let g = group(&o.stdout, "1 B, same CPU");
    assert!(g[0].contains("Average"), "{}", o.stdout);
    let row = g[2];
    assert_eq!(
        row.split_whitespace().filter(|w| *w == "-").count(),
        4,
        "minimum, p50, p99 and maximum show -: {row}"
    );
    // The rate is one over the average, as ipc-bench's message rate.
    let exact = num(&v["rows"][0]["latency"]["exact"], "mean_ns");
    let rate = msgbench::results::thousands(1e9 / exact);
    assert!(
        row.split_whitespace().any(|w| w == rate),
        "Msg rate {rate} = 1 / {exact} ns: {row}"
    );
    assert_eq!(v["settings"]["timing"], "whole", "{v}");
    let l = &v["rows"][0]["latency"];
    assert_eq!(l["timing"], "whole", "{l}");
    assert!(l["summary"]["p50_ns"].is_null(), "{l}");
    assert!(
        l["histogram"].as_array().is_some_and(|h| h.is_empty()),
        "{l}"
    );
    let mean = num(&l["summary"], "mean_ns");
    let expect = num(l, "duration_ns") / l["samples"].as_u64().expect("samples") as f64;
    assert!((mean - expect).abs() <= 1e-6 * expect, "{l}");
}

#[test]
fn ipc_open_loop_counts_a_server_stall_in_the_tail() {
    // The server sleeps 50 ms before its 100th echo reply: with no warm-up
    // that is inside the latency run of 500 messages at 1000/s. Every
    // message behind it is timed from its intended send time, so the
    // largest latency is at least the stall.
    let (o, v) = ipc_uds_json(
        "ipcopen",
        &[
            "--rate",
            "1000",
            "--warmup",
            "0",
            "--row-secs",
            "0.5",
            "--inject-fault",
            "stall",
        ],
    );
    assert!(
        o.stdout.contains("Loop: open (--rate 1000)"),
        "{}",
        o.stdout
    );
    assert_eq!(num(&v["settings"], "rate"), 1000.0, "{v}");
    let l = &v["rows"][0]["latency"];
    assert_eq!(num(l, "rate"), 1000.0, "{l}");
    assert_eq!(l["samples"].as_u64(), Some(500), "{l}");
    let stall_ns = 50e6;
    assert!(num(&l["exact"], "max_ns") >= stall_ns - 1e3, "{l}");
    assert!(num(&l["summary"], "max_ns") >= stall_ns * 0.99, "{l}");
    // Not one late message but the ones scheduled during the stall too
    // (about one per millisecond of it).
    let late: u64 = l["histogram"]
        .as_array()
        .expect("histogram")
        .iter()
        .filter(|b| b[0].as_f64().unwrap_or(0.0) >= stall_ns / 5.0)
        .map(|b| b[1].as_u64().expect("bucket count"))
        .sum();
    assert!(late >= 20, "{late} messages of 10 ms or more: {l}");
}

/// Busy-looping shell processes, one per CPU, killed on drop.
struct Hogs(Vec<std::process::Child>);

impl Drop for Hogs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[test]
fn ipc_warns_when_another_process_loads_the_cpus() {
    let _serial = serial();
    let hogs = Hogs(
        (0..cpu_count())
            .map(|_| {
                std::process::Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .spawn()
                    .expect("sh")
            })
            .collect(),
    );
    std::thread::sleep(Duration::from_millis(100));
    let dir = TestDir::new("ipcnoise");
    let json = dir.file("ipc.json");
    let json_s = json.display().to_string();
    let o = run(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &["--quick", "-t", "uds", "--sizes", "1", "--json", &json_s],
        ),
    );
    drop(hogs);
    o.assert_ok();
    for p in placements() {
        let want = format!("warning: uds 1 B {p}: other load ");
        assert!(o.stdout.contains(&want), "no {want:?}: {}", o.stdout);
    }
    let v = read_json(&json);
    for r in v["rows"].as_array().expect("rows") {
        let w = r["warnings"].as_array().expect("warnings");
        assert!(
            w.iter()
                .any(|x| x.as_str().is_some_and(|s| s.starts_with("other load "))),
            "{r}"
        );
        assert!(num(&r["other_load"], "other_pct") > 0.0, "{r}");
    }
    dir.assert_ns_clean();
}

/// `msgbench ipc --quick -t uds --sizes <sizes> --placement same <extra>`:
/// the output (the namespace checked clean).
fn ipc_uds(tag: &str, sizes: &str, extra: &[&str]) -> Output {
    let dir = TestDir::new(tag);
    let mut args = vec![
        "--quick",
        "-t",
        "uds",
        "--sizes",
        sizes,
        "--placement",
        "same",
    ];
    args.extend_from_slice(extra);
    let o = run(Bin::Msgbench, ipc_args(&dir, &args));
    o.assert_ok();
    dir.assert_ns_clean();
    o
}

#[test]
fn ipc_csv_is_csv_only() {
    let o = ipc_uds("ipccsv", "1,70000", &["--format", "csv"]);
    let mut r = csv::Reader::from_reader(o.stdout.as_bytes());
    let head = r.headers().expect("a CSV header").clone();
    assert_eq!(&head[0], "transport", "no banner, no title: {}", o.stdout);
    for col in [
        "size",
        "placement",
        "status",
        "p50_ns",
        "msgs_per_s",
        "note",
    ] {
        assert!(head.iter().any(|h| h == col), "no {col}: {}", o.stdout);
    }
    let recs: Vec<csv::StringRecord> = r
        .records()
        .map(|x| x.unwrap_or_else(|e| panic!("not CSV: {e}: {}", o.stdout)))
        .collect();
    assert_eq!(recs.len(), 2, "{}", o.stdout);
    let col = |name: &str| head.iter().position(|h| h == name).expect("column");
    assert_eq!(&recs[0][col("status")], "ok", "{}", o.stdout);
    let p50: f64 = recs[0][col("p50_ns")].parse().expect("p50 in ns");
    assert!(p50 > 0.0, "{}", o.stdout);
    assert_eq!(&recs[1][col("status")], "not_applicable", "{}", o.stdout);
    assert_eq!(&recs[1][col("p50_ns")], "", "{}", o.stdout);
}

#[test]
fn ipc_json_format_prints_one_envelope() {
    let o = ipc_uds("ipcjsonfmt", "1", &["--format", "json", "-r", "2"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document: {e}: {}", o.stdout));
    assert_eq!(v["schema"].as_u64(), Some(1), "{v}");
    assert_eq!(v["suite"], "ipc", "{v}");
    assert_eq!(v["settings"]["repeats"].as_u64(), Some(2), "{v}");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 1, "{v}");
    let r = &rows[0];
    let samples = r["latency"]["samples"].as_u64().expect("samples");
    let h = r["histogram"].as_array().expect("histogram");
    let sum: u64 = h.iter().map(|b| b[1].as_u64().expect("count")).sum();
    assert_eq!(sum, samples, "every sample once: {r}");
    let uppers: Vec<f64> = h.iter().map(|b| b[0].as_f64().expect("upper_ns")).collect();
    assert!(
        uppers.windows(2).all(|w| w[0] < w[1]),
        "increasing: {uppers:?}"
    );
    let p50 = v["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .find(|f| f["metric"] == "p50_ns")
        .unwrap_or_else(|| panic!("no p50 figure: {v}"));
    assert_eq!(p50["key"]["transport"], "uds", "{p50}");
    assert_eq!(p50["key"]["size"], "1", "{p50}");
    assert_eq!(p50["key"]["placement"], "same", "{p50}");
    assert_eq!(p50["better"], "lower", "{p50}");
    assert_eq!(p50["repeats"].as_array().map(Vec::len), Some(2), "{p50}");
}

#[test]
fn ipc_markdown_prints_markdown_tables() {
    let o = ipc_uds("ipcmd", "1", &["--format", "markdown"]);
    assert!(o.stdout.contains("**1 B, same CPU"), "{}", o.stdout);
    let table: Vec<&str> = o
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("| "))
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(table.len() >= 3, "header, rule, a row: {}", o.stdout);
    assert!(
        table[0].contains("Transport") && table[0].contains("p50"),
        "{}",
        o.stdout
    );
    assert!(
        table[1].chars().all(|c| "|-: ".contains(c)),
        "rule: {}",
        o.stdout
    );
    assert!(table[2].contains("uds"), "{}", o.stdout);
}

/// `--copy`: each transport gets a copying-API row right after its
/// in-place row, both measured, labelled in the table (column API) and in
/// the JSON (`api`: `in-place`, `copy`), the figures keyed by it.
#[test]
fn ipc_copy_adds_a_copy_row_next_to_each_in_place_row() {
    let dir = TestDir::new("ipccopy");
    let json = dir.file("copy.json");
    let json_s = json.display().to_string();
    let placement = *placements().last().expect("a placement");
    let o = run(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &[
                "--quick",
                "-t",
                "shm-spin,uds",
                "--sizes",
                "64",
                "--placement",
                placement,
                "--copy",
                "--json",
                &json_s,
            ],
        ),
    );
    o.assert_ok();
    let g = group(&o.stdout, &format!("64 B, {placement} CPU"));
    assert!(g[0].contains("API"), "no API column: {}", o.stdout);
    for t in ["shm-spin", "uds"] {
        for api in ["in place", "copy"] {
            assert!(
                g.iter()
                    .any(|l| l.contains(&format!(" {t} ")) && l.contains(&format!(" {api} "))),
                "no {t} {api} row: {}",
                o.stdout
            );
        }
    }
    assert!(
        o.stdout
            .contains("copy: call/reply, every byte checked (--copy)"),
        "legend: {}",
        o.stdout
    );
    let v = read_json(&json);
    assert_eq!(v["settings"]["copy"], true, "{v}");
    let order = measured_rows(&v, "api");
    assert_eq!(
        order,
        [
            "shm-spin in-place",
            "shm-spin copy",
            "uds in-place",
            "uds copy"
        ],
        "{v}"
    );
    let p50s: Vec<String> = v["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .filter(|f| f["metric"] == "p50_ns")
        .map(|f| {
            format!(
                "{} {}",
                f["key"]["transport"].as_str().expect("transport key"),
                f["key"]["api"].as_str().expect("api key"),
            )
        })
        .collect();
    assert_eq!(p50s, order, "one p50 per row, keyed by API: {v}");
    dir.assert_ns_clean();
}

/// A body byte flipped in the middle of a 4096-byte echo reply, which the
/// in-place stamps alone would miss, fails the row on both APIs: in place
/// the client's whole-body check finds it, possibly some round trips later:
/// the corrupted body stays in the buffer msgpass lends the client for
/// request and reply (shm's and eventfd's alike).
#[test]
fn ipc_corrupted_body_is_caught_in_place_and_copied() {
    let dir = TestDir::new("ipcbody");
    let json = dir.file("body.json");
    let json_s = json.display().to_string();
    let o = run(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &[
                "--quick",
                "-t",
                "shm-block,uds,eventfd",
                "--sizes",
                "4096",
                "--placement",
                "same",
                "--copy",
                "--inject-fault",
                "corrupt-body",
                "--json",
                &json_s,
            ],
        ),
    );
    let line = o.assert_one_line_error(1);
    assert!(line.contains("ipc: 6 of 6 row(s) failed"), "{line}");
    let v = read_json(&json);
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 6, "{v}");
    for r in rows {
        assert_eq!(r["status"], "failed", "{r}");
        let reason = r["reason"].as_str().unwrap_or("");
        assert!(
            reason.contains("reply byte 2048 is") && reason.contains("(corrupted payload"),
            "{r}"
        );
    }
    let in_place_shm = rows
        .iter()
        .find(|r| r["transport"] == "shm-block" && r["api"] == "in-place")
        .expect("the in-place shm-block row");
    assert!(
        in_place_shm["reason"]
            .as_str()
            .unwrap_or("")
            .contains("left in the slot"),
        "{in_place_shm}"
    );
    // eventfd's areas lend the client one private buffer for request and
    // reply, as shm does: the corrupted body stays there too.
    let in_place_areas = rows
        .iter()
        .find(|r| r["transport"] == "eventfd" && r["api"] == "in-place")
        .expect("the in-place eventfd row");
    let reason = in_place_areas["reason"].as_str().unwrap_or("");
    assert!(reason.contains("left in the slot"), "{in_place_areas}");
    dir.assert_ns_clean();
}

/// Helper processes (`msgbench ipc-peer`) started for the test directory
/// `dir` that are still alive (zombies excluded).
fn peers_left(dir: &TestDir) -> Vec<(u32, String)> {
    let ns = dir.ns().display().to_string();
    procs_mentioning(&ns)
        .into_iter()
        .filter(|(pid, cmd)| {
            cmd.contains("ipc-peer")
                && std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| {
                    !st.rsplit(')')
                        .next()
                        .unwrap_or("")
                        .trim_start()
                        .starts_with('Z')
                })
        })
        .collect()
}

/// `--idle-clients 0,300` on uds and shm: every row measured, the idle
/// ones with 300 connections held by child processes, what each cost the
/// server (its descriptors as msgpass's transport table says, some
/// memory), the figures keyed by the count; the text shows both counts;
/// nothing left behind.
#[test]
fn ipc_idle_clients_beside_the_measured_one() {
    let (o, v) = ipc_json(
        "ipcidle",
        &[
            "--quick",
            "-t",
            "uds,shm",
            "--sizes",
            "64",
            "--placement",
            "same",
            "--idle-clients",
            "0,300",
        ],
    );
    for want in [
        "64 B, same CPU, 0 idle clients",
        "64 B, same CPU, 300 idle clients",
        "64 B, same CPU, p50 by idle clients",
        "RSS/conn",
        "Idle clients (--idle-clients N)",
    ] {
        assert!(o.stdout.contains(want), "no {want:?}: {}", o.stdout);
    }
    assert_eq!(
        v["settings"]["idle_clients"],
        serde_json::json!([0, 300]),
        "{v}"
    );
    assert_eq!(
        measured_rows(&v, "idle_clients"),
        ["uds 0", "shm 0", "uds 300", "shm 300"],
        "{v}"
    );
    let rows = v["rows"].as_array().expect("rows");
    for r in rows {
        let idle = &r["idle"];
        if r["idle_clients"] == 0 {
            assert!(idle.is_null(), "no idle clients, no cost: {r}");
            continue;
        }
        assert_eq!(idle["connections"].as_u64(), Some(300), "{idle}");
        assert!(idle["processes"].as_u64().unwrap_or(0) >= 1, "{idle}");
        let t = r["transport"].as_str().expect("transport");
        let table = msgpass::transport::info(t).expect("known").server_fds as f64;
        let fds = num(idle, "fds_per_conn");
        assert!(
            (fds - table).abs() <= 0.1,
            "{t}: {fds} descriptors per idle connection, the transport table says {table}: {idle}"
        );
        let fds_grew = num(idle, "fds_after") - num(idle, "fds_before");
        assert!((fds - fds_grew / 300.0).abs() < 1e-9, "{idle}");
        let rss = num(idle, "rss_bytes_per_conn");
        assert!(
            rss > 0.0 && rss < 1024.0 * 1024.0,
            "{t}: {rss} bytes per connection: {idle}"
        );
        assert!(num(idle, "client_fds_per_conn") >= 1.0, "{idle}");
    }
    let figures = v["figures"].as_array().expect("figures");
    for (metric, want) in [
        ("p50_ns", 4),
        ("fds_per_conn", 2),
        ("rss_bytes_per_conn", 2),
    ] {
        let n = figures.iter().filter(|f| f["metric"] == metric).count();
        assert_eq!(n, want, "{metric}: {v}");
    }
    assert!(
        figures.iter().all(|f| f["key"]["idle_clients"].is_string()),
        "every figure keyed by its count: {v}"
    );
}

/// `--clients 1,8`: besides the row of one in-process client, rows of 1
/// and 8 client processes, every client's round trips checked and
/// reported; the aggregate is their sum, the median and worst of their
/// percentiles are theirs, fairness is within its bounds.
#[test]
fn ipc_active_clients_aggregate_percentiles_and_fairness() {
    let mut args = IPC_QUICK_UDS.to_vec();
    args.extend(["--clients", "1,8"]);
    let (o, v) = ipc_json("ipcclients", &args);
    let g = group(&o.stdout, "64 B, same CPU, active clients");
    for col in [
        "Clients",
        "Msgs/s",
        "p50 med",
        "p99 worst",
        "Slow/fast",
        "CV",
    ] {
        assert!(g[0].contains(col), "no {col}: {}", o.stdout);
    }
    assert_eq!(v["settings"]["clients"], serde_json::json!([1, 8]), "{v}");
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3, "{v}");
    assert!(
        rows[0]["clients"].is_null() && rows[0]["active"].is_null(),
        "{v}"
    );
    for (r, n) in rows[1..].iter().zip([1u64, 8]) {
        assert_eq!(r["status"], "ok", "{r}");
        assert_eq!(r["clients"].as_u64(), Some(n), "{r}");
        let a = &r["active"];
        let per = a["per_client"].as_array().expect("per_client");
        assert_eq!(per.len() as u64, n, "{a}");
        let mut rates = Vec::new();
        let (mut p50s, mut p99s) = (Vec::new(), Vec::new());
        for (k, c) in per.iter().enumerate() {
            assert_eq!(c["index"].as_u64(), Some(k as u64), "{c}");
            assert!(c["error"].is_null(), "{c}");
            assert!(c["calls"].as_u64().unwrap_or(0) > 0, "{c}");
            rates.push(num(c, "msgs_per_s"));
            p50s.push(num(c, "p50_ns"));
            p99s.push(num(c, "p99_ns"));
        }
        let sum: f64 = rates.iter().sum();
        assert!((num(a, "msgs_per_s") - sum).abs() <= 1e-6 * sum, "{a}");
        let calls: u64 = per.iter().map(|c| c["calls"].as_u64().unwrap_or(0)).sum();
        assert_eq!(a["calls"].as_u64(), Some(calls), "{a}");
        let max = |v: &[f64]| v.iter().copied().fold(f64::MIN, f64::max);
        assert_eq!(num(a, "p50_worst_ns"), max(&p50s), "{a}");
        assert_eq!(num(a, "p99_worst_ns"), max(&p99s), "{a}");
        assert!(num(a, "p50_median_ns") <= num(a, "p50_worst_ns"), "{a}");
        assert!(num(a, "p99_median_ns") <= num(a, "p99_worst_ns"), "{a}");
        let slow = num(a, "slowest_over_fastest");
        let min = rates.iter().copied().fold(f64::MAX, f64::min);
        assert!((slow - min / max(&rates)).abs() < 1e-9, "{a}");
        assert!(slow > 0.0 && slow <= 1.0, "{a}");
        assert!(num(a, "rate_cv") >= 0.0, "{a}");
        if n == 1 {
            assert_eq!(
                (slow, num(a, "rate_cv")),
                (1.0, 0.0),
                "one client is even: {a}"
            );
        }
        assert!(r["latency"].is_null(), "{r}");
    }
    let figures = v["figures"].as_array().expect("figures");
    let aggregates: Vec<&str> = figures
        .iter()
        .filter(|f| f["metric"] == "aggregate_msgs_per_s")
        .map(|f| f["key"]["clients"].as_str().expect("keyed by clients"))
        .collect();
    assert_eq!(aggregates, ["1", "8"], "{v}");
}

/// More idle clients than this process may have descriptors, or more
/// posix-mq connections than the system's queues allow: one line naming
/// the option, the transport, the need and the limit, exit 1, and
/// nothing started.
#[test]
fn ipc_idle_clients_beyond_the_limits_are_refused_before_anything_runs() {
    let Some(hard) = oslayer::rlimit::hard(oslayer::rlimit::Resource::Nofile) else {
        return skip("RLIMIT_NOFILE is unlimited here: no count is beyond it");
    };
    if hard >= 1_000_000 {
        return skip("RLIMIT_NOFILE is at least 1000000 here, the most --idle-clients takes");
    }
    let n = (hard + 100).to_string();
    let dir = TestDir::new("ipcidlelimit");
    let o = run(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &["--quick", "-t", "uds", "--idle-clients", &format!("0,{n}")],
        ),
    );
    let line = o.assert_one_line_error(1);
    let want = format!("msgbench: error: --idle-clients {n}: uds needs about ");
    assert!(line.starts_with(&want), "{line}");
    let limit = format!("RLIMIT_NOFILE of {hard}");
    for part in [limit.as_str(), "at most ", "ulimit -Hn", "limits.conf"] {
        assert!(line.contains(part), "no {part:?}: {line}");
    }
    assert!(o.stdout.is_empty(), "nothing ran: {o}");
    assert!(!dir.ns().exists(), "the namespace was created: {o}");
    assert!(peers_left(&dir).is_empty(), "{:?}", peers_left(&dir));

    // posix-mq: two queues a connection within fs.mqueue.queues_max.
    let Some(queues) = std::fs::read_to_string("/proc/sys/fs/mqueue/queues_max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok())
    else {
        return skip("no /proc/sys/fs/mqueue/queues_max here");
    };
    let n = (queues / 2).to_string(); // the measured client makes one more
    let o = run(
        Bin::Msgbench,
        ipc_args(&dir, &["--quick", "-t", "posix-mq", "--idle-clients", &n]),
    );
    let line = o.assert_one_line_error(1);
    assert!(
        line.starts_with(&format!(
            "msgbench: error: --idle-clients {n}: posix-mq needs "
        )),
        "{line}"
    );
    assert!(
        line.contains("fs.mqueue.queues_max") || line.contains("RLIMIT_MSGQUEUE"),
        "{line}"
    );
    assert!(!dir.ns().exists(), "the namespace was created: {o}");
}

/// SIGINT while idle clients connect: the run stops, says so, and leaves
/// no helper process and nothing in the namespace.
#[test]
fn ipc_sigint_while_idle_clients_connect_leaves_nothing_behind() {
    let dir = TestDir::new("ipcidleint");
    let mut mb = Proc::start(
        Bin::Msgbench,
        ipc_args(
            &dir,
            &[
                "--quick",
                "-t",
                "shm",
                "--sizes",
                "64",
                "--placement",
                "same",
                "--idle-clients",
                "3000",
            ],
        ),
    );
    // Its idle clients are connecting (the shm server takes newcomers a
    // batch a tick: 3000 take seconds).
    mb.wait_until("an ipc-peer idle process", |_| {
        peers_left(&dir).iter().any(|(_, c)| c.contains(" idle "))
    });
    std::thread::sleep(Duration::from_millis(300));
    mb.signal(libc::SIGINT);
    let o = mb.wait_within(Duration::from_secs(20), "SIGINT");
    let line = o.assert_one_line_error(1);
    assert!(line.contains("ipc: interrupted"), "{line}");
    assert!(o.stdout.contains("Interrupted: "), "{o}");
    // Reaped before the suite exited: none may be left, not even briefly.
    assert!(peers_left(&dir).is_empty(), "{:?}", peers_left(&dir));
    dir.assert_ns_clean();
}

/// `--layout process,thread`: every transport in both layouts, a table
/// each (titled so), the process row against the thread row, the layout
/// in the rows, CSV and figure keys; `--count` sizes every latency run
/// exactly; the server processes are gone at the end. The server process
/// really is another process: its pid is not ours, and what it spent
/// counts in CPU all.
#[test]
fn both_layouts_side_by_side_and_count_sizes_the_runs() {
    let (o, v) = ipc_json(
        "ipclayout",
        &[
            "--quick",
            "-t",
            "uds,pipe",
            "--sizes",
            "64",
            "--placement",
            "same",
            "--layout",
            "process,thread",
            "-c",
            "300",
        ],
    );
    for title in [
        "64 B, same CPU, two processes",
        "64 B, same CPU, two threads of one process",
        "64 B, same CPU: process against thread",
    ] {
        let g = group(&o.stdout, title);
        assert!(
            g.iter()
                .any(|l| l.starts_with("uds") || l.contains(" uds ")),
            "{title}: {}",
            o.stdout
        );
    }
    let rows = v["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4, "{v}");
    let layouts: Vec<&str> = rows
        .iter()
        .map(|r| r["layout"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        layouts,
        ["process", "thread", "process", "thread"],
        "run order"
    );
    for r in rows {
        assert_eq!(r["status"], "ok", "{r}");
        let l = &r["latency"];
        assert_eq!(
            (l["target"].as_u64(), l["samples"].as_u64()),
            (Some(300), Some(300)),
            "{r}"
        );
        let cpu = &l["cpu"];
        let (cli, srv, all) = (
            num(cpu, "client_ns"),
            num(cpu, "server_ns"),
            num(cpu, "total_ns"),
        );
        // Every thread of both sides: at least the two threads (to rounding).
        assert!(cli > 0.0 && srv > 0.0 && all >= (cli + srv) * 0.999, "{r}");
    }
    let keys: Vec<String> = v["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .map(|f| f["key"]["layout"].as_str().unwrap_or("").to_string())
        .collect();
    assert!(
        keys.iter().any(|k| k == "process") && keys.iter().any(|k| k == "thread"),
        "{keys:?}"
    );
    assert_eq!(
        v["settings"]["layouts"],
        serde_json::json!(["process", "thread"])
    );
    assert_eq!(v["settings"]["count"].as_u64(), Some(300));
}

/// `--vs-ipc-bench`: the study's own programs and rigtorp's, built from
/// the repository's peers/ with the machine's C compiler, run on pipe
/// and uds-stream beside msgbench's process rows: each printed its
/// figures (kept under `peers`, as figures keyed `peer`), ours stand
/// beside them, the table names what each does differently, and nothing
/// of theirs is left in /tmp. Needs `cc`: skipped with a reason without
/// one (a failure under CI).
#[test]
fn the_studys_own_programs_run_beside_our_process_rows() {
    if std::process::Command::new("cc")
        .arg("--version")
        .output()
        .is_err()
    {
        skip("no C compiler (cc) to build ipc-bench's programs with");
        return;
    }
    let (o, v) = ipc_json(
        "ipcpeers",
        &[
            "--quick",
            "-t",
            "pipe,uds-stream",
            "--sizes",
            "64",
            "--placement",
            "same",
            "--vs-ipc-bench",
            "-c",
            "500",
        ],
    );
    let g = group(
        &o.stdout,
        "ipc-bench's own programs beside msgbench's process rows",
    );
    assert!(
        g.iter().any(|l| l.contains("the same mechanism")),
        "{}",
        o.stdout
    );
    let peers = v["peers"].as_array().expect("peers");
    let names: Vec<&str> = peers
        .iter()
        .map(|p| p["program"].as_str().unwrap_or(""))
        .collect();
    for want in [
        "ipc-bench domain",
        "ipc-bench pipe",
        "rigtorp pipe_lat",
        "rigtorp unix_lat",
    ] {
        let p = peers
            .iter()
            .find(|p| p["program"] == want)
            .unwrap_or_else(|| panic!("{want}: {names:?}"));
        assert_eq!(p["status"], "ok", "{p}");
        assert_eq!(p["count"].as_u64(), Some(500), "{p}");
        assert!(
            num(p, "mean_ns") > 0.0 && num(p, "ours_mean_ns") > 0.0,
            "{p}"
        );
    }
    let domain = peers
        .iter()
        .find(|p| p["program"] == "ipc-bench domain")
        .expect("domain");
    assert!(num(domain, "min_ns") <= num(domain, "mean_ns"), "{domain}");
    assert!(num(domain, "max_ns") >= num(domain, "mean_ns"), "{domain}");
    let keyed = v["figures"]
        .as_array()
        .expect("figures")
        .iter()
        .filter(|f| f["key"]["peer"].is_string())
        .count();
    assert_eq!(keyed, peers.len(), "{v}");
    for f in ["/tmp/ipc_bench_socket", "/tmp/ipc_bench_fifo"] {
        assert!(!std::path::Path::new(f).exists(), "{f} left behind");
    }
}
