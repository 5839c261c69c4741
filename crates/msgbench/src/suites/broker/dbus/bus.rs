//! A private D-Bus bus in a directory of the caller's: `dbus-daemon`, or
//! `dbus-broker` under its launcher. Never the system or session bus: the
//! daemon listens on `<dir>/bus.sock` and is told no other address.
//!
//! - `dbus-daemon --nofork --nopidfile --nosyslog --config-file=<dir>/bus.conf`,
//!   its config listening on `unix:path=<dir>/bus.sock`.
//! - `dbus-broker-launch --scope user --config-file <dir>/bus.conf`, run
//!   through `sh -c 'export LISTEN_PID=$$; exec "$0" "$@"'` so LISTEN_PID is
//!   its own pid without allocating after fork; the listening socket (bound
//!   by us) is fd 3 with `LISTEN_FDS=1`; `DBUS_SESSION_BUS_ADDRESS` is its
//!   own address. It opens journald's socket at start: where the host has
//!   none, it runs in a private mount namespace where a socket of ours
//!   (drained by a thread) is bind-mounted there. That needs root
//!   (CAP_SYS_ADMIN); without it the start fails saying so.
//!
//! Both get SIGTERM if the spawning thread dies (PR_SET_PDEATHSIG).
//! [`PrivateBus::stop`] (and Drop, quietly) sends SIGTERM, waits up to 2 s,
//! then SIGKILL, and reaps; for dbus-broker the broker is stopped first so
//! its launcher (its parent) reaps it, then the launcher.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use oslayer::process::{self, Pid, Signal};

use super::errors::{ChildStop, Unavailable};
use super::journal::{self, JournalSink};
use super::launch::{self, JournalMount};

/// How long a daemon may take to accept a connection.
const READY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a daemon may take to exit after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// Which message bus daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum DaemonKind {
    /// The reference daemon, `dbus-daemon`.
    DbusDaemon,
    /// `dbus-broker`, started by `dbus-broker-launch`.
    DbusBroker,
}

impl DaemonKind {
    /// Both, in report order.
    pub const ALL: [DaemonKind; 2] = [DaemonKind::DbusDaemon, DaemonKind::DbusBroker];

    /// Its name, as in reports: `dbus-daemon` or `dbus-broker`.
    pub fn name(self) -> &'static str {
        match self {
            DaemonKind::DbusDaemon => "dbus-daemon",
            DaemonKind::DbusBroker => "dbus-broker",
        }
    }

    /// How to install it on Debian.
    pub fn install_hint(self) -> &'static str {
        match self {
            DaemonKind::DbusDaemon => "apt-get install dbus-daemon",
            DaemonKind::DbusBroker => "apt-get install dbus-broker",
        }
    }

    /// The programs it needs.
    fn programs(self) -> &'static [&'static str] {
        match self {
            DaemonKind::DbusDaemon => &["dbus-daemon"],
            DaemonKind::DbusBroker => &["dbus-broker-launch", "dbus-broker"],
        }
    }

    /// Ok when its programs are on PATH; else one line saying what is
    /// missing and how to install it.
    pub fn available(self) -> Result<(), Unavailable> {
        for p in self.programs() {
            if find_on_path(p).is_none() {
                return Err(Unavailable::Program {
                    program: p,
                    install: self.install_hint(),
                });
            }
        }
        Ok(())
    }
}

/// The first executable `name` on PATH.
fn find_on_path(name: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The config: our own socket, EXTERNAL auth, a policy allowing all.
fn config(kind: DaemonKind, socket: &Path) -> String {
    // dbus-broker-launch gets its socket by activation; <listen> is for
    // dbus-daemon.
    let listen = match kind {
        DaemonKind::DbusDaemon => format!("  <listen>unix:path={}</listen>\n", socket.display()),
        DaemonKind::DbusBroker => String::new(),
    };
    format!(
        r#"<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
{listen}  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*" eavesdrop="true"/>
    <allow receive_sender="*"/>
    <allow eavesdrop="true"/>
  </policy>
</busconfig>
"#
    )
}

/// A daemon's command, and what must live beside it until it is spawned:
/// the listening socket activation hands over (dbus-broker), and the
/// reader of its private journald socket.
struct Launch {
    cmd: Command,
    listener: Option<UnixListener>,
    journal: Option<JournalSink>,
}

/// The command that starts `kind` with config `conf` on `socket` (its
/// address `address`), prepared to die with the calling thread; for
/// dbus-broker on a host without journald, with a private journald socket
/// under `dir`.
fn daemon_command(
    kind: DaemonKind,
    dir: &Path,
    conf: &Path,
    socket: &Path,
    address: &str,
) -> Result<Launch> {
    match kind {
        DaemonKind::DbusDaemon => {
            let mut cmd = Command::new("dbus-daemon");
            cmd.arg("--nofork")
                .arg("--nopidfile")
                .arg("--nosyslog")
                .arg(format!("--config-file={}", conf.display()))
                .env_remove("DBUS_SESSION_BUS_ADDRESS");
            launch::prepare(&mut cmd, None, None);
            Ok(Launch {
                cmd,
                listener: None,
                journal: None,
            })
        }
        DaemonKind::DbusBroker => {
            let l = UnixListener::bind(socket)
                .with_context(|| format!("binding {}", socket.display()))?;
            let mut journal = None;
            let mount = if journal::host_has_journal() {
                None
            } else {
                let (place, sock) = journal::placement(&dir.join("journal"))?;
                journal = Some(JournalSink::bind(&sock)?);
                Some(JournalMount::new(&place.source, &place.target)?)
            };
            let mut cmd = Command::new("sh");
            cmd.arg("-c")
                .arg(r#"export LISTEN_PID=$$; exec "$0" "$@""#)
                .arg("dbus-broker-launch")
                .arg("--scope")
                .arg("user")
                .arg("--config-file")
                .arg(conf)
                .env("LISTEN_FDS", "1")
                .env_remove("LISTEN_FDNAMES")
                .env("DBUS_SESSION_BUS_ADDRESS", address);
            launch::prepare(&mut cmd, Some(l.as_raw_fd()), mount);
            Ok(Launch {
                cmd,
                listener: Some(l),
                journal,
            })
        }
    }
}

/// A running private bus. Stopped by [`PrivateBus::stop`] or on drop.
pub struct PrivateBus {
    kind: DaemonKind,
    address: String,
    child: Option<Child>,
    /// dbus-broker's pid (the launcher's child), for dbus-broker.
    broker: Option<i32>,
    stderr: PathBuf,
    journal: Option<JournalSink>,
    socket: PathBuf,
}

impl PrivateBus {
    /// Starts `kind` with its config, socket and logs in `dir` (a private
    /// directory the caller owns and removes), and waits until a client
    /// can connect (up to 5 s).
    ///
    /// The daemon gets SIGTERM when the *thread* calling this dies
    /// (PR_SET_PDEATHSIG follows the spawning thread): call it from a
    /// thread that outlives the bus. For dbus-broker on a host without a
    /// journald socket this needs root (CAP_SYS_ADMIN, for the private
    /// mount namespace).
    pub fn start(kind: DaemonKind, dir: &Path) -> Result<PrivateBus> {
        kind.available()?;
        let dir = dir
            .canonicalize()
            .with_context(|| format!("bus directory {}", dir.display()))?;
        let socket = dir.join("bus.sock");
        let address = format!("unix:path={}", socket.display());
        let conf = dir.join("bus.conf");
        std::fs::write(&conf, config(kind, &socket))
            .with_context(|| format!("writing {}", conf.display()))?;
        let stderr = dir.join(format!("{}.stderr", kind.name()));
        let err_file =
            File::create(&stderr).with_context(|| format!("creating {}", stderr.display()))?;

        let Launch {
            mut cmd,
            listener,
            journal,
        } = daemon_command(kind, &dir, &conf, &socket, &address)?;
        cmd.env_remove("DBUS_SYSTEM_BUS_ADDRESS")
            .env_remove("DBUS_STARTER_ADDRESS")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err_file);
        let child = cmd.spawn().map_err(|e| {
            let root = if journal.is_some() && e.raw_os_error() == Some(libc::EPERM) {
                " (a private mount namespace for its journald socket needs root / CAP_SYS_ADMIN)"
            } else {
                ""
            };
            anyhow::anyhow!("starting {}: {e}{root}", kind.name())
        })?;
        // The daemon has its own copy of the listening socket now.
        drop(listener);
        let mut bus = PrivateBus {
            kind,
            address,
            child: Some(child),
            broker: None,
            stderr,
            journal,
            socket,
        };
        bus.wait_ready()?;
        if kind == DaemonKind::DbusBroker {
            let launcher = bus.launcher_pid().unwrap_or(0);
            bus.broker = children_of(launcher).first().copied();
            if bus.broker.is_none() {
                let why = bus.logs();
                bus.shutdown();
                bail!("dbus-broker-launch started no dbus-broker process{why}");
            }
        }
        Ok(bus)
    }

    /// Which daemon this is.
    pub fn kind(&self) -> DaemonKind {
        self.kind
    }

    /// Its D-Bus address, `unix:path=<dir>/bus.sock`.
    pub fn address(&self) -> &str {
        &self.address
    }

    /// The path of its listening socket.
    pub fn socket_path(&self) -> &Path {
        &self.socket
    }

    /// Every process of the daemon whose CPU time counts: dbus-daemon, or
    /// dbus-broker-launch and its dbus-broker.
    pub fn pids(&self) -> Vec<i32> {
        self.launcher_pid().into_iter().chain(self.broker).collect()
    }

    fn launcher_pid(&self) -> Option<i32> {
        self.child.as_ref().map(|c| c.id() as i32)
    }

    /// What the daemon wrote to stderr (and to its journald socket), as a
    /// suffix for error messages; empty if nothing.
    fn logs(&self) -> String {
        let mut s = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        if let Some(j) = &self.journal {
            s.push_str(&j.text());
        }
        let s = s.trim();
        if s.is_empty() {
            String::new()
        } else {
            format!("; it said: {s}")
        }
    }

    /// Waits until a connection to the bus completes (Hello answered).
    /// The attempt runs on a thread so a daemon that never answers cannot
    /// hang us: on timeout the daemon is killed, which ends the attempt.
    fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + READY_TIMEOUT;
        let mut last = String::from("no attempt");
        while Instant::now() < deadline {
            if let Some(status) = self.try_exited() {
                let why = self.logs();
                self.shutdown();
                bail!("{} exited at start ({status}){why}", self.kind.name());
            }
            let (tx, rx) = mpsc::channel();
            let address = self.address.clone();
            let probe = std::thread::spawn(move || {
                let r = zbus::blocking::connection::Builder::address(address.as_str())
                    .and_then(|b| b.method_timeout(Duration::from_secs(1)).build())
                    .map(drop);
                let _ = tx.send(r);
            });
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Ok(())) => {
                    let _ = probe.join();
                    return Ok(());
                }
                Ok(Err(e)) => {
                    let _ = probe.join();
                    last = e.to_string();
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(_) => {
                    last = "the connection did not complete".into();
                    // Kill the daemon: the probe's socket closes and it ends.
                    let why = self.logs();
                    self.shutdown();
                    let _ = probe.join();
                    bail!(
                        "{} at {} was not ready after {:?}: {last}{why}",
                        self.kind.name(),
                        self.address,
                        READY_TIMEOUT
                    );
                }
            }
        }
        let why = self.logs();
        self.shutdown();
        bail!(
            "{} at {} was not ready after {:?}: {last}{why}",
            self.kind.name(),
            self.address,
            READY_TIMEOUT
        )
    }

    fn try_exited(&mut self) -> Option<ExitStatus> {
        self.child
            .as_mut()
            .and_then(|c| c.try_wait().ok().flatten())
    }

    /// Stops the daemon: SIGTERM, up to 2 s, then SIGKILL; reaped. Errors
    /// if it had to be killed or did not exit cleanly.
    pub fn stop(mut self) -> Result<()> {
        let why = self.shutdown();
        match why {
            None => Ok(()),
            Some(w) => {
                let logs = self.logs();
                bail!("{} did not stop cleanly: {w}{logs}", self.kind.name())
            }
        }
    }

    /// Stops and reaps everything; returns why it was not clean, if not.
    fn shutdown(&mut self) -> Option<String> {
        let mut problems = Vec::new();
        // dbus-broker first, so its parent (the launcher) reaps it.
        if let Some(b) = self.broker.take() {
            if let Some(w) = stop_unowned(b) {
                problems.push(w);
            }
        }
        if let Some(mut child) = self.child.take() {
            match stop_child(&mut child) {
                Ok(status) if status.success() => {}
                // SIGTERM is how it is asked to stop.
                Ok(status)
                    if std::os::unix::process::ExitStatusExt::signal(&status)
                        == Some(libc::SIGTERM) => {}
                Ok(status) => problems.push(format!("exit {status}")),
                Err(e) => problems.push(e.to_string()),
            }
        }
        self.journal = None;
        let _ = std::fs::remove_file(&self.socket);
        if problems.is_empty() {
            None
        } else {
            Some(problems.join("; "))
        }
    }
}

impl Drop for PrivateBus {
    fn drop(&mut self) {
        let _ = self.shutdown();
    }
}

/// SIGTERM to our child, up to [`STOP_GRACE`], then SIGKILL; reaped.
fn stop_child(child: &mut Child) -> Result<ExitStatus, ChildStop> {
    if let Ok(Some(s)) = child.try_wait() {
        return Ok(s);
    }
    signal(child.id() as i32, Signal::TERM);
    let deadline = Instant::now() + STOP_GRACE;
    while Instant::now() < deadline {
        match child.try_wait() {
            Ok(Some(s)) => return Ok(s),
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Err(ChildStop::Wait(e)),
        }
    }
    let _ = child.kill();
    match child.wait() {
        Ok(status) => Err(ChildStop::Killed {
            grace: STOP_GRACE,
            status,
        }),
        Err(e) => Err(ChildStop::WaitAfterKill(e)),
    }
}

/// Stops a process that is not our child (its parent reaps it): SIGTERM,
/// up to [`STOP_GRACE`] for it to vanish, then SIGKILL.
fn stop_unowned(pid: i32) -> Option<String> {
    let gone = |until: Instant| {
        while Instant::now() < until {
            if !Path::new(&format!("/proc/{pid}")).exists() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        false
    };
    if !Path::new(&format!("/proc/{pid}")).exists() {
        return None;
    }
    signal(pid, Signal::TERM);
    if gone(Instant::now() + STOP_GRACE) {
        return None;
    }
    signal(pid, Signal::KILL);
    // Its parent reaps it; the caller stops the parent next either way.
    let _ = gone(Instant::now() + Duration::from_millis(500));
    Some(format!("process {pid} killed after {STOP_GRACE:?}"))
}

/// Sends `sig` to `pid`, a process we started (or its child, found under
/// it) and not yet reaped; never to a group (pid 0 or below). A process
/// already gone is what the callers wait for, so an error is dropped.
fn signal(pid: i32, sig: Signal) {
    if let Some(pid) = Pid::from_raw(pid).filter(|_| pid > 0) {
        let _ = process::kill(pid, sig);
    }
}

/// The pids whose parent is `parent` (from /proc/*/stat).
fn children_of(parent: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in dir.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The fields after the command's closing parenthesis: state, ppid.
        let ppid = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().nth(1))
            .and_then(|s| s.parse::<i32>().ok());
        if ppid == Some(parent) {
            out.push(pid);
        }
    }
    out
}
