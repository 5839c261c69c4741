//! Helpers shared by the msgpass integration tests: a private namespace per
//! test, a watchdog that turns a hang into a failure, a small PRNG, the test
//! server's command set, and child processes that are always reaped.

#![allow(dead_code)] // each test binary uses a different subset

pub mod holder;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use msgpass::transport::ServerChannel;
use msgpass::{Channel, Connection, Error, Namespace, Options, Received, Window};

/// Longest any test may run before the watchdog fails it.
pub const WATCHDOG: Duration = Duration::from_secs(30);

/// The payload limit of `Options::default()`.
pub const MAX: usize = 65536;

// ---------------------------------------------------------------- watchdog

/// Runs `body` on its own thread and fails the test if it has not finished
/// within `limit`. A panic in `body` is re-raised as is.
pub fn watchdog<F>(test: &str, limit: Duration, body: F)
where
    F: FnOnce() + Send + 'static,
{
    let (done_tx, done_rx) = mpsc::channel::<()>();
    let handle = thread::Builder::new()
        .name(format!("body:{test}"))
        .spawn(move || {
            body();
            let _ = done_tx.send(());
        })
        .expect("spawn test body thread");
    match done_rx.recv_timeout(limit) {
        // Finished, or panicked (the sender was dropped while unwinding).
        Ok(()) | Err(RecvTimeoutError::Disconnected) => {
            if let Err(payload) = handle.join() {
                std::panic::resume_unwind(payload);
            }
        }
        Err(RecvTimeoutError::Timeout) => {
            panic!("watchdog: {test} did not finish within {limit:?} (hang?)")
        }
    }
}

// ---------------------------------------------------------------- namespace

/// A private namespace directory, unique to one test. [`TestNs::finish`]
/// checks that the test left nothing behind; dropping it unfinished (a
/// failed test) just removes the directory.
pub struct TestNs {
    pub ns: Namespace,
    dir: PathBuf,
    shm_before: BTreeSet<OsString>,
    mq_before: Option<BTreeSet<OsString>>,
    finished: bool,
}

static NS_COUNTER: AtomicUsize = AtomicUsize::new(0);

/// A fresh, not yet existing path under the temporary directory. Kept short:
/// endpoint paths must fit a Unix socket address (108 bytes).
pub fn fresh_path(tag: &str) -> PathBuf {
    let base = std::env::temp_dir();
    let base = if base.as_os_str().len() > 40 {
        PathBuf::from("/tmp")
    } else {
        base
    };
    loop {
        let n = NS_COUNTER.fetch_add(1, Ordering::Relaxed);
        let p = base.join(format!("mpt-{tag}-{}-{n}", std::process::id()));
        if fs::symlink_metadata(&p).is_err() {
            return p;
        }
    }
}

impl TestNs {
    pub fn new() -> TestNs {
        let shm_before = shm_entries();
        let mq_before = mqueue_entries();
        let dir = fresh_path("ns");
        let ns = Namespace::open(&dir).expect("open a fresh namespace");
        TestNs {
            ns,
            dir,
            shm_before,
            mq_before,
            finished: false,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Asserts that the namespace is empty (no endpoint, no lock file, no
    /// sub-directory) and that /dev/shm gained no entry, then removes it.
    pub fn finish(mut self) {
        self.finished = true;
        let left = list_recursive(&self.dir);
        let _ = fs::remove_dir_all(&self.dir);
        assert!(
            left.is_empty(),
            "namespace {} not clean at the end of the test: {left:?}",
            self.dir.display()
        );
        let new = new_shm_entries(&self.shm_before);
        assert!(new.is_empty(), "/dev/shm gained entries: {new:?}");
        if let Some(before) = &self.mq_before {
            let new = new_mqueue_entries(before);
            assert!(new.is_empty(), "POSIX message queues left behind: {new:?}");
        }
    }
}

impl Default for TestNs {
    fn default() -> TestNs {
        TestNs::new()
    }
}

impl Drop for TestNs {
    fn drop(&mut self) {
        if !self.finished {
            let _ = fs::remove_dir_all(&self.dir);
        }
    }
}

/// Every path under `dir`, relative to it.
pub fn list_recursive(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                todo.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap_or(&p).to_path_buf());
        }
    }
    out.sort();
    out
}

fn shm_entries() -> BTreeSet<OsString> {
    fs::read_dir("/dev/shm")
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default()
}

/// The `msgbench.*` names in the POSIX message queue filesystem, or `None`
/// when it cannot be listed. Uses /dev/mqueue when it is mounted; else
/// `ls` runs in a private mount namespace with an mqueue filesystem mounted
/// over a scratch directory (which needs CAP_SYS_ADMIN; nothing changes
/// outside that namespace, and it shows this IPC namespace's queues).
pub fn mqueue_entries() -> Option<BTreeSet<OsString>> {
    let keep = |names: BTreeSet<OsString>| -> BTreeSet<OsString> {
        names
            .into_iter()
            .filter(|n| n.to_string_lossy().starts_with("msgbench."))
            .collect()
    };
    let mounted = fs::read_to_string("/proc/self/mounts")
        .map(|m| {
            m.lines()
                .any(|l| l.split(' ').nth(1) == Some("/dev/mqueue"))
        })
        .unwrap_or(false);
    if mounted {
        let rd = fs::read_dir("/dev/mqueue").ok()?;
        return Some(keep(rd.flatten().map(|e| e.file_name()).collect()));
    }
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let dir = fresh_path("mq");
    fs::create_dir(&dir).ok()?;
    let target = CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut cmd = Command::new("ls");
    cmd.arg("-1A")
        .arg(&dir)
        .stdin(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: between fork and exec the closure only makes system calls
    // (unshare, mount) on memory prepared before the fork; it allocates
    // nothing.
    unsafe {
        cmd.pre_exec(move || {
            let none = c"none".as_ptr();
            if libc::unshare(libc::CLONE_NEWNS) != 0
                || libc::mount(
                    none,
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
                || libc::mount(
                    none,
                    target.as_ptr(),
                    c"mqueue".as_ptr(),
                    0,
                    std::ptr::null(),
                ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output();
    let _ = fs::remove_dir(&dir);
    let out = out.ok().filter(|o| o.status.success())?;
    Some(keep(
        out.stdout
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| std::ffi::OsStr::from_bytes(l).to_os_string())
            .collect(),
    ))
}

/// `msgbench.*` message queues not there before and still there after a
/// short settle (names live a few microseconds while a connection is made).
fn new_mqueue_entries(before: &BTreeSet<OsString>) -> Vec<OsString> {
    let new = |now: Option<BTreeSet<OsString>>| -> BTreeSet<OsString> {
        now.unwrap_or_default()
            .difference(before)
            .cloned()
            .collect()
    };
    let first = new(mqueue_entries());
    if first.is_empty() {
        return Vec::new();
    }
    thread::sleep(Duration::from_millis(200));
    first
        .intersection(&new(mqueue_entries()))
        .cloned()
        .collect()
}

/// Entries of /dev/shm that were not there before and still are, after a
/// short settle (so a short-lived file of some other process is not blamed).
fn new_shm_entries(before: &BTreeSet<OsString>) -> Vec<OsString> {
    let new = |now: BTreeSet<OsString>| -> BTreeSet<OsString> {
        now.difference(before).cloned().collect()
    };
    let first = new(shm_entries());
    if first.is_empty() {
        return Vec::new();
    }
    thread::sleep(Duration::from_millis(200));
    first.intersection(&new(shm_entries())).cloned().collect()
}

// ---------------------------------------------------------------- data

/// xorshift64*: tiny, deterministic, good enough for test payloads.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    /// A seed from `MSGPASS_TEST_SEED`, or derived from `label`; printed
    /// so that a failure can be replayed.
    pub fn for_test(label: &str) -> Rng {
        let seed = std::env::var("MSGPASS_TEST_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| fnv64(label.as_bytes()));
        println!("{label}: seed {seed} (replay with MSGPASS_TEST_SEED={seed})");
        Rng::new(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..=max` (bias is irrelevant here).
    pub fn upto(&mut self, max: usize) -> usize {
        (self.next_u64() % (max as u64 + 1)) as usize
    }

    pub fn fill(&mut self, buf: &mut [u8]) {
        for chunk in buf.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }

    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.fill(&mut v);
        v
    }
}

/// FNV-1a, 64 bits.
pub fn fnv64(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in data {
        h ^= b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

// ---------------------------------------------------------------- server

/// Commands `0..=ECHO_LAST`: reply with every byte transformed (see
/// [`echo_reply`]).
pub const ECHO_LAST: u32 = 255;
/// Set on an echo command, [`CMD_GEN`] or [`CMD_OVERSIZE`]: the server
/// answers the same, but in place, with `Request::reply_with` (it reads the
/// request from the front of the lent buffer and transforms it there).
/// Echo replies depend on the low byte of the command only, so
/// [`echo_reply`] gives the reply to `IN_PLACE | cmd` too.
pub const IN_PLACE: u32 = 1 << 30;
/// Request `[len: u32][seed: u64]`: reply `len` bytes of [`Rng::new(seed)`].
pub const CMD_GEN: u32 = 0x1000;
/// Request `[code: i32]`: `reply_error(code)`.
pub const CMD_ERR: u32 = 0x1001;
/// The request is dropped unanswered (the library replies EIO).
pub const CMD_DROP: u32 = 0x1002;
/// Reply `max + 1` bytes; the server reports the outcome as an [`Event`].
pub const CMD_OVERSIZE: u32 = 0x1003;
/// Request `[ms: u32]`: announce [`Event::Busy`], sleep, reply empty.
pub const CMD_SLEEP: u32 = 0x1004;
/// Announce [`Event::Held`] and wait for the test to release the server.
pub const CMD_HOLD: u32 = 0x1005;
/// Reply the server's `connections()` as taken just before this receive.
pub const CMD_CONNS: u32 = 0x1006;
/// Reply `[count: u64][chain: u64]` over the one-way messages received
/// since the last `CMD_ONEWAY_STATS` (see [`oneway_chain`]), then reset.
/// Every one-way message is counted, whatever its command, before it is
/// handled like a call (its reply then goes nowhere).
pub const CMD_ONEWAY_STATS: u32 = 0x1007;

/// The running check the test server keeps over one-way messages: `chain`
/// extended by one message. Sensitive to loss, duplication, order and
/// every byte of the command and payload.
pub fn oneway_chain(chain: u64, cmd: u32, data: &[u8]) -> u64 {
    let mut h = chain ^ cmd as u64;
    h = h.wrapping_mul(0x0100_0000_01b3) ^ fnv64(data);
    h.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17)
}

/// What the test server tells the test.
#[derive(Debug)]
pub enum Event {
    /// A `CMD_SLEEP` started.
    Busy,
    /// A `CMD_HOLD` arrived; the server waits for a release.
    Held,
    /// Outcome of `Request::reply` (or `reply_with`, for
    /// `IN_PLACE | CMD_OVERSIZE`) with `max + 1` bytes.
    Oversize(Result<(), Error>),
}

/// The reply the test server gives to echo command `cmd` with payload
/// `req`: each byte plus `cmd` plus its index, then the FNV-1a of `req`
/// when that still fits in `max`.
pub fn echo_reply(cmd: u32, req: &[u8], max: usize) -> Vec<u8> {
    let mut out: Vec<u8> = req
        .iter()
        .enumerate()
        .map(|(i, &b)| b.wrapping_add(cmd as u8).wrapping_add(i as u8))
        .collect();
    if req.len() + 8 <= max {
        out.extend_from_slice(&fnv64(req).to_le_bytes());
    }
    out
}

/// How the test server reports events and is released from `CMD_HOLD`.
pub struct Hooks {
    pub events: Box<dyn FnMut(Event) + Send>,
    /// Shared by the threads of a pool server: each `CMD_HOLD` waits for
    /// one release.
    pub release: Option<Arc<Mutex<Receiver<()>>>>,
}

/// Answers `req` in place with `fill`, through `reply_with`, and checks
/// what that promises `fill`: a buffer of `max` bytes, never lent for a
/// one-way message (which gets no reply).
fn reply_in_place<R: Received>(
    req: R,
    max: usize,
    fill: impl FnOnce(&mut Window<'_>) -> usize,
) -> msgpass::Result<()> {
    let (cmd, oneway) = (req.cmd(), req.is_oneway());
    let mut lent = None;
    let r = req.reply_with(|buf| {
        lent = Some(buf.len());
        fill(buf)
    });
    match lent {
        Some(_) if oneway => panic!("reply_with lent a buffer for one-way message {cmd:#x}"),
        Some(n) if n != max => panic!("reply_with lent {n} bytes for {cmd:#x}, want {max}"),
        _ => r,
    }
}

/// Serves `chan` until `receive` returns `Ok(None)`; returns the number of
/// requests handled. Panics on a receive error.
pub fn serve<S: ServerChannel + ?Sized>(
    chan: &mut Channel<S>,
    max: usize,
    hooks: &mut Hooks,
) -> u64 {
    let mut handled = 0u64;
    let mut oneways = (0u64, 0u64);
    loop {
        let conns = chan.connections();
        let req = match chan.receive() {
            Ok(Some(r)) => r,
            Ok(None) => return handled,
            Err(e) => panic!("server receive failed: {e}"),
        };
        handled += 1;
        answer(req, max, conns, hooks, &mut oneways);
    }
}

/// Answers one request of the test server's protocol. `conns` is what
/// `CMD_CONNS` answers; `oneways` the count and chain of the one-way
/// messages received since the last `CMD_ONEWAY_STATS`.
pub fn answer<R: Received>(
    req: R,
    max: usize,
    conns: usize,
    hooks: &mut Hooks,
    oneways: &mut (u64, u64),
) {
    let cmd = req.cmd();
    if req.is_oneway() {
        oneways.0 += 1;
        oneways.1 = oneway_chain(oneways.1, cmd, req.data());
    }
    let res = match cmd & IN_PLACE != 0 {
        true => answer_in_place(req, max, hooks),
        false => answer_copying(req, max, conns, hooks, oneways),
    };
    // A client that vanished (a held request's reply says so) is not the
    // server's failure; anything else is.
    match res {
        Ok(()) | Err(Error::Disconnected) => {}
        Err(e) => panic!("server reply to command {cmd:#x} failed: {e}"),
    }
}

/// The little-endian u32 at `i` of `d`, if `d` is long enough.
fn u32_at(d: &[u8], i: usize) -> Option<u32> {
    d.get(i..i + 4)
        .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
}

/// [`answer`] for the commands with [`IN_PLACE`]: the reply is built in
/// the buffer the transport lends (`reply_with`).
fn answer_in_place<R: Received>(req: R, max: usize, hooks: &mut Hooks) -> msgpass::Result<()> {
    // The request is read in the lent window, never through `data()`: on
    // the shm transports that is the only copy out of the slot.
    let (cmd, len) = (req.cmd(), req.len());
    match cmd & !IN_PLACE {
        0..=ECHO_LAST => {
            // echo_reply, computed over the request in the lent window.
            reply_in_place(req, max, |buf| {
                let mut out = vec![0; len];
                buf.read(0, &mut out);
                let sum = fnv64(&out);
                for (i, b) in out.iter_mut().enumerate() {
                    *b = b.wrapping_add(cmd as u8).wrapping_add(i as u8);
                }
                buf.write(0, &out);
                if len + 8 <= max {
                    buf.write(len, &sum.to_le_bytes());
                    len + 8
                } else {
                    len
                }
            })
        }
        CMD_GEN => {
            assert!(len >= 12, "GEN request of {len} bytes");
            reply_in_place(req, max, |buf| {
                let len = u32::from_le_bytes(buf.get(0)) as usize;
                let seed = u64::from_le_bytes(buf.get(4));
                // Over the window: refused (the client hears EMSGSIZE).
                let mut out = vec![0; len.min(buf.len())];
                Rng::new(seed).fill(&mut out);
                buf.write(0, &out);
                len
            })
        }
        CMD_OVERSIZE => {
            let r = reply_in_place(req, max, |buf| {
                buf.write(0, &vec![7; buf.len()]);
                max + 1
            });
            (hooks.events)(Event::Oversize(r));
            Ok(())
        }
        _ => req.reply_error(libc::ENOTTY),
    }
}

/// [`answer`] for the commands without [`IN_PLACE`]: copying replies.
fn answer_copying<R: Received>(
    req: R,
    max: usize,
    conns: usize,
    hooks: &mut Hooks,
    oneways: &mut (u64, u64),
) -> msgpass::Result<()> {
    let cmd = req.cmd();
    let data = req.data();
    match cmd {
        0..=ECHO_LAST => {
            let out = echo_reply(cmd, data, max);
            req.reply(&out)
        }
        CMD_GEN => {
            let len = u32_at(data, 0).expect("GEN request") as usize;
            let seed = u64::from_le_bytes(data[4..12].try_into().expect("GEN seed"));
            let out = Rng::new(seed).bytes(len);
            req.reply(&out)
        }
        CMD_ERR => {
            let code = u32_at(data, 0).expect("ERR request") as i32;
            req.reply_error(code)
        }
        CMD_DROP => {
            drop(req);
            Ok(())
        }
        CMD_OVERSIZE => {
            let r = req.reply(&vec![7u8; max + 1]);
            (hooks.events)(Event::Oversize(r));
            Ok(())
        }
        CMD_SLEEP => {
            let ms = u32_at(data, 0).expect("SLEEP request");
            (hooks.events)(Event::Busy);
            thread::sleep(Duration::from_millis(ms as u64));
            req.reply(&[])
        }
        CMD_HOLD => {
            (hooks.events)(Event::Held);
            match &hooks.release {
                Some(rx) => {
                    let _ = rx.lock().expect("release lock").recv();
                }
                None => thread::sleep(Duration::from_secs(10)),
            }
            req.reply(b"released")
        }
        CMD_CONNS => req.reply(&(conns as u64).to_le_bytes()),
        CMD_ONEWAY_STATS => {
            let mut out = oneways.0.to_le_bytes().to_vec();
            out.extend_from_slice(&oneways.1.to_le_bytes());
            *oneways = (0, 0);
            req.reply(&out)
        }
        _ => req.reply_error(libc::ENOTTY),
    }
}

/// What a test drives its server threads with: their stop flag, the
/// release of a `CMD_HOLD`, and the events they report.
pub struct Controls {
    stop: Arc<std::sync::atomic::AtomicBool>,
    release: Option<Sender<()>>,
    events: Receiver<Event>,
}

impl Controls {
    /// Controls over `stop`, with a fresh release channel and event
    /// channel; returns them with the hooks the server threads take.
    fn new(
        stop: Arc<std::sync::atomic::AtomicBool>,
    ) -> (Controls, Sender<Event>, Arc<Mutex<Receiver<()>>>) {
        let (ev_tx, events) = mpsc::channel();
        let (release, rel_rx) = mpsc::channel();
        let c = Controls {
            stop,
            release: Some(release),
            events,
        };
        (c, ev_tx, Arc::new(Mutex::new(rel_rx)))
    }

    /// Lets one `CMD_HOLD` in progress reply.
    pub fn release(&self) {
        if let Some(r) = &self.release {
            let _ = r.send(());
        }
    }

    /// The next event, failing the test if none comes within the watchdog.
    pub fn event(&self) -> Event {
        self.events
            .recv_timeout(WATCHDOG)
            .expect("server event (did a server thread die?)")
    }

    /// Releases every hold for good and sets the stop flag.
    fn halt(&mut self) {
        self.release.take();
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The hooks of a server thread reporting on `events`, held until a
/// release comes on `release`.
fn hooks(events: Sender<Event>, release: Arc<Mutex<Receiver<()>>>) -> Hooks {
    Hooks {
        events: Box::new(move |e| {
            let _ = events.send(e);
        }),
        release: Some(release),
    }
}

/// A test server served by a pool of threads in this process
/// ([`Channel::into_pool`]), answering the same protocol as [`Server`].
pub struct PoolServer {
    handles: Vec<JoinHandle<u64>>,
    controls: Controls,
}

impl PoolServer {
    /// Creates the channel on the calling thread (so the endpoint exists
    /// when this returns) and serves it with `threads` threads.
    pub fn start(ns: &Namespace, name: &str, transport: &str, threads: usize) -> PoolServer {
        let t = msgpass::transport::by_name(transport).expect("known transport");
        let chan = Channel::create(ns, name, &*t, &Options::default())
            .unwrap_or_else(|e| panic!("create {name} over {transport}: {e}"));
        let max = chan.max_msg();
        let receivers = chan
            .into_pool(threads)
            .unwrap_or_else(|e| panic!("{transport}: a pool of {threads}: {e}"));
        assert_eq!(receivers.len(), threads);
        let (controls, ev_tx, rel_rx) = Controls::new(receivers[0].stop_flag());
        let handles = receivers
            .into_iter()
            .map(|mut rx| {
                let ev_tx = ev_tx.clone();
                let rel_rx = Arc::clone(&rel_rx);
                thread::Builder::new()
                    .name(format!("test-pool-{}", rx.index()))
                    .spawn(move || {
                        let mut hooks = hooks(ev_tx, rel_rx);
                        let mut handled = 0u64;
                        let mut oneways = (0, 0);
                        loop {
                            let conns = rx.connections();
                            match rx.receive() {
                                Ok(Some(req)) => {
                                    handled += 1;
                                    answer(req, max, conns, &mut hooks, &mut oneways);
                                }
                                Ok(None) => return handled,
                                Err(e) => panic!("pool receive failed: {e}"),
                            }
                        }
                    })
                    .expect("spawn pool thread")
            })
            .collect();
        PoolServer { handles, controls }
    }

    /// Lets one `CMD_HOLD` in progress reply.
    pub fn release(&self) {
        self.controls.release()
    }

    /// The next event, failing the test if none comes within the watchdog.
    pub fn event(&self) -> Event {
        self.controls.event()
    }

    /// Stops every thread of the pool and returns the requests each served.
    pub fn stop(mut self) -> Vec<u64> {
        self.controls.halt();
        std::mem::take(&mut self.handles)
            .into_iter()
            .map(|h| h.join().expect("pool thread panicked"))
            .collect()
    }
}

impl Drop for PoolServer {
    fn drop(&mut self) {
        self.controls.halt();
        for h in std::mem::take(&mut self.handles) {
            let _ = h.join();
        }
    }
}

/// A test server on its own thread in this process.
pub struct Server {
    handle: Option<JoinHandle<u64>>,
    controls: Controls,
    pub path: PathBuf,
}

impl Server {
    /// Creates the channel on the calling thread (so the endpoint exists
    /// when this returns) and serves it on a new thread.
    pub fn start(ns: &Namespace, name: &str, transport: &str) -> Server {
        let t = msgpass::transport::by_name(transport).expect("known transport");
        let chan = Channel::create(ns, name, &*t, &Options::default())
            .unwrap_or_else(|e| panic!("create {name} over {transport}: {e}"));
        Server::serve_channel(chan)
    }

    pub fn serve_channel<S: ServerChannel + ?Sized + 'static>(mut chan: Channel<S>) -> Server {
        let path = chan.path().to_path_buf();
        let (controls, ev_tx, rel_rx) = Controls::new(chan.stop_flag());
        let handle = thread::Builder::new()
            .name("test-server".into())
            .spawn(move || {
                let mut hooks = hooks(ev_tx, rel_rx);
                let max = chan.max_msg();
                serve(&mut chan, max, &mut hooks)
            })
            .expect("spawn server thread");
        Server {
            handle: Some(handle),
            controls,
            path,
        }
    }

    /// Lets a `CMD_HOLD` in progress reply.
    pub fn release(&self) {
        self.controls.release()
    }

    /// The next event, failing the test if none comes within the watchdog.
    pub fn event(&self) -> Event {
        self.controls.event()
    }

    /// Stops the server, drops its channel, and returns the requests served.
    pub fn stop(mut self) -> u64 {
        self.shutdown().expect("server thread panicked")
    }

    fn shutdown(&mut self) -> thread::Result<u64> {
        self.controls.halt();
        match self.handle.take() {
            Some(h) => h.join(),
            None => Ok(0),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let r = self.shutdown();
        if r.is_err() && !thread::panicking() {
            panic!("server thread panicked");
        }
    }
}

// ---------------------------------------------------------------- children

/// Environment variable that turns the child-entry test into a child role.
pub const CHILD_ENV: &str = "MSGPASS_TEST_CHILD";
/// Namespace directory, transport and endpoint name for a child.
pub const CHILD_NS: &str = "MSGPASS_TEST_NS";
pub const CHILD_TRANSPORT: &str = "MSGPASS_TEST_TRANSPORT";
pub const CHILD_NAME: &str = "MSGPASS_TEST_NAME";
/// How long a child lives at most, even if its parent forgets it.
pub const CHILD_LIFETIME: Duration = Duration::from_secs(60);

/// A child process running one role of this test binary. Killed with
/// SIGKILL and reaped on drop, so a failing test never leaks it; it also
/// dies with the thread that spawned it (PR_SET_PDEATHSIG) and after
/// [`CHILD_LIFETIME`] on its own.
pub struct ChildProc {
    child: std::process::Child,
    lines: Receiver<String>,
    reaped: bool,
}

impl ChildProc {
    /// Re-executes this test binary to run only `entry_test`, with
    /// `CHILD_ENV=role` and `env`.
    pub fn spawn(entry_test: &str, role: &str, env: &[(&str, &Path)]) -> ChildProc {
        let exe = std::env::current_exe().expect("current_exe");
        let mut cmd = Command::new(exe);
        cmd.args(["--exact", entry_test, "--nocapture", "--test-threads=1"])
            .env(CHILD_ENV, role)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        // SAFETY: prctl is async-signal-safe and touches no memory of the
        // parent; nothing here allocates.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                Ok(())
            });
        }
        let mut child = cmd.spawn().expect("spawn child test process");
        let out = child.stdout.take().expect("piped stdout");
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        ChildProc {
            child,
            lines,
            reaped: false,
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Waits for a stdout line containing `marker`; returns what follows it.
    pub fn expect_line(&self, marker: &str) -> String {
        let deadline = Instant::now() + WATCHDOG;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => {
                    // libtest may print "test child_entry ... " first.
                    if let Some(at) = l.find(marker) {
                        return l[at + marker.len()..].trim().to_string();
                    }
                }
                Err(e) => panic!("child {} never printed {marker:?}: {e}", self.pid()),
            }
        }
    }

    /// Sends SIGKILL without waiting.
    pub fn kill(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
        }
    }

    /// Sends SIGKILL and reaps the child: when this returns, the kernel has
    /// closed all its descriptors and released its locks.
    pub fn kill_and_reap(&mut self) {
        if !self.reaped {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.reaped = true;
        }
    }
}

impl Drop for ChildProc {
    fn drop(&mut self) {
        self.kill_and_reap();
    }
}

/// Checks that a test macro instantiated (`instantiated`) exactly the
/// transport table's names: `what` names the macro in the failure.
pub fn assert_every_transport(instantiated: &[&str], what: &str) {
    let mut got = instantiated.to_vec();
    got.sort_unstable();
    let mut want = msgpass::transport::NAMES.to_vec();
    want.sort_unstable();
    assert_eq!(
        got, want,
        "{what} must list every name in the transport table, and only those"
    );
}

/// In a child: the namespace, endpoint name and transport its parent gave
/// it ([`CHILD_NS`], [`CHILD_NAME`], [`CHILD_TRANSPORT`]).
pub fn child_context() -> (Namespace, String, Box<dyn msgpass::Transport>) {
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("child needs {k}"));
    let ns = Namespace::open(var(CHILD_NS)).expect("child: open namespace");
    let t = msgpass::transport::by_name(&var(CHILD_TRANSPORT)).expect("child: transport");
    (ns, var(CHILD_NAME), t)
}

/// In a child: exits the process after [`CHILD_LIFETIME`] whatever happens.
pub fn child_self_destruct() {
    child_self_destruct_after(CHILD_LIFETIME);
}

/// In a child: exits the process after `lifetime` whatever happens.
pub fn child_self_destruct_after(lifetime: Duration) {
    thread::spawn(move || {
        thread::sleep(lifetime);
        eprintln!(
            "test child {}: lifetime exceeded, exiting",
            std::process::id()
        );
        std::process::exit(3);
    });
}

/// A loopback TCP port that is free now and lies below the kernel's
/// ephemeral range, which every `bind(":0")` of tests running in parallel
/// draws from: a port found with `bind(":0")` and released can be handed to
/// another test before the server under test binds it.
pub fn unused_port() -> u16 {
    let ephemeral_lo = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (lo, hi) = (10_000u16, ephemeral_lo.max(10_001));
    let span = u32::from(hi - lo);
    let seed = std::process::id().wrapping_mul(2_654_435_761)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
    (0..span)
        .map(|k| lo + ((seed.wrapping_add(k.wrapping_mul(7919))) % span) as u16)
        .find(|&p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        .expect("a free loopback port below the ephemeral range")
}

/// Makes `calls` honest echo calls, from another thread, on the connection
/// `connect` opens; panics (naming `who`) unless all are answered,
/// correctly, within `bound`. The honest client beside an attacker.
pub fn honest_calls(
    who: &str,
    calls: usize,
    bound: Duration,
    connect: impl FnOnce() -> Connection + Send + 'static,
) {
    let (done, finished) = mpsc::channel();
    thread::spawn(move || {
        let mut c = connect();
        let mut buf = vec![0u8; 256];
        for i in 0..calls {
            let req = format!("honest {i}").into_bytes();
            let n = c.call(1, &req, &mut buf).expect("honest call");
            assert_eq!(buf[..n], echo_reply(1, &req, c.max_msg())[..]);
        }
        let _ = done.send(());
    });
    finished
        .recv_timeout(bound)
        .unwrap_or_else(|_| panic!("{who}: the honest client was not served beside the attacker"));
}

/// Invokes the macro `$m` with every transport as `module_name: "name"`,
/// the one list the per-transport suites (conformance, hostile peers) are
/// instantiated from; each checks it against `msgpass::transport::NAMES`.
#[allow(unused_macros)]
macro_rules! every_transport {
    ($m:ident) => {
        $m! {
            shm: "shm",
            shm_spin: "shm-spin",
            shm_block: "shm-block",
            shm_hybrid: "shm-hybrid",
            uds: "uds",
            uds_stream: "uds-stream",
            uds_dgram: "uds-dgram",
            pipe: "pipe",
            posix_mq: "posix-mq",
            sysv_msg: "sysv-msg",
            fifo: "fifo",
            eventfd: "eventfd",
            io_uring: "io-uring",
            signal: "signal",
            fuse: "fuse",
            tcp: "tcp",
            udp: "udp",
        }
    };
}

/// True when `transport` cannot run here (fuse without /dev/fuse or root):
/// says why and skips the test when run by hand, fails it under `CI`.
pub fn unavailable_here(transport: &str) -> bool {
    let info = msgpass::transport::info(transport).expect("known transport");
    let Some(why) = info.unavailable() else {
        return false;
    };
    assert!(
        std::env::var_os("CI").is_none(),
        "{transport}: CI is set: {why}"
    );
    println!("{transport}: skipped: {why}");
    true
}

/// Default options with a short `tick`, so that deadlines pass quickly.
pub fn tick_options(tick: Duration) -> Options {
    Options {
        tick,
        ..Options::default()
    }
}

/// A server of `transport` on a fresh endpoint `hostile/0` of `t`, with a
/// short `tick` so that deadlines pass quickly, and the endpoint's path
/// (for clients that speak the rendezvous by hand).
pub fn raw_server(t: &TestNs, transport: &str, tick: Duration) -> (Server, PathBuf) {
    let tr = msgpass::transport::by_name(transport).expect("transport");
    let chan = Channel::create(&t.ns, "hostile/0", &*tr, &tick_options(tick)).expect("create");
    let path = chan.path().to_path_buf();
    (Server::serve_channel(chan), path)
}

/// A client that met the server through the rendezvous by hand: its
/// session, the hello's extra bytes and the descriptors it carried.
pub struct RawClient {
    /// The session socket.
    pub session: std::os::fd::OwnedFd,
    /// The transport's extra hello bytes.
    pub extra: Vec<u8>,
    /// The descriptors the hello carried.
    pub fds: Vec<std::os::fd::OwnedFd>,
}

/// Connects to `path` and reads the server's hello (within 5 s).
pub fn raw_client(path: &Path) -> RawClient {
    use oslayer::socket::{RecvFlags, SocketType};
    use std::os::fd::AsFd;
    let session = oslayer::socket::unix_connect(path, SocketType::SEQPACKET).expect("connect");
    oslayer::socket::set_recv_timeout(session.as_fd(), Some(Duration::from_secs(5)))
        .expect("timeout");
    let mut hello = [0u8; 16];
    let mut extra = vec![0u8; 1024];
    let got = oslayer::socket::recv_parts(
        session.as_fd(),
        &mut hello,
        &mut extra,
        RecvFlags::empty(),
        true,
    )
    .expect("hello");
    assert_eq!(&hello[..4], b"MSGP");
    extra.truncate(got.len.saturating_sub(hello.len()));
    RawClient {
        session,
        extra,
        fds: got.fds,
    }
}

/// `calls` honest echo calls to `hostile/0` of the namespace at `ns_dir`
/// over `transport` (options with `tick`), each answered within `bound`:
/// the client beside a raw attacker.
pub fn honest_calls_at(
    ns_dir: &Path,
    transport: &'static str,
    calls: usize,
    tick: Duration,
    bound: Duration,
) {
    let ns_dir = ns_dir.to_path_buf();
    honest_calls(transport, calls, bound, move || {
        let ns = Namespace::open(&ns_dir).expect("namespace");
        let tr = msgpass::transport::by_name(transport).expect("transport");
        Connection::open(&ns, "hostile/0", &*tr, &tick_options(tick)).expect("honest open")
    });
}

/// True once the server hung up `session` (within `bound`). Looks for the
/// hang-up only, reading nothing: a client whose replies were read here
/// would have made room for the server's next ones, and never be dropped
/// for not reading them.
pub fn hung_up(session: &std::os::fd::OwnedFd, bound: Duration) -> bool {
    use oslayer::poll::{self, PollFd};
    use std::os::fd::AsFd;
    let gone = libc::POLLRDHUP | poll::HUP | poll::ERR;
    let deadline = Instant::now() + bound;
    while Instant::now() < deadline {
        let mut p = [PollFd::new(session.as_fd(), libc::POLLRDHUP)];
        if poll::poll(&mut p, Some(Duration::from_millis(50))).expect("poll") > 0
            && p[0].revents & gone != 0
        {
            return true;
        }
    }
    false
}
