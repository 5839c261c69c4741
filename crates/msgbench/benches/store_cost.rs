//! What recording a run in the results store costs (not a test: figures
//! only, nothing fails on them).
//!
//! Takes run RUN (default `@last`) of the store FROM (a real run: its
//! envelope and the tables its suite printed) and records it N times
//! (default 50) into the store TO
//! exactly as a suite does at its end (`store::record_run`: open the
//! store, check its schema, one transaction, close), each copy with its
//! own start time so that none is a duplicate. Printed: the first
//! recording (which makes a new store) and the milliseconds per run of
//! the others (median, 90th percentile, largest).
//!
//! `cargo bench -p msgbench --bench store_cost -- FROM TO [N [RUN]]`
//! (FROM and TO: a SQLite file or a postgres:// URL; TO best new).

use std::time::{Duration, Instant, SystemTime};

use anyhow::{bail, Context, Result};
use msgbench::results::envelope;
use msgbench::store::refs::{self, RunRef};
use msgbench::store::{record_run, RecordArgs, Recorded, Rendering, StoreArgs};
use serde_json::Value;

/// Runs recorded when N is not given.
const DEFAULT_N: usize = 50;

fn main() -> Result<()> {
    // cargo bench adds --bench; the rest are ours.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let (from, to) = match &args[..] {
        [f, t, ..] if args.len() <= 4 => (f, t),
        _ => bail!("usage: store_cost FROM TO [N [RUN]]"),
    };
    let n = match args.get(2) {
        Some(n) => n.parse().context("N: not a number")?,
        None => DEFAULT_N,
    };
    let run = match args.get(3) {
        Some(r) => RunRef::parse(r, true).context("RUN: @last, @prev or @ID")??,
        None => RunRef::Last,
    };
    let (text, rendering) = stored(from, run)?;
    let record = RecordArgs {
        store: StoreArgs {
            store: Some(to.clone()),
        },
        no_store: false,
    };
    let mut times = Vec::with_capacity(n);
    for i in 0..n {
        let copy = restarted(&text, i)?;
        let start = Instant::now();
        let r = record_run(&record, &copy, &rendering);
        times.push(start.elapsed());
        if let Recorded::Failed(why) = r {
            bail!("{why}");
        }
    }
    print(to, text.len(), &times);
    Ok(())
}

/// The envelope and rendering of `run` in `store`.
fn stored(store: &str, run: RunRef) -> Result<(String, Rendering)> {
    let args = StoreArgs {
        store: Some(store.to_string()),
    };
    let mut s = refs::open(&args)?;
    let id = refs::resolve(&mut s, run)?.id;
    let run = s.get(id)?;
    let Some(r) = run.rendering else {
        bail!("@{id} in {store} was imported: it has no tables (record a suite run there first)");
    };
    Ok((run.envelope, serde_json::from_str(&r)?))
}

/// `text` with a start time of its own (`i` seconds after now), written
/// as `--json` writes an envelope.
fn restarted(text: &str, i: usize) -> Result<String> {
    let mut v: Value = serde_json::from_str(text)?;
    let at = SystemTime::now() + Duration::from_secs(i as u64);
    v["started"] = humantime::format_rfc3339_seconds(at).to_string().into();
    envelope::text(&v)
}

/// The figures.
fn print(to: &str, bytes: usize, times: &[Duration]) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let Some((first, rest)) = times.split_first() else {
        return;
    };
    let mut rest: Vec<f64> = rest.iter().map(|d| ms(*d)).collect();
    rest.sort_by(f64::total_cmp);
    let at = |q: f64| rest[((rest.len() - 1) as f64 * q).round() as usize];
    println!(
        "{}: an envelope of {bytes} bytes recorded {} times",
        msgbench::store::location::redact(to),
        times.len()
    );
    println!("  first (makes the store if new): {:.2} ms", ms(*first));
    if !rest.is_empty() {
        println!(
            "  then per run: median {:.2} ms, p90 {:.2} ms, max {:.2} ms",
            at(0.5),
            at(0.9),
            at(1.0)
        );
    }
}
