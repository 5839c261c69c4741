//! A client that rewrites its slot while the server reads it: the server
//! must act only on what it checked, and what the application reads must
//! not change under it (see `transport::shared`).

use std::os::fd::AsFd;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::*};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{slot_size, Shm, Wait, DATA, MASK, REPLY, REQUEST};
use crate::transport::api::{Options, ServerChannel, Status, Transport};
use crate::transport::wire::rendezvous::{self, Family};
use oslayer::mman::Mapping;

/// The payload length every hostile request is posted with; every length
/// it rewrites afterwards is over the maximum.
const POSTED: usize = 48;
const MAX: usize = 256;
/// The hostile client's command, told apart from the honest one's.
const HOSTILE: u32 = 0xbad;
/// Bounds a hang; times nothing.
const BOUND: Duration = Duration::from_secs(30);

/// What the hostile client saw.
#[derive(Default)]
struct Seen {
    /// Requests answered (as it posted them, or refused as too long).
    answered: usize,
    /// Replies whose length the server never checked: neither what was
    /// posted (status 0) nor 0 (refused), nor our own last write.
    unchecked: Vec<String>,
}

/// Posts requests of [`POSTED`] bytes and, until each is answered, keeps
/// rewriting the payload and the length word (now and then with a length
/// over the maximum, else with the one posted), until `stop`.
fn rewriter(
    path: &Path,
    opts: &Options,
    stop: &AtomicBool,
    ready: std::sync::mpsc::Sender<()>,
) -> Seen {
    let (_sock, hello, fds) = rendezvous::connect(path, Family::Shm, opts).expect("connect");
    let (slot_fd, ring) = (&fds[1], &fds[2]);
    let slot = Mapping::new(slot_fd.as_fd(), slot_size(hello.max_msg)).expect("map slot");
    let word = |off: usize| slot.atomic_u32(off);
    ready.send(()).expect("ready");
    let mut seen = Seen::default();
    let mut x: u32 = 0x2545_f491;
    for seq in 1u32.. {
        if stop.load(Relaxed) {
            break;
        }
        word(4).store(HOSTILE, Relaxed);
        word(8).store(POSTED as u32, Relaxed);
        word(20).store(seq, Relaxed);
        word(0).store(REQUEST, SeqCst);
        let _ = oslayer::eventfd::write(ring.as_fd(), 1);
        let mut last = POSTED as u32;
        let until = Instant::now() + BOUND;
        while word(0).load(Acquire) & MASK != REPLY && Instant::now() < until && !stop.load(Relaxed)
        {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            // A lie one time in four, so that most requests are taken (a
            // lie read first is refused) and a second look at the length
            // would often find one.
            last = match x % 4 {
                0 => MAX as u32 + 1 + x % (u32::MAX - MAX as u32 - 1),
                _ => POSTED as u32,
            };
            word(8).store(last, Relaxed);
            for off in (DATA..DATA + MAX).step_by(4) {
                word(off).store(x.rotate_left(off as u32), Relaxed);
            }
        }
        if word(0).load(Acquire) & MASK != REPLY {
            break;
        }
        let (status, len) = (word(12).load(Relaxed), word(8).load(Relaxed));
        let ok = (status == 0 && len == POSTED as u32)
            || (status == libc::EMSGSIZE as u32 && len == 0)
            || len == last;
        if !ok {
            seen.unchecked
                .push(format!("request {seq}: status {status}, length {len}"));
        }
        seen.answered += 1;
    }
    seen
}

/// The server's loop: every request is checked as the application sees
/// it (length as received, bounded; the same bytes on a second look after
/// a pause), then echoed, copying or in place in turn. Returns the
/// violations and how many hostile requests were served.
fn serve(
    mut server: Box<dyn ServerChannel>,
    stop: &AtomicBool,
    hostile: &AtomicUsize,
) -> Vec<String> {
    let mut bad = Vec::new();
    let mut n = 0u32;
    while let Ok(Some(inc)) = server.receive(stop) {
        n = n.wrapping_add(1);
        let first = server.data().to_vec();
        if inc.len > MAX || first.len() != inc.len {
            bad.push(format!("received {} bytes, data {}", inc.len, first.len()));
        }
        if inc.cmd == HOSTILE {
            if inc.len != POSTED {
                bad.push(format!("acted on a length of {} never posted", inc.len));
            }
            hostile.fetch_add(1, Relaxed);
            // Long enough for the rewriter to go over the slot many times.
            std::thread::sleep(Duration::from_micros(200));
        }
        // Read where it lies: as long as the length checked, and, for an
        // honest client, its request.
        let lying = server.view();
        if lying.len() != inc.len || (inc.cmd != HOSTILE && lying.to_vec() != first) {
            bad.push(format!("request {n}: its view is not the request"));
        }
        let second = server.data().to_vec();
        if first != second {
            bad.push(format!("request {n} changed under the application"));
        }
        let sent = match n % 2 {
            0 => server.reply(Status::Ok, &first),
            // In place the reply is the request, left where it lies in
            // the slot: an honest client's must start there (a hostile
            // one rewrites its own as it likes).
            _ => match server.reply_buffer() {
                Some(buf) => {
                    let mut lent = vec![0; first.len()];
                    buf.read(0, &mut lent);
                    if inc.cmd != HOSTILE && lent != first {
                        bad.push(format!("request {n}: reply window does not start with it"));
                    }
                    server.reply_in_place(first.len())
                }
                None => server.reply(Status::Ok, &first),
            },
        };
        if sent.is_err() {
            break;
        }
    }
    bad
}

/// A client rewriting its request's payload and length while the server
/// holds it cannot make the server act on a length it did not check, nor
/// change what the application reads; an honest client beside it gets
/// every answer right.
#[test]
fn a_client_rewriting_its_slot_cannot_change_what_the_server_acts_on() {
    let tmp = tempfile::Builder::new()
        .prefix("msgpass-shm-rewrite-")
        .tempdir()
        .expect("dir");
    let dir = tmp.path().to_path_buf();
    let path = dir.join("ch");
    let opts = Options {
        max_msg: MAX,
        ..Options::default()
    };
    let server = Shm::new(Wait::Block).serve(&path, &opts).expect("serve");
    let stop = Arc::new(AtomicBool::new(false));
    let hostile = Arc::new(AtomicUsize::new(0));
    let server_thread = {
        let (stop, hostile) = (Arc::clone(&stop), Arc::clone(&hostile));
        std::thread::spawn(move || serve(server, &stop, &hostile))
    };
    let rewriter_thread = {
        let (stop, path, opts) = (Arc::clone(&stop), path.clone(), opts.clone());
        let (ready, mapped) = std::sync::mpsc::channel();
        let t = std::thread::spawn(move || rewriter(&path, &opts, &stop, ready));
        mapped.recv().expect("rewriter connected");
        t
    };
    let mut honest = Shm::new(Wait::Block)
        .connect(&path, &opts)
        .expect("connect");
    let mut reply = [0u8; MAX];
    let started = Instant::now();
    let mut i = 0u32;
    // Until the rewriter was served often enough for the verdict to mean
    // something (bounded: a hang fails below).
    while (i < 100 || hostile.load(Relaxed) < 100) && started.elapsed() < BOUND {
        let req: Vec<u8> = (0..=(i % 200) as u8).map(|b| b ^ i as u8).collect();
        let n = honest.call(1, &req, &mut reply).expect("honest call");
        assert_eq!(&reply[..n], &req[..], "honest call {i}");
        i += 1;
    }
    stop.store(true, SeqCst);
    let seen = rewriter_thread.join().expect("rewriter");
    drop(honest);
    let bad = server_thread.join().expect("the server panicked");
    assert!(
        bad.is_empty(),
        "the server acted on unchecked bytes {} times, first: {:?}",
        bad.len(),
        &bad[..bad.len().min(5)]
    );
    assert!(
        seen.unchecked.is_empty(),
        "unchecked replies: {:?}",
        seen.unchecked
    );
    let served = hostile.load(Relaxed);
    assert!(
        served >= 100,
        "only {served} rewritten requests served in {BOUND:?}"
    );
    assert!(
        seen.answered >= 100,
        "rewriter answered {} times",
        seen.answered
    );
}
