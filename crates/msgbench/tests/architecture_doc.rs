//! docs/architecture.md's map of the workspace (its first code block) is
//! kept in step with the tree: every path it names exists, and every
//! module of a folder it describes is named in that folder's entry, so a
//! file added, moved or renamed without the map fails here.
//!
//! The map's shape: a line starting at column 0 names a crate
//! (`crates/msgpass/`) or a top-level file; a line indented by two names
//! a path inside the last crate (`src/suites/ipc/`); deeper-indented
//! lines continue the entry's description. A folder entry must name each
//! of its modules (a `.rs` file's stem, or a subfolder) as a word of its
//! description; a file entry must exist.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

mod tree;
use tree::{root, rust_files};

/// One entry of the map: the path it names (from the workspace root) and
/// the words of its description.
#[derive(Debug)]
struct Entry {
    path: String,
    text: String,
}

/// The map's lines: the first fenced block after `## Workspace`.
fn map_lines(doc: &str) -> Vec<&str> {
    let after = doc
        .split_once("## Workspace")
        .expect("docs/architecture.md has a `## Workspace` section")
        .1;
    let block = after
        .split_once("```\n")
        .expect("the Workspace section opens a code block")
        .1;
    let block = block.split_once("```").expect("the code block is closed").0;
    block.lines().collect()
}

/// The map's entries, paths made whole (a crate's files prefixed with it).
fn entries(lines: &[&str]) -> Vec<Entry> {
    let mut out: Vec<Entry> = Vec::new();
    let mut krate = String::new();
    for line in lines {
        let indent = line.len() - line.trim_start().len();
        let first = line.split_whitespace().next().unwrap_or("");
        let rest = line.trim_start().get(first.len()..).unwrap_or("");
        let path = first.trim_end_matches(',');
        match indent {
            0 if !first.is_empty() => {
                if path.starts_with("crates/") {
                    krate = path.to_string();
                }
                out.push(Entry {
                    path: path.to_string(),
                    text: rest.to_string(),
                });
            }
            2 => out.push(Entry {
                path: format!("{krate}{path}"),
                text: rest.to_string(),
            }),
            _ => {
                if let Some(e) = out.last_mut() {
                    e.text.push(' ');
                    e.text.push_str(line.trim());
                }
            }
        }
    }
    out
}

/// The words of `text` (letters, digits, `_`, `-`).
fn words(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect()
}

/// The modules of a folder: each `.rs` file's stem (but `mod`, `lib`,
/// `main`) and each subfolder.
fn modules(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let Ok(read) = fs::read_dir(dir) else {
        return out;
    };
    for e in read.flatten() {
        let p = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if p.is_dir() {
            out.push(name);
        } else if let Some(stem) = name.strip_suffix(".rs") {
            if !["mod", "lib", "main"].contains(&stem) {
                out.push(stem.to_string());
            }
        }
    }
    out.sort();
    out
}

/// What is wrong with the map against the tree under `root`, one line each.
fn problems(root: &Path, doc: &str) -> Vec<String> {
    let mut bad = Vec::new();
    let all = entries(&map_lines(doc));
    for (i, e) in all.iter().enumerate() {
        if e.path.contains('<') || e.path.is_empty() {
            continue; // a pattern such as `src/transport/<mechanism>.rs`
        }
        let p = root.join(&e.path);
        if !p.exists() {
            bad.push(format!("{}: named in the map, not in the tree", e.path));
            continue;
        }
        // A folder of sources names its modules; so does a crate whose
        // files have no entries of their own (its modules are in `src/`).
        let is_crate = e.path.starts_with("crates/") && e.path.matches('/').count() == 2;
        let alone = all
            .get(i + 1)
            .is_none_or(|next| !next.path.starts_with(&e.path));
        let listed = if is_crate && alone {
            Some(p.join("src"))
        } else if p.is_dir() && e.path.contains("/src/") {
            Some(p.clone())
        } else {
            None
        };
        if let Some(dir) = listed {
            let said = words(&e.text);
            for m in modules(&dir) {
                if !said.contains(&m) {
                    bad.push(format!(
                        "{}: module `{m}` is not named in its entry",
                        e.path
                    ));
                }
            }
        }
    }
    for f in sources(&root.join("crates")) {
        let rel = f
            .strip_prefix(root)
            .unwrap_or(&f)
            .to_string_lossy()
            .into_owned();
        if !covered(&all, &rel) {
            bad.push(format!("{rel}: in the tree, not in the map"));
        }
    }
    bad
}

/// Every source file under `crates/*/src`, but the roots (`lib.rs`,
/// `main.rs`), folder modules (`mod.rs`), which their folder stands for,
/// and unit-test modules (`tests.rs`).
fn sources(crates: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for k in fs::read_dir(crates).into_iter().flatten().flatten() {
        out.extend(rust_files(&k.path().join("src")).into_iter().filter(|p| {
            !["lib.rs", "main.rs", "mod.rs", "tests.rs"]
                .iter()
                .any(|n| p.ends_with(n))
        }));
    }
    out.sort();
    out
}

/// Whether the map accounts for source file `rel`: an entry names it, or
/// an entry for a folder above it (or a pattern entry such as
/// `src/transport/<mechanism>.rs`) names its stem.
fn covered(all: &[Entry], rel: &str) -> bool {
    let stem = Path::new(rel)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    all.iter().any(|e| {
        if e.path == rel {
            return true;
        }
        let folder = match e.path.split_once('<') {
            Some((before, _)) => before,
            None if e.path.ends_with('/') => e.path.as_str(),
            None => return false,
        };
        let folder = if e.path.matches('/').count() == 2 && e.path.starts_with("crates/") {
            format!("{folder}src/")
        } else {
            folder.to_string()
        };
        rel.starts_with(&folder) && words(&e.text).contains(&stem)
    })
}

#[test]
fn the_map_of_the_workspace_is_in_step_with_the_tree() {
    let root = root();
    let doc = fs::read_to_string(root.join("docs/architecture.md")).expect("docs/architecture.md");
    let bad = problems(&root, &doc);
    assert!(
        bad.is_empty(),
        "docs/architecture.md's map and the tree differ:\n{}",
        bad.join("\n")
    );
}

#[test]
fn a_moved_file_and_an_unnamed_module_are_seen() {
    let dir = std::env::temp_dir().join(format!("archdoc-{}", std::process::id()));
    let src = dir.join("crates/k/src/suite");
    fs::create_dir_all(&src).unwrap();
    for f in ["mod.rs", "run.rs", "row.rs"] {
        fs::write(src.join(f), "").unwrap();
    }
    fs::write(dir.join("crates/k/src/lib.rs"), "").unwrap();
    let doc = |entry: &str| {
        format!(
            "# x\n## Workspace\n\n```\ncrates/k/     the crate\n  src/lib.rs  root\n{entry}```\n"
        )
    };
    // In step: both modules named.
    assert!(problems(
        &dir,
        &doc("  src/suite/   a suite: run,\n               row\n")
    )
    .is_empty());
    // A file the map does not account for.
    fs::write(src.join("judge.rs"), "").unwrap();
    let bad = problems(
        &dir,
        &doc("  src/suite/   a suite: run,\n               row\n"),
    );
    assert_eq!(
        bad,
        [
            "crates/k/src/suite/: module `judge` is not named in its entry",
            "crates/k/src/suite/judge.rs: in the tree, not in the map"
        ]
    );
    fs::remove_file(src.join("judge.rs")).unwrap();
    // A module left out of its entry.
    let bad = problems(&dir, &doc("  src/suite/   a suite: run\n"));
    assert_eq!(
        bad,
        [
            "crates/k/src/suite/: module `row` is not named in its entry",
            "crates/k/src/suite/row.rs: in the tree, not in the map"
        ]
    );
    // A path the tree does not have.
    let bad = problems(
        &dir,
        &doc("  src/gone.rs  was here\n  src/suite/ run row\n"),
    );
    assert_eq!(
        bad,
        ["crates/k/src/gone.rs: named in the map, not in the tree"]
    );
    fs::remove_dir_all(&dir).unwrap();
}
