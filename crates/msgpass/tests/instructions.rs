//! A guard on the fast path that a noisy machine cannot fool: the
//! instructions one 8-byte round trip executes (client call and server
//! receive and reply, both in user space, not the kernel's and not its
//! waits or spins: see [`SPINS`]), counted by valgrind's callgrind in the
//! release build of `examples/roundtrip.rs`, for every transport in place
//! and copying, against `tests/instructions.baseline`. A count more than
//! 3% over its baseline fails, as does a transport with neither a count
//! nor a reason it has none. Instructions repeat run after run where
//! wall-clock time does not, so this asserts them and never time.
//!
//! Each figure is (total at 4,000 round trips − total at 2,000) / 2,000,
//! so start-up and shutdown cancel, taken three times. Most transports
//! give the same figure each time; shm and shm-hybrid move by a few
//! percent, because whether the peer is already there when one side looks
//! decides between paths, and that only ever adds instructions. So the
//! baseline keeps the median of three, and a run is judged by its
//! smallest: it fails only when even its best is 3% over the typical.
//!
//! To take a new baseline (a change that costs instructions on purpose,
//! or a new compiler), say why:
//! `MSGPASS_INSTRUCTIONS_UPDATE="why" cargo test -p msgpass --test instructions`
//! and commit the file with the change.
//!
//! To look at some transports only (a check, never a baseline):
//! `MSGPASS_INSTRUCTIONS_ONLY=shm,shm-spin cargo test -p msgpass --test instructions`.
//!
//! Needs valgrind (`apt-get install valgrind`): without it the test says so
//! and passes, unless `CI` is set. It builds the example in release under
//! a target directory of its own (minutes the first time).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// How far over its baseline a count may go.
const TOLERANCE: f64 = 0.03;
/// Round trips of the two runs whose difference is counted.
const RUNS: (u64, u64) = (2000, 4000);
/// Pairs of runs per figure (the smallest is kept).
const REPEATS: usize = 3;
/// The functions that only spin, left out of every count (what each
/// executed, its callees included, is taken off the run's total): the shm
/// client's and server's spins, whose length depends on when the peer
/// answers (under valgrind, whose threads take turns, until the scheduler
/// switches). Kept out of line in the code for this.
const SPINS: [&str; 2] = ["ShmClient::spin_more", "ShmCore::spin_until_posted"];
/// The ways a message is moved: `examples/roundtrip.rs`'s API argument.
const APIS: [&str; 2] = ["in-place", "copy"];

fn baseline_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/instructions.baseline")
}

/// The baseline: counts by (transport, api), and transports not counted
/// with the reason.
#[derive(Default)]
struct Baseline {
    counts: BTreeMap<(String, String), f64>,
    uncounted: BTreeMap<String, String>,
    rustc: String,
}

fn read_baseline() -> Baseline {
    let text = std::fs::read_to_string(baseline_path()).expect("reading the baseline");
    let mut b = Baseline::default();
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("# rustc: ") {
            b.rustc = v.trim().to_string();
        }
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let mut words = line.splitn(3, ' ');
        let (t, api, rest) = (words.next(), words.next(), words.next());
        match (t, api, rest) {
            (Some(t), Some("-"), Some(why)) => {
                b.uncounted.insert(t.to_string(), why.trim().to_string());
            }
            (Some(t), Some(api), Some(n)) => {
                let n: f64 = n.trim().parse().unwrap_or_else(|e| panic!("{line:?}: {e}"));
                b.counts.insert((t.to_string(), api.to_string()), n);
            }
            _ => panic!("baseline line {line:?}: TRANSPORT API COUNT or TRANSPORT - WHY"),
        }
    }
    b
}

fn rustc_version() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(rustc).arg("-V").output().expect("rustc -V");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Builds the example in release, in a target directory of this test's.
fn build_example() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("instructions");
    let out = Command::new(cargo)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "build",
            "--release",
            "--quiet",
            "-p",
            "msgpass",
            "--example",
            "roundtrip",
        ])
        .arg("--target-dir")
        .arg(&target)
        .env("CARGO_INCREMENTAL", "0")
        .output()
        .expect("running cargo");
    assert!(
        out.status.success(),
        "building the example failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    target.join("release/examples/roundtrip")
}

/// Instructions of one run of `n` round trips (the whole process), less
/// what the functions of [`SPINS`] executed.
fn total(example: &Path, transport: &str, api: &str, n: u64) -> u64 {
    let profile = Removed(std::env::temp_dir().join(format!(
        "msgpass-instructions-{}-{transport}-{api}-{n}.out",
        std::process::id()
    )));
    let out = Command::new("valgrind")
        .arg("--tool=callgrind")
        .arg(format!("--callgrind-out-file={}", profile.0.display()))
        .arg(example)
        .args([transport, &n.to_string(), api, "--no-spin"])
        .output()
        .expect("running valgrind");
    let text = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{transport} {api}: the example failed under valgrind:\n{text}"
    );
    let collected: u64 = text
        .lines()
        .find_map(|l| {
            l.split_once("Collected :")
                .map(|(_, v)| v.trim().to_string())
        })
        .unwrap_or_else(|| panic!("{transport} {api}: no count in callgrind's output:\n{text}"))
        .parse()
        .expect("callgrind's count");
    collected - spun(&profile.0)
}

/// A file removed when dropped: a profile is not left behind in the
/// temporary directory when a count fails (its assertion panics).
struct Removed(std::path::PathBuf);

impl Drop for Removed {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// What the functions of [`SPINS`] executed in a callgrind profile, their
/// callees included (`callgrind_annotate --inclusive=yes`, which comes
/// with valgrind); 0 where they never ran.
fn spun(profile: &Path) -> u64 {
    let out = Command::new("callgrind_annotate")
        .arg("--inclusive=yes")
        .arg(profile)
        .output()
        .expect("running callgrind_annotate");
    assert!(out.status.success(), "callgrind_annotate failed");
    // A function's own line ends with the binary's name in brackets:
    // "1,234 (5.6%)  path/file.rs:crate::Type::function [path/binary]".
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| SPINS.iter().any(|f| l.contains(&format!("::{f} ["))))
        .map(|l| {
            let n = l.split_whitespace().next().unwrap_or_default();
            n.replace(',', "")
                .parse::<u64>()
                .expect("callgrind_annotate's count")
        })
        .sum()
}

/// Instructions per round trip, `REPEATS` times, sorted.
fn per_round_trip(example: &Path, transport: &str, api: &str) -> Vec<f64> {
    let mut v: Vec<f64> = (0..REPEATS)
        .map(|_| {
            let a = total(example, transport, api, RUNS.0);
            let b = total(example, transport, api, RUNS.1);
            (b as f64 - a as f64) / (RUNS.1 - RUNS.0) as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v
}

fn have_valgrind() -> bool {
    Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The transports MSGPASS_INSTRUCTIONS_ONLY names (comma-separated), if set.
fn only() -> Option<Vec<String>> {
    let v = std::env::var("MSGPASS_INSTRUCTIONS_ONLY").ok()?;
    Some(v.split(',').map(|t| t.trim().to_string()).collect())
}

/// Every transport's figures (each sorted), by (transport, api).
fn measure(example: &Path, base: &Baseline) -> BTreeMap<(String, String), Vec<f64>> {
    let mut got = BTreeMap::new();
    let only = only();
    for t in msgpass::transport::NAMES {
        if base.uncounted.contains_key(*t)
            || only.as_ref().is_some_and(|o| !o.iter().any(|n| n == t))
        {
            continue;
        }
        for api in APIS {
            let n = per_round_trip(example, t, api);
            eprintln!("instructions: {t} {api}: {n:.1?} per round trip");
            got.insert((t.to_string(), api.to_string()), n);
        }
    }
    got
}

/// The baseline file for `got`, keeping the reasons of the uncounted.
fn render(base: &Baseline, got: &BTreeMap<(String, String), f64>, why: &str) -> String {
    let mut s = String::from(
        "# Instructions per 8-byte round trip (client call + server receive and reply, user\n\
         # space, waits not spun: `--no-spin`; shm-spin's spins left out: SPINS),\n\
         # callgrind over examples/roundtrip.rs in release, the median of three; tests/instructions.rs fails when the\n\
         # smallest of three grows more than 3% over it.\n\
         # Update: MSGPASS_INSTRUCTIONS_UPDATE=\"why\" cargo test -p msgpass --test instructions\n",
    );
    let _ = writeln!(s, "# rustc: {}", rustc_version());
    let _ = writeln!(s, "# why: {why}");
    for ((t, api), n) in got {
        let _ = writeln!(s, "{t} {api} {n:.1}");
    }
    for (t, reason) in &base.uncounted {
        let _ = writeln!(s, "{t} - {reason}");
    }
    s
}

/// What is wrong with `got` against `base`: counts over the tolerance and
/// transports the baseline does not know.
fn verdicts(base: &Baseline, got: &BTreeMap<(String, String), f64>) -> Vec<String> {
    let mut bad = Vec::new();
    for (key, n) in got {
        match base.counts.get(key) {
            None => bad.push(format!("{} {}: {n:.1}, not in the baseline", key.0, key.1)),
            Some(b) if *n > b * (1.0 + TOLERANCE) => bad.push(format!(
                "{} {}: {n:.1} instructions per round trip, {:+.1}% over the baseline's {b:.1}",
                key.0,
                key.1,
                (n / b - 1.0) * 100.0
            )),
            Some(b) if *n < b * (1.0 - TOLERANCE) => eprintln!(
                "instructions: {} {}: {n:.1}, {:.1}% under the baseline's {b:.1}: take a new \
                 baseline to hold the gain",
                key.0,
                key.1,
                (1.0 - n / b) * 100.0
            ),
            Some(_) => {}
        }
    }
    bad
}

#[test]
fn the_fast_path_costs_no_more_instructions_than_its_baseline() {
    if !have_valgrind() {
        assert!(
            std::env::var_os("CI").is_none(),
            "valgrind is missing (apt-get install valgrind): .ci/run installs it"
        );
        eprintln!("skipped: valgrind is missing (apt-get install valgrind)");
        return;
    }
    let base = read_baseline();
    assert!(
        only().is_none() || std::env::var_os("MSGPASS_INSTRUCTIONS_UPDATE").is_none(),
        "a baseline counts every transport: unset MSGPASS_INSTRUCTIONS_ONLY"
    );
    let example = build_example();
    let got = measure(&example, &base);
    let pick = |at: fn(&[f64]) -> f64| -> BTreeMap<_, _> {
        got.iter().map(|(k, v)| (k.clone(), at(v))).collect()
    };
    if let Ok(why) = std::env::var("MSGPASS_INSTRUCTIONS_UPDATE") {
        assert!(
            !why.trim().is_empty(),
            "MSGPASS_INSTRUCTIONS_UPDATE says why"
        );
        let median = pick(|v| v[v.len() / 2]);
        std::fs::write(baseline_path(), render(&base, &median, why.trim())).unwrap();
        eprintln!(
            "instructions: baseline written to {}",
            baseline_path().display()
        );
        return;
    }
    let bad = verdicts(&base, &pick(|v| v[0]));
    let rustc = rustc_version();
    assert!(
        bad.is_empty(),
        "the fast path grew (baseline taken with {}, this is {rustc}):\n  {}\n\
         If it must, take a new baseline and say why (tests/instructions.rs's header).",
        base.rustc,
        bad.join("\n  ")
    );
}

#[test]
fn a_count_over_its_baseline_fails_and_one_under_it_does_not() {
    let mut base = Baseline::default();
    let key = ("uds".to_string(), "copy".to_string());
    base.counts.insert(key.clone(), 1000.0);
    let at = |n: f64| verdicts(&base, &BTreeMap::from([(key.clone(), n)]));
    assert!(at(1030.0).is_empty());
    assert!(at(900.0).is_empty());
    assert_eq!(at(1031.0).len(), 1, "{:?}", at(1031.0));
    let new = BTreeMap::from([(("pipe".to_string(), "copy".to_string()), 1.0)]);
    assert_eq!(verdicts(&base, &new).len(), 1, "an unknown transport fails");
}

#[test]
fn every_transport_has_a_count_or_a_reason() {
    let base = read_baseline();
    for t in msgpass::transport::NAMES {
        let counted = APIS
            .iter()
            .all(|api| base.counts.contains_key(&(t.to_string(), api.to_string())));
        assert!(
            counted || base.uncounted.contains_key(*t),
            "{t}: neither counted in tests/instructions.baseline nor given a reason"
        );
    }
}
