//! The veth test bed: three network namespaces, generator -- forwarder --
//! sink, joined by two veth pairs (the forwarder's two "ports"), with
//! fixed addresses, MACs, a route and permanent neighbours, so that a frame
//! the generator sends to [`DEST_PREFIX`] is forwarded by the middle
//! namespace to the sink.
//!
//! ```text
//!  gen ns            fwd ns                      sink ns
//!  gen0 ---------- fwd0 [forwarder] fwd1 ---------- sink0
//!  198.18.0.2      198.18.0.1       198.18.1.1      198.18.1.2
//! ```
//!
//! Built with the `ip` program (iproute2), each call's exit status checked
//! and its failure turned into one line naming the command. Netlink
//! through a crate (rtnetlink, neli) would need an async runtime or a
//! hundred lines of message building for the same dozen operations, run
//! once per suite; `ip` is on every machine that has veth and is in CI's
//! package list. The veth ends are created directly inside their
//! namespaces, so nothing of ours ever appears in the caller's namespace.
//!
//! Cleanup, in three layers: [`Topology`] deletes its namespaces (and with
//! them the veth pairs) on drop, also when building it failed half-way;
//! the suite stops on its `stop` flag (SIGINT/SIGTERM) and so drops it; a
//! run killed outright leaves namespaces named
//! `msgbench-smp-<pid>-<n>-<role>`, which [`sweep_stale`] (run by
//! [`Topology::create`]) deletes once that pid is gone.

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use anyhow::{anyhow, bail, Context, Result};

/// Every namespace of ours starts with this.
pub const PREFIX: &str = "msgbench-smp-";

/// The prefix the generator sends to; the forwarder routes it to the sink
/// (RFC 2544's benchmarking range, 198.18.0.0/15).
pub const DEST_PREFIX: ([u8; 4], u8) = ([198, 19, 0, 0], 16);

/// One namespace's part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Sends the offered load.
    Gen,
    /// Forwards it (the kernel, or our workers).
    Fwd,
    /// Counts what arrives.
    Sink,
}

impl Role {
    /// All three, in path order.
    pub const ALL: [Role; 3] = [Role::Gen, Role::Fwd, Role::Sink];

    /// The last part of the namespace's name.
    pub fn tag(self) -> &'static str {
        match self {
            Role::Gen => "gen",
            Role::Fwd => "fwd",
            Role::Sink => "sink",
        }
    }
}

/// One end of a veth pair.
#[derive(Debug, Clone, Copy)]
pub struct End {
    /// The namespace it lives in.
    pub role: Role,
    /// Interface name inside that namespace.
    pub name: &'static str,
    /// Its MAC address (locally administered).
    pub mac: [u8; 6],
    /// Its IPv4 address (/24).
    pub ip: [u8; 4],
}

/// The generator's port.
pub const GEN0: End = End {
    role: Role::Gen,
    name: "gen0",
    mac: [2, 0x6d, 0x62, 0, 0, 1],
    ip: [198, 18, 0, 2],
};
/// The forwarder's port facing the generator (port 0).
pub const FWD0: End = End {
    role: Role::Fwd,
    name: "fwd0",
    mac: [2, 0x6d, 0x62, 0, 0, 2],
    ip: [198, 18, 0, 1],
};
/// The forwarder's port facing the sink (port 1).
pub const FWD1: End = End {
    role: Role::Fwd,
    name: "fwd1",
    mac: [2, 0x6d, 0x62, 0, 1, 1],
    ip: [198, 18, 1, 1],
};
/// The sink's port.
pub const SINK0: End = End {
    role: Role::Sink,
    name: "sink0",
    mac: [2, 0x6d, 0x62, 0, 1, 2],
    ip: [198, 18, 1, 2],
};

/// The two veth pairs.
pub const PAIRS: [(End, End); 2] = [(GEN0, FWD0), (FWD1, SINK0)];

/// `a.b.c.d`.
pub fn dotted(ip: [u8; 4]) -> String {
    format!("{}.{}.{}.{}", ip[0], ip[1], ip[2], ip[3])
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn colon_mac(mac: [u8; 6]) -> String {
    let parts: Vec<String> = mac.iter().map(|b| format!("{b:02x}")).collect();
    parts.join(":")
}

/// Runs `ip <args>`; fails in one line naming the command and quoting the
/// first line of what `ip` said. `ip` runs in its own process group, so a
/// Ctrl-C at the terminal reaches us (who clean up), not it.
pub fn ip<I, S>(args: I) -> Result<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    use std::os::unix::process::CommandExt;
    let args: Vec<_> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
    let shown = args
        .iter()
        .map(|a| a.to_string_lossy())
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("ip")
        .args(&args)
        .stdin(Stdio::null())
        .process_group(0)
        .output()
        .with_context(|| format!("cannot run `ip {shown}` (is iproute2 installed?)"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .next()
            .unwrap_or("no message")
            .trim()
            .to_string();
        bail!("`ip {shown}` failed ({}): {first}", out.status);
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The names of every `ip netns` namespace that starts with [`PREFIX`].
pub fn our_namespaces() -> Result<Vec<String>> {
    let list = ip(["netns", "list"])?;
    Ok(list
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(PREFIX))
        .map(str::to_string)
        .collect())
}

/// The pid in `msgbench-smp-<pid>-...`, if the name has one.
pub fn owner_pid(name: &str) -> Option<u32> {
    name.strip_prefix(PREFIX)?.split('-').next()?.parse().ok()
}

/// Deletes every namespace of ours whose owning process is gone (a run
/// killed before it could clean up); returns their names. A namespace
/// whose pid is alive is left alone: it may be another run's.
///
/// Sweeps of one process take turns; a namespace another process swept
/// first (gone by the time we delete it) is not an error.
pub fn sweep_stale() -> Result<Vec<String>> {
    static TURN: Mutex<()> = Mutex::new(());
    let _turn = TURN.lock().unwrap_or_else(|e| e.into_inner());
    let mut swept = Vec::new();
    for name in our_namespaces()? {
        let Some(pid) = owner_pid(&name) else {
            continue;
        };
        if Path::new(&format!("/proc/{pid}")).exists() {
            continue;
        }
        if let Err(e) = delete_namespace(&name) {
            if our_namespaces()?.contains(&name) {
                return Err(e.context(format!("cannot sweep stale namespace {name}")));
            }
        }
        swept.push(name);
    }
    Ok(swept)
}

/// Deletes namespace `name` after deleting its veth ends (so the pairs go
/// at once even if a socket keeps the namespace itself alive a while).
fn delete_namespace(name: &str) -> Result<()> {
    for (a, b) in PAIRS {
        for end in [a, b] {
            // Absent when the peer's deletion took it along: not an error.
            let _ = ip(["-n", name, "link", "del", end.name]);
        }
    }
    ip(["netns", "del", name]).map(|_| ())
}

/// The three namespaces and two veth pairs of one run; deleted on drop.
#[derive(Debug)]
pub struct Topology {
    names: [String; 3],
    created: Vec<String>,
}

impl Topology {
    /// Sweeps stale namespaces of dead runs, then builds a fresh test bed
    /// named after this process (and a counter, so one process may hold
    /// several). Kernel forwarding starts off. Needs root.
    pub fn create() -> Result<Topology> {
        sweep_stale()?;
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let names = Role::ALL.map(|r| format!("{PREFIX}{pid}-{n}-{}", r.tag()));
        let mut t = Topology {
            names,
            created: Vec::new(),
        };
        t.build()?; // on error, drop deletes what exists
        Ok(t)
    }

    fn build(&mut self) -> Result<()> {
        for r in Role::ALL {
            let name = self.ns(r).to_string();
            ip(["netns", "add", &name])?;
            self.created.push(name.clone());
            ip(["-n", &name, "link", "set", "lo", "up"])?;
            self.quiet(r)?;
        }
        for (a, b) in PAIRS {
            self.add_pair(a, b)?;
        }
        self.route()?;
        self.set_kernel_forwarding(false)
    }

    /// No IPv6 (its router solicitations would reach the counters) and
    /// no reverse-path filter in the forwarder.
    fn quiet(&self, r: Role) -> Result<()> {
        let ipv6 = Path::new("/proc/sys/net/ipv6").exists();
        for key in ["all", "default"] {
            if ipv6 {
                self.sysctl(r, &format!("ipv6/conf/{key}/disable_ipv6"), "1")?;
            }
            self.sysctl(r, &format!("ipv4/conf/{key}/rp_filter"), "0")?;
        }
        Ok(())
    }

    fn add_pair(&self, a: End, b: End) -> Result<()> {
        let (na, nb) = (self.ns(a.role), self.ns(b.role));
        let (ma, mb) = (colon_mac(a.mac), colon_mac(b.mac));
        ip([
            "link", "add", a.name, "netns", na, "address", &ma, "type", "veth", "peer", "name",
            b.name, "netns", nb, "address", &mb,
        ])?;
        for e in [a, b] {
            let ns = self.ns(e.role);
            ip([
                "-n",
                ns,
                "addr",
                "add",
                &format!("{}/24", dotted(e.ip)),
                "dev",
                e.name,
            ])?;
            ip(["-n", ns, "link", "set", e.name, "up"])?;
        }
        Ok(())
    }

    /// Routes and permanent neighbours: no ARP ever runs. The forwarder
    /// sends everything not on its own links to the sink (a default
    /// route), so the kernel forwards the synthetic table's destinations
    /// as our workers do.
    fn route(&self) -> Result<()> {
        let dest = format!("{}/{}", dotted(DEST_PREFIX.0), DEST_PREFIX.1);
        for (ns, via, dev, to) in [
            (Role::Gen, FWD0, GEN0, dest.as_str()),
            (Role::Fwd, SINK0, FWD1, dest.as_str()),
            (Role::Fwd, SINK0, FWD1, "default"),
        ] {
            ip([
                "-n",
                self.ns(ns),
                "route",
                "add",
                to,
                "via",
                &dotted(via.ip),
                "dev",
                dev.name,
            ])?;
        }
        for (near, far) in [(GEN0, FWD0), (FWD0, GEN0), (FWD1, SINK0), (SINK0, FWD1)] {
            let ns = self.ns(near.role);
            let (ipa, mac) = (dotted(far.ip), colon_mac(far.mac));
            ip([
                "-n",
                ns,
                "neigh",
                "replace",
                &ipa,
                "lladdr",
                &mac,
                "dev",
                near.name,
                "nud",
                "permanent",
            ])?;
        }
        Ok(())
    }

    /// The name of `role`'s namespace.
    pub fn ns(&self, role: Role) -> &str {
        &self.names[role as usize]
    }

    /// All three names.
    pub fn names(&self) -> &[String; 3] {
        &self.names
    }

    /// Turns the kernel's IPv4 forwarding in the middle namespace on (the
    /// reference row) or off (our forwarder's turn: the kernel must not
    /// forward the same frames too).
    pub fn set_kernel_forwarding(&self, on: bool) -> Result<()> {
        self.sysctl(Role::Fwd, "ipv4/ip_forward", if on { "1" } else { "0" })
    }

    /// Writes `/proc/sys/net/<key>` as seen from `role`'s namespace.
    pub fn sysctl(&self, role: Role, key: &str, value: &str) -> Result<()> {
        let path = format!("/proc/sys/net/{key}");
        self.in_ns(role, || std::fs::write(&path, value))
            .with_context(|| format!("cannot set {key} = {value} in namespace {}", self.ns(role)))
    }

    /// Runs `f` on a dedicated thread that has entered `role`'s namespace
    /// (setns): sockets `f` opens belong there for good, whoever uses them
    /// later. The calling thread stays where it is.
    pub fn in_ns<T: Send>(
        &self,
        role: Role,
        f: impl FnOnce() -> std::io::Result<T> + Send,
    ) -> Result<T> {
        let ns = self.ns(role);
        let path = oslayer::netns::named_net_namespace(ns);
        std::thread::scope(|s| {
            std::thread::Builder::new()
                .name(format!("netns-{}", role.tag()))
                .spawn_scoped(s, || {
                    oslayer::netns::enter_net_namespace(&path)
                        .with_context(|| format!("cannot enter network namespace {ns}"))?;
                    f().map_err(|e| anyhow!("in network namespace {ns}: {e}"))
                })
                .context("cannot start a thread to enter a namespace")?
                .join()
                .map_err(|_| anyhow!("the thread in network namespace {ns} panicked"))?
        })
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        for name in self.created.drain(..) {
            if let Err(e) = delete_namespace(&name) {
                eprintln!("msgbench: cleanup: {e:#}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_carry_the_pid_that_owns_them() {
        assert_eq!(owner_pid("msgbench-smp-4242-0-gen"), Some(4242));
        assert_eq!(owner_pid("msgbench-smp-x-0-gen"), None);
        assert_eq!(owner_pid("other-4242"), None);
    }

    #[test]
    fn addresses_print_as_ip_wants_them() {
        assert_eq!(dotted(SINK0.ip), "198.18.1.2");
        assert_eq!(colon_mac(FWD1.mac), "02:6d:62:00:01:01");
    }
}
