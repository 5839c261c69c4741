//! Hostile peers of a stream server, spoken to in raw bytes over the
//! cross-host TCP API (the same reactor and stream wire serve uds-stream,
//! pipe and fifo): a peer that stops in the middle of a message, one that
//! trickles a byte at a time, and one that never reads its replies. Each
//! runs beside an honest client, which must keep being answered, and each
//! must be dropped once past its limit (ten ticks).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use msgpass::{Channel, Connection, Options};

/// The ticks a test server looks around at: short, so that a peer's limit
/// (ten ticks) passes quickly.
const TICK: Duration = Duration::from_millis(20);

/// How long an honest client may wait for all its calls, however the
/// attacker behaves (generous: this bounds a hang, it does not time speed).
const HONEST_BOUND: Duration = Duration::from_secs(10);

fn options() -> Options {
    Options {
        tick: TICK,
        ..Options::default()
    }
}

fn server() -> (Server, SocketAddr) {
    let chan = Channel::listen_tcp("127.0.0.1:0", &options()).expect("listen_tcp");
    let addr = chan.local_addr().expect("address");
    (Server::serve_channel(chan), addr)
}

/// A raw connection that has read the server's hello.
fn raw(addr: SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).expect("connect");
    let mut hello = [0u8; 16];
    s.read_exact(&mut hello).expect("hello");
    assert_eq!(&hello[..4], b"MSGP");
    s
}

/// A frame header: command, payload length.
fn head(cmd: u32, len: u32) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[..4].copy_from_slice(&cmd.to_le_bytes());
    h[4..].copy_from_slice(&len.to_le_bytes());
    h
}

/// `calls` honest echo calls over TCP beside the attacker.
fn honest_calls(addr: SocketAddr, calls: usize) {
    common::honest_calls("tcp", calls, HONEST_BOUND, move || {
        Connection::connect_tcp(addr, &options()).expect("honest connect")
    });
}

/// True once the server has dropped `s` (end of file or reset), waiting
/// up to [`HONEST_BOUND`].
fn dropped(s: &mut TcpStream) -> bool {
    s.set_read_timeout(Some(Duration::from_millis(50)))
        .expect("timeout");
    let deadline = Instant::now() + HONEST_BOUND;
    let mut sink = [0u8; 65536];
    while Instant::now() < deadline {
        match s.read(&mut sink) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {}
            Err(_) => return true,
        }
    }
    false
}

#[test]
fn a_peer_silent_inside_a_header_stops_nobody_and_is_dropped() {
    watchdog("partial_header", WATCHDOG, || {
        let (s, addr) = server();
        let mut attacker = raw(addr);
        attacker.write_all(&head(1, 5)[..3]).expect("three bytes");
        honest_calls(addr, 50);
        assert!(dropped(&mut attacker), "the silent peer was kept");
        honest_calls(addr, 5);
        s.stop();
    });
}

#[test]
fn a_peer_silent_inside_a_payload_stops_nobody_and_is_dropped() {
    watchdog("partial_payload", WATCHDOG, || {
        let (s, addr) = server();
        let mut attacker = raw(addr);
        // A large message, of which a header and a little payload come.
        attacker.write_all(&head(1, 60_000)).expect("header");
        attacker.write_all(&[9u8; 1000]).expect("some payload");
        honest_calls(addr, 50);
        assert!(dropped(&mut attacker), "the silent peer was kept");
        s.stop();
    });
}

#[test]
fn a_peer_trickling_a_byte_at_a_time_stops_nobody_and_is_dropped() {
    watchdog("trickle", WATCHDOG, || {
        let (s, addr) = server();
        let mut attacker = raw(addr);
        let stop = Arc::new(AtomicBool::new(false));
        let trickling = {
            let stop = Arc::clone(&stop);
            let mut w = attacker.try_clone().expect("clone");
            thread::spawn(move || {
                let mut msg = head(1, 1000).to_vec();
                msg.extend_from_slice(&[5u8; 1000]);
                for b in msg {
                    if stop.load(Ordering::Relaxed) || w.write_all(&[b]).is_err() {
                        return;
                    }
                    thread::sleep(TICK / 2);
                }
            })
        };
        honest_calls(addr, 50);
        assert!(dropped(&mut attacker), "the trickling peer was kept");
        stop.store(true, Ordering::Relaxed);
        trickling.join().expect("trickler");
        s.stop();
    });
}

#[test]
fn a_peer_that_never_reads_its_replies_stops_nobody_and_is_dropped() {
    watchdog("never_reads", WATCHDOG, || {
        let (s, addr) = server();
        let attacker = raw(addr);
        // Requests for large replies, as fast as they go, never a read:
        // the replies fill the socket buffers and the server's send waits.
        let flooding = {
            let mut w = attacker.try_clone().expect("clone");
            thread::spawn(move || {
                let mut msg = head(1, 60_000).to_vec();
                msg.extend_from_slice(&[3u8; 60_000]);
                let deadline = Instant::now() + HONEST_BOUND;
                // Ends when the server drops us (the write fails).
                while Instant::now() < deadline {
                    if w.write_all(&msg).is_err() {
                        return true;
                    }
                }
                false
            })
        };
        honest_calls(addr, 50);
        assert!(
            flooding.join().expect("flooder"),
            "the non-reading peer was kept"
        );
        drop(attacker);
        honest_calls(addr, 5);
        s.stop();
    });
}
