//! A real PostgreSQL server for the tests: a fresh cluster (`initdb`) in a
//! temporary directory, its `postgres` run as a child of the test (not
//! daemonised), listening on 127.0.0.1 at a free port with its socket
//! inside that directory; stopped (SIGINT: fast shutdown) and removed when
//! the guard drops, also when the test fails. The server gets SIGQUIT
//! should the test's thread die first, and shares the test's process
//! group, so a Ctrl-C stops it too: no server outlives the test.
//! PostgreSQL refuses to run as root, so as root the cluster belongs to
//! `nobody` (65534).

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::common::{is_root, unused_port};

/// How the test says what it lacks.
pub const INSTALL: &str = "PostgreSQL server binaries (apt-get install postgresql)";

/// The uid and gid the cluster runs as when the test is root.
const NOBODY: u32 = 65534;

/// How a cluster's directory is named: this, the test's pid, a number.
const PREFIX: &str = "msgbench-pg-";

/// Longest wait for the server to accept connections, or to stop.
const LIMIT: Duration = Duration::from_secs(30);

/// A running cluster; stopped and removed on drop.
pub struct Cluster {
    dir: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
    server: Option<Child>,
}

/// The directory holding `initdb` and `postgres`: on PATH, else Debian's
/// `/usr/lib/postgresql/<version>/bin` (the newest).
pub fn binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .find(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
    });
    if on_path.is_some() {
        return on_path;
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let v = e.file_name().to_str()?.parse::<u32>().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, b)| b)
}

/// A command for one of the cluster's programs: as nobody when root, in
/// `dir`, sent `SIGQUIT` (immediate shutdown) if the spawning thread dies.
fn command(bin: &Path, program: &str, dir: &Path) -> Command {
    let mut c = Command::new(bin.join(program));
    if is_root() {
        c.uid(NOBODY).gid(NOBODY);
    }
    c.current_dir(dir).stdin(Stdio::null());
    // SAFETY: prctl is async-signal-safe and touches no memory of the
    // parent; std runs this after changing the uid, which would clear it.
    unsafe {
        c.pre_exec(|| {
            libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGQUIT as libc::c_ulong,
                0,
                0,
                0,
            );
            Ok(())
        });
    }
    c
}

impl Cluster {
    /// Makes and starts a cluster with `bin`'s programs; its superuser is
    /// `msgbench`, trusted on 127.0.0.1.
    pub fn start(bin: &Path) -> Cluster {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        // As root, under /tmp itself: nobody must reach it (a private
        // TMPDIR may not let it).
        let base = if is_root() {
            PathBuf::from("/tmp")
        } else {
            std::env::temp_dir()
        };
        sweep(&base);
        let dir = base.join(format!("{PREFIX}{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).expect("a directory for the cluster");
        let mut c = Cluster {
            dir,
            port: unused_port(),
            server: None,
        };
        std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        if is_root() {
            std::os::unix::fs::chown(&c.dir, Some(NOBODY), Some(NOBODY)).expect("chown to nobody");
        }
        let data = c.dir.join("data");
        let init = command(bin, "initdb", &c.dir)
            .args(["-D", path(&data), "-U", "msgbench", "--auth=trust"])
            .args(["--no-locale", "-E", "UTF8", "--no-sync"])
            .output()
            .expect("initdb runs");
        assert!(
            init.status.success(),
            "initdb failed: {}{}",
            String::from_utf8_lossy(&init.stdout),
            String::from_utf8_lossy(&init.stderr)
        );
        let log = std::fs::File::create(c.dir.join("log")).expect("the server's log");
        let port = c.port.to_string();
        let server = command(bin, "postgres", &c.dir)
            .args(["-D", path(&data), "-p", &port, "-k", path(&c.dir)])
            .args(["-c", "listen_addresses=127.0.0.1", "-c", "fsync=off"])
            .stdout(log.try_clone().expect("the log"))
            .stderr(log)
            .spawn()
            .expect("postgres starts");
        c.server = Some(server);
        c.wait_ready();
        c
    }

    /// Waits until the server takes a connection (at most [`LIMIT`]).
    fn wait_ready(&mut self) {
        let start = Instant::now();
        loop {
            if postgres::Client::connect(&self.url(), postgres::NoTls).is_ok() {
                return;
            }
            let exited = self
                .server
                .as_mut()
                .and_then(|s| s.try_wait().ok().flatten());
            assert!(
                exited.is_none() && start.elapsed() < LIMIT,
                "postgres did not start ({exited:?}): {}",
                std::fs::read_to_string(self.dir.join("log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The store URL of the cluster's `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://msgbench@127.0.0.1:{}/postgres", self.port)
    }

    /// The directory (gone once dropped).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// Removes the directories of clusters whose test was interrupted
/// (Ctrl-C or a kill runs no `Drop`; its server stopped with it): those
/// in `base` named for a process that is gone, with no server running.
fn sweep(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split('-').next())
            .filter(|p| p.parse::<u32>().is_ok())
        else {
            continue;
        };
        let server = std::fs::read_to_string(e.path().join("data/postmaster.pid"))
            .ok()
            .and_then(|t| t.lines().next().map(str::to_string));
        let alive = |p: &str| Path::new("/proc").join(p).exists();
        if !alive(pid) && !server.as_deref().is_some_and(alive) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if let Some(mut s) = self.server.take() {
            let pid = libc::pid_t::try_from(s.id()).unwrap_or(0);
            // SAFETY: kill has no memory effects; pid is our own child,
            // not yet reaped, so it names no other process.
            unsafe { libc::kill(pid, libc::SIGINT) };
            let start = Instant::now();
            while s.try_wait().ok().flatten().is_none() && start.elapsed() < LIMIT {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = s.kill();
            let _ = s.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}
