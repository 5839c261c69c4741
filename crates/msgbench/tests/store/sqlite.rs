//! SQLite stores: concurrent recording, references, history, export and
//! import, and every failure of a store as one line with the run kept.

use std::path::Path;

use serde_json::Value;

use super::common::{run, Bin, TestDir};
use super::{eight_at_once, floor_into, ids, run_store, stored, with_store, FLOOR};

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn eight_processes_record_at_once_into_one_sqlite_file() {
    let dir = TestDir::new("store-8");
    let db = dir.file("sub/results.db");
    eight_at_once(&dir, s(&db));
    // WAL: readers never wait; the mode is kept in the file.
    let c = rusqlite::Connection::open(&db).unwrap();
    let mode: String = c
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn last_and_prev_resolve_as_documented() {
    let dir = TestDir::new("store-refs");
    let db = dir.file("r.db");
    let store = s(&db);
    // No runs yet: an empty list, and @last is one clear line.
    let out = run_store(&["history"], store);
    out.assert_ok();
    assert!(out.stdout.starts_with("No runs found"), "{out}");
    let e = run_store(&["compare", "@last", "@prev"], store).assert_one_line_error(1);
    assert!(e.contains("no runs recorded yet"), "{e}");

    let (a, b) = (dir.file("a.json"), dir.file("b.json"));
    floor_into(store, &a);
    floor_into(store, &b);
    let read = |p: &Path| std::fs::read_to_string(p).unwrap();
    assert_eq!(stored(store, "@last"), read(&b));
    assert_eq!(stored(store, "@prev"), read(&a));
    let [first, second] = ids(store)[..] else {
        panic!("two runs")
    };
    assert_eq!(stored(store, &first.to_string()), read(&a));
    let out = run_store(&["compare", "@prev", "@last", "--format", "json"], store);
    out.assert_ok();
    let cmp: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(cmp["base"]["path"], format!("@{first}"));
    assert_eq!(cmp["new"]["path"], format!("@{second}"));
    assert!(!cmp["rows"].as_array().unwrap().is_empty());
    // The same run against itself, by id and by reference: no change.
    let out = run_store(
        &[
            "compare",
            &format!("@{second}"),
            "@last",
            "--fail-above",
            "0",
        ],
        store,
    );
    out.assert_ok();

    report_by_reference(&dir, store, first, second);
    another_machine(&dir, store, &read(&a), &read(&b));
    latest_per_host(&dir, store, second);
}

/// `report @last @prev` lays the two stored runs side by side, each
/// named by its id; a run not in the store is one line.
fn report_by_reference(dir: &TestDir, store: &str, first: i64, second: i64) {
    let page = dir.file("refs.html");
    run_store(&["report", "@last", "@prev", "-o", s(&page)], store).assert_ok();
    let html = std::fs::read_to_string(&page).unwrap();
    for id in [first, second] {
        assert!(html.contains(&format!("@{id} (")), "no @{id} in the page");
    }
    let e = run_store(&["report", "@99", "-o", s(&page)], store).assert_one_line_error(1);
    assert!(e.contains("no run @99"), "{e}");
}

/// A run of another machine started later becomes @last; it has no
/// earlier run of its own, so @prev says so; an earlier one imported
/// after it is @prev (by start, not by id).
fn another_machine(dir: &TestDir, store: &str, a: &str, b: &str) {
    let later = edited(b, "boardB", "2099-01-01T00:00:00Z");
    let f = dir.file("boardB-late.json");
    std::fs::write(&f, &later).unwrap();
    run_store(&["history", "import", s(&f)], store).assert_ok();
    assert_eq!(stored(store, "@last"), later);
    let e = run_store(&["history", "show", "@prev"], store).assert_one_line_error(1);
    assert!(
        e.contains("@prev: no floor run of boardB before @last"),
        "{e}"
    );
    // An earlier one of boardB, imported after it: @prev goes by start.
    let earlier = edited(a, "boardB", "2098-01-01T00:00:00Z");
    let f = dir.file("boardB-early.json");
    std::fs::write(&f, &earlier).unwrap();
    run_store(&["history", "import", s(&f)], store).assert_ok();
    assert_eq!(stored(store, "@prev"), earlier);
    assert_eq!(stored(store, "@last"), later);
}

/// The latest run of each machine, side by side (`second`: this
/// machine's latest).
fn latest_per_host(dir: &TestDir, store: &str, second: i64) {
    let page = dir.file("hosts.html");
    let host = hostname();
    let out = run_store(
        &[
            "report",
            "--suite",
            "floor",
            "--host",
            &host,
            "--host",
            "boardB",
            "-o",
            s(&page),
        ],
        store,
    );
    out.assert_ok();
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(html.contains(&format!("{host} (@{second})")), "{html}");
    assert!(html.contains("boardB (@3)"), "no boardB's latest (@3)");
    let e = run_store(&["report", "--suite", "floor", "--host", "boardC"], store)
        .assert_one_line_error(1);
    assert!(e.contains("--host boardC: no floor run of boardC"), "{e}");
}

/// This machine's name, as the runs record it.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// An envelope as if run on `host`, started at `started`.
fn edited(text: &str, host: &str, started: &str) -> String {
    let mut v: Value = serde_json::from_str(text).unwrap();
    v["environment"]["hostname"] = host.into();
    v["started"] = started.into();
    serde_json::to_string_pretty(&v).unwrap() + "\n"
}

#[test]
fn history_lists_shows_exports_imports_and_trends() {
    let dir = TestDir::new("store-history");
    let db = dir.file("r.db");
    let store = s(&db);
    let (a, b) = (dir.file("a.json"), dir.file("b.json"));
    let printed = floor_into(store, &a).stdout;
    floor_into(store, &b);

    // The list, in every format.
    let out = run_store(&["history", "--suite", "floor", "--last", "1"], store);
    out.assert_ok();
    assert!(out.stdout.contains("fastest round trip"), "{out}");
    assert_eq!(out.stdout.matches("floor ").count(), 1, "{out}");
    let csv = run_store(&["history", "--format", "csv"], store);
    assert!(
        csv.stdout
            .starts_with("id,started,suite,host,kernel,outcome,headline\n"),
        "{csv}"
    );
    assert_eq!(csv.stdout.lines().count(), 3, "{csv}");
    let none = run_store(&["history", "--suite", "adder"], store);
    assert!(none.stdout.starts_with("No runs found"), "{none}");
    let future = run_store(
        &["history", "--since", "2099-01-01", "--format", "json"],
        store,
    );
    assert_eq!(future.stdout, "[]\n");
    let e = run_store(&["history", "--since", "yesterday"], store);
    assert_eq!(e.code(), 2, "{e}");
    assert!(e.stderr.contains("--since"), "{e}");

    show(store, &printed);
    let other = export_import(&dir, store, &a, &b);
    imported_show(&other);
    trend(store);
}

/// `history show`: as the suite printed it, `--store` before or after
/// the subcommand.
fn show(store: &str, printed: &str) {
    let before = run(
        Bin::Msgbench,
        ["history", "--store", store, "show", "@prev"],
    );
    assert_eq!(before.stdout, *printed, "{before}");
    let e = run(Bin::Msgbench, ["history", "--last", "1", "show", "@prev"]);
    assert_eq!(e.code(), 2, "{e}");
    assert!(e.stderr.contains("--last lists runs"), "{e}");
    let out = run_store(&["history", "show", "@prev"], store);
    out.assert_ok();
    assert_eq!(
        out.stdout, printed,
        "show differs from the run's own output"
    );
}

/// `history export` writes the envelopes byte for byte; another store
/// imports them, and refuses them the second time, and a foreign format.
/// Returns that store.
fn export_import(dir: &TestDir, store: &str, a: &Path, b: &Path) -> std::path::PathBuf {
    let exp = dir.file("exp");
    let out = run_store(
        &["history", "export", "@prev", "@last", "-o", s(&exp)],
        store,
    );
    out.assert_ok();
    let mut files: Vec<_> = std::fs::read_dir(&exp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    files.sort();
    assert_eq!(files.len(), 2, "{out}");
    let exported: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect();
    let written = [
        std::fs::read_to_string(a).unwrap(),
        std::fs::read_to_string(b).unwrap(),
    ];
    assert!(
        exported.iter().all(|e| written.contains(e)),
        "export is not byte-identical"
    );
    let e =
        run_store(&["history", "export", "@last", "-o", s(&exp)], store).assert_one_line_error(1);
    assert!(e.contains("not overwritten"), "{e}");

    let other = dir.file("other.db");
    let paths: Vec<&str> = files.iter().map(|f| s(f)).collect();
    let mut args = vec!["history", "import"];
    args.extend(&paths);
    run_store(&args, s(&other)).assert_ok();
    assert_eq!(ids(s(&other)).len(), 2);
    let out = run_store(&["history", "import", paths[0]], s(&other));
    let e = out.assert_one_line_error(1);
    assert!(e.contains("refused: already in the store as @"), "{out}");
    let v9 = dir.file("v9.json");
    std::fs::write(&v9, r#"{"schema": 9, "suite": "floor"}"#).unwrap();
    let third = dir.file("third.db");
    let out = run_store(&["history", "import", s(&v9), paths[1]], s(&third));
    assert_eq!(out.code(), 1, "{out}");
    assert!(
        out.stderr
            .contains("refused: results format version 9, this msgbench reads version 1"),
        "{out}"
    );
    assert!(out.stderr.contains("1 of 2 file(s) refused"), "{out}");
    assert_eq!(
        ids(s(&third)).len(),
        1,
        "not only the good file was imported"
    );
    assert_eq!(ids(s(&other)).len(), 2, "a refused file was stored");
    other
}

/// An imported run shows as its figures.
fn imported_show(other: &Path) {
    let out = run_store(&["history", "show", "1"], s(other));
    out.assert_ok();
    assert!(
        out.stdout.contains("imported") && out.stdout.contains("ns_per_call"),
        "{out}"
    );
}

/// `history trend`: the rdtsc cost over both runs, one series.
fn trend(store: &str) {
    let out = run_store(
        &[
            "history",
            "trend",
            "ns_per_call",
            "floor=rdtsc",
            "--format",
            "json",
        ],
        store,
    );
    out.assert_ok();
    let t: Value = serde_json::from_str(&out.stdout).unwrap();
    let series = t["series"].as_array().unwrap();
    assert_eq!(series.len(), 1, "{t}");
    assert_eq!(series[0]["points"].as_array().unwrap().len(), 2, "{t}");
    let e = run_store(&["history", "trend", "no_such_metric"], store).assert_one_line_error(1);
    assert!(e.contains("has a figure no_such_metric"), "{e}");
}

#[test]
fn a_store_that_cannot_be_written_costs_one_line_never_the_run() {
    let dir = TestDir::new("store-fail");
    // A corrupted file, a foreign SQLite file, a store of a newer msgbench.
    let (junk, foreign, newer) = (junk_store(&dir), foreign_store(&dir), newer_store(&dir));
    let rows_before = dump(&newer);
    let damaged = damaged_store(&dir);
    let files = [&junk, &foreign, &damaged];
    let files_before = files.map(|f| std::fs::read(f).unwrap());
    for (i, (store, why)) in refusals(&junk, &damaged, &foreign, &newer)
        .iter()
        .enumerate()
    {
        refused_but_run_kept(&dir, i, store, why);
    }
    // --store names itself.
    let mut a: Vec<&str> = FLOOR.to_vec();
    a.extend(["--store", "redis://x"]);
    let line = run(Bin::Msgbench, &a).assert_one_line_error(0);
    assert!(
        line.contains("--store redis://x: unknown kind of store"),
        "{line}"
    );
    // Nothing was changed in the refused stores.
    let files_after = files.map(|f| std::fs::read(f).unwrap());
    assert!(files_before == files_after, "a refused file was changed");
    assert_eq!(dump(&newer), rows_before, "the newer store was changed");
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".db") || n.contains(".db-"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["damaged.db", "foreign.db", "junk.db", "newer.db"],
        "files beside the stores"
    );
}

/// A file of junk bytes.
fn junk_store(dir: &TestDir) -> std::path::PathBuf {
    let junk = dir.file("junk.db");
    let bytes: Vec<u8> = (0..16384u32).map(|i| (i * 7919 % 253) as u8).collect();
    std::fs::write(&junk, &bytes).unwrap();
    junk
}

/// A SQLite database of something else.
fn foreign_store(dir: &TestDir) -> std::path::PathBuf {
    let foreign = dir.file("foreign.db");
    let c = rusqlite::Connection::open(&foreign).unwrap();
    c.execute_batch("CREATE TABLE invoices (id INTEGER); INSERT INTO invoices VALUES (7);")
        .unwrap();
    foreign
}

/// A real store that a newer msgbench (schema version 3) has written.
fn newer_store(dir: &TestDir) -> std::path::PathBuf {
    let newer = dir.file("newer.db");
    floor_into(s(&newer), &dir.file("first.json"));
    let c = rusqlite::Connection::open(&newer).unwrap();
    c.execute(
        "INSERT INTO msgbench_schema VALUES (3, 'a newer msgbench')",
        [],
    )
    .unwrap();
    newer
}

/// Each store a run must refuse, with the words its one line must hold.
fn refusals<'a>(
    junk: &'a Path,
    damaged: &'a Path,
    foreign: &'a Path,
    newer: &'a Path,
) -> [(&'a str, &'static str); 7] {
    [
        (s(junk), "cannot read it: file is not a database"),
        (
            s(damaged),
            "cannot read it: database disk image is malformed",
        ),
        (
            s(foreign),
            "not a msgbench results store (a SQLite database holding table(s) invoices)",
        ),
        (
            s(newer),
            "its schema is version 3, newer than this msgbench knows (2)",
        ),
        (
            "mysql://db/runs",
            "MSGBENCH_STORE mysql://db/runs: unknown kind of store 'mysql'",
        ),
        (
            "postgres://lab:s3cret@db:port/x",
            "MSGBENCH_STORE postgres://lab:***@db:port/x: bad URL",
        ),
        (
            "postgres://msgbench@127.0.0.1:1/none",
            "cannot connect: error connecting to server",
        ),
    ]
}

/// A real store, its first two pages (header, schema and version table)
/// intact and every page after them overwritten: SQLite opens it and
/// finds the damage when it reads the runs.
fn damaged_store(dir: &TestDir) -> std::path::PathBuf {
    let db = dir.file("damaged.db");
    floor_into(s(&db), &dir.file("damaged.json"));
    assert!(
        !dir.file("damaged.db-wal").exists(),
        "the store's log was not folded in on close"
    );
    let mut bytes = std::fs::read(&db).unwrap();
    assert!(bytes.len() > 2 * 4096, "a store of {} bytes", bytes.len());
    for (i, b) in bytes.iter_mut().enumerate().skip(2 * 4096) {
        *b = (i * 7919 % 253) as u8;
    }
    std::fs::write(&db, &bytes).unwrap();
    db
}

/// A run into `store` succeeds, prints and writes its envelope; one line
/// says why it was not recorded (`why`); reading the store is one line.
fn refused_but_run_kept(dir: &TestDir, i: usize, store: &str, why: &str) {
    let json = dir.file(&format!("kept{i}.json"));
    let mut a: Vec<&str> = FLOOR.to_vec();
    a.extend(["--json", s(&json)]);
    let out = super::common::run_cmd("msgbench", with_store(&a, store));
    // The run succeeds, prints and writes; one line says why it was not recorded.
    let line = out.assert_one_line_error(0);
    assert!(
        line.starts_with("msgbench: warning: the run was not recorded"),
        "{out}"
    );
    assert!(line.contains(why), "{store}: {line}");
    assert!(!line.contains("s3cret"), "{line}");
    assert!(
        out.stdout.contains("rdtsc"),
        "the run was not printed: {out}"
    );
    let text = std::fs::read_to_string(&json).expect("--json was written");
    assert!(text.contains("\"suite\": \"floor\""));
    // Reading such a store is one line too.
    let e = run_store(&["history"], store).assert_one_line_error(1);
    assert!(e.contains(why), "history on {store}: {e}");
}

/// Every row of a store's runs and schema tables, as text.
fn dump(db: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut out = Vec::new();
    for q in [
        "SELECT id || ' ' || digest || ' ' || length(envelope) FROM msgbench_runs ORDER BY id",
        "SELECT version || ' ' || applied FROM msgbench_schema ORDER BY version",
        "SELECT count(*) || ' figures' FROM msgbench_figures",
    ] {
        let mut st = c.prepare(q).unwrap();
        let rows = st.query_map([], |r| r.get::<_, String>(0)).unwrap();
        out.extend(rows.map(|r| r.unwrap()));
    }
    out
}

#[test]
fn no_store_records_nothing_and_the_default_is_the_data_directory() {
    let dir = TestDir::new("store-default");
    let data = dir.file("data");
    // --no-store: nothing written, even where the store would be.
    let mut c = Bin::Msgbench.cmd(FLOOR);
    c.env_remove("MSGBENCH_NO_STORE")
        .env("XDG_DATA_HOME", &data)
        .arg("--no-store");
    let out = super::common::run_cmd("msgbench", c);
    out.assert_ok();
    assert!(out.stderr.is_empty(), "{out}");
    assert!(!data.exists(), "--no-store wrote {}", data.display());
    // Without --store or MSGBENCH_STORE: $XDG_DATA_HOME/msgbench/results.db.
    let mut c = Bin::Msgbench.cmd(FLOOR);
    c.env_remove("MSGBENCH_NO_STORE")
        .env("XDG_DATA_HOME", &data);
    let out = super::common::run_cmd("msgbench", c);
    out.assert_ok();
    let db = data.join("msgbench/results.db");
    assert!(
        out.stderr
            .contains(&format!("recorded as @1 in {}", db.display())),
        "{out}"
    );
    assert!(db.is_file());
    // Then $HOME/.local/share when XDG_DATA_HOME is not set.
    let home = dir.file("home");
    let mut c = Bin::Msgbench.cmd(["history", "--format", "json"]);
    c.env_remove("XDG_DATA_HOME").env("HOME", &home);
    let out = super::common::run_cmd("msgbench", c);
    assert_eq!(out.stdout, "[]\n", "{out}");
    assert!(!home.exists(), "a read created the store");
}
