//! Every pointer the code, the README and the docs give a user lands
//! somewhere that exists: `docs/NAME.md, "Section"` names a heading (or a
//! bold lead such as `**Re-runs**`) of that document, a quoted section
//! named after "see" or "under" inside docs/methodology.md is one of its
//! own, and nothing points at files users do not have (the workspace's
//! `../shared` notes, `spec/*.md`).

use std::fs;
use std::path::PathBuf;

mod tree;
use tree::{root, rust_files};

/// The files users read: every source file, the README and the docs.
fn files() -> Vec<PathBuf> {
    let r = root();
    let mut out = Vec::new();
    out.extend(rust_files(&r.join("crates")));
    out.push(r.join("README.md"));
    for d in ["architecture.md", "methodology.md", "results.md"] {
        out.push(r.join("docs").join(d));
    }
    // This file spells the patterns out.
    out.retain(|p| !p.ends_with("tests/doc_pointers.rs"));
    out
}

/// The section names of a Markdown document: its headings and the bold
/// leads of its paragraphs and list items (`**Name**`, `**Name.**`).
fn sections(doc: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in doc.lines() {
        let t = line.trim_start_matches(['-', ' ']);
        if let Some(h) = line.strip_prefix('#') {
            out.push(h.trim_start_matches('#').trim().to_string());
        } else if let Some(rest) = t.strip_prefix("**") {
            if let Some((b, _)) = rest.split_once("**") {
                out.push(b.trim_end_matches('.').to_string());
            }
        }
    }
    out
}

/// The quoted names after each `marker` in `text` (a `\"` in Rust source
/// counts as a quote).
fn quoted_after(text: &str, marker: &str) -> Vec<String> {
    let text = text.replace("\\\"", "\"");
    let mut out = Vec::new();
    let mut rest = text.as_str();
    while let Some(i) = rest.find(marker) {
        rest = &rest[i + marker.len()..];
        let Some(open) = rest.strip_prefix('"') else {
            continue;
        };
        // A name spans one line at most, or two in wrapped prose.
        if let Some((name, _)) = open.split_once('"') {
            out.push(name.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    out
}

/// Every pointer in `text` (from `file`) to a section of `docs/DOC.md`
/// that `docs` does not have, as "file: DOC.md, \"name\"".
fn broken(file: &str, text: &str, docs: &[(&str, Vec<String>)]) -> Vec<String> {
    let mut out = Vec::new();
    for (doc, names) in docs {
        for marker in [format!("{doc}, "), format!("{doc} ")] {
            for name in quoted_after(text, &marker) {
                if !names.contains(&name) {
                    out.push(format!("{file}: {doc}, \"{name}\""));
                }
            }
        }
    }
    out
}

/// The docs and their section names.
fn docs() -> Vec<(&'static str, Vec<String>)> {
    ["architecture.md", "methodology.md", "results.md"]
        .into_iter()
        .map(|d| {
            let text = fs::read_to_string(root().join("docs").join(d))
                .unwrap_or_else(|e| panic!("docs/{d}: {e}"));
            (d, sections(&text))
        })
        .collect()
}

#[test]
fn every_pointer_to_a_section_of_the_docs_resolves() {
    let docs = docs();
    let mut bad = Vec::new();
    let mut seen = 0;
    for f in files() {
        let text = fs::read_to_string(&f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let name = f.strip_prefix(root()).unwrap_or(&f).display().to_string();
        seen += docs
            .iter()
            .map(|(d, _)| quoted_after(&text, &format!("{d}, ")).len())
            .sum::<usize>();
        bad.extend(broken(&name, &text, &docs));
    }
    assert!(
        seen >= 10,
        "only {seen} pointers found: is the scan looking?"
    );
    assert!(
        bad.is_empty(),
        "pointers to no section:\n{}",
        bad.join("\n")
    );
}

#[test]
fn methodology_points_within_itself_to_sections_it_has() {
    let text = fs::read_to_string(root().join("docs/methodology.md")).expect("methodology");
    let names = sections(&text);
    let mut bad = Vec::new();
    for marker in ["see ", "under ", "(see "] {
        for name in quoted_after(&text, marker) {
            if !names.contains(&name) {
                bad.push(name);
            }
        }
    }
    assert!(bad.is_empty(), "docs/methodology.md points at: {bad:?}");
    for study in [
        "The adder benchmark (QNX devctl)",
        "IPC transports (ipc-bench)",
        "The RTOS catalogue",
        "SMP forwarding (RFC 2544)",
        "The D-Bus broker study",
    ] {
        assert!(names.iter().any(|n| n == study), "no section {study:?}");
    }
}

#[test]
fn nothing_points_at_files_users_do_not_have() {
    let shared = ["..", "/shared"].concat();
    let spec = ["spec", "/"].concat();
    let mut bad = Vec::new();
    for f in files() {
        let text = fs::read_to_string(&f).unwrap_or_default();
        for (i, line) in text.lines().enumerate() {
            let spec_md = line.match_indices(&spec).any(|(k, _)| {
                line[k..]
                    .split_whitespace()
                    .next()
                    .is_some_and(|w| w.contains(".md"))
            });
            if line.contains(&shared) || spec_md {
                bad.push(format!("{}:{}: {line}", f.display(), i + 1));
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The checks above can fail: a pointer to a missing section is found,
/// in prose and in a Rust string literal alike.
#[test]
fn a_pointer_to_a_missing_section_is_caught() {
    let docs = vec![(
        "methodology.md",
        sections("# A\n## Clock\n- **Re-runs**: ...\n"),
    )];
    assert!(broken("x", "see docs/methodology.md, \"Clock\"", &docs).is_empty());
    assert!(broken("x", "docs/methodology.md, \"Re-runs\"", &docs).is_empty());
    let b = broken("x", "(docs/methodology.md, \\\"Clocks\\\")", &docs);
    assert_eq!(b, vec!["x: methodology.md, \"Clocks\"".to_string()]);
    let b = broken(
        "x",
        "docs/methodology.md, \"The\n   reference studies\"",
        &docs,
    );
    assert_eq!(b.len(), 1, "{b:?}");
}
