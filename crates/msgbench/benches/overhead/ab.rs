//! `--ab OTHER`: this build of the overhead bench against another
//! (`OTHER`, the bench binary of an older revision, for example), measured
//! interleaved in one run, so a before/after is one command and both
//! sides see the same machine. Each round runs both binaries whole, with
//! the same `--quick`/`--only`, in alternating order (this, other; then
//! other, this) so that a drift of the machine falls on both; each row's
//! figure is then the median of its rounds, with the spread, and the
//! median of the rounds run in the row's fastest placement only (told by
//! each round's floor, measured alternating with the library in the same
//! run), which survives the host moving the CPUs between placements.
//!
//! The other binary is read by its table, whose columns have not changed
//! since the bench began (`label`, padded to 48, then cpus, rt/run, bare
//! ns, +-%, lib ns, ...), so any revision of it can be the other side.
//! `scripts/ab-overhead REV` builds one and runs this.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use anyhow::{bail, Context};

use super::ab_parse::{parse_line, Figure};

/// A row's figures over the rounds, for each side.
#[derive(Default)]
struct Both {
    this: Vec<Figure>,
    other: Vec<Figure>,
}

/// Runs `rounds` rounds of this binary and `other`, each with `pass`, and
/// prints every row side by side.
pub fn run(other: &Path, pass: &[String], rounds: usize) -> anyhow::Result<()> {
    let this = std::env::current_exe().context("finding this bench's binary")?;
    if !other.is_file() {
        bail!("--ab {}: no such file", other.display());
    }
    println!(
        "overhead A/B: this build ({}) against {} , {rounds} rounds in alternating order; load average {}",
        this.display(),
        other.display(),
        super::loadavg()
    );
    let mut rows: BTreeMap<(String, String), Both> = BTreeMap::new();
    for r in 0..rounds {
        let order = if r % 2 == 0 {
            [true, false]
        } else {
            [false, true]
        };
        for is_this in order {
            let exe = if is_this { &this } else { other };
            eprintln!(
                "overhead A/B: round {}/{rounds}: {}",
                r + 1,
                if is_this { "this" } else { "other" }
            );
            for (key, f) in one(exe, pass)? {
                let both = rows.entry(key).or_default();
                if is_this {
                    &mut both.this
                } else {
                    &mut both.other
                }
                .push(f);
            }
        }
    }
    print_rows(&rows);
    println!("load average now {}", super::loadavg());
    Ok(())
}

/// One whole run of `exe`: its rows by (label, cpus).
fn one(exe: &Path, pass: &[String]) -> anyhow::Result<Vec<((String, String), Figure)>> {
    let out = Command::new(exe)
        .args(pass)
        .output()
        .with_context(|| format!("running {}", exe.display()))?;
    let text = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "{} failed ({}):\n{text}{}",
            exe.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(text.lines().filter_map(parse_line).collect())
}

/// A round's floor within this factor of the row's lowest floor (both
/// builds' rounds) was measured in the row's fastest placement.
const SAME_PLACEMENT: f64 = 1.25;

/// Prints each row: the library's ns for both builds over all rounds, then
/// over the rounds measured in the fastest placement only. The second is
/// the figure to read where the host moves the two CPUs between placements
/// from one round to the next (shm-spin here: its floor is 60-70 ns in one
/// placement, 100-330 ns in another): a round's floor and library
/// alternate within its run, so its floor says which placement its
/// library figure saw.
fn print_rows(rows: &BTreeMap<(String, String), Both>) {
    let header = format!(
        "{:<48} {:>5} {:>10} {:>6} {:>10} {:>6} {:>10} {:>13} {:>13} {:>10}",
        "library / floor",
        "cpus",
        "this ns",
        "+-%",
        "other ns",
        "+-%",
        "this/other",
        "fast: this",
        "other",
        "this/other"
    );
    println!("{header}\n{}", "-".repeat(header.len()));
    for ((label, cpus), b) in rows {
        if b.this.is_empty() || b.other.is_empty() {
            println!("{label:<48} {cpus:>5} only in one build");
            continue;
        }
        let lib = |v: &[Figure]| v.iter().map(|f| f.lib).collect::<Vec<_>>();
        let (t, o) = (lib(&b.this), lib(&b.other));
        let (tm, om) = (super::median(&t), super::median(&o));
        let lowest = b
            .this
            .iter()
            .chain(&b.other)
            .map(|f| f.bare)
            .fold(f64::INFINITY, f64::min);
        let fast = |v: &[Figure]| {
            let l: Vec<f64> = v
                .iter()
                .filter(|f| f.bare <= SAME_PLACEMENT * lowest)
                .map(|f| f.lib)
                .collect();
            (!l.is_empty()).then(|| (super::median(&l), l.len()))
        };
        let shown = |x: Option<(f64, usize)>| match x {
            Some((m, n)) => format!("{m:.1} ({n})"),
            None => "none".to_string(),
        };
        let ratio = match (fast(&b.this), fast(&b.other)) {
            (Some((a, _)), Some((c, _))) => format!("{:.3}x", a / c),
            _ => "-".to_string(),
        };
        println!(
            "{label:<48} {cpus:>5} {tm:>10.1} {:>6.0} {om:>10.1} {:>6.0} {:>9.3}x {:>13} {:>13} {ratio:>10}",
            super::spread_pct(&t),
            super::spread_pct(&o),
            tm / om,
            shown(fast(&b.this)),
            shown(fast(&b.other)),
        );
    }
    println!(
        "(ns = the library's ns per round trip, the median of the rounds' medians; +-% = (max-min)/median\n \
         over the rounds; fast = the same over the rounds whose floor was within {SAME_PLACEMENT}x of the\n \
         row's lowest floor (the fastest placement), with how many rounds that was: the figures to\n \
         compare where the host moves the CPUs between placements)"
    );
}
