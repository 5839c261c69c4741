//! The MEM tests (docs/methodology.md, "msgbench rtos").
//!
//! MEM-B-LEK: for `--duration`, rounds of creating and destroying a thread,
//! a POSIX unnamed and a named semaphore, a pthread mutex, and a channel of
//! every msgpass transport that runs here (created in a private namespace,
//! served by a thread for one call from a connection opened on the thread
//! running the rounds, both dropped). The process's resident memory, open
//! descriptors and kernel objects (our POSIX message queues, the System V
//! message queues this process last sent to or received from, the test's
//! named semaphore) are taken after the warm-up (a tenth of the run, at
//! least three rounds: allocator arenas and buffer pools settle) and at the
//! end. Tolerance: resident memory may grow by at most
//! [`RSS_TOLERANCE_KIB`]; descriptors and kernel objects may not grow at
//! all; any error in a round fails.

use std::ffi::CString;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use msgpass::{Channel, Connection, Namespace, Options};
use oslayer::pmutex::{Protocol, PthreadMutex};
use oslayer::sem::{NamedSem, PosixSem};

use super::ctx::Ctx;
use super::def::{TestDef, Variant};
use super::row::Group;
use super::row::{Outcome, Reference};
use crate::measure::footprint::{count_dir, open_fds, rss_bytes};

/// Largest growth of resident memory accepted after the warm-up, KiB.
pub const RSS_TOLERANCE_KIB: u64 = 1024;

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    vec![TestDef {
        id: "MEM-B-LEK",
        group: Group::MEM,
        title: "create/destroy OS objects in a loop: memory, descriptors and kernel objects must not grow",
        needs_fifo: false,
        substitute: None,
        run: lek,
    }]
}

/// What is measured at the start and at the end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Snapshot {
    /// Resident memory, KiB.
    pub rss_kib: u64,
    /// Open descriptors.
    pub fds: usize,
    /// Our POSIX message queues in /dev/mqueue (`None`: not mounted).
    pub mqueues: Option<usize>,
    /// System V message queues last used by this process (`None`: no
    /// /proc/sysvipc/msg).
    pub sysv_msg: Option<usize>,
    /// Our named semaphores left in /dev/shm.
    pub named_sems: usize,
}

/// The verdict on `start` and `end` after `rounds` rounds with `errors`:
/// pass, and the observations in order.
pub fn verdict(
    start: &Snapshot,
    end: &Snapshot,
    rounds: u64,
    errors: &[String],
) -> (bool, Vec<String>) {
    let mut pass = errors.is_empty() && rounds > 0;
    let mut obs = Vec::new();
    let rss_ok = end.rss_kib <= start.rss_kib.saturating_add(RSS_TOLERANCE_KIB);
    pass &= rss_ok;
    obs.push(format!(
        "rss start {} KiB, end {} KiB{}",
        start.rss_kib,
        end.rss_kib,
        if rss_ok {
            ""
        } else {
            " (grew beyond the tolerance)"
        }
    ));
    count(&mut pass, &mut obs, "fds", start.fds, end.fds);
    match (start.mqueues, end.mqueues) {
        (Some(a), Some(b)) => count(&mut pass, &mut obs, "posix mqueues", a, b),
        _ => obs.push("posix mqueues: /dev/mqueue not mounted, not checked".into()),
    }
    match (start.sysv_msg, end.sysv_msg) {
        (Some(a), Some(b)) => count(&mut pass, &mut obs, "sysv msg queues", a, b),
        _ => obs.push("sysv msg queues: /proc/sysvipc/msg missing, not checked".into()),
    }
    count(
        &mut pass,
        &mut obs,
        "named semaphores",
        start.named_sems,
        end.named_sems,
    );
    obs.push(format!("rounds {rounds}"));
    obs.extend(errors.iter().take(5).cloned());
    if errors.len() > 5 {
        obs.push(format!("... {} errors in all", errors.len()));
    }
    (pass, obs)
}

/// Notes a count taken at the start and the end; growth fails.
fn count(pass: &mut bool, obs: &mut Vec<String>, what: &str, a: usize, b: usize) {
    let ok = b <= a;
    *pass &= ok;
    obs.push(format!(
        "{what} start {a}, end {b}{}",
        if ok { "" } else { " (grew)" }
    ));
}

fn sem_name() -> String {
    format!("/msgbench-lek.{}", std::process::id())
}

fn snapshot() -> Result<Snapshot> {
    let pid = std::process::id();
    let mq_prefix = format!("msgbench.{pid}.");
    let sem_file = format!("sem.msgbench-lek.{pid}");
    let sysv_msg = std::fs::read_to_string("/proc/sysvipc/msg").ok().map(|s| {
        let me = pid.to_string();
        s.lines()
            .skip(1)
            .filter(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.len() > 6 && (f[5] == me || f[6] == me)
            })
            .count()
    });
    Ok(Snapshot {
        rss_kib: rss_bytes()? / 1024,
        fds: open_fds()?,
        mqueues: count_dir(Path::new("/dev/mqueue"), |n| n.starts_with(&mq_prefix)),
        sysv_msg,
        named_sems: count_dir(Path::new("/dev/shm"), |n| n == sem_file).unwrap_or(0),
    })
}

/// A private namespace directory, removed on drop.
struct PrivateNs {
    dir: PathBuf,
    ns: Namespace,
}

impl PrivateNs {
    fn new() -> Result<PrivateNs> {
        let dir = std::env::temp_dir().join(format!("msgbench-rtos-lek.{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let ns = Namespace::open(&dir).map_err(|e| anyhow!("namespace {}: {e}", dir.display()))?;
        Ok(PrivateNs { dir, ns })
    }
}

impl Drop for PrivateNs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn lek(ctx: &Ctx) -> Result<Vec<Variant>> {
    let ns = PrivateNs::new()?;
    let opts = Options {
        tick: Duration::from_millis(10),
        ..Options::default()
    };
    let (transports, skipped) = lek_transports(&ns.ns, &opts);
    let mut errors = Vec::new();
    let warm_rounds = lek_warm_up(ctx, &ns.ns, &transports, &opts, &mut errors);
    let start = snapshot()?;
    let t0 = Instant::now();
    let mut rounds = 0u64;
    while t0.elapsed() < ctx.duration && !ctx.stopped() && errors.len() < 100 {
        round(
            &ns.ns,
            &transports,
            &opts,
            &mut errors,
            &format!("round {rounds}"),
        );
        rounds += 1;
    }
    let end = snapshot()?;
    drop(ns);
    let (pass, observed) = verdict(&start, &end, rounds, &errors);
    let mut note = format!(
        "{:.1} s after {warm_rounds} warm-up rounds; each round: a thread, a POSIX unnamed and a named semaphore, a pthread mutex, \
         and a channel + connection + one call of: {}; tolerance: RSS +{RSS_TOLERANCE_KIB} KiB \
         after the warm-up, no descriptor or queue growth",
        t0.elapsed().as_secs_f64(),
        transports.join(", ")
    );
    if !skipped.is_empty() {
        note.push_str(&format!("; not run here: {}", skipped.join("; ")));
    }
    Ok(vec![Variant::new(
        "",
        Outcome::Behaviour {
            pass,
            observed,
            expected: format!(
                "RSS growth <= {RSS_TOLERANCE_KIB} KiB, no descriptor or kernel-object growth"
            ),
        },
    )
    .reference(Reference::text("pass, > 10 h"))
    .note(note)])
}

/// Warm-up: every transport's objects once; the transports that run here,
/// and those left out with why.
fn lek_transports(ns: &Namespace, opts: &Options) -> (Vec<&'static str>, Vec<String>) {
    let mut transports = Vec::new();
    let mut skipped = Vec::new();
    for name in msgpass::transport::NAMES {
        let unavailable = msgpass::transport::info(name)
            .ok()
            .and_then(|t| t.unavailable());
        if let Some(why) = unavailable {
            skipped.push(format!("{name} ({why})"));
            continue;
        }
        match channel_round(ns, name, opts) {
            Ok(()) => transports.push(*name),
            Err(e) => skipped.push(format!("{name} ({e:#})")),
        }
    }
    (transports, skipped)
}

/// More warm-up rounds (a tenth of the run, at least
/// `WARM_UP_MIN_ROUNDS`): allocator arenas and the transports' buffer
/// pools settle in the first rounds. Returns the rounds run.
fn lek_warm_up(
    ctx: &Ctx,
    ns: &Namespace,
    transports: &[&str],
    opts: &Options,
    errors: &mut Vec<String>,
) -> u64 {
    let warm_up = ctx.duration / 10;
    let t0 = Instant::now();
    let mut warm_rounds = 0u64;
    while (warm_rounds < WARM_UP_MIN_ROUNDS || t0.elapsed() < warm_up) && !ctx.stopped() {
        round(ns, transports, opts, errors, "warm-up");
        warm_rounds += 1;
    }
    warm_rounds
}

/// Rounds run before the start is measured, at least.
const WARM_UP_MIN_ROUNDS: u64 = 3;

/// One round of every object and every transport; errors are noted with
/// `label`.
fn round(
    ns: &Namespace,
    transports: &[&str],
    opts: &Options,
    errors: &mut Vec<String>,
    label: &str,
) {
    if let Err(e) = os_objects_round() {
        errors.push(format!("{label}: {e:#}"));
    }
    for name in transports {
        if let Err(e) = channel_round(ns, name, opts) {
            errors.push(format!("{label}, {name}: {e:#}"));
        }
    }
}

/// One thread, POSIX semaphores (unnamed and named) and a mutex, each
/// created, used and destroyed.
fn os_objects_round() -> Result<()> {
    std::thread::Builder::new()
        .name("lek".into())
        .spawn(|| 1u32)
        .map_err(|e| anyhow!("thread create: {e}"))?
        .join()
        .map_err(|_| anyhow!("thread panicked"))?;

    let e = |what: &'static str| move |e: std::io::Error| anyhow!("{what}: {e}");
    let sem = PosixSem::new(1).map_err(e("sem_init"))?;
    let _ = sem.wait();
    let _ = sem.post();
    drop(sem);

    let name = CString::new(sem_name())?;
    let s = NamedSem::create(&name, 1).map_err(e("sem_open"))?;
    let _ = s.wait();
    let _ = s.post();
    drop(s);
    let _ = NamedSem::unlink(&name);

    let m = PthreadMutex::new(Protocol::Default).map_err(e("pthread_mutex_init"))?;
    let _ = m.lock();
    let _ = m.unlock();
    drop(m);
    Ok(())
}

/// A channel of transport `name` served by a thread for one call; the
/// connection and the channel are dropped before returning.
fn channel_round(ns: &Namespace, name: &str, opts: &Options) -> Result<()> {
    let t = msgpass::transport::by_name(name).map_err(|e| anyhow!("{e}"))?;
    let endpoint = format!("lek/{name}");
    let mut chan = Channel::create(ns, &endpoint, &*t, opts).map_err(|e| anyhow!("create: {e}"))?;
    let stop = Arc::new(AtomicBool::new(false));
    chan.set_stop_flag(Arc::clone(&stop));
    let server = std::thread::Builder::new()
        .name("lek-server".into())
        .spawn(move || -> Result<()> {
            match chan.receive() {
                Ok(Some(req)) => {
                    let data = req.data().to_vec();
                    req.reply(&data).map_err(|e| anyhow!("reply: {e}"))
                }
                Ok(None) => Ok(()),
                Err(e) => Err(anyhow!("receive: {e}")),
            }
        })
        .map_err(|e| anyhow!("server thread: {e}"))?;
    let client = |name: &str| -> Result<()> {
        let t = msgpass::transport::by_name(name).map_err(|e| anyhow!("{e}"))?;
        let mut conn =
            Connection::open(ns, &endpoint, &*t, opts).map_err(|e| anyhow!("open: {e}"))?;
        let mut reply = [0u8; 8];
        let n = conn
            .call(1, b"leak?", &mut reply)
            .map_err(|e| anyhow!("call: {e}"))?;
        if &reply[..n] != b"leak?" {
            bail!("call: wrong reply");
        }
        Ok(())
    };
    let called = client(name);
    // The server returns after one request, or within one tick of `stop`.
    if called.is_err() {
        stop.store(true, Ordering::Relaxed);
    }
    let served = server
        .join()
        .map_err(|_| anyhow!("server thread panicked"))?;
    called?;
    served
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(rss_kib: u64, fds: usize, mq: usize, sysv: usize) -> Snapshot {
        Snapshot {
            rss_kib,
            fds,
            mqueues: Some(mq),
            sysv_msg: Some(sysv),
            named_sems: 0,
        }
    }

    #[test]
    fn steady_numbers_pass() {
        let (pass, obs) = verdict(
            &snap(4000, 10, 0, 0),
            &snap(4000 + RSS_TOLERANCE_KIB, 10, 0, 0),
            5,
            &[],
        );
        assert!(pass, "{obs:?}");
        assert_eq!(
            obs[0],
            format!("rss start 4000 KiB, end {} KiB", 4000 + RSS_TOLERANCE_KIB)
        );
        assert_eq!(obs[1], "fds start 10, end 10");
        assert!(obs.contains(&"rounds 5".to_string()));
    }

    #[test]
    fn any_growth_fails() {
        let base = snap(4000, 10, 1, 1);
        let grown = [
            snap(4000 + RSS_TOLERANCE_KIB + 1, 10, 1, 1),
            snap(4000, 11, 1, 1),
            snap(4000, 10, 2, 1),
            snap(4000, 10, 1, 2),
            Snapshot {
                named_sems: 1,
                ..base
            },
        ];
        for end in grown {
            let (pass, obs) = verdict(&base, &end, 5, &[]);
            assert!(!pass, "{end:?} should fail: {obs:?}");
            assert!(obs.iter().any(|o| o.contains("grew")), "{obs:?}");
        }
    }

    #[test]
    fn errors_or_no_rounds_fail() {
        let s = snap(4000, 10, 0, 0);
        assert!(!verdict(&s, &s, 0, &[]).0);
        let (pass, obs) = verdict(&s, &s, 3, &["round 1: boom".into()]);
        assert!(!pass);
        assert!(obs.contains(&"round 1: boom".to_string()));
    }

    #[test]
    fn unmounted_mqueue_is_noted_not_failed() {
        let s = Snapshot {
            mqueues: None,
            ..snap(1, 1, 0, 0)
        };
        let (pass, obs) = verdict(&s, &s, 1, &[]);
        assert!(pass);
        assert!(obs.iter().any(|o| o.contains("not mounted")));
    }
}
