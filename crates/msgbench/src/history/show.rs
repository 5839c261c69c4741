//! `msgbench history show RUN`: a stored run printed as its suite printed
//! it (the banner and tables the store kept with it), or its envelope
//! byte for byte (`--format json`). A run imported from a file carries no
//! tables of its suite: it is shown as its figures, the generic shape
//! `compare` reads.

use anyhow::{Context, Result};
use clap::Args;

use crate::results::envelope::Run;
use crate::results::table::{render, Align, Format, Section, Table};
use crate::store::{refs, Rendering, StoreArgs, Stored};

/// Options of `msgbench history show`.
#[derive(Debug, Clone, Args)]
pub struct ShowArgs {
    /// The run: ID, @ID, @last or @prev.
    #[arg(value_name = "RUN")]
    pub run: String,
    /// table, markdown, csv (the suite's own renderings), or json (the
    /// envelope, as --json wrote it).
    #[arg(long = "format", value_enum, default_value_t = Format::Table, value_name = "FORMAT")]
    pub format: Format,
}

/// Prints the run.
pub fn run(store: &StoreArgs, args: &ShowArgs) -> Result<()> {
    let r = super::run_ref(&args.run)?;
    let mut s = refs::open(store)?;
    let id = refs::resolve(&mut s, r)?.id;
    let shown = s.location.to_string();
    let stored = s.get(id).with_context(|| format!("store {shown}"))?;
    print!("{}", text(&stored, args.format)?);
    Ok(())
}

/// The run in `format`.
pub fn text(stored: &Stored, format: Format) -> Result<String> {
    if format == Format::Json {
        return Ok(stored.envelope.clone());
    }
    let id = stored.summary.id;
    let rendering = match &stored.rendering {
        Some(r) => serde_json::from_str::<Rendering>(r)
            .with_context(|| format!("@{id}: the stored tables cannot be read"))?,
        None => generic(stored)?,
    };
    let mut out = String::new();
    if format != Format::Csv {
        out.push_str(&rendering.banner);
        out.push_str("\n\n");
    }
    out.push_str(&render(&rendering.sections, format));
    Ok(out)
}

/// An imported run: a line saying what it is, and its figures.
fn generic(stored: &Stored) -> Result<Rendering> {
    let s = &stored.summary;
    let run = Run::parse(&stored.envelope, &format!("@{}", s.id))?;
    let banner = format!(
        "msgbench {} run @{}, imported: started {} on {} ({}). Shown as its figures \
         (the suite's own tables are kept for runs recorded when they ran).",
        s.suite, s.id, s.started, s.host, s.kernel
    );
    let mut keys: Vec<&String> = Vec::new();
    for k in run.figures.iter().flat_map(|f| f.key.keys()) {
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mut head: Vec<&str> = keys.iter().map(|k| k.as_str()).collect();
    head.extend(["metric", "value", "unit"]);
    let mut align = vec![Align::Left; keys.len() + 1];
    align.extend([Align::Right, Align::Left]);
    let mut t = Table::new("Figures", &head).aligned(&align);
    for f in &run.figures {
        let mut row: Vec<String> = keys
            .iter()
            .map(|k| f.key.get(*k).cloned().unwrap_or_default())
            .collect();
        row.extend([f.metric.clone(), format!("{}", f.value), f.unit.clone()]);
        t.row(row);
    }
    t.notes.extend(run.notes.iter().cloned());
    Ok(Rendering {
        banner,
        sections: vec![Section::Table(t)],
    })
}
