//! House rules the compiler does not check, read from the workspace's
//! sources with syn (the whole tree, from `CARGO_MANIFEST_DIR/../..`).
//!
//! - oslayer is the only door to the kernel: msgpass and msgbench (src,
//!   benches, examples) name no libc function — no call, no function
//!   pointer, no `use` of a lower-case libc item — except where the line or
//!   the line above says why with a comment `// libc: <why>`. libc's
//!   constants (`libc::EAGAIN`) and types (`libc::c_int`) are fine. Tests
//!   (`tests/`) are hostile peers and may call libc raw.
//! - No function or method over [`MAX_FN_LINES`] lines (from `fn` to its
//!   closing brace) in any crate's src, tests, benches or examples.
//!
//! Code inside macro invocations (`macro_rules!` bodies, `proptest! {}`)
//! is not parsed by syn and so not checked.
//!
//! Each check is also run on small sources of its own below, one that
//! breaks the rule and one that keeps it, so that each is seen to fail.

use std::path::{Path, PathBuf};

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit::Visit;

mod tree;
use tree::{root, rust_files};

/// Longest function allowed, in lines from `fn` to the closing brace.
const MAX_FN_LINES: usize = 80;

/// The files of `crates/<krate>/<part>` for each crate and part given.
fn files_of(krates: &[&str], parts: &[&str]) -> Vec<PathBuf> {
    let root = root();
    let mut out = Vec::new();
    for k in krates {
        for p in parts {
            out.extend(rust_files(&root.join("crates").join(k).join(p)));
        }
    }
    assert!(!out.is_empty(), "no sources found under {}", root.display());
    out
}

/// `path` shown from the workspace's root.
fn shown(path: &Path) -> String {
    let root = root();
    let canon = root.canonicalize().unwrap_or(root);
    path.canonicalize()
        .ok()
        .and_then(|p| p.strip_prefix(&canon).ok().map(Path::to_path_buf))
        .unwrap_or_else(|| path.to_path_buf())
        .display()
        .to_string()
}

/// A source file parsed, or the test fails naming it.
fn parse(path: &Path) -> (String, syn::File) {
    let text =
        std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    let file = syn::parse_file(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()));
    (text, file)
}

// ---- libc: oslayer is the only door ----

/// Whether `path` names a lower-case item of libc (`libc::kill`,
/// `::libc::getpid`): a function (or a static), never a constant; types
/// are named in type position, which is not visited as an expression.
fn is_libc_item(path: &syn::Path) -> bool {
    let segs: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
    matches!(segs.as_slice(), [krate, item]
        if krate == "libc" && item.starts_with(|c: char| c.is_ascii_lowercase()))
}

/// The names a `use` tree below `libc::` brings in for lower-case items
/// (functions, statics, and types, which are harmless: a type is never
/// named as an expression), and whether it has a glob (which would hide
/// later calls).
fn libc_imports(tree: &syn::UseTree, names: &mut Vec<String>) -> bool {
    let lower = |i: &syn::Ident| i.to_string().starts_with(|c: char| c.is_ascii_lowercase());
    match tree {
        syn::UseTree::Name(n) if lower(&n.ident) => names.push(n.ident.to_string()),
        syn::UseTree::Rename(r) if lower(&r.ident) => names.push(r.rename.to_string()),
        syn::UseTree::Name(_) | syn::UseTree::Rename(_) => {}
        syn::UseTree::Glob(_) => return true,
        syn::UseTree::Path(p) => return libc_imports(&p.tree, names),
        syn::UseTree::Group(g) => {
            let globs: Vec<bool> = g.items.iter().map(|t| libc_imports(t, names)).collect();
            return globs.contains(&true);
        }
    }
    false
}

/// Every place a file names a libc function: (line, what); `imported`
/// holds the names its `use libc::...` items bring in.
#[derive(Default)]
struct LibcUses {
    imported: Vec<String>,
    found: Vec<(usize, String)>,
}

impl LibcUses {
    fn flag(&mut self, span: Span, what: String) {
        self.found.push((span.start().line, what));
    }
}

impl<'ast> Visit<'ast> for LibcUses {
    fn visit_expr_path(&mut self, e: &'ast syn::ExprPath) {
        let last = e.path.segments.last().map(|s| s.ident.to_string());
        let last = last.unwrap_or_default();
        if is_libc_item(&e.path) {
            self.flag(e.path.span(), format!("libc::{last}"));
        } else if e.path.segments.len() == 1 && self.imported.contains(&last) {
            self.flag(e.path.span(), format!("{last} (imported from libc)"));
        }
        syn::visit::visit_expr_path(self, e);
    }

    fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
        let glob = match &u.tree {
            syn::UseTree::Path(p) if p.ident == "libc" => libc_imports(&p.tree, &mut self.imported),
            syn::UseTree::Rename(r) => r.ident == "libc",
            _ => false,
        };
        if glob {
            self.flag(u.use_token.span, "a glob or renamed import of libc".into());
        }
        syn::visit::visit_item_use(self, u);
    }
}

/// The names `file` imports from libc (lower-case items), and the lines
/// of the imports that hide libc's functions (globs, a renamed crate).
fn imports_of(file: &syn::File) -> LibcUses {
    #[derive(Default)]
    struct Imports(LibcUses);
    impl<'ast> Visit<'ast> for Imports {
        fn visit_item_use(&mut self, u: &'ast syn::ItemUse) {
            self.0.visit_item_use(u);
        }
    }
    let mut i = Imports::default();
    i.visit_file(file);
    i.0
}

/// Whether line `line` (1-based) or the one above carries `// libc: <why>`.
fn says_why(text: &str, line: usize) -> bool {
    let lines: Vec<&str> = text.lines().collect();
    let has = |i: usize| {
        lines.get(i).is_some_and(|l| {
            l.split_once("// libc:")
                .is_some_and(|(_, why)| !why.trim().is_empty())
        })
    };
    has(line.saturating_sub(1)) || (line >= 2 && has(line - 2))
}

/// The libc uses of `text` that no comment explains: (line, what).
fn unexplained_libc(text: &str, file: &syn::File) -> Vec<(usize, String)> {
    let imports = imports_of(file);
    let mut uses = LibcUses {
        imported: imports.imported,
        found: imports.found,
    };
    // Imports anywhere in the file count for the whole file (a second
    // look at them adds nothing new: `found` is deduplicated).
    uses.visit_file(file);
    uses.found.retain(|(line, _)| !says_why(text, *line));
    uses.found.sort();
    uses.found.dedup();
    uses.found
}

#[test]
fn msgpass_and_msgbench_reach_the_kernel_through_oslayer_only() {
    let files = files_of(&["msgpass", "msgbench"], &["src", "benches", "examples"]);
    let mut offenders = Vec::new();
    for path in &files {
        let (text, file) = parse(path);
        for (line, what) in unexplained_libc(&text, &file) {
            offenders.push(format!("{}:{line}: {what}", shown(path)));
        }
    }
    assert!(
        offenders.is_empty(),
        "msgpass and msgbench reach the kernel through oslayer; a direct libc use needs \
         `// libc: <why>` on its line or the line above:\n{}",
        offenders.join("\n")
    );
}

// ---- no function over MAX_FN_LINES lines ----

/// Every function and method of a file with a body: (line, name, lines).
#[derive(Default)]
struct FnLengths(Vec<(usize, String, usize)>);

impl FnLengths {
    fn add(&mut self, fn_token: Span, name: &syn::Ident, close: Span) {
        let (start, end) = (fn_token.start().line, close.end().line);
        self.0.push((start, name.to_string(), end + 1 - start));
    }
}

impl<'ast> Visit<'ast> for FnLengths {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.add(
            f.sig.fn_token.span,
            &f.sig.ident,
            f.block.brace_token.span.close(),
        );
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.add(
            f.sig.fn_token.span,
            &f.sig.ident,
            f.block.brace_token.span.close(),
        );
        syn::visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if let Some(b) = &f.default {
            self.add(
                f.sig.fn_token.span,
                &f.sig.ident,
                b.brace_token.span.close(),
            );
        }
        syn::visit::visit_trait_item_fn(self, f);
    }
}

/// The functions of `file` longer than [`MAX_FN_LINES`]: (line, name, lines).
fn long_functions(file: &syn::File) -> Vec<(usize, String, usize)> {
    let mut fns = FnLengths::default();
    fns.visit_file(file);
    fns.0.retain(|(_, _, n)| *n > MAX_FN_LINES);
    fns.0
}

#[test]
fn no_function_is_longer_than_80_lines() {
    let files = files_of(
        &["oslayer", "msgpass", "msgbench"],
        &["src", "tests", "benches", "examples"],
    );
    let mut offenders = Vec::new();
    for path in &files {
        let (_, file) = parse(path);
        for (line, name, n) in long_functions(&file) {
            offenders.push(format!("{}:{line}: fn {name}: {n} lines", shown(path)));
        }
    }
    for o in &offenders {
        eprintln!("{o}");
    }
    assert!(
        offenders.is_empty(),
        "{} functions over {MAX_FN_LINES} lines (listed above)",
        offenders.len()
    );
}

// ---- each check fails on a source that breaks its rule ----

/// The unexplained libc uses of `src`, as (line, what).
fn libc_in(src: &str) -> Vec<(usize, String)> {
    let file = syn::parse_file(src).expect("test source parses");
    unexplained_libc(src, &file)
}

#[test]
fn the_libc_check_flags_calls_pointers_and_imports_and_spares_explained_lines() {
    let src = "\
use libc::{c_int, kill as k, EAGAIN};
use libc::*;
fn f() -> libc::c_int {
    unsafe { libc::kill(1, libc::SIGTERM) };
    let p = libc::getpid;
    let _ = ::libc::c_int::MAX + libc::EAGAIN + c_int::MAX;
    // libc: the raw call is what is timed
    unsafe { libc::syscall(libc::SYS_getppid) };
    unsafe { libc::getppid() } // libc: measured as is
}
fn g() {
    // libc:
    unsafe { libc::getuid() };
    mod inner {
        fn h() { unsafe { k(1, 9) }; let _ = libc::timespec { tv_sec: 0, tv_nsec: 0 }; }
    }
}
";
    let found: Vec<usize> = libc_in(src).into_iter().map(|(l, _)| l).collect();
    assert_eq!(found, vec![2, 4, 5, 13, 15], "{:?}", libc_in(src));
}

#[test]
fn the_length_check_flags_a_function_of_81_lines_and_spares_80() {
    let body = |n: usize| "    let _x = 1;\n".repeat(n - 2);
    let src = format!(
        "fn fits() {{\n{}}}\nstruct S;\nimpl S {{\n    fn long(&self) {{\n{}    }}\n}}\n",
        body(MAX_FN_LINES),
        body(MAX_FN_LINES + 1)
    );
    let file = syn::parse_file(&src).expect("test source parses");
    let found = long_functions(&file);
    assert_eq!(
        found,
        vec![(MAX_FN_LINES + 3, "long".to_string(), MAX_FN_LINES + 1)]
    );
}
