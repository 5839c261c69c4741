//! The suites, one folder each, none importing another, all the same
//! shape: the command line is turned into a plan before anything runs
//! (every bad option fails in one line), the plan runs with progress
//! shown and produces one result type, and renderers turn the results
//! into text. [`execute`] is that pipeline, once for every suite.

pub mod adder;
pub mod args;
pub mod broker;
pub mod floor;
pub mod ipc;
pub mod parse;
pub mod rtos;
pub mod smp;
pub mod sweep;
pub mod validate;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use crate::measure::clock::Clock;
use crate::measure::env::Environment;
use crate::measure::sched::SchedArgs;
use crate::pingpong::floor::FloorReport;
use crate::results::envelope::{self, Envelope, Figure, Outcome};
use crate::results::export::push::Gateway;
use crate::results::export::{Export, ExportError, Subject, SuiteFormat};
use crate::results::progress::Progress;
use crate::results::table::{self, Format, Section};
use crate::results::ClockInfo;
use crate::store::{self, RecordArgs, Recorded, Rendering};

/// The output options every suite has.
#[derive(Debug, Clone, Default, Args)]
pub struct OutputArgs {
    /// How results are printed on standard output: table, markdown, csv,
    /// json (the results envelope, as --json writes it), or an export for
    /// a lab's engine: bmf (Bencher), openmetrics (Prometheus), lines
    /// (`name: value unit`, LKP), lava (`lava-test-case` lines).
    #[arg(
        long = "format",
        value_enum,
        default_value = "table",
        value_name = "FORMAT"
    )]
    pub format: SuiteFormat,
    /// With --format openmetrics: also push the figures to the Prometheus
    /// Pushgateway at URL (http://HOST:PORT), as the group
    /// job=msgbench, instance=HOST.
    #[arg(long = "push", value_name = "URL")]
    pub push: Option<String>,
    /// Also write the results envelope (environment, settings, every row
    /// with its raw data, generic figures) to FILE, for `msgbench report`
    /// and `msgbench compare`.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// --store, --no-store: where the run is recorded (`msgbench history`).
    #[command(flatten)]
    pub record: RecordArgs,
}

/// What a running suite is given.
pub struct RunContext {
    /// The clock for timestamps.
    pub clock: Clock,
    /// The machine, captured before the run.
    pub environment: Environment,
    /// The progress bar (hidden unless standard error is a terminal).
    pub progress: Progress,
    /// Set by SIGINT/SIGTERM: stop early and return what was measured.
    pub stop: Arc<AtomicBool>,
}

impl RunContext {
    /// True once SIGINT or SIGTERM arrived.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// What one row means for the run's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowStatus {
    /// Measured or judged (a verdict either way that is not a failure).
    Ok,
    /// Failed: a wrong answer, a broken call, a FAIL verdict, an error.
    Failed,
    /// Not run here, with its reason in the row.
    Skipped,
    /// Cut short by SIGINT/SIGTERM.
    Interrupted,
}

/// A suite's row, as the pipeline counts it in the outcome.
pub trait SuiteRow: Serialize {
    /// What this row means for the outcome.
    fn status(&self) -> RowStatus;
}

/// The outcome of `rows`: how many, how many failed and were skipped, and
/// whether the run was interrupted (`stopped`, or a row cut short).
pub fn outcome_of<R: SuiteRow>(rows: &[R], stopped: bool) -> Outcome {
    let count = |s: RowStatus| rows.iter().filter(|r| r.status() == s).count();
    Outcome {
        rows: rows.len(),
        failed: count(RowStatus::Failed),
        skipped: count(RowStatus::Skipped),
        interrupted: stopped || count(RowStatus::Interrupted) > 0,
    }
}

/// What a suite's run produced.
pub struct Results<R> {
    /// The suite's rows, in run order.
    pub rows: Vec<R>,
    /// The machine's floor, where measured in the same run.
    pub floor: Option<FloorReport>,
    /// Rows, failures, skips, interruption: filled by [`execute`] from
    /// the rows ([`outcome_of`]) and the stop flag once the run returns;
    /// suites do not set it.
    pub outcome: Outcome,
    /// Remarks on the whole run.
    pub notes: Vec<String>,
    /// Reference programs run beside the rows (ipc's `--vs-ipc-bench`).
    pub peers: Vec<crate::results::peer::PeerRun>,
    /// The suite's answers to its study's question, judged once from the
    /// typed rows when the run ended ([`Suite::judge`]) and kept in the
    /// envelope as `verdicts`: the report shows them as they are.
    pub verdicts: Vec<String>,
}

impl<R> Results<R> {
    /// Results with `rows` and nothing else yet.
    pub fn new(rows: Vec<R>) -> Results<R> {
        Results {
            outcome: Outcome {
                rows: rows.len(),
                ..Outcome::default()
            },
            rows,
            floor: None,
            notes: Vec::new(),
            verdicts: Vec::new(),
            peers: Vec::new(),
        }
    }
}

/// One suite: how its plan is made, run and shown.
pub trait Suite {
    /// Its name, e.g. `ipc`.
    const NAME: &'static str;
    /// Its command line.
    type Args;
    /// Checked settings, stored in the envelope as `settings`.
    type Plan: Serialize;
    /// One row of its results.
    type Row: SuiteRow;

    /// Checks the command line: every bad option fails here, in one line
    /// naming it, before anything is measured.
    fn plan(args: &Self::Args) -> Result<Self::Plan>;

    /// The scheduling controls (`--fifo`, `--mlock`, `--dma-latency`) to
    /// hold while the suite runs, if it has them.
    fn sched(args: &Self::Args) -> Option<&SchedArgs> {
        let _ = args;
        None
    }

    /// About how long the plan takes to run (for the progress bar).
    fn estimate(plan: &Self::Plan) -> Duration;

    /// The line printed above the results: what is run, on what.
    fn banner(plan: &Self::Plan, cx: &RunContext) -> String;

    /// Runs the plan.
    fn run(plan: &Self::Plan, cx: &RunContext) -> Result<Results<Self::Row>>;

    /// The results as tables and prose.
    fn sections(plan: &Self::Plan, results: &Results<Self::Row>) -> Vec<Section>;

    /// The results as generic figures (for compare and report).
    fn figures(results: &Results<Self::Row>) -> Vec<Figure>;

    /// The answers to the study's question, judged from the typed rows
    /// once the run ended, kept in the envelope (`verdicts`) and shown by
    /// the report as they are; none by default.
    fn judge(_plan: &Self::Plan, _results: &Results<Self::Row>) -> Vec<String> {
        Vec::new()
    }
}

impl OutputArgs {
    /// The Pushgateway of `--push`, checked before a run starts: an
    /// address, and given with `--format openmetrics` only (one line,
    /// exit status 1, as the plan's checks of two options).
    pub fn gateway(&self) -> Result<Option<Gateway>> {
        let Some(url) = &self.push else {
            return Ok(None);
        };
        if self.format != SuiteFormat::Export(Export::Openmetrics) {
            bail!("--push {url}: pushes the openmetrics export: give it with --format openmetrics");
        }
        Gateway::parse(url).map(Some)
    }
}

/// Runs suite `S`: plan, banner, run with progress, envelope (printed with
/// `--format json`, written with `--json`), text or an export in the
/// chosen format, the run recorded, the export pushed (`--push`), and an
/// error (exit status 1) when any row failed.
pub fn execute<S: Suite>(
    args: &S::Args,
    out: &OutputArgs,
    stop: Arc<AtomicBool>,
) -> Result<Results<S::Row>> {
    let plan = S::plan(args)?;
    let gateway = out.gateway()?;
    // Held to the end of the run; applied before the environment is
    // captured, so the envelope records the controls in effect.
    let _applied = S::sched(args).map(SchedArgs::apply).transpose()?;
    let started = envelope::now();
    let clock = Clock::best();
    let cx = RunContext {
        clock,
        environment: Environment::capture(),
        progress: Progress::new(S::NAME, S::estimate(&plan)),
        stop,
    };
    let banner = format!(
        "{}\n{}",
        S::banner(&plan, &cx),
        cx.environment.context_line()
    );
    if out.format.for_people() {
        println!("{banner}\n");
    }
    let mut results = S::run(&plan, &cx)?;
    results.outcome = outcome_of(&results.rows, cx.stopped());
    results.verdicts = S::judge(&plan, &results);
    cx.progress.finish();
    let figures = S::figures(&results);
    let doc = Envelope {
        schema: envelope::SCHEMA_VERSION,
        suite: S::NAME,
        command_line: &cx.environment.command_line,
        started: &started,
        finished: envelope::now(),
        environment: &cx.environment,
        clock: &ClockInfo::of(&cx.clock),
        floor: results.floor.as_ref(),
        settings: &plan,
        rows: &results.rows,
        figures: &figures,
        outcome: &results.outcome,
        notes: &results.notes,
        peers: &results.peers,
        verdicts: &results.verdicts,
    };
    let text = envelope::text(&doc)?;
    if let Some(p) = &out.json {
        envelope::write_text(p, &text)?;
    }
    let sections = S::sections(&plan, &results);
    let subject = Subject {
        suite: S::NAME,
        host: &cx.environment.hostname,
        kernel: &cx.environment.kernel,
        figures: &figures,
    };
    let exported = print_run(out.format, &text, &sections, &subject);
    let rendering = Rendering { banner, sections };
    report_recording(
        &store::record_run(&out.record, &text, &rendering),
        out.format,
    );
    deliver(exported, gateway.as_ref(), subject.host)?;
    verdict(S::NAME, &results.outcome)?;
    Ok(results)
}

/// Prints the run on standard output in `format`: the envelope's text,
/// the sections drawn, or an export (whose text is returned, for
/// `--push`).
fn print_run(
    format: SuiteFormat,
    text: &str,
    sections: &[Section],
    subject: &Subject,
) -> Result<Option<String>, ExportError> {
    match format {
        SuiteFormat::Text(Format::Json) => print!("{text}"),
        SuiteFormat::Text(f) => print!("{}", table::render(sections, f)),
        SuiteFormat::Export(e) => {
            let t = e.export(subject)?;
            print!("{t}");
            return Ok(Some(t));
        }
    }
    Ok(None)
}

/// After the run is recorded: the export's failure as the run's one
/// error line, else the export pushed to the gateway, if one was given.
fn deliver(
    exported: Result<Option<String>, ExportError>,
    gateway: Option<&Gateway>,
    host: &str,
) -> Result<()> {
    let exported = match exported {
        Ok(x) => x,
        Err(e) => bail!("--format: cannot export the run: {e}"),
    };
    if let (Some(g), Some(text)) = (gateway, &exported) {
        g.push(host, text)?;
    }
    Ok(())
}

/// Says on standard error where the run was recorded (after tables and
/// Markdown only: CSV, JSON and export readers get nothing more), or,
/// whatever the format, that it was not and why (a failure as a warning;
/// an interrupted campaign entry, withheld on purpose, as a note): the run
/// itself is printed above and in `--json`, never lost.
fn report_recording(r: &Recorded, format: SuiteFormat) {
    match r {
        Recorded::Off => {}
        Recorded::Stored { id, location } => {
            if format.for_people() {
                eprintln!("msgbench: recorded as @{id} in {location} (msgbench history)");
            }
        }
        Recorded::Failed(why) => eprintln!("msgbench: warning: {why}"),
        Recorded::Withheld(why) => eprintln!("msgbench: {why}"),
    }
}

/// Exit status 1, with one line, when rows failed or the run was cut
/// short by SIGINT/SIGTERM (after what was measured is printed and
/// written): an incomplete run is not a success for a script.
fn verdict(suite: &str, o: &Outcome) -> Result<()> {
    if o.failed > 0 {
        bail!(
            "{suite}: {} of {} row(s) failed (see above)",
            o.failed,
            o.rows
        );
    }
    if o.interrupted {
        bail!("{suite}: interrupted; the results so far are above");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct R(RowStatus);

    impl Serialize for R {
        fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
            s.serialize_unit()
        }
    }

    impl SuiteRow for R {
        fn status(&self) -> RowStatus {
            self.0
        }
    }

    #[test]
    fn the_outcome_is_counted_from_the_rows_and_the_stop_flag() {
        use RowStatus::*;
        let rows = [R(Ok), R(Failed), R(Skipped), R(Skipped), R(Ok)];
        let o = outcome_of(&rows, false);
        assert_eq!(
            (o.rows, o.failed, o.skipped, o.interrupted),
            (5, 1, 2, false)
        );
        assert!(outcome_of(&rows, true).interrupted, "the stop flag");
        let cut = [R(Ok), R(Interrupted)];
        let o = outcome_of(&cut, false);
        assert_eq!(
            (o.rows, o.failed, o.skipped, o.interrupted),
            (2, 0, 0, true)
        );
    }
}
