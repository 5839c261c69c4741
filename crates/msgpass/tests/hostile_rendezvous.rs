//! Hostile clients of the rendezvous transports, speaking raw bytes on the
//! descriptors the server hands out: one that stops inside a message
//! (stream transports), and one that sends requests and never reads the
//! replies (every transport whose reply can wait for room). Each runs
//! beside an honest client of the same endpoint, which must keep being
//! answered, and each must be dropped (its session hung up) once past its
//! limit of ten ticks.

mod common;

use std::os::fd::AsFd;
use std::thread;
use std::time::{Duration, Instant};

use common::*;

const TICK: Duration = Duration::from_millis(20);
/// Bounds a hang; does not time speed.
const BOUND: Duration = Duration::from_secs(10);

/// A frame: header (command 1, an echo), then `len` bytes.
fn frame(len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(8 + len);
    f.extend_from_slice(&1u32.to_le_bytes());
    f.extend_from_slice(&(len as u32).to_le_bytes());
    f.resize(8 + len, 7);
    f
}

#[test]
fn a_client_silent_inside_a_message_stops_nobody() {
    // (transport, index of the descriptor requests are written to)
    for (transport, req_fd) in [("uds-stream", 0), ("pipe", 0)] {
        watchdog(transport, WATCHDOG, move || {
            let t = TestNs::new();
            let (s, path) = raw_server(&t, transport, TICK);
            let attacker = raw_client(&path);
            let w = attacker.fds[req_fd].as_fd();
            if transport == "pipe" {
                oslayer::pipe::set_packet_mode(w).expect("packets");
            }
            // A header and part of a payload: a whole packet, then silence.
            oslayer::fd::write_all(w, &[&frame(6000)[..4096]]).expect("part");
            honest_calls_at(t.dir(), transport, 50, TICK, BOUND);
            assert!(
                hung_up(&attacker.session, BOUND),
                "{transport}: silent client kept"
            );
            drop(attacker);
            s.stop();
            t.finish();
        });
    }
}

#[test]
fn a_client_that_never_reads_its_replies_stops_nobody() {
    // (transport, index of the request descriptor, None: the session)
    for (transport, req_fd) in [
        ("uds", None),
        ("uds-stream", Some(0)),
        ("uds-dgram", Some(0)),
        ("pipe", Some(0)),
    ] {
        watchdog(transport, WATCHDOG, move || {
            let t = TestNs::new();
            let (s, path) = raw_server(&t, transport, TICK);
            let attacker = raw_client(&path);
            let w = match req_fd {
                Some(i) => attacker.fds[i].try_clone().expect("dup"),
                None => attacker.session.try_clone().expect("dup"),
            };
            if transport == "pipe" {
                oslayer::pipe::set_packet_mode(w.as_fd()).expect("packets");
            }
            // Requests for 4000-byte replies, until the server drops us
            // (a send fails) or the bound passes.
            let flood = thread::spawn(move || {
                let f = frame(4000);
                let deadline = Instant::now() + BOUND;
                while Instant::now() < deadline {
                    let sent = match req_fd {
                        Some(_) if transport == "pipe" => {
                            oslayer::fd::write_all_within(w.as_fd(), &[&f], BOUND)
                        }
                        _ => oslayer::socket::send_all_within(w.as_fd(), &[&f], BOUND),
                    };
                    if sent.is_err() {
                        return;
                    }
                }
            });
            honest_calls_at(t.dir(), transport, 50, TICK, BOUND);
            assert!(
                hung_up(&attacker.session, BOUND),
                "{transport}: non-reading client kept"
            );
            drop(attacker);
            flood.join().expect("flood");
            s.stop();
            t.finish();
        });
    }
}
