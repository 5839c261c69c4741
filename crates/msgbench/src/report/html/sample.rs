//! Sample envelopes of every suite, generated (not measured), written with
//! the envelope's own types: for the report's tests, and for the browser
//! test's suites whose runs do not write the envelope yet. The shapes
//! follow `docs/results.md` (figure keys and metrics; ipc `histogram`,
//! rtos `reference`/`outcome`, validate `tolerance` in the rows).

use serde_json::{json, Value};

use crate::measure::env::Environment;
use crate::report::envelope::{self, Better, Envelope, Figure, Outcome};
use crate::report::ClockInfo;

/// The suites [`envelope_json`] knows.
pub const SUITES: [&str; 6] = ["adder", "ipc", "floor", "rtos", "validate", "smp"];

/// A sample envelope of `suite` as JSON text; `scale` multiplies every
/// measured value (so two samples differ). `None` for an unknown suite.
pub fn envelope_json(suite: &str, scale: f64) -> Option<String> {
    let (suite, rows, figures): (&'static str, Vec<Value>, Vec<Figure>) = match suite {
        "adder" => ("adder", Vec::new(), adder(scale)),
        "ipc" => {
            let (r, f) = ipc(scale);
            ("ipc", r, f)
        }
        "floor" => ("floor", Vec::new(), floor(scale)),
        "rtos" => {
            let (r, f) = rtos(scale);
            ("rtos", r, f)
        }
        "validate" => {
            let (r, f) = validate(scale);
            ("validate", r, f)
        }
        "smp" => {
            let (r, f) = smp(scale);
            ("smp", r, f)
        }
        _ => return None,
    };
    let command_line = vec!["msgbench".to_string(), suite.to_string(), "(sample)".into()];
    let started = envelope::now();
    let clock = ClockInfo {
        name: "clock_monotonic".into(),
        ticks_per_us: 1000.0,
        overhead_ns: 20.0,
    };
    let outcome = Outcome {
        rows: figures.len(),
        ..Outcome::default()
    };
    let env = Envelope {
        schema: envelope::SCHEMA_VERSION,
        suite,
        command_line: &command_line,
        started: &started,
        finished: envelope::now(),
        environment: &Environment::capture(),
        clock: &clock,
        floor: None,
        settings: &json!({"sample": true}),
        rows: &rows,
        figures: &figures,
        outcome: &outcome,
        notes: &notes(suite),
    };
    serde_json::to_string_pretty(&env).ok()
}

/// The run's notes: smp's are its lessons' verdicts.
fn notes(suite: &str) -> Vec<String> {
    let mut out = vec!["Generated sample, not a measurement.".to_string()];
    if suite == "smp" {
        out.extend([
            "Lesson 1 (two workers scale almost 2x): holds here: one mutex scales 1.90x from 1 to 2 workers at 64 B.".to_string(),
            "Lesson 2 (per-CPU tables beat one shared mutex): holds here: per-cpu +6.0% over mutex with 2 workers at 64 B.".to_string(),
            "Lesson 3 (large frames reach the line rate): not judged: memory ports have no line rate.".to_string(),
        ]);
    }
    out
}

fn fig(key: &[(&str, String)], metric: &str, v: f64, unit: &str, b: Better) -> Figure {
    Figure::new(key, metric, v, unit, b)
}

fn adder(scale: f64) -> Vec<Figure> {
    let mut out = Vec::new();
    for (t, base) in [("shm", 400_000.0), ("uds", 120_000.0)] {
        for (mode, m) in [("one", 1.0), ("multi", 0.85)] {
            for threads in 1..=4u32 {
                let per = scale * base * m / f64::from(threads).sqrt();
                let k = [
                    ("transport", t.to_string()),
                    ("mode", mode.to_string()),
                    ("threads", threads.to_string()),
                    ("placement", "unpinned".to_string()),
                ];
                out.push(fig(&k, "rate_per_thread", per, "msg/s", Better::Higher));
                let agg = per * f64::from(threads);
                out.push(fig(&k, "aggregate_rate", agg, "msg/s", Better::Higher));
            }
        }
    }
    out
}

fn ipc(scale: f64) -> (Vec<Value>, Vec<Figure>) {
    let (mut rows, mut figs) = (Vec::new(), Vec::new());
    for (n, t) in ["uds", "pipe"].iter().enumerate() {
        for size in [64u32, 1024, 16384] {
            for placement in ["same", "cross"] {
                let p50 = scale * (3000.0 + 1000.0 * n as f64) * (1.0 + f64::from(size) / 8192.0);
                let k = [
                    ("transport", t.to_string()),
                    ("size", size.to_string()),
                    ("placement", placement.to_string()),
                ];
                figs.push(fig(&k, "p50_ns", p50, "ns", Better::Lower));
                figs.push(fig(&k, "p99_ns", p50 * 2.5, "ns", Better::Lower));
                let hist: Vec<Value> = (0..12)
                    .map(|i| {
                        json!([
                            p50 * 0.5 * 1.25f64.powi(i),
                            10 + 40 * (6 - (i - 5).abs()).max(0)
                        ])
                    })
                    .collect();
                rows.push(json!({"transport": t, "size": size, "placement": placement,
                    "latency": {"histogram": hist}}));
            }
        }
    }
    (rows, figs)
}

fn floor(scale: f64) -> Vec<Figure> {
    let items = [
        ("cache-line ping-pong", "0->1", "round_trip", 180.0),
        ("futex ping-pong", "0->1", "round_trip", 4200.0),
        ("clock_gettime", "-", "call", 21.0),
        ("getppid", "-", "call", 95.0),
    ];
    items
        .iter()
        .map(|(what, cpus, unit, ns)| {
            let k = [("floor", what.to_string()), ("cpus", cpus.to_string())];
            fig(
                &k,
                &format!("ns_per_{unit}"),
                ns * scale,
                "ns",
                Better::Lower,
            )
        })
        .collect()
}

fn rtos(scale: f64) -> (Vec<Value>, Vec<Figure>) {
    let tests = [
        ("THR-P-SLS", "", 12.7, "12.7 / 12.1 us"),
        ("SEM-P-LAT", "2 threads", 4.1, "4.1 / 9.8 us"),
    ];
    let (mut rows, mut figs) = (Vec::new(), Vec::new());
    for (id, variant, qnx, text) in tests {
        let avg = qnx * 0.2 * scale;
        let k = [("id", id.to_string()), ("variant", variant.to_string())];
        figs.push(fig(&k, "avg", avg, "us", Better::Lower));
        figs.push(fig(&k, "max", avg * 4.0, "us", Better::Lower));
        rows.push(json!({"id": id, "variant": variant, "title": "sample",
            "reference": {"avg": qnx, "max": null, "min": null, "text": text},
            "outcome": {"kind": "timing", "unit": "us", "count": 100, "avg": avg, "min": avg / 2.0, "max": avg * 4.0}}));
    }
    rows.push(json!({"id": "MUT-B-INV", "variant": "", "title": "sample",
        "reference": {"avg": null, "max": null, "min": null, "text": "PASS"},
        "outcome": {"kind": "behaviour", "pass": true, "observed": [], "expected": ""}}));
    let k = [("id", "MUT-B-INV".to_string()), ("variant", String::new())];
    figs.push(fig(&k, "pass", 1.0, "", Better::Higher));
    (rows, figs)
}

fn validate(scale: f64) -> (Vec<Value>, Vec<Figure>) {
    let checks = [
        ("pipe round trip (perf)", 1.1),
        ("timer latency (cyclictest)", 0.9),
    ];
    let (mut rows, mut figs) = (Vec::new(), Vec::new());
    for (name, ratio) in checks {
        let r = ratio * scale;
        figs.push(fig(
            &[("check", name.to_string())],
            "ratio",
            r,
            "ratio",
            Better::Neither,
        ));
        rows.push(json!({"name": name, "ratio": r, "verdict": "agree",
            "tolerance": {"low": 0.67, "high": 1.5, "slack_us": 1.0}}));
    }
    (rows, figs)
}

fn smp(scale: f64) -> (Vec<Value>, Vec<Figure>) {
    let (mut rows, mut figs) = (Vec::new(), Vec::new());
    for size in [64usize, 1518] {
        for (forwarder, base) in [("mutex", 1.0e6), ("per-cpu", 1.06e6)] {
            for workers in 1..=2usize {
                let pps = scale * base * workers as f64 * if workers == 2 { 0.95 } else { 1.0 };
                let k = [
                    ("ports", "memory".to_string()),
                    ("forwarder", forwarder.to_string()),
                    ("workers", workers.to_string()),
                    ("size", size.to_string()),
                ];
                let repeats = vec![pps * 0.98, pps, pps * 1.01];
                figs.push(
                    fig(&k, "zero_loss_pps", pps, "pps", Better::Higher).with_repeats(repeats),
                );
                figs.push(fig(&k, "flat_out_pps", pps * 1.2, "pps", Better::Higher));
                figs.push(fig(
                    &k,
                    "lock_wait_ns_per_packet",
                    12.0 * workers as f64,
                    "ns",
                    Better::Lower,
                ));
                let reference = match (forwarder, workers, size) {
                    (_, 1, 64) => {
                        json!({"column": "1 CPU", "pps_per_port": 167_280.0, "mbit_s": 214.0, "line_rate": false})
                    }
                    ("mutex", 2, 64) => {
                        json!({"column": "2 CPU", "pps_per_port": 323_429.0, "mbit_s": 413.0, "line_rate": false})
                    }
                    ("per-cpu", 2, 64) => {
                        json!({"column": "2 CPU, per-CPU tables", "pps_per_port": 341_390.0, "mbit_s": 436.0, "line_rate": false})
                    }
                    ("mutex" | "per-cpu", 1, _) => {
                        json!({"column": "1 CPU", "pps_per_port": 81_274.0, "mbit_s": 2000.0, "line_rate": true})
                    }
                    _ => Value::Null,
                };
                rows.push(json!({"ports": "memory", "forwarder": forwarder,
                    "workers": workers, "size": size, "input_ports": 2, "pps": pps,
                    "pps_per_port": pps / 2.0, "mbit_s": pps * size as f64 * 8.0 / 1e6,
                    "capacity_pps": pps * 1.2, "reference": reference, "error": null, "skipped": false}));
            }
        }
    }
    rows.push(
        json!({"ports": "memory", "forwarder": "rwlock", "workers": 4, "size": 64,
        "input_ports": 2, "reference": null, "error": "4 workers on 2 CPUs", "skipped": true}),
    );
    (rows, figs)
}
