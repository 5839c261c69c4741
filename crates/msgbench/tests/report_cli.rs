//! `msgbench report` on the command line: the default output path, and
//! one-line errors naming the file for a missing, broken or
//! other-version results file.

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
