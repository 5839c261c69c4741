//! The cross-host TCP API (`Channel::listen_tcp`, `Connection::connect_tcp`)
//! on loopback: round trips, errors, liveness, waiting for a late server,
//! clear errors from things that are not a msgpass server of this
//! version, and a token that lets in only its holders. The same path between two network namespaces is tested with
//! the adder programs (crates/msgbench/tests/adder_tcp_netns.rs).

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::thread;
use std::time::Duration;

use common::*;
use msgpass::{Channel, Connection, Error, Options, Token};

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
        // This version (3), family uds (1).
        let addr = impostor(b"MSGP\x03\x00\x01\x00\x00\x00\x01\x00\x01\x00\x00\x00");
        match Connection::connect_tcp(addr, &Options::default()) {
            Err(Error::WrongTransport {
                expected, found, ..
            }) => assert_eq!((expected, found.as_str()), ("tcp", "uds")),
            Err(e) => panic!("uds hello: got {e:?}"),
            Ok(_) => panic!("connected to a uds hello"),
        }
    });
}

#[test]
fn a_server_of_the_version_before_terms_is_a_clear_error() {
    watchdog("version_before_terms", WATCHDOG, || {
        // Version 2 sent its hello and served at once: a client that took
        // its first reply's header for the terms would misread everything.
        let addr = impostor(b"MSGP\x02\x00\x0a\x00\x00\x00\x01\x00\x01\x00\x00\x00");
        match Connection::connect_tcp(addr, &Options::default()) {
            Err(Error::Protocol(m)) => {
                assert!(m.contains("protocol version 2, this build speaks 3"), "{m}")
            }
            Err(e) => panic!("version 2: got {e:?}"),
            Ok(_) => panic!("connected to version 2"),
        }
        // This version, with terms this build does not know (bit 1).
        let addr =
            impostor(b"MSGP\x03\x00\x0a\x00\x00\x00\x01\x00\x01\x00\x00\x00\x02\x00\x00\x00");
        match Connection::connect_tcp(addr, &Options::default()) {
            Err(Error::Protocol(m)) => assert!(m.contains("asks for terms 0x2"), "{m}"),
            Err(e) => panic!("unknown terms: got {e:?}"),
            Ok(_) => panic!("connected despite unknown terms"),
        }
    });
}

/// Options carrying `token`.
fn with_token(token: Option<&Token>) -> Options {
    Options {
        token: token.cloned(),
        ..Options::default()
    }
}

/// The server's count of live connections, asked over `c`.
fn connections(c: &mut Connection) -> u64 {
    let mut b = [0u8; 8];
    c.call(CMD_CONNS, &[], &mut b).expect("CONNS");
    u64::from_le_bytes(b)
}

#[test]
fn a_token_lets_in_only_its_holders() {
    watchdog("token_holders", WATCHDOG, || {
        let token = Token::random().expect("token");
        let chan = Channel::listen_tcp("127.0.0.1:0", &with_token(Some(&token))).expect("listen");
        let addr = chan.local_addr().expect("address");
        let s = Server::serve_channel(chan);
        let name = format!("tcp://{addr}");
        let mut c = Connection::connect_tcp(addr, &with_token(Some(&token))).expect("holder");
        echo(&mut c, 5, b"let in");
        // No token: refused on the client's side, before anything is sent.
        match Connection::connect_tcp(addr, &with_token(None)) {
            Err(e @ Error::Refused { .. }) => assert_eq!(
                e.to_string(),
                format!("{name} refused this client: it requires a token and none was given (Options::token)")
            ),
            Err(e) => panic!("no token: got {e:?}"),
            Ok(_) => panic!("let in without a token"),
        }
        // Another token: refused by the server.
        let other = Token::random().expect("token");
        match Connection::connect_tcp(addr, &with_token(Some(&other))) {
            Err(e @ Error::Refused { .. }) => {
                assert_eq!(
                    e.to_string(),
                    format!("{name} refused this client: wrong token")
                );
                assert!(!e.to_string().contains(&other.to_hex()), "{e}");
            }
            Err(e) => panic!("wrong token: got {e:?}"),
            Ok(_) => panic!("let in with a wrong token"),
        }
        // The holder is still served, and the refused were never
        // connections of the channel.
        echo(&mut c, 6, b"still served");
        assert_eq!(connections(&mut c), 1);
        let mut again = Connection::connect_tcp(addr, &with_token(Some(&token))).expect("again");
        echo(&mut again, 7, b"and a new holder");
        drop((c, again));
        s.stop();
    });
}

#[test]
fn a_token_given_to_a_server_that_asks_none_is_not_needed() {
    watchdog("token_unasked", WATCHDOG, || {
        let (s, addr) = server();
        let token = Token::random().expect("token");
        let mut c = Connection::connect_tcp(addr, &with_token(Some(&token))).expect("connect");
        echo(&mut c, 2, b"no terms");
        drop(c);
        s.stop();
    });
}

#[test]
fn a_token_is_for_remote_tcp_only() {
    watchdog("token_local", WATCHDOG, || {
        let ns = TestNs::new();
        let opts = with_token(Some(&Token::random().expect("token")));
        for name in ["uds", "tcp", "shm"] {
            let t = msgpass::transport::by_name(name).expect("transport");
            match Channel::create(&ns.ns, "tok/0", &*t, &opts) {
                Err(e @ Error::Unsupported { .. }) => {
                    assert!(e.to_string().contains("a token (Options::token"), "{e}")
                }
                Err(e) => panic!("{name}: got {e:?}"),
                Ok(_) => panic!("{name}: a local channel took a token"),
            }
            let server = Server::start(&ns.ns, "tok/1", name);
            match Connection::open(&ns.ns, "tok/1", &*t, &opts) {
                Err(Error::Unsupported { .. }) => {}
                Err(e) => panic!("{name}: open got {e:?}"),
                Ok(_) => panic!("{name}: a local connection took a token"),
            }
            server.stop();
        }
        ns.finish();
    });
}
