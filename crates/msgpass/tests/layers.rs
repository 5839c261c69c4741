//! The layers of `src/transport/`, named by its folders, bottom up: `mem`,
//! `clock`, `wire`, `serve`, `mechanisms`. A file of one layer imports
//! only from its own layer and those below it (and `api`, the interface
//! every layer speaks), so no import runs back up and the graph has no
//! circle. Read from the sources, every path `crate::transport::LAYER`
//! they name (in `use` lines and in code alike).

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
