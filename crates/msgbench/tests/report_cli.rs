//! `msgbench report` on the command line: the default output path,
//! one-line errors naming the file for a missing, broken or
//! other-version results file, and the answers of real short runs shown
//! as the terminal shows them.

mod common;

use common::{run, run_cmd, Bin, TestDir};
use msgbench::report::html::sample::envelope_json;

#[test]
fn the_page_goes_to_report_html_in_the_current_directory() {
    let dir = TestDir::new("report-default");
    let json = dir.file("floor.json");
    std::fs::write(&json, envelope_json("floor", 1.0).unwrap()).unwrap();
    let mut cmd = Bin::Msgbench.cmd(["report".to_string(), json.display().to_string()]);
    cmd.current_dir(dir.path());
    let out = run_cmd("msgbench report", cmd);
    out.assert_ok();
    assert!(out.stdout.contains("report.html"), "{out}");
    let page = std::fs::read_to_string(dir.file("report.html")).expect("report.html written");
    assert!(page.contains("<section id=\"floor\">"));
}

#[test]
fn a_bad_file_is_a_one_line_error_naming_it() {
    let dir = TestDir::new("report-bad");
    let good = dir.file("good.json");
    std::fs::write(&good, envelope_json("floor", 1.0).unwrap()).unwrap();
    let junk = dir.file("junk.json");
    std::fs::write(&junk, "{ not json").unwrap();
    let old = dir.file("old.json");
    std::fs::write(&old, r#"{"schema": 0, "suite": "floor"}"#).unwrap();
    let missing = dir.file("missing.json");
    for bad in [&junk, &old, &missing] {
        let out_html = dir.file("out.html");
        let args = [
            "report".to_string(),
            good.display().to_string(),
            bad.display().to_string(),
            "-o".to_string(),
            out_html.display().to_string(),
        ];
        let line = run(Bin::Msgbench, args).assert_one_line_error(1);
        assert!(line.contains(&bad.display().to_string()), "{line}");
        assert!(!out_html.exists(), "a page written despite {line}");
    }
}

#[test]
fn no_file_is_a_usage_error() {
    let out = run(Bin::Msgbench, ["report"]);
    assert_eq!(out.code(), 2, "{out}");
}

/// HTML-escaped as the page escapes text.
fn escaped(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// Runs `msgbench ARGS --json FILE` and returns (its standard output,
/// the file).
fn suite_run(dir: &TestDir, name: &str, args: &[&str]) -> (String, std::path::PathBuf) {
    let json = dir.file(&format!("{name}.json"));
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(["--json".to_string(), json.display().to_string()]);
    let out = run(Bin::Msgbench, &a);
    assert!(json.exists(), "msgbench {a:?} wrote no results\n{out}");
    (out.stdout, json)
}

/// The (size and placement, fastest, fastest blocking) of each table
/// the terminal printed: rows marked `*` and `B`.
fn ipc_marks(stdout: &str) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut current: Option<(String, String, String)> = None;
    for line in stdout.lines() {
        // "64 B, same CPU, two processes: client and server on CPU 0".
        let title = line.split_once(": ").map(|(head, _)| head).unwrap_or("");
        if let Some((size, rest)) = title.split_once(", ") {
            if let Some((placement, _)) = rest.split_once(" CPU") {
                if size.ends_with(" B") {
                    out.extend(current.take());
                    current = Some((format!("{size} {placement}"), String::new(), String::new()));
                    continue;
                }
            }
        }
        let Some(c) = current.as_mut() else { continue };
        let mut words = line.split_whitespace();
        let (Some(mark), Some(transport)) = (words.next(), words.next()) else {
            continue;
        };
        if mark.starts_with('*') {
            c.1 = transport.to_string();
        }
        if mark.ends_with('B') && (mark == "B" || mark == "*B") {
            c.2 = transport.to_string();
        }
    }
    out.extend(current);
    out
}

/// A short adder run with pinned pairs to judge.
const ADDER: [&str; 13] = [
    "adder",
    "--threads",
    "1,2",
    "-t",
    "shm",
    "--placement",
    "pinned",
    "--modes",
    "one,multi",
    "--row-secs",
    "0.1",
    "--idle-secs",
    "0",
];

/// A short ipc run: blocking and hybrid transports, a floor.
const IPC: [&str; 7] = [
    "ipc",
    "--quick",
    "-t",
    "uds,pipe,shm",
    "--sizes",
    "64",
    "--vs-floor",
];

/// The answers block of section `id`, which must come before its first
/// chart.
fn lead(html: &str, id: &str) -> String {
    let s = &html[html.find(&format!("<section id=\"{id}\">")).unwrap()..];
    let v = s.find("<div class=\"verdict\">").expect("a verdict block");
    assert!(
        v < s.find("<svg").expect("a chart"),
        "{id}: verdict after a chart"
    );
    s[v..v + s[v..].find("</div>").unwrap()].to_string()
}

/// The adder's verdict and server models, word for word (two CPUs or
/// more: one CPU has no pinned pair to judge, then neither shows one).
fn check_adder(stdout: &str, html: &str) {
    let sentences: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("With each client/server") || l.starts_with("Server models"))
        .collect();
    if sentences.is_empty() {
        assert!(
            !html.contains("With each client/server"),
            "a verdict the terminal lacks"
        );
        return;
    }
    let v = lead(html, "adder");
    for s in sentences {
        assert!(v.contains(&escaped(s)), "terminal: {s}\nreport: {v}");
    }
}

/// Ipc: the rows each table marks * and B are the ones named.
fn check_ipc(stdout: &str, html: &str) {
    let v = lead(html, "ipc");
    let marks = ipc_marks(stdout);
    assert_eq!(marks.len(), 2, "a table per placement: {stdout}");
    for (table, fastest, blocking) in marks {
        let (size, placement) = table.rsplit_once(' ').unwrap();
        let name = if placement == "same" {
            "Same CPU"
        } else {
            "Cross CPU"
        };
        let p = &v[v.find(name).unwrap_or_else(|| panic!("no {name} in {v}"))..];
        // The answer's sentence, then its figures folded beneath it.
        let p = &p[..p.find("</details>").or_else(|| p.find("</p>")).unwrap()];
        let headline = &p[..p.find("</p>").unwrap()];
        assert!(
            headline.contains(&format!(" {fastest} at ")),
            "{table}: * {fastest}: {headline}"
        );
        assert!(
            p.contains(&format!("{size}: {fastest} ")),
            "{table}: * {fastest}: {p}"
        );
        if fastest == blocking {
            assert!(p.contains("(a blocking transport)"), "{table}: {p}");
        } else {
            assert!(
                p.contains(&format!("(blocking: {blocking} ")),
                "{table}: B {blocking}: {p}"
            );
        }
    }
}

#[test]
fn the_report_leads_with_the_answers_the_terminal_printed() {
    let dir = TestDir::new("report-answers");
    let (adder_out, adder) = suite_run(&dir, "adder", &ADDER);
    let (ipc_out, ipc) = suite_run(&dir, "ipc", &IPC);
    let page = dir.file("report.html");
    run(
        Bin::Msgbench,
        [
            "report".to_string(),
            adder.display().to_string(),
            ipc.display().to_string(),
            "-o".to_string(),
            page.display().to_string(),
        ],
    )
    .assert_ok();
    let html = std::fs::read_to_string(&page).unwrap();
    check_adder(&adder_out, &html);
    check_ipc(&ipc_out, &html);
    // --vs-floor measured a floor: drawn in the ipc charts.
    assert!(html.contains("class=\"floor\""), "no floor line");
}
