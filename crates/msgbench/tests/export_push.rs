//! `--push URL` against a real Prometheus Pushgateway (Debian's
//! `prometheus-pushgateway`), started by the test on a free loopback port
//! with no persistence and killed and reaped whatever happens: a suite's
//! run pushed as it ends, and a stored run of a host with a hostile name
//! (quotes, a backslash, a newline, a slash) pushed by `history export`,
//! then the gateway scraped back over HTTP: every pushed sample is there,
//! with its labels, the group's job and instance, and its value.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

/// Where Debian installs the gateway.
const GATEWAY: &str = "/usr/bin/prometheus-pushgateway";

/// A labelled sample: name, labels, value.
type Sample = (String, BTreeMap<String, String>, f64);

/// The running gateway and its address.
struct Gateway {
    /// Killed and reaped on drop.
    _proc: Proc,
    url: String,
}

impl Gateway {
    /// Starts a gateway on a free loopback port and waits (at most 20 s)
    /// until it says it is ready; `None` (skipped) when not installed.
    fn start() -> Option<Gateway> {
        if !Path::new(GATEWAY).exists() {
            skip(
                "prometheus-pushgateway is not installed (apt-get install prometheus-pushgateway)",
            );
            return None;
        }
        let port = unused_port();
        let mut c = std::process::Command::new(GATEWAY);
        c.arg(format!("--web.listen-address=127.0.0.1:{port}"));
        let mut proc = Proc::spawn_for("prometheus-pushgateway", c, Duration::from_secs(300));
        let url = format!("http://127.0.0.1:{port}");
        let ready = format!("{url}/-/ready");
        let t = Instant::now();
        while get(&ready).is_none() {
            if let Some(s) = proc.try_status() {
                panic!("the gateway exited ({s}): {}", proc.stderr());
            }
            assert!(t.elapsed() < Duration::from_secs(20), "gateway not ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        Some(Gateway { _proc: proc, url })
    }
}

/// GET `url`: the body of a 200 answer, else `None`.
fn get(url: &str) -> Option<String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(5)))
        .proxy(None)
        .build()
        .into();
    let mut resp = agent.get(url).call().ok()?;
    resp.body_mut().read_to_string().ok()
}

/// `msgbench ARGS` with the store of `dir`, no proxy in the way.
fn msgbench(dir: &TestDir, args: &[&str]) -> Output {
    let store = dir.file("store.db").display().to_string();
    let mut c = Bin::Msgbench.cmd_with_store(args, &store);
    for v in ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"] {
        c.env_remove(v);
    }
    run_cmd("msgbench", c)
}

/// A quoted label value, unescaped; the rest of `s` after its closing
/// quote.
fn quoted(s: &str) -> (String, &str) {
    let mut out = String::new();
    let mut chars = s.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (out, &s[i + 1..]),
            '\\' => match chars.next() {
                Some((_, 'n')) => out.push('\n'),
                Some((_, e)) => out.push(e),
                None => break,
            },
            c => out.push(c),
        }
    }
    panic!("an unterminated label value: {s}")
}

/// A sample line of the text formats, `name{l="v",...} value`.
fn sample(line: &str) -> Sample {
    let (name, mut rest) = line
        .split_once('{')
        .unwrap_or_else(|| line.split_once(' ').expect("a sample"));
    let mut labels = BTreeMap::new();
    if line.contains('{') {
        while let Some((label, after)) = rest.split_once("=\"") {
            let (value, after) = quoted(after);
            labels.insert(label.trim_start_matches(',').to_string(), value);
            rest = after;
            if let Some(r) = rest.strip_prefix('}') {
                rest = r;
                break;
            }
        }
    }
    let value = rest.split_whitespace().next().expect("a value");
    let v = value.parse().unwrap_or_else(|_| panic!("a number: {line}"));
    (name.to_string(), labels, v)
}

/// Every sample of a text.
fn samples(text: &str) -> Vec<Sample> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(sample)
        .collect()
}

/// Checks that every sample of `pushed` is in `scraped`, with the
/// group's job and `instance`, and the same value.
fn assert_scraped(pushed: &str, scraped: &[Sample], instance: &str) {
    let ours = samples(pushed);
    assert!(!ours.is_empty(), "{pushed}");
    for (name, labels, value) in ours {
        let mut want = labels.clone();
        want.insert("job".into(), "msgbench".into());
        want.insert("instance".into(), instance.into());
        let hit = scraped.iter().find(|(n, l, _)| *n == name && *l == want);
        let Some((_, _, v)) = hit else {
            panic!("{name}{want:?} not scraped back");
        };
        assert_eq!(*v, value, "{name}{want:?}");
    }
}

/// The envelope of a run, with another (hostile) host name, imported.
fn import_as_host(dir: &TestDir, json: &Path, host: &str) {
    let mut doc: Value = read_json(json);
    doc["environment"]["hostname"] = Value::from(host);
    doc["started"] = Value::from("2020-01-01T00:00:00Z");
    let file = dir.file("other-host.json");
    std::fs::write(&file, serde_json::to_string(&doc).unwrap()).unwrap();
    msgbench(dir, &["history", "import", file.to_str().unwrap()]).assert_ok();
}

#[test]
fn pushed_runs_are_scraped_back_from_a_real_pushgateway() {
    let Some(gw) = Gateway::start() else {
        return;
    };
    let dir = TestDir::new("export-push");
    let json = dir.file("floor.json");
    let args = [
        "floor",
        "--quick",
        "--cpus",
        "0",
        "--format",
        "openmetrics",
        "--push",
        &gw.url,
        "--json",
        json.to_str().unwrap(),
    ];
    let run = msgbench(&dir, &args);
    run.assert_ok();
    assert!(run.stderr.is_empty(), "{run}");
    let host = read_json(&json)["environment"]["hostname"]
        .as_str()
        .unwrap()
        .to_string();
    let hostile = "lab \"7\"\\rack/B\nx";
    import_as_host(&dir, &json, hostile);
    // The imported run started first: @1 is it, by its ID.
    let ids = msgbench(&dir, &["history", "--format", "json"]);
    let list: Value = serde_json::from_str(&ids.stdout).unwrap();
    let other = list
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["host"] == hostile)
        .map(|r| r["id"].to_string())
        .expect("the imported run");
    let pushed = msgbench(
        &dir,
        &[
            "history",
            "export",
            &other,
            "--format",
            "openmetrics",
            "--push",
            &gw.url,
        ],
    );
    pushed.assert_ok();
    let scraped = samples(&get(&format!("{}/metrics", gw.url)).expect("a scrape"));
    assert_scraped(&run.stdout, &scraped, &host);
    assert_scraped(&pushed.stdout, &scraped, hostile);
}
