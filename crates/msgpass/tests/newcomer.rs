//! A newcomer is served at once, whatever the client already there does,
//! on every transport, with real processes.
//!
//! A server with one client serves it on a single-client path that does
//! not wait on the listener (see `transport/wire/doorman.rs`). Before the
//! doorman, a client calling every 50 ms kept a newcomer out for about
//! 51 s (it gave up: no hello within 5 s), and one calling every 2 ms for
//! about 1.7 s (some 850 of its calls).
//!
//! The measure is a count, not a time: how many calls of the client
//! already there the server answers between the newcomer's connect and
//! its first reply. Served at once, that is none or one (a call under
//! way); a server that looks at its listener every N requests serves
//! about N. The time it took is printed beside, for the record.
//!
//! Each transport runs three cases: another client calling every 50 ms,
//! every 2 ms, and none. The other client is a child process.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use msgpass::{Channel, Connection, Namespace, Options};

/// Full test path of the child entry point.
const CHILD_ENTRY: &str = "child_entry";
/// The other client's pause between calls, in microseconds.
const PAUSE_ENV: &str = "MSGPASS_TEST_PAUSE_US";
/// The other client's command (the newcomer's is [`NEWCOMER`]).
const OTHER: u32 = 1;
/// The newcomer's command.
const NEWCOMER: u32 = 2;
/// Newcomers per case (each connects, calls once, and leaves).
const NEWCOMERS: usize = 5;
/// Most of the other client's calls the server may answer while a
/// newcomer waits for its first reply: its call under way, and one more
/// that races with the newcomer's hello on a machine this busy. (Before
/// the doorman: about 850 at a call every 2 ms, and a newcomer refused at
/// one every 50 ms.)
const SLOW_BOUND: u64 = 2;
/// The same for a client calling every 2 ms: a few of its calls may pass
/// while the newcomer's process is scheduled on a loaded machine.
const FAST_BOUND: u64 = 25;

/// The tests here run one at a time: each counts one server's calls.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

macro_rules! newcomer_tests {
    ($($module:ident: $transport:literal),* $(,)?) => {
        $(mod $module {
            const T: &str = $transport;

            #[test]
            fn beside_a_client_calling_every_50_ms() {
                super::newcomers(T, Some(50_000), super::SLOW_BOUND)
            }
            #[test]
            fn beside_a_client_calling_every_2_ms() {
                super::newcomers(T, Some(2_000), super::FAST_BOUND)
            }
            #[test]
            fn alone() {
                super::newcomers(T, None, 0)
            }
        })*

        /// The transports instantiated, from the same invocation.
        const INSTANTIATED: &[&str] = &[$($transport),*];
    };
}

every_transport!(newcomer_tests);

#[test]
fn every_transport_has_newcomers() {
    assert_every_transport(INSTANTIATED, "newcomer_tests!");
}

/// A server counting the other client's calls in `others`; `NEWCOMER`
/// calls are answered with the count at that moment.
fn counting_server(
    ns: &Namespace,
    t: &str,
    stop: Arc<AtomicBool>,
    others: Arc<AtomicU64>,
) -> thread::JoinHandle<()> {
    let tr = msgpass::transport::by_name(t).expect("transport");
    let mut chan = Channel::create(ns, "door/0", &*tr, &Options::default()).expect("create");
    chan.set_stop_flag(stop);
    let max = chan.max_msg();
    thread::spawn(move || {
        while let Ok(Some(req)) = chan.receive() {
            let r = match req.cmd() {
                OTHER => {
                    others.fetch_add(1, Ordering::Relaxed);
                    let out = echo_reply(OTHER, req.data(), max);
                    req.reply(&out)
                }
                _ => req.reply(&others.load(Ordering::Relaxed).to_le_bytes()),
            };
            r.expect("reply");
        }
    })
}

/// Runs [`NEWCOMERS`] newcomers, one after another, beside a child
/// calling every `pause_us` microseconds (none: alone); each must be
/// answered before the server answers more than `bound` of the other
/// client's calls.
fn newcomers(t: &'static str, pause_us: Option<u64>, bound: u64) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    if unavailable_here(t) {
        return;
    }
    let tns = TestNs::new();
    let ns = tns.ns.clone();
    let label = format!("{t} beside {pause_us:?} us");
    watchdog(&label.clone(), WATCHDOG, move || {
        let stop = Arc::new(AtomicBool::new(false));
        let others = Arc::new(AtomicU64::new(0));
        let server = counting_server(&ns, t, Arc::clone(&stop), Arc::clone(&others));
        let mut other = pause_us.map(|us| {
            let us = us.to_string();
            let child = ChildProc::spawn(
                CHILD_ENTRY,
                "other",
                &[
                    (CHILD_NS, ns.root()),
                    (CHILD_TRANSPORT, t.as_ref()),
                    (CHILD_NAME, "door/0".as_ref()),
                    (PAUSE_ENV, us.as_ref()),
                ],
            );
            child.expect_line("MSGPASS_CALLING");
            child
        });
        let tr = msgpass::transport::by_name(t).expect("transport");
        let mut seen = Vec::new();
        for _ in 0..NEWCOMERS {
            seen.push(one_newcomer(&ns, &*tr, &others));
            // The server back on its single-client path before the next.
            thread::sleep(Duration::from_millis(200));
        }
        println!("{label}: {}", report(&seen));
        for (passed, _) in &seen {
            assert!(
                *passed <= bound,
                "{label}: the server answered {passed} calls of the other client while a \
                 newcomer waited (at most {bound}): {}",
                report(&seen)
            );
        }
        if let Some(c) = &mut other {
            c.kill_and_reap();
        }
        stop.store(true, Ordering::Relaxed);
        server.join().expect("server thread");
    });
    tns.finish();
}

/// One newcomer: connects, calls once. Returns how many of the other
/// client's calls the server answered meanwhile, and how long it took.
fn one_newcomer(
    ns: &Namespace,
    tr: &dyn msgpass::Transport,
    others: &AtomicU64,
) -> (u64, Duration) {
    let mut reply = [0u8; 8];
    let before = others.load(Ordering::Relaxed);
    let t0 = Instant::now();
    let mut c = Connection::open(ns, "door/0", tr, &Options::default())
        .unwrap_or_else(|e| panic!("the newcomer was not let in: {e}"));
    c.call(NEWCOMER, &[], &mut reply)
        .unwrap_or_else(|e| panic!("the newcomer's call failed: {e}"));
    let took = t0.elapsed();
    (u64::from_le_bytes(reply).saturating_sub(before), took)
}

/// The cases seen, as `calls passed / time` each.
fn report(seen: &[(u64, Duration)]) -> String {
    let each: Vec<String> = seen
        .iter()
        .map(|(n, d)| format!("{n} calls / {:.2} ms", d.as_secs_f64() * 1e3))
        .collect();
    format!("newcomers answered after {}", each.join(", "))
}

/// Entry point of child processes; does nothing in a normal test run.
#[test]
fn child_entry() {
    if std::env::var(CHILD_ENV).is_err() {
        return;
    }
    child_self_destruct();
    let (ns, name, t) = child_context();
    let pause: u64 = std::env::var(PAUSE_ENV)
        .ok()
        .and_then(|p| p.parse().ok())
        .expect("child: pause");
    let mut c = Connection::open(&ns, &name, &*t, &Options::default()).expect("child: open");
    let mut buf = vec![0u8; 64];
    let mut announced = false;
    for seq in 0u64.. {
        let req = seq.to_le_bytes();
        let n = c.call(OTHER, &req, &mut buf).expect("child: call");
        assert_eq!(&buf[..n], echo_reply(OTHER, &req, 65536), "child: reply");
        if !announced {
            println!("MSGPASS_CALLING");
            announced = true;
        }
        thread::sleep(Duration::from_micros(pause));
    }
}
