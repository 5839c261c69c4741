//! `msgbench history export` and `import`: envelopes out of the store and
//! into it, byte for byte, so a board without network keeps its runs as
//! files and a machine with the store loads them later; and a stored run
//! exported for a lab's engine (`--format bmf|openmetrics|lines|lava`,
//! on standard output; `--push URL` with openmetrics).

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::results::envelope::Run;
use crate::results::export::push::Gateway;
use crate::results::export::{Export, Subject};
use crate::store::{refs, Access, NewRun, Origin, Store, StoreArgs, StoreError};

/// Options of `msgbench history export`.
#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The runs: ID, @ID, @last or @prev.
    #[arg(value_name = "RUN", required = true)]
    pub runs: Vec<String>,
    /// Where the files are written, one per run, named
    /// HOST-SUITE-ID.json (an existing file is not overwritten).
    #[arg(
        short = 'o',
        long = "output-dir",
        value_name = "DIR",
        default_value = ".",
        conflicts_with = "format"
    )]
    pub dir: PathBuf,
    /// Instead of envelope files: one run's figures on standard output,
    /// for a lab's engine: bmf (Bencher), openmetrics (Prometheus), lines
    /// (`name: value unit`, LKP), lava (`lava-test-case` lines).
    #[arg(long = "format", value_enum, value_name = "FORMAT")]
    pub format: Option<Export>,
    /// With --format openmetrics: also push the figures to the Prometheus
    /// Pushgateway at URL (http://HOST:PORT), as the group
    /// job=msgbench, instance=HOST (the run's host).
    #[arg(long = "push", value_name = "URL")]
    pub push: Option<String>,
}

/// Options of `msgbench history import`.
#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// Results envelopes (--json files, or history export).
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
}

/// Writes each run's envelope to a file of its own, or one run in an
/// export format on standard output.
pub fn export(store: &StoreArgs, args: &ExportArgs) -> Result<()> {
    let gateway = gateway(args)?;
    if let Some(format) = args.format {
        return export_one(store, args, format, gateway.as_ref());
    }
    let ids: Vec<_> = args
        .runs
        .iter()
        .map(|r| super::run_ref(r))
        .collect::<Result<_>>()?;
    let mut s = refs::open(store)?;
    let shown = s.location.to_string();
    std::fs::create_dir_all(&args.dir)
        .with_context(|| format!("--output-dir {}: cannot create", args.dir.display()))?;
    for r in ids {
        let id = refs::resolve(&mut s, r)?.id;
        let run = s.get(id).with_context(|| format!("store {shown}"))?;
        let name = format!(
            "{}-{}-{id}.json",
            file_safe(&run.summary.host),
            file_safe(&run.summary.suite)
        );
        let path = args.dir.join(name);
        write_new(&path, &run.envelope)?;
        println!("@{id} -> {}", path.display());
    }
    Ok(())
}

/// `--push`, checked before the store is opened: with `--format
/// openmetrics` only, an address.
fn gateway(args: &ExportArgs) -> Result<Option<Gateway>> {
    let Some(url) = &args.push else {
        return Ok(None);
    };
    if args.format != Some(Export::Openmetrics) {
        bail!("--push {url}: pushes the openmetrics export: give it with --format openmetrics");
    }
    Gateway::parse(url).map(Some)
}

/// One run in `format` on standard output, and pushed to `gateway`.
fn export_one(
    store: &StoreArgs,
    args: &ExportArgs,
    format: Export,
    gateway: Option<&Gateway>,
) -> Result<()> {
    let [one] = args.runs.as_slice() else {
        bail!(
            "--format {} exports one run ({} given): give one RUN",
            format.name(),
            args.runs.len()
        );
    };
    let r = super::run_ref(one)?;
    let mut s = refs::open(store)?;
    let id = refs::resolve(&mut s, r)?.id;
    let shown = s.location.to_string();
    let stored = s.get(id).with_context(|| format!("store {shown}"))?;
    let run = Run::parse(&stored.envelope, &format!("@{id} in the store {shown}"))?;
    let subject = Subject::of(&run);
    let text = format
        .export(&subject)
        .with_context(|| format!("@{id}: cannot export as {}", format.name()))?;
    print!("{text}");
    if let Some(g) = gateway {
        g.push(subject.host, &text)?;
    }
    Ok(())
}

/// `s` with anything but letters, digits, `.`, `_` and `-` as `_`.
fn file_safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Writes `text` to a new file (an existing one is an error).
fn write_new(path: &Path, text: &str) -> Result<()> {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .with_context(|| format!("{}: cannot write (not overwritten)", path.display()))?;
    f.write_all(text.as_bytes())
        .with_context(|| format!("{}: cannot write", path.display()))
}

/// Loads each file: imported, or refused with one line (the others are
/// still imported); exit status 1 if any was refused. One file refused
/// is the one error line; of several, a line each and the count.
pub fn import(store: &StoreArgs, args: &ImportArgs) -> Result<()> {
    let location = store.location()?;
    let shown = location.to_string();
    let mut s = Store::open(location, Access::Write).with_context(|| format!("store {shown}"))?;
    let mut refused = 0;
    for p in &args.files {
        match import_one(&mut s, p) {
            Ok(id) => println!("{}: imported as @{id}", p.display()),
            Err(e) if args.files.len() == 1 => bail!("{}: refused: {e}", p.display()),
            Err(e) => {
                refused += 1;
                eprintln!("msgbench: {}: refused: {e}", p.display());
            }
        }
    }
    if refused > 0 {
        bail!(
            "history import: {refused} of {} file(s) refused (see above)",
            args.files.len()
        );
    }
    Ok(())
}

/// Reads one envelope and records it.
fn import_one(s: &mut Store, path: &Path) -> Result<i64, StoreError> {
    let bytes =
        std::fs::read(path).map_err(|e| StoreError::NotEnvelope(format!("cannot read: {e}")))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| StoreError::NotEnvelope("not text (UTF-8): not a results file".into()))?;
    let run = NewRun::from_text(text, Origin::Import, None)?;
    s.insert(&run)
}
