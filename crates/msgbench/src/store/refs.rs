//! Runs by reference, wherever a results file is taken: `@last` (the run
//! started last in the store), `@prev` (the run of the same suite and
//! host started before `@last`), `@ID` (run ID). `compare @last @prev`
//! is then the last run against the one before it on the same machine.
//! A file whose name starts with `@` is given as `./@name`.

use std::path::PathBuf;

use anyhow::{anyhow, bail, Context, Result};

use super::{Access, Filter, Store, StoreArgs, Summary};
use crate::results::envelope::Run;

/// A reference to a stored run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRef {
    /// The run started last.
    Last,
    /// The run of `@last`'s suite and host started before it.
    Prev,
    /// Run ID.
    Id(i64),
}

impl RunRef {
    /// Parses `@last`, `@prev`, `@ID`, or (`bare_ids`) a plain `ID`;
    /// `None` when `s` is none of those.
    pub fn parse(s: &str, bare_ids: bool) -> Option<Result<RunRef>> {
        let body = match s.strip_prefix('@') {
            Some(b) => b,
            None if bare_ids => s,
            None => return None,
        };
        Some(match body {
            "last" => Ok(RunRef::Last),
            "prev" => Ok(RunRef::Prev),
            n => match n.parse::<i64>() {
                Ok(id) if id > 0 => Ok(RunRef::Id(id)),
                _ => Err(anyhow!(
                    "{s}: not a run (give @last, @prev or @ID, ID a run number from msgbench history)"
                )),
            },
        })
    }
}

/// A run given on the command line: a file, or a run in the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A results file.
    File(PathBuf),
    /// A stored run.
    Stored(RunRef),
}

impl Source {
    /// `@...` is a reference (an error if malformed), anything else a file.
    pub fn parse(s: &str) -> Result<Source> {
        match RunRef::parse(s, false) {
            Some(r) => Ok(Source::Stored(r?)),
            None => Ok(Source::File(PathBuf::from(s))),
        }
    }
}

/// A loaded run with the name it is shown under.
#[derive(Debug, Clone)]
pub struct Loaded {
    /// `@ID` for a stored run, the file's path for a file.
    pub name: String,
    /// The stored run's columns.
    pub summary: Option<Summary>,
    /// The run.
    pub run: Run,
}

/// Opens the store for reading, the error naming it.
pub fn open(args: &StoreArgs) -> Result<Store> {
    let location = args.location()?;
    let shown = location.to_string();
    Store::open(location, Access::Read).with_context(|| format!("store {shown}"))
}

/// Resolves `r` to a run's columns.
pub fn resolve(store: &mut Store, r: RunRef) -> Result<Summary> {
    let shown = store.location.to_string();
    match r {
        RunRef::Id(id) => Ok(store
            .get(id)
            .with_context(|| format!("store {shown}"))?
            .summary),
        RunRef::Last => last(store, &Filter::default())?
            .ok_or_else(|| anyhow!("@last: no runs in the store {shown}")),
        RunRef::Prev => {
            let Some(l) = last(store, &Filter::default())? else {
                bail!("@prev: no runs in the store {shown}");
            };
            let f = Filter {
                suite: Some(l.suite.clone()),
                hosts: vec![l.host.clone()],
                before: Some((l.started.clone(), l.id)),
                ..Filter::default()
            };
            last(store, &f)?.ok_or_else(|| {
                anyhow!(
                    "@prev: no {} run of {} before @last (@{}) in the store {shown}",
                    l.suite,
                    l.host,
                    l.id
                )
            })
        }
    }
}

/// The latest run `f` selects.
pub fn last(store: &mut Store, f: &Filter) -> Result<Option<Summary>> {
    let f = Filter {
        last: Some(1),
        ..f.clone()
    };
    let shown = store.location.to_string();
    Ok(store
        .list(&f)
        .with_context(|| format!("store {shown}"))?
        .pop())
}

/// Loads stored run `id` as a [`Run`].
pub fn load_id(store: &mut Store, id: i64) -> Result<Loaded> {
    let shown = store.location.to_string();
    let s = store.get(id).with_context(|| format!("store {shown}"))?;
    let name = format!("@{id}");
    let run = Run::parse(&s.envelope, &format!("{name} in the store {shown}"))?;
    Ok(Loaded {
        name,
        summary: Some(s.summary),
        run,
    })
}

/// Loads every source, opening the store (once) only if one is stored.
pub fn load_all(sources: &[Source], args: &StoreArgs) -> Result<Vec<Loaded>> {
    let mut store: Option<Store> = None;
    let mut out = Vec::with_capacity(sources.len());
    for s in sources {
        out.push(match s {
            Source::File(p) => Loaded {
                name: p.display().to_string(),
                summary: None,
                run: Run::load(p)?,
            },
            Source::Stored(r) => {
                let st = match &mut store {
                    Some(st) => st,
                    None => store.insert(open(args)?),
                };
                let id = match r {
                    RunRef::Id(id) => *id,
                    r => resolve(st, *r)?.id,
                };
                load_id(st, id)?
            }
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_and_files() {
        assert_eq!(
            Source::parse("@last").unwrap(),
            Source::Stored(RunRef::Last)
        );
        assert_eq!(
            Source::parse("@prev").unwrap(),
            Source::Stored(RunRef::Prev)
        );
        assert_eq!(
            Source::parse("@12").unwrap(),
            Source::Stored(RunRef::Id(12))
        );
        assert_eq!(Source::parse("12").unwrap(), Source::File("12".into()));
        assert_eq!(
            Source::parse("./@last").unwrap(),
            Source::File("./@last".into())
        );
        for bad in ["@", "@0", "@-3", "@lst", "@1.5"] {
            let e = Source::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("{bad}: not a run")), "{e}");
        }
        assert_eq!(RunRef::parse("7", true).unwrap().unwrap(), RunRef::Id(7));
        assert!(RunRef::parse("seven", true).unwrap().is_err());
    }
}
