//! The QNX semantics beyond send/receive/reply, on every transport, with
//! real client processes (this test binary re-executed, see
//! [`child_entry`]) and a server in the test process:
//!
//! - **deferred replies** (`Request::defer`): requests of three clients
//!   held and answered in reverse order from another thread, one through
//!   the in-place API; a handle dropped unanswered (its client hears `EIO`
//!   at once); a client killed while its request is held (the later reply
//!   is `Disconnected`, nothing is left behind); the bound
//!   `Options::max_held` (past it, `EAGAIN`);
//! - **call timeouts** (`Connection::call_timeout`): a call the server
//!   holds past the deadline is `TimedOut`; the server's late reply is
//!   discarded, and the client's next call gets its own answer;
//! - **pulses** (`Connection::send_pulse`): delivered in order with the
//!   calls of their connection; a server that takes nothing fills the
//!   connection's path, and the sender is told (`PulseQueueFull`) without
//!   ever waiting, then every pulse sent is received exactly once, in order.
//!
//! - **who called** (`Request::client`): each request names its connection
//!   (distinct for each client, the same for its calls and pulses, and for
//!   a deferred request as for the request it was) and the client's
//!   process, user and group as the kernel names them (none on tcp).
//!
//! No timing is asserted beyond the watchdog's liveness bound.

#[macro_use]
mod common;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use common::*;
use msgpass::{Channel, Connection, Error, Namespace, OwnedRequest, Pulse};

/// Full test path of the child entry point.
const CHILD_ENTRY: &str = "child_entry";
/// A child's number, which its requests carry.
const ID_ENV: &str = "MSGPASS_TEST_ID";
/// How long a test may run.
const LIMIT: Duration = Duration::from_secs(60);
/// The call a child makes: its number, answered with it times 1000 plus 7.
const CMD_ASK: u32 = 7;
/// A call whose answer the server holds past the client's deadline.
const CMD_SLOW: u32 = 8;
/// The call after a timeout.
const CMD_NEXT: u32 = 9;
/// The deadline of `CMD_SLOW`.
const SLOW_TIMEOUT: Duration = Duration::from_millis(300);
/// Pulses a child sends around its calls, in the order test.
const ORDER_PULSES: u32 = 6;

macro_rules! semantics_tests {
    ($($module:ident: $transport:literal),* $(,)?) => {
        $(mod $module {
            const T: &str = $transport;

            #[test]
            fn deferred_replies_out_of_order_from_another_thread() {
                super::deferred_replies_out_of_order_from_another_thread(T)
            }
            #[test]
            fn a_dropped_handle_answers_eio() {
                super::a_dropped_handle_answers_eio(T)
            }
            #[test]
            fn a_client_killed_while_held() {
                super::a_client_killed_while_held(T)
            }
            #[test]
            fn held_requests_are_bounded() {
                super::held_requests_are_bounded(T)
            }
            #[test]
            fn a_late_reply_is_never_taken_for_the_next() {
                super::a_late_reply_is_never_taken_for_the_next(T)
            }
            #[test]
            fn pulses_in_order_with_calls() {
                super::pulses_in_order_with_calls(T)
            }
            #[test]
            fn a_full_pulse_queue_is_reported_and_nothing_lost() {
                super::a_full_pulse_queue_is_reported_and_nothing_lost(T)
            }
            #[test]
            fn the_kernel_names_each_client() {
                super::the_kernel_names_each_client(T)
            }
        })*

        /// The transports instantiated, from the same invocation.
        const INSTANTIATED: &[&str] = &[$($transport),*];
    };
}

every_transport!(semantics_tests);

#[test]
fn every_transport_is_tested() {
    assert_every_transport(INSTANTIATED, "semantics_tests!");
}

// ------------------------------------------------------------ harness

/// Runs `body` for transport `t` (skipping one this machine cannot serve,
/// which under CI is a failure) in a fresh namespace, under the watchdog,
/// and checks that nothing is left behind.
fn run(t: &'static str, test: &str, body: impl FnOnce(&Namespace, &str) + Send + 'static) {
    if unavailable_here(t) {
        return;
    }
    let tns = TestNs::new();
    let ns = tns.ns.clone();
    watchdog(&format!("{t}::{test}"), LIMIT, move || body(&ns, t));
    tns.finish();
}

/// A channel `sem/0` of transport `t` in `ns`, with `opts`.
fn channel(ns: &Namespace, t: &str, opts: &msgpass::Options) -> Channel {
    let tr = msgpass::transport::by_name(t).expect("transport");
    Channel::create(ns, "sem/0", &*tr, opts).expect("create")
}

/// A client process of this test in `role`, with number `id`.
fn client(ns: &Namespace, t: &str, role: &str, id: u32) -> ChildProc {
    let id = id.to_string();
    ChildProc::spawn(
        CHILD_ENTRY,
        role,
        &[
            (CHILD_NS, ns.root()),
            (CHILD_TRANSPORT, t.as_ref()),
            (CHILD_NAME, "sem/0".as_ref()),
            (ID_ENV, id.as_ref()),
        ],
    )
}

/// Receives the next request on `chan`, skipping nothing (a test server
/// expects exactly what its clients send).
fn next(chan: &mut Channel) -> msgpass::Request<'_> {
    chan.receive().expect("receive").expect("a request")
}

/// The number a `CMD_ASK` request carries.
fn asked(data: &[u8]) -> u32 {
    u32::from_le_bytes(data.try_into().expect("4 bytes"))
}

/// The answer to `CMD_ASK` from client `id`.
fn answer_to(id: u32) -> u32 {
    id * 1000 + 7
}

// ------------------------------------------------------------ children

#[test]
fn child_entry() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    child_self_destruct();
    let (ns, name, t) = child_context();
    let id: u32 = std::env::var(ID_ENV)
        .ok()
        .and_then(|v| v.parse().ok())
        .expect("child: id");
    let mut c =
        Connection::open(&ns, &name, &*t, &msgpass::Options::default()).expect("child: connect");
    println!("MSGPASS_CONNECTED");
    match role.as_str() {
        "ask" => {
            let mut buf = [0u8; 16];
            match c.call(CMD_ASK, &id.to_le_bytes(), &mut buf) {
                Ok(n) => println!("MSGPASS_REPLY {}", asked(&buf[..n])),
                Err(Error::Remote { code }) => println!("MSGPASS_ERRNO {code}"),
                Err(e) => println!("MSGPASS_ERROR {e}"),
            }
        }
        "late" => child_late(&mut c),
        "pulses" => child_pulses(&mut c, id),
        "flood" => child_flood(&mut c),
        other => panic!("unknown child role {other}"),
    }
    thread::sleep(CHILD_LIFETIME);
}

/// A call the server answers after its deadline, then the next call.
fn child_late(c: &mut Connection) {
    let mut buf = [0u8; 16];
    match c.call_timeout(CMD_SLOW, b"slow", &mut buf, SLOW_TIMEOUT) {
        Err(Error::TimedOut { timeout }) => {
            assert_eq!(timeout, SLOW_TIMEOUT);
            println!("MSGPASS_TIMED_OUT");
        }
        other => panic!("the slow call: {other:?}"),
    }
    let n = c.call(CMD_NEXT, b"next", &mut buf).expect("the next call");
    println!("MSGPASS_NEXT {}", String::from_utf8_lossy(&buf[..n]));
}

/// Pulses and calls interleaved: pulse values count up across both, so the
/// server can check the order; a pulse that finds the path full is sent
/// again (the server takes them).
fn child_pulses(c: &mut Connection, id: u32) {
    let mut buf = [0u8; 16];
    let mut seq = 0u32;
    for round in 0..2 {
        for _ in 0..ORDER_PULSES / 2 {
            seq += 1;
            let p = Pulse {
                code: id as u8,
                value: seq,
            };
            while let Err(e) = c.send_pulse(p) {
                assert!(matches!(e, Error::PulseQueueFull), "pulse {seq}: {e}");
                thread::sleep(Duration::from_micros(200));
            }
        }
        seq += 1;
        let n = c.call(CMD_ASK, &seq.to_le_bytes(), &mut buf).expect("call");
        assert_eq!(asked(&buf[..n]), answer_to(seq), "round {round}");
    }
    println!("MSGPASS_DONE {seq}");
}

/// One call (the server has accepted us), then pulses until the path is
/// full (the server takes nothing meanwhile), each send returning at once;
/// then one call, which goes once the server drains.
fn child_flood(c: &mut Connection) {
    let mut buf = [0u8; 16];
    let n = c
        .call(CMD_ASK, &0u32.to_le_bytes(), &mut buf)
        .expect("first call");
    assert_eq!(asked(&buf[..n]), answer_to(0));
    let mut sent = 0u32;
    loop {
        match c.send_pulse(Pulse {
            code: 1,
            value: sent,
        }) {
            Ok(()) => sent += 1,
            Err(Error::PulseQueueFull) => break,
            Err(e) => panic!("pulse {sent}: {e}"),
        }
        assert!(sent < 10_000_000, "no pulse was ever refused");
    }
    println!("MSGPASS_FULL {sent}");
    let n = c
        .call(CMD_ASK, &sent.to_le_bytes(), &mut buf)
        .expect("call");
    assert_eq!(asked(&buf[..n]), answer_to(sent));
    println!("MSGPASS_DONE");
}

// ------------------------------------------------------------ deferred

fn deferred_replies_out_of_order_from_another_thread(t: &'static str) {
    run(t, "deferred", |ns, t| {
        let mut chan = channel(ns, t, &msgpass::Options::default());
        let clients: Vec<ChildProc> = (1..=3).map(|id| client(ns, t, "ask", id)).collect();
        let mut held: Vec<OwnedRequest> = Vec::new();
        while held.len() < 3 {
            let req = next(&mut chan);
            assert_eq!(req.cmd(), CMD_ASK);
            held.push(req.defer().expect("defer"));
        }
        // Answered last to first, from another thread; the first received
        // in place.
        let answerer = thread::spawn(move || {
            for (k, req) in held.into_iter().enumerate().rev() {
                let id = asked(req.data());
                let r = match k {
                    0 => req.reply_with(|buf| {
                        buf.write(0, &answer_to(id).to_le_bytes());
                        4
                    }),
                    _ => req.reply(&answer_to(id).to_le_bytes()),
                };
                r.expect("reply");
            }
        });
        answerer.join().expect("answerer");
        for (k, c) in clients.iter().enumerate() {
            let id = k as u32 + 1;
            assert_eq!(c.expect_line("MSGPASS_REPLY"), answer_to(id).to_string());
        }
        drop(clients);
        drop(chan);
    });
}

fn a_dropped_handle_answers_eio(t: &'static str) {
    run(t, "dropped", |ns, t| {
        let mut chan = channel(ns, t, &msgpass::Options::default());
        let c = client(ns, t, "ask", 1);
        let held = next(&mut chan).defer().expect("defer");
        drop(held);
        assert_eq!(c.expect_line("MSGPASS_ERRNO"), libc::EIO.to_string());
        drop(c);
    });
}

fn a_client_killed_while_held(t: &'static str) {
    run(t, "killed", |ns, t| {
        let mut chan = channel(ns, t, &msgpass::Options::default());
        let mut c = client(ns, t, "ask", 1);
        let held = next(&mut chan).defer().expect("defer");
        c.kill_and_reap();
        // The server notices the death while it waits for more: receives
        // ended by a helper that sets the stop flag a little later.
        let stop = chan.stop_flag();
        while chan.connections() > 0 {
            stop.store(false, Ordering::Relaxed);
            let stopper = {
                let stop = Arc::clone(&stop);
                thread::spawn(move || {
                    thread::sleep(Duration::from_millis(50));
                    stop.store(true, Ordering::Relaxed);
                })
            };
            assert!(chan.receive().expect("receive").is_none());
            stopper.join().expect("stopper");
        }
        assert!(matches!(
            held.reply(&answer_to(1).to_le_bytes()),
            Err(Error::Disconnected)
        ));
        drop(chan);
    });
}

fn held_requests_are_bounded(t: &'static str) {
    run(t, "bounded", |ns, t| {
        let opts = msgpass::Options {
            max_held: 2,
            ..msgpass::Options::default()
        };
        let mut chan = channel(ns, t, &opts);
        let clients: Vec<ChildProc> = (1..=3).map(|id| client(ns, t, "ask", id)).collect();
        let mut held = Vec::new();
        let mut refused = 0;
        while held.len() + refused < 3 {
            match next(&mut chan).defer() {
                Ok(h) => held.push(h),
                Err(Error::HeldLimit { max: 2 }) => refused += 1,
                Err(e) => panic!("defer: {e}"),
            }
        }
        assert_eq!((held.len(), refused), (2, 1));
        // The refused client heard EAGAIN; the held ones are answered.
        let ids: Vec<u32> = held.iter().map(|h| asked(h.data())).collect();
        for h in held {
            let id = asked(h.data());
            h.reply(&answer_to(id).to_le_bytes()).expect("reply");
        }
        for (k, c) in clients.iter().enumerate() {
            let id = k as u32 + 1;
            match ids.contains(&id) {
                true => assert_eq!(c.expect_line("MSGPASS_REPLY"), answer_to(id).to_string()),
                false => assert_eq!(c.expect_line("MSGPASS_ERRNO"), libc::EAGAIN.to_string()),
            }
        }
        drop(clients);
    });
}

// ------------------------------------------------------------ timeouts

fn a_late_reply_is_never_taken_for_the_next(t: &'static str) {
    run(t, "late", |ns, t| {
        let mut chan = channel(ns, t, &msgpass::Options::default());
        let c = client(ns, t, "late", 1);
        let slow = next(&mut chan);
        assert_eq!((slow.cmd(), slow.data()), (CMD_SLOW, &b"slow"[..]));
        let slow = slow.defer().expect("defer");
        c.expect_line("MSGPASS_TIMED_OUT");
        // Answered late: the client's next call is waiting for it.
        slow.reply(b"late").expect("late reply");
        let req = next(&mut chan);
        assert_eq!((req.cmd(), req.data()), (CMD_NEXT, &b"next"[..]));
        req.reply(b"on time").expect("reply");
        assert_eq!(c.expect_line("MSGPASS_NEXT"), "on time");
        drop(c);
    });
}

// ------------------------------------------------------------ pulses

fn pulses_in_order_with_calls(t: &'static str) {
    run(t, "pulse order", |ns, t| {
        let mut chan = channel(ns, t, &msgpass::Options::default());
        let c = client(ns, t, "pulses", 3);
        let mut seq = 0u32;
        while seq < ORDER_PULSES + 2 {
            let req = next(&mut chan);
            seq += 1;
            match req.pulse() {
                Some(p) => {
                    assert_eq!((p.code, p.value), (3, seq), "pulse out of order");
                    assert!(req.is_oneway());
                }
                None => {
                    assert_eq!(req.cmd(), CMD_ASK);
                    assert_eq!(asked(req.data()), seq, "call out of order");
                    req.reply(&answer_to(seq).to_le_bytes()).expect("reply");
                }
            }
        }
        assert_eq!(c.expect_line("MSGPASS_DONE"), seq.to_string());
        drop(c);
    });
}

fn a_full_pulse_queue_is_reported_and_nothing_lost(t: &'static str) {
    run(t, "pulse flood", |ns, t| {
        let mut chan = channel(ns, t, &msgpass::Options::default());
        let c = client(ns, t, "flood", 1);
        let first = next(&mut chan);
        assert_eq!(asked(first.data()), 0);
        first.reply(&answer_to(0).to_le_bytes()).expect("reply");
        // The server takes nothing until the client says its path is full.
        let sent: u32 = c.expect_line("MSGPASS_FULL").parse().expect("count");
        assert!(sent >= 1, "not even one pulse had room");
        for k in 0..sent {
            let req = next(&mut chan);
            let p = req.pulse().unwrap_or_else(|| panic!("pulse {k} of {sent}"));
            assert_eq!(p.value, k, "pulses lost or out of order");
        }
        let req = next(&mut chan);
        assert_eq!((req.cmd(), asked(req.data())), (CMD_ASK, sent));
        req.reply(&answer_to(sent).to_le_bytes()).expect("reply");
        c.expect_line("MSGPASS_DONE");
        drop(c);
    });
}

// ------------------------------------------------------------ who called

/// Two client processes, each sending pulses and calls: every message
/// names its own connection (one id per client, never the other's), a
/// deferred request names the same as it did, and the credentials are the
/// child's process and this user's (none on tcp, whose peer may be on
/// another host).
fn the_kernel_names_each_client(t: &'static str) {
    run(t, "client", |ns, t| {
        let mut chan = channel(ns, t, &msgpass::Options::default());
        let children: Vec<ChildProc> = (1..=2).map(|id| client(ns, t, "pulses", id)).collect();
        let pids: Vec<i32> = children.iter().map(|c| c.pid() as i32).collect();
        let mut ids: std::collections::HashMap<u32, u64> = Default::default();
        let mut calls = 0;
        while calls < 4 {
            let req = next(&mut chan);
            let who = req.client();
            let id = match req.pulse() {
                Some(p) => u32::from(p.code),
                // A call's value is its sequence: its child is known
                // from the pulses before it (sent first in each round).
                None => {
                    *ids.iter()
                        .find(|(_, &c)| c == who.id)
                        .expect("a known client")
                        .0
                }
            };
            assert_eq!(*ids.entry(id).or_insert(who.id), who.id, "child {id}'s id");
            match (t, who.creds) {
                ("tcp", None) => {}
                ("tcp", Some(c)) => panic!("tcp named a peer: {c:?}"),
                (_, Some(c)) => {
                    assert_eq!(c.pid, pids[id as usize - 1], "child {id}'s process");
                    assert_eq!((c.uid, c.gid), (oslayer::ids::euid(), oslayer::ids::egid()));
                }
                (_, None) => panic!("{t} named no credentials"),
            }
            if req.pulse().is_some() {
                continue;
            }
            calls += 1;
            let seq = asked(req.data());
            let held = req.defer().expect("defer");
            assert_eq!(held.client(), who, "a deferred request names its client");
            held.reply(&answer_to(seq).to_le_bytes()).expect("reply");
        }
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[&1], ids[&2], "two clients, two ids");
        for c in &children {
            c.expect_line("MSGPASS_DONE");
        }
    });
}
