//! Soak test (issue 10): one server per transport, all at once, under
//! honest clients that check every answer and hostile ones that connect
//! and vanish, get killed mid-call (SIGKILL), get frozen (SIGSTOP) and then
//! killed, flood one-way messages, send oversize requests, unknown and
//! reserved commands, and raw garbage on the endpoint socket. After a
//! warm-up and again at the end (with every client gone) it takes the
//! process's memory (RSS), descriptors, threads and the kernel objects
//! (System V queues, POSIX queues, /dev/shm, files in the namespace): they
//! must be flat, and every honest call must have been answered correctly.
//!
//! `soak_short` runs for 10 s in every `cargo test`, so the code does not
//! rot. The real soak is ignored and run by hand (as root for fuse):
//!
//! ```text
//! MSGPASS_SOAK_DURATION=10m MSGPASS_SOAK_TRANSPORTS=uds,shm \
//!     cargo test -p msgpass --test soak -- --ignored --nocapture
//! ```
//!
//! Both variables are optional: 10 minutes and every transport available
//! here are the defaults.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use common::*;
use msgpass::{Channel, Connection, Error, Namespace, Options};
use oslayer::socket::SocketType;

/// Soak length, like `90s` or `10m` (default 10 minutes).
const ENV_DURATION: &str = "MSGPASS_SOAK_DURATION";
/// Comma-separated transports (default: every one available here).
const ENV_TRANSPORTS: &str = "MSGPASS_SOAK_TRANSPORTS";

/// Reply with every byte plus one.
const CMD_ECHO: u32 = 1;
/// Sleep 20 ms, then reply like `CMD_ECHO`: a window to die in mid-call.
const CMD_SLOW: u32 = 2;
/// Endpoint name used on every transport's namespace.
const NAME: &str = "soak/server";
/// RSS growth tolerated between the warm-up and the end (allocator noise).
const RSS_SLACK_KB: i64 = 8 * 1024;
/// How long the end state may take to settle before a difference counts.
const SETTLE: Duration = Duration::from_secs(10);

#[test]
fn soak_short() {
    run_soak(Duration::from_secs(10), None);
}

#[test]
#[ignore = "long: run by hand, see the module documentation"]
fn soak() {
    let duration = match std::env::var(ENV_DURATION) {
        Ok(s) => humantime::parse_duration(&s)
            .unwrap_or_else(|e| panic!("{ENV_DURATION}={s:?}: {e} (use e.g. 90s or 10m)")),
        Err(_) => Duration::from_secs(600),
    };
    let list = std::env::var(ENV_TRANSPORTS).ok();
    run_soak(duration, list.as_deref());
}

/// The leak check can say no: a file left in a namespace and a new
/// /dev/shm entry are both reported.
#[test]
fn leak_check_catches_leftovers() {
    let tns = TestNs::new();
    let ns_dir = tns.dir().join("probe");
    let t = Target {
        transport: "probe",
        ns: Namespace::open(&ns_dir).expect("namespace"),
        ns_dir: ns_dir.clone(),
        stats: Shared::default(),
    };
    let a = snapshot(std::slice::from_ref(&t));
    assert!(leaks(&a, &a).is_empty(), "a state leaks against itself");
    let shm = PathBuf::from(format!(
        "/dev/shm/msgpass-soak-probe-{}",
        std::process::id()
    ));
    fs::write(ns_dir.join("left"), b"x").expect("write probe file");
    fs::write(&shm, b"x").expect("write /dev/shm probe");
    let b = snapshot(std::slice::from_ref(&t));
    let _ = fs::remove_file(&shm);
    let found = leaks(&a, &b);
    assert!(
        found.iter().any(|l| l.contains("namespace files")),
        "{found:?}"
    );
    assert!(found.iter().any(|l| l.contains("/dev/shm")), "{found:?}");
}

/// The entry point of the child processes the hostile clients kill.
#[test]
fn child_entry() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    child_self_destruct();
    assert_eq!(role, "caller", "unknown child role");
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} not set"));
    let ns = Namespace::open(var(CHILD_NS)).expect("namespace");
    let tr = msgpass::transport::by_name(&var(CHILD_TRANSPORT)).expect("transport");
    let opts = Options {
        wait: Some(Duration::from_secs(5)),
        ..Options::default()
    };
    let mut conn = Connection::open(&ns, &var(CHILD_NAME), &*tr, &opts).expect("connect");
    println!("soak-ready");
    let mut rng = Rng::new(u64::from(std::process::id()));
    let mut reply = vec![0u8; conn.max_msg()];
    loop {
        let len = rng.upto(512);
        let req = rng.bytes(len);
        let cmd = if rng.upto(1) == 0 { CMD_SLOW } else { CMD_ECHO };
        if conn.call(cmd, &req, &mut reply).is_err() {
            std::process::exit(0);
        }
    }
}

// ---------------------------------------------------------------- counters

/// Outcomes counted by kind, for one transport.
#[derive(Default)]
struct Stats {
    honest_calls: u64,
    /// The slowest honest call (shown, never asserted: a frozen or
    /// flooding client that stalled the server would show here).
    slowest: Duration,
    honest_failures: BTreeMap<String, u64>,
    first_failures: Vec<String>,
    hostile: BTreeMap<String, u64>,
    server_errors: BTreeMap<String, u64>,
}

type Shared = Arc<Mutex<Stats>>;

fn lock(s: &Shared) -> std::sync::MutexGuard<'_, Stats> {
    s.lock().unwrap_or_else(|p| p.into_inner())
}

/// The variant name of an error, like `Disconnected` or `TooLarge`.
fn kind(e: &Error) -> String {
    let d = format!("{e:?}");
    d.split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("?")
        .to_string()
}

fn bump(map: &mut BTreeMap<String, u64>, k: impl Into<String>) {
    *map.entry(k.into()).or_default() += 1;
}

// ---------------------------------------------------------------- server

fn expected(req: &[u8]) -> Vec<u8> {
    req.iter().map(|b| b.wrapping_add(1)).collect()
}

fn serve(mut chan: Channel, stats: Shared) {
    loop {
        let req = match chan.receive() {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(e) => {
                bump(
                    &mut lock(&stats).server_errors,
                    format!("receive:{}", kind(&e)),
                );
                thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        let res = match req.cmd() {
            CMD_ECHO => {
                let out = expected(req.data());
                req.reply(&out)
            }
            CMD_SLOW => {
                thread::sleep(Duration::from_millis(20));
                let out = expected(req.data());
                req.reply(&out)
            }
            _ => req.reply_error(libc::ENOTTY),
        };
        // A client that vanished is not an error (reply returns Ok).
        if let Err(e) = res {
            bump(
                &mut lock(&stats).server_errors,
                format!("reply:{}", kind(&e)),
            );
        }
    }
}

// ---------------------------------------------------------------- clients

/// What every client of one transport needs.
#[derive(Clone)]
struct Target {
    transport: &'static str,
    ns_dir: PathBuf,
    ns: Namespace,
    stats: Shared,
}

impl Target {
    fn open(&self) -> msgpass::Result<Connection> {
        let tr = msgpass::transport::by_name(self.transport)?;
        let opts = Options {
            wait: Some(Duration::from_secs(5)),
            ..Options::default()
        };
        Connection::open(&self.ns, NAME, &*tr, &opts)
    }

    fn honest_failure(&self, what: String) {
        let mut s = lock(&self.stats);
        let k = what.split(':').next().unwrap_or("?").to_string();
        bump(&mut s.honest_failures, k);
        if s.first_failures.len() < 5 {
            s.first_failures.push(what);
        }
    }
}

/// Connects, makes a few calls checking each answer, disconnects; again.
fn honest(t: Target, stop: Arc<AtomicBool>, seed: u64) {
    let mut rng = Rng::new(seed);
    while !stop.load(Ordering::Relaxed) {
        let mut conn = match t.open() {
            Ok(c) => c,
            Err(e) => {
                t.honest_failure(format!("open:{} {e}", kind(&e)));
                thread::sleep(Duration::from_millis(50));
                continue;
            }
        };
        let max = conn.max_msg();
        let mut reply = vec![0u8; max];
        for _ in 0..1 + rng.upto(200) {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let len = if rng.upto(20) == 0 {
                rng.upto(max)
            } else {
                rng.upto(1024.min(max))
            };
            let req = rng.bytes(len);
            let start = Instant::now();
            match conn.call(CMD_ECHO, &req, &mut reply) {
                Ok(n) if reply[..n] == expected(&req)[..] => {
                    let took = start.elapsed();
                    let mut s = lock(&t.stats);
                    s.honest_calls += 1;
                    s.slowest = s.slowest.max(took);
                }
                Ok(n) => t.honest_failure(format!("wrong-reply: {n} bytes for a {len}-byte echo")),
                Err(e) => t.honest_failure(format!("call:{} {e}", kind(&e))),
            }
        }
    }
}

/// Misbehaves at random until stopped.
fn hostile(t: Target, stop: Arc<AtomicBool>, seed: u64) {
    let mut rng = Rng::new(seed);
    while !stop.load(Ordering::Relaxed) {
        let act = rng.upto(6);
        let outcome = match act {
            0 => t.open().map(drop).map(|_| "connect-drop:ok".to_string()),
            1 | 2 => Ok(child_attack(&t, &mut rng, act == 2)),
            3 => oneway_flood(&t, &mut rng),
            4 => t.open().map(|mut c| {
                let req = vec![0u8; c.max_msg() + 1 + rng.upto(1000)];
                let mut reply = vec![0u8; 16];
                match c.call(CMD_ECHO, &req, &mut reply) {
                    Ok(_) => "oversize:accepted?".to_string(),
                    Err(e) => format!("oversize:{}", kind(&e)),
                }
            }),
            5 => t.open().map(|mut c| {
                let mut reply = vec![0u8; 64];
                let cmd = if rng.upto(3) == 0 {
                    msgpass::ONEWAY | rng.next_u64() as u32
                } else {
                    3 + (rng.next_u64() as u32 % 0x7fff_fff0)
                };
                let len = rng.upto(64);
                match c.call(cmd, &rng.bytes(len), &mut reply) {
                    Ok(_) => "garbage-cmd:answered?".to_string(),
                    Err(e) => format!("garbage-cmd:{}", kind(&e)),
                }
            }),
            _ => Ok(raw_garbage(&t, &mut rng)),
        };
        let k = outcome.unwrap_or_else(|e| format!("open:{}", kind(&e)));
        bump(&mut lock(&t.stats).hostile, k);
    }
}

/// A child process calls in a loop; it is killed mid-call, or frozen with
/// SIGSTOP for a while first.
fn child_attack(t: &Target, rng: &mut Rng, freeze: bool) -> String {
    let ns_dir: &Path = &t.ns_dir;
    let mut child = ChildProc::spawn(
        "child_entry",
        "caller",
        &[
            (CHILD_NS, ns_dir),
            (CHILD_TRANSPORT, Path::new(t.transport)),
            (CHILD_NAME, Path::new(NAME)),
        ],
    );
    child.expect_line("soak-ready");
    thread::sleep(Duration::from_millis(rng.upto(100) as u64));
    let pid = child.pid() as libc::pid_t;
    if freeze {
        // SAFETY: kill(2) on our own child, which is not yet reaped.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        thread::sleep(Duration::from_millis(rng.upto(400) as u64));
    }
    child.kill_and_reap();
    if freeze {
        "frozen-then-killed".into()
    } else {
        "killed-mid-call".into()
    }
}

fn oneway_flood(t: &Target, rng: &mut Rng) -> msgpass::Result<String> {
    let mut c = t.open()?;
    if !c.supports_oneway() {
        return Ok("oneway:unsupported".into());
    }
    let n = 1 + rng.upto(2000);
    let max = c.max_msg().min(4096);
    for _ in 0..n {
        let len = rng.upto(max);
        if let Err(e) = c.send_oneway(CMD_ECHO, &rng.bytes(len)) {
            return Ok(format!("oneway-flood:{}", kind(&e)));
        }
    }
    Ok("oneway-flood:ok".into())
}

/// Raw bytes on the endpoint as a Unix socket (rendezvous transports meet
/// there; the others refuse the connect).
fn raw_garbage(t: &Target, rng: &mut Rng) -> String {
    let Ok(path) = t.ns.path_of(NAME) else {
        return "raw:no-path".into();
    };
    let ty = if rng.upto(1) == 0 {
        SocketType::SEQPACKET
    } else {
        SocketType::STREAM
    };
    match oslayer::socket::unix_connect(&path, ty) {
        Ok(fd) => {
            let len = rng.upto(256);
            let junk = rng.bytes(len);
            let _ = oslayer::socket::send_bytes(fd.as_fd(), &junk);
            "raw-garbage:sent".into()
        }
        Err(_) => "raw-garbage:refused".into(),
    }
}

// ---------------------------------------------------------------- resources

/// What must be flat between the warm-up and the end.
#[derive(Debug, Clone, PartialEq)]
struct Snapshot {
    rss_kb: i64,
    fds: usize,
    threads: usize,
    sysv: BTreeSet<i32>,
    mqueue: Option<BTreeSet<OsString>>,
    shm: BTreeSet<OsString>,
    files: BTreeMap<&'static str, Vec<PathBuf>>,
}

fn count_dir(p: &str) -> usize {
    fs::read_dir(p).map(|rd| rd.count()).unwrap_or(0)
}

fn snapshot(targets: &[Target]) -> Snapshot {
    let rss_kb = fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))?
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()
        })
        .unwrap_or(0);
    let sysv = fs::read_to_string("/proc/sysvipc/msg")
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
        .collect();
    let shm = fs::read_dir("/dev/shm")
        .map(|rd| rd.flatten().map(|e| e.file_name()).collect())
        .unwrap_or_default();
    Snapshot {
        rss_kb,
        fds: count_dir("/proc/self/fd"),
        threads: count_dir("/proc/self/task"),
        sysv,
        mqueue: mqueue_entries(),
        shm,
        files: targets
            .iter()
            .map(|t| (t.transport, list_recursive(&t.ns_dir)))
            .collect(),
    }
}

/// What grew from `a` to `b`, one line each; empty when flat.
fn leaks(a: &Snapshot, b: &Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    if b.rss_kb - a.rss_kb > RSS_SLACK_KB {
        out.push(format!("RSS grew {} -> {} kB", a.rss_kb, b.rss_kb));
    }
    if b.fds > a.fds {
        out.push(format!("descriptors {} -> {}", a.fds, b.fds));
    }
    if b.threads > a.threads {
        out.push(format!("threads {} -> {}", a.threads, b.threads));
    }
    let new_sysv: Vec<_> = b.sysv.difference(&a.sysv).collect();
    if !new_sysv.is_empty() {
        out.push(format!("SysV queues {new_sysv:?}"));
    }
    if let (Some(x), Some(y)) = (&a.mqueue, &b.mqueue) {
        let new: Vec<_> = y.difference(x).collect();
        if !new.is_empty() {
            out.push(format!("POSIX queues {new:?}"));
        }
    }
    let new_shm: Vec<_> = b.shm.difference(&a.shm).collect();
    if !new_shm.is_empty() {
        out.push(format!("/dev/shm {new_shm:?}"));
    }
    for (t, files) in &b.files {
        let before = a.files.get(t).cloned().unwrap_or_default();
        let new: Vec<_> = files.iter().filter(|f| !before.contains(f)).collect();
        if !new.is_empty() {
            out.push(format!("{t}: namespace files {new:?}"));
        }
    }
    out
}

/// Waits up to [`SETTLE`] for the state to come back to `a`'s (servers
/// notice dead clients within a tick or two); returns the last snapshot.
fn settled(a: &Snapshot, targets: &[Target]) -> Snapshot {
    let until = Instant::now() + SETTLE;
    loop {
        let b = snapshot(targets);
        if leaks(a, &b).is_empty() || Instant::now() > until {
            return b;
        }
        thread::sleep(Duration::from_millis(250));
    }
}

/// A snapshot once descriptors and threads stop changing (the warm-up's
/// connections closing), so the end is compared with a quiet state.
fn quiet(targets: &[Target]) -> Snapshot {
    let until = Instant::now() + SETTLE;
    let mut a = snapshot(targets);
    loop {
        thread::sleep(Duration::from_millis(500));
        let b = snapshot(targets);
        if (b.fds == a.fds && b.threads == a.threads) || Instant::now() > until {
            return b;
        }
        a = b;
    }
}

// ---------------------------------------------------------------- driver

/// Runs honest and hostile clients against every target for `d`, then
/// waits for all of them.
fn phase(targets: &[Target], d: Duration, seed: u64) {
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers: Vec<JoinHandle<()>> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let s = seed ^ ((i as u64 + 1) << 32);
        for (j, f) in [honest, hostile].into_iter().enumerate() {
            let (t, stop) = (t.clone(), stop.clone());
            let name = format!("soak-{}-{j}", t.transport);
            let h = thread::Builder::new()
                .name(name)
                .spawn(move || f(t, stop, s + j as u64))
                .expect("spawn soak client");
            workers.push(h);
        }
    }
    thread::sleep(d);
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        if let Err(p) = w.join() {
            std::panic::resume_unwind(p);
        }
    }
}

fn run_soak(duration: Duration, list: Option<&str>) {
    let names: Vec<&'static str> = match list {
        Some(l) => l
            .split(',')
            .map(|n| {
                msgpass::transport::info(n.trim())
                    .unwrap_or_else(|e| panic!("{ENV_TRANSPORTS}: {e}"))
                    .name
            })
            .collect(),
        None => msgpass::transport::TRANSPORTS
            .iter()
            .filter(|t| t.unavailable().is_none())
            .map(|t| t.name)
            .collect(),
    };
    let warmup = (duration / 5).min(Duration::from_secs(30));
    let main = duration.saturating_sub(warmup);
    let limit = duration + Duration::from_secs(120);
    watchdog("soak", limit, move || {
        let tns = TestNs::new();
        let mut servers = Vec::new();
        let mut targets = Vec::new();
        for name in names {
            let ns_dir = tns.dir().join(name);
            let ns = Namespace::open(&ns_dir).expect("transport namespace");
            let tr = msgpass::transport::by_name(name).expect("transport");
            let chan = Channel::create(&ns, NAME, &*tr, &Options::default())
                .unwrap_or_else(|e| panic!("serve {name}: {e}"));
            let stop = chan.stop_flag();
            let stats = Shared::default();
            let st = stats.clone();
            let h = thread::Builder::new()
                .name(format!("soak-server-{name}"))
                .spawn(move || serve(chan, st))
                .expect("spawn server");
            servers.push((stop, h));
            targets.push(Target {
                transport: name,
                ns_dir,
                ns,
                stats,
            });
        }
        let seed = Rng::for_test("soak").next_u64();
        phase(&targets, warmup, seed);
        let after_warmup = quiet(&targets);
        for t in &targets {
            *lock(&t.stats) = Stats::default();
        }
        phase(&targets, main, seed.rotate_left(17));
        let end = settled(&after_warmup, &targets);
        let leaked = leaks(&after_warmup, &end);
        for (stop, h) in servers {
            stop.store(true, Ordering::Relaxed);
            h.join().expect("server thread");
        }
        let mut failed = summary(&targets, main, &after_warmup, &end, &leaked);
        // With its server gone, each transport's namespace must be empty.
        for t in &targets {
            let left = list_recursive(&t.ns_dir);
            if left.is_empty() {
                let _ = fs::remove_dir(&t.ns_dir);
            } else {
                println!("LEAK: {}: left in the namespace {left:?}", t.transport);
                failed.push(format!("{}: namespace not empty", t.transport));
            }
        }
        assert!(failed.is_empty(), "soak failed: {}", failed.join("; "));
        tns.finish();
    });
}

/// Prints the per-transport summary; returns what failed.
fn summary(
    targets: &[Target],
    main: Duration,
    a: &Snapshot,
    b: &Snapshot,
    leaked: &[String],
) -> Vec<String> {
    println!(
        "soak: {} transports for {main:?} after warm-up",
        targets.len()
    );
    let mut failed: Vec<String> = targets.iter().flat_map(transport_summary).collect();
    print_resources(a, b);
    if leaked.is_empty() {
        println!("leaks: none");
    }
    for l in leaked {
        println!("LEAK: {l}");
        failed.push(format!("leak: {l}"));
    }
    failed
}

/// `k=v` pairs of a count map, space-separated.
fn counts(m: &BTreeMap<String, u64>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints one transport's lines of the summary; returns what failed.
fn transport_summary(t: &Target) -> Vec<String> {
    let mut failed = Vec::new();
    let s = lock(&t.stats);
    let bad: u64 = s.honest_failures.values().sum();
    let verdict = if bad == 0 && s.server_errors.is_empty() {
        "ok"
    } else {
        "FAIL"
    };
    println!(
        "{:<10} {verdict:<4} honest calls {} (slowest {:.1?}) failed {bad} {}",
        t.transport,
        s.honest_calls,
        s.slowest,
        counts(&s.honest_failures)
    );
    println!("           hostile {}", counts(&s.hostile));
    if !s.server_errors.is_empty() {
        println!("           server errors {}", counts(&s.server_errors));
    }
    for f in &s.first_failures {
        println!("           first failures: {f}");
    }
    if bad > 0 || s.honest_calls == 0 {
        failed.push(format!(
            "{}: {bad} honest calls failed of {}",
            t.transport,
            s.honest_calls + bad
        ));
    }
    if !s.server_errors.is_empty() {
        failed.push(format!(
            "{}: server errors {}",
            t.transport,
            counts(&s.server_errors)
        ));
    }
    failed
}

/// Prints the process's resources after the warm-up (`a`) and at the end
/// (`b`).
fn print_resources(a: &Snapshot, b: &Snapshot) {
    let queues =
        |m: &Option<BTreeSet<OsString>>| m.as_ref().map_or("?".into(), |m| m.len().to_string());
    println!(
        "resources after warm-up -> end: RSS {} -> {} kB, fds {} -> {}, threads {} -> {}, \
         SysV queues {} -> {}, POSIX queues {} -> {}, /dev/shm {} -> {}",
        a.rss_kb,
        b.rss_kb,
        a.fds,
        b.fds,
        a.threads,
        b.threads,
        a.sysv.len(),
        b.sysv.len(),
        queues(&a.mqueue),
        queues(&b.mqueue),
        a.shm.len(),
        b.shm.len(),
    );
}
