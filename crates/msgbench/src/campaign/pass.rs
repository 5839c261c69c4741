//! Which pass of a campaign runs, and which of its entries are done: the
//! store is the campaign's memory.
//!
//! A pass is one run of the campaign's entries on one host, numbered
//! from 1 per campaign and host. Without `--again`, the command goes on
//! with the host's latest pass: the entries recorded in it are done and
//! not run again, the others run (an interrupted campaign resumes where
//! it stopped; a finished one runs nothing and shows its summary again).
//! `--again` starts the next pass, every entry to run. An entry is done
//! when its run is recorded in the pass, whatever its outcome (a failed
//! row is a result; an interrupted run is never recorded). An entry
//! whose words changed since the pass ran it is refused: the pass would
//! mix two campaigns (put it back, or run anew with `--again`).

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};

use super::check::Checked;
use super::file::Campaign;
use crate::store::{CampaignFilter, CampaignRun, Store};

/// The pass to run on this host, and its entries done so far.
#[derive(Debug, Clone, Default)]
pub struct Pass {
    /// Its number (1, 2, ...).
    pub number: i64,
    /// The entries recorded in it, by name.
    pub done: BTreeMap<String, CampaignRun>,
}

impl Pass {
    /// The run of `entry` in this pass, if done.
    pub fn run_of(&self, entry: &str) -> Option<&CampaignRun> {
        self.done.get(entry)
    }

    /// How many of `entries` are done.
    pub fn count_done(&self, entries: &[Checked]) -> usize {
        entries
            .iter()
            .filter(|e| self.done.contains_key(&e.name))
            .count()
    }
}

/// The runs of campaign `c` on `host` in `store`.
pub fn runs(store: &mut Store, c: &Campaign, host: &str) -> Result<Vec<CampaignRun>> {
    let shown = store.location.to_string();
    store
        .campaign_runs(&CampaignFilter {
            campaign: c.name.clone(),
            hosts: vec![host.to_string()],
        })
        .with_context(|| format!("store {shown}"))
}

/// The pass to run, from the campaign's `runs` on this host: the latest
/// (its entries done), or with `again` (or none yet) the next, empty.
/// An entry of `entries` recorded with other words is refused.
pub fn choose(
    c: &Campaign,
    entries: &[Checked],
    runs: Vec<CampaignRun>,
    again: bool,
) -> Result<Pass> {
    let latest = runs.iter().map(|r| r.pass).max().unwrap_or(0);
    if again || latest == 0 {
        return Ok(Pass {
            number: latest + 1,
            done: BTreeMap::new(),
        });
    }
    let done: BTreeMap<String, CampaignRun> = runs
        .into_iter()
        .filter(|r| r.pass == latest)
        .map(|r| (r.entry.clone(), r))
        .collect();
    for e in entries {
        if let Some(r) = done.get(&e.name).filter(|r| r.args != e.words) {
            bail!(
                "{}: entry {:?} changed since pass {latest} ran it as `{}` (@{}): put it back, or run the campaign anew with --again",
                c.path.display(),
                e.name,
                r.args.join(" "),
                r.summary.id
            );
        }
    }
    Ok(Pass {
        number: latest,
        done,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::Summary;

    fn campaign() -> Campaign {
        Campaign {
            name: "c".into(),
            path: "c.toml".into(),
            entries: Vec::new(),
        }
    }

    fn checked(name: &str, words: &[&str]) -> Checked {
        Checked {
            name: name.into(),
            suite: "floor",
            words: words.iter().map(|w| w.to_string()).collect(),
        }
    }

    fn run(pass: i64, entry: &str, id: i64) -> CampaignRun {
        CampaignRun {
            summary: Summary {
                id,
                suite: "floor".into(),
                started: String::new(),
                finished: String::new(),
                host: "h".into(),
                kernel: String::new(),
                cpu_model: String::new(),
                tool_version: String::new(),
                outcome: "ok".into(),
                headline: String::new(),
                origin: "run".into(),
            },
            campaign: "c".into(),
            pass,
            entry: entry.into(),
            args: vec!["floor".into()],
        }
    }

    #[test]
    fn the_latest_pass_goes_on_and_again_starts_the_next() {
        let entries = [checked("a", &["floor"]), checked("b", &["floor"])];
        let p = choose(&campaign(), &entries, Vec::new(), false).unwrap();
        assert_eq!((p.number, p.done.len()), (1, 0));
        let runs = vec![run(1, "a", 1), run(1, "b", 2), run(2, "a", 3)];
        let p = choose(&campaign(), &entries, runs.clone(), false).unwrap();
        assert_eq!(p.number, 2);
        assert_eq!(p.run_of("a").map(|r| r.summary.id), Some(3));
        assert!(p.run_of("b").is_none());
        assert_eq!(p.count_done(&entries), 1);
        let p = choose(&campaign(), &entries, runs, true).unwrap();
        assert_eq!((p.number, p.done.len()), (3, 0));
    }

    #[test]
    fn an_entry_changed_since_it_ran_is_refused() {
        let entries = [checked("a", &["floor", "--quick"])];
        let e = choose(&campaign(), &entries, vec![run(1, "a", 7)], false)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.toml: entry \"a\" changed since pass 1 ran it as `floor` (@7)"),
            "{e}"
        );
        assert!(choose(&campaign(), &entries, vec![run(1, "a", 7)], true).is_ok());
    }
}
