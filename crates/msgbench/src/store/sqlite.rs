//! The store in a SQLite file (rusqlite, SQLite built in).
//!
//! Many processes may record at once: the file is in WAL mode (readers
//! never wait for a writer) and each write takes the write lock at its
//! start (`BEGIN IMMEDIATE`), so no transaction fails half-way on a lock.
//! A lock held by another process is waited for until the operation's
//! deadline ([`super::WAIT`] from its start, or the recording's own
//! deadline), by a busy handler that knows it ([`WAIT_UNTIL`]): SQLite's
//! `busy_timeout` would start its count again at each statement.
//! A file is ours when its application id is msgbench's; a file with
//! another id, or with tables and no id, is refused before anything is
//! written to it, and so is one that SQLite cannot read. The file is
//! found and opened as [`super::file`] says (no link of another user
//! followed, nothing but a regular file).

use std::cell::Cell;
use std::path::Path;
use std::time::{Duration, Instant};

use rusqlite::types::Value;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

use super::schema::{self, Migration, MIGRATIONS, SCHEMA_TABLE, SQLITE_APPLICATION_ID};
use super::sql::{self, Cells, Param};
use super::{
    file, Access, Backend, CampaignFilter, CampaignRun, Filter, NewRun, Point, StoreError, Stored,
    Summary,
};
use crate::results::envelope;

thread_local! {
    /// Until when [`busy`] waits for a lock on this thread: the deadline
    /// of the store operation running on it ([`Waiting`]); none outside one.
    static WAIT_UNTIL: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// SQLite's busy handler: while the running operation's deadline is
/// ahead, sleeps a little (1 ms, a millisecond longer each time, at most
/// 100 ms) and has SQLite try the lock again.
fn busy(tries: i32) -> bool {
    let Some(until) = WAIT_UNTIL.with(Cell::get) else {
        return false;
    };
    let left = until.saturating_duration_since(Instant::now());
    if left.is_zero() {
        return false;
    }
    let ms = u64::try_from(tries).unwrap_or(0).saturating_add(1).min(100);
    std::thread::sleep(Duration::from_millis(ms).min(left));
    true
}

/// [`WAIT_UNTIL`] set for as long as it lives (the one before restored).
struct Waiting(Option<Instant>);

impl Waiting {
    /// Locks are waited for until `deadline`, else [`super::WAIT`] from now.
    fn until(deadline: Option<Instant>) -> Waiting {
        let until = deadline.unwrap_or_else(|| Instant::now() + super::WAIT);
        Waiting(WAIT_UNTIL.with(|w| w.replace(Some(until))))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        WAIT_UNTIL.with(|w| w.set(self.0));
    }
}

/// An open SQLite store.
pub struct Sqlite {
    conn: Connection,
    /// The deadline of every wait for a lock, if the caller set one;
    /// else each operation waits at most [`super::WAIT`].
    deadline: Option<Instant>,
}

/// What a SQLite file holds.
#[derive(Debug, PartialEq)]
enum Kind {
    /// Nothing yet: ours to make.
    Fresh,
    /// A msgbench store.
    Ours,
    /// Something else (described).
    Foreign(String),
}

impl Sqlite {
    /// Opens the store at `path` and brings its schema up to date;
    /// creates it (and its directory) for writing. Locks are waited for
    /// until `deadline` (else [`super::WAIT`] per operation).
    pub fn open(
        path: &Path,
        access: Access,
        deadline: Option<Instant>,
    ) -> Result<Sqlite, StoreError> {
        Sqlite::open_with(path, access, MIGRATIONS, deadline)
    }

    fn open_with(
        path: &Path,
        access: Access,
        steps: &[Migration],
        deadline: Option<Instant>,
    ) -> Result<Sqlite, StoreError> {
        let conn = connect(path, access)?;
        let _waiting = Waiting::until(deadline);
        match kind(&conn)? {
            Kind::Foreign(what) => return Err(StoreError::Foreign(what)),
            Kind::Fresh if access == Access::Read => return Err(StoreError::Missing),
            _ => {}
        }
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .map_err(db)?;
        if !mode.eq_ignore_ascii_case("wal") {
            conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get::<_, String>(0))
                .map_err(db)?;
        }
        conn.pragma_update(None, "foreign_keys", true).map_err(db)?;
        let mut store = Sqlite { conn, deadline };
        store.migrate(steps)?;
        Ok(store)
    }

    /// Waits for locks until this store's deadline while it lives.
    fn waiting(&self) -> Waiting {
        Waiting::until(self.deadline)
    }

    /// Applies the steps the store lacks, in one transaction under the
    /// write lock (a store already up to date is only read).
    fn migrate(&mut self, steps: &[Migration]) -> Result<(), StoreError> {
        if schema::pending(version(&self.conn)?, steps)?.is_empty() {
            return Ok(());
        }
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        // Another process may have made or changed it meanwhile.
        if let Kind::Foreign(what) = kind(&tx)? {
            return Err(StoreError::Foreign(what));
        }
        tx.execute_batch(SCHEMA_TABLE).map_err(db)?;
        for m in schema::pending(version(&tx)?, steps)? {
            tx.execute_batch(m.sqlite).map_err(db)?;
            tx.execute(
                "INSERT INTO msgbench_schema (version, applied) VALUES (?1, ?2)",
                (m.version, envelope::now()),
            )
            .map_err(db)?;
        }
        super::test_hold();
        tx.commit().map_err(db)
    }
}

/// Opens the file at `path` as [`file`] allows (for reading, only if it
/// exists: a read creates nothing), with [`busy`] as its busy handler;
/// nothing is read from it yet.
fn connect(path: &Path, access: Access) -> Result<Connection, StoreError> {
    let checked = file::check(path)?;
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_NOFOLLOW
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    match access {
        Access::Read if !checked.exists => return Err(StoreError::Missing),
        Access::Read => {}
        Access::Write => {
            file::create_parent(&checked.path)?;
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
    }
    let conn = Connection::open_with_flags(&checked.path, flags).map_err(|e| {
        match e.sqlite_error_code() {
            Some(ErrorCode::CannotOpen)
                if extended(&e) == rusqlite::ffi::SQLITE_CANTOPEN_SYMLINK =>
            {
                StoreError::File {
                    path: checked.path.display().to_string(),
                    why: "has a symbolic link on its path (made while it was opened): refused"
                        .into(),
                }
            }
            Some(ErrorCode::CannotOpen) if access == Access::Read && !checked.path.exists() => {
                StoreError::Missing
            }
            _ => db(e),
        }
    })?;
    file::recheck(&checked.path)?;
    conn.busy_handler(Some(busy)).map_err(db)?;
    Ok(conn)
}

/// SQLite's extended result code of `e` (0 if it has none).
fn extended(e: &rusqlite::Error) -> i32 {
    match e {
        rusqlite::Error::SqliteFailure(f, _) => f.extended_code,
        _ => 0,
    }
}

/// Whose file this is: the application id, else whether it has tables.
fn kind(conn: &Connection) -> Result<Kind, StoreError> {
    let id: i64 = conn
        .query_row("PRAGMA application_id", [], |r| r.get(0))
        .map_err(db)?;
    let mut st = conn
        .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' ORDER BY name LIMIT 4")
        .map_err(db)?;
    let tables: Vec<String> = st
        .query_map([], |r| r.get(0))
        .map_err(db)?
        .collect::<Result<_, _>>()
        .map_err(db)?;
    Ok(match (id, tables.is_empty()) {
        (SQLITE_APPLICATION_ID, _) => Kind::Ours,
        (0, true) => Kind::Fresh,
        (0, false) => Kind::Foreign(format!("holding table(s) {}", tables.join(", "))),
        (other, _) => Kind::Foreign(format!("of another program (application id {other:#x})")),
    })
}

/// The store's schema version (0 before the first step).
fn version(conn: &Connection) -> Result<i64, StoreError> {
    let has_table: Option<String> = conn
        .query_row(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name = 'msgbench_schema'",
            [],
            |r| r.get(0),
        )
        .optional()
        .map_err(db)?;
    if has_table.is_none() {
        return Ok(0);
    }
    conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM msgbench_schema",
        [],
        |r| r.get(0),
    )
    .map_err(db)
}

/// A SQLite failure as a store error: an unreadable file is told apart.
fn db(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::NotADatabase | ErrorCode::DatabaseCorrupt) => {
            StoreError::Unreadable(e.to_string())
        }
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::Busy(e.to_string())
        }
        _ => StoreError::Db(e.to_string()),
    }
}

/// `$N` parameters in SQLite's numbered form.
fn numbered(sql: &str) -> String {
    sql.replace('$', "?")
}

/// Parameters as SQLite values.
fn values(params: &[Param]) -> Vec<Value> {
    params
        .iter()
        .map(|p| match p {
            Param::Text(s) => Value::Text(s.clone()),
            Param::Int(i) => Value::Integer(*i),
            Param::Null => Value::Null,
        })
        .collect()
}

impl Cells for rusqlite::Row<'_> {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        self.get(i).map_err(|e| StoreError::Db(e.to_string()))
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        self.get(i).map_err(|e| StoreError::Db(e.to_string()))
    }
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.get(i).map_err(|e| StoreError::Db(e.to_string()))
    }
    fn real(&self, i: usize) -> Result<f64, StoreError> {
        self.get(i).map_err(|e| StoreError::Db(e.to_string()))
    }
}

impl Sqlite {
    /// Runs a query, each row read by `read`.
    fn rows<T>(
        &self,
        sql: &str,
        params: &[Param],
        read: impl Fn(&rusqlite::Row<'_>) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut st = self.conn.prepare(&numbered(sql)).map_err(db)?;
        let mut rows = st
            .query(rusqlite::params_from_iter(values(params)))
            .map_err(db)?;
        let mut out = Vec::new();
        while let Some(r) = rows.next().map_err(db)? {
            out.push(read(r)?);
        }
        Ok(out)
    }
}

impl Backend for Sqlite {
    fn insert(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        let _waiting = self.waiting();
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db)?;
        let there: Option<i64> = tx
            .query_row(&numbered(sql::FIND_DIGEST), [&run.digest], |r| r.get(0))
            .optional()
            .map_err(db)?;
        if let Some(id) = there {
            return Err(StoreError::Duplicate(id));
        }
        if let Some(t) = &run.campaign {
            let done: Option<i64> = tx
                .query_row(
                    &numbered(sql::FIND_CAMPAIGN_ENTRY),
                    rusqlite::params_from_iter(values(&sql::campaign_key(run, t))),
                    |r| r.get(0),
                )
                .optional()
                .map_err(db)?;
            if let Some(id) = done {
                return Err(sql::entry_done(t, id));
            }
        }
        let params = values(&sql::run_params(run, &envelope::now()));
        let id: i64 = tx
            .query_row(
                &numbered(sql::INSERT_RUN),
                rusqlite::params_from_iter(params),
                |r| r.get(0),
            )
            .map_err(db)?;
        {
            let mut st = tx.prepare(&numbered(sql::INSERT_FIGURE)).map_err(db)?;
            for f in &run.figures {
                st.execute((id, &f.metric, &f.key, f.value, &f.unit))
                    .map_err(db)?;
            }
        }
        if let Some(t) = &run.campaign {
            tx.execute(
                &numbered(sql::INSERT_CAMPAIGN_RUN),
                rusqlite::params_from_iter(values(&sql::campaign_params(id, run, t))),
            )
            .map_err(db)?;
        }
        super::test_hold();
        tx.commit().map_err(db)?;
        Ok(id)
    }

    fn list(&mut self, filter: &Filter) -> Result<Vec<Summary>, StoreError> {
        let _waiting = self.waiting();
        let (q, params) = sql::list(filter);
        let mut out = self.rows(&q, &params, |r| sql::summary(r))?;
        out.reverse();
        Ok(out)
    }

    fn get(&mut self, id: i64) -> Result<Option<Stored>, StoreError> {
        let _waiting = self.waiting();
        let mut out = self.rows(&sql::get(), &[Param::Int(id)], |r| sql::stored(r))?;
        Ok(out.pop())
    }

    fn points(&mut self, metric: &str, filter: &Filter) -> Result<Vec<Point>, StoreError> {
        let _waiting = self.waiting();
        let (q, params) = sql::points(metric, filter);
        self.rows(&q, &params, |r| sql::point(r))
    }

    fn campaign_runs(&mut self, filter: &CampaignFilter) -> Result<Vec<CampaignRun>, StoreError> {
        let _waiting = self.waiting();
        let (q, params) = sql::campaign_runs(filter);
        self.rows(&q, &params, |r| sql::campaign_run(r))
    }
}

#[cfg(test)]
mod tests;
