//! Campaign runs in the store (`msgbench campaign`): the tag a campaign
//! gives the run of each of its entries, and those runs read back.
//!
//! A campaign runs each entry as a child process of its own (`msgbench
//! SUITE ...`) and hands it the tag in [`ENV_CAMPAIGN`]; the child's
//! [`super::record_run`] writes the run and its row of
//! `msgbench_campaign_runs` in one transaction, so a run is never in the
//! store without its tag (a power loss between the two would make a
//! resumed campaign run the entry again, and store it twice). An entry's
//! run cut short by SIGINT/SIGTERM is not recorded at all: the entry is
//! not done, and the campaign runs it again when resumed.

use serde::{Deserialize, Serialize};

use super::{StoreError, Summary};

/// The environment variable with the campaign tag of a suite run (JSON
/// of a [`Tag`]): set by `msgbench campaign` for the entry it starts.
pub const ENV_CAMPAIGN: &str = "MSGBENCH_CAMPAIGN";

/// What makes a run an entry of a campaign (its host is the run's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tag {
    /// The campaign's name.
    pub campaign: String,
    /// The pass of the campaign on this host (1, 2, ...).
    pub pass: i64,
    /// The entry's name.
    pub entry: String,
    /// The entry's words as the campaign file gives them.
    pub args: Vec<String>,
}

impl Tag {
    /// The tag in [`ENV_CAMPAIGN`], if set; a value that is not a tag is
    /// an error naming the variable.
    pub fn from_env() -> Result<Option<Tag>, StoreError> {
        let Some(text) = std::env::var_os(ENV_CAMPAIGN) else {
            return Ok(None);
        };
        let bad = |why: String| StoreError::Campaign(format!("{ENV_CAMPAIGN}: {why}"));
        let text = text
            .into_string()
            .map_err(|_| bad("not text (UTF-8)".into()))?;
        let tag: Tag = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
        if tag.pass < 1 || tag.campaign.is_empty() || tag.entry.is_empty() {
            return Err(bad(
                "a campaign, an entry and a pass from 1 are needed".into()
            ));
        }
        Ok(Some(tag))
    }

    /// The tag as [`ENV_CAMPAIGN`] holds it.
    pub fn to_env(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The entry's words as stored (a JSON array).
    pub fn args_text(&self) -> String {
        serde_json::to_string(&self.args).unwrap_or_default()
    }
}

/// Which campaign runs a query is about.
#[derive(Debug, Clone, Default)]
pub struct CampaignFilter {
    /// The campaign.
    pub campaign: String,
    /// Of these hosts only (any when empty).
    pub hosts: Vec<String>,
}

/// A run recorded as an entry of a campaign.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CampaignRun {
    /// The run's columns.
    pub summary: Summary,
    /// The campaign.
    pub campaign: String,
    /// Its pass on the run's host.
    pub pass: i64,
    /// The entry.
    pub entry: String,
    /// The entry's words when it ran.
    pub args: Vec<String>,
}

/// Of `runs`, those of each host's latest pass, in the order given.
pub fn latest_passes(runs: Vec<CampaignRun>) -> Vec<CampaignRun> {
    let latest = |host: &str| {
        runs.iter()
            .filter(|r| r.summary.host == host)
            .map(|r| r.pass)
            .max()
            .unwrap_or(0)
    };
    let keep: Vec<bool> = runs
        .iter()
        .map(|r| r.pass == latest(&r.summary.host))
        .collect();
    runs.into_iter()
        .zip(keep)
        .filter_map(|(r, k)| k.then_some(r))
        .collect()
}

/// The entry's words as stored, back as a list (text that is not a
/// JSON list of strings is one word).
pub(crate) fn args_of(text: &str) -> Vec<String> {
    serde_json::from_str(text).unwrap_or_else(|_| vec![text.to_string()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(host: &str, pass: i64, id: i64) -> CampaignRun {
        CampaignRun {
            summary: Summary {
                id,
                suite: "floor".into(),
                started: String::new(),
                finished: String::new(),
                host: host.into(),
                kernel: String::new(),
                cpu_model: String::new(),
                tool_version: String::new(),
                outcome: "ok".into(),
                headline: String::new(),
                origin: "run".into(),
            },
            campaign: "c".into(),
            pass,
            entry: format!("e{id}"),
            args: vec!["floor".into()],
        }
    }

    #[test]
    fn each_hosts_latest_pass_is_kept_in_order() {
        let runs = vec![
            run("a", 1, 1),
            run("b", 1, 2),
            run("a", 2, 3),
            run("a", 2, 4),
            run("b", 1, 5),
        ];
        let ids: Vec<i64> = latest_passes(runs).iter().map(|r| r.summary.id).collect();
        assert_eq!(ids, [2, 3, 4, 5]);
    }

    #[test]
    fn a_tag_goes_through_the_environment_whole() {
        let t = Tag {
            campaign: "quick".into(),
            pass: 2,
            entry: "ipc".into(),
            args: vec!["ipc".into(), "--quick".into()],
        };
        let back: Tag = serde_json::from_str(&t.to_env()).unwrap();
        assert_eq!(back, t);
        assert_eq!(args_of(&t.args_text()), t.args);
        assert_eq!(args_of("not json"), ["not json"]);
    }
}
