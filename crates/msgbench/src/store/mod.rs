//! The results store (issue 26): every suite run kept, with its whole
//! envelope (the text `--json` writes, byte for byte) and indexed columns
//! (id, suite, start, host, kernel, CPU model, tool version, outcome, a
//! headline figure), and its figures one per row for trends.
//!
//! By default an embedded SQLite file under the user's data directory
//! ([`location`]); `--store postgres://...` for a PostgreSQL server many
//! machines write to at once. Both speak through [`Backend`]; the schema
//! and its versions are in [`schema`]. Every write is one transaction.
//! A run whose recording fails is never lost: the suite prints it and
//! writes `--json` first, and [`record_run`] only reports the failure.
//! A run of a campaign's entry is recorded with its tag ([`campaign`]).

pub mod campaign;
pub mod file;
pub mod headline;
pub mod location;
mod pg;
pub mod record;
pub mod refs;
pub mod schema;
mod sql;
mod sqlite;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::results::table::Section;
pub use campaign::{CampaignFilter, CampaignRun, Tag};
pub use location::{Location, RecordArgs, StoreArgs};
pub use record::{NewRun, Origin};
use sql::Param;

/// Why the store could not be read or written (one line each; the
/// caller names the store).
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// `--store` (or `MSGBENCH_STORE`) is not a store.
    #[error("{what} {given}: {why}")]
    BadLocation {
        /// `--store` or `MSGBENCH_STORE`.
        what: String,
        /// The value, password hidden.
        given: String,
        /// What is wrong.
        why: String,
    },
    /// A file on the store's path that is not to be opened: a link of
    /// another user, a device, a link where SQLite keeps its own file.
    #[error("{path} {why}")]
    File {
        /// Where.
        path: String,
        /// What it is, and that it was refused.
        why: String,
    },
    /// No default place for the store.
    #[error("no place for the results store: neither $XDG_DATA_HOME nor $HOME is set (give --store FILE, or --no-store)")]
    NoHome,
    /// Read access to a store not made yet (no file, no tables).
    #[error("no runs recorded yet (the store does not exist)")]
    Missing,
    /// The file cannot be read as SQLite.
    #[error("cannot read it: {0} (a corrupted store, or not a SQLite file); nothing was changed")]
    Unreadable(String),
    /// A SQLite file of something else.
    #[error("not a msgbench results store (a SQLite database {0}); nothing was changed: --store names another file?")]
    Foreign(String),
    /// Written by a newer msgbench.
    #[error("its schema is version {found}, newer than this msgbench knows ({known}); nothing was changed: use a newer msgbench, or another --store")]
    Newer {
        /// The store's version.
        found: i64,
        /// The newest this msgbench knows.
        known: i64,
    },
    /// The server cannot be reached.
    #[error("cannot connect: {0}")]
    Connect(String),
    /// The run is in the store already.
    #[error("already in the store as @{0}")]
    Duplicate(i64),
    /// SQLite said the database was locked where its busy handler does
    /// not wait (a lock change it refuses at once rather than risk a
    /// deadlock, seen with eight processes making one new store): the
    /// whole recording is tried again.
    #[error("{0}")]
    Busy(String),
    /// Another process held the store's lock all the time a recording
    /// waits ([`WAIT`]).
    #[error("locked by another process for more than {} s, the longest a run waits to be recorded ({})", WAIT.as_secs(), .0)]
    Locked(String),
    /// Not an envelope this msgbench reads.
    #[error("{0}")]
    NotEnvelope(String),
    /// No such run.
    #[error("no run @{0}")]
    NotFound(i64),
    /// A campaign tag that cannot be read ([`campaign::ENV_CAMPAIGN`]).
    #[error("{0}")]
    Campaign(String),
    /// The entry of a campaign's pass is recorded already.
    #[error("campaign {campaign} has entry {entry} in pass {pass} on this host already, as @{id}: not recorded twice")]
    EntryDone {
        /// The campaign.
        campaign: String,
        /// The pass.
        pass: i64,
        /// The entry.
        entry: String,
        /// Its run.
        id: i64,
    },
    /// What the database said.
    #[error("{0}")]
    Db(String),
}

/// Which runs a query is about.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// Of this suite only.
    pub suite: Option<String>,
    /// Of these hosts only (any when empty).
    pub hosts: Vec<String>,
    /// Started at or after this time (RFC 3339 UTC, as stored).
    pub since: Option<String>,
    /// Started before this run: (started, id).
    pub before: Option<(String, i64)>,
    /// The latest this many only.
    pub last: Option<usize>,
}

impl Filter {
    /// The filter as SQL conditions on `msgbench_runs` (aliased `r`),
    /// parameters numbered from `$first` on, and its parameters.
    pub(crate) fn conditions(&self, first: usize) -> (String, Vec<Param>) {
        let mut sql: Vec<String> = vec!["TRUE".into()];
        let mut params: Vec<Param> = Vec::new();
        let next = |p: Param, params: &mut Vec<Param>| {
            params.push(p);
            format!("${}", first + params.len() - 1)
        };
        if let Some(s) = &self.suite {
            let n = next(Param::Text(s.clone()), &mut params);
            sql.push(format!("r.suite = {n}"));
        }
        if !self.hosts.is_empty() {
            let ns: Vec<String> = self
                .hosts
                .iter()
                .map(|h| next(Param::Text(h.clone()), &mut params))
                .collect();
            sql.push(format!("r.host IN ({})", ns.join(", ")));
        }
        if let Some(s) = &self.since {
            let n = next(Param::Text(s.clone()), &mut params);
            sql.push(format!("r.started >= {n}"));
        }
        if let Some((started, id)) = &self.before {
            let s = next(Param::Text(started.clone()), &mut params);
            let i = next(Param::Int(*id), &mut params);
            sql.push(format!(
                "(r.started < {s} OR (r.started = {s} AND r.id < {i}))"
            ));
        }
        (sql.join(" AND "), params)
    }
}

/// A run as listed.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Its id in the store (`@ID`).
    pub id: i64,
    /// The suite.
    pub suite: String,
    /// Start, RFC 3339 UTC.
    pub started: String,
    /// End.
    pub finished: String,
    /// Host name.
    pub host: String,
    /// Kernel.
    pub kernel: String,
    /// CPU model.
    pub cpu_model: String,
    /// msgbench version.
    pub tool_version: String,
    /// `ok`, `failed` or `interrupted`.
    pub outcome: String,
    /// The headline figure.
    pub headline: String,
    /// `run` or `import`.
    pub origin: String,
}

/// A run with its envelope.
#[derive(Debug, Clone)]
pub struct Stored {
    /// Its columns.
    pub summary: Summary,
    /// The envelope, byte for byte.
    pub envelope: String,
    /// How its suite printed it (JSON of [`Rendering`]), if recorded by it.
    pub rendering: Option<String>,
}

/// One value of a figure in one run, for trends.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Point {
    /// The run.
    pub run: i64,
    /// Its start.
    pub started: String,
    /// Its host.
    pub host: String,
    /// Its suite.
    pub suite: String,
    /// The figure's key.
    pub key: BTreeMap<String, String>,
    /// The value.
    pub value: f64,
    /// Its unit.
    pub unit: String,
}

/// How a suite printed a run: the banner line above the results (with
/// the machine's context line) and the sections, for `history show`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rendering {
    /// What was run, on what (printed above tables and Markdown).
    pub banner: String,
    /// The results as tables and prose.
    pub sections: Vec<Section>,
}

/// What a store can do.
pub trait Backend {
    /// Records `run` in one transaction; its id.
    fn insert(&mut self, run: &NewRun) -> Result<i64, StoreError>;
    /// The runs `filter` selects, oldest first.
    fn list(&mut self, filter: &Filter) -> Result<Vec<Summary>, StoreError>;
    /// Run `id` with its envelope.
    fn get(&mut self, id: i64) -> Result<Option<Stored>, StoreError>;
    /// Every value of `metric` in the runs `filter` selects, oldest first.
    fn points(&mut self, metric: &str, filter: &Filter) -> Result<Vec<Point>, StoreError>;
    /// The runs of the campaign `filter` names, by host, pass and start.
    fn campaign_runs(&mut self, filter: &CampaignFilter) -> Result<Vec<CampaignRun>, StoreError>;
}

/// Whether a command writes to the store or only reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Created on first use.
    Write,
    /// A store not made yet (no SQLite file, no tables) is
    /// [`StoreError::Missing`], not made.
    Read,
}

/// An open store.
pub struct Store {
    /// Where it is.
    pub location: Location,
    backend: Box<dyn Backend>,
}

/// The longest msgbench waits for a store: for another process's lock
/// (SQLite's busy wait and a recording's tries together) or a PostgreSQL
/// server's answer (connecting, at most `pg::CONNECT_TIMEOUT` of it,
/// included). A recording waits this long in all; any other command this
/// long for each of its operations.
pub const WAIT: Duration = Duration::from_secs(30);

impl Store {
    /// Opens (and, for writing, creates) the store at `location`,
    /// bringing its schema up to date; each operation waits at most
    /// [`WAIT`] for the store.
    pub fn open(location: Location, access: Access) -> Result<Store, StoreError> {
        Store::open_until(location, access, None)
    }

    /// As [`Store::open`], every wait for the store (this opening and
    /// every operation after it) ending by `deadline` if one is given.
    pub fn open_until(
        location: Location,
        access: Access,
        deadline: Option<Instant>,
    ) -> Result<Store, StoreError> {
        let backend: Box<dyn Backend> = match &location {
            Location::Sqlite(p) => Box::new(sqlite::Sqlite::open(p, access, deadline)?),
            Location::Postgres(url) => Box::new(pg::Postgres::open(url, access, deadline)?),
        };
        Ok(Store { location, backend })
    }

    /// Records `run`; its id.
    pub fn insert(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        self.backend.insert(run)
    }

    /// The runs `filter` selects, oldest first.
    pub fn list(&mut self, filter: &Filter) -> Result<Vec<Summary>, StoreError> {
        self.backend.list(filter)
    }

    /// Run `id`, or [`StoreError::NotFound`].
    pub fn get(&mut self, id: i64) -> Result<Stored, StoreError> {
        self.backend.get(id)?.ok_or(StoreError::NotFound(id))
    }

    /// Every value of `metric` in the runs `filter` selects, oldest first.
    pub fn points(&mut self, metric: &str, filter: &Filter) -> Result<Vec<Point>, StoreError> {
        self.backend.points(metric, filter)
    }

    /// The runs of the campaign `filter` names, by host, pass and start.
    pub fn campaign_runs(
        &mut self,
        filter: &CampaignFilter,
    ) -> Result<Vec<CampaignRun>, StoreError> {
        self.backend.campaign_runs(filter)
    }
}

/// What became of a run's recording.
#[derive(Debug)]
pub enum Recorded {
    /// `--no-store`.
    Off,
    /// Recorded as `@id` in the store at `location`.
    Stored {
        /// Its id.
        id: i64,
        /// The store.
        location: Location,
    },
    /// Not recorded: the line saying why.
    Failed(String),
    /// Not recorded on purpose: an interrupted run of a campaign's entry
    /// (the campaign runs the entry again when resumed); the line saying so.
    Withheld(String),
}

/// Records a suite's run (its envelope `text`, as `--json` wrote it, and
/// how it printed it) where `args` says, with its campaign tag if
/// [`campaign::ENV_CAMPAIGN`] gives one. Never fails: a store that cannot
/// be written gives [`Recorded::Failed`] with one line saying why; an
/// interrupted run of a campaign's entry is [`Recorded::Withheld`].
pub fn record_run(args: &RecordArgs, text: &str, rendering: &Rendering) -> Recorded {
    let location = match args.choice() {
        None => return Recorded::Off,
        Some(Ok(l)) => l,
        Some(Err(e)) => return Recorded::Failed(format!("the run was not recorded: {e}")),
    };
    let shown = location.to_string();
    let run = serde_json::to_string(rendering)
        .map_err(|e| StoreError::Db(e.to_string()))
        .and_then(|r| NewRun::from_text(text.to_string(), Origin::Run, Some(r)))
        .and_then(|mut run| {
            run.campaign = Tag::from_env()?;
            Ok(run)
        });
    if let Ok(NewRun {
        campaign: Some(t),
        outcome: "interrupted",
        ..
    }) = &run
    {
        return Recorded::Withheld(format!(
            "the run was not recorded: it was interrupted, so campaign {} runs entry {} again when resumed",
            t.campaign, t.entry
        ));
    }
    test_start();
    let deadline = Instant::now() + WAIT;
    match run.and_then(|run| insert_retrying(&location, &run, deadline)) {
        Ok(id) => Recorded::Stored { id, location },
        Err(e) => Recorded::Failed(format!(
            "the run was not recorded in the store {shown}: {e}"
        )),
    }
}

/// The pause before a recording refused `Busy` is tried again.
const BUSY_PAUSE: Duration = Duration::from_millis(100);

/// Opens the store and inserts `run`, again from the start (each try is
/// one transaction, rolled back when refused) while SQLite answers
/// `Busy`, until `deadline`: every wait, SQLite's busy handler's
/// included, ends by then.
fn insert_retrying(
    location: &Location,
    run: &NewRun,
    deadline: Instant,
) -> Result<i64, StoreError> {
    loop {
        let tried = Store::open_until(location.clone(), Access::Write, Some(deadline))
            .and_then(|mut s| s.insert(run));
        match tried {
            Err(StoreError::Busy(why)) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(StoreError::Locked(why));
                }
                std::thread::sleep(BUSY_PAUSE.min(left));
            }
            other => return other,
        }
    }
}

/// For tests only: hold every write transaction open this many
/// milliseconds (at most 5,000) before it commits, so that processes
/// recording at once really wait for each other's lock. Unset, empty or
/// not a number: no wait.
pub const TEST_HOLD_ENV: &str = "MSGBENCH_TEST_STORE_HOLD_MS";

/// For tests only: a suite run opens the store no sooner than this time
/// (milliseconds since the epoch; at most 10 s ahead), so that processes
/// started together reach a new store at the same moment.
pub const TEST_START_ENV: &str = "MSGBENCH_TEST_STORE_START_AT_MS";

/// Waits as [`TEST_START_ENV`] asks (before the store is opened).
fn test_start() {
    let Some(at) = std::env::var(TEST_START_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return;
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let wait = at.saturating_sub(now).min(10_000);
    std::thread::sleep(std::time::Duration::from_millis(wait));
}

/// Waits as [`TEST_HOLD_ENV`] asks (inside a write transaction).
pub(crate) fn test_hold() {
    let ms = std::env::var(TEST_HOLD_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0)
        .min(5_000);
    if ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_filter_numbers_its_parameters_in_order() {
        let f = Filter {
            suite: Some("adder".into()),
            hosts: vec!["a".into(), "b".into()],
            since: Some("2026-01-01T00:00:00Z".into()),
            before: Some(("2026-02-01T00:00:00Z".into(), 7)),
            last: Some(3),
        };
        let (sql, params) = f.conditions(2);
        assert_eq!(
            sql,
            "TRUE AND r.suite = $2 AND r.host IN ($3, $4) AND r.started >= $5 AND (r.started < $6 OR (r.started = $6 AND r.id < $7))"
        );
        assert_eq!(params.len(), 6);
        assert_eq!(params[5], Param::Int(7));
        assert_eq!(
            Filter::default().conditions(1),
            ("TRUE".to_string(), vec![])
        );
    }
}
