//! The results store through the real `msgbench` binary: real suite runs
//! (`floor --quick --cpus 0`, under a second) recorded into SQLite files
//! and into a real PostgreSQL cluster this test starts itself; runs by
//! reference (`@last`, `@prev`, `@ID`), history, export and import; and
//! every failure of a store (corrupted, foreign, newer, unreachable, a bad
//! URL) as one line, with the run printed and written all the same and
//! nothing in the store changed.
//!
//! - `sqlite.rs`: SQLite stores, the references, the failures;
//! - `postgres.rs`: the same on PostgreSQL (`cluster.rs` starts it);
//! - `hostile.rs`: links planted by another user, a device or a FIFO for
//!   a store, a lock held past the wait, a server that never answers.

#[path = "../common/mod.rs"]
mod common;

mod cluster;
mod hostile;
mod postgres;
mod sqlite;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{run_cmd, Bin, Output, Proc, TestDir};
use serde_json::Value;

/// The suite run the tests record: real, and under a second.
pub const FLOOR: [&str; 4] = ["floor", "--quick", "--cpus", "0"];

/// `msgbench ARGS` recording in (and reading) `store`.
pub fn with_store(args: &[&str], store: &str) -> Command {
    Bin::Msgbench.cmd_with_store(args, store)
}

/// Runs `msgbench ARGS` against `store` to the end.
pub fn run_store(args: &[&str], store: &str) -> Output {
    run_cmd("msgbench", with_store(args, store))
}

/// A floor run into `store`, its envelope written to `json`; succeeds.
pub fn floor_into(store: &str, json: &Path) -> Output {
    let mut a: Vec<&str> = FLOOR.to_vec();
    let j = json.to_str().unwrap();
    a.extend(["--json", j]);
    let out = run_store(&a, store);
    out.assert_ok();
    out
}

/// The ids of the runs in `store`, oldest first (`history --format json`).
pub fn ids(store: &str) -> Vec<i64> {
    let out = run_store(&["history", "--format", "json"], store);
    out.assert_ok();
    let v: Value = serde_json::from_str(&out.stdout).expect("history --format json");
    v.as_array()
        .expect("an array")
        .iter()
        .map(|r| r["id"].as_i64().expect("an id"))
        .collect()
}

/// `history show RUN --format json` (the stored envelope).
pub fn stored(store: &str, run: &str) -> String {
    let out = run_store(&["history", "show", run, "--format", "json"], store);
    out.assert_ok();
    out.stdout
}

/// Eight real runs recording into `store` at once (they open it at one
/// moment, each write transaction held open 100 ms, so they queue on the
/// store's lock, and on a new store all migrate it together): every run
/// is there exactly once and byte-identical to the envelope its `--json`
/// wrote.
pub fn eight_at_once(dir: &TestDir, store: &str) {
    let before = ids(store).len();
    let files: Vec<PathBuf> = (0..8).map(|i| dir.file(&format!("run{i}.json"))).collect();
    // All eight open the store at one moment, well after their runs end
    // (a floor --quick --cpus 0 takes a fraction of a second).
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis()
        + 2_500;
    let procs: Vec<Proc> = files
        .iter()
        .map(|f| {
            let mut a: Vec<&str> = FLOOR.to_vec();
            a.extend(["--json", f.to_str().unwrap()]);
            let mut c = with_store(&a, store);
            c.env("MSGBENCH_TEST_STORE_HOLD_MS", "100")
                .env("MSGBENCH_TEST_STORE_START_AT_MS", at.to_string());
            Proc::spawn("msgbench floor", c)
        })
        .collect();
    for mut p in procs {
        let out = p.wait();
        out.assert_ok();
        assert!(
            out.stderr.contains("msgbench: recorded as @"),
            "not recorded: {out}"
        );
        assert!(!out.stderr.contains("warning"), "{out}");
    }
    let all = ids(store);
    assert_eq!(all.len(), before + 8, "runs in the store: {all:?}");
    let unique: BTreeSet<i64> = all.iter().copied().collect();
    assert_eq!(unique.len(), all.len(), "an id twice: {all:?}");
    let written: BTreeSet<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("--json was written"))
        .collect();
    assert_eq!(written.len(), 8, "two runs wrote the same envelope");
    let kept: BTreeSet<String> = all[before..]
        .iter()
        .map(|id| stored(store, &format!("@{id}")))
        .collect();
    assert!(kept == written, "the stored envelopes differ from --json");
}
