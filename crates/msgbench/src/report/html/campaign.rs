//! A campaign's runs for the report (`msgbench report --campaign NAME`,
//! and the report `msgbench campaign` writes): the latest pass of the
//! campaign on each host, each run labelled `HOST: ENTRY (@ID)`, so that
//! two machines' runs of one suite are overlaid in its section.

use anyhow::{bail, Context, Result};

use super::Input;
use crate::store::campaign::latest_passes;
use crate::store::refs;
use crate::store::{CampaignFilter, CampaignRun, Store};

/// The runs of campaign `name`'s latest pass on each of `hosts` (every
/// host with one when empty), of `suite` only if given, host by host in
/// the order given (else by name), each host's in the order they ran. A
/// host without the campaign is an error naming it.
pub fn inputs(
    store: &mut Store,
    name: &str,
    hosts: &[String],
    suite: Option<&str>,
) -> Result<Vec<Input>> {
    let shown = store.location.to_string();
    let runs = store
        .campaign_runs(&CampaignFilter {
            campaign: name.to_string(),
            hosts: hosts.to_vec(),
        })
        .with_context(|| format!("store {shown}"))?;
    let runs = latest_passes(runs);
    let order = host_order(&runs, hosts, name, &shown)?;
    let mut out = Vec::new();
    for host in &order {
        for r in runs.iter().filter(|r| &r.summary.host == host) {
            if suite.is_some_and(|s| s != r.summary.suite) {
                continue;
            }
            let loaded = refs::load_id(store, r.summary.id)?;
            out.push(Input {
                label: format!("{host}: {} (@{})", r.entry, r.summary.id),
                run: loaded.run,
            });
        }
    }
    if let (Some(s), true) = (suite, out.is_empty()) {
        bail!(
            "--suite {s}: no {s} run in the latest pass of campaign {name} on {}",
            order.join(", ")
        );
    }
    Ok(out)
}

/// The hosts to show: `hosts` as given, each with the campaign, else
/// every host of `runs` by name.
fn host_order(
    runs: &[CampaignRun],
    hosts: &[String],
    name: &str,
    store: &str,
) -> Result<Vec<String>> {
    if hosts.is_empty() {
        let mut all: Vec<String> = runs.iter().map(|r| r.summary.host.clone()).collect();
        all.sort();
        all.dedup();
        if all.is_empty() {
            bail!("--campaign {name}: no run of campaign {name} in the store {store}");
        }
        return Ok(all);
    }
    for h in hosts {
        if !runs.iter().any(|r| &r.summary.host == h) {
            bail!("--host {h}: no run of campaign {name} on {h} in the store {store}");
        }
    }
    let mut given: Vec<String> = Vec::new();
    for h in hosts {
        if !given.contains(h) {
            given.push(h.clone());
        }
    }
    Ok(given)
}
