//! The msgbench broker under a hostile connection, with real processes:
//! the broker (`msgbench broker-peer route`) and an honest service in
//! processes of their own, an honest client and the hostile connections
//! in this one.
//!
//! The hostile side tries what took the broker down before (issue 33):
//! one connection attaching to every free service index and sending
//! thousands of calls as one-way messages, each of which the broker held
//! (its single thread reached `max_held` and refused everyone, `EAGAIN`);
//! a connection that, handed work, attaches to a second index; and a
//! flood of forged timer pulses (each made the broker scan every call and
//! service). The honest client must have every call answered throughout,
//! the broker must report the hostile messages ignored and the second
//! attach refused. Latencies are printed, not asserted.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::{Bin, Proc, TestDir};
use msgbench::suites::broker::client::{self, ClientReport, MsgpassCaller};
use msgbench::suites::broker::proto::{RequestHeader, ATTACH, GET_INTEGER, TICK};
use msgbench::suites::broker::router::ENDPOINT;
use msgpass::{Connection, Error, Namespace, Options, Pulse};

/// Service indices the broker routes to: 0 is the honest service's.
const SERVICES: u32 = 8;
/// One-way calls the hostile connection sends.
const FLOOD: u32 = 2_000;

fn opts() -> Options {
    Options {
        wait: Some(Duration::from_secs(10)),
        ..Options::default()
    }
}

fn connect(ns: &Namespace) -> Connection {
    let t = msgpass::transport::by_name("uds").expect("uds");
    Connection::open(ns, ENDPOINT, &*t, &opts()).expect("reach the broker")
}

/// The 99th percentile of a client's calls, in microseconds.
fn p99_us(r: &ClientReport) -> f64 {
    let total: u64 = r.histogram.iter().map(|(_, n)| n).sum();
    let mut seen = 0;
    for (upper, n) in &r.histogram {
        seen += n;
        if seen * 100 >= total * 99 {
            return upper / 1e3;
        }
    }
    f64::NAN
}

/// The honest client's calls for `secs`: every one must be answered.
fn honest(caller: &mut MsgpassCaller, secs: f64, what: &str) -> ClientReport {
    let r = client::measure(caller, 1, Duration::from_secs_f64(secs));
    println!(
        "{what}: {} calls answered, {} timed out, p99 {:.1} us",
        r.calls,
        r.timeouts,
        p99_us(&r)
    );
    assert!(r.error.is_none(), "{what}: the honest client failed: {r:?}");
    assert!(r.calls > 0 && r.timeouts == 0, "{what}: {r:?}");
    r
}

/// A request to service `dest` as the broker reads it.
fn request_to(dest: u32, serial: u64) -> Vec<u8> {
    let mut out = Vec::new();
    RequestHeader {
        destination: dest,
        method: GET_INTEGER,
        serial,
    }
    .write(&mut out);
    out.extend_from_slice(&[0, 0, 0, 1]);
    out
}

/// An attach message for `index`.
fn attach_to(index: u32) -> Vec<u8> {
    let mut b = index.to_le_bytes().to_vec();
    b.extend_from_slice(&std::process::id().to_le_bytes());
    b
}

/// One connection attaches, one-way, to every free index and sends
/// [`FLOOD`] one-way calls to them. Returns the messages sent.
fn one_way_flood(ns: &Namespace) -> u64 {
    let mut c = connect(ns);
    let mut sent = 0;
    for index in 1..6 {
        c.send_oneway(ATTACH, &attach_to(index))
            .expect("one-way attach");
        sent += 1;
    }
    for k in 0..FLOOD {
        let dest = 1 + k % 5;
        c.send_oneway(GET_INTEGER, &request_to(dest, u64::from(k)))
            .expect("one-way call");
        sent += 1;
    }
    // A call, to know the broker has read them all.
    let _ = c.call_timeout(
        GET_INTEGER,
        &request_to(SERVICES + 1, 0),
        &mut [0; 64],
        Duration::from_secs(10),
    );
    sent
}

/// A connection attached to index 6 is handed work (a call of ours it
/// never answers) and then tries to attach to index 7 as well: what the
/// broker said to that.
fn second_attach(ns: &Namespace) -> Result<usize, Error> {
    let mut svc = connect(ns);
    let mut caller = connect(ns);
    let mut work = vec![0u8; 65536];
    let waiter = thread::spawn(move || {
        // Waits for an answer that never comes; the broker answers it
        // when it stops.
        let _ = caller.call(GET_INTEGER, &request_to(6, 1), &mut [0; 64]);
    });
    svc.call(ATTACH, &attach_to(6), &mut work)
        .expect("handed work");
    let second = svc.call_timeout(ATTACH, &attach_to(7), &mut work, Duration::from_secs(2));
    drop(waiter);
    second
}

/// Forged timer pulses from one connection until `stop`, counted in
/// `sent`; returns once the broker has read them all.
fn forge_ticks(ns: &Namespace, stop: &AtomicBool, sent: &AtomicU64) {
    let mut c = connect(ns);
    while !stop.load(Ordering::Relaxed) {
        match c.send_pulse(Pulse {
            code: TICK,
            value: 0,
        }) {
            Ok(()) => {
                sent.fetch_add(1, Ordering::Relaxed);
            }
            Err(Error::PulseQueueFull) => thread::yield_now(),
            Err(e) => panic!("forged pulse: {e}"),
        }
    }
    // A call goes after the pulses: once answered, all were read.
    let _ = c.call(GET_INTEGER, &request_to(SERVICES + 1, 0), &mut [0; 64]);
}

/// The broker and the honest service, as processes of their own.
fn start(ns_dir: &std::path::Path) -> (Proc, Proc) {
    let ns_arg = ns_dir.display().to_string();
    let services = SERVICES.to_string();
    let broker = Proc::start(
        Bin::Msgbench,
        [
            "broker-peer",
            "route",
            "--services",
            &services,
            "-t",
            "uds",
            "--ns",
            &ns_arg,
        ],
    );
    let service = Proc::start(
        Bin::Msgbench,
        [
            "broker-peer",
            "service",
            "--index",
            "0",
            "--via-broker",
            "-t",
            "uds",
            "--ns",
            &ns_arg,
        ],
    );
    (broker, service)
}

/// The honest client's calls under a flood of forged timer pulses;
/// returns its report and how many pulses went.
fn under_forged_ticks(ns: &Namespace, caller: &mut MsgpassCaller) -> (ClientReport, u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let forged = Arc::new(AtomicU64::new(0));
    let forger = {
        let (ns, stop, forged) = (ns.clone(), Arc::clone(&stop), Arc::clone(&forged));
        thread::spawn(move || forge_ticks(&ns, &stop, &forged))
    };
    let report = honest(caller, 2.0, "under forged timer pulses");
    stop.store(true, Ordering::Relaxed);
    forger.join().expect("forger");
    (report, forged.load(Ordering::Relaxed))
}

/// Stops the broker and reads what it says it did, as JSON values, field
/// by field: a broker that does not count ignored messages fails on its
/// own figures.
fn stop_and_read(mut broker: Proc) -> serde_json::Value {
    broker.signal(libc::SIGTERM);
    let out = broker.wait();
    let stats: serde_json::Value = out
        .stdout
        .lines()
        .last()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no broker stats: {out}"));
    println!("broker: {stats}");
    stats
}

#[test]
fn a_hostile_connection_takes_nobody_elses_share() {
    let dir = TestDir::new("broker-hostile");
    let (broker, _service) = start(&dir.ns());
    let ns = Namespace::open(dir.ns()).expect("namespace");
    let mut caller =
        MsgpassCaller::connect(&ns, ENDPOINT, "uds", 0, 0, &opts()).expect("honest client");
    client::warm_up(&mut caller, 1, 200).expect("warm-up");
    let quiet = honest(&mut caller, 1.0, "alone");

    let sent = one_way_flood(&ns);
    let held = honest(&mut caller, 1.0, "after the one-way flood");

    let second = second_attach(&ns);
    println!("a connection with work attaching to a second index: {second:?}");
    assert!(
        matches!(second, Err(Error::Remote { code }) if code == libc::EALREADY),
        "the broker let one connection attach to two indices: {second:?}"
    );

    let (ticked, forged) = under_forged_ticks(&ns, &mut caller);
    println!(
        "honest p99: {:.1} us alone, {:.1} us after the flood, {:.1} us under {forged} forged pulses",
        p99_us(&quiet),
        p99_us(&held),
        p99_us(&ticked),
    );
    drop(caller);
    let stats = stop_and_read(broker);
    let field = |k: &str| stats.get(k).and_then(|v| v.as_u64()).unwrap_or(0);
    let ignored = sent + forged;
    assert!(
        field("ignored") >= ignored,
        "the broker took {} of {ignored} one-way messages and forged pulses",
        ignored.saturating_sub(field("ignored"))
    );
    assert!(
        field("most_in_flight") <= 3,
        "one connection held {} calls in flight",
        field("most_in_flight")
    );
}
