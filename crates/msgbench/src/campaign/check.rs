//! Every entry of a campaign checked before anything runs: its words
//! parsed by msgbench's own command line (the very `clap::Command` the
//! program parses its arguments with, so an entry is refused exactly
//! when the same words typed after `msgbench` would be), the subcommand
//! one of the suites, and the suite's plan made (what `msgbench SUITE`
//! refuses before measuring: two options that do not go together, a
//! count beyond a limit of this machine). Each refusal is one line
//! naming the file, the entry and the option.

use anyhow::{anyhow, bail, Result};
use clap::{ArgMatches, Command, FromArgMatches};

use super::file::{Campaign, Entry};
use crate::suites::adder::Adder;
use crate::suites::broker::Broker;
use crate::suites::floor::Floor;
use crate::suites::ipc::Ipc;
use crate::suites::rtos::Rtos;
use crate::suites::smp::Smp;
use crate::suites::validate::Validate;
use crate::suites::{OutputArgs, Suite};

/// The subcommands a campaign runs: the suites.
pub const SUITES: [&str; 7] = [
    Adder::NAME,
    Ipc::NAME,
    Floor::NAME,
    Validate::NAME,
    Rtos::NAME,
    Smp::NAME,
    Broker::NAME,
];

/// An entry that parses and plans.
#[derive(Debug, Clone, PartialEq)]
pub struct Checked {
    /// The entry's name.
    pub name: String,
    /// Its suite.
    pub suite: &'static str,
    /// Its words (the suite first).
    pub words: Vec<String>,
}

/// Checks every entry of `c` against `cli` (msgbench's command line),
/// in order: the first refusal is the error.
pub fn check(cli: &Command, c: &Campaign) -> Result<Vec<Checked>> {
    c.entries
        .iter()
        .map(|e| {
            entry(cli, e)
                .map_err(|why| anyhow!("{}: entry {:?}: {why:#}", c.path.display(), e.name))
        })
        .collect()
}

/// One entry: parsed, a suite, planned.
fn entry(cli: &Command, e: &Entry) -> Result<Checked> {
    let argv = std::iter::once("msgbench").chain(e.words.iter().map(String::as_str));
    let m = cli
        .clone()
        .try_get_matches_from(argv)
        .map_err(|err| anyhow!(refusal(&err)))?;
    let Some((sub, sm)) = m.subcommand() else {
        bail!("names no suite (give one of {})", SUITES.join(", "));
    };
    let Some(suite) = SUITES.iter().copied().find(|s| *s == sub) else {
        bail!(
            "{sub} is not a suite; a campaign runs {}",
            SUITES.join(", ")
        );
    };
    if e.words[0] != suite {
        bail!("run: the suite comes first ({suite}), then its options");
    }
    plan(suite, sm)?;
    Ok(Checked {
        name: e.name.clone(),
        suite,
        words: e.words.clone(),
    })
}

/// clap's refusal in one line; `--help` and `--version` (which clap
/// answers by printing) are refused as runs of nothing.
fn refusal(e: &clap::Error) -> String {
    use clap::error::ErrorKind;
    match e.kind() {
        ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            "--help prints the help and runs nothing; leave it out".into()
        }
        ErrorKind::DisplayVersion => {
            "--version prints the version and runs nothing; leave it out".into()
        }
        _ => crate::cli::one_line(e),
    }
}

/// The plan of `suite` from its matches.
fn plan(suite: &str, m: &ArgMatches) -> Result<()> {
    match suite {
        Adder::NAME => planned::<Adder>(m, |a| &a.output),
        Ipc::NAME => planned::<Ipc>(m, |a| &a.output),
        Floor::NAME => planned::<Floor>(m, |a| &a.output),
        Validate::NAME => planned::<Validate>(m, |a| &a.output),
        Rtos::NAME => planned::<Rtos>(m, |a| &a.output),
        Smp::NAME => planned::<Smp>(m, |a| &a.output),
        Broker::NAME => planned::<Broker>(m, |a| &a.output),
        other => bail!("{other} is not a suite"),
    }
}

/// Suite `S`'s arguments from `m`, its output options as a campaign
/// allows them, and its plan.
fn planned<S: Suite>(m: &ArgMatches, output: fn(&S::Args) -> &OutputArgs) -> Result<()>
where
    S::Args: FromArgMatches,
{
    let args = S::Args::from_arg_matches(m).map_err(|e| anyhow!(crate::cli::one_line(&e)))?;
    own_output(output(&args))?;
    S::plan(&args).map(|_| ())
}

/// The options a campaign sets itself: each entry's envelope file and
/// the store.
fn own_output(o: &OutputArgs) -> Result<()> {
    if o.json.is_some() {
        bail!("--json: the campaign writes each entry's envelope itself (ENTRY.json in its --output-dir); leave it out");
    }
    if o.record.store.store.is_some() {
        bail!("--store: the campaign records every entry in its own store (msgbench campaign --store URL); leave it out");
    }
    if o.record.no_store {
        bail!("--no-store: a campaign records every entry (the store is what it resumes from); leave it out");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::adder::AdderArgs;
    use crate::suites::floor::FloorArgs;
    use clap::{CommandFactory, Parser, Subcommand};

    /// A command line like msgbench's: two suites and a command that is
    /// not one.
    #[derive(Parser)]
    #[command(name = "msgbench")]
    struct Cli {
        #[command(subcommand)]
        cmd: Option<Cmd>,
    }

    #[derive(Subcommand)]
    enum Cmd {
        Adder(Box<AdderArgs>),
        Floor(FloorArgs),
        History,
    }

    fn campaign(run: &[&str]) -> Campaign {
        Campaign {
            name: "c".into(),
            path: "c.toml".into(),
            entries: vec![
                Entry {
                    name: "first".into(),
                    words: vec!["floor".into(), "--quick".into()],
                },
                Entry {
                    name: "second".into(),
                    words: run.iter().map(|w| w.to_string()).collect(),
                },
            ],
        }
    }

    fn refused(run: &[&str]) -> String {
        let e = check(&Cli::command(), &campaign(run)).unwrap_err();
        let e = format!("{e:#}");
        assert!(!e.contains('\n'), "{e}");
        assert!(e.starts_with("c.toml: entry \"second\": "), "{e}");
        e
    }

    #[test]
    fn suites_pass_with_their_plans() {
        let c = check(&Cli::command(), &campaign(&["adder", "--threads", "1,2"])).unwrap();
        assert_eq!(c[0].suite, "floor");
        assert_eq!(c[1].suite, "adder");
        assert_eq!(c[1].words, ["adder", "--threads", "1,2"]);
    }

    #[test]
    fn a_bad_entry_names_itself_and_the_option() {
        for (run, want) in [
            (&["floor", "--bogus"][..], "unexpected argument '--bogus'"),
            (&["adder", "--threads", "0"], "--threads 0: "),
            (
                &["adder", "--modes", "pool", "--threads", "100"],
                "--threads 100: a pool",
            ),
            (
                &["history"],
                "history is not a suite; a campaign runs adder, ipc",
            ),
            (&["--quick"], "unexpected argument '--quick'"),
            (&["floor", "--help"], "--help prints the help"),
            (
                &["floor", "--json", "x.json"],
                "--json: the campaign writes",
            ),
            (
                &["floor", "--store", "x.db"],
                "--store: the campaign records",
            ),
            (&["floor", "--no-store"], "--no-store: a campaign records"),
        ] {
            let e = refused(run);
            assert!(e.contains(want), "{run:?}: {e}");
        }
    }
}
