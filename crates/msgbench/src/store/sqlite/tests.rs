//! The SQLite store on files of its own: migrations, refusals that leave
//! a file as it was, and the queries.

use std::path::PathBuf;

use super::*;
use crate::report::html::sample::envelope_json;
use crate::store::Origin;

/// A private directory, removed on drop.
struct Dir(PathBuf);

impl Dir {
    fn new(tag: &str) -> Dir {
        let d = std::env::temp_dir().join(format!("msgbench-store-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        Dir(d)
    }

    fn file(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// Every name in the directory, sorted.
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn sample(suite: &str, scale: f64) -> NewRun {
    let text = envelope_json(suite, scale).unwrap() + "\n";
    NewRun::from_text(text, Origin::Run, None).unwrap()
}

/// A second step, for the migration tests: a table of notes.
const V2: Migration = Migration {
    version: 2,
    sqlite: "CREATE TABLE msgbench_tags (run_id INTEGER NOT NULL, tag TEXT NOT NULL);",
    postgres: "",
};

#[test]
fn a_store_is_created_on_first_write_and_not_on_a_read() {
    let dir = Dir::new("create");
    let path = dir.file("sub/results.db");
    assert!(matches!(
        Sqlite::open(&path, Access::Read, None),
        Err(StoreError::Missing)
    ));
    assert!(!path.exists());
    let mut s = Sqlite::open(&path, Access::Write, None).unwrap();
    let mode: String = s
        .conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let run = sample("adder", 1.0);
    let id = s.insert(&run).unwrap();
    assert!(matches!(s.insert(&run), Err(StoreError::Duplicate(d)) if d == id));
    let got = s.get(id).unwrap().unwrap();
    assert_eq!(got.envelope, run.text);
    assert_eq!(got.summary.suite, "adder");
    assert!(
        got.summary.headline.starts_with("best aggregate"),
        "{}",
        got.summary.headline
    );
    assert!(s.get(id + 1).unwrap().is_none());
    let pts = s.points("rate_per_thread", &Filter::default()).unwrap();
    assert!(!pts.is_empty());
    assert!(pts.iter().all(|p| p.run == id && p.unit == "msg/s"));
}

#[test]
fn listing_filters_and_orders() {
    let dir = Dir::new("list");
    let mut s = Sqlite::open(&dir.file("r.db"), Access::Write, None).unwrap();
    let mut ids = Vec::new();
    for (i, suite) in ["floor", "adder", "floor"].iter().enumerate() {
        let mut run = sample(suite, 1.0 + i as f64);
        run.started = format!("2026-01-0{}T00:00:00Z", i + 1);
        run.host = if i == 2 { "b".into() } else { "a".into() };
        ids.push(s.insert(&run).unwrap());
    }
    let all = s.list(&Filter::default()).unwrap();
    assert_eq!(all.iter().map(|r| r.id).collect::<Vec<_>>(), ids);
    let floor = Filter {
        suite: Some("floor".into()),
        ..Filter::default()
    };
    assert_eq!(s.list(&floor).unwrap().len(), 2);
    let last = Filter {
        last: Some(2),
        ..Filter::default()
    };
    let l: Vec<i64> = s.list(&last).unwrap().iter().map(|r| r.id).collect();
    assert_eq!(l, ids[1..]);
    let since = Filter {
        since: Some("2026-01-02T00:00:00Z".into()),
        hosts: vec!["a".into()],
        ..Filter::default()
    };
    let l: Vec<i64> = s.list(&since).unwrap().iter().map(|r| r.id).collect();
    assert_eq!(l, [ids[1]]);
}

#[test]
fn a_store_is_migrated_with_its_rows_and_a_newer_one_is_refused() {
    let dir = Dir::new("migrate");
    let path = dir.file("r.db");
    let run = sample("floor", 1.0);
    let id = Sqlite::open_with(&path, Access::Write, &MIGRATIONS[..1], None)
        .unwrap()
        .insert(&run)
        .unwrap();
    let steps = [MIGRATIONS[0], V2];
    let mut s = Sqlite::open_with(&path, Access::Write, &steps, None).unwrap();
    assert_eq!(version(&s.conn).unwrap(), 2);
    assert_eq!(s.get(id).unwrap().unwrap().envelope, run.text);
    s.conn
        .execute("INSERT INTO msgbench_tags VALUES (?1, 'kept')", [id])
        .unwrap();
    drop(s);
    // This msgbench knows version 1 only: refused, nothing touched.
    let e = Sqlite::open_with(&path, Access::Write, &MIGRATIONS[..1], None)
        .err()
        .unwrap();
    assert!(matches!(e, StoreError::Newer { found: 2, known: 1 }), "{e}");
    let s = Sqlite::open_with(&path, Access::Read, &steps, None).unwrap();
    let n: i64 = s
        .conn
        .query_row("SELECT count(*) FROM msgbench_runs", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 1);
}

#[test]
fn a_foreign_or_corrupted_file_is_refused_and_left_as_it_was() {
    let dir = Dir::new("foreign");
    let other = dir.file("other.db");
    {
        let c = Connection::open(&other).unwrap();
        c.execute_batch("CREATE TABLE accounts (id INTEGER); INSERT INTO accounts VALUES (1);")
            .unwrap();
    }
    let named = dir.file("named.db");
    {
        let c = Connection::open(&named).unwrap();
        c.execute_batch("PRAGMA application_id = 42;").unwrap();
    }
    let junk = dir.file("junk.db");
    let bytes: Vec<u8> = (0..8192u32).map(|i| (i * 7919 % 251) as u8).collect();
    std::fs::write(&junk, &bytes).unwrap();
    let before: Vec<Vec<u8>> = [&other, &named, &junk]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    let names = dir.names();
    for access in [Access::Write, Access::Read] {
        let e = Sqlite::open(&other, access, None)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("not a msgbench results store") && e.contains("accounts"),
            "{e}"
        );
        let e = Sqlite::open(&named, access, None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("application id 0x2a"), "{e}");
        let e = Sqlite::open(&junk, access, None).err().unwrap().to_string();
        assert!(
            e.starts_with("cannot read it: file is not a database"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
    }
    let after: Vec<Vec<u8>> = [&other, &named, &junk]
        .iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect();
    assert!(before == after, "a refused file was changed");
    assert_eq!(dir.names(), names, "files appeared beside the refused ones");
}

/// A run of `suite` tagged as `entry` of pass `pass` of campaign `c`.
fn tagged(suite: &str, scale: f64, c: &str, pass: i64, entry: &str) -> NewRun {
    let mut run = sample(suite, scale);
    run.campaign = Some(crate::store::Tag {
        campaign: c.into(),
        pass,
        entry: entry.into(),
        args: vec![suite.into(), "--quick".into()],
    });
    run
}

#[test]
fn a_campaign_entry_is_recorded_with_its_run_once_per_pass() {
    let dir = Dir::new("campaign");
    let mut s = Sqlite::open(&dir.file("r.db"), Access::Write, None).unwrap();
    let a = s.insert(&tagged("floor", 1.0, "c", 1, "floor")).unwrap();
    let untagged = s.insert(&sample("floor", 5.0)).unwrap();
    let b = s.insert(&tagged("adder", 1.0, "c", 1, "adder")).unwrap();
    // The same entry in the same pass: refused, nothing written.
    let e = s
        .insert(&tagged("floor", 2.0, "c", 1, "floor"))
        .unwrap_err();
    assert!(
        matches!(&e, StoreError::EntryDone { id, pass: 1, .. } if *id == a),
        "{e}"
    );
    assert_eq!(s.list(&Filter::default()).unwrap().len(), 3);
    // In another pass, or another campaign, it is another entry.
    let c = s.insert(&tagged("floor", 3.0, "c", 2, "floor")).unwrap();
    let d = s
        .insert(&tagged("floor", 4.0, "other", 1, "floor"))
        .unwrap();
    let f = |hosts: &[&str]| CampaignFilter {
        campaign: "c".into(),
        hosts: hosts.iter().map(|h| h.to_string()).collect(),
    };
    let runs = s.campaign_runs(&f(&[])).unwrap();
    let got: Vec<(i64, i64, &str)> = runs
        .iter()
        .map(|r| (r.summary.id, r.pass, r.entry.as_str()))
        .collect();
    assert_eq!(got, [(a, 1, "floor"), (b, 1, "adder"), (c, 2, "floor")]);
    assert_eq!(runs[0].args, ["floor", "--quick"]);
    assert!(!runs.iter().any(|r| [untagged, d].contains(&r.summary.id)));
    let host = runs[0].summary.host.clone();
    assert_eq!(s.campaign_runs(&f(&[&host])).unwrap().len(), 3);
    assert!(s.campaign_runs(&f(&["elsewhere"])).unwrap().is_empty());
    // Deleting a run deletes its tag.
    s.conn
        .execute("DELETE FROM msgbench_runs WHERE id = ?1", [a])
        .unwrap();
    assert_eq!(s.campaign_runs(&f(&[])).unwrap().len(), 2);
}

#[test]
fn a_store_of_the_first_version_gets_the_campaign_table_with_its_runs_kept() {
    let dir = Dir::new("campaign-migrate");
    let path = dir.file("r.db");
    let run = sample("floor", 1.0);
    let id = Sqlite::open_with(&path, Access::Write, &MIGRATIONS[..1], None)
        .unwrap()
        .insert(&run)
        .unwrap();
    let mut s = Sqlite::open(&path, Access::Write, None).unwrap();
    assert_eq!(version(&s.conn).unwrap(), schema::LATEST);
    assert_eq!(s.get(id).unwrap().unwrap().envelope, run.text);
    let t = s.insert(&tagged("adder", 1.0, "c", 1, "adder")).unwrap();
    let f = CampaignFilter {
        campaign: "c".into(),
        hosts: Vec::new(),
    };
    assert_eq!(s.campaign_runs(&f).unwrap()[0].summary.id, t);
}
