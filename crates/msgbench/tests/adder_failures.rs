//! `dev-adder` and `client-adder` when things go wrong: a server killed
//! mid-run, a client killed mid-run, signals, stale and live endpoints.

mod common;

use std::time::{Duration, Instant};

use common::*;

/// Longest a dev-adder may take to stop on SIGINT/SIGTERM (generous: it
/// notices within one 100 ms tick).
const STOP: Duration = Duration::from_secs(5);

/// Starts a client doing a practically endless run and returns once its
/// worker threads exist (they are spawned after every connection is open,
/// so from then on it is in, or about to enter, its loop).
fn start_long_client(dir: &TestDir, n: u32, transport: &str) -> Proc {
    let mut a: Vec<String> = ["-S", "100000000", "-t", transport, "-n"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.push(n.to_string());
    a.extend(dir.ns_args());
    let mut cli = Proc::start(Bin::ClientAdder, a);
    let want = n as usize + 1;
    cli.wait_until("the client's worker threads", |p| p.threads() >= want);
    // Let it run for a while.
    std::thread::sleep(Duration::from_millis(300));
    assert!(cli.is_running(), "client stopped early: {}", cli.stderr());
    cli
}

/// Longest wait for a client to exit after its server was killed: a
/// liveness bound for a loaded 2-CPU machine (a blocked client polls its
/// server every 100 ms tick, so a client that never notices still fails),
/// not a speed; the time taken is printed.
const NOTICE: Duration = Duration::from_secs(10);

/// A client whose server is killed mid-run exits non-zero, naming the
/// endpoint.
fn server_killed_mid_run(transport: &str) {
    let _serial = serial();
    let dir = TestDir::new(&format!("srvkill-{transport}"));
    let mut srv = Server::start(&dir, &["-n1", "-t", transport]);
    let mut cli = start_long_client(&dir, 1, transport);

    let killed = Instant::now();
    srv.proc.signal(libc::SIGKILL);
    let seen = cli.wait_exit_within(NOTICE);
    let Some((_, at)) = seen else {
        panic!(
            "{transport}: client-adder still running {NOTICE:?} after its server was killed; stderr: {}",
            cli.stderr()
        );
    };
    let took = at - killed;
    eprintln!("{transport}: the client exited {took:?} after its server was killed");
    let o = cli.wait();
    let line = o.assert_one_line_error(1);
    assert!(
        line.contains("adder/0") && line.contains("went away"),
        "{transport}: the message must name the endpoint and say the server went away: {line}"
    );
    let so = srv.proc.wait();
    assert_eq!(so.status.code(), None, "server was SIGKILLed: {so}");
}

#[test]
fn server_killed_mid_run_shm() {
    server_killed_mid_run("shm");
}

#[test]
fn server_killed_mid_run_shm_spin() {
    server_killed_mid_run("shm-spin");
}

#[test]
fn server_killed_mid_run_shm_block() {
    server_killed_mid_run("shm-block");
}

#[test]
fn server_killed_mid_run_uds() {
    server_killed_mid_run("uds");
}

/// A client killed mid-run does not disturb the server: the same dev-adder
/// then serves a complete second run.
fn client_killed_mid_run(transport: &str) {
    let dir = TestDir::new(&format!("clikill-{transport}"));
    let mut srv = Server::start(&dir, &["-n2", "-t", transport]);
    let mut c1 = start_long_client(&dir, 2, transport);
    c1.signal(libc::SIGKILL);
    let o = c1.wait();
    assert_eq!(o.status.code(), None, "client was SIGKILLed: {o}");

    let o = client(&dir, &["-n2", "-S", "5000", "-t", transport]);
    o.assert_ok();
    assert_eq!(
        o.stdout.matches("Thread duration: ").count(),
        2,
        "second run: {o}"
    );
    assert!(srv.proc.is_running(), "server died: {}", srv.proc.stderr());
    assert!(
        srv.proc.stderr().is_empty(),
        "server complained: {}",
        srv.proc.stderr()
    );
    srv.stop(libc::SIGINT, STOP);
    dir.assert_ns_clean();
}

#[test]
fn client_killed_mid_run_shm() {
    client_killed_mid_run("shm");
}

#[test]
fn client_killed_mid_run_shm_spin() {
    client_killed_mid_run("shm-spin");
}

#[test]
fn client_killed_mid_run_shm_block() {
    client_killed_mid_run("shm-block");
}

#[test]
fn client_killed_mid_run_uds() {
    client_killed_mid_run("uds");
}

/// SIGINT/SIGTERM: exit 0, endpoints, locks and adder/ removed.
fn signal_cleanup(sig: i32, transport: &str) {
    let dir = TestDir::new(&format!("sig{sig}-{transport}"));
    let srv = Server::start(&dir, &["-n3", "-t", transport]);
    let tree = list_tree(&dir.ns());
    for k in 0..3 {
        for f in [format!("adder/{k}"), format!("adder/{k}.lock")] {
            assert!(tree.contains(&f), "missing {f}: {tree:?}");
        }
    }
    // Serve a run first, so connections have come and gone.
    client(&dir, &["-n3", "-S", "1000", "-t", transport]).assert_ok();
    let o = srv.stop(sig, STOP);
    assert!(o.stderr.is_empty(), "{o}");
    dir.assert_ns_clean();
}

#[test]
fn sigint_cleans_up_shm() {
    signal_cleanup(libc::SIGINT, "shm");
}

#[test]
fn sigint_cleans_up_uds() {
    signal_cleanup(libc::SIGINT, "uds");
}

#[test]
fn sigterm_cleans_up_shm_block() {
    signal_cleanup(libc::SIGTERM, "shm-block");
}

#[test]
fn sigterm_cleans_up_shm_spin() {
    signal_cleanup(libc::SIGTERM, "shm-spin");
}

/// A server stopped by SIGINT while a client is mid-run exits 0 and cleans
/// up; the client fails with a clear message.
fn sigint_with_busy_client(transport: &str) {
    let dir = TestDir::new(&format!("sigbusy-{transport}"));
    let srv = Server::start(&dir, &["-n1", "-t", transport]);
    let mut cli = start_long_client(&dir, 1, transport);
    srv.stop(libc::SIGINT, STOP);
    dir.assert_ns_clean();
    let o = cli.wait();
    let line = o.assert_one_line_error(1);
    assert!(line.contains("went away"), "{line}");
}

#[test]
fn sigint_with_busy_client_shm() {
    sigint_with_busy_client("shm");
}

#[test]
fn sigint_with_busy_client_uds() {
    sigint_with_busy_client("uds");
}

#[test]
fn stale_endpoint_is_replaced() {
    let dir = TestDir::new("stale");
    let mut first = Server::start(&dir, &["-n1"]);
    first.proc.signal(libc::SIGKILL);
    first.proc.wait();
    let tree = list_tree(&dir.ns());
    assert!(
        tree.contains(&"adder/0".to_string()) && tree.contains(&"adder/0.lock".to_string()),
        "a SIGKILLed server leaves its endpoint behind: {tree:?}"
    );

    let mut second = Server::start(&dir, &["-n1"]);
    let err = second.proc.wait_stderr("replaced a stale endpoint");
    assert!(
        err.contains(&dir.ns().join("adder/0").display().to_string()),
        "{err}"
    );
    client(&dir, &["-S", "1000"]).assert_ok();
    second.stop(libc::SIGINT, STOP);
    dir.assert_ns_clean();
}

#[test]
fn live_endpoint_is_never_stolen() {
    let dir = TestDir::new("live");
    let srv = Server::start(&dir, &["-n1", "-i5", "-t", "uds"]);
    let before = list_tree(&dir.ns());

    // Overlapping range 4..6: adder/4 is claimed, adder/5 is live.
    let mut a: Vec<String> = ["-n3", "-i4", "-t", "uds"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.extend(dir.ns_args());
    let o = run(Bin::DevAdder, &a);
    let line = o.assert_one_line_error(1);
    assert!(
        line.contains(&format!("already served by pid {}", srv.proc.pid())),
        "must name the live server's pid {}: {line}",
        srv.proc.pid()
    );
    assert!(
        line.contains(&dir.ns().join("adder/5").display().to_string()),
        "{line}"
    );
    assert!(o.stdout.is_empty(), "it must not claim to serve: {o}");
    assert_eq!(
        list_tree(&dir.ns()),
        before,
        "the refused server must leave nothing behind"
    );

    // The live server still serves.
    client(&dir, &["-i5", "-S", "1000", "-t", "uds"]).assert_ok();
    srv.stop(libc::SIGINT, STOP);
    dir.assert_ns_clean();
}

#[test]
fn wrong_transport_client_does_not_disturb_the_server() {
    let dir = TestDir::new("robust");
    let mut srv = Server::start(&dir, &["-n1", "-t", "shm-block"]);
    let o = client(&dir, &["-S", "1000", "-t", "uds"]);
    assert_eq!(o.code(), 1, "{o}");
    client(&dir, &["-S", "1000", "-t", "shm-block"]).assert_ok();
    assert!(srv.proc.is_running());
    srv.stop(libc::SIGINT, STOP);
    dir.assert_ns_clean();
}

/// Anything but ADDER_INCREMENT with a u32 gets an error reply
/// (ENOTTY for an unknown command), never a crash; the adder wraps at
/// u32::MAX. Talks to the real dev-adder through the msgpass library.
fn odd_requests(transport: &str) {
    use msgbench::devctl::{endpoint, ADDER_INCREMENT};
    use msgpass::{Connection, Error, Namespace};

    let dir = TestDir::new(&format!("odd-{transport}"));
    let mut srv = Server::start(&dir, &["-n1", "-i2", "-t", transport]);
    let ns = Namespace::open(dir.ns()).expect("open namespace");
    let t = msgpass::transport::by_name(transport).expect("transport");
    let mut c = Connection::open(&ns, &endpoint(2), &*t, &msgpass::Options::default())
        .expect("connect to dev-adder");
    let mut reply = [0u8; 16];
    let remote = |r: Result<usize, Error>| match r {
        Err(Error::Remote { code }) => code,
        other => panic!("expected an error reply, got {other:?}"),
    };
    assert_eq!(remote(c.call(0x1234, &[0; 4], &mut reply)), libc::ENOTTY);
    assert_eq!(remote(c.call(0, &[], &mut reply)), libc::ENOTTY);
    assert_eq!(
        remote(c.call(ADDER_INCREMENT, &[1, 2, 3], &mut reply)),
        libc::EINVAL
    );
    assert_eq!(
        remote(c.call(ADDER_INCREMENT, &[0; 8], &mut reply)),
        libc::EINVAL
    );
    for (v, want) in [(0u32, 1u32), (41, 42), (u32::MAX, 0)] {
        let n = c
            .call(ADDER_INCREMENT, &v.to_le_bytes(), &mut reply)
            .expect("increment");
        assert_eq!(n, 4);
        assert_eq!(
            u32::from_le_bytes([reply[0], reply[1], reply[2], reply[3]]),
            want
        );
    }
    drop(c);
    assert!(srv.proc.is_running(), "{}", srv.proc.stderr());
    client(&dir, &["-i2", "-S", "1000", "-t", transport]).assert_ok();
    srv.stop(libc::SIGINT, STOP);
    dir.assert_ns_clean();
}

#[test]
fn odd_requests_shm() {
    odd_requests("shm");
}

#[test]
fn odd_requests_uds() {
    odd_requests("uds");
}
