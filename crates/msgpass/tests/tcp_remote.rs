//! The cross-host TCP API (`Channel::listen_tcp`, `Connection::connect_tcp`)
//! on loopback: round trips, errors, liveness, waiting for a late server,
//! and clear errors from things that are not a msgpass server of this
//! version. The same path between two network namespaces is tested with
//! the adder programs (crates/msgbench/tests/adder_tcp_netns.rs).

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

use common::*;
use msgpass::{Channel, Connection, Error, Options};

/// A test server listening on a free loopback port.
fn server() -> (Server, SocketAddr) {
    let chan = Channel::listen_tcp("127.0.0.1:0", &Options::default()).expect("listen_tcp");
    let addr = chan.local_addr().expect("a TCP channel has an address");
    assert_ne!(addr.port(), 0);
    assert_eq!(chan.path(), PathBuf::from(format!("tcp://{addr}")));
    assert!(!chan.replaced_stale());
    (Server::serve_channel(chan), addr)
}

fn echo(c: &mut Connection, cmd: u32, req: &[u8]) {
    let mut buf = vec![0u8; MAX];
    let n = c.call(cmd, req, &mut buf).expect("echo call");
    assert_eq!(buf[..n], echo_reply(cmd, req, c.max_msg())[..]);
}

#[test]
fn round_trips_and_errors() {
    watchdog("round_trips_and_errors", WATCHDOG, || {
        let (s, addr) = server();
        let mut c = Connection::connect_tcp(addr, &Options::default()).expect("connect_tcp");
        assert_eq!(c.max_msg(), MAX);
        let mut rng = Rng::for_test("tcp_remote::round_trips_and_errors");
        for len in [0, 1, 8, 4096, MAX - 8, MAX] {
            echo(&mut c, 3, &rng.bytes(len));
        }
        for _ in 0..200 {
            let len = rng.upto(MAX);
            echo(&mut c, 7, &rng.bytes(len));
        }
        match c.call(CMD_ERR, &libc::EPERM.to_le_bytes(), &mut [0u8; 8]) {
            Err(Error::Remote { code }) => assert_eq!(code, libc::EPERM),
            other => panic!("error reply: got {other:?}"),
        }
        match c.call(1, &vec![0u8; MAX + 1], &mut [0u8; 8]) {
            Err(Error::TooLarge { len, max }) => assert_eq!((len, max), (MAX + 1, MAX)),
            other => panic!("oversized request: got {other:?}"),
        }
        echo(&mut c, 1, b"still in step");
        drop(c);
        s.stop();
    });
}

#[test]
fn server_gone_and_client_gone() {
    watchdog("server_gone_and_client_gone", WATCHDOG, || {
        let (s, addr) = server();
        // A client that goes away is dropped by the server.
        let gone = Connection::connect_tcp(addr, &Options::default()).expect("connect_tcp");
        let mut c = Connection::connect_tcp(addr, &Options::default()).expect("connect_tcp");
        echo(&mut c, 1, b"two clients");
        drop(gone);
        loop {
            let mut b = [0u8; 8];
            c.call(CMD_CONNS, &[], &mut b).expect("CONNS");
            if u64::from_le_bytes(b) == 1 {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
        // A server that closes: the client hears it, and nobody is left
        // at the address.
        s.stop();
        match c.call(1, b"anyone?", &mut [0u8; 64]) {
            Err(Error::Disconnected) => {}
            other => panic!("call to a closed server: got {other:?}"),
        }
        match Connection::connect_tcp(addr, &Options::default()) {
            Err(Error::NotFound { path }) => {
                assert_eq!(path, PathBuf::from(format!("tcp://{addr}")))
            }
            Err(e) => panic!("connect to a closed server: got {e:?}"),
            Ok(_) => panic!("connected to a closed server"),
        }
    });
}

#[test]
fn wait_for_late_server() {
    watchdog("wait_for_late_server", WATCHDOG, || {
        // Find a free port, then serve it a little later.
        let addr = SocketAddr::from(([127, 0, 0, 1], unused_port()));
        let late = thread::spawn(move || {
            thread::sleep(Duration::from_millis(300));
            let chan = Channel::listen_tcp(addr, &Options::default()).expect("listen late");
            Server::serve_channel(chan)
        });
        let opts = Options {
            wait: Some(Duration::from_secs(10)),
            ..Options::default()
        };
        let mut c = Connection::connect_tcp(addr, &opts).expect("connect waiting");
        echo(&mut c, 2, b"worth the wait");
        let s = late.join().expect("late server");
        drop(c);
        s.stop();
    });
}

/// A TCP server that writes `bytes` to its first client, then closes.
fn impostor(bytes: &'static [u8]) -> SocketAddr {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = l.local_addr().expect("address");
    thread::spawn(move || {
        if let Ok((mut s, _)) = l.accept() {
            let _ = s.write_all(bytes);
            thread::sleep(Duration::from_millis(200));
        }
    });
    addr
}

#[test]
fn not_a_msgpass_server() {
    watchdog("not_a_msgpass_server", WATCHDOG, || {
        let addr = impostor(b"SSH-2.0-OpenSSH_9.2p1 Debian\r\n");
        match Connection::connect_tcp(addr, &Options::default()) {
            Err(Error::Protocol(m)) => assert!(m.contains("not a msgpass endpoint"), "{m}"),
            Err(e) => panic!("impostor: got {e:?}"),
            Ok(_) => panic!("connected to an impostor"),
        }
        let addr = impostor(b"MSG");
        match Connection::connect_tcp(addr, &Options::default()) {
            Err(Error::Protocol(m)) => assert!(m.contains("before its hello"), "{m}"),
            Err(e) => panic!("short hello: got {e:?}"),
            Ok(_) => panic!("connected after a short hello"),
        }
    });
}

#[test]
fn version_and_transport_mismatch() {
    watchdog("version_and_transport_mismatch", WATCHDOG, || {
        // Magic, version 99, family tcp (10), max 65536, pid 1.
        let addr = impostor(b"MSGP\x63\x00\x0a\x00\x00\x00\x01\x00\x01\x00\x00\x00");
        match Connection::connect_tcp(addr, &Options::default()) {
            Err(Error::Protocol(m)) => assert!(m.contains("protocol version 99"), "{m}"),
            Err(e) => panic!("version 99: got {e:?}"),
            Ok(_) => panic!("connected to version 99"),
        }
        // This version (2), family uds (1).
        let addr = impostor(b"MSGP\x02\x00\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00");
        match Connection::connect_tcp(addr, &Options::default()) {
            Err(Error::WrongTransport {
                expected, found, ..
            }) => assert_eq!((expected, found.as_str()), ("tcp", "uds")),
            Err(e) => panic!("uds hello: got {e:?}"),
            Ok(_) => panic!("connected to a uds hello"),
        }
    });
}
