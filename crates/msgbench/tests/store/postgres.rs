//! A PostgreSQL store on a real server started by the test: eight
//! processes recording at once, references and history as on SQLite, a
//! duplicate refused, a newer schema refused with the rows untouched, and
//! the server left behind by nothing.

use serde_json::Value;

use super::cluster::{self, Cluster};
use super::common::{procs_mentioning, skip, Proc, TestDir};
use super::hostile::HANG_GUARD;
use super::{eight_at_once, floor_into, ids, run_store, stored, with_store, FLOOR};

#[test]
fn a_postgres_store_on_a_server_of_its_own() {
    let Some(bin) = cluster::binaries() else {
        skip(&format!("no initdb/postgres found: {}", cluster::INSTALL));
        return;
    };
    let dir = TestDir::new("store-pg");
    let leftover;
    {
        let pg = Cluster::start(&bin);
        leftover = pg.dir().to_path_buf();
        let url = pg.url();
        eight_at_once(&dir, &url);
        references_and_history(&dir, &url);
        a_newer_schema_is_refused(&dir, &url);
    }
    assert!(
        !leftover.exists(),
        "the cluster's directory was left behind"
    );
    let left = procs_mentioning(leftover.to_str().unwrap());
    assert!(left.is_empty(), "postgres processes left behind: {left:?}");
}

#[test]
fn a_postgres_store_locked_by_another_session_costs_one_line_not_the_run() {
    let Some(bin) = cluster::binaries() else {
        skip(&format!("no initdb/postgres found: {}", cluster::INSTALL));
        return;
    };
    let dir = TestDir::new("store-pg-lock");
    let pg = Cluster::start(&bin);
    let url = pg.url();
    floor_into(&url, &dir.file("first.json"));
    // Another session holds the runs' table: every statement on it waits.
    let mut holder = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let mut tx = holder.transaction().unwrap();
    tx.batch_execute("LOCK TABLE msgbench_runs IN ACCESS EXCLUSIVE MODE")
        .unwrap();
    let json = dir.file("kept.json");
    let mut a: Vec<&str> = FLOOR.to_vec();
    a.extend(["--json", json.to_str().unwrap()]);
    let mut run = Proc::spawn_for("msgbench floor", with_store(&a, &url), HANG_GUARD);
    let list = with_store(&["history"], &url);
    let mut list = Proc::spawn_for("msgbench history", list, HANG_GUARD);
    let (run, list) = (run.wait(), list.wait());
    tx.rollback().unwrap();
    let waited =
        |l: &str| l.contains("statement timeout") || l.contains("no answer from the server");
    let line = run.assert_one_line_error(0);
    assert!(
        line.starts_with("msgbench: warning: the run was not recorded") && waited(&line),
        "{run}"
    );
    assert!(json.is_file(), "--json was not written");
    let e = list.assert_one_line_error(1);
    assert!(waited(&e), "{list}");
    assert_eq!(ids(&url).len(), 1, "the store changed");
}

/// `@last`, `@prev`, compare, export and a refused duplicate import.
fn references_and_history(dir: &TestDir, url: &str) {
    let (a, b) = (dir.file("pa.json"), dir.file("pb.json"));
    floor_into(url, &a);
    floor_into(url, &b);
    let read = |p: &std::path::Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(stored(url, "@last"), read(&b));
    assert_eq!(stored(url, "@prev"), read(&a));
    let out = run_store(&["compare", "@prev", "@last", "--format", "json"], url);
    out.assert_ok();
    let cmp: Value = serde_json::from_str(&out.stdout).unwrap();
    let all = ids(url);
    assert_eq!(cmp["new"]["path"], format!("@{}", all[all.len() - 1]));
    let out = run_store(&["history", "--last", "2"], url);
    out.assert_ok();
    assert!(
        out.stdout
            .contains("msgbench history: 2 run(s) in postgres://"),
        "{out}"
    );
    let e = run_store(&["history", "import", a.to_str().unwrap()], url).assert_one_line_error(1);
    assert!(e.contains("refused: already in the store as @"), "{e}");
    let out = run_store(
        &[
            "history",
            "trend",
            "ns_per_call",
            "floor=rdtsc",
            "--format",
            "json",
        ],
        url,
    );
    out.assert_ok();
}

/// A store whose schema a newer msgbench moved on: the run is printed
/// and written, one line says why it was not recorded, nothing changes.
fn a_newer_schema_is_refused(dir: &TestDir, url: &str) {
    let mut client = postgres::Client::connect(url, postgres::NoTls).unwrap();
    client
        .execute(
            "INSERT INTO msgbench_schema VALUES (3, 'a newer msgbench')",
            &[],
        )
        .unwrap();
    let count = |c: &mut postgres::Client| -> (i64, i64) {
        let r = c
            .query_one(
                "SELECT count(*), (SELECT count(*) FROM msgbench_figures) FROM msgbench_runs",
                &[],
            )
            .unwrap();
        (r.get(0), r.get(1))
    };
    let before = count(&mut client);
    let json = dir.file("newer.json");
    let mut a: Vec<&str> = FLOOR.to_vec();
    a.extend(["--json", json.to_str().unwrap()]);
    let out = run_store(&a, url);
    let line = out.assert_one_line_error(0);
    assert!(
        line.contains("its schema is version 3, newer than this msgbench knows (2)"),
        "{line}"
    );
    assert!(json.is_file(), "--json was not written");
    assert_eq!(count(&mut client), before, "rows changed");
}
