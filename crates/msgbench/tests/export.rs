//! The exports of real runs (`floor --quick --cpus 0`, under a second,
//! recorded in a store of the test's own) read by their consumers: the
//! OpenMetrics text by `promtool check metrics` (Debian's `prometheus`),
//! BMF by the JSON Schema of Bencher's documentation
//! (docs/bmf.schema.json, with the `jsonschema` crate), the lava lines run
//! by `sh` against a `lava-test-case` that parses its arguments as LAVA's
//! does and prints LAVA's signal, read back as LAVA's dispatcher reads it.
//! Every export has one entry per figure of the run's envelope, with its
//! value. Bad input is one line: an unknown format (exit 2), `--push`
//! without openmetrics (exit 1, before the run), a gateway that refuses
//! or never answers (exit 1, bounded, the run printed and recorded).
//! The real Pushgateway is in export_push.rs.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// The suite run every test exports.
const FLOOR: [&str; 4] = ["floor", "--quick", "--cpus", "0"];

/// A store of the test's own in `dir`.
fn store(dir: &TestDir) -> String {
    dir.file("store.db").display().to_string()
}

/// `msgbench ARGS` recording in (and reading) the store of `dir`.
fn msgbench(dir: &TestDir, args: &[&str]) -> Output {
    run_cmd("msgbench", Bin::Msgbench.cmd_with_store(args, &store(dir)))
}

/// A floor run with `--format FORMAT` and `--json`: its stdout and its
/// envelope.
fn floor_as(dir: &TestDir, format: &str) -> (String, Value) {
    let json = dir.file(&format!("{format}.json"));
    let mut args = FLOOR.to_vec();
    args.extend(["--format", format, "--json", json.to_str().unwrap()]);
    let out = msgbench(dir, &args);
    out.assert_ok();
    assert!(out.stderr.is_empty(), "nothing but the export: {out}");
    (out.stdout, read_json(&json))
}

/// The envelope's figures.
fn figures(doc: &Value) -> &Vec<Value> {
    let f = doc["figures"].as_array().expect("figures");
    assert!(!f.is_empty(), "no figures: {doc}");
    f
}

/// `promtool check metrics` on `text`: (exit code, what it said).
fn promtool(dir: &TestDir, text: &str) -> Option<(i32, String)> {
    if !Path::new("/usr/bin/promtool").exists() {
        skip("promtool is not installed (apt-get install prometheus)");
        return None;
    }
    let file = dir.file("metrics.txt");
    std::fs::write(&file, text).unwrap();
    let mut c = Command::new("sh");
    c.args(["-c", "exec promtool check metrics < \"$1\"", "sh"])
        .arg(&file);
    let out = run_cmd("promtool", c);
    Some((out.code(), format!("{}{}", out.stdout, out.stderr)))
}

/// `a` and `b` equal but for the last bits: a figure read back from an
/// envelope's JSON (serde_json without its exact-float feature, as the
/// tests and the store read it) may be a unit in the last place off the
/// value the run exported.
fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= 4.0 * f64::EPSILON * a.abs().max(b.abs())
}

/// The samples of an OpenMetrics text: (name, labels as written, value).
fn samples(text: &str) -> Vec<(String, String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').expect("a sample");
            let (name, labels) = series.split_once('{').expect("labels");
            let v = value.parse().unwrap_or_else(|_| panic!("a number: {l}"));
            (
                name.to_string(),
                labels.trim_end_matches('}').to_string(),
                v,
            )
        })
        .collect()
}

#[test]
fn openmetrics_of_a_run_passes_promtool_and_the_store_exports_the_same() {
    let dir = TestDir::new("export-om");
    let (text, doc) = floor_as(&dir, "openmetrics");
    let Some((code, said)) = promtool(&dir, &text) else {
        return;
    };
    assert_eq!((code, said.as_str()), (0, ""), "promtool on:\n{text}");
    assert!(text.ends_with("# EOF\n"), "{text}");
    let got = samples(&text);
    let figs = figures(&doc);
    assert_eq!(got.len(), figs.len(), "one sample per figure:\n{text}");
    for f in figs {
        let what = f["key"]["floor"].as_str().unwrap();
        let want = f["value"].as_f64().unwrap() / 1e9;
        let hit = got
            .iter()
            .filter(|(_, l, _)| l.contains(&format!("floor=\"{what}\"")))
            .collect::<Vec<_>>();
        assert_eq!(hit.len(), 1, "{what}: {text}");
        let (name, labels, v) = hit[0];
        assert!(name.starts_with("msgbench_floor_") && name.ends_with("_seconds"));
        assert!(labels.starts_with("suite=\"floor\",host=\""), "{labels}");
        assert!(same(*v, want), "{what}: {v} is not {want} s");
    }
    // The run as stored exports the same samples, @last or by its ID.
    for r in ["@last", "1"] {
        let again = msgbench(&dir, &["history", "export", r, "--format", "openmetrics"]);
        again.assert_ok();
        let strip = |t: &str| -> Vec<String> {
            t.lines()
                .map(|l| l.rsplit_once(' ').map_or(l, |(s, _)| s).to_string())
                .collect()
        };
        assert_eq!(strip(&again.stdout), strip(&text), "{r}");
        for (a, b) in samples(&again.stdout).iter().zip(&got) {
            assert!(same(a.2, b.2), "{r}: {a:?} {b:?}");
        }
    }
    // promtool really parses: a label value with a raw newline is refused.
    let broken = text.replacen("host=\"", "host=\"a\nb", 1);
    let (code, said) = promtool(&dir, &broken).unwrap();
    assert_ne!(code, 0, "promtool took a broken text: {said}");
}

#[test]
fn an_ipc_row_is_labelled_by_suite_host_kernel_transport_size_placement_layout() {
    let dir = TestDir::new("export-om-ipc");
    let json = dir.file("ipc.json");
    let mut args = vec!["ipc"];
    args.extend(IPC_QUICK_UDS);
    args.extend(["--format", "openmetrics", "--json", json.to_str().unwrap()]);
    let out = msgbench(&dir, &args);
    out.assert_ok();
    let Some((code, said)) = promtool(&dir, &out.stdout) else {
        return;
    };
    assert_eq!(
        (code, said.as_str()),
        (0, ""),
        "promtool on:\n{}",
        out.stdout
    );
    let doc = read_json(&json);
    let env = &doc["environment"];
    let want = format!(
        "suite=\"ipc\",host=\"{}\",kernel=\"{}\",api=\"in-place\",layout=\"process\",placement=\"same\",size=\"64\",transport=\"uds\"",
        env["hostname"].as_str().unwrap(),
        env["kernel"].as_str().unwrap()
    );
    let got = samples(&out.stdout);
    assert_eq!(got.len(), figures(&doc).len(), "{}", out.stdout);
    for (name, labels, _) in &got {
        assert!(name.starts_with("msgbench_ipc_"), "{name}");
        assert_eq!(*labels, want, "{name}");
    }
    let names: Vec<&str> = got.iter().map(|(n, _, _)| n.as_str()).collect();
    for n in [
        "msgbench_ipc_p50_seconds",
        "msgbench_ipc_throughput_messages_per_second",
    ] {
        assert!(names.contains(&n), "{n}: {names:?}");
    }
}

/// The envelope of `doc`, its host and a key value made hostile, imported
/// into the store of `dir` (as a run of another machine would be).
fn import_hostile(dir: &TestDir, doc: &Value, host: &str, value: &str) {
    let mut doc = doc.clone();
    doc["environment"]["hostname"] = Value::from(host);
    doc["figures"][0]["key"]["floor"] = Value::from(value);
    let file = dir.file("hostile.json");
    std::fs::write(&file, serde_json::to_string(&doc).unwrap()).unwrap();
    msgbench(dir, &["history", "import", file.to_str().unwrap()]).assert_ok();
}

#[test]
fn hostile_label_values_are_escaped_for_promtool() {
    let dir = TestDir::new("export-hostile");
    let (_, doc) = floor_as(&dir, "json");
    let host = "lab \"7\" \\ rack\nB";
    let value = "a\"b\\c\nd}e,f=\"g\"";
    import_hostile(&dir, &doc, host, value);
    let out = msgbench(
        &dir,
        &["history", "export", "@last", "--format", "openmetrics"],
    );
    out.assert_ok();
    let Some((code, said)) = promtool(&dir, &out.stdout) else {
        return;
    };
    assert_eq!(
        (code, said.as_str()),
        (0, ""),
        "promtool on:\n{}",
        out.stdout
    );
    let first = out
        .stdout
        .lines()
        .find(|l| l.contains("floor=\"a"))
        .unwrap();
    assert!(
        first.contains(r#"host="lab \"7\" \\ rack\nB""#),
        "host escaped: {first}"
    );
    assert!(
        first.contains(r#"floor="a\"b\\c\nd}e,f=\"g\"""#),
        "value escaped: {first}"
    );
    assert_eq!(
        out.stdout.lines().count(),
        samples(&out.stdout).len() + 3 * 2 + 1
    );
}

/// Docs/bmf.schema.json, compiled.
fn bmf_schema() -> jsonschema::Validator {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/bmf.schema.json");
    let text = std::fs::read_to_string(path).expect("docs/bmf.schema.json");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

/// The schema's complaints about `doc`.
fn schema_errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect()
}

#[test]
fn bmf_follows_benchers_schema_and_holds_every_figure() {
    let dir = TestDir::new("export-bmf");
    let (text, doc) = floor_as(&dir, "bmf");
    let bmf: Value = serde_json::from_str(&text).expect("one JSON document");
    let v = bmf_schema();
    let errs = schema_errors(&v, &bmf);
    assert!(errs.is_empty(), "{errs:#?}\n{text}");
    let mut count = 0;
    for f in figures(&doc) {
        let key: BTreeMap<String, String> = serde_json::from_value(f["key"].clone()).unwrap();
        let row: Vec<String> = key.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let bench = format!("floor {}", row.join(" "));
        let m = &bmf[&bench][f["metric"].as_str().unwrap()];
        assert_eq!(m["value"], f["value"], "{bench}: {text}");
        let (lo, hi) = (m["lower_value"].as_f64(), m["upper_value"].as_f64());
        let reps: Vec<f64> = f["repeats"]
            .as_array()
            .map(|r| r.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let value = f["value"].as_f64().unwrap();
        let want_lo = reps.iter().copied().fold(value, f64::min);
        let want_hi = reps.iter().copied().fold(value, f64::max);
        assert_eq!((lo, hi), (Some(want_lo), Some(want_hi)), "{bench}");
        count += 1;
    }
    let measures: usize = bmf
        .as_object()
        .unwrap()
        .values()
        .map(|b| b.as_object().unwrap().len())
        .sum();
    assert_eq!(measures, count, "one measure per figure: {text}");
    // The schema refuses what Bencher would not read.
    for bad in [
        serde_json::json!({"b": {"m": {"lower_value": 1.0}}}),
        serde_json::json!({"b": {"m": {"value": "12"}}}),
        serde_json::json!({"b": {"m": {"value": 1.0, "spread": 2.0}}}),
        serde_json::json!({"b": {"m".repeat(65): {"value": 1.0}}}),
    ] {
        assert!(!schema_errors(&v, &bad).is_empty(), "taken: {bad}");
    }
}

/// Is `s` a decimal number as the exports write them (no exponent)?
fn decimal(s: &str) -> bool {
    let t = s.strip_prefix('-').unwrap_or(s);
    !t.is_empty()
        && t.chars().all(|c| c.is_ascii_digit() || c == '.')
        && t.matches('.').count() <= 1
        && s.parse::<f64>().is_ok()
}

/// Is `s` a name the lines and lava exports promise?
fn safe_name(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
}

#[test]
fn lines_are_name_value_unit_one_per_figure() {
    let dir = TestDir::new("export-lines");
    let (text, doc) = floor_as(&dir, "lines");
    let figs = figures(&doc);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), figs.len(), "{text}");
    for (line, f) in lines.iter().zip(figs) {
        let (name, rest) = line.split_once(": ").expect("name: value unit");
        let words: Vec<&str> = rest.split(' ').collect();
        assert!(safe_name(name), "{line}");
        assert!(name.starts_with("floor.") && name.ends_with(f["metric"].as_str().unwrap()));
        assert_eq!(words.len(), 2, "{line}");
        assert!(decimal(words[0]), "{line}");
        let v: f64 = words[0].parse().unwrap();
        assert!(same(v, f["value"].as_f64().unwrap()), "{line}: {f}");
        assert_eq!(words[1], "ns", "{line}");
    }
}

/// A `lava-test-case` as LAVA's test shell has it (the helper's
/// arguments: NAME, then --result, --measurement, --units), printing the
/// signal LAVA's dispatcher reads; anything else is an error.
const LAVA_TEST_CASE: &str = r#"#!/bin/sh
[ $# -ge 1 ] || { echo "lava-test-case: no test case name" >&2; exit 1; }
TEST_CASE_ID="$1"; shift
case "$TEST_CASE_ID" in *[[:space:]]*|*=*|"") echo "bad name: $TEST_CASE_ID" >&2; exit 1;; esac
RESULT=""; MEASUREMENT=""; UNITS=""
while [ $# -gt 0 ]; do
  case "$1" in
    --result) RESULT="$2"; shift 2;;
    --measurement) MEASUREMENT="$2"; shift 2;;
    --units) UNITS="$2"; shift 2;;
    *) echo "lava-test-case: unknown option $1" >&2; exit 1;;
  esac
done
case "$RESULT" in pass|fail|skip|unknown) ;; *) echo "bad result: $RESULT" >&2; exit 1;; esac
SIGNAL="<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=$TEST_CASE_ID RESULT=$RESULT"
[ -n "$MEASUREMENT" ] && SIGNAL="$SIGNAL MEASUREMENT=$MEASUREMENT"
[ -n "$UNITS" ] && SIGNAL="$SIGNAL UNITS=$UNITS"
echo "$SIGNAL>"
"#;

/// A signal's fields as LAVA's dispatcher splits them: at spaces, then
/// each at `=`, exactly two parts or the signal is refused.
fn lava_fields(signal: &str) -> BTreeMap<String, String> {
    let body = signal
        .strip_prefix("<LAVA_SIGNAL_TESTCASE ")
        .and_then(|s| s.strip_suffix('>'))
        .unwrap_or_else(|| panic!("not a signal: {signal}"));
    body.split(' ')
        .map(|p| {
            let parts: Vec<&str> = p.split('=').collect();
            assert_eq!(parts.len(), 2, "malformed parameter {p:?} in {signal}");
            (parts[0].to_lowercase(), parts[1].to_string())
        })
        .collect()
}

#[test]
fn lava_lines_run_as_lava_test_case_invocations() {
    let dir = TestDir::new("export-lava");
    let (text, doc) = floor_as(&dir, "lava");
    let figs = figures(&doc);
    assert_eq!(text.lines().count(), figs.len(), "{text}");
    let bin = dir.file("bin");
    std::fs::create_dir(&bin).unwrap();
    let helper = bin.join("lava-test-case");
    std::fs::write(&helper, LAVA_TEST_CASE).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&helper, std::fs::Permissions::from_mode(0o755)).unwrap();
    let script = dir.file("steps.sh");
    std::fs::write(&script, format!("set -e\n{text}")).unwrap();
    let mut c = Command::new("sh");
    c.arg(&script).env(
        "PATH",
        format!(
            "{}:{}",
            bin.display(),
            std::env::var("PATH").unwrap_or_default()
        ),
    );
    let out = run_cmd("sh steps.sh", c);
    out.assert_ok();
    let signals: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(signals.len(), figs.len(), "{out}");
    for (signal, f) in signals.iter().zip(figs) {
        let fields = lava_fields(signal);
        assert!(safe_name(&fields["test_case_id"]), "{signal}");
        assert_eq!(fields["result"], "pass");
        assert_eq!(fields["units"], "ns");
        assert!(decimal(&fields["measurement"]), "{signal}");
        assert_eq!(
            fields["measurement"].parse::<f64>().ok(),
            f["value"].as_f64()
        );
    }
}

#[test]
fn an_unknown_format_is_claps_one_line() {
    let dir = TestDir::new("export-bad-format");
    let mut args = FLOOR.to_vec();
    args.extend(["--format", "prometheus"]);
    let line = msgbench(&dir, &args).assert_one_line_error(2);
    assert_eq!(
        line,
        "msgbench: error: --format prometheus: expected one of table, markdown, csv, json, bmf, openmetrics, lines, lava"
    );
    let out = msgbench(&dir, &["history", "export", "@last", "--format", "csv"]);
    let line = out.assert_one_line_error(2);
    assert!(
        line.contains("--format csv: expected one of bmf, openmetrics, lines, lava"),
        "{line}"
    );
}

#[test]
fn push_without_openmetrics_is_refused_before_the_run() {
    let dir = TestDir::new("export-push-format");
    for format in ["table", "bmf", "json"] {
        let mut args = FLOOR.to_vec();
        args.extend(["--format", format, "--push", "http://127.0.0.1:9/"]);
        let out = msgbench(&dir, &args);
        let line = out.assert_one_line_error(1);
        assert_eq!(
            line,
            "msgbench: error: --push http://127.0.0.1:9/: pushes the openmetrics export: give it with --format openmetrics"
        );
        assert!(out.stdout.is_empty(), "nothing ran: {out}");
    }
    let mut args = FLOOR.to_vec();
    args.extend(["--format", "openmetrics", "--push", "https://127.0.0.1:9/"]);
    let line = msgbench(&dir, &args).assert_one_line_error(1);
    assert!(line.contains("https is not supported"), "{line}");
    assert!(!dir.file("store.db").exists(), "no run was recorded");
}

/// Pushes a floor run to `url`: the push fails with one line naming the
/// group's URL, within the push's bound, the run printed and recorded.
fn push_fails(dir: &TestDir, url: &str, bound: Duration) -> String {
    let mut args = FLOOR.to_vec();
    args.extend(["--format", "openmetrics", "--push", url]);
    let t = Instant::now();
    let out = msgbench(dir, &args);
    let took = t.elapsed();
    let line = out.assert_one_line_error(1);
    let group = format!(
        "{}/metrics/job/msgbench/instance/",
        url.trim_end_matches('/')
    );
    assert!(
        line.starts_with(&format!("msgbench: error: --push: {group}")),
        "{line}"
    );
    assert!(
        out.stdout.ends_with("# EOF\n"),
        "the export is printed: {out}"
    );
    assert!(took < bound, "took {took:?}");
    let listed = msgbench(dir, &["history", "--format", "json"]);
    listed.assert_ok();
    assert!(listed.stdout.contains("\"floor\""), "recorded: {listed}");
    line
}

#[test]
fn an_unreachable_gateway_is_one_line_and_the_run_is_kept() {
    let dir = TestDir::new("export-push-refused");
    let port = unused_port();
    let line = push_fails(
        &dir,
        &format!("http://127.0.0.1:{port}"),
        Duration::from_secs(20),
    );
    assert!(line.contains("refused"), "{line}");
}

#[test]
fn a_silent_gateway_costs_the_push_timeout_not_a_hang() {
    let dir = TestDir::new("export-push-silent");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    // Accepts the push's connection and never answers, until the test
    // is done with it.
    let (done, wait) = std::sync::mpsc::channel::<()>();
    let held = std::thread::spawn(move || {
        let conn = listener.accept();
        let _ = wait.recv();
        drop(conn);
    });
    let line = push_fails(&dir, &url, Duration::from_secs(25));
    assert!(line.to_lowercase().contains("timeout"), "{line}");
    drop(done);
    held.join().unwrap();
}
