//! `msgbench campaign FILE`: a list of suite runs written in a small
//! TOML file ([`mod@file`]), run one after the other, each recorded in the
//! results store tagged with the campaign, its pass and the machine;
//! one summary table at the end ([`summary`]) and one report.
//!
//! The order of things: the file is read, every entry is checked with
//! msgbench's own command line and its suite's plan ([`check`]), and the
//! store is asked what is done ([`pass`]), all before anything runs; then
//! each entry not done runs as a child process of its own ([`child`]),
//! announced on standard error, its output in the output directory. The
//! store is the campaign's memory: interrupted (Ctrl-C, a power loss),
//! the same command resumes with the entries not recorded, and does not
//! run a recorded one again; `--again` runs the campaign anew.

pub mod check;
pub mod child;
pub mod file;
pub mod pass;
pub mod summary;

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::{Args, CommandFactory};

use crate::results::table::Format;
use crate::store::{Access, Location, RecordArgs, Store, StoreArgs, StoreError, Tag};
use check::Checked;
use file::Campaign;
use pass::Pass;
use summary::Summary;

/// The long help of `msgbench campaign`.
pub const LONG_ABOUT: &str = "\
Runs the suite runs a campaign file lists, one after the other, each recorded in the results store tagged with the campaign and this machine; prints one summary table at the end and writes one report.

The file (TOML):

  campaign = \"quick\"
  [[entry]]
  name = \"adder\"
  run = \"adder --threads 1,2 -t uds\"     # the suite and its options, as on the command line
  [[entry]]
  name = \"floor\"
  run = [\"floor\", \"--quick\"]            # or a list of words

Every entry is checked before anything runs (its options, its suite's plan): a bad one is refused in one line naming the entry and the option. Each entry runs as `msgbench SUITE ...`; what it prints goes to DIR/ENTRY.txt, its envelope to DIR/ENTRY.json (--output-dir DIR).

Resuming: the store is the campaign's memory. A pass is one run of the campaign on this machine. Interrupted (Ctrl-C, SIGTERM, a power loss), the entry that was running is not recorded; the same command goes on with the same pass and runs only the entries not recorded in it. Run again once finished, it runs nothing and shows the summary again; --again starts a new pass. An entry changed since its pass ran it is refused (put it back, or --again).

msgbench report --campaign NAME --host A --host B puts two machines' latest passes side by side.";

/// Options of `msgbench campaign`.
#[derive(Debug, Clone, Args)]
pub struct CampaignArgs {
    /// The campaign file (TOML: `campaign = "NAME"` and `[[entry]]` tables of `name` and `run`).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Start a new pass: run every entry, whatever the last pass on this machine did.
    #[arg(long = "again")]
    pub again: bool,
    /// Check the file and show what would run and what is done; run nothing.
    #[arg(long = "check")]
    pub check: bool,
    /// Where each entry's output goes: DIR/ENTRY.txt (as its suite
    /// printed it) and DIR/ENTRY.json (its envelope) [default:
    /// msgbench-results/campaign-NAME].
    #[arg(long = "output-dir", value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Where the report of the campaign's runs is written [default: DIR/report.html].
    #[arg(long = "report", value_name = "FILE")]
    pub report: Option<PathBuf>,
    /// How the summary is printed: table, markdown, csv, or json.
    #[arg(long = "format", value_enum, default_value_t = Format::Table, value_name = "FORMAT")]
    pub format: Format,
    /// Where every entry is recorded and the campaign's progress is read.
    #[command(flatten)]
    pub store: StoreArgs,
}

/// What one invocation knows: the campaign, its checked entries, where.
struct Ctx {
    campaign: Campaign,
    entries: Vec<Checked>,
    location: Location,
    host: String,
}

/// What became of the entries run in this invocation.
#[derive(Default)]
struct Ran {
    /// Why an entry has no run: `interrupted`, `not recorded (...)`.
    notes: BTreeMap<String, String>,
    /// The entry running when the campaign was stopped.
    interrupted: Option<String>,
}

/// Runs `msgbench campaign`, entries checked against `P`, msgbench's
/// command line.
pub fn run<P: CommandFactory>(args: &CampaignArgs, stop: Arc<AtomicBool>) -> Result<()> {
    let campaign = file::load(&args.file)?;
    let entries = check::check(&P::command(), &campaign)?;
    let cx = Ctx {
        campaign,
        entries,
        location: location(&args.store)?,
        host: crate::measure::env::hostname(),
    };
    let pass = pass::choose(
        &cx.campaign,
        &cx.entries,
        runs(&cx, !args.check)?,
        args.again,
    )?;
    if args.check {
        return show_check(&cx, &pass, args.format);
    }
    let dir = args.dir.clone().unwrap_or_else(|| {
        PathBuf::from("msgbench-results").join(format!("campaign-{}", cx.campaign.name))
    });
    std::fs::create_dir_all(&dir)
        .with_context(|| format!("--output-dir {}: cannot create", dir.display()))?;
    let ran = run_entries(&cx, &pass, &dir, &stop)?;
    finish(&cx, args, &dir, pass.number, &ran)
}

/// The store a campaign records in: `--store`, else as a suite's run
/// finds it; refused when recording is off (the store is its memory).
fn location(store: &StoreArgs) -> Result<Location> {
    let record = RecordArgs {
        store: store.clone(),
        no_store: false,
    };
    match record.choice() {
        None => bail!(
            "a campaign records every entry in the results store (it resumes from there), and MSGBENCH_NO_STORE is set: unset it, or give --store"
        ),
        Some(l) => Ok(l?),
    }
}

/// The store as a child is given it (`MSGBENCH_STORE`): the file's path
/// or the URL as given.
fn raw(location: &Location) -> OsString {
    match location {
        Location::Sqlite(p) => p.clone().into_os_string(),
        Location::Postgres(url) => url.into(),
    }
}

/// Opens the store (`write`: creating it, else only if there).
fn open(cx: &Ctx, write: bool) -> Result<Option<Store>> {
    let access = if write { Access::Write } else { Access::Read };
    match Store::open(cx.location.clone(), access) {
        Ok(s) => Ok(Some(s)),
        Err(StoreError::Missing) => Ok(None),
        Err(e) => Err(e).with_context(|| format!("store {}", cx.location)),
    }
}

/// The campaign's runs on this host (none in a store not made yet).
fn runs(cx: &Ctx, write: bool) -> Result<Vec<crate::store::CampaignRun>> {
    match open(cx, write)? {
        Some(mut s) => pass::runs(&mut s, &cx.campaign, &cx.host),
        None => Ok(Vec::new()),
    }
}

/// The pass as the store has it now.
fn reread(cx: &Ctx, number: i64) -> Result<Pass> {
    let done = runs(cx, false)?
        .into_iter()
        .filter(|r| r.pass == number)
        .map(|r| (r.entry.clone(), r))
        .collect();
    Ok(Pass { number, done })
}

/// `--check`: the summary of what is done and what would run.
fn show_check(cx: &Ctx, pass: &Pass, format: Format) -> Result<()> {
    let s = Summary {
        campaign: cx.campaign.name.clone(),
        host: cx.host.clone(),
        pass: pass.number,
        store: cx.location.to_string(),
        report: None,
        output_dir: None,
        entries: summary::lines(&cx.entries, pass, &BTreeMap::new(), "to run"),
    };
    print!("{}", summary::text(&s, format));
    Ok(())
}

/// `msgbench campaign NAME: ...` on standard error.
fn say(cx: &Ctx, what: &str) {
    eprintln!("msgbench campaign {}: {what}", cx.campaign.name);
}

/// Runs every entry `pass` has not done, in order, until the end or
/// `stop`.
fn run_entries(cx: &Ctx, pass: &Pass, dir: &std::path::Path, stop: &AtomicBool) -> Result<Ran> {
    let n = cx.entries.len();
    let todo = n - pass.count_done(&cx.entries);
    if todo == 0 {
        say(cx, &format!(
            "every entry is done in pass {} on {}: nothing to run (--again runs a new pass); the summary and the report again",
            pass.number, cx.host
        ));
        return Ok(Ran::default());
    }
    say(
        cx,
        &format!(
            "pass {} on {}, {todo} of {n} entries to run, recorded in the store {}",
            pass.number, cx.host, cx.location
        ),
    );
    let store = raw(&cx.location);
    let at = child::Setting { store: &store, dir };
    let mut ran = Ran::default();
    for (i, e) in cx.entries.iter().enumerate() {
        let at_entry = format!("[{}/{n}] {}", i + 1, e.name);
        if let Some(r) = pass.run_of(&e.name) {
            say(
                cx,
                &format!(
                    "{at_entry}: done in pass {} as @{}, not run again",
                    pass.number, r.summary.id
                ),
            );
            continue;
        }
        if stop.load(Ordering::Relaxed) {
            ran.interrupted = Some(e.name.clone());
            break;
        }
        one_entry(cx, pass.number, e, &at, stop, &at_entry, &mut ran)?;
        if ran.interrupted.is_some() {
            break;
        }
    }
    Ok(ran)
}

/// Runs entry `e` and notes what became of it.
fn one_entry(
    cx: &Ctx,
    pass: i64,
    e: &Checked,
    at: &child::Setting<'_>,
    stop: &AtomicBool,
    at_entry: &str,
    ran: &mut Ran,
) -> Result<()> {
    say(
        cx,
        &format!(
            "{at_entry}: msgbench {} (output: {})",
            e.words.join(" "),
            at.dir.join(format!("{}.txt", e.name)).display()
        ),
    );
    let tag = Tag {
        campaign: cx.campaign.name.clone(),
        pass,
        entry: e.name.clone(),
        args: e.words.clone(),
    };
    let started = Instant::now();
    let status = child::run(e, &tag, at, stop)?;
    let took = started.elapsed().as_secs_f64();
    match reread(cx, pass)?.run_of(&e.name) {
        Some(r) => say(
            cx,
            &format!(
                "{at_entry}: {}, recorded as @{} ({took:.1} s)",
                r.summary.outcome, r.summary.id
            ),
        ),
        None if stop.load(Ordering::Relaxed) => {
            say(cx, &format!("{at_entry}: interrupted, not recorded: it runs again when the campaign is resumed"));
            ran.notes.insert(e.name.clone(), "interrupted".into());
            ran.interrupted = Some(e.name.clone());
        }
        None => {
            let why = format!("not recorded ({status})");
            say(
                cx,
                &format!("{at_entry}: {why}; it runs again when the campaign is run again"),
            );
            ran.notes.insert(e.name.clone(), why);
        }
    }
    Ok(())
}

/// The summary, the report, and the exit status: an error when the
/// campaign was interrupted, an entry not recorded, or a run failed.
fn finish(
    cx: &Ctx,
    args: &CampaignArgs,
    dir: &std::path::Path,
    number: i64,
    ran: &Ran,
) -> Result<()> {
    let pass = reread(cx, number)?;
    let report = args
        .report
        .clone()
        .unwrap_or_else(|| dir.join("report.html"));
    let written = match open(cx, false)? {
        Some(mut s) => summary::write_report(&mut s, &cx.campaign.name, &cx.host, &report)?,
        None => false,
    };
    let otherwise = if ran.interrupted.is_some() {
        "not run"
    } else {
        "to run"
    };
    let s = Summary {
        campaign: cx.campaign.name.clone(),
        host: cx.host.clone(),
        pass: pass.number,
        store: cx.location.to_string(),
        report: written.then_some(report),
        output_dir: Some(dir.to_path_buf()),
        entries: summary::lines(&cx.entries, &pass, &ran.notes, otherwise),
    };
    print!("{}", summary::text(&s, args.format));
    verdict(cx, &s, ran)
}

/// Exit status 1, with one line, unless every entry is recorded with an
/// outcome `ok`.
fn verdict(cx: &Ctx, s: &Summary, ran: &Ran) -> Result<()> {
    let name = &cx.campaign.name;
    let (done, n) = (s.done(), s.entries.len());
    if let Some(e) = &ran.interrupted {
        bail!("campaign {name}: interrupted at entry {e:?}, {done} of {n} entries done; the same command resumes it");
    }
    if done < n {
        bail!("campaign {name}: {} of {n} entries not recorded (see above); the same command runs them again", n - done);
    }
    let failed: Vec<&str> = s
        .entries
        .iter()
        .filter(|l| l.outcome != "ok")
        .map(|l| l.entry.as_str())
        .collect();
    if !failed.is_empty() {
        bail!(
            "campaign {name}: the run of {} had failed rows (see their output); recorded, and not run again",
            failed.join(", ")
        );
    }
    Ok(())
}
