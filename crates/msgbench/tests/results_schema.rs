//! Every suite's results envelope against the JSON Schema in
//! `docs/results.schema.json`: a short real run of each suite with
//! `--format json`, validated, and the schema shown to refuse documents
//! that break it (so a pass means something).

mod common;

use common::*;
use serde_json::Value;

/// The schema, compiled.
fn validator() -> jsonschema::Validator {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/results.schema.json"
    );
    let text = std::fs::read_to_string(path).expect("docs/results.schema.json");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::validator_for(&schema).expect("a valid JSON Schema")
}

/// The errors of `doc` against the schema, one line each.
fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
    v.iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect()
}

/// Runs `msgbench ARGS --format json` and returns the envelope it printed.
fn envelope(args: &[&str]) -> Value {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--format", "json"]);
    let out = run(Bin::Msgbench, &all);
    out.assert_ok();
    serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("not one JSON document ({e}): {out}"))
}

/// Runs `args`, checks the envelope against the schema, and returns it.
fn check(suite: &str, args: &[&str]) -> Value {
    let doc = envelope(args);
    let v = validator();
    let errs = errors(&v, &doc);
    assert!(errs.is_empty(), "{suite}: {errs:#?}");
    assert_eq!(doc["suite"], suite);
    assert!(
        !doc["figures"].as_array().expect("figures").is_empty(),
        "{suite}: no figures"
    );
    doc
}

#[test]
fn floor_envelope_follows_the_schema() {
    check("floor", &["floor", "--quick", "--cpus", "0"]);
}

#[test]
fn ipc_envelope_follows_the_schema() {
    let mut args = vec!["ipc"];
    args.extend(IPC_QUICK_UDS);
    check("ipc", &args);
}

/// With both scale axes: the rows of idle and active clients (their own
/// fields, described in the schema's ipc row) follow it too.
#[test]
fn ipc_scale_envelope_follows_the_schema() {
    let dir = TestDir::new("schema-ipc-scale");
    let ns = dir.ns_args();
    let mut args = vec!["ipc"];
    args.extend(IPC_QUICK_UDS);
    args.extend(["--idle-clients", "0,20", "--clients", "2", &ns[0], &ns[1]]);
    let doc = check("ipc", &args);
    let rows = doc["rows"].as_array().expect("rows");
    assert!(rows.iter().any(|r| r["idle"].is_object()), "{doc}");
    assert!(rows.iter().any(|r| r["active"].is_object()), "{doc}");
    // The schema's ipc row is strict where it can be: a wrong field fails.
    let mut bad = doc.clone();
    bad["rows"][2]["active"]["slowest_over_fastest"] = serde_json::json!(1.5);
    assert!(
        !errors(&validator(), &bad).is_empty(),
        "a ratio above 1 passed"
    );
}

/// A row's raw histogram counts every sample of its latency summary once,
/// in increasing order.
fn check_histogram(row: &Value) {
    let h = row["histogram"]
        .as_array()
        .unwrap_or_else(|| panic!("no histogram: {row}"));
    let counted: u64 = h.iter().map(|b| b[1].as_u64().expect("a count")).sum();
    assert_eq!(Some(counted), row["latency"]["count"].as_u64(), "{row}");
    let bounds: Vec<f64> = h.iter().map(|b| b[0].as_f64().expect("a bound")).collect();
    assert!(bounds.windows(2).all(|w| w[0] < w[1]), "{bounds:?}");
}

#[test]
fn adder_rows_keep_their_raw_histogram() {
    let dir = TestDir::new("schema-adder-hist");
    let ns = dir.ns_args();
    let doc = envelope(&[
        "adder",
        "-t",
        "uds",
        "--threads",
        "2",
        "--modes",
        "one",
        "-S",
        "2000",
        "--idle-secs",
        "0",
        &ns[0],
        &ns[1],
    ]);
    for row in doc["rows"].as_array().expect("rows") {
        check_histogram(&row["run"]);
    }
}

/// With `--copy` and the pool beside one process: both APIs' and both
/// modes' rows follow the schema, whose adder rows need an `api` of
/// `in-place` or `copy` and a `mode` of `one`, `multi` or `pool`.
#[test]
fn adder_envelope_follows_the_schema() {
    let dir = TestDir::new("schema-adder");
    let ns = dir.ns_args();
    let args = [
        "adder",
        "-t",
        "uds",
        "--threads",
        "1",
        "--modes",
        "one,pool",
        "-S",
        "2000",
        "--idle-secs",
        "0",
        "--copy",
        &ns[0],
        &ns[1],
    ];
    let doc = check("adder", &args);
    let rows: Vec<(&str, &str)> = doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("?");
            (s("mode"), s("api"))
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("one", "in-place"),
            ("one", "copy"),
            ("pool", "in-place"),
            ("pool", "copy")
        ],
        "{doc}"
    );
    let v = validator();
    let broken: [Breakage; 3] = [
        ("a row without an api", |d| {
            d["rows"][0].as_object_mut().unwrap().remove("api");
        }),
        ("an api 'fast'", |d| d["rows"][1]["api"] = "fast".into()),
        ("a mode 'threads'", |d| {
            d["rows"][2]["mode"] = "threads".into()
        }),
    ];
    for (what, breaks) in broken {
        let mut d = doc.clone();
        breaks(&mut d);
        assert!(!errors(&v, &d).is_empty(), "the schema accepts {what}");
    }
}

#[test]
fn rtos_envelope_follows_the_schema() {
    check("rtos", &["rtos", "--quick", "CAL"]);
}

#[test]
fn smp_envelope_follows_the_schema() {
    check(
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
    );
}

#[test]
fn validate_envelope_follows_the_schema() {
    check("validate", &["validate", "--quick"]);
}

/// What is broken, and how.
type Breakage = (&'static str, fn(&mut Value));

/// The schema refuses what breaks it: a missing field, a wrong version,
/// a figure without a key, an unknown suite.
#[test]
fn the_schema_refuses_broken_envelopes() {
    let v = validator();
    let good = envelope(&["floor", "--quick", "--cpus", "0"]);
    assert!(errors(&v, &good).is_empty());
    let broken: [Breakage; 5] = [
        ("no rows", |d| {
            d.as_object_mut().unwrap().remove("rows");
        }),
        ("version 2", |d| d["schema"] = 2.into()),
        ("an unknown suite", |d| d["suite"] = "bogus".into()),
        ("a figure without a key", |d| {
            d["figures"][0].as_object_mut().unwrap().remove("key");
        }),
        ("a figure better 'up'", |d| {
            d["figures"][0]["better"] = "up".into()
        }),
    ];
    for (what, breaks) in broken {
        let mut doc = good.clone();
        breaks(&mut doc);
        assert!(!errors(&v, &doc).is_empty(), "the schema accepts {what}");
    }
}

#[test]
fn broker_envelope_follows_the_schema() {
    check(
        "broker",
        &[
            "broker",
            "--quick",
            "--via",
            "direct,broker-validate",
            "-t",
            "uds",
            "--seconds",
            "0.1",
        ],
    );
}

/// `msgbench adder --server` against a `msgbench serve adder` on loopback:
/// the envelope follows the schema, with the server in `settings.server`,
/// and the schema refuses a server described wrong (or with its token).
#[test]
fn remote_adder_envelope_follows_the_schema() {
    let listen = format!("127.0.0.1:{}", unused_port());
    let mut server = Proc::start(Bin::Msgbench, ["serve", "adder", "--listen", &listen]);
    let out = server.wait_stdout("}\n");
    let ready: Value = serde_json::from_str(out.trim()).expect("the ready line");
    let token = ready["token"].as_str().expect("a token").to_string();
    let mut c = Bin::Msgbench.cmd([
        "adder",
        "--server",
        &listen,
        "-S",
        "1000",
        "--idle-secs",
        "0",
        "--format",
        "json",
    ]);
    c.env("MSGBENCH_TOKEN", &token);
    let o = run_cmd("adder --server", c);
    o.assert_ok();
    let doc: Value = serde_json::from_str(&o.stdout).expect("one JSON document");
    let v = validator();
    let errs = errors(&v, &doc);
    assert!(errs.is_empty(), "{errs:#?}");
    let s = &doc["settings"]["server"];
    assert_eq!(
        (s["remote"].as_bool(), s["address"].as_str()),
        (Some(true), Some(listen.as_str()))
    );
    assert_eq!(s["host"], ready["host"]);
    let broken: [Breakage; 3] = [
        ("a server without its host", |d| {
            d["settings"]["server"]
                .as_object_mut()
                .unwrap()
                .remove("host");
        }),
        ("a server not remote", |d| {
            d["settings"]["server"]["remote"] = false.into()
        }),
        ("a server with its token", |d| {
            d["settings"]["server"]["token"] = "00".repeat(16).into()
        }),
    ];
    for (what, breaks) in broken {
        let mut d = doc.clone();
        breaks(&mut d);
        assert!(!errors(&v, &d).is_empty(), "the schema accepts {what}");
    }
    server.signal(libc::SIGTERM);
    let o = server.wait_within(std::time::Duration::from_secs(10), "SIGTERM");
    assert_eq!(o.code(), 0, "{o}");
}
