//! A campaign file: TOML with the campaign's name and its entries, each
//! a name and the suite with its options exactly as on the command line.
//!
//! ```toml
//! campaign = "quick"
//!
//! [[entry]]
//! name = "adder"
//! run = "adder --threads 1,2 -t uds --modes one,multi"
//!
//! [[entry]]
//! name = "msg-inversion"
//! run = ["rtos", "MSG-B-PRI", "--msg-inherit", "off"]
//! ```
//!
//! `run` is split at white space (a leading `msgbench` is dropped); a
//! word with a space in it is given in the list form, since quotes are
//! not read. Names are letters, digits, `.`, `_` and `-` (they name the
//! entries' output files), each entry's once. Every error is one line
//! naming the file, and the line or the entry.

use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

/// The longest campaign file read (a file is a few lines per entry).
const MAX_BYTES: u64 = 1 << 20;

/// The longest name of a campaign or an entry.
const MAX_NAME: usize = 64;

/// A campaign as its file gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Campaign {
    /// Its name (`campaign = "..."`).
    pub name: String,
    /// The file, as given.
    pub path: PathBuf,
    /// The entries, in order.
    pub entries: Vec<Entry>,
}

/// One entry: a name and a suite's command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Its name.
    pub name: String,
    /// The suite and its options, one word each (no `msgbench`).
    pub words: Vec<String>,
}

/// The file as TOML gives it.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    campaign: String,
    #[serde(default, rename = "entry")]
    entries: Vec<RawEntry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEntry {
    name: String,
    run: toml::Value,
}

/// Reads the campaign file at `path`.
pub fn load(path: &Path) -> Result<Campaign> {
    let shown = path.display().to_string();
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_BYTES + 1).read_to_string(&mut text))
        .with_context(|| format!("{shown}: cannot read"))?;
    if text.len() as u64 > MAX_BYTES {
        bail!("{shown}: longer than {MAX_BYTES} bytes: not a campaign file");
    }
    parse(&text, path)
}

/// Reads a campaign file's `text` (`path` names it in errors).
pub fn parse(text: &str, path: &Path) -> Result<Campaign> {
    let shown = path.display().to_string();
    let raw: Raw =
        toml::from_str(text).map_err(|e| anyhow!("{shown}: {}", toml_error(&e, text)))?;
    check_name(&raw.campaign)
        .map_err(|why| anyhow!("{shown}: campaign {:?}: {why}", raw.campaign))?;
    if raw.entries.is_empty() {
        bail!("{shown}: no [[entry]]: a campaign runs at least one");
    }
    let mut entries: Vec<Entry> = Vec::with_capacity(raw.entries.len());
    for r in raw.entries {
        let e = entry(r).map_err(|(name, why)| anyhow!("{shown}: entry {name:?}: {why}"))?;
        if entries.iter().any(|x| x.name == e.name) {
            bail!(
                "{shown}: entry {:?}: the name is given twice; name each entry once",
                e.name
            );
        }
        entries.push(e);
    }
    Ok(Campaign {
        name: raw.campaign,
        path: path.to_path_buf(),
        entries,
    })
}

/// A TOML error in one line: `line N: what` (TOML's own message is a
/// block with the line quoted).
fn toml_error(e: &toml::de::Error, text: &str) -> String {
    let what = e.message().trim().replace('\n', " ");
    match e.span() {
        Some(span) => {
            let line = text
                .get(..span.start)
                .map_or(0, |before| before.matches('\n').count())
                + 1;
            format!("line {line}: {what}")
        }
        None => what,
    }
}

/// One entry checked: its name and words, else its name and why not.
fn entry(r: RawEntry) -> Result<Entry, (String, String)> {
    let fail = |why: String| (r.name.clone(), why);
    check_name(&r.name).map_err(fail)?;
    let mut words = words(&r.run).map_err(|why| fail(format!("run: {why}")))?;
    if words.first().map(String::as_str) == Some("msgbench") {
        words.remove(0);
    }
    if words.is_empty() {
        return Err(fail(
            "run: empty; give a suite and its options, e.g. run = \"floor --quick\"".into(),
        ));
    }
    Ok(Entry {
        name: r.name,
        words,
    })
}

/// `run`'s words: a line split at white space, or a list of strings.
fn words(run: &toml::Value) -> Result<Vec<String>, String> {
    match run {
        toml::Value::String(line) => {
            if line.contains(['"', '\'', '\\']) {
                return Err("quotes and backslashes are not read in a line; give run as a list of words, run = [\"rtos\", \"MSG-B-PRI\"]".into());
            }
            Ok(line.split_whitespace().map(String::from).collect())
        }
        toml::Value::Array(list) => list
            .iter()
            .map(|w| match w {
                toml::Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "a list with {} in it; every word is a string",
                    kind(other)
                )),
            })
            .collect(),
        other => Err(format!(
            "{}, not a line (a string) or a list of words",
            kind(other)
        )),
    }
}

/// What a TOML value is, in words.
fn kind(v: &toml::Value) -> &'static str {
    match v {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "a whole number",
        toml::Value::Float(_) => "a number",
        toml::Value::Boolean(_) => "true or false",
        toml::Value::Datetime(_) => "a date",
        toml::Value::Array(_) => "a list",
        toml::Value::Table(_) => "a table",
    }
}

/// A name of a campaign or an entry: 1 to [`MAX_NAME`] letters, digits,
/// `.`, `_` or `-`, not starting with `.` (it names files).
fn check_name(name: &str) -> Result<(), String> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
    if ok {
        Ok(())
    } else {
        Err(format!(
            "a name is 1 to {MAX_NAME} letters, digits, '.', '_' or '-', not starting with '.'"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Result<Campaign> {
        parse(text, Path::new("c.toml"))
    }

    fn refused(text: &str) -> String {
        let e = format!("{:#}", parsed(text).unwrap_err());
        assert!(!e.contains('\n'), "{e}");
        e
    }

    #[test]
    fn lines_and_lists_of_words() {
        let c = parsed(
            "campaign = \"q\"\n\
             [[entry]]\nname = \"a\"\nrun = \"msgbench  adder --threads 1,2\"\n\
             [[entry]]\nname = \"r.1\"\nrun = [\"rtos\", \"MSG B\"]\n",
        )
        .unwrap();
        assert_eq!(c.name, "q");
        assert_eq!(c.entries[0].words, ["adder", "--threads", "1,2"]);
        assert_eq!(c.entries[1].name, "r.1");
        assert_eq!(c.entries[1].words, ["rtos", "MSG B"]);
    }

    #[test]
    fn every_mistake_is_one_line_naming_where() {
        let head = "campaign = \"q\"\n";
        for (text, want) in [
            ("campaign = \"q\"\n[[entry]]\nname = \"a\"\nrun = \"floor\"\nrnu = 1\n", "c.toml: line 5: unknown field `rnu`"),
            ("[[entry]]\nname = \"a\"\nrun = \"floor\"\n", "missing field `campaign`"),
            ("campaign = \"q\"\n[[entry]\n", "c.toml: line 2:"),
            (head, "c.toml: no [[entry]]"),
            ("campaign = \"a b\"\n[[entry]]\nname = \"a\"\nrun = \"floor\"\n", "c.toml: campaign \"a b\": a name is"),
            ("campaign = \"q\"\n[[entry]]\nname = \"../x\"\nrun = \"floor\"\n", "c.toml: entry \"../x\": a name is"),
            ("campaign = \"q\"\n[[entry]]\nname = \"a\"\nrun = \"\"\n", "c.toml: entry \"a\": run: empty"),
            ("campaign = \"q\"\n[[entry]]\nname = \"a\"\nrun = \"msgbench\"\n", "entry \"a\": run: empty"),
            ("campaign = \"q\"\n[[entry]]\nname = \"a\"\nrun = \"rtos 'MSG B'\"\n", "entry \"a\": run: quotes"),
            ("campaign = \"q\"\n[[entry]]\nname = \"a\"\nrun = 3\n", "entry \"a\": run: a whole number, not a line"),
            ("campaign = \"q\"\n[[entry]]\nname = \"a\"\nrun = [\"floor\", 1]\n", "entry \"a\": run: a list with a whole number in it"),
            ("campaign = \"q\"\n[[entry]]\nname = \"a\"\nrun = \"floor\"\n[[entry]]\nname = \"a\"\nrun = \"ipc\"\n", "entry \"a\": the name is given twice"),
        ] {
            let e = refused(text);
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
