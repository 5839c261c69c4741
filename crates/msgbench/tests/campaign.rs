//! `msgbench campaign` with real suite runs into a private SQLite store:
//! a campaign interrupted by SIGINT in its second entry, and one killed
//! outright (SIGKILL, a power loss), each resumed: every entry in the
//! store once, the finished ones not run again, no entry left running.
//! A bad entry is refused before anything runs; every shipped campaign
//! file checks. (Two machines side by side and PostgreSQL:
//! `campaign_hosts.rs`.)

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{procs_mentioning, run_cmd, serial, Bin, Output, Proc, TestDir};
use serde_json::Value;

/// Longest a campaign of the tests may run (the quick one takes about
/// 15 s alone; a loaded machine takes longer).
const LIMIT: Duration = Duration::from_secs(180);

/// The repository's campaign files.
fn shipped(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../campaigns")
        .join(name)
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

/// `msgbench campaign FILE ARGS` into `store`, its outputs in the test's
/// directory, the summary as JSON.
fn campaign(dir: &TestDir, file: &Path, store: &Path, args: &[&str]) -> Command {
    let out = dir.file("out");
    let mut a = vec![
        "campaign",
        s(file),
        "--output-dir",
        s(&out),
        "--format",
        "json",
    ];
    a.extend(args);
    let mut c = Bin::Msgbench.cmd_with_store(a, s(store));
    c.current_dir(dir.path());
    c
}

/// Runs `cmd` to its end, within [`LIMIT`].
fn run_long(cmd: Command) -> Output {
    Proc::spawn_for("msgbench campaign", cmd, LIMIT).wait()
}

/// The summary a campaign printed.
fn summary(out: &Output) -> Value {
    serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("summary: {e}: {out}"))
}

/// Every run in `db`: (id, suite), by id.
fn runs(db: &Path) -> Vec<(i64, String)> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c
        .prepare("SELECT id, suite FROM msgbench_runs ORDER BY id")
        .unwrap();
    let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap();
    rows.map(Result::unwrap).collect()
}

/// Every campaign tag in `db`: (run, campaign, pass, entry), by run.
fn tags(db: &Path) -> Vec<(i64, String, i64, String)> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut st = c
        .prepare("SELECT run_id, campaign, pass, entry FROM msgbench_campaign_runs ORDER BY run_id")
        .unwrap();
    let rows = st
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// Starts the campaign and returns once its second entry (`entry`) is
/// measuring: announced, and its suite's banner written to its output
/// (so its own Ctrl-C handling is in place).
fn started_second(dir: &TestDir, cmd: Command, entry: &str, suite: &str) -> Proc {
    let mut p = Proc::spawn_for("msgbench campaign", cmd, LIMIT);
    p.wait_stderr(&format!("[2/3] {entry}: msgbench {suite}"));
    let text = dir.file(&format!("out/{entry}.txt"));
    let banner = format!("msgbench {suite}:");
    p.wait_until("the second entry's banner", |_| {
        std::fs::read_to_string(&text).is_ok_and(|t| t.contains(&banner))
    });
    p
}

/// No process of the test (no entry) is left running.
fn nothing_left(dir: &TestDir) {
    for _ in 0..200 {
        if procs_mentioning(s(dir.path())).is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("left running: {:?}", procs_mentioning(s(dir.path())));
}

/// The resumed campaign: every entry recorded once, in pass 1, the
/// first (`kept`, its run) not run again; the summary says so.
fn resumed(dir: &TestDir, file: &Path, db: &Path, kept: (&str, i64)) {
    let out = run_long(campaign(dir, file, db, &[]));
    out.assert_ok();
    assert!(
        out.stderr.contains(&format!(
            "[1/3] {}: done in pass 1 as @{}, not run again",
            kept.0, kept.1
        )),
        "{out}"
    );
    assert!(
        !out.stderr.contains(&format!("[1/3] {}: msgbench", kept.0)),
        "the first entry ran again: {out}"
    );
    let v = summary(&out);
    let listed: Vec<(i64, &str)> = v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["run"].as_i64().unwrap(), e["outcome"].as_str().unwrap()))
        .collect();
    assert_eq!(listed.len(), 3, "{out}");
    assert!(listed.iter().all(|(_, o)| *o == "ok"), "{out}");
    assert_eq!(listed[0].0, kept.1, "{out}");
    let stored = runs(db);
    assert_eq!(stored.len(), 3, "runs in the store: {stored:?}");
    let ids: Vec<i64> = stored.iter().map(|r| r.0).collect();
    assert_eq!(listed.iter().map(|l| l.0).collect::<Vec<_>>(), ids);
    let t = tags(db);
    let entries: Vec<&str> = t.iter().map(|t| t.3.as_str()).collect();
    assert_eq!(entries.len(), 3, "{t:?}");
    assert!(t.iter().all(|t| t.2 == 1), "{t:?}");
    assert!(
        entries[1] != entries[0] && entries[2] != entries[0] && entries[2] != entries[1],
        "{t:?}"
    );
    assert!(dir.file("out/report.html").is_file(), "no report");
}

/// The must-show: the adder, ipc --quick and the floor; SIGINT in the
/// second entry; then the same command again.
#[test]
fn interrupted_in_its_second_entry_then_resumed_it_stores_each_run_once() {
    let _one = serial();
    let dir = TestDir::new("campaign-int");
    let (file, db) = (shipped("quick.toml"), dir.file("r.db"));
    let mut p = started_second(&dir, campaign(&dir, &file, &db, &[]), "ipc", "ipc");
    p.signal(libc::SIGINT);
    let out = p.wait();
    let line = out.stderr.lines().last().unwrap_or_default().to_string();
    assert_eq!(out.code(), 1, "{out}");
    assert_eq!(
        line,
        "msgbench: error: campaign quick: interrupted at entry \"ipc\", 1 of 3 entries done; the same command resumes it"
    );
    let v = summary(&out);
    assert_eq!(v["pass"], 1);
    let e = &v["entries"];
    assert_eq!(
        (e[1]["outcome"].as_str(), e[2]["outcome"].as_str()),
        (Some("interrupted"), Some("not run")),
        "{out}"
    );
    assert!(e[1]["run"].is_null() && e[2]["run"].is_null(), "{out}");
    let first = runs(&db);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(first[0].1, "adder");
    assert_eq!(e[0]["run"].as_i64(), Some(first[0].0), "{out}");
    nothing_left(&dir);
    resumed(&dir, &file, &db, ("adder", first[0].0));
    // Finished: the same command runs nothing; --again would start pass 2.
    let out = run_cmd("msgbench campaign", campaign(&dir, &file, &db, &[]));
    out.assert_ok();
    assert!(
        out.stderr
            .contains("nothing to run (--again runs a new pass)"),
        "{out}"
    );
    assert_eq!(runs(&db).len(), 3);
    let out = run_cmd(
        "msgbench campaign",
        campaign(&dir, &file, &db, &["--again", "--check"]),
    );
    out.assert_ok();
    let v = summary(&out);
    assert_eq!(v["pass"], 2);
    assert!(v["entries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["outcome"] == "to run"));
    assert_eq!(runs(&db).len(), 3, "--check ran something");
}

/// A power loss: the campaign killed outright (SIGKILL) in its second
/// entry. The entry ends with it, unrecorded; the same command resumes.
#[test]
fn killed_outright_in_an_entry_it_resumes_the_same() {
    let _one = serial();
    let dir = TestDir::new("campaign-kill");
    let file = dir.file("c.toml");
    std::fs::write(
        &file,
        "campaign = \"power\"\n\
         [[entry]]\nname = \"first\"\nrun = \"floor --quick\"\n\
         [[entry]]\nname = \"second\"\nrun = \"ipc --quick\"\n\
         [[entry]]\nname = \"third\"\nrun = [\"floor\", \"--quick\"]\n",
    )
    .unwrap();
    let db = dir.file("r.db");
    let mut p = started_second(&dir, campaign(&dir, &file, &db, &[]), "second", "ipc");
    p.signal(libc::SIGKILL);
    let _ = p.wait_exit_within(Duration::from_secs(10));
    nothing_left(&dir);
    let first = runs(&db);
    assert_eq!(first.len(), 1, "{first:?}");
    assert_eq!(tags(&db)[0].3, "first");
    resumed(&dir, &file, &db, ("first", first[0].0));
}

/// One line naming the entry and the option, exit status 1, and nothing
/// run: no store made, no output directory.
#[test]
fn a_bad_entry_is_refused_before_anything_runs() {
    let dir = TestDir::new("campaign-bad");
    let db = dir.file("r.db");
    for (i, (run, want)) in [
        (
            "\"ipc --quick --bogus\"",
            "entry \"second\": unexpected argument '--bogus' found",
        ),
        ("\"ipc --sizes 1,x\"", "entry \"second\": --sizes 1,x: "),
        ("\"history\"", "entry \"second\": history is not a suite"),
        (
            "\"adder --modes pool --threads 100\"",
            "entry \"second\": --threads 100: a pool has 1 to 64 threads",
        ),
        (
            "\"floor --json f.json\"",
            "entry \"second\": --json: the campaign writes",
        ),
        ("3", "entry \"second\": run: a whole number"),
    ]
    .iter()
    .enumerate()
    {
        let file = dir.file(&format!("bad{i}.toml"));
        std::fs::write(
            &file,
            format!("campaign = \"bad\"\n[[entry]]\nname = \"first\"\nrun = \"floor --quick\"\n[[entry]]\nname = \"second\"\nrun = {run}\n"),
        )
        .unwrap();
        let out = run_cmd("msgbench campaign", campaign(&dir, &file, &db, &[]));
        let line = out.assert_one_line_error(1);
        assert!(
            line.starts_with(&format!("msgbench: error: {}: ", file.display()))
                && line.contains(want),
            "{run}: {line}"
        );
        assert!(out.stdout.is_empty(), "{out}");
    }
    assert!(!db.exists(), "a store was made");
    assert!(!dir.file("out").exists(), "an output directory was made");
}

/// Every campaign file in the repository: every entry parses and plans
/// (`--check`, nothing run).
#[test]
fn every_shipped_campaign_file_checks() {
    let dir = TestDir::new("campaign-shipped");
    let files: Vec<PathBuf> = std::fs::read_dir(shipped(""))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    assert!(files.len() >= 2, "{files:?}");
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let out = run_cmd(
            "msgbench campaign",
            campaign(&dir, f, &dir.file("r.db"), &["--check"]),
        );
        out.assert_ok();
        let v = summary(&out);
        let entries = v["entries"].as_array().unwrap();
        assert_eq!(
            entries.len(),
            text.matches("[[entry]]").count(),
            "{}",
            f.display()
        );
        assert!(entries.iter().all(|e| e["outcome"] == "to run"), "{out}");
    }
    let studies = std::fs::read_to_string(shipped("studies.toml")).unwrap();
    for suite in ["adder", "ipc", "rtos", "smp", "broker"] {
        assert!(
            studies.contains(&format!("run = \"{suite}")),
            "studies.toml lacks {suite}"
        );
    }
    assert!(!dir.file("r.db").exists(), "--check made a store");
}
