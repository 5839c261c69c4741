//! The statements both backends run, written once with `$N` parameters
//! (PostgreSQL's; SQLite is given `?N`, its numbered form), and the
//! reading of their rows.

use std::collections::BTreeMap;

use super::{Filter, NewRun, Point, StoreError, Stored, Summary};

/// A query parameter.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Param {
    /// Text.
    Text(String),
    /// A whole number.
    Int(i64),
    /// SQL NULL (a text column left empty).
    Null,
}

/// A result row, read by column index (a cell that cannot be read is
/// [`StoreError::Db`] with the driver's words).
pub(crate) trait Cells {
    /// Column `i` as text.
    fn text(&self, i: usize) -> Result<String, StoreError>;
    /// Column `i` as text, or `None` for NULL.
    fn opt_text(&self, i: usize) -> Result<Option<String>, StoreError>;
    /// Column `i` as a whole number.
    fn int(&self, i: usize) -> Result<i64, StoreError>;
    /// Column `i` as a number.
    fn real(&self, i: usize) -> Result<f64, StoreError>;
}

/// The columns of a [`Summary`], in its order (table alias `r`).
const SUMMARY_COLUMNS: &str = "r.id, r.suite, r.started, r.finished, r.host, r.kernel, r.cpu_model, r.tool_version, r.outcome, r.headline, r.origin";

/// Is a run with this digest there already?
pub(crate) const FIND_DIGEST: &str = "SELECT id FROM msgbench_runs WHERE digest = $1";

/// A run's row; returns its id.
pub(crate) const INSERT_RUN: &str = "INSERT INTO msgbench_runs \
    (digest, suite, started, finished, host, kernel, cpu_model, tool_version, format, outcome, \
     headline, recorded, origin, envelope, rendering) \
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) RETURNING id";

/// One figure's row (SQLite, one per figure).
pub(crate) const INSERT_FIGURE: &str =
    "INSERT INTO msgbench_figures (run_id, metric, key, value, unit) VALUES ($1, $2, $3, $4, $5)";

/// The parameters of [`INSERT_RUN`].
pub(crate) fn run_params(run: &NewRun, recorded: &str) -> Vec<Param> {
    let t = |s: &str| Param::Text(s.to_string());
    vec![
        t(&run.digest),
        t(&run.suite),
        t(&run.started),
        t(&run.finished),
        t(&run.host),
        t(&run.kernel),
        t(&run.cpu_model),
        t(&run.tool_version),
        Param::Int(run.format),
        t(run.outcome),
        t(&run.headline),
        t(recorded),
        t(run.origin.as_str()),
        t(&run.text),
        run.rendering.as_deref().map_or(Param::Null, t),
    ]
}

/// The runs `f` selects, newest first (the caller turns them around).
pub(crate) fn list(f: &Filter) -> (String, Vec<Param>) {
    let (cond, params) = f.conditions(1);
    let limit = f.last.map_or(String::new(), |n| format!(" LIMIT {n}"));
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS} FROM msgbench_runs r WHERE {cond} ORDER BY r.started DESC, r.id DESC{limit}"
    );
    (sql, params)
}

/// One run with its envelope and rendering.
pub(crate) fn get() -> String {
    format!(
        "SELECT {SUMMARY_COLUMNS}, r.envelope, r.rendering FROM msgbench_runs r WHERE r.id = $1"
    )
}

/// Every figure of `metric` in the runs `f` selects, oldest first.
pub(crate) fn points(metric: &str, f: &Filter) -> (String, Vec<Param>) {
    let (cond, mut params) = f.conditions(2);
    params.insert(0, Param::Text(metric.to_string()));
    let sql = format!(
        "SELECT r.id, r.started, r.host, r.suite, f.key, f.value, f.unit \
         FROM msgbench_figures f JOIN msgbench_runs r ON r.id = f.run_id \
         WHERE f.metric = $1 AND {cond} ORDER BY r.started, r.id"
    );
    (sql, params)
}

/// A [`Summary`] from the first eleven columns.
pub(crate) fn summary(r: &impl Cells) -> Result<Summary, StoreError> {
    Ok(Summary {
        id: r.int(0)?,
        suite: r.text(1)?,
        started: r.text(2)?,
        finished: r.text(3)?,
        host: r.text(4)?,
        kernel: r.text(5)?,
        cpu_model: r.text(6)?,
        tool_version: r.text(7)?,
        outcome: r.text(8)?,
        headline: r.text(9)?,
        origin: r.text(10)?,
    })
}

/// A [`Stored`] from [`get`]'s row.
pub(crate) fn stored(r: &impl Cells) -> Result<Stored, StoreError> {
    Ok(Stored {
        summary: summary(r)?,
        envelope: r.text(11)?,
        rendering: r.opt_text(12)?,
    })
}

/// A [`Point`] from [`points`]' row.
pub(crate) fn point(r: &impl Cells) -> Result<Point, StoreError> {
    let key: BTreeMap<String, String> = serde_json::from_str(&r.text(4)?)
        .map_err(|e| StoreError::Db(format!("a stored figure key: {e}")))?;
    Ok(Point {
        run: r.int(0)?,
        started: r.text(1)?,
        host: r.text(2)?,
        suite: r.text(3)?,
        key,
        value: r.real(5)?,
        unit: r.text(6)?,
    })
}
