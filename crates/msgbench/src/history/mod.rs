//! `msgbench history`: the runs in the results store ([`crate::store`]).
//!
//! - `history` lists them (id, date, suite, host, kernel, outcome,
//!   headline figure), filtered by `--suite`, `--host`, `--since`, `--last N`;
//! - `history show RUN` prints a run as its suite printed it;
//! - `history export RUN...` writes envelopes, `history import FILE...`
//!   loads envelopes written elsewhere (a board without network);
//! - `history trend METRIC [FIELD=VALUE]...` prints a figure over time,
//!   per host (`msgbench report --trend` draws it).

pub mod list;
pub mod show;
pub mod transfer;
pub mod trend;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};

use crate::results::table::Format;
use crate::store::{Filter, StoreArgs};

/// The long help of `msgbench history`.
pub const LONG_ABOUT: &str = "\
The runs in the results store: every suite run is recorded there (unless --no-store), with its whole results envelope.

Without a subcommand, lists the runs, oldest first: id, start (UTC), suite, host, kernel, outcome and a headline figure. Runs are named @ID in show, export, compare and report; @last is the run started last, @prev the run of the same suite and host before it.

The store: --store FILE (SQLite) or --store postgres://USER[:PASSWORD]@HOST[:PORT]/DB, else $MSGBENCH_STORE, else $XDG_DATA_HOME/msgbench/results.db (~/.local/share/msgbench/results.db).";

/// Options of `msgbench history`.
#[derive(Debug, Clone, Args)]
pub struct HistoryArgs {
    /// What to do (without one: list the runs).
    #[command(subcommand)]
    pub cmd: Option<HistoryCmd>,
    /// Which runs to list.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// Only the latest N runs (after the other filters).
    #[arg(long = "last", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub last: Option<u32>,
    /// How the list is printed: table, markdown, csv, or json (every
    /// column, the kernel and CPU in full).
    #[arg(long = "format", value_enum, default_value_t = Format::Table, value_name = "FORMAT")]
    pub format: Format,
    /// The results store: a SQLite file, or `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`
    /// [default: $MSGBENCH_STORE, else $XDG_DATA_HOME/msgbench/results.db].
    #[arg(long = "store", value_name = "URL", global = true)]
    pub store: Option<String>,
}

/// The subcommands of `msgbench history`.
#[derive(Debug, Clone, Subcommand)]
pub enum HistoryCmd {
    /// Print a run as its suite printed it (--format json: its envelope, byte for byte).
    Show(show::ShowArgs),
    /// Write runs' envelopes to files, for another store or `msgbench report`.
    Export(transfer::ExportArgs),
    /// Load envelopes written elsewhere (--json files, or history export); a run already in the store is refused.
    Import(transfer::ImportArgs),
    /// A figure over time, per host: METRIC (as in compare: rate_per_thread, p50_ns...) and FIELD=VALUE words naming the row.
    Trend(trend::TrendArgs),
}

/// The filters of a listing or a trend.
#[derive(Debug, Clone, Default, Args)]
pub struct FilterArgs {
    /// Only runs of this suite (adder, ipc, floor, validate, rtos, smp, broker).
    #[arg(long = "suite", value_name = "SUITE")]
    pub suite: Option<String>,
    /// Only runs of this host (repeat for several).
    #[arg(long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,
    /// Only runs started since WHEN: a date (2026-05-01), a time
    /// (2026-05-01T12:00:00Z), or a time ago (7d, 12h, 30min).
    #[arg(long = "since", value_name = "WHEN", value_parser = since)]
    pub since: Option<String>,
}

impl FilterArgs {
    /// The store filter.
    pub fn filter(&self) -> Filter {
        Filter {
            suite: self.suite.clone(),
            hosts: self.hosts.clone(),
            since: self.since.clone(),
            ..Filter::default()
        }
    }
}

/// Why a `--since` value was refused (clap prints it after `--since WHEN: `).
#[derive(Debug, thiserror::Error)]
pub enum BadSince {
    /// Not a date, a time or a time ago.
    #[error(
        "not a date (2026-05-01), a time (2026-05-01T12:00:00Z) or a time ago (7d, 12h, 30min)"
    )]
    NotWhen,
    /// A time ago beyond 1970 (no run started before, and no time
    /// before is written as a date here).
    #[error("a time ago before 1970-01-01, the earliest a run can have started")]
    BeforeEpoch,
}

/// `--since`: a date, an RFC 3339 time or a time ago, as the RFC 3339
/// UTC text runs are stored with.
pub fn since(s: &str) -> Result<String, BadSince> {
    let t = s.trim();
    let bad = |_| BadSince::NotWhen;
    let when = if let Ok(ago) = humantime::parse_duration(t) {
        std::time::SystemTime::now()
            .checked_sub(ago)
            .filter(|w| *w >= std::time::UNIX_EPOCH)
            .ok_or(BadSince::BeforeEpoch)?
    } else if t.len() == 10 {
        humantime::parse_rfc3339_weak(&format!("{t}T00:00:00")).map_err(bad)?
    } else {
        humantime::parse_rfc3339_weak(t.trim_end_matches('Z')).map_err(bad)?
    };
    // Every time here is at or after 1970, so this cannot panic.
    Ok(humantime::format_rfc3339_seconds(when).to_string())
}

/// Runs `msgbench history`.
pub fn run(args: &HistoryArgs) -> Result<()> {
    let store = StoreArgs {
        store: args.store.clone(),
    };
    if args.cmd.is_some() {
        refuse_list_options(args);
    }
    match &args.cmd {
        None => {
            let mut f = args.filter.filter();
            f.last = args.last.map(|n| n as usize);
            list::run(&store, &f, args.format)
        }
        Some(HistoryCmd::Show(a)) => show::run(&store, a),
        Some(HistoryCmd::Export(a)) => transfer::export(&store, a),
        Some(HistoryCmd::Import(a)) => transfer::import(&store, a),
        Some(HistoryCmd::Trend(a)) => trend::run(&store, a),
    }
}

/// The listing's options given with a subcommand: a usage error (exit 2,
/// as clap's), since the subcommand would not use them. (clap's
/// `args_conflicts_with_subcommands` would also refuse `--store` before
/// the subcommand.)
fn refuse_list_options(args: &HistoryArgs) {
    let f = &args.filter;
    let given = [
        ("--suite", f.suite.is_some()),
        ("--host", !f.hosts.is_empty()),
        ("--since", f.since.is_some()),
        ("--last", args.last.is_some()),
    ];
    if let Some((name, _)) = given.iter().find(|(_, g)| *g) {
        clap::Error::raw(
            clap::error::ErrorKind::ArgumentConflict,
            format!("{name} lists runs: give it after the subcommand that takes it (history trend), or without one\n"),
        )
        .exit();
    }
}

/// A run named on the command line: `ID`, `@ID`, `@last` or `@prev`.
pub fn run_ref(s: &str) -> Result<crate::store::refs::RunRef> {
    match crate::store::refs::RunRef::parse(s, true) {
        Some(r) => r,
        None => bail!("{s}: not a run"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_dates_times_and_times_ago() {
        assert_eq!(since("2026-05-01").unwrap(), "2026-05-01T00:00:00Z");
        assert_eq!(
            since("2026-05-01T12:30:00Z").unwrap(),
            "2026-05-01T12:30:00Z"
        );
        let ago = since("1h").unwrap();
        assert!(ago < humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string());
        for bad in ["yesterday", "2026-13-01", "5 parsecs", "", "1969-12-31"] {
            let e = since(bad).unwrap_err().to_string();
            assert!(e.starts_with("not a date"), "{bad}: {e}");
        }
        for long_ago in ["99999999999d", "100y", "584942417355y"] {
            match since(long_ago) {
                Err(BadSince::BeforeEpoch) => {}
                // Too large for a duration at all.
                Err(BadSince::NotWhen) if long_ago.starts_with("5849") => {}
                other => panic!("{long_ago}: {other:?}"),
            }
        }
    }
}
