//! `msgbench serve` on one "host" and `msgbench adder|ipc --server` on
//! another: two network namespaces joined by a veth pair the tests make
//! and remove (`common::netns`; root and iproute2, else a printed skip,
//! a failure under CI). Real processes each side: the server's one ready
//! line, runs whose every reply the client checks (the adder's final
//! values are in the envelope), recorded in a private store with the
//! server in `settings.server`; clients without the token or with a wrong
//! one refused in one line (exit 1) while the server goes on serving the
//! right one; SIGTERM ending the server with exit 0 and its ports closed;
//! the namespaces gone at the end. On loopback (no root needed): the
//! option checks, a port in use, a token file, and a server of the
//! other suite.

mod common;

use std::process::Command;
use std::time::Duration;

use common::netns::{cannot_run, Netns, SERVER_IP};
use common::*;
use serde_json::Value;

/// The control port in the server's namespace.
const PORT: u16 = 7100;

/// How long a server may live in one test (several client runs).
const SERVER_LIMIT: Duration = Duration::from_secs(240);

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A started `msgbench serve` and what its ready line said.
struct Served {
    proc: Proc,
    ready: Value,
}

impl Served {
    /// Starts `cmd` (a `msgbench serve ...`) and reads its ready line: one
    /// line of JSON, the only thing on its standard output.
    fn start(cmd: Command) -> Served {
        let mut proc = Proc::spawn_for("msgbench serve", cmd, SERVER_LIMIT);
        let out = proc.wait_stdout("}\n");
        assert_eq!(out.lines().count(), 1, "one ready line: {out}");
        let ready: Value = serde_json::from_str(out.trim())
            .unwrap_or_else(|e| panic!("the ready line is not JSON ({e}): {out}"));
        assert_eq!(ready["ready"], true, "{ready}");
        let token = ready["token"].as_str().unwrap_or("");
        assert_eq!(token.len(), 32, "{ready}");
        Served { proc, ready }
    }

    fn token(&self) -> String {
        self.ready["token"].as_str().unwrap_or("").to_string()
    }

    /// SIGTERM: it must exit 0, within seconds, having said nothing more.
    fn stop(mut self) -> Output {
        self.proc.signal(libc::SIGTERM);
        let o = self.proc.wait_within(Duration::from_secs(10), "SIGTERM");
        assert_eq!(o.code(), 0, "msgbench serve must exit 0 on SIGTERM: {o}");
        assert!(o.stderr.is_empty(), "{o}");
        o
    }
}

/// A client command in the client's namespace, with `token` (if any) in
/// MSGBENCH_TOKEN and runs recorded in `store` (if any).
fn client(net: &Netns, args: &[&str], token: Option<&str>, store: Option<&str>) -> Command {
    let mut c = Netns::exec(&net.client, Bin::Msgbench, &strings(args));
    if let Some(t) = token {
        c.env("MSGBENCH_TOKEN", t);
    }
    if let Some(s) = store {
        c.env_remove("MSGBENCH_NO_STORE").env("MSGBENCH_STORE", s);
    }
    c
}

/// Clients without the token and with a wrong one: refused in one line,
/// exit 1.
fn refused_without_the_token(net: &Netns, suite_args: &[&str]) {
    let o = run_cmd("no token", client(net, suite_args, None, None));
    let line = o.assert_one_line_error(1);
    assert!(
        line.contains("the server asks for a token and none was given"),
        "{line}"
    );
    let wrong = "0123456789abcdef0123456789abcdef";
    let o = run_cmd("wrong token", client(net, suite_args, Some(wrong), None));
    let line = o.assert_one_line_error(1);
    assert!(line.contains("refused the token (wrong token)"), "{line}");
    assert!(!line.contains(wrong), "the token is not repeated: {line}");
}

/// The stored run's envelope (`history show @last`): its server is the
/// one that served.
fn check_stored(net: &Netns, store: &str, suite: &str, ready: &Value) -> Value {
    let o = run_cmd(
        "history show",
        client(
            net,
            &["history", "show", "@last", "--format", "json"],
            None,
            Some(store),
        ),
    );
    o.assert_ok();
    let doc: Value = serde_json::from_str(&o.stdout).expect("the stored envelope");
    assert_eq!(doc["suite"], suite);
    let server = &doc["settings"]["server"];
    assert_eq!(server["remote"], true, "{server}");
    assert_eq!(server["address"], format!("{SERVER_IP}:{PORT}"), "{server}");
    assert_eq!(server["host"], ready["host"], "{server}");
    assert_eq!(server["kernel"], ready["kernel"], "{server}");
    let text = doc.to_string();
    assert!(
        !text.contains(ready["token"].as_str().unwrap_or("-")),
        "token recorded"
    );
    doc
}

/// Nobody listens at the server's address any more.
fn gone(net: &Netns, suite: &str, token: &str) {
    let server = format!("{SERVER_IP}:{PORT}");
    let o = run_cmd(
        "after the end",
        client(net, &[suite, "--server", &server], Some(token), None),
    );
    let line = o.assert_one_line_error(1);
    assert!(line.contains("nobody listens there"), "{line}");
}

/// `msgbench adder --server LISTEN` at 1 and 2 threads of 5000 round
/// trips, recorded in `store`: every thread's final value is 5000.
fn adder_run_checked(net: &Netns, listen: &str, token: &str, dir: &TestDir, store: &str) {
    let json = dir.file("adder.json").display().to_string();
    let run = [
        "adder",
        "--server",
        listen,
        "-S",
        "5000",
        "--threads",
        "1,2",
        "--idle-secs",
        "0",
        "--json",
        &json,
    ];
    run_cmd(
        "adder --server",
        client(net, &run, Some(token), Some(store)),
    )
    .assert_ok();
    let doc = read_json(std::path::Path::new(&json));
    let rows = doc["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 2, "{doc}");
    for r in rows {
        assert_eq!(
            (r["transport"].as_str(), r["mode"].as_str()),
            (Some("tcp"), Some("one"))
        );
        let threads = r["run"]["threads"].as_array().expect("threads");
        assert_eq!(
            threads.len() as u64,
            r["threads"].as_u64().unwrap_or(0),
            "{r}"
        );
        for t in threads {
            assert_eq!(
                t["final_value"], 5000,
                "every round trip done and checked: {t}"
            );
        }
    }
}

#[test]
fn adder_between_namespaces_with_a_token() {
    let _one = serial();
    if let Some(reason) = cannot_run() {
        return skip(&reason);
    }
    let net = match Netns::create("sa") {
        Ok(n) => n,
        Err(reason) => return skip(&reason),
    };
    let dir = TestDir::new("serve-adder");
    let store = dir.file("runs.db").display().to_string();
    let listen = format!("{SERVER_IP}:{PORT}");
    let served = Served::start(Netns::exec(
        &net.server,
        Bin::Msgbench,
        &strings(&["serve", "adder", "-n", "2", "--listen", &listen]),
    ));
    assert_eq!(served.ready["suite"], "adder");
    assert_eq!(served.ready["listen"], listen.as_str());
    assert_eq!(served.ready["instances"], 2);
    assert_eq!(served.ready["first_port"], PORT + 1);
    let token = served.token();
    adder_run_checked(&net, &listen, &token, &dir, &store);
    check_stored(&net, &store, "adder", &served.ready);
    refused_without_the_token(&net, &["adder", "--server", &listen, "-S", "1000"]);
    // The server goes on serving the right token.
    let again = [
        "adder",
        "--server",
        &listen,
        "-S",
        "1000",
        "--threads",
        "1",
        "--idle-secs",
        "0",
    ];
    run_cmd(
        "after the refused",
        client(&net, &again, Some(&token), None),
    )
    .assert_ok();
    served.stop();
    gone(&net, "adder", &token);
    let names = [net.server.clone(), net.client.clone()];
    drop(net);
    let left = common::netns::listed(&[&names[0], &names[1]]);
    assert!(left.is_empty(), "namespaces left: {left:?}");
}

#[test]
fn ipc_between_namespaces_with_a_token() {
    let _one = serial();
    if let Some(reason) = cannot_run() {
        return skip(&reason);
    }
    let net = match Netns::create("si") {
        Ok(n) => n,
        Err(reason) => return skip(&reason),
    };
    let dir = TestDir::new("serve-ipc");
    let store = dir.file("runs.db").display().to_string();
    let listen = format!("{SERVER_IP}:{PORT}");
    let served = Served::start(Netns::exec(
        &net.server,
        Bin::Msgbench,
        &strings(&["serve", "ipc", "--listen", &listen]),
    ));
    assert_eq!(served.ready["suite"], "ipc");
    assert_eq!(served.ready["row_port"], PORT + 1);
    let token = served.token();
    let run = [
        "ipc", "--server", &listen, "--quick", "--sizes", "64,4096", "--copy", "--format", "json",
    ];
    let o = run_cmd(
        "ipc --server",
        client(&net, &run, Some(&token), Some(&store)),
    );
    o.assert_ok();
    let doc: Value = serde_json::from_str(&o.stdout).expect("the envelope");
    let rows = doc["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 4, "two sizes, two APIs: {doc}");
    for r in rows {
        assert_eq!(r["status"], "ok", "every reply checked: {r}");
        assert_eq!(
            (r["transport"].as_str(), r["placement"].as_str()),
            (Some("tcp"), Some("cross"))
        );
        assert!(
            r["latency"]["summary"]["p50_ns"]
                .as_f64()
                .is_some_and(|v| v > 0.0),
            "{r}"
        );
    }
    assert_eq!(doc["outcome"]["failed"], 0, "{doc}");
    check_stored(&net, &store, "ipc", &served.ready);
    refused_without_the_token(&net, &["ipc", "--server", &listen, "--quick"]);
    let again = ["ipc", "--server", &listen, "--quick", "--sizes", "1"];
    run_cmd(
        "after the refused",
        client(&net, &again, Some(&token), None),
    )
    .assert_ok();
    served.stop();
    gone(&net, "ipc", &token);
    drop(net);
}

/// `msgbench ARGS` on this host, with MSGBENCH_TOKEN `token` if any.
fn here(args: &[&str], token: Option<&str>) -> Output {
    let mut c = Bin::Msgbench.cmd(args);
    c.env_remove("MSGBENCH_TOKEN");
    if let Some(t) = token {
        c.env("MSGBENCH_TOKEN", t);
    }
    run_cmd("msgbench", c)
}

#[test]
fn bad_options_and_a_port_in_use_are_one_line() {
    for (args, code, want) in [
        (
            &["serve", "adder", "--bogus"][..],
            2,
            "unexpected argument '--bogus'",
        ),
        (
            &["serve", "adder", "-n", "0"],
            1,
            "-n 0: the number of instances",
        ),
        (
            &["serve", "ipc", "--listen", "127.0.0.1:0"],
            1,
            "--listen 127.0.0.1:0: give a port",
        ),
        (
            &["serve", "adder", "--listen", "127.0.0.1:65535"],
            1,
            "above 65535",
        ),
        (&["adder", "--token-file", "/nonexistent"], 2, "--server"),
        (
            &["adder", "--server", "127.0.0.1:1", "-t", "uds"],
            1,
            "-t uds cannot cross hosts",
        ),
        (
            &["adder", "--server", "127.0.0.1:1", "--modes", "pool"],
            1,
            "only --modes one",
        ),
        (
            &["ipc", "--server", "127.0.0.1:1", "-t", "udp"],
            1,
            "-t udp cannot cross hosts",
        ),
        (
            &["ipc", "--server", "127.0.0.1:1", "--placement", "same"],
            1,
            "every row is cross",
        ),
        (
            &["ipc", "--server", "127.0.0.1:1", "--layout", "thread"],
            1,
            "every row is two processes",
        ),
        (
            &["ipc", "--server", "127.0.0.1:1", "--clients", "2"],
            1,
            "--clients: not with --server",
        ),
    ] {
        let o = here(args, None);
        let line = o.assert_one_line_error(code);
        assert!(line.starts_with("msgbench: error: "), "{args:?}: {line}");
        assert!(line.contains(want), "{args:?}: {line}");
    }
    // A port in use: the control one, or (ipc) the rows' one after it.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("address").port();
    for (suite, at) in [("adder", port), ("ipc", port - 1)] {
        let listen = format!("127.0.0.1:{at}");
        let o = here(&["serve", suite, "--listen", &listen], None);
        let line = o.assert_one_line_error(1);
        assert!(
            line.contains(&format!("cannot listen on 127.0.0.1:{port}")),
            "{line}"
        );
        assert!(o.stdout.is_empty(), "no ready line: {o}");
    }
}

#[test]
fn a_token_file_and_a_server_of_the_other_suite() {
    let dir = TestDir::new("serve-file");
    let file = dir.file("token");
    let token = "00112233445566778899aabbccddeeff";
    std::fs::write(&file, format!("{token}\n")).expect("write");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let f = file.display().to_string();
    let port = unused_port();
    let listen = format!("127.0.0.1:{port}");
    let serve = ["serve", "adder", "--listen", &listen, "--token-file", &f];
    let line = here(&serve, None).assert_one_line_error(1);
    assert!(line.contains("chmod 600"), "{line}");
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let served = Served::start(Bin::Msgbench.cmd(serve));
    assert_eq!(served.token(), token, "the file's token");
    let ok = [
        "adder",
        "--server",
        &listen,
        "--token-file",
        &f,
        "-S",
        "1000",
        "--idle-secs",
        "0",
    ];
    here(&ok, None).assert_ok();
    let line = here(&["ipc", "--server", &listen, "--quick"], Some(token)).assert_one_line_error(1);
    assert!(
        line.contains("it serves adder (msgbench serve adder), not ipc"),
        "{line}"
    );
    served.stop();
}
