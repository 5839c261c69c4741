//! Command lines of a hostile user (issue 33, item 5), through the real
//! binary: a time ago beyond 1970 for `--since`, and every count and size
//! of the hidden peers (`broker-peer`, `ipc-peer`, `rtos-peer`) beyond
//! what their suite ever asks for. Each is a usage error (exit 2) of one
//! line naming the option and its bound, before anything is allocated or
//! opened: never a panic (exit 101) or an abort on a huge allocation.
//! (`--store /dev/null` and the like: `tests/store/hostile.rs`.)

mod common;

use common::*;

/// Runs `msgbench ARGS` and expects exit 2 with one stderr line
/// `msgbench: error: OPTION...` holding `bound`; nothing made in `dir`'s
/// namespace (created, empty, for the peers that open it).
fn refused_usage(dir: &TestDir, args: &[&str], option: &str, bound: &str) {
    let o = run(Bin::Msgbench, args);
    assert!(!o.stderr.contains("panicked"), "{args:?}: {o}");
    let line = o.assert_one_line_error(2);
    let prefix = format!("msgbench: error: {option}");
    assert!(
        line.starts_with(&prefix),
        "{args:?}: want {prefix:?}: {line}"
    );
    assert!(line.contains(bound), "{args:?}: no bound {bound:?}: {line}");
    dir.assert_ns_clean();
}

#[test]
fn a_time_ago_before_1970_is_a_usage_error() {
    let dir = TestDir::new("since");
    for cmd in [
        &["history", "--since"][..],
        &["report", "--trend", "ns_per_call", "--since"],
    ] {
        for ago in ["99999999999d", "100y"] {
            let mut a = cmd.to_vec();
            a.push(ago);
            refused_usage(&dir, &a, &format!("--since {ago}"), "before 1970-01-01");
        }
    }
}

/// `base` with `option`'s value replaced by `value` (appended when
/// absent): clap refuses an option given twice.
fn with_value<'a>(base: &[&'a str], option: &'a str, value: &'a str) -> Vec<&'a str> {
    let mut out = base.to_vec();
    match out.iter().position(|a| *a == option) {
        Some(i) => out[i + 1] = value,
        None => out.extend([option, value]),
    }
    out
}

/// `broker-peer ROLE ARGS` with the run's reach (`-t uds --ns DIR`).
fn broker_peer<'a>(dir: &'a str, role: &'a str, args: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["broker-peer", role, "-t", "uds", "--ns", dir];
    a.extend(args);
    a
}

#[test]
fn broker_peers_refuse_counts_beyond_the_suite() {
    let dir = TestDir::new("broker-peer");
    mkdir_mode(&dir.ns(), 0o700);
    let ns = dir.ns().display().to_string();
    let client = [
        "--index",
        "0",
        "--destination",
        "0",
        "--ints",
        "1",
        "--seconds",
        "1",
    ];
    let route = ["--services", "2"];
    let service = ["--index", "0"];
    let max = u64::MAX.to_string();
    let cases: [(&str, &[&str], &str, &str, &str); 8] = [
        ("route", &route, "--services", "4294967295", "1..=64"),
        ("route", &route, "--call-timeout-ms", &max, "1..=3600000"),
        ("service", &service, "--index", "4294967295", "0..64"),
        ("client", &client, "--index", "64", "0..64"),
        ("client", &client, "--destination", "4294967295", "0..64"),
        ("client", &client, "--ints", "4294967295", "0..=16000"),
        ("client", &client, "--warmup", "4294967295", "0..=1000000"),
        ("client", &client, "--seconds", "1e300", "at most 3600"),
    ];
    for (role, base, option, value, bound) in cases {
        let args = with_value(base, option, value);
        let shown = format!("{option} {value}");
        refused_usage(&dir, &broker_peer(&ns, role, &args), &shown, bound);
    }
}

#[test]
fn ipc_and_rtos_peers_refuse_counts_and_sizes_beyond_the_suite() {
    let dir = TestDir::new("ipc-peer");
    mkdir_mode(&dir.ns(), 0o700);
    let ns = dir.ns().display().to_string();
    let reach = ["-t", "uds", "--ns", ns.as_str(), "--endpoint", "e"];
    let client = ["--index", "0", "--size", "1", "--cpu", "0", "--secs", "1"];
    let max = u64::MAX.to_string();
    let cases: [(&str, &str, &str, &str); 9] = [
        ("idle", "--count", "4294967295", "0..=4096"),
        ("idle", "--first", &max, "0..1000000"),
        ("idle", "--spin-us", &max, "0 to 1000000"),
        ("client", "--index", "4294967295", "0..1024"),
        ("client", "--size", &max, "0..=16777216"),
        ("client", "--cpu", &max, "0..=1023"),
        ("client", "--secs", "inf", "at most 3600"),
        ("client", "--secs", "NaN", "at most 3600"),
        ("client", "--warmup", "4294967295", "0..=1000000"),
    ];
    for (role, option, value, bound) in cases {
        let mut base = reach.to_vec();
        base.extend(if role == "idle" {
            &["--count", "1"][..]
        } else {
            &client[..]
        });
        let mut a = vec!["ipc-peer", role];
        a.extend(with_value(&base, option, value));
        refused_usage(&dir, &a, &format!("{option} {value}"), bound);
    }
    let ipc_server = ["--cpu", "0", "--size", "1"];
    for (option, value, bound) in [
        ("--cpu", max.as_str(), "0..=1023"),
        ("--size", &max, "0..=16777216"),
        ("--fault", "boom", "unknown fault"),
    ] {
        let mut base = reach.to_vec();
        base.extend(ipc_server);
        let mut a = vec!["ipc-peer", "server"];
        a.extend(with_value(&base, option, value));
        refused_usage(&dir, &a, &format!("{option} {value}"), bound);
    }
    let server = [
        "rtos-peer",
        "server",
        "--ns",
        ns.as_str(),
        "--endpoint",
        "e",
    ];
    for (option, value, bound) in [
        ("--cpu", max.as_str(), "0..=1023"),
        ("--fifo", "4294967295", "1..=98"),
        ("--fifo", "0", "1..=98"),
    ] {
        let mut base = server.to_vec();
        base.extend(["--cpu", "0", "--fifo", "1"]);
        let a = with_value(&base, option, value);
        refused_usage(&dir, &a, &format!("{option} {value}"), bound);
    }
}
