//! A real PostgreSQL server for the tests: a fresh cluster (`initdb`) in a
//! temporary directory, listening on 127.0.0.1 at a free port with its
//! socket inside that directory, started with `pg_ctl` and stopped
//! (`pg_ctl stop -m fast`) and removed when the guard drops, also when the
//! test fails. PostgreSQL refuses to run as root, so as root the cluster
//! belongs to `nobody` (commands run through `runuser`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::common::{is_root, unused_port};

/// How the test says what it lacks.
pub const INSTALL: &str = "PostgreSQL server binaries (apt-get install postgresql)";

/// A running cluster; stopped and removed on drop.
pub struct Cluster {
    dir: PathBuf,
    bin: PathBuf,
    /// Its port on 127.0.0.1.
    pub port: u16,
    started: bool,
}

/// The directory holding `initdb` and `pg_ctl`: on PATH, else Debian's
/// `/usr/lib/postgresql/<version>/bin` (the newest).
pub fn binaries() -> Option<PathBuf> {
    let on_path = std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p).find(|d| d.join("initdb").is_file() && d.join("pg_ctl").is_file())
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

impl Cluster {
    /// Makes and starts a cluster with `bin`'s programs; its superuser is
    /// `msgbench`, trusted on 127.0.0.1.
    pub fn start(bin: PathBuf) -> Cluster {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = std::env::temp_dir().join(format!("msgbench-pg-{}-{n}", std::process::id()));
        std::fs::create_dir(&dir).expect("a directory for the cluster");
        let mut c = Cluster {
            dir,
            bin,
            port: unused_port(),
            started: false,
        };
        std::fs::set_permissions(&c.dir, std::fs::Permissions::from_mode(0o700)).unwrap();
        if is_root() {
            // The cluster's files belong to nobody (65534).
            std::os::unix::fs::chown(&c.dir, Some(65534), Some(65534)).expect("chown to nobody");
        }
        let data = c.dir.join("data");
        let init = c.run(
            "initdb",
            &[
                "-D",
                path(&data),
                "-U",
                "msgbench",
                "--auth=trust",
                "--no-locale",
                "-E",
                "UTF8",
                "--no-sync",
            ],
        );
        assert!(init.status.success(), "initdb failed: {}", text(&init));
        let opts = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off",
            c.port,
            path(&c.dir)
        );
        let log = c.dir.join("log");
        let start = c.run(
            "pg_ctl",
            &[
                "-D",
                path(&data),
                "-l",
                path(&log),
                "-o",
                &opts,
                "-w",
                "-t",
                "60",
                "start",
            ],
        );
        c.started = true;
        assert!(
            start.status.success(),
            "pg_ctl start failed: {}\n{}",
            text(&start),
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        c
    }

    /// The store URL of the cluster's `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://msgbench@127.0.0.1:{}/postgres", self.port)
    }

    /// Runs one of the cluster's programs (as nobody when root), in its
    /// directory.
    fn run(&self, program: &str, args: &[&str]) -> Output {
        let exe = self.bin.join(program);
        let mut cmd = if is_root() {
            let mut c = Command::new("runuser");
            c.args(["-u", "nobody", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        cmd.args(args)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("cannot run {program}: {e}"))
    }

    /// The directory (gone once dropped).
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if self.started {
            let data = self.dir.join("data");
            let _ = self.run(
                "pg_ctl",
                &["-D", path(&data), "-m", "fast", "-w", "-t", "30", "stop"],
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temporary path")
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}
