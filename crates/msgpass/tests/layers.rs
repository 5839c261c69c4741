//! The layers of `src/transport/`, named by its folders, bottom up: `mem`,
//! `clock`, `wire`, `serve`, `mechanisms`. A file of one layer imports
//! only from its own layer and those below it (and `api`, the interface
//! every layer speaks), so no import runs back up and the graph has no
//! circle. Read from the sources, every path `crate::transport::LAYER`
//! they name (in `use` lines and in code alike).
//!
//! Above the layers stand the transport table (`transport/table.rs`,
//! `transport/mod.rs`) and the public face (`lib.rs`, `channel.rs`,
//! `connection.rs`, `pool.rs`): no file of a layer, nor `api.rs` and the
//! crate's ground files under it, names them (their unit tests included:
//! a test of a layer uses that layer's own API). Doc comments may link
//! anywhere.

use std::path::{Path, PathBuf};

/// The layers, bottom up.
const LAYERS: [&str; 5] = ["mem", "clock", "wire", "serve", "mechanisms"];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("reading the sources") {
        let p = e.expect("an entry").path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The layers `text` names after `crate::transport::`.
fn named(text: &str) -> Vec<&str> {
    text.match_indices("crate::transport::")
        .filter_map(|(i, m)| {
            let rest = &text[i + m.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            LAYERS.iter().copied().find(|l| *l == &rest[..end])
        })
        .collect()
}

/// Imports running up: (file, its layer, the layer it names).
fn upward(root: &Path) -> Vec<(PathBuf, &'static str, String)> {
    let mut bad = Vec::new();
    for (rank, layer) in LAYERS.iter().enumerate() {
        let mut files = Vec::new();
        sources(&root.join(layer), &mut files);
        assert!(!files.is_empty(), "src/transport/{layer}/ has no source");
        for f in files {
            let text = std::fs::read_to_string(&f).expect("reading a source");
            for up in named(&text) {
                let r = LAYERS.iter().position(|l| *l == up).expect("a layer");
                if r > rank {
                    bad.push((f.clone(), *layer, up.to_string()));
                }
            }
        }
    }
    bad
}

#[test]
fn no_import_runs_back_up_the_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/transport");
    let bad = upward(&root);
    assert!(
        bad.is_empty(),
        "imports running up the layers ({}):\n{}",
        LAYERS.join(" < "),
        bad.iter()
            .map(|(f, l, up)| format!("  {} ({l}) names {up}", f.display()))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn the_reader_sees_an_import_running_up() {
    assert_eq!(
        named("use crate::transport::serve::core::X;\nlet y = crate::transport::mem::shared::f();"),
        ["serve", "mem"]
    );
    assert!(named("use crate::transport::api::Options;").is_empty());
    let dir = std::env::temp_dir().join(format!("msgpass-layers-{}", std::process::id()));
    for l in LAYERS {
        std::fs::create_dir_all(dir.join(l)).unwrap();
        std::fs::write(dir.join(l).join("mod.rs"), "//! ok\n").unwrap();
    }
    std::fs::write(
        dir.join("wire/bad.rs"),
        "use crate::transport::serve::reactor::Conn;\n",
    )
    .unwrap();
    let bad = upward(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(bad.len(), 1);
    assert_eq!((bad[0].1, bad[0].2.as_str()), ("wire", "serve"));
}

/// Files below the transport table: the five layers, `api.rs`, and the
/// crate's ground files.
fn below_the_table(src: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for l in LAYERS {
        sources(&src.join("transport").join(l), &mut files);
    }
    for f in [
        "transport/api.rs",
        "token.rs",
        "names.rs",
        "error.rs",
        "pulse.rs",
    ] {
        files.push(src.join(f));
    }
    files
}

/// What `text` names of the table and the public face, comments left out:
/// `crate::` followed by a re-export of `lib.rs` (a capital), by
/// `channel`, `connection` or `pool`, or `crate::transport::` followed by
/// something that is no layer and not `api` (the table, or what
/// `transport/mod.rs` hands on).
fn names_above(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for line in text.lines().filter(|l| !l.trim_start().starts_with("//")) {
        for (i, m) in line.match_indices("crate::") {
            let rest = &line[i + m.len()..];
            let word = |r: &str| -> String {
                r.chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '{')
                    .collect()
            };
            let first = word(rest);
            let above = match first.as_str() {
                "transport" => {
                    let next = word(rest.strip_prefix("transport::").unwrap_or(""));
                    !(LAYERS.contains(&next.as_str()) || next == "api")
                }
                "channel" | "connection" | "pool" => true,
                w => w.starts_with(|c: char| c.is_ascii_uppercase() || c == '{'),
            };
            if above {
                found.push(format!("crate::{}", &rest[..rest.len().min(40)]));
            }
        }
    }
    found
}

#[test]
fn nothing_below_the_table_names_the_table_or_the_public_face() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let bad: Vec<String> = below_the_table(&src)
        .iter()
        .flat_map(|f| {
            let text = std::fs::read_to_string(f).expect("reading a source");
            names_above(&text)
                .into_iter()
                .map(move |n| format!("  {}: {n}", f.display()))
        })
        .collect();
    assert!(
        bad.is_empty(),
        "names from above the layers:\n{}",
        bad.join("\n")
    );
}

#[test]
fn the_reader_sees_a_name_from_above() {
    for above in [
        "use crate::Token;",
        "let c = crate::Channel::create(x);",
        "use crate::{Channel, Connection};",
        "let t = crate::transport::by_name(\"fifo\");",
        "crate::transport::table::clean_stale(p)",
        "use crate::connection::Connection;",
    ] {
        assert_eq!(names_above(above).len(), 1, "{above}");
    }
    for fine in [
        "use crate::transport::serve::core::Held;",
        "use crate::transport::api::Options;",
        "use crate::error::{Error, Result};",
        "/// [`Channel`](crate::Channel)",
        "    //! see crate::Connection",
    ] {
        assert!(names_above(fine).is_empty(), "{fine}");
    }
}
