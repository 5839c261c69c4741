//! The MUTEX tests (docs/methodology.md, "msgbench rtos"): priority inversion
//! avoided by PTHREAD_PRIO_INHERIT (behaviour), and the cost of
//! acquire/release contended and uncontended (timing).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};

use super::ctx::Ctx;
use super::def::{TestDef, Variant};
use super::prims::pi_mutex::PthreadMutex;
use super::prims::semaphore::{FutexSem, Semaphore};
use super::prims::{controlled, join, rt_thread, test_cpu, wait_until};
use super::row::Group;
use super::row::{Outcome, Reference, Timing, Unit};
use super::sem::Log;

/// Longest any wait of these tests may take before the test fails.
const BOUND: Duration = Duration::from_secs(3);

/// How long M, the medium-priority thread, busy-loops at most.
const M_BUSY: Duration = Duration::from_millis(50);

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    let t = |id, title, needs_fifo, run| TestDef {
        id,
        group: Group::MUT,
        title,
        needs_fifo,
        substitute: None,
        run,
    };
    vec![
        t("MUT-B-ARC", "priority inversion avoided by priority inheritance (low holds, high waits, medium must not run)", true, b_arc),
        t("MUT-P-ARC", "acquire/release time in that contended case (includes a switch)", true, p_arc),
        t("MUT-P-ARN", "acquire/release without contention (no system call expected)", false, p_arn),
    ]
}

// ------------------------------------------------------------- MUT-B-ARC

fn b_arc(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let m = Arc::new(PthreadMutex::new(true)?);
    let out = controlled(&ctx.cpus, cpu, move || inversion(m, cpu))?;
    Ok(vec![Variant::new("", out)
        .reference(Reference::text("pass, PTHREAD_PRIO_INHERIT"))
        .note(format!(
            "PTHREAD_PRIO_INHERIT mutex; on CPU {cpu}: L (FIFO 10) locks, H (FIFO 30) waits, M (FIFO 20) \
             becomes ready and would busy-loop for {} ms; the effective priority is read from /proc",
            M_BUSY.as_millis()
        ))])
}

/// The effective priority of the calling thread as the kernel schedules
/// it (field 18 of /proc/thread-self/stat is -1 - the real-time priority).
fn effective_prio() -> Option<i64> {
    let s = std::fs::read_to_string("/proc/thread-self/stat").ok()?;
    let rest = &s[s.rfind(')')? + 2..];
    let prio: i64 = rest.split_whitespace().nth(15)?.parse().ok()?;
    Some(-1 - prio)
}

/// What the three threads of the inversion scenario share: the mutex,
/// the event log, and the flags each raises when it reaches its point.
#[derive(Clone)]
struct Scene {
    m: Arc<PthreadMutex>,
    log: Log,
    l_locked: Arc<AtomicBool>,
    h_waiting: Arc<AtomicBool>,
    m_ready: Arc<AtomicBool>,
}

/// The priority-inversion scenario on `cpu` with mutex `m`: PASS when H
/// takes the mutex before M completes.
pub(crate) fn inversion(m: Arc<PthreadMutex>, cpu: usize) -> Result<Outcome> {
    let sc = Scene {
        m,
        log: Log::default(),
        l_locked: Arc::new(AtomicBool::new(false)),
        h_waiting: Arc::new(AtomicBool::new(false)),
        m_ready: Arc::new(AtomicBool::new(false)),
    };
    let s = sc.clone();
    let low = rt_thread("mut-L", 10, cpu, move || low_holds(&s))?;
    if !wait_until(BOUND, || sc.l_locked.load(Ordering::SeqCst)) {
        bail!("L never locked");
    }
    let s = sc.clone();
    let high = rt_thread("mut-H", 30, cpu, move || high_waits(&s))?;
    if !wait_until(BOUND, || sc.h_waiting.load(Ordering::SeqCst)) {
        bail!("H never ran");
    }
    std::thread::sleep(Duration::from_millis(2));
    let s = sc.clone();
    let medium = std::thread::Builder::new()
        .name("mut-M".into())
        .spawn(move || medium_runs(&s, cpu))
        .map_err(|e| anyhow!("start M: {e}"))?;
    join(medium)?;
    join(high)?;
    join(low)?;
    Ok(inversion_verdict(sc.log.get()))
}

/// L (FIFO 10): locks, works (spins) until M is ready, then a little
/// longer so that M is queued on this CPU, and unlocks; bounded so
/// nothing can spin forever.
fn low_holds(s: &Scene) -> Result<()> {
    if !s.m.lock(BOUND)? {
        bail!("L could not lock a free mutex");
    }
    s.log.push("L locks");
    s.l_locked.store(true, Ordering::SeqCst);
    let end = Instant::now() + BOUND;
    while !s.m_ready.load(Ordering::SeqCst) && Instant::now() < end {
        std::hint::spin_loop();
    }
    let settle = Instant::now() + Duration::from_millis(5);
    while Instant::now() < settle {
        std::hint::spin_loop();
    }
    let p = effective_prio().map_or("?".into(), |p| p.to_string());
    s.log.push(format!("L unlocks (at priority {p})"));
    s.m.unlock()?;
    Ok(())
}

/// H (FIFO 30): waits for the mutex L holds, takes it, lets it go.
fn high_waits(s: &Scene) -> Result<()> {
    s.log.push("H waits");
    s.h_waiting.store(true, Ordering::SeqCst);
    if !s.m.lock(BOUND)? {
        s.log.push("H timed out");
        return Ok(());
    }
    s.log.push("H locks");
    s.m.unlock()?;
    Ok(())
}

/// M: FIFO 20 first (still on the controller's CPU), says it is ready,
/// then moves to the test CPU, where it runs only if nothing above it is,
/// and busy-loops for [`M_BUSY`].
fn medium_runs(s: &Scene, cpu: usize) -> Result<()> {
    crate::measure::sched::set_thread_fifo(20).map_err(|e| anyhow!("SCHED_FIFO 20: {e}"))?;
    s.log.push("M ready");
    s.m_ready.store(true, Ordering::SeqCst);
    crate::measure::placement::pin_current_thread(cpu)
        .map_err(|e| anyhow!("pin to CPU {cpu}: {e}"))?;
    s.log.push("M runs");
    let end = Instant::now() + M_BUSY;
    while Instant::now() < end {
        std::hint::spin_loop();
    }
    s.log.push("M completes");
    Ok(())
}

/// PASS when H locked before M completed, with the events in order.
fn inversion_verdict(seen: Vec<String>) -> Outcome {
    let at = |e: &str| seen.iter().position(|s| s.starts_with(e));
    let pass = matches!((at("H locks"), at("M completes")), (Some(h), Some(m)) if h < m);
    Outcome::Behaviour {
        pass,
        observed: seen,
        expected: "H locks before M completes (L boosted to H's priority while H waits)".into(),
    }
}

// ------------------------------------------------------------- MUT-P-ARC

fn p_arc(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let rounds = ctx.samples(5_000);
    let clock = ctx.clock;
    let ts = ctx.timestamp_ns;
    let (acq, rel) = controlled(&ctx.cpus, cpu, move || contended(cpu, rounds, clock, ts))?;
    let note = format!(
        "PTHREAD_PRIO_INHERIT mutex on CPU {cpu}: L (FIFO 10) holds it, H (FIFO 30) locks it. \
         acquire = H's lock call -> L running again (H blocked, L boosted); \
         release = L's unlock -> H running with the mutex"
    );
    Ok(vec![
        Variant::new(
            "acquire",
            Outcome::Timing(Timing::of(Unit::Us, acq).ok_or_else(|| anyhow!("no samples"))?),
        )
        .reference(Reference::avg(6.6, "6.6 us"))
        .note(note.clone()),
        Variant::new(
            "release",
            Outcome::Timing(Timing::of(Unit::Us, rel).ok_or_else(|| anyhow!("no samples"))?),
        )
        .reference(Reference::avg(9.4, "9.4 us"))
        .note(note),
    ])
}

/// The contended lock/unlock loop; (acquire, release) samples in us.
fn contended(
    cpu: usize,
    rounds: usize,
    clock: crate::measure::clock::Clock,
    ts_ns: f64,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let m = Arc::new(PthreadMutex::new(true)?);
    let go = Arc::new(FutexSem::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (before_lock, got_lock) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let (mm, g, st, bl, gl) = (
        Arc::clone(&m),
        Arc::clone(&go),
        Arc::clone(&stop),
        Arc::clone(&before_lock),
        Arc::clone(&got_lock),
    );
    let high = rt_thread("mutp-H", 30, cpu, move || loop {
        if !g.wait(BOUND)? {
            bail!("H was never released");
        }
        if st.load(Ordering::SeqCst) {
            return Ok(());
        }
        bl.store(clock.now(), Ordering::SeqCst);
        if !mm.lock(BOUND)? {
            bail!("H timed out on the mutex");
        }
        gl.store(clock.now(), Ordering::SeqCst);
        mm.unlock()?;
    })?;
    let (mm, g, st) = (Arc::clone(&m), Arc::clone(&go), Arc::clone(&stop));
    let (bl, gl) = (Arc::clone(&before_lock), Arc::clone(&got_lock));
    let low = rt_thread("mutp-L", 10, cpu, move || {
        let us = |t: u64| (clock.ticks_to_ns(t) - ts_ns).max(0.0) / 1e3;
        let (mut acq, mut rel) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
        let mut result = Ok(());
        for _ in 0..rounds {
            if let Err(e) = mm.lock(BOUND).and_then(|ok| {
                if ok {
                    Ok(())
                } else {
                    Err(anyhow!("L timed out"))
                }
            }) {
                result = Err(e);
                break;
            }
            // H runs at once, blocks on the mutex, and L resumes.
            if let Err(e) = g.post() {
                result = Err(e);
                break;
            }
            let t3 = clock.now();
            let t0 = clock.now();
            if let Err(e) = mm.unlock() {
                result = Err(e);
                break;
            }
            let (t2, t1) = (bl.load(Ordering::SeqCst), gl.load(Ordering::SeqCst));
            if t2 > t3 || t1 < t0 {
                result = Err(anyhow!(
                    "H did not run when expected (is it on another CPU?)"
                ));
                break;
            }
            acq.push(us(t3 - t2));
            rel.push(us(t1 - t0));
        }
        st.store(true, Ordering::SeqCst);
        g.post()?;
        result.map(|_| (acq, rel))
    })?;
    let got = join(low);
    join(high)?;
    got
}

// ------------------------------------------------------------- MUT-P-ARN

fn p_arn(ctx: &Ctx) -> Result<Vec<Variant>> {
    let n = ctx.samples(20_000);
    let m = PthreadMutex::new(true)?;
    let (mut acq, mut rel, mut sys) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for _ in 0..n {
        let a = ctx.clock.now();
        m.lock_now()?;
        let b = ctx.clock.now();
        m.unlock()?;
        let c = ctx.clock.now();
        // The cheapest real system call, timed for comparison.
        crate::measure::costs::raw_getppid();
        let d = ctx.clock.now();
        acq.push(ctx.interval_ns(b - a) / 1e3);
        rel.push(ctx.interval_ns(c - b) / 1e3);
        sys.push(ctx.interval_ns(d - c) / 1e3);
    }
    let acq = Timing::of(Unit::Us, acq).ok_or_else(|| anyhow!("no samples"))?;
    let rel = Timing::of(Unit::Us, rel).ok_or_else(|| anyhow!("no samples"))?;
    let sys = Timing::of(Unit::Us, sys).ok_or_else(|| anyhow!("no samples"))?;
    let cheaper = acq.p50 < sys.p50 && rel.p50 < sys.p50;
    let note = format!(
        "PTHREAD_PRIO_INHERIT mutex, one thread. glibc locks a free PI mutex with a user-space \
         compare-and-swap of 0 -> TID and unlocks with TID -> 0; FUTEX_LOCK_PI/UNLOCK_PI only when \
         contended. Medians: lock {:.3} us, unlock {:.3} us, one getppid system call {:.3} us: {}",
        acq.p50,
        rel.p50,
        sys.p50,
        if cheaper {
            "both cheaper than a system call, consistent with none being made"
        } else {
            "NOT cheaper than a system call: a system call may be made"
        }
    );
    Ok(vec![
        Variant::new("acquire", Outcome::Timing(acq))
            .reference(Reference::avg(0.6, "0.6 us"))
            .note(note.clone()),
        Variant::new("release", Outcome::Timing(rel))
            .reference(Reference::avg(0.8, "0.8 us"))
            .note(note),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::placement::online_cpus;
    use crate::suites::rtos::prims::{fifo_or_skip, RT_TEST_LOCK};

    fn run(inherit: bool) -> Option<Outcome> {
        if !fifo_or_skip() {
            return None;
        }
        let _g = RT_TEST_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let cpus = online_cpus();
        let cpu = test_cpu(&cpus);
        let m = Arc::new(PthreadMutex::new(inherit).unwrap());
        assert_eq!(m.inherits(), inherit);
        Some(controlled(&cpus, cpu, move || inversion(m, cpu)).unwrap())
    }

    #[test]
    fn inversion_is_avoided_with_priority_inheritance() {
        if let Some(o) = run(true) {
            assert!(matches!(o, Outcome::Behaviour { pass: true, .. }), "{o:?}");
        }
    }

    #[test]
    fn inversion_is_caught_with_a_plain_mutex() {
        if let Some(o) = run(false) {
            assert!(matches!(o, Outcome::Behaviour { pass: false, .. }), "{o:?}");
            if let Outcome::Behaviour { observed, .. } = o {
                let at = |e: &str| observed.iter().position(|s| s.starts_with(e));
                assert!(at("M completes") < at("H locks"), "{observed:?}");
            }
        }
    }
}
