//! `msgbench broker` with real processes: the command's rows with several
//! clients and services at once (every reply's serial and integers are
//! checked by the clients, so a misrouted reply fails the run), on every
//! D-Bus library with the real daemons, a service killed mid-call (on the
//! msgbench broker, and on every D-Bus library and daemon), a client
//! killed mid-call, option errors, and nothing left behind (daemons,
//! sockets, directories), also after Ctrl-C.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use msgbench::measure::peers::Peer;
use msgbench::suites::broker::client::{Caller, MsgpassCaller};
use msgbench::suites::broker::dbus::{DbusLib, PrivateBus, Target};
use msgbench::suites::broker::router::{RouterStats, ENDPOINT};
use msgpass::{Namespace, Options};

/// Longest wait for a client's error after its service was killed: a
/// liveness bound for a loaded 2-CPU machine (the error is the event the
/// tests wait for, not a speed), under the D-Bus libraries' default call
/// timeout (25 s), so an error that only came from a timeout still fails.
const EVENT_LIMIT: Duration = Duration::from_secs(10);

/// Calls `call` back to back on a thread until it fails, and waits up to
/// [`EVENT_LIMIT`] from now for that failure; returns the error and when
/// it came. Panics naming `what` when none comes.
fn first_error<E: std::fmt::Display>(
    what: &str,
    mut call: impl FnMut() -> Result<(), E> + Send + 'static,
) -> impl FnOnce() -> (String, Instant) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || loop {
        if let Err(e) = call() {
            let _ = tx.send((format!("{e:#}"), Instant::now()));
            return;
        }
    });
    let what = what.to_string();
    move || {
        rx.recv_timeout(EVENT_LIMIT).unwrap_or_else(|_| {
            panic!("{what}: no error at the client {EVENT_LIMIT:?} after its service was killed")
        })
    }
}

fn exe() -> &'static Path {
    Path::new(Bin::Msgbench.path())
}

/// Starts `msgbench broker-peer ARGS` meeting in `ns` over `transport`.
fn peer(what: &str, args: &[&str], transport: &str, ns: &Path) -> Peer {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend([
        "-t".into(),
        transport.into(),
        "--ns".into(),
        ns.display().to_string(),
    ]);
    Peer::start_with(exe(), "broker-peer", what, &a).unwrap_or_else(|e| panic!("{what}: {e:#}"))
}

fn opts() -> Options {
    Options {
        wait: Some(Duration::from_secs(5)),
        ..Options::default()
    }
}

/// A client in this process calling service `dest` through the broker.
fn via_broker(ns: &Namespace, transport: &str, index: u32, dest: u32) -> MsgpassCaller {
    MsgpassCaller::connect(ns, ENDPOINT, transport, index, dest, &opts()).expect("reach the broker")
}

/// Processes whose command line mentions `needle`.
fn processes_mentioning(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(needle) {
            out.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
        }
    }
    out
}

#[test]
fn several_clients_each_get_their_own_replies_through_the_broker() {
    let dir = TestDir::new("broker-clients");
    let mut cmd = Bin::Msgbench.cmd([
        "broker",
        "--via",
        "direct,broker,broker-validate",
        "-t",
        "uds,shm",
        "--clients",
        "3",
        "--ints",
        "1,4096",
        "-r",
        "1",
        "--seconds",
        "0.2",
    ]);
    cmd.env("MSGBENCH_NS", dir.ns());
    let out = run_cmd("msgbench broker", cmd);
    out.assert_ok();
    for via in ["direct/uds", "broker/shm", "broker-validate/uds"] {
        assert!(out.stdout.contains(via), "{via} row missing: {out}");
    }
    assert!(!out.stdout.contains("FAILED"), "{out}");
    assert!(out.stdout.contains("Where a call's time goes"), "{out}");
    assert!(
        out.stdout
            .contains("Goal, broker within 2.2x of direct over uds"),
        "{out}"
    );
    // The study's arithmetic, at each size: a table and a sentence.
    for n in [1, 4096] {
        let title = format!("The study's arithmetic, GetInteger({n}): shm against uds");
        assert!(out.stdout.contains(&title), "{title:?}: {out}");
        let said = format!(
            "The study's arithmetic, GetInteger({n}), the same call over local sockets (uds) \
             and over a native transport (shm): shm "
        );
        let line = out
            .stdout
            .lines()
            .find(|l| l.starts_with(&said))
            .unwrap_or_else(|| panic!("{said:?}: {out}"));
        assert!(
            line.ends_with(
                "The study: 147 us x 4 = 588 us expected, 462 us measured \
                 (79%, 157% of two round trips)."
            ),
            "{line}"
        );
    }
    dir.assert_ns_clean();
    assert!(processes_mentioning(&dir.path().display().to_string()).is_empty());
}

/// A broker over `transport` in `ns` with service 0 hanging after
/// `hang_after` calls and service 1 answering, both attached to it.
fn broker_with_a_hung_service(
    transport: &str,
    ns: &Path,
    hang_after: &str,
    route: &[&str],
) -> (Peer, Peer, Peer) {
    let broker = peer("broker", route, transport, ns);
    let hung = peer(
        "hung service",
        &[
            "service",
            "--index",
            "0",
            "--via-broker",
            "--hang-after",
            hang_after,
        ],
        transport,
        ns,
    );
    let good = peer(
        "service 1",
        &["service", "--index", "1", "--via-broker"],
        transport,
        ns,
    );
    (broker, hung, good)
}

fn stats_of(mut broker: Peer) -> RouterStats {
    broker
        .stop(Duration::from_secs(3))
        .expect("the broker stops cleanly");
    serde_json::from_str(&broker.line(Duration::from_secs(3)).expect("stats")).expect("json")
}

#[test]
fn a_service_killed_mid_call_fails_its_client_and_the_broker_goes_on() {
    let _serial = serial();
    for transport in ["uds", "shm"] {
        let dir = TestDir::new("broker-kill-service");
        let ns_path = dir.ns();
        std::fs::create_dir(&ns_path).expect("ns");
        let ns = Namespace::open(&ns_path).expect("ns");
        let route = ["route", "--services", "2"];
        let (broker, mut hung, mut good) =
            broker_with_a_hung_service(transport, &ns_path, "0", &route);
        let a = via_broker(&ns, transport, 0, 0);
        let mut b = via_broker(&ns, transport, 1, 1);
        b.get_integer(256).expect("service 1 answers");
        // One call, held by the hung service: it may only end in an error.
        let mut once = Some(a);
        let failed = first_error(transport, move || match once.take() {
            Some(mut a) => a.get_integer(1).map(|_| ()),
            None => Err(anyhow::anyhow!("the killed service's call succeeded")),
        });
        std::thread::sleep(Duration::from_millis(300)); // the call is in the hung service
        let killed = Instant::now();
        // SAFETY: kill() on a child we started and have not reaped.
        assert_eq!(unsafe { libc::kill(hung.pid(), libc::SIGKILL) }, 0);
        let (err, failed_at) = failed();
        eprintln!(
            "{transport}: error {:?} after the kill: {err}",
            failed_at.saturating_duration_since(killed)
        );
        assert!(
            err.contains("113") || err.contains("unreachable"),
            "{transport}: {err}"
        );
        for _ in 0..100 {
            b.get_integer(4096).expect("the broker serves the others");
        }
        drop(b);
        let _ = hung.stop(Duration::from_secs(1));
        let stats = stats_of(broker);
        assert_eq!(
            (stats.routed, stats.refused),
            (101, 1),
            "{transport}: {stats:?}"
        );
        good.stop(Duration::from_secs(3)).expect("service 1 stops");
        dir.assert_ns_clean();
    }
}

#[test]
fn a_hung_service_times_its_callers_out_while_the_others_are_served() {
    let _serial = serial();
    for transport in ["uds", "shm"] {
        let dir = TestDir::new("broker-hung-service");
        let ns_path = dir.ns();
        std::fs::create_dir(&ns_path).expect("ns");
        let ns = Namespace::open(&ns_path).expect("ns");
        let route = ["route", "--services", "2", "--call-timeout-ms", "200"];
        let (broker, mut hung, mut good) =
            broker_with_a_hung_service(transport, &ns_path, "3", &route);
        let mut a = via_broker(&ns, transport, 0, 0);
        for _ in 0..3 {
            a.get_integer(1).expect("service 0 answers before it hangs");
        }
        // Three calls to the hung service at once from three connections:
        // each is answered ETIMEDOUT near its deadline, none waits for the
        // others.
        let callers: Vec<_> = (0..3)
            .map(|i| {
                let ns = ns.clone();
                let transport = transport.to_string();
                std::thread::spawn(move || {
                    let mut c = via_broker(&ns, &transport, 10 + i, 0);
                    let t0 = Instant::now();
                    let r = c.get_integer(1);
                    (r, t0.elapsed())
                })
            })
            .collect();
        let mut b = via_broker(&ns, transport, 1, 1);
        for _ in 0..200 {
            b.get_integer(256)
                .expect("the other service is served meanwhile");
        }
        for c in callers {
            let (r, took) = c.join().expect("caller");
            let e = r.expect_err("a call to the hung service times out");
            assert!(
                msgbench::suites::broker::client::timed_out(&e),
                "{transport}: {e:#}"
            );
            assert!(
                took >= Duration::from_millis(190) && took < Duration::from_secs(3),
                "{transport}: timed out after {took:?}"
            );
        }
        // The same connection calls again: its service still hangs, so
        // ETIMEDOUT again, never another call's reply.
        let e = a.get_integer(1).expect_err("still hung");
        assert!(msgbench::suites::broker::client::timed_out(&e), "{e:#}");
        drop((a, b));
        let _ = hung.stop(Duration::from_secs(1));
        let stats = stats_of(broker);
        assert_eq!(
            (stats.routed, stats.timed_out),
            (203, 4),
            "{transport}: {stats:?}"
        );
        assert!(stats.most_in_flight >= 4, "{transport}: {stats:?}");
        good.stop(Duration::from_secs(3)).expect("service 1 stops");
        dir.assert_ns_clean();
    }
}

#[test]
fn the_command_shows_a_hung_service_beside_its_twin_run() {
    let dir = TestDir::new("broker-fault");
    let mut cmd = Bin::Msgbench.cmd([
        "broker",
        "--via",
        "direct,broker",
        "-t",
        "uds",
        "--inject-fault",
        "hang-service",
        "--call-timeout",
        "100ms",
        "--ints",
        "1",
        "-r",
        "1",
        "--seconds",
        "0.5",
        "--json",
    ]);
    let json = dir.path().join("out.json");
    cmd.arg(&json);
    cmd.env("MSGBENCH_NS", dir.ns());
    let out = run_cmd("msgbench broker --inject-fault", cmd);
    out.assert_ok();
    assert!(out.stdout.contains("broker/uds + hang-service"), "{out}");
    assert!(out.stdout.contains("Beside a hung service"), "{out}");
    assert!(
        out.stdout.contains("The other 2 client(s) carried on"),
        "{out}"
    );
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("parse");
    let rows = v["rows"].as_array().expect("rows");
    let hung = rows
        .iter()
        .find(|r| r["fault"] == "hang-service")
        .expect("a fault row");
    let calm = rows
        .iter()
        .find(|r| r["via"] == "broker" && r["fault"].is_null())
        .expect("its twin");
    assert!(hung["timeouts"].as_u64().unwrap() >= 2, "{hung}");
    assert_eq!(calm["timeouts"], 0, "{calm}");
    assert_eq!(hung["call_timeout_ms"], 100);
    assert!(hung["others_latency"]["p99_ns"].as_f64().unwrap() > 0.0);
    dir.assert_ns_clean();
    assert!(processes_mentioning(&dir.path().display().to_string()).is_empty());
}

#[test]
fn a_client_killed_mid_call_stops_neither_the_broker_nor_the_service() {
    let _serial = serial();
    let dir = TestDir::new("broker-kill-client");
    let ns_path = dir.ns();
    std::fs::create_dir(&ns_path).expect("ns");
    let ns = Namespace::open(&ns_path).expect("ns");
    for transport in ["uds", "shm"] {
        let mut broker = peer("broker", &["route", "--services", "1"], transport, &ns_path);
        let mut service = peer(
            "service",
            &["service", "--index", "0", "--via-broker"],
            transport,
            &ns_path,
        );
        let mut victim = peer(
            "client",
            &[
                "client",
                "--index",
                "5",
                "--destination",
                "0",
                "--ints",
                "4096",
                "--seconds",
                "30",
                "--via-broker",
            ],
            transport,
            &ns_path,
        );
        victim
            .expect("ready", Duration::from_secs(10))
            .expect("ready");
        victim.send("go").expect("go");
        std::thread::sleep(Duration::from_millis(200)); // calling back to back
                                                        // SAFETY: kill() on a child we started and have not reaped.
        assert_eq!(unsafe { libc::kill(victim.pid(), libc::SIGKILL) }, 0);
        let _ = victim.stop(Duration::from_secs(1));
        let mut other = via_broker(&ns, transport, 1, 0);
        for _ in 0..100 {
            other
                .get_integer(256)
                .expect("the broker and the service go on");
        }
        drop(other);
        broker
            .stop(Duration::from_secs(3))
            .expect("the broker stops cleanly");
        service
            .stop(Duration::from_secs(3))
            .expect("the service stops cleanly");
    }
    dir.assert_ns_clean();
}

#[test]
fn bad_options_are_one_line_errors() {
    // Refused by clap's value parsers: usage errors, exit 2, one line.
    for (args, needle) in [
        (&["broker", "--via", "nope"][..], "--via nope: "),
        (&["broker", "--ints", "99999"], "--ints 99999: "),
        (&["broker", "--clients", "0"], "--clients 0: "),
        (
            &["broker", "-t", "carrier-pigeon"],
            "--transport carrier-pigeon: ",
        ),
        (&["broker", "--dbus-lib", "gdbus"], "--dbus-lib gdbus: "),
        (&["broker", "--seconds", "-1"], "--seconds -1: "),
        (&["broker", "-r", "0"], "--repeats 0: "),
        (&["broker", "--cpus", "x"], "--cpus x: "),
    ] {
        let line = run(Bin::Msgbench, args).assert_one_line_error(2);
        assert!(
            line.starts_with(&format!("msgbench: error: {needle}")),
            "{args:?}: {line}"
        );
    }
}

#[test]
fn ctrl_c_stops_the_run_and_leaves_nothing_behind() {
    let dir = TestDir::new("broker-sigint");
    let mut cmd = Bin::Msgbench.cmd(["broker", "--quick", "--seconds", "2"]);
    cmd.env("MSGBENCH_NS", dir.ns());
    let mut p = Proc::spawn("msgbench broker", cmd);
    std::thread::sleep(Duration::from_millis(1500));
    p.signal(libc::SIGINT);
    let out = p.wait_within(Duration::from_secs(15), "exit after SIGINT");
    assert_eq!(out.code(), 1, "{out}");
    assert!(out.stderr.contains("interrupted"), "{out}");
    dir.assert_ns_clean();
    let left = processes_mentioning(&dir.path().display().to_string());
    assert!(left.is_empty(), "left running: {left:?}");
}

/// Why the D-Bus arrangements cannot all run here on every library, if
/// they cannot.
fn dbus_missing() -> Option<String> {
    use msgbench::suites::broker::dbus::{DaemonKind, DbusLib};
    let mut why: Vec<String> = [DaemonKind::DbusDaemon, DaemonKind::DbusBroker]
        .into_iter()
        .filter_map(|k| k.available().err().map(|e| e.to_string()))
        .collect();
    why.extend(
        DbusLib::ALL
            .into_iter()
            .filter_map(|l| l.available().err().map(|e| e.to_string())),
    );
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        why.push(
            "dbus-broker's private bus needs root (a mount namespace for its journal socket)"
                .into(),
        );
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Every D-Bus component's version, read from the machine: printed above
/// the tables (`stdout`) and kept in the envelope at `json`.
fn components_recorded(stdout: &str, json: &Path) {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(json).expect("json")).expect("parse");
    for c in [
        "dbus_daemon",
        "dbus_broker",
        "libdbus",
        "libsystemd",
        "zbus",
    ] {
        assert!(
            v["settings"]["components"][c].is_string(),
            "{c} recorded: {}",
            v["settings"]
        );
    }
    // Every component's version, read from the machine, above the tables.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("D-Bus components: "))
        .unwrap_or_else(|| panic!("no D-Bus components line: {stdout}"));
    let daemon = std::process::Command::new("dbus-daemon")
        .arg("--version")
        .output()
        .expect("dbus-daemon --version");
    let first = String::from_utf8_lossy(&daemon.stdout);
    let version = first
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().last())
        .expect("a version");
    assert!(
        line.starts_with(&format!(
            "D-Bus components: dbus-daemon {version}, dbus-broker "
        )),
        "{line}"
    );
    assert!(!line.contains("unknown"), "every version read: {line}");
}

#[test]
fn every_arrangement_runs_with_real_daemons_and_leaves_nothing_behind() {
    if let Some(why) = dbus_missing() {
        skip(&why);
        return;
    }
    let dir = TestDir::new("broker-all");
    let mut cmd = Bin::Msgbench.cmd([
        "broker",
        "--quick",
        "-t",
        "uds",
        "--dbus-lib",
        "all",
        "--clients",
        "2",
        "--ints",
        "1,256",
        "--seconds",
        "0.2",
    ]);
    cmd.env("MSGBENCH_NS", dir.ns());
    let json = dir.path().join("all.json");
    cmd.arg("--json").arg(&json);
    let out = run_cmd("msgbench broker", cmd);
    out.assert_ok();
    components_recorded(&out.stdout, &json);
    for lib in ["libdbus", "sd-bus", "zbus"] {
        for via in ["dbus-p2p", "dbus-daemon", "dbus-broker"] {
            let row = format!("{via}/{lib}");
            assert!(out.stdout.contains(&row), "{row} row missing: {out}");
        }
        for n in [1, 256] {
            let who = if lib == "libdbus" {
                "libdbus (the study's library)".to_string()
            } else {
                lib.to_string()
            };
            let s = format!("GetInteger({n}), {who}: dbus-daemon takes");
            assert!(out.stdout.contains(&s), "no `{s}`: {out}");
        }
    }
    assert!(out.stdout.contains("broker-validate/uds"), "{out}");
    assert!(!out.stdout.contains("skipped"), "{out}");
    assert!(!out.stdout.contains("FAILED"), "{out}");
    assert!(
        out.stdout.contains("16212 us (QNX dbus-daemon, 1 KB)"),
        "{out}"
    );
    assert!(
        out.stdout.contains("(the study on QNX 6.4: 16212 us), "),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("GetInteger(1), libdbus: dbus-daemon adds"),
        "{out}"
    );
    assert!(
        out.stdout
            .contains("GetInteger(256), libdbus: dbus-daemon adds"),
        "{out}"
    );
    assert!(
        out.stdout.contains("at least 5x faster than dbus-daemon"),
        "{out}"
    );
    dir.assert_ns_clean();
    let left = processes_mentioning(&dir.path().display().to_string());
    assert!(left.is_empty(), "left running: {left:?}");
}

#[test]
fn a_connection_cannot_answer_calls_it_was_not_handed() {
    use msgbench::suites::broker::proto::{write_result_header, RESULT};
    let _serial = serial();
    let dir = TestDir::new("broker-forged-result");
    let ns_path = dir.ns();
    std::fs::create_dir(&ns_path).expect("ns");
    let ns = Namespace::open(&ns_path).expect("ns");
    let transport = "uds";
    let route = ["route", "--services", "2"];
    // Service 0 holds its first call, so the token stays in flight while
    // the forger guesses.
    let (broker, mut hung, mut good) = broker_with_a_hung_service(transport, &ns_path, "0", &route);
    let caller = {
        let ns = ns.clone();
        std::thread::spawn(move || via_broker(&ns, transport, 0, 0).get_integer(1))
    };
    std::thread::sleep(Duration::from_millis(300));
    let t = msgpass::transport::by_name(transport).expect("uds");
    let mut forger =
        msgpass::Connection::open(&ns, ENDPOINT, &*t, &opts()).expect("reach the broker");
    let mut msg = Vec::new();
    let mut reply = vec![0u8; forger.max_msg()];
    for guess in (0..2000u64).chain([u64::MAX, 1 << 32]) {
        write_result_header(&mut msg, guess, 0);
        msg.extend_from_slice(&[0; 16]);
        match forger.call(RESULT, &msg, &mut reply) {
            Err(msgpass::Error::Remote { code }) => assert_eq!(code, libc::EPROTO),
            other => panic!("a forged result for token {guess} was taken: {other:?}"),
        }
    }
    let _ = hung.stop(Duration::from_secs(1));
    let err = caller
        .join()
        .expect("caller")
        .expect_err("its service died");
    assert!(!format!("{err:#}").contains("wrong reply"), "{err:#}");
    let mut b = via_broker(&ns, transport, 1, 1);
    b.get_integer(16).expect("the broker still routes");
    drop((b, forger));
    let stats = stats_of(broker);
    assert_eq!(stats.routed, 1, "{stats:?}");
    good.stop(Duration::from_secs(3)).expect("service 1 stops");
}

/// The pids whose parent is `parent`.
fn children_of(parent: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        let ppid = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
            .and_then(|s| s.parse::<u32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}

#[test]
fn ctrl_c_during_the_daemons_leaves_no_daemon_behind() {
    if let Some(why) = dbus_missing() {
        skip(&why);
        return;
    }
    let dir = TestDir::new("broker-dbus-sigint");
    let mut cmd = Bin::Msgbench.cmd([
        "broker",
        "--quick",
        "--via",
        "dbus-broker,dbus-daemon",
        "--dbus-lib",
        "all",
        "--seconds",
        "1",
    ]);
    cmd.env("MSGBENCH_NS", dir.ns());
    let mut p = Proc::spawn("msgbench broker", cmd);
    // Wait until a dbus-broker bus of the run is up (its launcher names
    // the run's directory; the broker is the launcher's child), then
    // interrupt mid-measurement.
    let needle = dir.path().display().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    let seen: Vec<u32> = loop {
        let launchers: Vec<u32> = processes_mentioning(&needle)
            .iter()
            .filter(|l| l.contains("dbus-broker-launch"))
            .filter_map(|l| l.split(':').next()?.parse().ok())
            .collect();
        let mut all = launchers.clone();
        all.extend(launchers.iter().flat_map(|&l| children_of(l)));
        if all.len() > launchers.len() {
            break all;
        }
        assert!(Instant::now() < deadline, "no dbus-broker of the run seen");
        std::thread::sleep(Duration::from_millis(20));
    };
    std::thread::sleep(Duration::from_millis(400));
    let services: Vec<u32> = processes_mentioning(&needle)
        .iter()
        .filter_map(|l| l.split(':').next()?.parse().ok())
        .collect();
    p.signal(libc::SIGINT);
    let out = p.wait_within(Duration::from_secs(15), "exit after SIGINT");
    assert_eq!(out.code(), 1, "{out}");
    assert!(out.stderr.contains("interrupted"), "{out}");
    dir.assert_ns_clean();
    let left = processes_mentioning(&needle);
    assert!(left.is_empty(), "left running: {left:?}");
    for pid in seen.iter().chain(&services) {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} of the run is still there (running or unreaped)"
        );
    }
}

/// Kills D-Bus service 0 (a `msgbench broker-peer service` on `lib` at
/// `reach`) while a client calls it back to back; returns how long the
/// client took to see an error, and the error.
fn kill_dbus_service(lib: DbusLib, target: &Target, reach: &[String]) -> (Duration, String) {
    let mut a: Vec<String> = ["service", "--index", "0", "--dbus-lib", lib.name()]
        .map(String::from)
        .to_vec();
    a.extend_from_slice(reach);
    let mut svc = Peer::start_with(exe(), "broker-peer", "service 0", &a).expect("service 0");
    let mut client = lib.connect(target, 0).expect("reach service 0");
    client.get_integer(256).expect("service 0 answers");
    let failed = first_error(lib.name(), move || client.get_integer(4096).map(|_| ()));
    std::thread::sleep(Duration::from_millis(300));
    let killed = Instant::now();
    // SAFETY: kill() on a child we started and have not reaped.
    assert_eq!(unsafe { libc::kill(svc.pid(), libc::SIGKILL) }, 0);
    let (err, failed_at) = failed();
    let _ = svc.stop(Duration::from_secs(1));
    (failed_at.saturating_duration_since(killed), err)
}

#[test]
fn a_dbus_service_killed_mid_call_fails_its_client_on_every_library() {
    use msgbench::suites::broker::dbus::DaemonKind;
    if let Some(why) = dbus_missing() {
        skip(&why);
        return;
    }
    let _serial = serial();
    let dir = TestDir::new("broker-dbus-kill");
    for lib in DbusLib::ALL {
        let sock = dir.file(&format!("{}.sock", lib.name()));
        let reach = ["--dbus-p2p".to_string(), sock.display().to_string()];
        let (took, err) = kill_dbus_service(lib, &Target::P2p(sock.clone()), &reach);
        eprintln!("p2p {}: error after {took:?}: {err}", lib.name());
    }
    for kind in DaemonKind::ALL {
        let sub = dir.file(kind.name());
        std::fs::create_dir(&sub).expect("bus dir");
        let bus = PrivateBus::start(kind, &sub).expect("start the bus");
        let pids = bus.pids();
        let target = Target::Bus(bus.address().to_string());
        let reach = ["--dbus-bus".to_string(), bus.address().to_string()];
        for lib in DbusLib::ALL {
            let what = format!("{} with {}", kind.name(), lib.name());
            let (took, err) = kill_dbus_service(lib, &target, &reach);
            eprintln!("{what}: error after {took:?}: {err}");
            assert!(
                err.contains("NoReply") || err.contains("ServiceUnknown"),
                "{what}: {err}"
            );
            // The daemon goes on serving: service 1 answers another client.
            let mut a: Vec<String> = ["service", "--index", "1", "--dbus-lib", lib.name()]
                .map(String::from)
                .to_vec();
            a.extend_from_slice(&reach);
            let mut other =
                Peer::start_with(exe(), "broker-peer", "service 1", &a).expect("service 1");
            let mut b = lib.connect(&target, 1).expect("reach service 1");
            for _ in 0..100 {
                b.get_integer(256)
                    .unwrap_or_else(|e| panic!("{what}: {e:#}"));
            }
            drop(b);
            other
                .stop(Duration::from_secs(3))
                .unwrap_or_else(|e| panic!("{what}: service 1 stops cleanly: {e:#}"));
        }
        bus.stop().expect("a clean stop");
        for pid in pids {
            assert!(!Path::new(&format!("/proc/{pid}")).exists(), "{pid} left");
        }
    }
    let left = processes_mentioning(&dir.path().display().to_string());
    assert!(left.is_empty(), "left running: {left:?}");
}
