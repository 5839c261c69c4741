//! Hostile peers against deferred replies and pulses: what a client that
//! breaks the protocol can do to a server that holds requests.
//!
//! - **Thousands of requests while one is held**: a raw client sends as
//!   many requests as its path takes while the server holds its first one
//!   (a server that defers every request of it). The server takes exactly
//!   one of that connection's requests while it holds it (the rest wait in
//!   the kernel, or in the client's own slot), so its memory cannot grow,
//!   and an honest client beside it is served.
//! - **Malformed pulses**: a pulse of the wrong size, or with bytes that
//!   must be zero set, drops its connection; the server serves on.
//! - **Pulse floods**, through the library, on every transport whose
//!   server loop this file covers: a client sending pulses as fast as it
//!   can (never blocked: refused when the path is full) beside an honest
//!   client, who is served.
//!
//! Raw clients speak the reactor's wire on uds (the reactor's path is the
//! same for every descriptor-driven transport) and write the shm slot by
//! hand. sysv-msg, signal and fuse are attacked in their own files.

#[macro_use]
mod common;

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::holder::{head, pulse_flood, Holder, HOSTILE};
use common::*;

/// How long a test may run.
const LIMIT: Duration = Duration::from_secs(60);
/// The wire code of a pulse (`PULSE | ONEWAY`).
const PULSE_WIRE: u32 = msgpass::PULSE | msgpass::ONEWAY;

/// Runs `body` in a fresh namespace under the watchdog; nothing may be
/// left behind.
fn run(test: &str, body: impl FnOnce(&TestNs) + Send + 'static) {
    let tns = TestNs::new();
    let (tx, rx) = mpsc::channel();
    watchdog(test, LIMIT, move || {
        body(&tns);
        let _ = tx.send(tns);
    });
    rx.recv().expect("namespace back").finish();
}

/// Sends raw messages on `fd` without waiting until it takes no more (or
/// `most` went); returns how many it took.
fn send_until_full(fd: &OwnedFd, msg: &[u8], most: usize) -> usize {
    let mut n = 0;
    while n < most {
        match oslayer::socket::send_now(fd.as_fd(), msg).expect("send") {
            Some(_) => n += 1,
            None => break,
        }
    }
    n
}

#[test]
fn uds_thousands_of_requests_while_one_is_held() {
    run("uds requests while held", |t| {
        let (server, path) = Holder::start(t, "uds");
        let raw = raw_client(&path);
        let mut msg = head(1, 4).to_vec();
        msg.extend_from_slice(HOSTILE);
        let sent = send_until_full(&raw.session, &msg, 100_000);
        assert!(sent > 1, "the path took {sent} requests");
        // The honest client is served meanwhile, and after it the server
        // still holds just the first hostile request.
        honest_calls_at(t.dir(), "uds", 50, Duration::from_millis(20), LIMIT);
        assert_eq!(server.taken(), 1, "{sent} sent");
        // Answered (EIO), the next is taken: one at a time.
        server.release();
        let mut reply = [0u8; 64];
        let n = oslayer::socket::recv_bytes(
            raw.session.as_fd(),
            &mut reply,
            oslayer::socket::RecvFlags::empty(),
        )
        .expect("the EIO reply");
        assert_eq!(&reply[..n], &head(libc::EIO as u32, 0));
        while server.taken() < 2 {
            thread::sleep(Duration::from_millis(5));
        }
        thread::sleep(Duration::from_millis(50));
        assert_eq!(server.taken(), 2);
        drop(raw);
        drop(server);
    });
}

#[test]
fn uds_malformed_pulses_drop_their_connection() {
    run("uds malformed pulses", |t| {
        let (server, path) = Holder::start(t, "uds");
        // Too short, too long, and a byte that must be zero set.
        for payload in [
            &[1u8, 2, 3][..],
            &[0u8; 9][..],
            &[1u8, 0, 9, 0, 2, 0, 0, 0][..],
        ] {
            let raw = raw_client(&path);
            let mut msg = head(PULSE_WIRE, payload.len()).to_vec();
            msg.extend_from_slice(payload);
            oslayer::socket::send_bytes(raw.session.as_fd(), &msg).expect("send");
            assert!(
                hung_up(&raw.session, LIMIT),
                "a malformed pulse of {} bytes was not refused",
                payload.len()
            );
        }
        honest_calls_at(t.dir(), "uds", 20, Duration::from_millis(20), LIMIT);
        drop(server);
    });
}

/// Offsets in an shm slot (see `transport::shm`).
const STATE: usize = 0;
const CMD: usize = 4;
const LEN: usize = 8;
const SEQ: usize = 20;
const DATA: usize = 32;
/// Slot states.
const REQUEST: u32 = 1;

/// Maps the slot a raw shm client was given (its second descriptor).
fn raw_slot(raw: &RawClient) -> oslayer::mman::Mapping {
    let slot = &raw.fds[1];
    let len = std::fs::File::from(slot.try_clone().expect("dup"))
        .metadata()
        .expect("slot size")
        .len() as usize;
    oslayer::mman::Mapping::new(slot.as_fd(), len).expect("map the slot")
}

/// Posts a request of `data` in a raw slot, with request number `seq`,
/// and rings the bell (the third descriptor).
fn raw_post(raw: &RawClient, slot: &oslayer::mman::Mapping, seq: u32, cmd: u32, data: &[u8]) {
    slot.write_at(DATA, data);
    slot.atomic_u32(CMD).store(cmd, Ordering::SeqCst);
    slot.atomic_u32(LEN)
        .store(data.len() as u32, Ordering::SeqCst);
    slot.atomic_u32(SEQ).store(seq, Ordering::SeqCst);
    slot.atomic_u32(STATE).store(REQUEST, Ordering::SeqCst);
    let _ = oslayer::eventfd::write(raw.fds[2].as_fd(), 1);
}

#[test]
fn shm_thousands_of_reposts_while_one_is_held() {
    run("shm reposts while held", |t| {
        let (server, path) = Holder::start(t, "shm-block");
        let raw = raw_client(&path);
        let slot = raw_slot(&raw);
        let seq = AtomicU32::new(1);
        raw_post(&raw, &slot, 1, 1, HOSTILE);
        while server.taken() < 1 {
            thread::sleep(Duration::from_millis(1));
        }
        // Re-posted under new numbers, thousands of times, while held.
        for _ in 0..5000 {
            let s = seq.fetch_add(1, Ordering::SeqCst) + 1;
            raw_post(&raw, &slot, s, 1, HOSTILE);
        }
        honest_calls_at(t.dir(), "shm-block", 50, Duration::from_millis(20), LIMIT);
        assert_eq!(
            server.taken(),
            1,
            "a request taken while its connection's was held"
        );
        drop(raw);
        drop(server);
    });
}

#[test]
fn shm_malformed_pulses_drop_their_connection() {
    run("shm malformed pulses", |t| {
        let (server, path) = Holder::start(t, "shm-block");
        for payload in [&[1u8, 2, 3][..], &[0u8, 7, 0, 0, 1, 0, 0, 0][..]] {
            let raw = raw_client(&path);
            let slot = raw_slot(&raw);
            raw_post(&raw, &slot, 1, PULSE_WIRE, payload);
            assert!(
                hung_up(&raw.session, LIMIT),
                "a malformed pulse of {} bytes was not refused",
                payload.len()
            );
        }
        honest_calls_at(t.dir(), "shm-block", 20, Duration::from_millis(20), LIMIT);
        drop(server);
    });
}

/// A client flooding pulses through the library (each send returns at
/// once, refused when the path is full) beside an honest client.
fn pulse_flood_beside_an_honest_client(transport: &'static str) {
    run(&format!("{transport} pulse flood"), move |t| {
        pulse_flood(t, transport, LIMIT);
    });
}

macro_rules! flood_tests {
    ($($name:ident: $transport:literal),* $(,)?) => {
        $(#[test]
        fn $name() {
            if unavailable_here($transport) {
                return;
            }
            pulse_flood_beside_an_honest_client($transport)
        })*
    };
}

flood_tests! {
    shm_pulse_flood: "shm",
    shm_spin_pulse_flood: "shm-spin",
    shm_block_pulse_flood: "shm-block",
    uds_pulse_flood: "uds",
    uds_stream_pulse_flood: "uds-stream",
    uds_dgram_pulse_flood: "uds-dgram",
    pipe_pulse_flood: "pipe",
    fifo_pulse_flood: "fifo",
    posix_mq_pulse_flood: "posix-mq",
    eventfd_pulse_flood: "eventfd",
    io_uring_pulse_flood: "io-uring",
    tcp_pulse_flood: "tcp",
    udp_pulse_flood: "udp",
}
