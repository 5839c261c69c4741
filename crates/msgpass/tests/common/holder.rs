//! A server that holds hostile requests, and the raw wire header the
//! hostile clients write: shared by the hostile-held test files.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use msgpass::{Channel, Connection, Namespace, Options, OwnedRequest, Pulse};

use super::{echo_reply, honest_calls_at, tick_options, TestNs, MAX};

/// What the hostile client's requests carry, to tell them from the
/// honest client's.
pub const HOSTILE: &[u8; 4] = b"EVIL";

/// A wire header: command (or status) `code`, payload length `len`.
pub fn head(code: u32, len: usize) -> [u8; 8] {
    let mut h = [0u8; 8];
    h[..4].copy_from_slice(&code.to_le_bytes());
    h[4..].copy_from_slice(&(len as u32).to_le_bytes());
    h
}

/// A server on `hostile/0` that holds every request carrying [`HOSTILE`]
/// (answering the others at once, as echoes; pulses go unanswered) until
/// dropped; it counts what it holds.
pub struct Holder {
    stop: Arc<AtomicBool>,
    held: Arc<Mutex<Vec<OwnedRequest>>>,
    taken: Arc<AtomicUsize>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Holder {
    /// Serves `hostile/0` in `t` over `transport`; returns the holder and
    /// the endpoint's path.
    pub fn start(t: &TestNs, transport: &str) -> (Holder, std::path::PathBuf) {
        let tr = msgpass::transport::by_name(transport).expect("transport");
        let opts = tick_options(Duration::from_millis(20));
        let mut chan = Channel::create(&t.ns, "hostile/0", &*tr, &opts).expect("create");
        let path = chan.path().to_path_buf();
        let stop = chan.stop_flag();
        let held = Arc::new(Mutex::new(Vec::new()));
        let taken = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (held, taken) = (Arc::clone(&held), Arc::clone(&taken));
            thread::spawn(move || {
                while let Ok(Some(req)) = chan.receive() {
                    if req.data().starts_with(HOSTILE) {
                        // Counted once held: a test that saw the count
                        // and releases must find the request there.
                        let mut held = held.lock().expect("held");
                        held.push(req.defer().expect("defer"));
                        taken.fetch_add(1, Ordering::SeqCst);
                    } else if req.pulse().is_none() {
                        let out = echo_reply(req.cmd(), req.data(), MAX);
                        let _ = req.reply(&out);
                    }
                }
            })
        };
        let holder = Holder {
            stop,
            held,
            taken,
            thread: Some(thread),
        };
        (holder, path)
    }

    /// Hostile requests taken so far.
    pub fn taken(&self) -> usize {
        self.taken.load(Ordering::SeqCst)
    }

    /// Answers (drops: `EIO`) everything held.
    pub fn release(&self) {
        self.held.lock().expect("held").clear();
    }

    /// Waits until `n` hostile requests were taken, for `within` at most.
    pub fn wait_taken(&self, n: usize, within: Duration) {
        let deadline = Instant::now() + within;
        while self.taken() < n {
            assert!(Instant::now() < deadline, "{n} never taken");
            thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.release();
    }
}

/// A client flooding pulses through the library (each send returns at
/// once, refused when the path is full) beside an honest client of
/// `transport` in `t`, who must be served within `limit`.
pub fn pulse_flood(t: &TestNs, transport: &'static str, limit: Duration) {
    let (server, _path) = Holder::start(t, transport);
    let stop = Arc::new(AtomicBool::new(false));
    let (sent, refused) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let flooder = {
        let (stop, sent, refused) = (Arc::clone(&stop), Arc::clone(&sent), Arc::clone(&refused));
        let ns = Namespace::open(t.dir()).expect("namespace");
        thread::spawn(move || {
            let tr = msgpass::transport::by_name(transport).expect("transport");
            let mut c = Connection::open(&ns, "hostile/0", &*tr, &Options::default())
                .expect("flooder open");
            let mut v = 0u32;
            while !stop.load(Ordering::Relaxed) {
                v = v.wrapping_add(1);
                match c.send_pulse(Pulse { code: 9, value: v }) {
                    Ok(()) => sent.fetch_add(1, Ordering::Relaxed),
                    Err(msgpass::Error::PulseQueueFull) => refused.fetch_add(1, Ordering::Relaxed),
                    Err(e) => panic!("pulse: {e}"),
                };
            }
        })
    };
    while sent.load(Ordering::Relaxed) < 100 && refused.load(Ordering::Relaxed) == 0 {
        thread::sleep(Duration::from_millis(1));
    }
    honest_calls_at(t.dir(), transport, 200, Duration::from_millis(20), limit);
    stop.store(true, Ordering::Relaxed);
    flooder.join().expect("flooder");
    println!(
        "{transport}: {} pulses sent, {} refused, beside 200 honest calls",
        sent.load(Ordering::Relaxed),
        refused.load(Ordering::Relaxed)
    );
    drop(server);
}
