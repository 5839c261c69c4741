//! What a campaign prints at its end: one table, an entry a row (its
//! suite, its run in the store, the outcome, the headline figure), in
//! any of the suites' formats; and the campaign's report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::check::Checked;
use super::pass::Pass;
use crate::report::html as report;
use crate::results::table::{render, Align, Format, Section, Table};
use crate::store::Store;

/// One entry as the summary shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Line {
    /// The entry.
    pub entry: String,
    /// Its suite.
    pub suite: String,
    /// Its run in the store, if recorded.
    pub run: Option<i64>,
    /// The run's outcome (`ok`, `failed`), or why there is no run
    /// (`to run`, `not run`, `interrupted`, `not recorded (...)`).
    pub outcome: String,
    /// The run's headline figure.
    pub headline: String,
    /// The entry's words.
    pub words: Vec<String>,
}

/// The summary: the campaign, where it ran, its lines.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// The campaign.
    pub campaign: String,
    /// This host.
    pub host: String,
    /// The pass.
    pub pass: i64,
    /// The store (password hidden).
    pub store: String,
    /// The report written, if any.
    pub report: Option<PathBuf>,
    /// The entries' outputs.
    pub output_dir: Option<PathBuf>,
    /// An entry a line, in the file's order.
    pub entries: Vec<Line>,
}

impl Summary {
    /// The entries with a run recorded.
    pub fn done(&self) -> usize {
        self.entries.iter().filter(|l| l.run.is_some()).count()
    }
}

/// The lines of `entries`: each done one with its run in `pass`, the
/// others with their note in `notes` (else `otherwise`).
pub fn lines(
    entries: &[Checked],
    pass: &Pass,
    notes: &BTreeMap<String, String>,
    otherwise: &str,
) -> Vec<Line> {
    entries
        .iter()
        .map(|e| {
            let run = pass.run_of(&e.name);
            let outcome = match (run, notes.get(&e.name)) {
                (Some(r), _) => r.summary.outcome.clone(),
                (None, Some(n)) => n.clone(),
                (None, None) => otherwise.to_string(),
            };
            Line {
                entry: e.name.clone(),
                suite: e.suite.to_string(),
                run: run.map(|r| r.summary.id),
                outcome,
                headline: run.map_or(String::new(), |r| r.summary.headline.clone()),
                words: e.words.clone(),
            }
        })
        .collect()
}

/// The summary in `format` (JSON: the whole [`Summary`]).
pub fn text(s: &Summary, format: Format) -> String {
    if format == Format::Json {
        return serde_json::to_string_pretty(s).unwrap_or_default() + "\n";
    }
    let title = format!(
        "msgbench campaign {} on {}, pass {}: {} of {} entries done (store {})",
        s.campaign,
        s.host,
        s.pass,
        s.done(),
        s.entries.len(),
        s.store
    );
    let head = ["entry", "suite", "run", "outcome", "headline"];
    let mut t = Table::new(title, &head).aligned(&[
        Align::Left,
        Align::Left,
        Align::Right,
        Align::Left,
        Align::Left,
    ]);
    for l in &s.entries {
        t.row(vec![
            l.entry.clone(),
            l.suite.clone(),
            l.run.map_or("-".into(), |id| format!("@{id}")),
            l.outcome.clone(),
            l.headline.clone(),
        ]);
    }
    if let Some(d) = &s.output_dir {
        t.notes.push(format!(
            "Each entry's output: {}/ENTRY.txt as its suite printed it, ENTRY.json its envelope.",
            d.display()
        ));
    }
    if let Some(r) = &s.report {
        t.notes.push(format!("Report: {}", r.display()));
    }
    t.notes.push(format!(
        "msgbench report --campaign {} --host {} --host OTHER puts another machine's pass beside this one.",
        s.campaign, s.host
    ));
    render(&[Section::Table(t)], format)
}

/// Writes the report of campaign `name`'s latest pass on `host` to
/// `path`; `false` (nothing written) when no entry is recorded there.
pub fn write_report(store: &mut Store, name: &str, host: &str, path: &Path) -> Result<bool> {
    let hosts = [host.to_string()];
    let f = crate::store::CampaignFilter {
        campaign: name.to_string(),
        hosts: hosts.to_vec(),
    };
    let shown = store.location.to_string();
    if store
        .campaign_runs(&f)
        .with_context(|| format!("store {shown}"))?
        .is_empty()
    {
        return Ok(false);
    }
    let inputs = report::campaign::inputs(store, name, &hosts, None)?;
    let page = report::page(&inputs)?;
    std::fs::write(path, page).with_context(|| format!("{}: cannot write", path.display()))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(entry: &str, run: Option<i64>, outcome: &str) -> Line {
        Line {
            entry: entry.into(),
            suite: "floor".into(),
            run,
            outcome: outcome.into(),
            headline: if run.is_some() {
                "fastest round trip 40 ns".into()
            } else {
                String::new()
            },
            words: vec!["floor".into(), "--quick".into()],
        }
    }

    #[test]
    fn one_table_an_entry_a_row() {
        let s = Summary {
            campaign: "quick".into(),
            host: "h".into(),
            pass: 2,
            store: "r.db".into(),
            report: Some("out/report.html".into()),
            output_dir: Some("out".into()),
            entries: vec![line("a", Some(4), "ok"), line("b", None, "interrupted")],
        };
        let t = text(&s, Format::Table);
        assert!(
            t.starts_with(
                "msgbench campaign quick on h, pass 2: 1 of 2 entries done (store r.db)\n"
            ),
            "{t}"
        );
        assert!(t.contains("@4") && t.contains("interrupted") && t.contains("out/report.html"));
        let c = text(&s, Format::Csv);
        assert!(
            c.starts_with("entry,suite,run,outcome,headline\na,floor,@4,ok,"),
            "{c}"
        );
        let j: serde_json::Value = serde_json::from_str(&text(&s, Format::Json)).unwrap();
        assert_eq!(j["entries"][0]["run"], 4);
        assert_eq!(j["entries"][1]["run"], serde_json::Value::Null);
        assert_eq!(j["pass"], 2);
    }
}
