//! The store in a SQLite file (rusqlite, SQLite built in).
//!
//! Many processes may record at once: the file is in WAL mode (readers
//! never wait for a writer) and every connection waits up to
//! [`BUSY_TIMEOUT`] for the write lock, which each write takes at its
//! start (`BEGIN IMMEDIATE`), so no transaction fails half-way on a lock.
//! A file is ours when its application id is msgbench's; a file with
//! another id, or with tables and no id, is refused before anything is
//! written to it, and so is one that SQLite cannot read.

use std::path::Path;
use std::time::Duration;

use rusqlite::types::Value;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension, TransactionBehavior};

use super::schema::{self, Migration, MIGRATIONS, SCHEMA_TABLE, SQLITE_APPLICATION_ID};
use super::sql::{self, Cells, Param};
use super::{Access, Backend, Filter, NewRun, Point, StoreError, Stored, Summary};
use crate::results::envelope;

/// Longest wait for another process's write.
const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// An open SQLite store.
pub struct Sqlite {
    conn: Connection,
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
    /// creates it (and its directory) for writing.
    pub fn open(path: &Path, access: Access) -> Result<Sqlite, StoreError> {
        Sqlite::open_with(path, access, MIGRATIONS)
    }

    fn open_with(path: &Path, access: Access, steps: &[Migration]) -> Result<Sqlite, StoreError> {
        if !path.exists() {
            if access == Access::Read {
                return Err(StoreError::Missing);
            }
            create_parent(path)?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags(path, flags).map_err(db)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
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
        let mut store = Sqlite { conn };
        store.migrate(steps)?;
        Ok(store)
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

/// Creates the store's directory (private to the user) if missing.
fn create_parent(path: &Path) -> Result<(), StoreError> {
    use std::os::unix::fs::DirBuilderExt;
    match path.parent().filter(|d| !d.as_os_str().is_empty()) {
        Some(dir) if !dir.exists() => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| StoreError::Db(format!("cannot create {}: {e}", dir.display()))),
        _ => Ok(()),
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
        super::test_hold();
        tx.commit().map_err(db)?;
        Ok(id)
    }

    fn list(&mut self, filter: &Filter) -> Result<Vec<Summary>, StoreError> {
        let (q, params) = sql::list(filter);
        let mut out = self.rows(&q, &params, |r| sql::summary(r))?;
        out.reverse();
        Ok(out)
    }

    fn get(&mut self, id: i64) -> Result<Option<Stored>, StoreError> {
        let mut out = self.rows(&sql::get(), &[Param::Int(id)], |r| sql::stored(r))?;
        Ok(out.pop())
    }

    fn points(&mut self, metric: &str, filter: &Filter) -> Result<Vec<Point>, StoreError> {
        let (q, params) = sql::points(metric, filter);
        self.rows(&q, &params, |r| sql::point(r))
    }
}

#[cfg(test)]
mod tests;
