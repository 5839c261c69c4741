//! `dev-adder` and `client-adder` as a user runs them: option errors, help,
//! a missing server, normal runs over every transport with their output and
//! JSON, and the namespace rules.

mod common;

use std::time::Duration;

use common::*;

/// A CPU number that does not exist on this machine.
fn missing_cpu() -> String {
    if cpu_count() < 99 {
        "99".into()
    } else {
        "100000".into()
    }
}

/// Runs `bin args --ns DIR`, expects exit 1 with one stderr line
/// `<prog>: error: ...` naming `option`, and nothing created.
fn option_error(bin: Bin, args: &[&str], option: &str) {
    option_error_code(bin, args, option, 1);
}

/// As [`option_error`], for a value clap's value parser refuses: exit 2.
fn usage_error(bin: Bin, args: &[&str], option: &str) {
    option_error_code(bin, args, option, 2);
}

fn option_error_code(bin: Bin, args: &[&str], option: &str, code: i32) {
    let dir = TestDir::new("opt");
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(dir.ns_args());
    let o = run(bin, &a);
    let line = o.assert_one_line_error(code);
    let prefix = format!("{}: error: ", bin.name());
    assert!(line.starts_with(&prefix), "{args:?}: {line:?}");
    assert!(
        line[prefix.len()..].starts_with(option),
        "{args:?}: the message must start with {option:?}: {line:?}"
    );
    assert!(!line.contains("panicked"), "{line}");
    assert!(
        !dir.ns().exists(),
        "{args:?}: a refused command line must not create the namespace"
    );
}

#[test]
fn option_errors_common_to_both_programs() {
    let cpu = missing_cpu();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["-n", "0"], "-n 0".into()),
        (vec!["-n", "129"], "-n 129".into()),
        (vec!["-i", "4294967295", "-n", "2"], "-i 4294967295".into()),
    ];
    // Refused by clap's value parsers: usage errors, exit 2.
    let usage: Vec<(Vec<&str>, String)> = vec![
        (vec!["-t", "bogus"], "--transport bogus".into()),
        (vec!["--cpus", &cpu], format!("--cpus {cpu}")),
        (vec!["--cpus", "x"], "--cpus x".into()),
    ];
    for bin in [Bin::DevAdder, Bin::ClientAdder] {
        for (args, option) in &cases {
            option_error(bin, args, option);
        }
        for (args, option) in &usage {
            usage_error(bin, args, option);
        }
    }
}

#[test]
fn option_errors_of_the_client() {
    option_error(Bin::ClientAdder, &["-S", "99"], "-S 99");
    option_error(Bin::ClientAdder, &["-S", "4294967296"], "-S 4294967296");
    option_error(Bin::ClientAdder, &["--wait", "-1"], "--wait -1");
    option_error(Bin::ClientAdder, &["--wait=-1"], "--wait -1");
}

#[test]
fn option_errors_name_the_value_and_the_limit() {
    let dir = TestDir::new("optmsg");
    let mut a = vec![
        "-i".to_string(),
        "4294967295".into(),
        "-n".into(),
        "2".into(),
    ];
    a.extend(dir.ns_args());
    let line = run(Bin::DevAdder, &a).assert_one_line_error(1);
    assert!(line.contains("-n 2") && line.contains("overflow"), "{line}");
    let ns = dir.ns();
    let ns = ns.to_str().expect("utf-8 path");
    let line = run(Bin::DevAdder, ["-n", "129", "--ns", ns]).assert_one_line_error(1);
    assert!(line.contains("128"), "{line}");
    let line = run(Bin::ClientAdder, ["-S", "99", "--ns", ns]).assert_one_line_error(1);
    assert!(line.contains("100"), "{line}");
    // An unknown transport is refused by clap's value parser: exit 2.
    let line = run(Bin::ClientAdder, ["-t", "bogus", "--ns", ns]).assert_one_line_error(2);
    assert!(
        line.starts_with("client-adder: error: --transport bogus: "),
        "{line}"
    );
    assert!(line.contains("shm-spin") && line.contains("uds"), "{line}");
    assert!(!dir.ns().exists());
}

#[test]
fn usage_errors_exit_2() {
    let dir = TestDir::new("usage");
    for bin in [Bin::DevAdder, Bin::ClientAdder] {
        for args in [&["-n", "abc"][..], &["--no-such-flag"][..]] {
            let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
            a.extend(dir.ns_args());
            let o = run(bin, &a);
            assert_eq!(o.code(), 2, "{} {args:?}: {o}", bin.name());
            assert!(o.stderr.contains("error:"), "{o}");
            assert!(o.stdout.is_empty(), "{o}");
        }
    }
    assert!(!dir.ns().exists());
}

#[test]
fn help_and_version() {
    let o = run(Bin::ClientAdder, ["--help"]);
    o.assert_ok();
    for s in [
        "-S",
        "--transport",
        "--wait",
        "--ns",
        "-I",
        "--json",
        "--copy",
        "--one-path",
    ] {
        assert!(o.stdout.contains(s), "client-adder --help lacks {s}: {o}");
    }
    let o = run(Bin::DevAdder, ["--help"]);
    o.assert_ok();
    for s in ["-n", "-i", "--transport", "--ns", "--copy", "--pool"] {
        assert!(o.stdout.contains(s), "dev-adder --help lacks {s}: {o}");
    }
    for bin in [Bin::DevAdder, Bin::ClientAdder, Bin::Msgbench] {
        let o = run(bin, ["--version"]);
        o.assert_ok();
        assert_eq!(
            o.stdout.trim(),
            format!("{} {}", bin.name(), env!("CARGO_PKG_VERSION")),
            "{o}"
        );
    }
}

#[test]
fn missing_server_fails_at_once_with_a_hint() {
    let dir = TestDir::new("noserver");
    let o = client(&dir, &["-n", "2", "-i", "3", "-t", "uds", "-S", "1000"]);
    let line = o.assert_one_line_error(1);
    let path = dir.ns().join("adder/3");
    assert!(
        line.contains(&path.display().to_string()),
        "must name the missing endpoint {}: {line}",
        path.display()
    );
    assert!(
        line.contains("dev-adder -n 2 -i 3 -t uds"),
        "must say how to start the server: {line}"
    );
    assert!(
        line.contains(&format!("--ns {}", dir.ns().display())),
        "{line}"
    );
    assert!(line.contains("--wait"), "{line}");
    dir.assert_ns_clean();
}

#[test]
fn client_waits_for_a_late_server() {
    let dir = TestDir::new("wait");
    let mut a: Vec<String> = ["--wait", "5", "-n", "2", "-S", "1000"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(dir.ns_args());
    let mut cli = Proc::start(Bin::ClientAdder, a);
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        cli.is_running(),
        "client-adder --wait 5 gave up before the server came: {}",
        cli.stderr()
    );
    let srv = Server::start(&dir, &["-n", "2"]);
    let o = cli.wait();
    o.assert_ok();
    assert!(o.stdout.contains("Results:"), "{o}");
    srv.stop(libc::SIGINT, Duration::from_secs(5));
    dir.assert_ns_clean();
}

/// Checks the client's results block; returns the busy figures
/// (idle test if any, run: `None` when printed as n/a).
fn check_results(stdout: &str, threads: usize, samples: u64) -> (Option<f64>, Option<f64>) {
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(lines.len() >= 4, "too short: {stdout}");
    assert_eq!(lines[0], "Results:", "{stdout}");
    assert_eq!(lines[1], "--------", "{stdout}");
    let mut rest = &lines[2..];
    let idle = match rest[0].strip_prefix("Total CPU Busy (Idle Test): ") {
        Some(v) => {
            rest = &rest[1..];
            Some(parse_pct(v, "idle busy"))
        }
        None => None,
    };
    // A run shorter than /proc/stat's tick measures nothing: n/a.
    let busy = parse_busy(
        rest[0]
            .strip_prefix("Total CPU Busy: ")
            .unwrap_or_else(|| panic!("no 'Total CPU Busy:' line: {stdout}")),
        "Total CPU Busy",
    );
    if let Some(i) = idle {
        assert_busy_range(i, "Total CPU Busy (Idle Test)");
    }
    check_durations(stdout, rest, threads);
    for j in 0..threads {
        check_latency_line(stdout, rest, j, samples);
    }
    check_trailer(stdout, rest, threads);
    (idle, busy)
}

/// One "Thread duration: <n>ms (<n> msgs/sec)" line per thread, each rate
/// positive.
fn check_durations(stdout: &str, rest: &[&str], threads: usize) {
    let durations: Vec<&str> = rest
        .iter()
        .filter_map(|l| l.strip_prefix("Thread duration: "))
        .collect();
    assert_eq!(durations.len(), threads, "{stdout}");
    for d in durations {
        // "<n>ms (<n> msgs/sec)"
        let (ms, rate) = d
            .split_once("ms (")
            .unwrap_or_else(|| panic!("bad duration line {d:?}"));
        ms.parse::<u64>()
            .unwrap_or_else(|_| panic!("bad ms in {d:?}"));
        let rate = rate
            .strip_suffix(" msgs/sec)")
            .and_then(|r| r.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("bad rate in {d:?}"));
        assert!(rate > 0.0, "{d}");
    }
}

/// Thread `j`'s "Thread j latency: p50 X, p99 X, p99.9 X, max X (N
/// samples...)" line: every sample counted, the percentiles in order.
fn check_latency_line(stdout: &str, rest: &[&str], j: usize, samples: u64) {
    let prefix = format!("Thread {j} latency: ");
    let l = rest
        .iter()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {prefix:?} line: {stdout}"));
    let (figs, count) = l
        .split_once(" (")
        .unwrap_or_else(|| panic!("bad latency line {l:?}"));
    assert!(
        count.starts_with(&format!("{samples} samples")),
        "latency sample count in {l:?}"
    );
    let parts: Vec<(&str, f64)> = figs
        .split(", ")
        .map(|p| {
            let (k, v) = p
                .split_once(' ')
                .unwrap_or_else(|| panic!("bad figure {p:?}"));
            (k, parse_dur_ns(v))
        })
        .collect();
    let keys: Vec<&str> = parts.iter().map(|p| p.0).collect();
    assert_eq!(keys, ["p50", "p99", "p99.9", "max"], "{l}");
    for w in parts.windows(2) {
        assert!(w[0].1 <= w[1].1, "percentiles out of order: {l}");
    }
}

/// The clock line, one API line, no line of an unknown kind, and last
/// the seed's figures for `threads` threads (or why it has none).
fn check_trailer(stdout: &str, rest: &[&str], threads: usize) {
    let last = rest.last().copied().unwrap_or_default();
    assert!(
        last.starts_with(&format!("Seed, per thread at -n{threads} ("))
            && last.contains("QNX 8.0 ")
            && last.contains("QNX 7.1 ")
            || last.starts_with("Seed: no QNX figure"),
        "the seed's figures last: {stdout}"
    );
    assert!(
        rest.iter().any(|l| l.starts_with("Clock: ")),
        "no Clock line: {stdout}"
    );
    let apis: Vec<&&str> = rest.iter().filter(|l| l.starts_with("API: ")).collect();
    assert!(
        matches!(apis[..], [&"API: in place (zero-copy)"] | [&"API: copy"]),
        "one API line expected: {stdout}"
    );
    for l in rest {
        let known = [
            "Total CPU Busy",
            "Thread ",
            "Clock: ",
            "API: ",
            "Warning: ",
            "Seed",
        ];
        assert!(
            known.iter().any(|k| l.starts_with(k)),
            "unexpected line {l:?} in {stdout}"
        );
    }
}

/// Checks the client's JSON report: thread j talked to instance j, or
/// with `one_path` every thread to instance 0.
fn check_client_json(
    path: &std::path::Path,
    transport: &str,
    threads: u64,
    samples: u64,
    one_path: bool,
) {
    let v = read_json(path);
    let env = &v["environment"];
    for key in ["kernel", "cpu_model", "clocksource", "date"] {
        let s = env[key]
            .as_str()
            .unwrap_or_else(|| panic!("environment.{key} missing: {v}"));
        assert!(!s.is_empty(), "environment.{key} is empty");
    }
    let cpus = env["cpu_count"].as_u64().expect("environment.cpu_count");
    assert!(cpus >= 1);
    let cmd: Vec<&str> = env["command_line"]
        .as_array()
        .expect("environment.command_line")
        .iter()
        .filter_map(|s| s.as_str())
        .collect();
    assert!(
        cmd.contains(&"-S") && cmd.contains(&samples.to_string().as_str()),
        "{cmd:?}"
    );
    let run = &v["run"];
    assert_eq!(run["transport"].as_str(), Some(transport), "{run}");
    assert_eq!(run["samples"].as_u64(), Some(samples));
    let ts = run["threads"].as_array().expect("run.threads");
    assert_eq!(ts.len() as u64, threads);
    for (j, t) in ts.iter().enumerate() {
        assert_eq!(t["thread"].as_u64(), Some(j as u64));
        let instance = if one_path { 0 } else { j as u64 };
        assert_eq!(t["instance"].as_u64(), Some(instance), "thread {j}");
        assert_eq!(
            t["final_value"].as_u64(),
            Some(samples),
            "thread {j}: final value must equal -S"
        );
        assert!(num(t, "duration_ns") > 0.0 && num(t, "rate") > 0.0);
        check_latency(&t["latency"], samples);
    }
    check_latency(&run["latency"], samples * threads);
    let busy = &run["busy"];
    assert!(busy.is_null() || busy.is_object(), "run.busy: {busy}");
    check_busy_json(&busy["busy_pct"], "run.busy.busy_pct");
}

fn normal_run(transport: &str) {
    let dir = TestDir::new(transport);
    let json = dir.file("client.json");
    let srv = Server::start(&dir, &["-n2", "-t", transport]);
    assert!(srv.banner.contains("adder/0..adder/1"), "{}", srv.banner);
    let o = client(
        &dir,
        &[
            "-n2",
            "-S",
            "20000",
            "-t",
            transport,
            "--json",
            json.to_str().expect("utf-8 path"),
        ],
    );
    o.assert_ok();
    assert!(o.stderr.is_empty(), "no warnings expected: {o}");
    let (idle, _) = check_results(&o.stdout, 2, 20000);
    assert!(idle.is_none(), "no idle test without -I: {o}");
    check_client_json(&json, transport, 2, 20000, false);
    assert!(
        o.stdout.contains("\nAPI: in place (zero-copy)\n"),
        "in place by default: {o}"
    );
    assert_eq!(read_json(&json)["run"]["api"], "in-place");
    srv.stop(libc::SIGINT, Duration::from_secs(5));
    dir.assert_ns_clean();
}

/// `dev-adder [--copy]` and `client-adder [--copy]` over `transport`: every
/// reply checked, the final values right, the API said in the banner, the
/// results block and the JSON. The wire protocol is the same either way,
/// so a mismatched pair works too.
fn api_run(transport: &str, server_copy: bool, client_copy: bool) {
    let dir = TestDir::new(&format!("api-{transport}"));
    let json = dir.file("client.json");
    let mut sargs = vec!["-n1", "-t", transport];
    if server_copy {
        sargs.push("--copy");
    }
    let srv = Server::start(&dir, &sargs);
    let want = if server_copy {
        ", API copy ("
    } else {
        ", API in place (zero-copy) ("
    };
    assert!(srv.banner.contains(want), "{}", srv.banner);
    let mut cargs = vec![
        "-S",
        "5000",
        "-t",
        transport,
        "--json",
        json.to_str().expect("utf-8 path"),
    ];
    if client_copy {
        cargs.push("--copy");
    }
    let o = client(&dir, &cargs);
    o.assert_ok();
    check_results(&o.stdout, 1, 5000);
    check_client_json(&json, transport, 1, 5000, false);
    let (line, api) = if client_copy {
        ("\nAPI: copy\n", "copy")
    } else {
        ("\nAPI: in place (zero-copy)\n", "in-place")
    };
    assert!(o.stdout.contains(line), "{o}");
    assert_eq!(read_json(&json)["run"]["api"], api);
    srv.stop(libc::SIGINT, Duration::from_secs(5));
    dir.assert_ns_clean();
}

/// `dev-adder --pool 2` serves the one path adder/0 from two threads;
/// `client-adder --one-path -n 2` sends both its threads there: every
/// reply checked (each thread's final value is -S), the banner says the
/// pool, no second path is made, and SIGINT removes the endpoint.
fn pool_run(transport: &str, samples: u64) {
    let dir = TestDir::new(&format!("pool-{transport}"));
    let json = dir.file("client.json");
    let srv = Server::start(&dir, &["--pool", "2", "-t", transport]);
    assert!(
        srv.banner.contains("serving adder/0 in ")
            && srv.banner.contains("with a pool of 2 threads"),
        "{}",
        srv.banner
    );
    assert!(dir.ns().join("adder/0").exists(), "{}", srv.banner);
    assert!(!dir.ns().join("adder/1").exists(), "one path only");
    let s = samples.to_string();
    let o = client(
        &dir,
        &[
            "--one-path",
            "-n",
            "2",
            "-S",
            &s,
            "-t",
            transport,
            "--json",
            json.to_str().expect("utf-8 path"),
        ],
    );
    o.assert_ok();
    check_results(&o.stdout, 2, samples);
    check_client_json(&json, transport, 2, samples, true);
    srv.stop(libc::SIGINT, Duration::from_secs(5));
    dir.assert_ns_clean();
}

#[test]
fn pool_shm() {
    pool_run("shm", 20000);
}

#[test]
fn pool_uds() {
    pool_run("uds", 2000);
}

#[test]
fn pool_option_errors() {
    option_error(Bin::DevAdder, &["--pool", "0"], "--pool 0");
    option_error(Bin::DevAdder, &["--pool", "65"], "--pool 65");
    option_error(Bin::DevAdder, &["--pool", "2", "-n", "2"], "--pool 2");
    let dir = TestDir::new("poolmsg");
    let ns = dir.ns();
    let ns = ns.to_str().expect("utf-8 path");
    let line = run(Bin::DevAdder, ["--pool", "65", "--ns", ns]).assert_one_line_error(1);
    assert!(line.contains("1 to 64 threads"), "names the bound: {line}");
    let line = run(Bin::DevAdder, ["--pool", "2", "-n", "2", "--ns", ns]).assert_one_line_error(1);
    assert!(line.contains("-n must be 1"), "says what to change: {line}");
    assert!(!dir.ns().exists());
}

#[test]
fn in_place_shm_spin() {
    api_run("shm-spin", false, false);
}

#[test]
fn copy_shm_spin() {
    api_run("shm-spin", true, true);
}

#[test]
fn in_place_uds() {
    api_run("uds", false, false);
}

#[test]
fn copy_uds() {
    api_run("uds", true, true);
}

#[test]
fn in_place_server_copying_client_shm_spin() {
    api_run("shm-spin", false, true);
}

#[test]
fn copying_server_in_place_client_uds() {
    api_run("uds", true, false);
}

#[test]
fn normal_run_shm() {
    normal_run("shm");
}

#[test]
fn normal_run_shm_spin() {
    normal_run("shm-spin");
}

#[test]
fn normal_run_shm_block() {
    normal_run("shm-block");
}

#[test]
fn normal_run_shm_hybrid() {
    normal_run("shm-hybrid");
}

#[test]
fn normal_run_uds() {
    normal_run("uds");
}

/// `-I` costs 5 s of sleep: done once.
#[test]
fn idle_test_line() {
    let dir = TestDir::new("idle");
    let json = dir.file("idle.json");
    let srv = Server::start(&dir, &["-n1"]);
    let o = client(
        &dir,
        &[
            "-I",
            "-S",
            "2000",
            "--json",
            json.to_str().expect("utf-8 path"),
        ],
    );
    o.assert_ok();
    let (idle, _) = check_results(&o.stdout, 1, 2000);
    assert!(idle.is_some(), "-I must print the idle line: {o}");
    let v = read_json(&json);
    assert_busy_range(num(&v["idle"], "busy_pct"), "idle.busy_pct");
    srv.stop(libc::SIGTERM, Duration::from_secs(5));
    dir.assert_ns_clean();
}

#[test]
fn no_timestamps_prints_no_percentiles() {
    let dir = TestDir::new("nots");
    let srv = Server::start(&dir, &["-n1", "-t", "uds"]);
    let o = client(&dir, &["-S", "1000", "-t", "uds", "--no-timestamps"]);
    o.assert_ok();
    assert!(o.stdout.contains("Thread duration: "), "{o}");
    assert!(!o.stdout.contains("latency"), "{o}");
    assert!(o.stdout.contains("--no-timestamps"), "{o}");
    srv.stop(libc::SIGINT, Duration::from_secs(5));
    dir.assert_ns_clean();
}

#[test]
fn wrong_transport_is_named() {
    let dir = TestDir::new("wrongt");
    let srv = Server::start(&dir, &["-n1", "-t", "uds"]);
    let line = client(&dir, &["-S", "1000", "-t", "shm"]).assert_one_line_error(1);
    assert!(line.contains("adder/0") && line.contains("uds"), "{line}");
    srv.stop(libc::SIGINT, Duration::from_secs(5));
    dir.assert_ns_clean();
}

// ------------------------------------------------------------- namespace

#[test]
fn namespace_symlink_is_refused() {
    let dir = TestDir::new("symlink");
    let real = dir.file("real");
    mkdir_mode(&real, 0o700);
    let link = dir.file("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let link_s = link.to_str().expect("utf-8 path");
    let cases: [(Bin, Vec<&str>); 3] = [
        (Bin::DevAdder, vec!["--ns", link_s]),
        (Bin::ClientAdder, vec!["--ns", link_s, "-S", "1000"]),
        (
            Bin::Msgbench,
            vec!["adder", "--ns", link_s, "-S", "1000", "--idle-secs", "0"],
        ),
    ];
    for (bin, args) in cases {
        let line = run(bin, &args).assert_one_line_error(1);
        assert!(line.contains("symbolic link"), "{}: {line}", bin.name());
        assert!(line.contains(link_s), "{}: {line}", bin.name());
    }
    assert!(list_tree(&real).is_empty(), "{:?}", list_tree(&real));
}

#[test]
fn namespace_writable_by_group_is_refused() {
    let dir = TestDir::new("groupw");
    let ns = dir.file("gw");
    mkdir_mode(&ns, 0o770);
    let ns_s = ns.to_str().expect("utf-8 path");
    for (bin, args) in [
        (Bin::DevAdder, vec!["--ns", ns_s]),
        (Bin::ClientAdder, vec!["--ns", ns_s, "-S", "1000"]),
    ] {
        let line = run(bin, &args).assert_one_line_error(1);
        assert!(line.contains("writable by group"), "{}: {line}", bin.name());
        assert!(line.contains("chmod 700"), "{}: {line}", bin.name());
    }
    assert!(list_tree(&ns).is_empty(), "{:?}", list_tree(&ns));
}

#[test]
fn msgbench_ns_env_is_honoured() {
    let dir = TestDir::new("env");
    let ns = dir.ns();
    let mut cmd = Bin::DevAdder.cmd(["-n1", "-t", "uds"]);
    cmd.env("MSGBENCH_NS", &ns);
    let mut srv = Proc::spawn("dev-adder", cmd);
    let out = srv.wait_stdout("dev-adder: serving");
    assert!(
        out.contains(&format!("in {} over", ns.display())),
        "banner must name the namespace from MSGBENCH_NS: {out}"
    );
    assert!(ns.join("adder/0").exists(), "{:?}", list_tree(&ns));

    let mut cmd = Bin::ClientAdder.cmd(["-S", "1000", "-t", "uds"]);
    cmd.env("MSGBENCH_NS", &ns);
    run_cmd("client-adder", cmd).assert_ok();

    // No server at instance 7: the hint need not repeat --ns.
    let mut cmd = Bin::ClientAdder.cmd(["-S", "1000", "-i", "7", "-t", "uds"]);
    cmd.env("MSGBENCH_NS", &ns);
    let line = run_cmd("client-adder", cmd).assert_one_line_error(1);
    assert!(
        line.contains(&ns.join("adder/7").display().to_string()),
        "{line}"
    );
    assert!(!line.contains("--ns"), "{line}");

    // --ns wins over the variable.
    let other = dir.file("other");
    let mut cmd = Bin::ClientAdder.cmd(["-S", "1000", "-t", "uds", "--ns"]);
    cmd.arg(&other).env("MSGBENCH_NS", &ns);
    let line = run_cmd("client-adder", cmd).assert_one_line_error(1);
    assert!(
        line.contains(&other.join("adder/0").display().to_string()),
        "{line}"
    );

    srv.signal(libc::SIGINT);
    let o = srv.wait_within(Duration::from_secs(5), "SIGINT");
    assert_eq!(o.code(), 0, "{o}");
    dir.assert_ns_clean();
}

/// `dev-adder --inherit-priority` serves on every transport that carries
/// priority inheritance (a client's run answered in full), and refuses
/// the others in one line naming the transport and why, leaving nothing.
#[test]
fn inherit_priority_is_served_where_carried_and_refused_elsewhere() {
    if !is_root() {
        skip("not root: --inherit-priority needs CAP_SYS_NICE");
        return;
    }
    let carried = [
        "uds",
        "uds-stream",
        "uds-dgram",
        "pipe",
        "fifo",
        "eventfd",
        "posix-mq",
        "io-uring",
        "shm",
        "shm-hybrid",
        "shm-spin",
        "shm-block",
    ];
    for t in carried {
        let dir = TestDir::new(&format!("inherit-{t}"));
        let srv = Server::start(&dir, &["-n1", "--inherit-priority", "-t", t]);
        client(&dir, &["-S", "1000", "-t", t]).assert_ok();
        srv.stop(libc::SIGINT, Duration::from_secs(5));
        dir.assert_ns_clean();
    }
    for (t, why) in [
        ("sysv-msg", "does not carry it yet"),
        ("tcp", "names no peer process"),
    ] {
        let dir = TestDir::new(&format!("inherit-{t}"));
        let mut a: Vec<String> = ["-n1", "--inherit-priority", "-t", t]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(dir.ns_args());
        let o = run(Bin::DevAdder, &a);
        let line = o.assert_one_line_error(1);
        assert!(
            line.contains(&format!("not on transport {t}")) && line.contains(why),
            "{line}"
        );
        assert!(
            line.contains(&carried.join(", ")),
            "names where it works: {line}"
        );
        dir.assert_ns_clean();
    }
}
