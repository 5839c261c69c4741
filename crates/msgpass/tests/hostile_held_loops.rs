//! Hostile peers against deferred replies and pulses on the transports
//! with their own server loops: sysv-msg, signal and fuse (see
//! `hostile_held.rs` for the others).
//!
//! - **Many requests while one is held**: a raw sysv-msg client posts
//!   thousands of requests in the shared request queue while the server
//!   holds its first; a raw fuse client calls from a hundred threads on
//!   one open file while the server holds the first call. The server takes
//!   one request of that connection at a time (sysv-msg answers the rest
//!   `EAGAIN`; fuse keeps one more waiting and answers the rest `EAGAIN`
//!   at once), and an honest client beside it is served.
//! - **Malformed pulses** drop their connection (sysv-msg: its session is
//!   hung up; fuse: the file is answered `ENOTCONN` from then on); the
//!   server serves on.
//! - **Pulse floods** through the library on all three, beside an honest
//!   client.
//!
//! signal's raw protocol (shared areas and signals) is not spoken by hand
//! here: its bound is structural (one message in the client's area).

#[macro_use]
mod common;

use std::os::fd::{AsFd, OwnedFd};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::Duration;

use common::holder::{head, pulse_flood, Holder, HOSTILE};
use common::*;
use msgpass::Pulse;
use oslayer::sysv_msg::{MsgBuf, MsgFlags, MsgQueueId, MsgType};

/// How long a test may run.
const LIMIT: Duration = Duration::from_secs(60);
/// How long one step may take: well within [`LIMIT`], so that a failing
/// fuse test panics and unwinds (dropping its server, which ends the raw
/// calls still blocked) before the watchdog ends the process with them
/// stuck on a server of its own.
const STEP: Duration = Duration::from_secs(20);
/// The wire code of a pulse.
const PULSE_WIRE: u32 = msgpass::PULSE | msgpass::ONEWAY;

/// Runs `body` for `transport` in a fresh namespace under the watchdog
/// (skipped where the transport cannot run); nothing may be left behind.
fn run(transport: &str, test: &str, body: impl FnOnce(&TestNs) + Send + 'static) {
    if unavailable_here(transport) {
        return;
    }
    let tns = TestNs::new();
    let (tx, rx) = mpsc::channel();
    watchdog(&format!("{transport} {test}"), LIMIT, move || {
        body(&tns);
        let _ = tx.send(tns);
    });
    rx.recv().expect("namespace back").finish();
}

// ------------------------------------------------------------ sysv-msg

/// A raw sysv-msg client: its queues and message type, from the hello.
struct RawSysv {
    raw: RawClient,
    req_q: MsgQueueId,
    reply_q: MsgQueueId,
    mtype: MsgType,
}

impl RawSysv {
    fn connect(path: &std::path::Path) -> RawSysv {
        let raw = raw_client(path);
        let e = &raw.extra;
        let id = |i: usize| MsgQueueId(i32::from_le_bytes(e[i..i + 4].try_into().expect("id")));
        let (req_q, reply_q) = (id(0), id(4));
        let mtype = MsgType::from_le_bytes(e[8..16].try_into().expect("mtype"));
        RawSysv {
            raw,
            req_q,
            reply_q,
            mtype,
        }
    }

    /// Sends `code` and `data` without waiting; false when the queue is
    /// full (or gone).
    fn send(&self, code: u32, data: &[u8]) -> bool {
        let mut buf = MsgBuf::new(8 + data.len());
        buf.set_mtype(self.mtype);
        buf.text_mut()[..8].copy_from_slice(&head(code, data.len()));
        buf.text_mut()[8..].copy_from_slice(data);
        oslayer::sysv_msg::send(self.req_q, &buf, 8 + data.len(), MsgFlags::NOWAIT).is_ok()
    }
}

#[test]
fn sysv_msg_thousands_of_requests_while_one_is_held() {
    run("sysv-msg", "requests while held", |t| {
        let (server, path) = Holder::start(t, "sysv-msg");
        let raw = RawSysv::connect(&path);
        assert!(raw.send(1, HOSTILE), "the first request");
        server.wait_taken(1, STEP);
        // Thousands more, as fast as the shared queue takes them.
        let mut sent = 0;
        for _ in 0..5000 {
            if raw.send(1, HOSTILE) {
                sent += 1;
            } else {
                thread::sleep(Duration::from_micros(100));
            }
        }
        honest_calls_at(t.dir(), "sysv-msg", 50, Duration::from_millis(20), LIMIT);
        assert_eq!(server.taken(), 1, "{sent} more sent while one was held");
        // What the hostile client got back: refusals only (or nothing, if
        // its connection was dropped for a full reply queue).
        let mut reply = MsgBuf::new(64);
        while let Ok(n) = oslayer::sysv_msg::receive(raw.reply_q, &mut reply, 0, MsgFlags::NOWAIT) {
            assert_eq!(&reply.text()[..n], &head(libc::EAGAIN as u32, 0));
        }
        drop(raw);
        drop(server);
    });
}

#[test]
fn sysv_msg_malformed_pulses_drop_their_connection() {
    run("sysv-msg", "malformed pulses", |t| {
        let (server, path) = Holder::start(t, "sysv-msg");
        for payload in [
            &[1u8, 2, 3][..],
            &[0u8; 9][..],
            &[1u8, 0, 9, 0, 2, 0, 0, 0][..],
        ] {
            let raw = RawSysv::connect(&path);
            assert!(raw.send(PULSE_WIRE, payload), "sent");
            assert!(
                hung_up(&raw.raw.session, LIMIT),
                "a malformed pulse of {} bytes was not refused",
                payload.len()
            );
        }
        honest_calls_at(t.dir(), "sysv-msg", 20, Duration::from_millis(20), LIMIT);
        drop(server);
    });
}

// ------------------------------------------------------------ fuse

/// `_IOWR('Q', nr, size)`, as the fuse transport numbers its ioctls.
const fn iowr(nr: u32, size: usize) -> u32 {
    (3 << 30) | ((size as u32) << 16) | ((b'Q' as u32) << 8) | nr
}
/// The smallest call class (64 bytes).
const CALL_64: u32 = iowr(1, 64);
/// The pulse ioctl.
const PULSE_IOC: u32 = iowr(8, 16);

/// Opens the fuse endpoint at `path` as a raw client.
fn fuse_open(path: &std::path::Path) -> OwnedFd {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .expect("open the endpoint")
        .into()
}

/// A raw call of [`HOSTILE`] on `fd`: the status the server answered.
fn fuse_call(fd: &OwnedFd) -> std::io::Result<u32> {
    let mut buf = [0u8; 64];
    buf[..8].copy_from_slice(&head(1, HOSTILE.len()));
    buf[8..12].copy_from_slice(HOSTILE);
    oslayer::ioctl::read_write(fd.as_fd(), CALL_64, &mut buf)?;
    Ok(u32::from_le_bytes(buf[..4].try_into().expect("status")))
}

#[test]
fn fuse_a_hundred_calls_on_one_file_while_one_is_held() {
    run("fuse", "calls while held", |t| {
        const THREADS: usize = 100;
        let (server, path) = Holder::start(t, "fuse");
        let fd = Arc::new(fuse_open(&path));
        let (tx, answers) = mpsc::channel();
        let callers: Vec<_> = (0..THREADS)
            .map(|_| {
                let (fd, tx) = (Arc::clone(&fd), tx.clone());
                thread::spawn(move || {
                    let _ = tx.send(fuse_call(&fd).expect("ioctl"));
                })
            })
            .collect();
        // One held, one waiting behind it; every other refused at once.
        server.wait_taken(1, STEP);
        for k in 0..THREADS - 2 {
            let status = answers.recv_timeout(STEP).expect("a refusal");
            assert_eq!(status, libc::EAGAIN as u32, "answer {k}");
        }
        honest_calls_at(t.dir(), "fuse", 50, Duration::from_millis(20), STEP);
        assert_eq!(server.taken(), 1, "a second call of a held connection");
        // The answer (EIO) lets the waiting one in, and it only.
        server.release();
        assert_eq!(answers.recv_timeout(STEP), Ok(libc::EIO as u32));
        server.wait_taken(2, STEP);
        server.release();
        assert_eq!(answers.recv_timeout(STEP), Ok(libc::EIO as u32));
        for c in callers {
            c.join().expect("caller");
        }
        drop(fd);
        drop(server);
    });
}

#[test]
fn fuse_malformed_pulses_drop_their_connection() {
    run("fuse", "malformed pulses", |t| {
        let (server, path) = Holder::start(t, "fuse");
        let good = Pulse { code: 1, value: 2 };
        let mut good_bytes = [0u8; 8];
        good_bytes[0] = good.code;
        good_bytes[4..].copy_from_slice(&good.value.to_le_bytes());
        for (code, len, payload) in [
            (PULSE_WIRE, 3, [1u8, 2, 3, 0, 0, 0, 0, 0]),
            (PULSE_WIRE, 8, [1u8, 0, 9, 0, 2, 0, 0, 0]),
            (msgpass::PULSE, 8, good_bytes),
        ] {
            let fd = fuse_open(&path);
            let mut buf = [0u8; 16];
            buf[..8].copy_from_slice(&head(code, len));
            buf[8..].copy_from_slice(&payload);
            let got = oslayer::ioctl::read_write(fd.as_fd(), PULSE_IOC, &mut buf);
            assert_eq!(got.map_err(|e| e.raw_os_error()), Err(Some(libc::ENOTCONN)));
            // Dropped: a good pulse and a call are refused too.
            buf[..8].copy_from_slice(&head(PULSE_WIRE, 8));
            buf[8..].copy_from_slice(&good_bytes);
            let got = oslayer::ioctl::read_write(fd.as_fd(), PULSE_IOC, &mut buf);
            assert_eq!(got.map_err(|e| e.raw_os_error()), Err(Some(libc::ENOTCONN)));
            let call = fuse_call(&fd).map_err(|e| e.raw_os_error());
            assert_eq!(call, Err(Some(libc::ENOTCONN)));
        }
        assert_eq!(server.taken(), 0);
        honest_calls_at(t.dir(), "fuse", 20, Duration::from_millis(20), LIMIT);
        drop(server);
    });
}

// ------------------------------------------------------------ floods

/// A client flooding pulses through the library (each send returns at
/// once, refused when the path is full) beside an honest client.
fn pulse_flood_beside_an_honest_client(transport: &'static str) {
    run(transport, "pulse flood", move |t| {
        pulse_flood(t, transport, LIMIT);
    });
}

#[test]
fn sysv_msg_pulse_flood() {
    pulse_flood_beside_an_honest_client("sysv-msg")
}

#[test]
fn signal_pulse_flood() {
    pulse_flood_beside_an_honest_client("signal")
}

#[test]
fn fuse_pulse_flood() {
    pulse_flood_beside_an_honest_client("fuse")
}
