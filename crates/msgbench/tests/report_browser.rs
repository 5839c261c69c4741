//! `msgbench report` checked in a real browser: a report of short runs of
//! every suite is rendered by headless Chromium, which must load it
//! without a console message, draw data marks in every chart, open each
//! suite's section with its answers before the first chart, split the
//! adder's and ipc's charts into small multiples and draw ipc's floor
//! (checked in the DOM it dumps after loading), and take a screenshot.
//!
//! Without Chromium the test is skipped with the reason (a failure under
//! CI: `.ci/run` installs it). Set `MSGBENCH_REPORT_SCREENSHOT=FILE` to
//! keep the screenshot (docs/report.png is the same browser's
//! screenshot of a report of an adder and an ipc run: see README).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{run, skip, Bin, TestDir};

/// Longest a short suite run or a browser run may take.
const LIMIT: Duration = Duration::from_secs(180);

/// Every suite with the arguments of a short real run.
const SUITES: [(&str, &[&str]); 7] = [
    ("floor", &["floor", "--quick"]),
    (
        "adder",
        &[
            "adder",
            "--threads",
            "1,2",
            "-t",
            "shm,uds",
            "--placement",
            "pinned,unpinned",
            "--row-secs",
            "0.2",
            "--idle-secs",
            "0",
        ],
    ),
    (
        "ipc",
        &[
            "ipc",
            "--quick",
            "-t",
            "uds,pipe,shm",
            "--sizes",
            "64,1024",
            "--vs-floor",
        ],
    ),
    ("rtos", &["rtos", "--quick"]),
    ("validate", &["validate", "--quick"]),
    (
        "smp",
        &[
            "smp",
            "--quick",
            "--routes",
            "2000",
            "--sizes",
            "64",
            "--table",
            "mutex,per-cpu",
            "--trial",
            "0.05",
        ],
    ),
    // No daemon needed: the direct and broker arrangements only.
    (
        "broker",
        &[
            "broker",
            "--quick",
            "--via",
            "direct,broker",
            "-t",
            "uds",
            "--seconds",
            "0.1",
        ],
    ),
];

/// The browser on PATH, if any.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    ["chromium", "chromium-browser", "google-chrome"]
        .iter()
        .flat_map(|name| std::env::split_paths(&path).map(move |d| d.join(name)))
        .find(|p| p.is_file())
}

/// Runs `cmd` to the end within [`LIMIT`]; returns (success, stdout, stderr).
fn run_bounded(mut cmd: Command, what: &str) -> (bool, String, String) {
    let out_dir = TestDir::new("out");
    let (out, err) = (out_dir.file("stdout"), out_dir.file("stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} ran for more than {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    (status.success(), read(&out), read(&err))
}

/// The results files: a real short run of every suite.
fn results(dir: &TestDir) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for (suite, args) in SUITES {
        let json = dir.file(&format!("{suite}.json"));
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend(["--json".to_string(), json.display().to_string()]);
        // Exit status 1 only says a row failed (an rtos verdict, a
        // validate disagreement): the envelope is still complete.
        let (_, out, err) = run_bounded(Bin::Msgbench.cmd(&a), suite);
        let text = std::fs::read_to_string(&json)
            .unwrap_or_else(|e| panic!("msgbench {a:?} wrote no results ({e})\n{out}\n{err}"));
        assert!(
            text.contains("\"schema\": 1"),
            "msgbench {a:?}: not a schema-1 envelope"
        );
        files.push(json);
    }
    files
}

/// Chromium headless on `page` with `extra` arguments.
fn browse(browser: &Path, dir: &TestDir, page: &Path, extra: &[String]) -> (String, String) {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--disable-gpu",
        "--no-sandbox",
        "--hide-scrollbars",
    ])
    .args([
        "--enable-logging=stderr",
        "--v=0",
        "--window-size=1280,4000",
    ])
    .arg(format!("--user-data-dir={}", dir.file("profile").display()))
    .args(extra)
    .arg(format!("file://{}", page.display()));
    let (ok, out, err) = run_bounded(cmd, "chromium");
    assert!(ok, "chromium failed\n{err}");
    (out, err)
}

/// Console messages (and uncaught errors) in Chromium's log.
fn console_lines(stderr: &str) -> Vec<&str> {
    stderr
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect()
}

/// Checks the DOM as loaded: every section, every chart with data marks.
fn check_dom(dom: &str, charts: usize) {
    for id in [
        "adder",
        "ipc",
        "floor",
        "rtos",
        "smp",
        "broker",
        "validate",
        "environment",
    ] {
        assert!(
            dom.contains(&format!("id=\"{id}\"")),
            "no {id} section in the DOM"
        );
    }
    let svgs: Vec<&str> = dom.split("<svg").skip(1).collect();
    assert_eq!(svgs.len(), charts, "charts in the DOM vs in the file");
    for (n, svg) in svgs.iter().enumerate() {
        let svg = &svg[..svg.find("</svg>").expect("a closed <svg>")];
        let marks = svg.matches("class=\"data-series\"").count();
        assert!(marks > 0, "chart {n} has no data marks");
    }
}

/// The section `id` of the DOM.
fn section<'a>(dom: &'a str, id: &str) -> &'a str {
    let at = dom
        .find(&format!("<section id=\"{id}\">"))
        .unwrap_or_else(|| panic!("no {id} section in the DOM"));
    let rest = &dom[at..];
    &rest[..rest.find("</section>").expect("a closed section")]
}

/// Checks the order in the DOM: each suite's answers (`verdict` block)
/// before its first chart (the adder's only with two CPUs or more: one
/// CPU has no pinned pair to judge); small multiples of two charts or
/// more in adder and ipc, with dashed lines; ipc's floor drawn.
fn check_structure(dom: &str) {
    let two_cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) >= 2;
    for id in ["adder", "ipc", "rtos", "smp", "broker", "validate"] {
        let s = section(dom, id);
        let chart = s.find("<svg").unwrap_or_else(|| panic!("{id}: no chart"));
        match s.find("<div class=\"verdict\">") {
            Some(v) => assert!(v < chart, "{id}: the answers after the first chart"),
            None => assert!(id == "adder" && !two_cpus, "{id}: no answers"),
        }
    }
    for id in ["adder", "ipc"] {
        let s = section(dom, id);
        let grids: Vec<&str> = s.split("<div class=\"multiples\">").skip(1).collect();
        assert!(!grids.is_empty(), "{id}: no small multiples");
        let most = grids.iter().map(|g| g.matches("<svg").count()).max();
        assert!(most >= Some(2), "{id}: no grid of two charts or more");
        assert!(s.contains("stroke-dasharray"), "{id}: no dashed line");
    }
    let ipc = section(dom, "ipc");
    assert!(ipc.contains("class=\"floor\""), "ipc: no floor line");
    assert!(
        ipc.contains("floor: futex wait/wake"),
        "ipc: no floor in a legend"
    );
}

#[test]
fn the_report_of_every_suite_renders_in_chromium() {
    let Some(browser) = chromium() else {
        skip("no chromium on PATH (apt-get install chromium)");
        return;
    };
    let dir = TestDir::new("report");
    let mut args = vec!["report".to_string()];
    args.extend(results(&dir).iter().map(|p| p.display().to_string()));
    let page = dir.file("report.html");
    args.extend(["-o".to_string(), page.display().to_string()]);
    let out = run(Bin::Msgbench, &args);
    out.assert_ok();
    assert!(out.stdout.contains(&page.display().to_string()), "{out}");
    let html = std::fs::read_to_string(&page).unwrap();
    let charts = html.matches("<svg").count();
    assert!(charts >= 8, "{charts} charts in the page");

    let (dom, log) = browse(&browser, &dir, &page, &["--dump-dom".into()]);
    assert!(
        console_lines(&log).is_empty(),
        "console: {:?}",
        console_lines(&log)
    );
    check_dom(&dom, charts);
    check_structure(&dom);

    let png = dir.file("report.png");
    browse(
        &browser,
        &dir,
        &page,
        &[format!("--screenshot={}", png.display())],
    );
    let bytes = std::fs::read(&png).expect("a screenshot");
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    assert!(
        bytes.len() > 50_000,
        "a nearly blank screenshot: {} bytes",
        bytes.len()
    );
    if let Some(keep) = std::env::var_os("MSGBENCH_REPORT_SCREENSHOT") {
        std::fs::copy(&png, keep).expect("keeping the screenshot");
    }
}

#[test]
fn a_console_error_is_caught() {
    let Some(browser) = chromium() else {
        skip("no chromium on PATH (apt-get install chromium)");
        return;
    };
    // The check above must be able to fail: a page that logs an error.
    let dir = TestDir::new("console");
    let page = dir.file("bad.html");
    std::fs::write(
        &page,
        "<p>x</p><script>console.error('boom'); nothing();</script>",
    )
    .unwrap();
    let (_, log) = browse(&browser, &dir, &page, &["--dump-dom".into()]);
    let lines = console_lines(&log);
    assert!(lines.iter().any(|l| l.contains("boom")), "{log}");
    assert!(lines.iter().any(|l| l.contains("Uncaught")), "{log}");
}

#[test]
fn a_trend_from_the_results_store_renders_in_chromium() {
    let Some(browser) = chromium() else {
        skip("no chromium on PATH (apt-get install chromium)");
        return;
    };
    // Three real runs recorded in a store of the test's own.
    let dir = TestDir::new("trend");
    let store = dir.file("results.db");
    let store = store.to_str().unwrap();
    for _ in 0..3 {
        let cmd = Bin::Msgbench.cmd_with_store(["floor", "--quick", "--cpus", "0"], store);
        let (ok, _, err) = run_bounded(cmd, "msgbench floor");
        assert!(ok, "{err}");
    }
    let page = dir.file("trend.html");
    let cmd = Bin::Msgbench.cmd_with_store(
        [
            "report",
            "--trend",
            "ns_per_call",
            "--where",
            "floor=rdtsc",
            "-o",
            page.to_str().unwrap(),
        ],
        store,
    );
    let (ok, _, err) = run_bounded(cmd, "msgbench report --trend");
    assert!(ok, "{err}");
    let html = std::fs::read_to_string(&page).unwrap();
    assert_eq!(html.matches("<svg").count(), 1, "one trend chart");
    assert!(html.contains("3 run(s) on 1 host(s)"), "{html}");

    let (dom, log) = browse(&browser, &dir, &page, &["--dump-dom".into()]);
    assert!(
        console_lines(&log).is_empty(),
        "console: {:?}",
        console_lines(&log)
    );
    assert!(dom.contains("id=\"trend\""), "no trend section in the DOM");
    let svg = dom.split("<svg").nth(1).expect("the chart in the DOM");
    let svg = &svg[..svg.find("</svg>").expect("a closed <svg>")];
    // A line and a marker per run, in a data colour.
    let marks = svg.matches("class=\"data-series\"").count();
    assert!(marks >= 4, "{marks} data marks: {svg}");
}
