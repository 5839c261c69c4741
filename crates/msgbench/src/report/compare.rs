//! `msgbench compare BASE NEW`: two runs of one suite side by side,
//! figure by figure, each change judged against the runs' own spread
//! ([`verdict`]), with a gate for CI (`--fail-above PCT`). A run is a
//! results file or a run in the store (`@last`, `@prev`, `@ID`:
//! [`crate::store::refs`]).
//!
//! It reads only the envelopes' generic `figures` (docs/results.md), so
//! it knows no suite's rows: two figures match when their key and metric
//! are equal (the suite is checked once for the whole file).

mod render;
pub mod verdict;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::process::ExitCode;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use crate::results::envelope::{Better, Figure, Run};
use crate::results::table::Format;
use crate::store::refs::{self, Source};
use crate::store::StoreArgs;
use verdict::{judge, trips, Verdict, DEFAULT_THRESHOLD_PCT};

/// The long help of `msgbench compare`: the verdict rule and the exit
/// status.
pub const LONG_ABOUT: &str = "\
Compares two runs of one suite, figure by figure: results files (written with --json) or runs in the results store: @last (the run started last), @prev (the run of the same suite and host before @last), @ID (run ID in msgbench history). `msgbench compare @last @prev` is the last run against the one before it on the same machine. A file whose name starts with @ is given as ./@name.

Rows are matched by their key (transport, size, placement, mode, threads...) and metric; rows in one run only are listed as 'only in base' or 'only in new'.

Verdict: a change (new - base) / base is called only when it is larger than --threshold (default 10 %) and, when both figures carry at least two repeats, the repeats' ranges do not overlap (every new repeat beyond every base repeat, the Mann-Whitney U = 0 outcome: exact two-sided p = 0.008 for 5 + 5 repeats, 0.029 for 4 + 4, 0.1 for 3 + 3). A called change is 'faster' or 'slower' by the figure's 'better' (lower or higher); a figure with better = neither is 'changed' and never fails the gate. Anything else is 'no change'.

Exit status: 0; 1 when --fail-above PCT is given and a row was called slower by more than PCT percent of its base value (the rows are named on standard error), or when a file cannot be read or the two cannot be compared (another suite or format version; one line on standard error); 2 for a usage error.";

/// Options of `msgbench compare`.
#[derive(Debug, Clone, Args)]
pub struct CompareArgs {
    /// The reference run: a results file written with --json, or @last,
    /// @prev, @ID from the results store.
    #[arg(value_name = "BASE")]
    pub base: String,
    /// The run judged against it (a file, or @last, @prev, @ID).
    #[arg(value_name = "NEW")]
    pub new: String,
    /// Exit with status 1 when any row was called slower by more than
    /// PCT percent of its base value (a row within the noise never is).
    #[arg(long = "fail-above", value_name = "PCT", value_parser = percent)]
    pub fail_above: Option<f64>,
    /// The smallest change called, in percent; with repeats on both sides
    /// their ranges must also not overlap. The default, 10, is well above
    /// what a figure measured once moves between two runs of one build on
    /// a shared or virtual machine (a few percent).
    #[arg(long = "threshold", value_name = "PCT", value_parser = percent,
          default_value_t = DEFAULT_THRESHOLD_PCT)]
    pub threshold: f64,
    /// How the comparison is printed: table, markdown, csv, or json (every
    /// row with both values, their repeats, the change and the verdict).
    #[arg(long = "format", value_enum, default_value_t = Format::Table,
          value_name = "FORMAT", hide_possible_values = true)]
    pub format: Format,
    /// Where @last, @prev and @ID are looked up (--store).
    #[command(flatten)]
    pub store: StoreArgs,
}

/// A percentage option's value was not a finite number, 0 or more.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("must be a percentage, 0 or more")]
pub struct BadPercent;

/// Parses a percentage: a finite number, 0 or more.
fn percent(s: &str) -> Result<f64, BadPercent> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        _ => Err(BadPercent),
    }
}

/// One row of the comparison: a figure in either run or both.
#[derive(Debug, Clone, Serialize)]
pub struct Row {
    /// The row's key within its suite.
    pub key: BTreeMap<String, String>,
    /// The metric.
    pub metric: String,
    /// Its unit (the base run's where both have it).
    pub unit: String,
    /// Which way it improves (the base run's where both have it).
    pub better: Better,
    /// The base run's value.
    pub base: Option<f64>,
    /// The new run's value.
    pub new: Option<f64>,
    /// The base run's repeats.
    pub base_repeats: Vec<f64>,
    /// The new run's repeats.
    pub new_repeats: Vec<f64>,
    /// The change in percent of the base value (`null`: one run only, or
    /// from 0).
    pub change_pct: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
    /// Why, in a few words.
    pub why: String,
}

impl Row {
    /// A row measured in both runs, judged.
    fn both(b: &Figure, n: &Figure, threshold: f64) -> Row {
        let j = judge(b, n, threshold);
        Row {
            change_pct: j.change_pct,
            verdict: j.verdict,
            why: j.why,
            ..Row::one(b, Verdict::NoChange).with_new(n)
        }
    }

    /// A row from one figure, with `verdict` (only in base or new).
    fn one(f: &Figure, verdict: Verdict) -> Row {
        let (base, new, base_repeats, new_repeats) = match verdict {
            Verdict::OnlyNew => (None, Some(f.value), Vec::new(), f.repeats.clone()),
            _ => (Some(f.value), None, f.repeats.clone(), Vec::new()),
        };
        Row {
            key: f.key.clone(),
            metric: f.metric.clone(),
            unit: f.unit.clone(),
            better: f.better,
            base,
            new,
            base_repeats,
            new_repeats,
            change_pct: None,
            verdict,
            why: String::new(),
        }
    }

    fn with_new(mut self, n: &Figure) -> Row {
        self.new = Some(n.value);
        self.new_repeats = n.repeats.clone();
        self
    }

    /// The key and metric as one line, `transport=uds size=64 p50_ns`.
    pub fn name(&self) -> String {
        let mut parts: Vec<String> = self.key.iter().map(|(k, v)| format!("{k}={v}")).collect();
        parts.push(self.metric.clone());
        parts.join(" ")
    }
}

/// Two runs compared.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The suite of both runs.
    pub suite: String,
    /// The base run: its file and start.
    pub base: RunRef,
    /// The new run.
    pub new: RunRef,
    /// `--threshold`.
    pub threshold_pct: f64,
    /// `--fail-above`, if given.
    pub fail_above_pct: Option<f64>,
    /// Every row: base order, then rows of the new run only.
    pub rows: Vec<Row>,
    /// The rows that trip `--fail-above` (their names).
    pub failing: Vec<String>,
    /// Remarks: differences between the machines, unfinished runs.
    pub notes: Vec<String>,
}

/// Which run, as shown.
#[derive(Debug, Clone, Serialize)]
pub struct RunRef {
    /// The file, or `@ID` for a stored run.
    pub path: String,
    /// Its start, RFC 3339.
    pub started: String,
}

/// Matches the figures of two runs (each with the name it is shown
/// under: its file, or `@ID`) and judges each pair. Errors (one line,
/// naming both) when the runs cannot be compared.
pub fn compare(
    (base_path, base): (&str, &Run),
    (new_path, new): (&str, &Run),
    threshold: f64,
    fail_above: Option<f64>,
) -> Result<Comparison> {
    if base.suite != new.suite || base.schema != new.schema {
        bail!(
            "{} is a {} run (format {}), {} a {} run (format {}): only runs of one suite and format compare",
            base_path,
            base.suite,
            base.schema,
            new_path,
            new.suite,
            new.schema
        );
    }
    let rows = match_rows(&base.figures, &new.figures, threshold);
    let failing = match fail_above {
        Some(pct) => rows
            .iter()
            .filter(|r| trips(r.verdict, r.change_pct, pct))
            .map(Row::name)
            .collect(),
        None => Vec::new(),
    };
    Ok(Comparison {
        suite: base.suite.clone(),
        base: RunRef {
            path: base_path.to_string(),
            started: base.started.clone(),
        },
        new: RunRef {
            path: new_path.to_string(),
            started: new.started.clone(),
        },
        threshold_pct: threshold,
        fail_above_pct: fail_above,
        rows,
        failing,
        notes: notes(base, new),
    })
}

/// Pairs figures by key and metric: the k-th base figure of a key with
/// the k-th new one (a run normally has each once), in base order, then
/// the new run's unmatched figures.
pub fn match_rows(base: &[Figure], new: &[Figure], threshold: f64) -> Vec<Row> {
    type Id<'a> = (&'a BTreeMap<String, String>, &'a str);
    let mut by_id: HashMap<Id, VecDeque<usize>> = HashMap::new();
    for (i, f) in new.iter().enumerate() {
        by_id
            .entry((&f.key, f.metric.as_str()))
            .or_default()
            .push_back(i);
    }
    let mut used = vec![false; new.len()];
    let mut rows = Vec::with_capacity(base.len());
    for b in base {
        let hit = by_id
            .get_mut(&(&b.key, b.metric.as_str()))
            .and_then(VecDeque::pop_front);
        rows.push(match hit {
            Some(i) => {
                used[i] = true;
                Row::both(b, &new[i], threshold)
            }
            None => Row::one(b, Verdict::OnlyBase),
        });
    }
    let only_new = new.iter().zip(&used).filter(|(_, u)| !**u);
    rows.extend(only_new.map(|(f, _)| Row::one(f, Verdict::OnlyNew)));
    rows
}

/// Remarks on the pair: different machines or kernels, runs that were
/// interrupted or had failed rows.
fn notes(base: &Run, new: &Run) -> Vec<String> {
    let mut out = Vec::new();
    let (b, n) = (&base.environment, &new.environment);
    for (what, x, y) in [
        ("hosts", &b.hostname, &n.hostname),
        ("CPUs", &b.cpu_model, &n.cpu_model),
        ("kernels", &b.kernel, &n.kernel),
    ] {
        if x != y {
            out.push(format!("Different {what}: {x} (base), {y} (new)."));
        }
    }
    if base.started > new.started {
        out.push(format!(
            "The base run started after the new one ({} and {}): each change reads backwards in time; give the earlier run first (compare @prev @last) to read them forward.",
            base.started, new.started
        ));
    }
    for (which, run) in [("base", base), ("new", new)] {
        if run.outcome.interrupted {
            out.push(format!("The {which} run was interrupted."));
        }
        if run.outcome.failed > 0 {
            out.push(format!(
                "The {which} run had {} failed rows.",
                run.outcome.failed
            ));
        }
    }
    out
}

/// `msgbench compare`: prints the comparison and returns the exit status
/// (0; 1 when `--fail-above` trips, or when the files cannot be read or
/// compared, as every bad input; 2 for usage, from clap).
pub fn main(args: &CompareArgs) -> ExitCode {
    let result = Source::parse(&args.base)
        .and_then(|b| Ok([b, Source::parse(&args.new)?]))
        .and_then(|sources| refs::load_all(&sources, &args.store))
        .and_then(|runs| match runs.as_slice() {
            [b, n] => compare(
                (&b.name, &b.run),
                (&n.name, &n.run),
                args.threshold,
                args.fail_above,
            ),
            _ => bail!("compare takes two runs"),
        });
    let cmp = match result {
        Ok(c) => c,
        Err(e) => {
            eprintln!("msgbench: error: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    print!("{}", render::render(&cmp, args.format));
    if cmp.failing.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "msgbench compare: {} row(s) slower by more than --fail-above {}%: {}",
        cmp.failing.len(),
        cmp.fail_above_pct.unwrap_or_default(),
        cmp.failing.join("; ")
    );
    ExitCode::FAILURE
}

#[cfg(test)]
mod tests;
