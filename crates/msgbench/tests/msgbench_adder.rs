//! `msgbench adder`: the whole experiment with embedded servers (every
//! mode: one process, multi-process, thread pool on one path), its table,
//! its sentences, its results envelope, its output formats (table,
//! markdown, csv, json), its option errors, and its cleanup (run
//! directory, server processes) on success and on SIGINT.

mod common;

use std::time::Duration;

use common::*;

/// One parsed table row.
#[derive(Debug)]
struct Row {
    mode: String,
    threads: u32,
    idle: String,
    aggregate: String,
    scaling: String,
}

/// The column titles of every adder table.
const HEAD: [&str; 12] = [
    "Mode",
    "Threads",
    "Idle",
    "CPU Busy",
    "Ave Duration",
    "Rate/thread",
    "Aggregate",
    "Scaling",
    "p50",
    "p99",
    "QNX 8.0 Pi 4",
    "QNX 7.1 Pi 4",
];

/// The seed's rates per thread at 1 and 2 threads, one process, QNX 8.0
/// and 7.1 (docs/methodology.md, "The adder benchmark (QNX devctl)"):
/// what the table's last two columns must hold for those rows.
const SEED_ONE: [[&str; 2]; 2] = [["165,300", "264,550"], ["133,050", "129,282"]];

/// The mode labels that lead a table's rows.
const MODES: [&str; 3] = ["One process", "Multi-process", "Thread pool (one path)"];

/// Parses the table printed under `Transport <t>, <placement>...`.
fn table(stdout: &str, transport: &str, placement: &str) -> Vec<Row> {
    let title = format!("Transport {transport}, {placement}");
    let mut lines = stdout
        .lines()
        .skip_while(|l| !l.starts_with(&title))
        .skip(1)
        .peekable();
    let header = lines
        .next()
        .unwrap_or_else(|| panic!("no table for {transport}: {stdout}"));
    for col in HEAD {
        assert!(header.contains(col), "header lacks {col:?}: {header}");
    }
    let rule = lines.next().unwrap_or_default();
    assert!(
        !rule.is_empty() && rule.chars().all(|c| c == '-'),
        "rule: {rule:?}"
    );
    let mut rows = Vec::new();
    let mut current = String::new();
    for l in lines.take_while(|l| !l.trim().is_empty()) {
        let (mode, rest) = MODES
            .iter()
            .find_map(|m| l.strip_prefix(m).map(|r| (m.to_string(), r)))
            .unwrap_or((String::new(), l));
        let t: Vec<&str> = rest.split_whitespace().collect();
        // threads idle busy <ms> ms rate aggregate scaling p50 p99, then
        // the seed's two rates (blank for a pool, or past 6 threads)
        if !mode.is_empty() {
            current = mode.clone();
        }
        let seeded = current != "Thread pool (one path)";
        assert_eq!(t.len(), if seeded { 12 } else { 10 }, "row {l:?}");
        let x: usize = t[0].parse().unwrap_or_else(|_| panic!("threads in {l:?}"));
        if current == "One process" && x <= 2 {
            assert_eq!(t[10..], SEED_ONE[x - 1], "the seed's figures in {l:?}");
        }
        assert_eq!(t[4], "ms", "row {l:?}");
        t[3].parse::<f64>()
            .unwrap_or_else(|_| panic!("duration in {l:?}"));
        for cell in [t[5], t[6]] {
            cell.replace(',', "")
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("rate {cell:?} in {l:?}"));
        }
        // A row shorter than /proc/stat's tick measures nothing: n/a.
        parse_busy(t[2], "CPU Busy");
        parse_dur_ns(t[8]);
        parse_dur_ns(t[9]);
        rows.push(Row {
            mode,
            threads: t[0].parse().unwrap_or_else(|_| panic!("threads in {l:?}")),
            idle: t[1].to_string(),
            aggregate: t[6].to_string(),
            scaling: t[7].to_string(),
        });
    }
    rows
}

/// `args` followed by `--ns DIR` for `dir`, as `msgbench` takes them.
fn with_ns(dir: &TestDir, args: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(dir.ns_args());
    a
}

/// Processes still running with a command line that mentions `dir`.
fn leftovers(dir: &TestDir) -> Vec<(u32, String)> {
    procs_mentioning(&dir.path().display().to_string())
}

/// Runs `msgbench <args> --json FILE --ns DIR` in `dir` to success and
/// checks it left no endpoint and no server process; returns its output
/// and the envelope it wrote.
fn json_run(dir: &TestDir, args: &[&str]) -> (Output, serde_json::Value) {
    let json = dir.file("run.json");
    let json_s = json.display().to_string();
    let mut a = args.to_vec();
    a.extend(["--json", &json_s]);
    let o = run(Bin::Msgbench, with_ns(dir, &a));
    o.assert_ok();
    dir.assert_ns_clean();
    let left = leftovers(dir);
    assert!(left.is_empty(), "server processes left behind: {left:?}");
    (o, read_json(&json))
}

/// `adder -t TRANSPORTS [--modes MODES] --threads THREADS -S 2000
/// --idle-secs 0`: a short run, every reply checked, no idle baseline
/// (without `modes`, the default modes).
fn quick<'a>(transports: &'a str, modes: Option<&'a str>, threads: &'a str) -> Vec<&'a str> {
    let mut a = vec!["adder", "-t", transports];
    if let Some(m) = modes {
        a.extend(["--modes", m]);
    }
    a.extend(["--threads", threads, "-S", "2000", "--idle-secs", "0"]);
    a
}

/// Each table row's mode label (on the first row of each mode) and X.
fn shape(rows: &[Row]) -> Vec<(&str, u32)> {
    rows.iter().map(|r| (r.mode.as_str(), r.threads)).collect()
}

#[test]
fn adder_suite_runs_every_mode_and_cleans_up() {
    let dir = TestDir::new("suite");
    let (o, v) = json_run(&dir, &quick("shm,uds", None, "1,2"));
    check_tables(&o.stdout);
    check_suite_json(&v);
}

/// The unpinned shm and uds tables of a `--threads 1,2` run (three rows
/// per X: every mode), the legend, no verdict on the seed's question, and
/// the server models compared unpinned.
fn check_tables(stdout: &str) {
    for t in ["shm", "uds"] {
        let rows = table(stdout, t, "unpinned");
        assert_eq!(
            shape(&rows),
            [
                ("One process", 1),
                ("", 2),
                ("Multi-process", 1),
                ("", 2),
                ("Thread pool (one path)", 1),
                ("", 2)
            ],
            "{t}: {}",
            stdout
        );
        for r in &rows {
            assert_eq!(r.idle, "-", "no idle baseline with --idle-secs 0: {r:?}");
            assert!(r.scaling.ends_with('%'), "{r:?}");
            if r.threads == 1 {
                assert_eq!(r.scaling, "100%", "{r:?}");
            }
        }
    }
    assert!(stdout.contains("Scaling = "), "legend missing: {}", stdout);
    assert!(
        !stdout.contains("With each client/server pair pinned"),
        "no pinned rows, no verdict: {}",
        stdout
    );
    assert!(
        stdout.contains("Thread pool (one path): one server process serving the one path adder/0"),
        "the legend says what the pool mode is: {stdout}"
    );
    if cpu_count() >= 2 {
        check_models_sentence(
            stdout,
            "unpinned (every thread left to the scheduler)",
            &["shm", "uds"],
        );
    }
}

/// The sentence comparing the server models: what it compared, the
/// placement, a clause per transport (whichever way it came out: this
/// asserts no speed).
fn check_models_sentence(stdout: &str, placement: &str, transports: &[&str]) {
    let lead = format!(
        "Server models compared by aggregate rate at the most threads measured up to one per \
         CPU ({} CPUs), {placement}: ",
        cpu_count()
    );
    let sentence = stdout
        .split("\n\n")
        .find(|p| p.starts_with(&lead))
        .unwrap_or_else(|| panic!("no {lead:?}: {stdout}"));
    for t in transports {
        let clause = format!("on {t} at 2 threads, ");
        let at = sentence
            .find(&clause)
            .unwrap_or_else(|| panic!("no {clause:?}: {sentence}"));
        let rest = &sentence[at + clause.len()..];
        let rest = &rest[..rest.find(';').unwrap_or(rest.len())];
        assert!(
            rest.contains(" scaled best (") || rest.contains(" tied "),
            "a winner or a tie: {rest}"
        );
    }
}

/// The envelope of a `--threads 1,2 -S 2000 -t shm,uds` run.
fn check_suite_json(v: &serde_json::Value) {
    check_envelope(v);
    assert!(v["environment"]["kernel"].is_string(), "{v}");
    let settings = &v["settings"];
    assert_eq!(settings["transports"], serde_json::json!(["shm", "uds"]));
    assert_eq!(settings["threads"], serde_json::json!([1, 2]));
    assert_eq!(settings["placements"], serde_json::json!(["unpinned"]));
    assert_eq!(settings["samples"], 2000);
    assert_eq!(
        settings["modes"],
        serde_json::json!(["one", "multi", "pool"])
    );
    assert_eq!(v["notes"], serde_json::json!([]), "no idle baseline: {v}");
    assert_eq!(
        v["outcome"],
        serde_json::json!({"rows": 12, "failed": 0, "skipped": 0, "interrupted": false})
    );
    let rows = v["rows"].as_array().expect("rows");
    let shape: Vec<(&str, &str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["transport"].as_str().unwrap_or("?"),
                r["mode"].as_str().unwrap_or("?"),
                r["threads"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    let mut want = Vec::new();
    for t in ["shm", "uds"] {
        for m in ["one", "multi", "pool"] {
            want.extend([(t, m, 1), (t, m, 2)]);
        }
    }
    assert_eq!(shape, want);
    for r in rows {
        check_row_json(r);
    }
    check_figures(v);
}

/// Checks the envelope's frame against docs/results.schema.json.
fn check_envelope(v: &serde_json::Value) {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/results.schema.json"
    );
    let schema = read_json(std::path::Path::new(path));
    if let Err(e) = jsonschema::validate(&schema, v) {
        panic!("the envelope does not match {path}: {e}");
    }
    assert_eq!(v["schema"], 1, "{v}");
    assert_eq!(v["suite"], "adder", "{v}");
}

/// Checks one measured unpinned row of a `-S 2000` run.
fn check_row_json(r: &serde_json::Value) {
    check_measured_row(r);
    assert_eq!(r["placement"], "unpinned", "{r}");
}

/// Checks one measured row of a `-S 2000` run: every reply checked (each
/// thread's final value), thread j on adder/j, or every thread on adder/0
/// in pool mode.
fn check_measured_row(r: &serde_json::Value) {
    let x = r["threads"].as_u64().unwrap_or(0);
    assert!(r["error"].is_null(), "{r}");
    assert_eq!(r["samples_per_thread"].as_u64(), Some(2000));
    // -S is honoured exactly: never re-run, nothing discarded.
    assert_eq!(r["discarded_runs"], serde_json::json!([]), "{r}");
    let ts = r["run"]["threads"].as_array().expect("run.threads");
    assert_eq!(ts.len() as u64, x, "{r}");
    for (j, th) in ts.iter().enumerate() {
        assert_eq!(th["final_value"].as_u64(), Some(2000), "{th}");
        let path = if r["mode"] == "pool" { 0 } else { j as u64 };
        assert_eq!(th["instance"].as_u64(), Some(path), "{r}");
        check_latency(&th["latency"], 2000);
    }
    check_latency(&r["latency"], 2000 * x);
    check_busy_json(&r["busy_pct"], "busy_pct");
    assert!(num(r, "rate_per_thread") > 0.0 && num(r, "aggregate_rate") > 0.0);
    if x == 1 {
        assert_eq!(num(r, "efficiency"), 1.0, "{r}");
    }
}

/// Every row has its rate and latency figures, keyed as docs/results.md says.
fn check_figures(v: &serde_json::Value) {
    let figures = v["figures"].as_array().expect("figures");
    for r in v["rows"].as_array().expect("rows") {
        let key = serde_json::json!({
            "transport": r["transport"],
            "api": r["api"],
            "mode": r["mode"],
            "threads": r["threads"].to_string(),
            "placement": r["placement"],
        });
        let metrics: Vec<(&str, &str, &str)> = figures
            .iter()
            .filter(|f| f["key"] == key)
            .map(|f| {
                (
                    f["metric"].as_str().unwrap_or("?"),
                    f["unit"].as_str().unwrap_or("?"),
                    f["better"].as_str().unwrap_or("?"),
                )
            })
            .collect();
        for want in [
            ("rate_per_thread", "msg/s", "higher"),
            ("aggregate_rate", "msg/s", "higher"),
            ("p50_ns", "ns", "lower"),
            ("p99_ns", "ns", "lower"),
        ] {
            assert!(
                metrics.contains(&want),
                "{key}: {want:?} missing: {metrics:?}"
            );
        }
        if !r["busy_pct"].is_null() {
            assert!(metrics.contains(&("cpu_busy", "%", "neither")), "{key}");
        }
    }
}

/// `msgbench adder -t uds --modes one --threads 1,2 -S 2000 <extra>` in `dir`.
fn small_run(dir: &TestDir, extra: &[&str]) -> Output {
    small_run_modes(dir, "one", extra)
}

/// `msgbench adder -t uds --modes MODES --threads 1,2 -S 2000 <extra>` in `dir`.
fn small_run_modes(dir: &TestDir, modes: &str, extra: &[&str]) -> Output {
    let mut a = quick("uds", Some(modes), "1,2");
    a.extend(extra);
    let o = run(Bin::Msgbench, with_ns(dir, &a));
    o.assert_ok();
    dir.assert_ns_clean();
    o
}

#[test]
fn format_csv_prints_only_csv() {
    let dir = TestDir::new("csv");
    let o = small_run(&dir, &["--format", "csv", "--placement", "pinned,unpinned"]);
    let blocks: Vec<&str> = o.stdout.trim_end().split("\n\n").collect();
    assert_eq!(blocks.len(), 2, "a block per table: {}", o.stdout);
    for b in blocks {
        let mut r = csv::ReaderBuilder::new().from_reader(b.as_bytes());
        let head: Vec<String> = r
            .headers()
            .unwrap_or_else(|e| panic!("not CSV ({e}): {b}"))
            .iter()
            .map(String::from)
            .collect();
        assert_eq!(head, HEAD, "{b}");
        let recs: Vec<csv::StringRecord> = r
            .records()
            .map(|x| x.unwrap_or_else(|e| panic!("not CSV ({e}): {b}")))
            .collect();
        let threads: Vec<&str> = recs.iter().map(|x| &x[1]).collect();
        assert_eq!(threads, ["1", "2"], "{b}");
        assert_eq!(&recs[0][0], "One process", "{b}");
        for (x, rec) in recs.iter().enumerate() {
            assert_eq!(&rec[10], SEED_ONE[x][0], "the seed's QNX 8.0 figure: {b}");
            assert_eq!(&rec[11], SEED_ONE[x][1], "the seed's QNX 7.1 figure: {b}");
        }
        for x in &recs {
            x[5].replace(',', "")
                .parse::<u64>()
                .unwrap_or_else(|_| panic!("rate {:?} in {b}", &x[5]));
        }
    }
}

#[test]
fn format_json_prints_one_envelope() {
    let dir = TestDir::new("fjson");
    let o = small_run(&dir, &["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", o.stdout));
    check_envelope(&v);
    assert_eq!(v["rows"].as_array().map(Vec::len), Some(2), "{v}");
    assert_eq!(v["outcome"]["rows"], 2, "{v}");
}

#[test]
fn format_markdown_prints_markdown_tables_pinned_first() {
    let dir = TestDir::new("md");
    let o = small_run(
        &dir,
        &["--format", "markdown", "--placement", "pinned,unpinned"],
    );
    let out = &o.stdout;
    let pinned = out
        .find("**Transport uds, pinned: ")
        .unwrap_or_else(|| panic!("no pinned title: {out}"));
    let unpinned = out
        .find("**Transport uds, unpinned (contrast")
        .unwrap_or_else(|| panic!("no unpinned title: {out}"));
    assert!(pinned < unpinned, "pinned rows lead: {out}");
    let head = out
        .lines()
        .find(|l| l.starts_with("| Mode"))
        .unwrap_or_else(|| panic!("no markdown header: {out}"));
    for col in HEAD {
        assert!(head.contains(col), "{head}");
    }
    let rules = out
        .lines()
        .filter(|l| l.starts_with('|') && l.chars().all(|c| "|-: ".contains(c)))
        .count();
    assert_eq!(rules, 2, "a header rule per table: {out}");
    assert!(out.contains("| One process "), "{out}");
    if cpu_count() >= 2 {
        assert!(
            // Either way it comes out: "uds scaled best (...)" or "uds
            // reached only ..." (this test asserts no speed).
            out.contains("With each client/server pair pinned, uds "),
            "the verdict sentence: {out}"
        );
    }
}

#[test]
fn adder_suite_sigint_mid_run_cleans_up() {
    let dir = TestDir::new("suiteint");
    let json = dir.file("int.json");
    let json_s = json.display().to_string();
    let args = with_ns(
        &dir,
        &[
            "adder",
            "--threads",
            "2",
            "-S",
            "100000000",
            "--idle-secs",
            "0",
            "-t",
            "shm",
            "--modes",
            "multi",
            "--json",
            &json_s,
        ],
    );
    let mut mb = Proc::start(Bin::Msgbench, &args);
    let run_dir = dir.ns().join(format!("adder-run-{}", mb.pid()));
    mb.wait_until("the servers' endpoints", |_| {
        run_dir.join("adder/0").exists() && run_dir.join("adder/1").exists()
    });
    // Two client threads on top of the main thread: the run is going.
    mb.wait_until("the client threads", |p| p.threads() >= 3);
    std::thread::sleep(Duration::from_millis(300));
    let servers: Vec<_> = leftovers(&dir)
        .into_iter()
        .filter(|(_, c)| c.contains("serve-adder"))
        .collect();
    assert_eq!(
        servers.len(),
        2,
        "two server processes expected: {servers:?}"
    );

    mb.signal(libc::SIGINT);
    let o = mb.wait_within(Duration::from_secs(10), "SIGINT");
    // The pipeline's rule: an interrupted run prints what it measured,
    // says where it stopped, and ends with one line and exit status 1.
    let line = o.assert_one_line_error(1);
    assert!(line.contains("adder: interrupted"), "{line}");
    assert!(
        o.stdout
            .contains("Interrupted at shm, unpinned, Multi-process, 2 threads"),
        "{o}"
    );
    let v = read_json(&json);
    assert_eq!(v["outcome"]["interrupted"], true, "{v}");
    assert_eq!(v["outcome"]["failed"], 0, "{v}");
    assert_eq!(
        v["rows"],
        serde_json::json!([]),
        "the cut row is not kept: {v}"
    );
    assert!(
        !run_dir.exists(),
        "run directory left: {:?}",
        list_tree(&run_dir)
    );
    dir.assert_ns_clean();
    let left = leftovers(&dir);
    assert!(left.is_empty(), "server processes left behind: {left:?}");
}

/// `msgbench <args> --ns DIR`: exit 1, one line naming `option`, nothing
/// created.
fn option_error(args: &[&str], option: &str) {
    option_error_code(args, option, 1);
}

/// As [`option_error`], for a value clap's value parser refuses: exit 2.
fn usage_error(args: &[&str], option: &str) {
    option_error_code(args, option, 2);
}

fn option_error_code(args: &[&str], option: &str, code: i32) {
    let dir = TestDir::new("mbopt");
    let line = run(Bin::Msgbench, with_ns(&dir, args)).assert_one_line_error(code);
    let prefix = "msgbench: error: ";
    assert!(
        line.starts_with(prefix) && line[prefix.len()..].starts_with(option),
        "{args:?}: must name {option:?}: {line}"
    );
    assert!(!dir.ns().exists(), "{args:?} created the namespace");
}

#[test]
fn adder_suite_option_errors() {
    usage_error(&["adder", "--threads", "0"], "--threads 0");
    usage_error(&["adder", "--threads", "129"], "--threads 129");
    usage_error(&["adder", "--threads", "x"], "--threads x");
    usage_error(&["adder", "-t", "bogus"], "--transport bogus");
    usage_error(&["adder", "-t", "shm,bogus"], "--transport bogus");
    option_error(&["adder", "-S", "5"], "-S 5");
    option_error(&["adder", "--row-secs", "0"], "--row-secs 0");
    option_error(&["adder", "--row-secs", "-1"], "--row-secs -1");
    option_error(&["adder", "--idle-secs", "-1"], "--idle-secs -1");
    usage_error(&["adder", "--client-cpus", "x"], "--client-cpus x");
    option_error(
        &["adder", "--modes", "one,pool,one"],
        "--modes: one is given twice",
    );
    option_error(
        &["adder", "--modes", "pool", "--threads", "2,65"],
        "--threads 65: a pool has 1 to 64 threads",
    );
    option_error(
        &["adder", "--threads", "65"],
        "--threads 65: a pool has 1 to 64 threads",
    );
}

#[test]
fn adder_suite_usage_errors_exit_2() {
    let dir = TestDir::new("mbusage");
    for args in [
        &["adder", "--no-such-flag"][..],
        &["adder", "--modes", "bogus"][..],
        &["adder", "--modes", ""][..],
        &["adder", "--modes", "one,"][..],
        &["adder", "-S", "abc"][..],
    ] {
        let o = run(Bin::Msgbench, with_ns(&dir, args));
        assert_eq!(o.code(), 2, "{args:?}: {o}");
        assert!(o.stderr.contains("error:"), "{o}");
        assert_eq!(o.stderr.lines().count(), 1, "one line: {o}");
        if args[1] == "--modes" {
            let first = o.stderr.lines().next().unwrap_or_default();
            assert!(
                first.starts_with("msgbench: error: --modes "),
                "names the option: {o}"
            );
        }
    }
    assert!(!dir.ns().exists());
    let o = run(Bin::Msgbench, ["no-such-command"]);
    assert_eq!(o.code(), 2, "{o}");
    let o = run(Bin::Msgbench, ["adder", "--help"]);
    o.assert_ok();
    for s in [
        "--threads",
        "--transport",
        "-S",
        "--modes",
        "--placement",
        "--format",
        "--json",
    ] {
        assert!(o.stdout.contains(s), "msgbench adder --help lacks {s}: {o}");
    }
    for s in [
        "Server models to run",
        "pool:  One server process serving the one path adder/0 from a pool of X threads",
    ] {
        assert!(
            o.stdout.contains(s),
            "msgbench adder --help lacks {s:?}: {o}"
        );
    }
}

/// `--modes pool` alone: one server process per row serving adder/0 from
/// a pool of X threads, every client thread calling it; every reply
/// checked, the table and the JSON hold pool rows only, and nothing is
/// left behind.
#[test]
fn pool_mode_runs_and_checks_every_reply() {
    let dir = TestDir::new("pool");
    let (o, v) = json_run(&dir, &quick("shm-block", Some("pool"), "1,2"));
    let rows = table(&o.stdout, "shm-block", "unpinned");
    assert_eq!(
        shape(&rows),
        [("Thread pool (one path)", 1), ("", 2)],
        "{o}"
    );
    assert!(
        !o.stdout.contains("Server models compared"),
        "one model, nothing to compare: {o}"
    );
    check_envelope(&v);
    assert_eq!(v["settings"]["modes"], serde_json::json!(["pool"]));
    assert_eq!(v["outcome"]["failed"], 0, "{v}");
    let rows = v["rows"].as_array().expect("rows");
    let modes: Vec<(&str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r["mode"].as_str().unwrap_or("?"),
                r["threads"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(modes, [("pool", 1), ("pool", 2)], "{v}");
    for r in rows {
        check_row_json(r);
    }
    check_figures(&v);
}

/// Pinned, with the pool beside one process: both sentences under the
/// table, the seed's verdict and the server models compared, each naming
/// the placement (whichever way they came out: no speed is asserted).
#[test]
fn pinned_models_get_their_verdict() {
    let dir = TestDir::new("models");
    let o = small_run_modes(&dir, "one,pool", &["--placement", "pinned"]);
    let rows = table(&o.stdout, "uds", "pinned");
    assert_eq!(
        shape(&rows),
        [
            ("One process", 1),
            ("", 2),
            ("Thread pool (one path)", 1),
            ("", 2)
        ],
        "{o}"
    );
    if cpu_count() >= 2 {
        assert!(
            o.stdout
                .contains("With each client/server pair pinned, uds "),
            "{o}"
        );
        check_models_sentence(
            &o.stdout,
            "with each client/server thread pair pinned",
            &["uds"],
        );
    } else {
        assert!(!o.stdout.contains("Server models compared"), "one CPU: {o}");
    }
}

/// Threads past the CPU count: the sentence gives our aggregate at the
/// CPU count and at the most threads run, per extra thread, beside the
/// seed's 4 to 6 threads on its 4 cores.
#[test]
fn threads_past_the_cpus_are_judged_beside_the_seeds() {
    let dir = TestDir::new("past");
    let cpus = cpu_count();
    let threads = format!("{cpus},{}", cpus + 1);
    let mut a = quick("uds", Some("one"), &threads);
    a.extend(["--placement", "pinned"]);
    let o = run(Bin::Msgbench, with_ns(&dir, &a));
    o.assert_ok();
    dir.assert_ns_clean();
    let rows = table(&o.stdout, "uds", "pinned");
    assert_eq!(shape(&rows).len(), 2, "{o}");
    let head = format!(
        "Past the {cpus} CPU{} (one process, pinned): uds ",
        if cpus == 1 { "" } else { "s" }
    );
    let line = o
        .stdout
        .lines()
        .find(|l| l.starts_with(&head))
        .unwrap_or_else(|| panic!("no {head:?} sentence: {o}"));
    // Our figures are the table's: the aggregate at the CPU count and
    // past it, and the change per extra thread between them.
    let (at, past) = (&rows[0].aggregate, &rows[1].aggregate);
    let num = |s: &str| s.replace(',', "").parse::<f64>().expect("a rate");
    let per = (num(past) / num(at) - 1.0) * 100.0;
    assert!(
        line.contains(&format!(
            "uds {per:+.1}% per extra thread ({at} msg/s aggregate at {cpus} → {past} at {})",
            cpus + 1
        )),
        "{line}"
    );
    assert!(
        line.ends_with(
            "The seed past its 4 cores (Raspberry Pi 4): QNX 8.0 -7.2% per extra thread \
             (573,800 at 4 → 491,220 at 6), QNX 7.1 -2.9% per extra thread (219,960 at 4 → 207,246 at 6)."
        ),
        "{line}"
    );
}

/// `--copy` with one transport: each row runs in place, then with the
/// copying API right after it; the table shows both side by side under an
/// API column, the JSON rows say `api`, and the copying rows' figures
/// carry `api: copy` in their key (in-place keys are as before).
#[test]
fn copy_runs_both_apis_side_by_side() {
    let dir = TestDir::new("copy");
    let mut args = quick("shm", Some("one"), "1");
    args.push("--copy");
    let (o, v) = json_run(&dir, &args);

    // The table: an API column after Threads, the two rows adjacent.
    let mut lines = o
        .stdout
        .lines()
        .skip_while(|l| !l.starts_with("Transport shm, unpinned"))
        .skip(1);
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(&header[..3], ["Mode", "Threads", "API"], "{}", o.stdout);
    lines.next(); // the rule
    let rows: Vec<Vec<&str>> = lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            l.trim_start_matches("One process")
                .split_whitespace()
                .collect()
        })
        .collect();
    let shape: Vec<(&str, &str)> = rows.iter().map(|r| (r[0], r[1])).collect();
    assert_eq!(shape, [("1", "in-place"), ("1", "copy")], "{}", o.stdout);
    for r in &rows {
        assert_eq!(r.len(), 13, "with the seed's two figures: {r:?}");
        assert_eq!(r[8], "100%", "each API scales against its own X = 1: {r:?}");
    }

    // The JSON: an api per row, both APIs in the settings, every reply
    // checked (final values right).
    check_envelope(&v);
    assert_eq!(
        v["settings"]["apis"],
        serde_json::json!(["in-place", "copy"])
    );
    let rows = v["rows"].as_array().expect("rows");
    let apis: Vec<&str> = rows
        .iter()
        .map(|r| r["api"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(apis, ["in-place", "copy"], "{v}");
    for r in rows {
        check_row_json(r);
        assert_eq!(r["run"]["api"], r["api"], "{r}");
    }
    let figures = v["figures"].as_array().expect("figures");
    let copy_keys = figures.iter().filter(|f| f["key"]["api"] == "copy").count();
    assert!(copy_keys > 0 && copy_keys < figures.len(), "{v}");
    assert!(figures
        .iter()
        .all(|f| f["key"]["api"] == "copy" || f["key"]["api"] == "in-place"));
}
