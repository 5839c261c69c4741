//! The store on a PostgreSQL server (the `postgres` crate, synchronous),
//! for a lab whose machines all write to one store at once.
//!
//! Each write is one transaction; ids come from an identity column, the
//! digest's unique index keeps one copy of a run, and a schema migration
//! holds an advisory lock, so machines opening a new store together
//! migrate it once. Connecting waits at most [`CONNECT_TIMEOUT`] unless
//! the URL sets `connect_timeout`, and no statement runs longer than
//! [`STATEMENT_TIMEOUT`]. Without TLS: a lab's store is reached on its
//! own network (or through a tunnel).

use std::str::FromStr;
use std::time::Duration;

use postgres::error::SqlState;
use postgres::types::ToSql;
use postgres::{Client, Config, GenericClient, NoTls};

use super::schema::{self, Migration, MIGRATIONS, PG_LOCK_KEY, SCHEMA_TABLE};
use super::sql::{self, Cells, Param};
use super::{Access, Backend, Filter, NewRun, Point, StoreError, Stored, Summary};
use crate::results::envelope;

/// Longest wait for the server to answer a connection.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest any statement may run (a lock held by a stuck client).
const STATEMENT_TIMEOUT: &str = "60s";

/// An open PostgreSQL store.
pub struct Postgres {
    client: Client,
}

impl Postgres {
    /// Connects to `url` and brings the schema up to date; for reading, a
    /// database without the store's tables is [`StoreError::Missing`]
    /// (they are made by the first write).
    pub fn open(url: &str, access: Access) -> Result<Postgres, StoreError> {
        Postgres::open_with(url, access, MIGRATIONS)
    }

    fn open_with(url: &str, access: Access, steps: &[Migration]) -> Result<Postgres, StoreError> {
        let mut config = Config::from_str(url).map_err(|e| StoreError::Connect(text(&e)))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        config.application_name("msgbench");
        let mut client = config
            .connect(NoTls)
            .map_err(|e| StoreError::Connect(text(&e)))?;
        client
            .batch_execute(&format!("SET statement_timeout = '{STATEMENT_TIMEOUT}'"))
            .map_err(db)?;
        if access == Access::Read && version(&mut client)? == 0 {
            return Err(StoreError::Missing);
        }
        migrate(&mut client, steps)?;
        Ok(Postgres { client })
    }
}

/// Applies the steps the store lacks, in one transaction under the
/// advisory lock (a store already up to date is only read).
fn migrate(client: &mut Client, steps: &[Migration]) -> Result<(), StoreError> {
    if schema::pending(version(client)?, steps)?.is_empty() {
        return Ok(());
    }
    let mut tx = client.transaction().map_err(db)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PG_LOCK_KEY])
        .map_err(db)?;
    tx.batch_execute(SCHEMA_TABLE).map_err(db)?;
    for m in schema::pending(version(&mut tx)?, steps)? {
        tx.batch_execute(m.postgres).map_err(db)?;
        tx.execute(
            "INSERT INTO msgbench_schema (version, applied) VALUES ($1, $2)",
            &[&m.version, &envelope::now()],
        )
        .map_err(db)?;
    }
    super::test_hold();
    tx.commit().map_err(db)
}

/// The store's schema version (0 before the first step).
fn version(c: &mut impl GenericClient) -> Result<i64, StoreError> {
    let row = c
        .query_one("SELECT to_regclass('msgbench_schema') IS NOT NULL", &[])
        .map_err(db)?;
    if !row.try_get::<_, bool>(0).map_err(db)? {
        return Ok(0);
    }
    let row = c
        .query_one(
            "SELECT COALESCE(MAX(version), 0)::BIGINT FROM msgbench_schema",
            &[],
        )
        .map_err(db)?;
    row.try_get(0).map_err(db)
}

/// An error with its causes, on one line.
fn text(e: &postgres::Error) -> String {
    if let Some(d) = e.as_db_error() {
        return d.message().to_string();
    }
    let mut out = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        out.push_str(&format!(": {c}"));
        cause = c.source();
    }
    out
}

fn db(e: postgres::Error) -> StoreError {
    StoreError::Db(text(&e))
}

/// Parameters as PostgreSQL values.
fn values(params: &[Param]) -> Vec<Box<dyn ToSql + Sync>> {
    params
        .iter()
        .map(|p| -> Box<dyn ToSql + Sync> {
            match p {
                Param::Text(s) => Box::new(s.clone()),
                Param::Int(i) => Box::new(*i),
                Param::Null => Box::new(None::<String>),
            }
        })
        .collect()
}

fn refs(v: &[Box<dyn ToSql + Sync>]) -> Vec<&(dyn ToSql + Sync)> {
    v.iter().map(|b| &**b).collect()
}

impl Cells for postgres::Row {
    fn text(&self, i: usize) -> Result<String, StoreError> {
        self.try_get(i).map_err(|e| StoreError::Db(text(&e)))
    }
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError> {
        self.try_get(i).map_err(|e| StoreError::Db(text(&e)))
    }
    fn int(&self, i: usize) -> Result<i64, StoreError> {
        self.try_get(i).map_err(|e| StoreError::Db(text(&e)))
    }
    fn real(&self, i: usize) -> Result<f64, StoreError> {
        self.try_get(i).map_err(|e| StoreError::Db(text(&e)))
    }
}

impl Postgres {
    /// Runs a query, each row read by `read`.
    fn rows<T>(
        &mut self,
        sql: &str,
        params: &[Param],
        read: impl Fn(&postgres::Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let v = values(params);
        let rows = self.client.query(sql, &refs(&v)).map_err(db)?;
        rows.iter().map(read).collect()
    }
}

/// Every figure of `run` in one statement (arrays unnested).
const INSERT_FIGURES: &str = "INSERT INTO msgbench_figures (run_id, metric, key, value, unit) \
    SELECT $1::BIGINT, m, k, v, u FROM UNNEST($2::TEXT[], $3::TEXT[], $4::FLOAT8[], $5::TEXT[]) AS t (m, k, v, u)";

impl Backend for Postgres {
    fn insert(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        let mut tx = self.client.transaction().map_err(db)?;
        let digest: &(dyn ToSql + Sync) = &run.digest;
        if let Some(r) = tx.query_opt(sql::FIND_DIGEST, &[digest]).map_err(db)? {
            return Err(StoreError::Duplicate(r.try_get(0).map_err(db)?));
        }
        let v = values(&sql::run_params(run, &envelope::now()));
        let id: i64 = match tx.query_one(sql::INSERT_RUN, &refs(&v)) {
            Ok(r) => r.try_get(0).map_err(db)?,
            // Another machine stored the same run since the look above.
            Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => {
                return Err(StoreError::Db(format!(
                    "{}: recorded meanwhile by another writer",
                    text(&e)
                )))
            }
            Err(e) => return Err(db(e)),
        };
        let f = &run.figures;
        let metrics: Vec<&str> = f.iter().map(|x| x.metric.as_str()).collect();
        let keys: Vec<&str> = f.iter().map(|x| x.key.as_str()).collect();
        let vals: Vec<f64> = f.iter().map(|x| x.value).collect();
        let units: Vec<&str> = f.iter().map(|x| x.unit.as_str()).collect();
        tx.execute(INSERT_FIGURES, &[&id, &metrics, &keys, &vals, &units])
            .map_err(db)?;
        super::test_hold();
        tx.commit().map_err(db)?;
        Ok(id)
    }

    fn list(&mut self, filter: &Filter) -> Result<Vec<Summary>, StoreError> {
        let (q, params) = sql::list(filter);
        let mut out = self.rows(&q, &params, sql::summary)?;
        out.reverse();
        Ok(out)
    }

    fn get(&mut self, id: i64) -> Result<Option<Stored>, StoreError> {
        let mut out = self.rows(&sql::get(), &[Param::Int(id)], sql::stored)?;
        Ok(out.pop())
    }

    fn points(&mut self, metric: &str, filter: &Filter) -> Result<Vec<Point>, StoreError> {
        let (q, params) = sql::points(metric, filter);
        self.rows(&q, &params, sql::point)
    }
}
