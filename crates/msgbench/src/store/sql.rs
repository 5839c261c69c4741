//! The statements both backends run, written once with `$N` parameters
//! (PostgreSQL's; SQLite is given `?N`, its numbered form), and the
//! reading of their rows.

use std::collections::BTreeMap;

use super::campaign::{self, CampaignFilter, CampaignRun, Tag};
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

/// The run of a campaign's entry in a pass on a host, if recorded.
pub(crate) const FIND_CAMPAIGN_ENTRY: &str = "SELECT run_id FROM msgbench_campaign_runs \
    WHERE campaign = $1 AND host = $2 AND pass = $3 AND entry = $4";

/// A run's campaign tag.
pub(crate) const INSERT_CAMPAIGN_RUN: &str = "INSERT INTO msgbench_campaign_runs \
    (run_id, campaign, host, pass, entry, args) VALUES ($1, $2, $3, $4, $5, $6)";

/// The parameters of [`FIND_CAMPAIGN_ENTRY`] for `run` tagged `t`.
pub(crate) fn campaign_key(run: &NewRun, t: &Tag) -> Vec<Param> {
    vec![
        Param::Text(t.campaign.clone()),
        Param::Text(run.host.clone()),
        Param::Int(t.pass),
        Param::Text(t.entry.clone()),
    ]
}

/// The parameters of [`INSERT_CAMPAIGN_RUN`] for run `id`.
pub(crate) fn campaign_params(id: i64, run: &NewRun, t: &Tag) -> Vec<Param> {
    let mut p = vec![Param::Int(id)];
    p.extend(campaign_key(run, t));
    p.push(Param::Text(t.args_text()));
    p
}

/// The error for an entry recorded already as run `id`.
pub(crate) fn entry_done(t: &Tag, id: i64) -> StoreError {
    StoreError::EntryDone {
        campaign: t.campaign.clone(),
        pass: t.pass,
        entry: t.entry.clone(),
        id,
    }
}

/// The runs of the campaign `f` names, by host, pass and start.
pub(crate) fn campaign_runs(f: &CampaignFilter) -> (String, Vec<Param>) {
    let mut params = vec![Param::Text(f.campaign.clone())];
    let mut cond = "c.campaign = $1".to_string();
    if !f.hosts.is_empty() {
        let ns: Vec<String> = f
            .hosts
            .iter()
            .map(|h| {
                params.push(Param::Text(h.clone()));
                format!("${}", params.len())
            })
            .collect();
        cond.push_str(&format!(" AND c.host IN ({})", ns.join(", ")));
    }
    let sql = format!(
        "SELECT {SUMMARY_COLUMNS}, c.campaign, c.pass, c.entry, c.args \
         FROM msgbench_campaign_runs c JOIN msgbench_runs r ON r.id = c.run_id \
         WHERE {cond} ORDER BY c.host, c.pass, r.started, r.id"
    );
    (sql, params)
}

/// A [`CampaignRun`] from [`campaign_runs`]' row.
pub(crate) fn campaign_run(r: &impl Cells) -> Result<CampaignRun, StoreError> {
    Ok(CampaignRun {
        summary: summary(r)?,
        campaign: r.text(11)?,
        pass: r.int(12)?,
        entry: r.text(13)?,
        args: campaign::args_of(&r.text(14)?),
    })
}

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
