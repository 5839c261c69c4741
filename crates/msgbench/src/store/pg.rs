//! The store on a PostgreSQL server (tokio-postgres, driven from this
//! thread on a runtime of the store's own), for a lab whose machines all
//! write to one store at once.
//!
//! Each write is one transaction; ids come from an identity column, the
//! digest's unique index keeps one copy of a run, and a schema migration
//! holds an advisory lock, so machines opening a new store together
//! migrate it once. Nothing waits for the server without a deadline: a
//! connection (the socket and the startup handshake) at most
//! [`CONNECT_TIMEOUT`], or the URL's `connect_timeout`; every operation
//! ends by its deadline ([`super::WAIT`] from its start, or the
//! recording's own), whatever the server does, its future dropped (the
//! socket closed) when the time is up; and the server itself cancels a
//! statement a little before that (`statement_timeout`), so that one held
//! by another session's lock ends with the server's own word. Without
//! TLS: a lab's store is reached on its own network (or a tunnel).

use std::future::Future;
use std::str::FromStr;
use std::time::{Duration, Instant};

use tokio::runtime::Runtime;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Config, GenericClient, NoTls};

use super::schema::{self, Migration, MIGRATIONS, PG_LOCK_KEY, SCHEMA_TABLE};
use super::sql::{self, Cells, Param};
use super::{
    Access, Backend, CampaignFilter, CampaignRun, Filter, NewRun, Point, StoreError, Stored,
    Summary,
};
use crate::results::envelope;

/// Longest wait for a connection (socket and startup), unless the URL
/// sets `connect_timeout`.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How much sooner than our own deadline the server cancels a statement.
const SERVER_MARGIN: Duration = Duration::from_secs(1);

/// An open PostgreSQL store.
pub struct Postgres {
    /// Drives the connection and every call (current thread: tasks run
    /// only inside `block_on`, on this thread).
    rt: Runtime,
    client: Client,
    /// The deadline of every wait, if the caller set one; else each
    /// operation waits at most [`super::WAIT`].
    deadline: Option<Instant>,
}

impl Postgres {
    /// Connects to `url` and brings the schema up to date; for reading, a
    /// database without the store's tables is [`StoreError::Missing`]
    /// (they are made by the first write). Nothing waits past `deadline`
    /// (else [`super::WAIT`] per operation).
    pub fn open(
        url: &str,
        access: Access,
        deadline: Option<Instant>,
    ) -> Result<Postgres, StoreError> {
        Postgres::open_with(url, access, MIGRATIONS, deadline)
    }

    fn open_with(
        url: &str,
        access: Access,
        steps: &[Migration],
        deadline: Option<Instant>,
    ) -> Result<Postgres, StoreError> {
        let mut pg = Postgres::connect(url, deadline)?;
        let until = pg.until();
        let cancel_at = until
            .saturating_duration_since(Instant::now())
            .saturating_sub(SERVER_MARGIN)
            .max(Duration::from_millis(1));
        let set = format!("SET statement_timeout = {}", cancel_at.as_millis());
        pg.within(
            until,
            |c| async move { c.batch_execute(&set).await.map_err(db) },
        )?;
        if access == Access::Read && pg.within(until, |c| async move { version(&*c).await })? == 0 {
            return Err(StoreError::Missing);
        }
        pg.within(until, |c| migrate(c, steps))?;
        Ok(pg)
    }

    /// A connection to `url`, made within [`CONNECT_TIMEOUT`] (or the
    /// URL's `connect_timeout`) and `deadline`; its task spawned on the
    /// store's runtime.
    fn connect(url: &str, deadline: Option<Instant>) -> Result<Postgres, StoreError> {
        let mut config = Config::from_str(url).map_err(|e| StoreError::Connect(text(&e)))?;
        let limit = *config.get_connect_timeout().unwrap_or(&CONNECT_TIMEOUT);
        config.connect_timeout(limit);
        config.application_name("msgbench");
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| StoreError::Connect(format!("cannot start its client: {e}")))?;
        let start = Instant::now();
        let until = deadline.map_or(start + limit, |d| d.min(start + limit));
        // The timer is made inside the runtime (it needs its clock).
        let connecting =
            async { tokio::time::timeout_at(until.into(), config.connect(NoTls)).await };
        let (client, connection) = match rt.block_on(connecting) {
            Ok(Ok(c)) => c,
            Ok(Err(e)) => return Err(StoreError::Connect(text(&e))),
            Err(_) => {
                return Err(StoreError::Connect(format!(
                    "no answer from the server within {}",
                    seconds(until.saturating_duration_since(start))
                )))
            }
        };
        // Ends with an error when the server goes; the calls then say so.
        rt.spawn(connection);
        Ok(Postgres {
            rt,
            client,
            deadline,
        })
    }

    /// When the operation starting now must end.
    fn until(&self) -> Instant {
        self.deadline
            .unwrap_or_else(|| Instant::now() + super::WAIT)
    }

    /// Runs `op` on the client until it ends or `until` comes, whichever
    /// first (then it is dropped: its statement abandoned, a transaction
    /// rolled back by the server when the connection closes).
    fn within<'a, T, F>(
        &'a mut self,
        until: Instant,
        op: impl FnOnce(&'a mut Client) -> F,
    ) -> Result<T, StoreError>
    where
        F: Future<Output = Result<T, StoreError>> + 'a,
    {
        let started = Instant::now();
        let fut = op(&mut self.client);
        match self.rt.block_on(async { tokio::time::timeout_at(until.into(), fut).await }) {
            Ok(r) => r,
            Err(_) => Err(StoreError::Db(format!(
                "no answer from the server within {} (a lock held by another session, or a server that stopped answering); gave up",
                seconds(until.saturating_duration_since(started))
            ))),
        }
    }
}

/// A wait as said in a message: whole seconds, at least one.
fn seconds(d: Duration) -> String {
    format!("{} s", d.as_secs_f64().round().max(1.0))
}

/// Applies the steps the store lacks, in one transaction under the
/// advisory lock (a store already up to date is only read).
async fn migrate(client: &mut Client, steps: &[Migration]) -> Result<(), StoreError> {
    if schema::pending(version(&*client).await?, steps)?.is_empty() {
        return Ok(());
    }
    let tx = client.transaction().await.map_err(db)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PG_LOCK_KEY])
        .await
        .map_err(db)?;
    tx.batch_execute(SCHEMA_TABLE).await.map_err(db)?;
    for m in schema::pending(version(&tx).await?, steps)? {
        tx.batch_execute(m.postgres).await.map_err(db)?;
        tx.execute(
            "INSERT INTO msgbench_schema (version, applied) VALUES ($1, $2)",
            &[&m.version, &envelope::now()],
        )
        .await
        .map_err(db)?;
    }
    super::test_hold();
    tx.commit().await.map_err(db)
}

/// The store's schema version (0 before the first step).
async fn version(c: &impl GenericClient) -> Result<i64, StoreError> {
    let row = c
        .query_one("SELECT to_regclass('msgbench_schema') IS NOT NULL", &[])
        .await
        .map_err(db)?;
    if !row.try_get::<_, bool>(0).map_err(db)? {
        return Ok(0);
    }
    let row = c
        .query_one(
            "SELECT COALESCE(MAX(version), 0)::BIGINT FROM msgbench_schema",
            &[],
        )
        .await
        .map_err(db)?;
    row.try_get(0).map_err(db)
}

/// An error with its causes, on one line.
fn text(e: &tokio_postgres::Error) -> String {
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

fn db(e: tokio_postgres::Error) -> StoreError {
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

impl Cells for tokio_postgres::Row {
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
        read: impl Fn(&tokio_postgres::Row) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let v = values(params);
        let until = self.until();
        let rows = self.within(until, |c| async move {
            c.query(sql, &refs(&v)).await.map_err(db)
        })?;
        rows.iter().map(read).collect()
    }
}

/// Every figure of `run` in one statement (arrays unnested).
const INSERT_FIGURES: &str = "INSERT INTO msgbench_figures (run_id, metric, key, value, unit) \
    SELECT $1::BIGINT, m, k, v, u FROM UNNEST($2::TEXT[], $3::TEXT[], $4::FLOAT8[], $5::TEXT[]) AS t (m, k, v, u)";

/// A failed insert as a store error: a unique index refusing it means
/// another writer stored the same run (or campaign entry) since the look
/// before it.
fn unique(e: tokio_postgres::Error) -> StoreError {
    if e.code() == Some(&SqlState::UNIQUE_VIOLATION) {
        StoreError::Db(format!(
            "{}: recorded meanwhile by another writer",
            text(&e)
        ))
    } else {
        db(e)
    }
}

/// Records `run` in one transaction; its id.
async fn insert(client: &mut Client, run: &NewRun) -> Result<i64, StoreError> {
    let tx = client.transaction().await.map_err(db)?;
    let digest: &(dyn ToSql + Sync) = &run.digest;
    if let Some(r) = tx
        .query_opt(sql::FIND_DIGEST, &[digest])
        .await
        .map_err(db)?
    {
        return Err(StoreError::Duplicate(r.try_get(0).map_err(db)?));
    }
    if let Some(t) = &run.campaign {
        let key = values(&sql::campaign_key(run, t));
        if let Some(r) = tx
            .query_opt(sql::FIND_CAMPAIGN_ENTRY, &refs(&key))
            .await
            .map_err(db)?
        {
            return Err(sql::entry_done(t, r.try_get(0).map_err(db)?));
        }
    }
    let v = values(&sql::run_params(run, &envelope::now()));
    let id: i64 = tx
        .query_one(sql::INSERT_RUN, &refs(&v))
        .await
        .map_err(unique)?
        .try_get(0)
        .map_err(db)?;
    let f = &run.figures;
    let metrics: Vec<&str> = f.iter().map(|x| x.metric.as_str()).collect();
    let keys: Vec<&str> = f.iter().map(|x| x.key.as_str()).collect();
    let vals: Vec<f64> = f.iter().map(|x| x.value).collect();
    let units: Vec<&str> = f.iter().map(|x| x.unit.as_str()).collect();
    tx.execute(INSERT_FIGURES, &[&id, &metrics, &keys, &vals, &units])
        .await
        .map_err(db)?;
    if let Some(t) = &run.campaign {
        let v = values(&sql::campaign_params(id, run, t));
        tx.execute(sql::INSERT_CAMPAIGN_RUN, &refs(&v))
            .await
            .map_err(unique)?;
    }
    super::test_hold();
    tx.commit().await.map_err(db)?;
    Ok(id)
}

impl Backend for Postgres {
    fn insert(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        let until = self.until();
        self.within(until, |c| insert(c, run))
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

    fn campaign_runs(&mut self, filter: &CampaignFilter) -> Result<Vec<CampaignRun>, StoreError> {
        let (q, params) = sql::campaign_runs(filter);
        self.rows(&q, &params, sql::campaign_run)
    }
}
