//! Hostile peers of a stream server, spoken to in raw bytes over the
//! cross-host TCP API (the same reactor and stream wire serve uds-stream,
//! pipe and fifo): a peer that stops in the middle of a message, one that
//! trickles a byte at a time, and one that never reads its replies. Each
//! runs beside an honest client, which must keep being answered, and each
//! must be dropped once past its limit (ten ticks). Against a server with
//! a token: a peer silent inside its token, dropped after the handshake
//! timeout, and peers with a wrong token, told `NOPE` and closed, whose
//! requests are never served.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use msgpass::{Channel, Connection, Options, Token};

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

/// A raw connection that has read the server's hello and terms.
fn raw(addr: SocketAddr) -> TcpStream {
    raw_with_terms(addr).0
}

/// A raw connection that has read the server's hello, and its terms.
fn raw_with_terms(addr: SocketAddr) -> (TcpStream, u32) {
    let mut s = TcpStream::connect(addr).expect("connect");
    let mut hello = [0u8; 20];
    s.read_exact(&mut hello).expect("hello and terms");
    assert_eq!(&hello[..4], b"MSGP");
    let terms = u32::from_le_bytes([hello[16], hello[17], hello[18], hello[19]]);
    (s, terms)
}

/// A test server that asks for `token`.
fn server_with(token: &Token) -> (Server, SocketAddr) {
    let opts = Options {
        token: Some(token.clone()),
        ..options()
    };
    let chan = Channel::listen_tcp("127.0.0.1:0", &opts).expect("listen_tcp");
    let addr = chan.local_addr().expect("address");
    (Server::serve_channel(chan), addr)
}

/// `calls` honest echo calls, with `token`, beside the attacker.
fn honest_calls_with(addr: SocketAddr, token: &Token, calls: usize) {
    let opts = Options {
        token: Some(token.clone()),
        ..options()
    };
    common::honest_calls("tcp with a token", calls, HONEST_BOUND, move || {
        Connection::connect_tcp(addr, &opts).expect("honest connect")
    });
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

#[test]
fn a_peer_silent_inside_its_token_stops_nobody_and_is_dropped() {
    watchdog("silent_token", WATCHDOG, || {
        let token = Token::random().expect("token");
        let (s, addr) = server_with(&token);
        let (mut attacker, terms) = raw_with_terms(addr);
        assert_eq!(terms, 1, "a server with a token asks for it");
        attacker
            .write_all(&[0u8; 5])
            .expect("five bytes of a token");
        honest_calls_with(addr, &token, 50);
        // The handshake timeout (5 s), not ten ticks: a client on a slow
        // link may take a while to send 16 bytes.
        attacker
            .set_read_timeout(Some(HONEST_BOUND))
            .expect("timeout");
        let told = read_until_closed(&mut attacker);
        assert!(told.is_empty(), "the silent peer was told {told:?}");
        honest_calls_with(addr, &token, 5);
        s.stop();
    });
}

/// Everything `s` receives until the server closes it (end of file or
/// reset), within its read timeout.
fn read_until_closed(s: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return got,
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
            Err(e) => panic!("no close within the bound: {e}"),
        }
    }
}

#[test]
fn peers_with_a_wrong_token_are_told_no_and_never_served() {
    watchdog("wrong_token", WATCHDOG, || {
        let token = Token::random().expect("token");
        let (s, addr) = server_with(&token);
        let mut honest = Connection::connect_tcp(
            addr,
            &Options {
                token: Some(token.clone()),
                ..options()
            },
        )
        .expect("honest connect");
        for i in 0..100u8 {
            let (mut attacker, _) = raw_with_terms(addr);
            let mut wrong = *b"0123456789abcdef";
            wrong[0] = i;
            // Half send a request right behind the wrong token, in the
            // same write. The server closes with it unread, which resets
            // the connection and may discard the verdict before it is
            // read: all they may see is a prefix of NOPE, never a reply.
            let pushy = i % 2 == 1;
            let mut msg = wrong.to_vec();
            if pushy {
                msg.extend_from_slice(&head(1, 3));
                msg.extend_from_slice(b"hey");
            }
            attacker.write_all(&msg).expect("token");
            attacker
                .set_read_timeout(Some(HONEST_BOUND))
                .expect("timeout");
            let told = read_until_closed(&mut attacker);
            if pushy {
                assert!(b"NOPE".starts_with(&told), "peer {i}: told {told:?}");
            } else {
                assert_eq!(told, b"NOPE", "peer {i}: told {told:?}, then closed");
            }
        }
        let mut buf = [0u8; 64];
        let n = honest
            .call(1, b"after them", &mut buf)
            .expect("honest call");
        assert_eq!(buf[..n], echo_reply(1, b"after them", honest.max_msg())[..]);
        // The count the server took after that call (see CMD_CONNS).
        let mut b = [0u8; 8];
        honest.call(CMD_CONNS, &[], &mut b).expect("CONNS");
        assert_eq!(
            u64::from_le_bytes(b),
            1,
            "a refused peer became a connection"
        );
        drop(honest);
        s.stop();
    });
}
