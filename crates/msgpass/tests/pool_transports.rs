//! A channel served by a pool of threads on the transports whose pool is
//! not a worker per thread on the kernel's ready list: sysv-msg and signal
//! (a dispatcher thread relays their requests to the pool) and fuse (the
//! pool's threads take requests from the reader thread's queue). Eight
//! client threads call a pool of four threads, each checking that every
//! reply answers its own request (its client number and sequence number
//! are in the request and come back), while one handler is held in one
//! pool thread until the clients are done: the other threads keep
//! answering. Requests dropped unanswered come back `EIO`.
//!
//! fuse needs /dev/fuse and the right to mount: skipped with the reason by
//! hand without them, a failure under `CI`.

mod common;

use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::*;
use msgpass::{transport, Channel, Connection, Error, Namespace, OwnedRequest, Receiver};

/// Threads of the pool.
const THREADS: usize = 4;
/// Client threads, each with its own connection.
const CLIENTS: u32 = 8;
/// Calls each client makes.
const CALLS: u32 = 150;
/// Echoed with `reply`.
const CMD_ECHO: u32 = 1;
/// Echoed with `reply_with` (in place where the transport lends memory).
const CMD_ECHO_IN_PLACE: u32 = 2;
/// Dropped unanswered: the client hears `EIO`.
const CMD_DROP: u32 = 3;
/// Held until the test releases it.
const CMD_HOLD: u32 = 4;

/// The server's tick: stops and deadlines come quickly.
const TICK: Duration = Duration::from_millis(20);

/// Handles one request: echoes, drops, or holds it until released.
fn handle(
    req: OwnedRequest,
    max: usize,
    held: &mpsc::Sender<()>,
    release: &Mutex<mpsc::Receiver<()>>,
) {
    let cmd = req.cmd();
    let r = match cmd {
        CMD_ECHO => {
            let out = echo_reply(cmd, req.data(), max);
            req.reply(&out)
        }
        CMD_ECHO_IN_PLACE => {
            let mut asked = vec![0; req.len()];
            req.reply_with(|buf| {
                buf.read(0, &mut asked);
                let out = echo_reply(CMD_ECHO_IN_PLACE, &asked, max);
                buf.write(0, &out);
                out.len()
            })
        }
        CMD_DROP => {
            drop(req);
            Ok(())
        }
        CMD_HOLD => {
            held.send(()).expect("the test waits for the hold");
            // Until the test is done with every other client.
            let _ = release.lock().expect("release lock").recv();
            req.reply(b"released")
        }
        other => panic!("unknown command {other}"),
    };
    r.unwrap_or_else(|e| panic!("reply to command {cmd}: {e}"));
}

/// One pool thread: serves until the pool is stopped; returns how many
/// requests it took.
fn serve(mut rx: Receiver, held: mpsc::Sender<()>, release: Arc<Mutex<mpsc::Receiver<()>>>) -> u64 {
    let max = rx.max_msg();
    let mut taken = 0;
    loop {
        match rx.receive() {
            Ok(Some(req)) => {
                taken += 1;
                handle(req, max, &held, &release);
            }
            Ok(None) => return taken,
            Err(e) => panic!("pool thread {}: receive failed: {e}", rx.index()),
        }
    }
}

/// The request of client `id`'s call `seq`: both numbers, then a few bytes
/// that change with them.
fn request(id: u32, seq: u32) -> Vec<u8> {
    let mut req = Vec::with_capacity(8 + 24);
    req.extend_from_slice(&id.to_le_bytes());
    req.extend_from_slice(&seq.to_le_bytes());
    req.extend((0..(seq % 24) as u8).map(|i| i ^ id as u8));
    req
}

/// Client `id`: `CALLS` calls on its own connection, each reply checked
/// to be the answer to this very request.
fn client(ns_dir: &std::path::Path, name: &'static str, id: u32) {
    let ns = Namespace::open(ns_dir).expect("namespace");
    let tr = transport::by_name(name).expect("transport");
    let mut c = Connection::open(&ns, "pool", &*tr, &tick_options(TICK)).expect("open");
    let mut buf = vec![0u8; 256];
    for seq in 0..CALLS {
        let req = request(id, seq);
        if seq % 50 == 49 {
            match c.call(CMD_DROP, &req, &mut buf) {
                Err(Error::Remote { code }) if code == libc::EIO => continue,
                other => panic!("{name}: client {id} call {seq}: dropped, got {other:?}"),
            }
        }
        let cmd = [CMD_ECHO, CMD_ECHO_IN_PLACE][seq as usize % 2];
        let n = c
            .call(cmd, &req, &mut buf)
            .unwrap_or_else(|e| panic!("{name}: client {id} call {seq}: {e}"));
        assert_eq!(
            buf[..n],
            echo_reply(cmd, &req, c.max_msg())[..],
            "{name}: client {id} call {seq} got another request's answer"
        );
    }
}

/// The test, on transport `name`.
fn pool_answers_every_client_beside_a_held_handler(name: &'static str) {
    if unavailable_here(name) {
        return;
    }
    watchdog(name, WATCHDOG, move || {
        let t = TestNs::new();
        let tr = transport::by_name(name).expect("transport");
        let chan = Channel::create(&t.ns, "pool", &*tr, &tick_options(TICK)).expect("create");
        let receivers = chan.into_pool(THREADS).expect("a pool");
        let stop = receivers[0].stop_flag();
        let (held_tx, held) = mpsc::channel();
        let (release, release_rx) = mpsc::channel::<()>();
        let release_rx = Arc::new(Mutex::new(release_rx));
        let pool: Vec<_> = receivers
            .into_iter()
            .map(|rx| {
                let (held_tx, release_rx) = (held_tx.clone(), Arc::clone(&release_rx));
                thread::spawn(move || serve(rx, held_tx, release_rx))
            })
            .collect();
        // One pool thread gets stuck in a handler.
        let dir = t.dir().to_path_buf();
        let holder = thread::spawn(move || {
            let ns = Namespace::open(&dir).expect("namespace");
            let tr = transport::by_name(name).expect("transport");
            let mut c = Connection::open(&ns, "pool", &*tr, &tick_options(TICK)).expect("open");
            let mut buf = [0u8; 16];
            let n = c.call(CMD_HOLD, b"hold", &mut buf).expect("held call");
            assert_eq!(&buf[..n], b"released");
        });
        held.recv().expect("a pool thread holds the request");
        // Every other client is answered meanwhile, by the other threads.
        let clients: Vec<_> = (0..CLIENTS)
            .map(|id| {
                let dir = t.dir().to_path_buf();
                thread::spawn(move || client(&dir, name, id))
            })
            .collect();
        for c in clients {
            c.join().expect("a client failed");
        }
        assert!(
            !holder.is_finished(),
            "{name}: the held call came back early"
        );
        release.send(()).expect("release");
        holder.join().expect("the held client failed");
        stop.store(true, Ordering::Relaxed);
        let taken: u64 = pool
            .into_iter()
            .map(|p| p.join().expect("pool thread"))
            .sum();
        assert_eq!(
            taken,
            u64::from(CLIENTS * CALLS) + 1,
            "{name}: requests taken"
        );
        t.finish();
    });
}

#[test]
fn sysv_msg() {
    pool_answers_every_client_beside_a_held_handler("sysv-msg");
}

#[test]
fn signal() {
    pool_answers_every_client_beside_a_held_handler("signal");
}

#[test]
fn fuse() {
    pool_answers_every_client_beside_a_held_handler("fuse");
}
