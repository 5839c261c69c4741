//! Sample envelopes of every suite, generated (not measured), written with
//! the envelope's own types, for the report's unit tests: they render
//! every suite's section in milliseconds, where a real run of each would
//! take minutes (the browser test, `tests/report_browser.rs`, loads a
//! report of real runs). Every suite's rows are its own row type,
//! serialised (adder's section reads figures only).

use serde_json::{json, Value};

use crate::measure::env::Environment;
use crate::measure::hist::LatencySummary;
use crate::pingpong::floor::{FloorKind, FloorReport, FloorRow};
use crate::results::envelope::{self, Better, Envelope, Figure, Outcome};
use crate::results::ClockInfo;
use crate::suites::broker::dbus::DbusLib;
use crate::suites::broker::measure::CpuSplit;
use crate::suites::broker::{BrokerRow, Via};
use crate::suites::ipc::{Api, Placement, Row};
use crate::suites::{adder, rtos, validate};

/// The suites [`envelope_json`] knows.
pub const SUITES: [&str; 7] = ["adder", "ipc", "floor", "rtos", "validate", "smp", "broker"];

/// A sample envelope of `suite` as JSON text; `scale` multiplies every
/// measured value (so two samples differ). `None` for an unknown suite.
pub fn envelope_json(suite: &str, scale: f64) -> Option<String> {
    let (suite, rows, figures): (&'static str, Vec<Value>, Vec<Figure>) = match suite {
        "adder" => {
            let (r, f) = adder(scale);
            ("adder", r, f)
        }
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
        "broker" => {
            let (r, f) = broker(scale);
            ("broker", r, f)
        }
        _ => return None,
    };
    let command_line = vec!["msgbench".to_string(), suite.to_string(), "(sample)".into()];
    let started = envelope::now();
    let clock = ClockInfo {
        name: "clock_monotonic".into(),
        ticks_per_us: 1000.0,
        overhead_ns: 20.0,
        requested: "auto".into(),
    };
    let outcome = Outcome {
        rows: figures.len(),
        ..Outcome::default()
    };
    let floor = (suite == "ipc").then(|| floor_report(scale));
    let env = Envelope {
        schema: envelope::SCHEMA_VERSION,
        suite,
        command_line: &command_line,
        started: &started,
        finished: envelope::now(),
        environment: &Environment::capture(),
        clock: &clock,
        floor: floor.as_ref(),
        settings: &json!({"sample": true}),
        rows: &rows,
        figures: &figures,
        outcome: &outcome,
        notes: &notes(),
        peers: &[],
        verdicts: &verdicts(suite),
    };
    serde_json::to_string_pretty(&env).ok()
}

/// The run's kept answers, as each suite's `Suite::judge` words them for
/// the sample's rows on a 2-CPU machine.
fn verdicts(suite: &str) -> Vec<String> {
    let answers: &[&str] = match suite {
        "adder" => &[
            "With each client/server pair pinned, uds scaled best (98% at 2 threads) and every transport kept at least 98% of linear scaling, so nothing suggests a global lock; threads of one server process scaled like separate processes.",
            "Server models compared by aggregate rate at the most threads measured up to one per CPU (2 CPUs), with each client/server thread pair pinned: on shm at 2 threads, one process with a path per thread and a thread pool on one path tied for best (within 5%: 784,000 msg/s for one process with a path per thread and 744,800 msg/s for a thread pool on one path), ahead of 666,400 msg/s for a process per thread; on uds at 2 threads, one process with a path per thread and a thread pool on one path tied for best (within 5%: 235,200 msg/s for one process with a path per thread and 223,440 msg/s for a thread pool on one path), ahead of 199,920 msg/s for a process per thread.",
        ],
        "ipc" => &[
            "Same CPU (client and server pinned to one CPU), two processes, lowest p50: uds at every size. By size: 64 B: uds 3.02us (a blocking transport); 256 B: uds 3.00us (a blocking transport); 256 B beside 1000 idle clients: uds 23.0us (a blocking transport); 256 B beside 10000 idle clients: uds 203us (a blocking transport); 1024 B: uds 3.38us (a blocking transport); 16384 B: uds 9.00us (a blocking transport).",
            "Cross CPU (client and server pinned to two CPUs), two processes, lowest p50: uds at every size. By size: 64 B: uds 3.02us (a blocking transport); 1024 B: uds 3.38us (a blocking transport); 16384 B: uds 9.00us (a blocking transport).",
        ],
        "rtos" => &["Summary: 1 passed, 0 failed, 0 inconclusive, 2 measured, 0 skipped, 0 errors"],
        "validate" => &["2 of 2 comparisons agree with the reference tool within their tolerance; 0 DISAGREE, 0 missing (tool not installed), 0 error."],
        "smp" => &[
            "Lesson 1 (two workers scale almost 2x): holds here: one mutex scales 1.90x from 1 to 2 workers at 64 B.",
            "Lesson 2 (per-CPU tables beat one shared mutex): holds here: per-cpu +6.0% over mutex with 2 workers at 64 B.",
            "Lesson 3 (large frames reach the line rate): not judged: memory ports have no line rate.",
        ],
        "broker" => &[
            "GetInteger(1), libdbus (the study's library): dbus-daemon takes 56.0us per call (the study on QNX 6.4: 12000 us), 31.0us of it the daemon's own (55%). A call through dbus-daemon: the daemon 31.0us (55%, against 25.0us peer to peer), the library 17.0us (30%: marshalling 2.10us, dispatch 14.9us), the transport 8.00us (14%, a direct uds call); validating both bodies would explain 1.20us of the daemon's share (4%, measured in our broker). So with libdbus the daemon is the largest part of a call through dbus-daemon (55%), more than the library (30%) or the transport (14%).",
            "GetInteger(1), libdbus: dbus-daemon adds 31.0us per call over peer-to-peer D-Bus (56.0us against 25.0us), 4% of it explained by validating the bodies. Validating both bodies in the D-Bus format takes about 1.20us (measured in our broker). The header-routing broker over uds takes 14.8us, 3.8x faster than dbus-daemon. So the daemon's time is not validation (4% of it): it is the second leg and the daemon's own per-message work.",
            "Goal, broker within 2.2x of direct over uds (GetInteger(1)): met: 1.85x (14.8us against 8.00us).",
            "Goal, broker over uds at least 5x faster than dbus-daemon (GetInteger(1), libdbus): NOT met: 3.8x (14.8us against 56.0us).",
        ],
        _ => &[],
    };
    answers.iter().map(|a| a.to_string()).collect()
}

/// The run's notes.
fn notes() -> Vec<String> {
    vec!["Generated sample, not a measurement.".to_string()]
}

fn fig(key: &[(&str, String)], metric: &str, v: f64, unit: &str, b: Better) -> Figure {
    Figure::new(key, metric, v, unit, b)
}

/// Adder rows and figures: shm and uds, every mode, 1 to 4 threads,
/// pinned (scaling 98% per added thread) and unpinned (rate per thread
/// falling as 1/sqrt(threads)).
fn adder(scale: f64) -> (Vec<Value>, Vec<Figure>) {
    let (mut rows, mut out) = (Vec::new(), Vec::new());
    for placement in ["pinned", "unpinned"] {
        for (t, base) in [("shm", 400_000.0), ("uds", 120_000.0)] {
            for (mode, m) in [("one", 1.0), ("multi", 0.85), ("pool", 0.95)] {
                for threads in 1..=4u32 {
                    let x = f64::from(threads);
                    let eff = if placement == "pinned" {
                        1.0 - 0.02 * (x - 1.0)
                    } else {
                        1.0 / x.sqrt()
                    };
                    let per = scale * base * m * eff;
                    let agg = per * x;
                    let k = [
                        ("transport", t.to_string()),
                        ("mode", mode.to_string()),
                        ("threads", threads.to_string()),
                        ("placement", placement.to_string()),
                    ];
                    out.push(fig(&k, "rate_per_thread", per, "msg/s", Better::Higher));
                    out.push(fig(&k, "aggregate_rate", agg, "msg/s", Better::Higher));
                    rows.push(adder_row(
                        t,
                        placement,
                        mode,
                        threads,
                        (per, agg, scale * base * m),
                    ));
                }
            }
        }
    }
    (typed(&rows), out)
}

/// An adder row as the suite writes it: `threads` client threads of
/// 100,000 round trips at `rates` (per thread, aggregate, per thread at
/// one thread).
fn adder_row(
    t: &str,
    placement: &str,
    mode: &str,
    threads: u32,
    rates: (f64, f64, f64),
) -> adder::Row {
    use crate::devctl::client::ClientRun;
    let (per, agg, one) = rates;
    let run = ClientRun {
        transport: t.into(),
        api: crate::devctl::options::Api::InPlace,
        samples: 100_000,
        threads: Vec::new(),
        busy: None,
        ave_duration_ns: 1e14 / per,
        rate_per_thread: per,
        aggregate_rate: agg,
        latency: None,
        histogram: Vec::new(),
    };
    adder::Row {
        transport: t.into(),
        placement: if placement == "pinned" {
            adder::Placement::Pinned
        } else {
            adder::Placement::Unpinned
        },
        mode: match mode {
            "one" => adder::Mode::One,
            "multi" => adder::Mode::Multi,
            _ => adder::Mode::Pool,
        },
        threads,
        api: crate::devctl::options::Api::InPlace,
        error: None,
        measured: Some(adder::Measured::new(threads, run, None, Some(one))),
    }
}

/// An ipc run's floor: a cache line and a futex round trip between
/// threads, on one CPU and on two.
fn floor_report(scale: f64) -> FloorReport {
    let row = |kind: FloorKind, same: bool, ns: f64| FloorRow {
        kind,
        what: kind.describe(Some(same)).to_string(),
        unit: "round_trip".into(),
        cpus: Some(if same { (0, 0) } else { (0, 1) }),
        same_cpu: Some(same),
        count: 1000,
        ns: ns * scale,
        spread: 0.05,
        runs_ns: vec![ns * scale; 5],
    };
    FloorReport {
        quick: true,
        runs_per_figure: 5,
        cpus: vec![0, 1],
        rows: vec![
            row(FloorKind::CachelineThreads, true, 900.0),
            row(FloorKind::CachelineThreads, false, 180.0),
            row(FloorKind::Futex, true, 1500.0),
            row(FloorKind::Futex, false, 2100.0),
        ],
    }
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
                    ("layout", "process".to_string()),
                ];
                figs.push(fig(&k, "p50_ns", p50, "ns", Better::Lower));
                figs.push(fig(&k, "p99_ns", p50 * 2.5, "ns", Better::Lower));
                rows.push(ipc_row(t, size, placement, p50));
            }
        }
        // The scale axes at 256 bytes (a size of their own: a run with
        // --idle-clients has no row without the key), on one CPU.
        let k = |axis: &'static str, n: u32| {
            [
                ("transport", t.to_string()),
                ("size", "256".to_string()),
                ("placement", "same".to_string()),
                ("layout", "process".to_string()),
                (axis, n.to_string()),
            ]
        };
        for idle in [0u32, 1000, 10000] {
            let p50 = scale * (3000.0 + 20.0 * f64::from(idle));
            figs.push(fig(
                &k("idle_clients", idle),
                "p50_ns",
                p50,
                "ns",
                Better::Lower,
            ));
        }
        for n in [1u32, 8, 64] {
            let rate = scale * 300_000.0 / (1.0 + 0.01 * f64::from(n));
            let k = k("clients", n);
            figs.push(fig(
                &k,
                "aggregate_msgs_per_s",
                rate,
                "msg/s",
                Better::Higher,
            ));
            figs.push(fig(
                &k,
                "slowest_over_fastest",
                0.9,
                "ratio",
                Better::Higher,
            ));
        }
    }
    (rows, figs)
}

/// A measured ipc row of two processes, as the suite writes it: its
/// distribution around `p50`.
fn ipc_row(transport: &str, size: u32, placement: &str, p50: f64) -> Value {
    let placement = match placement {
        "same" => Placement::Same,
        _ => Placement::Cross,
    };
    let mut row = Row::new(transport, transport, Api::InPlace, size as usize, placement);
    row.histogram = (0..12)
        .map(|i| {
            let n = 10 + 40 * (6 - (i - 5i32).abs()).max(0);
            (p50 * 0.5 * 1.25f64.powi(i), n as u64)
        })
        .collect();
    serde_json::to_value(row).unwrap_or_default()
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
    let mut results = Vec::new();
    for (id, variant, qnx, text) in tests {
        let avg = qnx * 0.2 * scale;
        let samples = vec![avg / 2.0, avg, avg, avg * 1.5, avg * 4.0];
        let timing = rtos::Timing::of(rtos::Unit::Us, samples);
        let outcome = timing.map_or(
            rtos::Outcome::Skipped {
                reason: "no samples".into(),
            },
            rtos::Outcome::Timing,
        );
        results.push(rtos_result(
            id,
            variant,
            rtos::Reference::avg(qnx, text),
            outcome,
        ));
    }
    results.push(rtos_result(
        "MUT-B-INV",
        "",
        rtos::Reference::text("PASS"),
        rtos::Outcome::Behaviour {
            pass: true,
            observed: Vec::new(),
            expected: String::new(),
        },
    ));
    let figs = results.iter().flat_map(rtos::result_figures).collect();
    (typed(&results), figs)
}

/// An rtos result as the suite writes it.
fn rtos_result(
    id: &'static str,
    variant: &str,
    reference: rtos::Reference,
    outcome: rtos::Outcome,
) -> rtos::TestResult {
    rtos::TestResult {
        id: id.into(),
        group: rtos::Group::THR,
        title: "sample".into(),
        variant: variant.into(),
        substitute: None,
        reference: Some(reference),
        note: None,
        outcome,
    }
}

fn validate(scale: f64) -> (Vec<Value>, Vec<Figure>) {
    let checks = [
        ("pipe round trip (perf)", 1.1),
        ("timer latency (cyclictest)", 0.9),
    ];
    let rows: Vec<validate::Row> = checks
        .into_iter()
        .map(|(name, ratio)| {
            let ours = 10.0 * ratio * scale;
            validate::Row {
                name: name.into(),
                tool: "sample".into(),
                command: "sample".into(),
                runs: 4,
                ours_method: "sample".into(),
                placement: "CPU 0".into(),
                priority: "normal".into(),
                reference: Some(validate::Figure::avg(10.0)),
                ours: Some(validate::Figure::avg(ours)),
                ratio: Some(ours / 10.0),
                tolerance: validate::Tolerance {
                    low: 0.67,
                    high: 1.5,
                    slack_us: 1.0,
                },
                verdict: validate::Verdict::Agree,
                note: None,
            }
        })
        .collect();
    let figs = rows.iter().flat_map(validate::row_figures).collect();
    (typed(&rows), figs)
}

/// Rows as the envelope holds them.
fn typed<T: serde::Serialize>(rows: &[T]) -> Vec<Value> {
    rows.iter()
        .map(|r| serde_json::to_value(r).unwrap_or_default())
        .collect()
}

fn smp(scale: f64) -> (Vec<Value>, Vec<Figure>) {
    use crate::suites::smp::{Forwarder, LockStats, PortsMode, SmpRow, Variant};
    let mut rows = Vec::new();
    for size in [64usize, 1518] {
        for (table, base) in [(Variant::Mutex, 1.0e6), (Variant::PerCpu, 1.06e6)] {
            for workers in 1..=2usize {
                let pps = scale * base * workers as f64 * if workers == 2 { 0.95 } else { 1.0 };
                let f = Forwarder::Table(table);
                let mut r = SmpRow::new(PortsMode::Memory, f, Some(workers), size, 2, pps);
                r.repeats_pps = vec![pps * 0.98, pps, pps * 1.01];
                r.capacity_pps = Some(pps * 1.2);
                let lock = LockStats {
                    acquisitions: 1000,
                    sampled: 1000,
                    wait_ns: 12_000 * workers as u64,
                    ..LockStats::default()
                };
                r.locks = vec![lock; workers];
                rows.push(r);
            }
        }
    }
    let f = Forwarder::Table(Variant::RwLock);
    let mut skipped = SmpRow::new(PortsMode::Memory, f, Some(4), 64, 2, 0.0);
    skipped.error = Some("4 workers on 2 CPUs".into());
    skipped.skipped = true;
    rows.push(skipped);
    let figs = crate::suites::smp::render::figures(&rows);
    (typed(&rows), figs)
}

/// A broker arrangement in the sample: via, transport, p50 (us) at
/// numInts 1 and 256, CPU (client, middle, service ns) at numInts 1.
type Arrangement = (Via, Option<&'static str>, [f64; 2], [f64; 3]);

const BROKER: [Arrangement; 5] = [
    (Via::Direct, Some("uds"), [8.0, 9.0], [3000.0, 0.0, 3000.0]),
    (
        Via::Broker,
        Some("uds"),
        [14.8, 16.5],
        [3100.0, 5200.0, 3000.0],
    ),
    (
        Via::BrokerValidate,
        Some("uds"),
        [16.0, 20.0],
        [3100.0, 6400.0, 3000.0],
    ),
    (Via::DbusP2p, None, [25.0, 30.0], [9000.0, 0.0, 8000.0]),
    (
        Via::DbusDaemon,
        None,
        [56.0, 64.0],
        [9500.0, 21000.0, 8500.0],
    ),
];

/// A broker row measured at `p50` ns with CPU `cpu` (client, middle,
/// service ns), as the suite writes it.
fn broker_row(via: Via, transport: Option<&str>, ints: u32, p50: f64, cpu: [f64; 3]) -> BrokerRow {
    let mut r = BrokerRow::empty(via, transport.map(Into::into), ints, 1);
    let calls_per_s = 1e9 / p50;
    r.calls = (calls_per_s * 0.25) as u64;
    r.calls_per_s = calls_per_s;
    r.latency = LatencySummary {
        count: r.calls,
        min_ns: p50 * 0.8,
        mean_ns: p50 * 1.1,
        stddev_ns: p50 * 0.2,
        p50_ns: p50,
        p90_ns: p50 * 1.5,
        p99_ns: p50 * 3.0,
        p999_ns: p50 * 6.0,
        max_ns: p50 * 20.0,
    };
    r.histogram = vec![
        (p50 * 0.9, 10),
        (p50 * 1.1, 80),
        (p50 * 3.0, 9),
        (p50 * 20.0, 1),
    ];
    let [client, middle, service] = cpu;
    r.cpu_ns_per_call = CpuSplit {
        client,
        middle,
        service,
    };
    r.p50_repeats_ns = vec![p50 * 1.02, p50, p50 * 0.99];
    r.calls_per_s_repeats = r.p50_repeats_ns.iter().map(|p| 1e9 / p).collect();
    r
}

fn broker(scale: f64) -> (Vec<Value>, Vec<Figure>) {
    // The D-Bus rows on libdbus, and on zbus 1.5x slower.
    let cases: Vec<_> = BROKER
        .iter()
        .flat_map(|&(via, transport, p50s, cpu)| match transport {
            Some(_) => vec![(via, transport, None, p50s, cpu)],
            None => vec![
                (via, None, Some(DbusLib::Libdbus), p50s, cpu),
                (via, None, Some(DbusLib::Zbus), p50s.map(|p| p * 1.5), cpu),
            ],
        })
        .collect();
    let mut rows = Vec::new();
    for (n, ints) in [1u32, 256].into_iter().enumerate() {
        for &(via, transport, lib, p50s, cpu) in &cases {
            let cpu = cpu.map(|c| scale * c * (1.0 + n as f64 * 0.1));
            let mut r = broker_row(via, transport, ints, scale * p50s[n] * 1e3, cpu);
            r.dbus_lib = lib;
            r.routing_ns = via.via_broker().then_some(scale * 1500.0);
            r.validate_ns = (via == Via::BrokerValidate).then_some(scale * 1200.0);
            r.marshal_ns = (via == Via::DbusP2p).then_some(scale * 2100.0);
            rows.push(r);
        }
        let mut skipped = BrokerRow::empty(Via::DbusBroker, None, ints, 1);
        skipped.dbus_lib = Some(DbusLib::Libdbus);
        skipped.skipped = Some("dbus-broker-launch not installed".into());
        rows.push(skipped);
    }
    let figs = crate::suites::broker::render::figures(&rows);
    (typed(&rows), figs)
}
