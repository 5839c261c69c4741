//! A store in hostile hands (issue 33): a symbolic link planted by
//! another user at the store's path, at a directory on it or beside it
//! where SQLite keeps its log; a store that is a device or a FIFO; a
//! store locked by another process for longer than a run waits; a
//! PostgreSQL "server" that accepts and never answers, or answers the
//! startup and then nothing. Each costs one line: a suite's run is
//! printed and written all the same (exit 0), a command reading or
//! writing the store fails (exit 1), and nothing is written through a
//! link. Waits are bounded only by a hang guard far above the documented
//! 30 s: nothing here asserts speed.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

use super::common::{is_root, mkdir_mode, skip, Bin, Output, Proc, TestDir};
use super::{floor_into, ids, run_store, with_store, FLOOR};

/// The hang guard of a command that must give up on its own: far above
/// every wait the docs promise (30 s).
pub const HANG_GUARD: Duration = Duration::from_secs(120);

/// `nobody`, the other user of these tests.
const NOBODY: u32 = 65534;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Runs `cmd` under [`HANG_GUARD`].
fn guarded(name: &str, cmd: std::process::Command) -> Output {
    Proc::spawn_for(name, cmd, HANG_GUARD).wait()
}

/// A suite run (with `cmd`'s store) that must not be recorded: exit 0,
/// printed, `--json` written, and one line on standard error saying why;
/// that line.
fn run_kept(mut cmd: std::process::Command, json: &Path) -> String {
    cmd.args(["--json", s(json)]);
    let out = guarded("msgbench floor", cmd);
    assert!(!out.stderr.contains("panicked"), "{out}");
    let line = out.assert_one_line_error(0);
    assert!(
        line.starts_with("msgbench: warning: the run was not recorded"),
        "{out}"
    );
    assert!(
        out.stdout.contains("rdtsc"),
        "the run was not printed: {out}"
    );
    let text = std::fs::read_to_string(json).expect("--json was written");
    assert!(text.contains("\"suite\": \"floor\""));
    line
}

/// A floor run into `store` that must not be recorded (see [`run_kept`]).
fn floor_kept(store: &str, json: &Path) -> String {
    run_kept(with_store(&FLOOR, store), json)
}

/// `msgbench ARGS` on `store` that must fail with one line (exit 1)
/// holding every one of `words`; that line.
fn refused(args: &[&str], store: &str, words: &[&str]) -> String {
    let out = guarded("msgbench", with_store(args, store));
    assert!(!out.stderr.contains("panicked"), "{args:?}: {out}");
    let line = out.assert_one_line_error(1);
    for w in words {
        assert!(line.contains(w), "{args:?} on {store}: no {w:?} in {line}");
    }
    line
}

/// A symbolic link at `link` to `target`, owned by `nobody`, as another
/// user would plant it.
fn planted(target: &Path, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
    std::os::unix::fs::lchown(link, Some(NOBODY), Some(NOBODY)).unwrap();
}

/// Every command that reads the store, for the refusals.
const READERS: [&[&str]; 5] = [
    &["history"],
    &["history", "show", "@last"],
    &["history", "trend", "ns_per_call"],
    &["compare", "@prev", "@last"],
    &["history", "export", "@last", "-o", "/proc/msgbench-never"],
];

#[test]
fn a_link_planted_by_another_user_is_never_followed() {
    if !is_root() {
        skip("needs root: only root gives a link to another user (chown -h nobody)");
        return;
    }
    let dir = TestDir::new("store-links");
    // A directory anyone may write, as /tmp or a shared $XDG_DATA_HOME.
    let shared = dir.file("shared");
    mkdir_mode(&shared, 0o1777);
    at_the_store(&dir, &shared);
    at_a_directory_on_the_default_path(&dir, &shared);
    beside_the_store(&dir, &shared);
    own_links_are_followed(&dir, &shared);
}

/// A link at the store's path itself: refused, naming it, its target
/// never made, by a run or by any command reading the store.
fn at_the_store(dir: &TestDir, shared: &Path) {
    let target = dir.file("target.db");
    let link = shared.join("results.db");
    planted(&target, &link);
    let why = format!(
        "{} is a symbolic link of another user (uid {NOBODY})",
        link.display()
    );
    let line = floor_kept(s(&link), &dir.file("a.json"));
    assert!(line.contains(&why), "{line}");
    for args in READERS {
        refused(args, s(&link), &[&why]);
    }
    refused(
        &["history", "import", s(&dir.file("a.json"))],
        s(&link),
        &[&why],
    );
    assert!(!target.exists(), "the link's target was made");
}

/// A link at a directory of the default store's path
/// (`$XDG_DATA_HOME/msgbench`): nothing is made where it points.
fn at_a_directory_on_the_default_path(dir: &TestDir, shared: &Path) {
    let elsewhere = dir.file("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let data = shared.join("data");
    mkdir_mode(&data, 0o1777);
    planted(&elsewhere, &data.join("msgbench"));
    let mut c = Bin::Msgbench.cmd(FLOOR);
    c.env_remove("MSGBENCH_NO_STORE")
        .env("XDG_DATA_HOME", &data);
    let line = run_kept(c, &dir.file("b.json"));
    let why = format!(
        "{} is a symbolic link of another user",
        data.join("msgbench").display()
    );
    assert!(line.contains(&why), "{line}");
    let made: Vec<_> = std::fs::read_dir(&elsewhere).unwrap().collect();
    assert!(made.is_empty(), "written where the link points: {made:?}");
}

/// A link where SQLite keeps the log of a real store: refused naming
/// it, the store and the link's target untouched.
fn beside_the_store(dir: &TestDir, shared: &Path) {
    let real = shared.join("real.db");
    floor_into(s(&real), &dir.file("real.json"));
    let before = std::fs::read(&real).unwrap();
    let target = dir.file("wal-target");
    let wal = shared.join("real.db-wal");
    planted(&target, &wal);
    let why = format!("{} is a symbolic link beside the store", wal.display());
    let line = floor_kept(s(&real), &dir.file("c.json"));
    assert!(line.contains(&why), "{line}");
    for args in READERS {
        refused(args, s(&real), &[&why]);
    }
    assert!(!target.exists(), "the link's target was made");
    assert!(std::fs::read(&real).unwrap() == before, "the store changed");
}

/// The user's own link (root's, here) to a store elsewhere, as to
/// another disk, is followed: the run is recorded there.
fn own_links_are_followed(dir: &TestDir, shared: &Path) {
    let disk = dir.file("disk");
    std::fs::create_dir(&disk).unwrap();
    let own = shared.join("own.db");
    std::os::unix::fs::symlink(disk.join("results.db"), &own).unwrap();
    let out = floor_into(s(&own), &dir.file("d.json"));
    assert!(out.stderr.contains("recorded as @1"), "{out}");
    assert!(disk.join("results.db").is_file());
    assert_eq!(ids(s(&own)), [1]);
}

#[test]
fn a_store_that_is_not_a_regular_file_is_refused() {
    let dir = TestDir::new("store-special");
    let fifo = dir.file("fifo.db");
    let c = std::ffi::CString::new(s(&fifo)).unwrap();
    // SAFETY: mkfifo reads the NUL-terminated path, nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (store, what) in [("/dev/null", "a character device"), (s(&fifo), "a FIFO")] {
        let why = format!("{store} is {what}, not a regular file");
        let line = floor_kept(store, &dir.file("kept.json"));
        assert!(line.contains(&why), "{line}");
        for args in READERS {
            refused(args, store, &[&why]);
        }
        let page = dir.file("r.html");
        refused(&["report", "@last", "-o", s(&page)], store, &[&why]);
        refused(&["report", "--trend", "x", "-o", s(&page)], store, &[&why]);
        refused(
            &["history", "import", s(&dir.file("kept.json"))],
            store,
            &[&why],
        );
        assert!(!page.exists(), "a report was written");
    }
    assert!(!dir.file("fifo.db-wal").exists() && !dir.file("fifo.db-journal").exists());
}

#[test]
fn a_store_locked_longer_than_the_wait_costs_one_line_not_the_run() {
    let dir = TestDir::new("store-locked");
    let db = dir.file("r.db");
    let first = dir.file("first.json");
    floor_into(s(&db), &first);
    let other = dir.file("other.json");
    std::fs::write(&other, later(&std::fs::read_to_string(&first).unwrap())).unwrap();
    // Another process holds the store's write lock throughout.
    let holder = rusqlite::Connection::open(&db).unwrap();
    holder.execute_batch("BEGIN IMMEDIATE").unwrap();
    // Readers do not wait for a writer (WAL).
    run_store(&["history", "--format", "json"], s(&db)).assert_ok();
    // A run and an import at once, both waiting for the lock.
    let json = dir.file("kept.json");
    let mut a: Vec<&str> = FLOOR.to_vec();
    a.extend(["--json", s(&json)]);
    let mut run = Proc::spawn_for("msgbench floor", with_store(&a, s(&db)), HANG_GUARD);
    let import = with_store(&["history", "import", s(&other)], s(&db));
    let mut import = Proc::spawn_for("msgbench history import", import, HANG_GUARD);
    let (run, import) = (run.wait(), import.wait());
    holder.execute_batch("ROLLBACK").unwrap();
    let line = run.assert_one_line_error(0);
    assert!(
        line.starts_with("msgbench: warning: the run was not recorded")
            && line.contains("locked by another process for more than 30 s"),
        "{run}"
    );
    assert!(json.is_file(), "--json was not written");
    let e = import.assert_one_line_error(1);
    assert!(e.contains("refused: database is locked"), "{import}");
    assert_eq!(ids(s(&db)), [1], "the store changed");
}

/// An envelope's text as of a run started later (another digest).
fn later(text: &str) -> String {
    let mut v: Value = serde_json::from_str(text).unwrap();
    v["started"] = "2099-01-01T00:00:00Z".into();
    serde_json::to_string_pretty(&v).unwrap() + "\n"
}

/// What a fake PostgreSQL server does with a connection.
#[derive(Clone, Copy)]
enum Fake {
    /// Accepts it, reads nothing, answers nothing.
    Silent,
    /// Answers the startup (authenticated, ready), then nothing.
    ReadyThenSilent,
}

/// A fake PostgreSQL server on 127.0.0.1, holding every connection
/// until dropped.
struct FakeServer {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl FakeServer {
    fn start(how: Fake) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            let mut held = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((mut c, _)) => {
                        if let Fake::ReadyThenSilent = how {
                            ready(&mut c);
                        }
                        held.push(c);
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        FakeServer {
            port,
            stop,
            thread: Some(thread),
        }
    }

    fn url(&self) -> String {
        format!("postgres://msgbench@127.0.0.1:{}/runs", self.port)
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads a client's startup message (declining TLS if asked) and says
/// "authenticated, ready for a query".
fn ready(c: &mut TcpStream) {
    c.set_nonblocking(false).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    loop {
        let mut len = [0u8; 4];
        if c.read_exact(&mut len).is_err() {
            return;
        }
        let mut body = vec![0u8; (u32::from_be_bytes(len) as usize).saturating_sub(4)];
        if c.read_exact(&mut body).is_err() {
            return;
        }
        if body.starts_with(&80_877_103u32.to_be_bytes()) {
            let _ = c.write_all(b"N"); // SSLRequest: no TLS
            continue;
        }
        let mut answer = vec![b'R', 0, 0, 0, 8, 0, 0, 0, 0]; // AuthenticationOk
        answer.extend([b'Z', 0, 0, 0, 5, b'I']); // ReadyForQuery
        let _ = c.write_all(&answer);
        return;
    }
}

#[test]
fn a_postgres_server_that_never_answers_costs_one_line_not_the_run() {
    let dir = TestDir::new("store-silent");
    for (how, why) in [
        (
            Fake::Silent,
            "cannot connect: no answer from the server within 5 s",
        ),
        (Fake::ReadyThenSilent, "no answer from the server within"),
    ] {
        let server = FakeServer::start(how);
        let url = server.url();
        // All three at once: each waits for the server on its own.
        std::thread::scope(|sc| {
            sc.spawn(|| {
                let line = floor_kept(&url, &dir.file("kept.json"));
                assert!(line.contains(why), "{line}");
            });
            sc.spawn(|| refused(&["history"], &url, &[why, &url]));
            sc.spawn(|| refused(&["compare", "@prev", "@last"], &url, &[why]));
        });
    }
}
