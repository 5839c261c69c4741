//! `msgbench adder`: the whole experiment with embedded servers, its table,
//! its JSON, its option errors, and its cleanup (run directory, server
//! processes) on success and on SIGINT.

mod common;

use std::time::Duration;

use common::*;

/// One parsed table row.
#[derive(Debug)]
struct Row {
    mode: String,
    threads: u32,
    idle: String,
    scaling: String,
}

/// Parses the table printed after `Transport <t>:`.
fn table(stdout: &str, transport: &str) -> Vec<Row> {
    let title = format!("Transport {transport}:");
    let mut lines = stdout
        .lines()
        .skip_while(|l| *l != title)
        .skip(1)
        .peekable();
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("no table for {transport}: {stdout}"));
    for col in [
        "Mode",
        "Threads",
        "Idle",
        "CPU Busy",
        "Ave Duration",
        "Rate/thread",
        "Aggregate",
        "Scaling",
        "p50",
        "p99",
    ] {
        assert!(header.contains(col), "header lacks {col:?}: {header}");
    }
    let rule = lines.next().unwrap_or_default();
    assert!(
        !rule.is_empty() && rule.chars().all(|c| c == '-'),
        "rule: {rule:?}"
    );
    let mut rows = Vec::new();
    for l in lines.take_while(|l| !l.trim().is_empty()) {
        let (mode, rest) = ["One process", "Multi-process"]
            .iter()
            .find_map(|m| l.strip_prefix(m).map(|r| (m.to_string(), r)))
            .unwrap_or((String::new(), l));
        let t: Vec<&str> = rest.split_whitespace().collect();
        // threads idle busy <ms> ms rate aggregate scaling p50 p99
        assert_eq!(t.len(), 10, "row {l:?}");
        assert_eq!(t[4], "ms", "row {l:?}");
        t[3].parse::<f64>()
            .unwrap_or_else(|_| panic!("duration in {l:?}"));
        for cell in [t[5], t[6]] {
            cell.replace(',', "")
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("rate {cell:?} in {l:?}"));
        }
        // A row shorter than /proc/stat's tick measures nothing: n/a.
        parse_busy(t[2], "CPU Busy");
        parse_dur_ns(t[8]);
        parse_dur_ns(t[9]);
        rows.push(Row {
            mode,
            threads: t[0].parse().unwrap_or_else(|_| panic!("threads in {l:?}")),
            idle: t[1].to_string(),
            scaling: t[7].to_string(),
        });
    }
    rows
}

/// Processes still running with a command line that mentions `dir`.
fn leftovers(dir: &TestDir) -> Vec<(u32, String)> {
    procs_mentioning(&dir.path().display().to_string())
}

#[test]
fn adder_suite_runs_both_modes_and_cleans_up() {
    let dir = TestDir::new("suite");
    let json = dir.file("adder.json");
    let mut args: Vec<String> = [
        "adder",
        "--threads",
        "1,2",
        "-S",
        "2000",
        "--idle-secs",
        "0",
        "-t",
        "shm,uds",
        "--json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.push(json.display().to_string());
    args.extend(dir.ns_args());
    let o = run(Bin::Msgbench, &args);
    o.assert_ok();

    for t in ["shm", "uds"] {
        let rows = table(&o.stdout, t);
        let shape: Vec<(&str, u32)> = rows.iter().map(|r| (r.mode.as_str(), r.threads)).collect();
        assert_eq!(
            shape,
            [("One process", 1), ("", 2), ("Multi-process", 1), ("", 2)],
            "{t}: {}",
            o.stdout
        );
        for r in &rows {
            assert_eq!(r.idle, "-", "no idle baseline with --idle-secs 0: {r:?}");
            assert!(r.scaling.ends_with('%'), "{r:?}");
            if r.threads == 1 {
                assert_eq!(r.scaling, "100%", "{r:?}");
            }
        }
    }
    assert!(
        o.stdout.contains("Scaling = "),
        "legend missing: {}",
        o.stdout
    );

    let v = read_json(&json);
    assert!(v["environment"]["kernel"].is_string(), "{v}");
    assert!(v["idle"].is_null(), "{}", v["idle"]);
    let tables = v["tables"].as_array().expect("tables");
    assert_eq!(tables.len(), 2);
    for (table, t) in tables.iter().zip(["shm", "uds"]) {
        assert_eq!(table["transport"].as_str(), Some(t));
        let rows = table["rows"].as_array().expect("rows");
        let shape: Vec<(&str, u64)> = rows
            .iter()
            .map(|r| {
                (
                    r["mode"].as_str().unwrap_or("?"),
                    r["threads"].as_u64().unwrap_or(0),
                )
            })
            .collect();
        assert_eq!(shape, [("One", 1), ("One", 2), ("Multi", 1), ("Multi", 2)]);
        for r in rows {
            let x = r["threads"].as_u64().unwrap_or(0);
            assert_eq!(r["samples_per_thread"].as_u64(), Some(2000));
            // -S is honoured exactly: never re-run, nothing discarded.
            assert_eq!(r["discarded_runs"], serde_json::json!([]), "{r}");
            let ts = r["run"]["threads"].as_array().expect("run.threads");
            assert_eq!(ts.len() as u64, x, "{r}");
            for th in ts {
                assert_eq!(th["final_value"].as_u64(), Some(2000), "{th}");
                check_latency(&th["latency"], 2000);
            }
            check_latency(&r["latency"], 2000 * x);
            check_busy_json(&r["busy_pct"], "busy_pct");
            assert!(num(r, "rate_per_thread") > 0.0 && num(r, "aggregate_rate") > 0.0);
            if x == 1 {
                assert_eq!(num(r, "efficiency"), 1.0, "{r}");
            }
        }
    }

    dir.assert_ns_clean();
    let left = leftovers(&dir);
    assert!(left.is_empty(), "server processes left behind: {left:?}");
}

#[test]
fn adder_suite_sigint_mid_run_cleans_up() {
    let dir = TestDir::new("suiteint");
    let mut args: Vec<String> = [
        "adder",
        "--threads",
        "2",
        "-S",
        "100000000",
        "--idle-secs",
        "0",
        "-t",
        "shm",
        "--modes",
        "multi",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    args.extend(dir.ns_args());
    let mut mb = Proc::start(Bin::Msgbench, &args);
    let run_dir = dir.ns().join(format!("adder-run-{}", mb.pid()));
    mb.wait_until("the servers' endpoints", |_| {
        run_dir.join("adder/0").exists() && run_dir.join("adder/1").exists()
    });
    // Two client threads on top of the main thread: the run is going.
    mb.wait_until("the client threads", |p| p.threads() >= 3);
    std::thread::sleep(Duration::from_millis(300));
    let servers: Vec<_> = leftovers(&dir)
        .into_iter()
        .filter(|(_, c)| c.contains("serve-adder"))
        .collect();
    assert_eq!(
        servers.len(),
        2,
        "two server processes expected: {servers:?}"
    );

    mb.signal(libc::SIGINT);
    let o = mb.wait_within(Duration::from_secs(10), "SIGINT");
    assert_ne!(o.code(), 0, "an interrupted run is not a success: {o}");
    assert!(
        o.stderr.lines().count() == 1 && o.stderr.starts_with("msgbench: error: "),
        "{o}"
    );
    assert!(
        !run_dir.exists(),
        "run directory left: {:?}",
        list_tree(&run_dir)
    );
    dir.assert_ns_clean();
    let left = leftovers(&dir);
    assert!(left.is_empty(), "server processes left behind: {left:?}");
}

/// `msgbench <args> --ns DIR`: exit 1, one line naming `option`, nothing
/// created.
fn option_error(args: &[&str], option: &str) {
    let dir = TestDir::new("mbopt");
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(dir.ns_args());
    let line = run(Bin::Msgbench, &a).assert_one_line_error(1);
    let prefix = "msgbench: error: ";
    assert!(
        line.starts_with(prefix) && line[prefix.len()..].starts_with(option),
        "{args:?}: must name {option:?}: {line}"
    );
    assert!(!dir.ns().exists(), "{args:?} created the namespace");
}

#[test]
fn adder_suite_option_errors() {
    option_error(&["adder", "--threads", "0"], "--threads 0");
    option_error(&["adder", "--threads", "129"], "--threads 129");
    option_error(&["adder", "--threads", "x"], "--threads x");
    option_error(&["adder", "-t", "bogus"], "--transport bogus");
    option_error(&["adder", "-t", "shm,bogus"], "--transport bogus");
    option_error(&["adder", "-S", "5"], "-S 5");
    option_error(&["adder", "--row-secs", "0"], "--row-secs 0");
    option_error(&["adder", "--row-secs", "-1"], "--row-secs -1");
    option_error(&["adder", "--idle-secs", "-1"], "--idle-secs -1");
    option_error(&["adder", "--client-cpus", "x"], "--client-cpus x");
}

#[test]
fn adder_suite_usage_errors_exit_2() {
    let dir = TestDir::new("mbusage");
    for args in [
        &["adder", "--no-such-flag"][..],
        &["adder", "--modes", "bogus"][..],
        &["adder", "-S", "abc"][..],
    ] {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend(dir.ns_args());
        let o = run(Bin::Msgbench, &a);
        assert_eq!(o.code(), 2, "{args:?}: {o}");
        assert!(o.stderr.contains("error:"), "{o}");
    }
    assert!(!dir.ns().exists());
    let o = run(Bin::Msgbench, ["no-such-command"]);
    assert_eq!(o.code(), 2, "{o}");
    let o = run(Bin::Msgbench, ["adder", "--help"]);
    o.assert_ok();
    for s in ["--threads", "--transport", "-S", "--modes", "--json"] {
        assert!(o.stdout.contains(s), "msgbench adder --help lacks {s}: {o}");
    }
}
