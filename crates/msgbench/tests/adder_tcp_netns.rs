//! The adder across hosts over TCP (`dev-adder -t tcp --listen`,
//! `client-adder -t tcp --connect`), QNX network-transparent style.
//!
//! The cross-host test builds two network namespaces joined by a veth pair
//! (addresses 10.200.7.1/24 and 10.200.7.2/24 on the veth ends, inside the
//! namespaces only: `common::netns`), runs `dev-adder` in one and
//! `client-adder` in the other, and removes both namespaces in a `Drop`
//! guard whatever happens.
//! It needs root and iproute2: without them it prints `skipped: <reason>`
//! and passes, unless the `CI` environment variable is set, where a skip is
//! a failure. The option checks and a loopback run need neither.

mod common;

use std::time::Duration;

use common::netns::{cannot_run, Netns, SERVER_IP};
use common::*;

/// First adder port (instance k on PORT + k).
const PORT: u16 = 7100;

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn adder_between_network_namespaces() {
    if let Some(reason) = cannot_run() {
        return skip(&reason);
    }
    let net = match Netns::create("a") {
        Ok(n) => n,
        Err(reason) => return skip(&reason),
    };
    let dir = TestDir::new("netns");
    let listen = format!("{SERVER_IP}:{PORT}");
    let ns = dir.ns().display().to_string();
    let start_server = || {
        let args = strings(&["-t", "tcp", "--listen", &listen, "-n", "2"]);
        let mut p = Proc::spawn("dev-adder", Netns::exec(&net.server, Bin::DevAdder, &args));
        let out = p.wait_stdout("dev-adder: serving");
        assert!(
            out.contains(&format!(
                "serving adder/0..adder/1 on {listen}..{} over tcp",
                PORT + 1
            )),
            "banner: {out}"
        );
        p
    };
    let client = |extra: &[&str]| {
        let mut args = strings(&["-t", "tcp", "--connect", &listen, "--ns", &ns]);
        args.extend(strings(extra));
        Netns::exec(&net.client, Bin::ClientAdder, &args)
    };

    // Two client threads in one namespace, each talking to its own server
    // instance in the other, across the veth pair.
    let mut server = start_server();
    let o = run_cmd(
        "client-adder",
        client(&["-n", "2", "-S", "5000", "--wait", "10"]),
    );
    o.assert_ok();
    assert_eq!(
        o.stdout.matches("Thread duration:").count(),
        2,
        "two threads: {o}"
    );

    // No instance 2: a clear one-line error naming the address.
    let o = run_cmd("client-adder", client(&["-n", "3", "-S", "100"]));
    let line = o.assert_one_line_error(1);
    assert!(
        line.contains(&format!("no server at tcp://{SERVER_IP}:{}", PORT + 2)),
        "{line}"
    );
    assert!(line.contains("dev-adder -t tcp --listen"), "{line}");

    // SIGTERM stops the server cleanly.
    server.signal(libc::SIGTERM);
    let o = server.wait_within(Duration::from_secs(10), "SIGTERM");
    assert_eq!(o.code(), 0, "dev-adder must exit 0 on SIGTERM: {o}");

    // A server killed mid-run: the client on the other "host" hears it.
    let mut server = start_server();
    let mut c = Proc::spawn(
        "client-adder",
        client(&["-n", "1", "-S", "4000000000", "--no-timestamps"]),
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        c.is_running(),
        "the long client ended early: {}",
        c.stderr()
    );
    server.signal(libc::SIGKILL);
    let o = c.wait_within(Duration::from_secs(10), "its server was killed");
    let line = o.assert_one_line_error(1);
    assert!(line.contains("went away"), "{line}");
    drop(server);
    dir.assert_ns_clean();
    drop(net);
}

#[test]
fn listen_and_connect_need_tcp() {
    let dir = TestDir::new("tcpopt");
    for (bin, args, want) in [
        (
            Bin::ClientAdder,
            &["-t", "uds", "--connect", "127.0.0.1:7000"][..],
            "--connect 127.0.0.1:7000: only works with -t tcp",
        ),
        (
            Bin::DevAdder,
            &["--listen", "127.0.0.1:7000"][..],
            "--listen 127.0.0.1:7000: only works with -t tcp",
        ),
        (
            Bin::ClientAdder,
            &["-t", "tcp", "--connect", "no-port-here"][..],
            "--connect no-port-here: expected ADDR:PORT",
        ),
        (
            Bin::DevAdder,
            &["-t", "tcp", "--listen", "127.0.0.1:65535", "-n", "2"][..],
            "--listen 127.0.0.1:65535: instance 1 would need port 65536",
        ),
    ] {
        let mut a = strings(args);
        a.extend(dir.ns_args());
        let o = run(bin, &a);
        let line = o.assert_one_line_error(1);
        let prefix = format!("{}: error: ", bin.name());
        assert!(
            line.starts_with(&format!("{prefix}{want}")),
            "{args:?}: {line}"
        );
        assert!(!dir.ns().exists(), "{args:?}: namespace created");
    }
}

#[test]
fn adder_over_tcp_on_loopback() {
    let port = unused_port();
    let addr = format!("127.0.0.1:{port}");
    let dir = TestDir::new("tcplo");
    let mut server = Proc::start(Bin::DevAdder, ["-t", "tcp", "--listen", &addr]);
    // Its ready line: the port is bound (a server that could not bind it,
    // taken meanwhile by someone else, exits and says so here).
    server.wait_stdout(&format!("on {addr} over tcp"));
    let mut a = strings(&[
        "-t",
        "tcp",
        "--connect",
        &addr,
        "-S",
        "2000",
        "--wait",
        "10",
    ]);
    a.extend(dir.ns_args());
    let o = run(Bin::ClientAdder, &a);
    assert!(
        o.code() == 0 && o.stdout.contains("Thread duration:"),
        "{o}\nthe server so far: {}{}",
        server.stdout(),
        server.stderr()
    );
    server.signal(libc::SIGINT);
    let o = server.wait_within(Duration::from_secs(10), "SIGINT");
    assert_eq!(o.code(), 0, "{o}");
}
