//! Two network namespaces joined by a veth pair, for the tests that run a
//! server and its client as if on two hosts (`adder_tcp_netns.rs`,
//! `serve_netns.rs`). The addresses (10.200.7.1/24 for the server side,
//! .2 for the client) live inside the namespaces only, so every pair may
//! use them; the names carry a tag and the test process's pid. Both
//! namespaces are deleted on drop, whatever happened. Root and iproute2
//! are needed: [`cannot_run`] says why a machine cannot.

use std::process::Command;
use std::time::Duration;

use super::{is_root, run_cmd, Bin, Output, Proc};

/// The server side's address on the veth pair.
pub const SERVER_IP: &str = "10.200.7.1";
/// The client side's address.
pub const CLIENT_IP: &str = "10.200.7.2";

/// Runs `ip args` under the watchdog.
pub fn ip(args: &[&str]) -> Output {
    let mut c = Command::new("ip");
    c.args(args);
    run_cmd("ip", c)
}

/// Runs `ip args` and fails the test if it fails.
fn ip_ok(args: &[&str]) {
    let o = ip(args);
    assert!(o.status.success(), "ip {}: {o}", args.join(" "));
}

/// Why this machine cannot run a namespace test, if it cannot.
pub fn cannot_run() -> Option<String> {
    if !is_root() {
        return Some("needs root (network namespaces and a veth pair)".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("needs iproute2 (the `ip` command)".into()),
    }
}

/// Two network namespaces joined by a veth pair, deleted on drop.
pub struct Netns {
    /// The server's namespace.
    pub server: String,
    /// The client's namespace.
    pub client: String,
}

impl Netns {
    /// Creates the namespaces, named with `tag` (at most 3 characters,
    /// so the veth names fit 15), or `Err` with the reason when this
    /// machine cannot; then the link and addresses (failing the test if
    /// not).
    pub fn create(tag: &str) -> Result<Netns, String> {
        let id = std::process::id();
        let n = Netns {
            server: format!("mb-{tag}srv-{id}"),
            client: format!("mb-{tag}cli-{id}"),
        };
        let o = ip(&["netns", "add", &n.server]);
        if !o.status.success() {
            return Err(format!(
                "cannot create a network namespace: {}",
                o.stderr.trim()
            ));
        }
        ip_ok(&["netns", "add", &n.client]);
        let (vs, vc) = (format!("mb{tag}{id}s"), format!("mb{tag}{id}c"));
        // Both ends are created directly inside the namespaces: the host's
        // own network is never touched.
        ip_ok(&[
            "link", "add", &vs, "netns", &n.server, "type", "veth", "peer", "name", &vc, "netns",
            &n.client,
        ]);
        for (ns, dev, addr) in [(&n.server, &vs, SERVER_IP), (&n.client, &vc, CLIENT_IP)] {
            ip_ok(&["-n", ns, "addr", "add", &format!("{addr}/24"), "dev", dev]);
            ip_ok(&["-n", ns, "link", "set", dev, "up"]);
            ip_ok(&["-n", ns, "link", "set", "lo", "up"]);
        }
        Ok(n)
    }

    /// A command running `bin args` inside namespace `ns`, with the
    /// environment of [`Bin::cmd`] (no inherited namespace or store).
    pub fn exec(ns: &str, bin: Bin, args: &[String]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns, bin.path()])
            .args(args)
            .env_remove("MSGBENCH_NS")
            .env_remove("MSGBENCH_STORE")
            .env_remove("MSGBENCH_TOKEN")
            .env("MSGBENCH_NO_STORE", "1");
        c
    }

    /// The names of this pair's namespaces that `ip netns list` shows.
    pub fn listed(&self) -> Vec<String> {
        listed(&[&self.server, &self.client])
    }
}

/// Which of `names` `ip netns list` shows.
pub fn listed(names: &[&str]) -> Vec<String> {
    let o = ip(&["netns", "list"]);
    o.stdout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| names.contains(n))
        .map(str::to_string)
        .collect()
}

impl Drop for Netns {
    fn drop(&mut self) {
        // Bounded waits, and no panic here (this may run while unwinding).
        for ns in [&self.server, &self.client] {
            let mut c = Command::new("ip");
            c.args(["netns", "del", ns.as_str()]);
            let mut p = Proc::spawn("ip netns del", c);
            let _ = p.wait_exit_within(Duration::from_secs(10));
        }
    }
}
