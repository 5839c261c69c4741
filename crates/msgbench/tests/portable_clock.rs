//! The portable clock path: the real binary's suites timed with the TSC
//! path switched off (`MSGBENCH_CLOCK=monotonic`, as on the seed's
//! Raspberry Pi 4, which has no TSC). Each run's envelope must say it used
//! `clock_monotonic` because it was asked to, with the measured cost of a
//! read (never 0: a vDSO `clock_gettime` takes tens of ns); ipc must have
//! taken that cost off its samples exactly as it does the TSC's (rounded
//! to whole ticks, here nanoseconds), rtos must report it as CAL-P-TRC,
//! and every figure must be finite, the headline ones positive. A bad
//! value is a one-line error naming the variable. Nothing here asserts a
//! speed.

mod common;

use common::*;

/// Runs `msgbench ARGS --json FILE` with `MSGBENCH_CLOCK=value` (and
/// `--ns DIR` for the suites that start servers: adder, ipc); returns the
/// output and the envelope.
fn run_with_clock(value: &str, tag: &str, args: &[&str]) -> (Output, serde_json::Value) {
    let dir = TestDir::new(tag);
    let json = dir.file("run.json");
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(["--json".into(), json.display().to_string()]);
    if matches!(args.first(), Some(&"adder" | &"ipc")) {
        a.extend(dir.ns_args());
    }
    let mut cmd = Bin::Msgbench.cmd(&a);
    cmd.env("MSGBENCH_CLOCK", value);
    let out = run_cmd("msgbench", cmd);
    out.assert_ok();
    let v = read_json(&json);
    dir.assert_ns_clean();
    (out, v)
}

/// The envelope says the run was timed with the monotonic clock because
/// `MSGBENCH_CLOCK` asked for it; returns the measured cost of one read.
fn check_monotonic(v: &serde_json::Value, out: &Output) -> f64 {
    let c = &v["clock"];
    assert_eq!(c["name"], "clock_monotonic", "{c}");
    assert_eq!(c["requested"], "monotonic", "{c}");
    assert_eq!(num(c, "ticks_per_us"), 1000.0, "{c}");
    let oh = num(c, "overhead_ns");
    assert!(
        oh.is_finite() && oh >= 1.0,
        "a read's cost not measured: {c}"
    );
    if out.stdout.contains("Clock:") {
        assert!(
            out.stdout
                .contains("clock_monotonic (MSGBENCH_CLOCK=monotonic"),
            "{}",
            out.stdout
        );
    }
    oh
}

/// Every figure finite and not negative; each metric in `positive` present
/// and above 0.
fn check_figures(v: &serde_json::Value, positive: &[&str]) {
    let figures = v["figures"].as_array().expect("figures");
    assert!(!figures.is_empty(), "no figures: {v}");
    for f in figures {
        let x = num(f, "value");
        assert!(x.is_finite() && x >= 0.0, "bad figure: {f}");
    }
    for m in positive {
        let of_m: Vec<_> = figures.iter().filter(|f| f["metric"] == *m).collect();
        assert!(!of_m.is_empty(), "no {m} figure: {v}");
        for f in of_m {
            assert!(num(f, "value") > 0.0, "{m} not positive: {f}");
        }
    }
    assert_eq!(v["outcome"]["failed"].as_u64(), Some(0), "{}", v["outcome"]);
}

#[test]
fn adder_times_with_the_monotonic_clock() {
    let _one = serial();
    let (out, v) = run_with_clock(
        "monotonic",
        "clock-adder",
        &[
            "adder",
            "-t",
            "uds",
            "--modes",
            "one",
            "--threads",
            "1",
            "-S",
            "2000",
            "--idle-secs",
            "0",
        ],
    );
    check_monotonic(&v, &out);
    check_figures(&v, &["rate_per_thread", "aggregate_rate", "p50_ns"]);
}

#[test]
fn ipc_subtracts_the_monotonic_clocks_read_cost() {
    let _one = serial();
    let mut args = vec!["ipc"];
    args.extend(IPC_QUICK_UDS);
    let (out, v) = run_with_clock("monotonic", "clock-ipc", &args);
    let oh = check_monotonic(&v, &out);
    check_figures(&v, &["p50_ns", "mean_ns", "throughput"]);
    let rows = v["rows"].as_array().expect("rows");
    assert!(!rows.is_empty(), "{v}");
    for r in rows {
        // Taken off each sample as whole ticks (1 ns each here), as the
        // TSC's cost is in TSC ticks.
        let sub = num(&r["latency"], "overhead_subtracted_ns");
        assert_eq!(sub, oh.round(), "overhead {oh} ns, subtracted {sub}: {r}");
        assert!(sub >= 1.0, "nothing subtracted: {r}");
    }
    assert!(
        out.stdout.contains("subtracted from each sample"),
        "{}",
        out.stdout
    );
}

#[test]
fn floor_runs_with_the_monotonic_clock() {
    let _one = serial();
    let (out, v) = run_with_clock("monotonic", "clock-floor", &["floor", "--quick"]);
    check_monotonic(&v, &out);
    check_figures(&v, &["ns_per_round_trip", "ns_per_call"]);
}

/// rtos measures a timestamp's cost with the run's clock (CAL-P-TRC) and
/// subtracts it from every interval: with the TSC path off it is the
/// monotonic clock's read, and near the envelope's figure.
#[test]
fn rtos_calibrates_the_monotonic_clock() {
    let _one = serial();
    let (out, v) = run_with_clock("monotonic", "clock-rtos", &["rtos", "CAL", "--quick"]);
    let oh = check_monotonic(&v, &out);
    check_figures(&v, &[]);
    let rows = v["rows"].as_array().expect("rows");
    let trc = rows
        .iter()
        .find(|r| r["id"] == "CAL-P-TRC")
        .unwrap_or_else(|| panic!("no CAL-P-TRC: {v}"));
    let o = &trc["outcome"];
    assert_eq!(o["kind"], "timing", "{trc}");
    let p50 = num(o, "p50");
    assert!(p50.is_finite() && p50 > 0.0, "{trc}");
    eprintln!(
        "monotonic read: {oh} ns at start, CAL-P-TRC p50 {p50} {}",
        o["unit"]
    );
}

/// Switched on (the default), the envelope says so too: `auto`, and the
/// clock the machine allows.
#[test]
fn auto_is_recorded_as_asked() {
    let _one = serial();
    let (_, v) = run_with_clock("auto", "clock-auto", &["floor", "--quick"]);
    let c = &v["clock"];
    assert_eq!(c["requested"], "auto", "{c}");
    assert!(c["name"] == "tsc" || c["name"] == "clock_monotonic", "{c}");
    assert!(num(c, "overhead_ns") > 0.0, "{c}");
    eprintln!("auto: {c}");
}

#[test]
fn a_bad_clock_is_one_line_naming_the_variable() {
    let dir = TestDir::new("clock-bad");
    let ns = dir.ns_args();
    let ns: Vec<&str> = ns.iter().map(String::as_str).collect();
    for (bin, args) in [
        (Bin::Msgbench, vec!["floor", "--quick"]),
        (Bin::ClientAdder, [&["-n", "1"][..], &ns].concat()),
        (Bin::DevAdder, [&["-n", "1"][..], &ns].concat()),
    ] {
        let mut cmd = bin.cmd(&args);
        cmd.env("MSGBENCH_CLOCK", "rdtsc");
        let out = run_cmd(bin.name(), cmd);
        let line = out.assert_one_line_error(1);
        assert!(
            line.contains("MSGBENCH_CLOCK=\"rdtsc\"") && line.contains("auto or monotonic"),
            "{}: {line}",
            bin.name()
        );
    }
    dir.assert_ns_clean();
}
