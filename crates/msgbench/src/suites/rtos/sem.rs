//! The SEM tests (docs/methodology.md, "msgbench rtos"): counting semantics and
//! wake-up order (behaviour), and the cost of create/delete, uncontended
//! and contended acquire/release (timing), for the semaphore chosen with
//! `--sem` (see [`super::prims::semaphore`]).

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{anyhow, bail, Result};

use super::ctx::{Ctx, SemKind};
use super::def::{TestDef, Variant};
use super::prims::semaphore::{new_sem, Semaphore};
use super::prims::{controlled, join, rt_thread, test_cpu, wait_until};
use super::row::Group;
use super::row::{Outcome, Reference, Timing, Unit};

/// Longest any wait of these tests may take before the test fails.
const BOUND: Duration = Duration::from_secs(3);

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    let t = |id, title, needs_fifo, run| TestDef {
        id,
        group: Group::SEM,
        title,
        needs_fifo,
        substitute: None,
        run,
    };
    vec![
        t("SEM-B-LCK", "counting semaphore semantics: P blocks only at zero; V wakes a waiter and reschedules", false, lck),
        t("SEM-B-REL", "release wakes the HIGHEST-priority waiter, whatever the order they queued in", true, rel),
        t("SEM-P-NEW", "semaphore create/delete, used and never used", false, new),
        t("SEM-P-ARN", "acquire/release without contention", false, arn),
        t("SEM-P-ARC", "acquire/release with 128 waiters of different priorities; does the number of waiters change the time?", true, arc),
    ]
}

/// A shared, ordered list of events.
#[derive(Clone, Default)]
pub(crate) struct Log(Arc<Mutex<Vec<String>>>);

impl Log {
    /// Appends an event.
    pub(crate) fn push(&self, e: impl Into<String>) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(e.into());
    }

    /// The events so far.
    pub(crate) fn get(&self) -> Vec<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

fn behaviour(pass: bool, observed: Vec<String>, expected: &str) -> Outcome {
    Outcome::Behaviour {
        pass,
        observed,
        expected: expected.into(),
    }
}

// ------------------------------------------------------------- SEM-B-LCK

fn lck(ctx: &Ctx) -> Result<Vec<Variant>> {
    let counting = Variant::new("counting", lck_counting(new_sem(ctx.sem, 2)?)?).note(format!(
        "{} semaphore created with count 2; the third P must still be blocked after 20 ms",
        ctx.sem.name()
    ));
    let resched = if ctx.fifo_allowed {
        let cpu = test_cpu(&ctx.cpus);
        let sem = new_sem(ctx.sem, 0)?;
        Variant::new("reschedule", controlled(&ctx.cpus, cpu, move || lck_resched(sem, cpu))?).note(
            "SCHED_FIFO on one CPU: waiter at 30, poster at 20; the waiter must run before the poster's next statement",
        )
    } else {
        Variant::new(
            "reschedule",
            Outcome::Skipped {
                reason: "needs CAP_SYS_NICE (run as root or grant it)".into(),
            },
        )
    };
    Ok(vec![counting, resched])
}

/// P twice on a semaphore of count 2 (must not block), a third P on
/// another thread (must block), then V (must wake it).
pub(crate) fn lck_counting(sem: Arc<dyn Semaphore>) -> Result<Outcome> {
    let mut seen = Vec::new();
    for i in 1..=2 {
        // A 0-length wait: succeeds only if it does not need to block.
        seen.push(if sem.wait(Duration::ZERO)? || sem.try_wait()? {
            format!("P{i} returned at once")
        } else {
            format!("P{i} would block")
        });
    }
    let s = Arc::clone(&sem);
    let done = Arc::new(AtomicBool::new(false));
    let d = Arc::clone(&done);
    let h = std::thread::spawn(move || {
        let got = s.wait(BOUND);
        d.store(true, Ordering::SeqCst);
        got
    });
    std::thread::sleep(Duration::from_millis(20));
    seen.push(if done.load(Ordering::SeqCst) {
        "P3 returned at count 0".into()
    } else {
        "P3 blocked (20 ms)".into()
    });
    sem.post()?;
    let woke = wait_until(BOUND, || done.load(Ordering::SeqCst));
    let got = h.join().map_err(|_| anyhow!("waiter panicked"))??;
    seen.push(if woke && got {
        "V woke P3".into()
    } else {
        "V did not wake P3".into()
    });
    let expected = [
        "P1 returned at once",
        "P2 returned at once",
        "P3 blocked (20 ms)",
        "V woke P3",
    ];
    let pass = seen.iter().map(String::as_str).eq(expected);
    Ok(behaviour(pass, seen, &expected.join(", ")))
}

/// On `cpu`: a waiter at FIFO 30 blocks, a poster at FIFO 20 posts; the
/// waiter must run before the poster's next statement.
pub(crate) fn lck_resched(sem: Arc<dyn Semaphore>, cpu: usize) -> Result<Outcome> {
    let log = Log::default();
    let ready = Arc::new(AtomicBool::new(false));
    let (s, l, r) = (Arc::clone(&sem), log.clone(), Arc::clone(&ready));
    let waiter = rt_thread("sem-waiter", 30, cpu, move || {
        r.store(true, Ordering::SeqCst);
        let got = s.wait(BOUND)?;
        l.push(if got {
            "waiter runs"
        } else {
            "waiter timed out"
        });
        Ok(())
    })?;
    if !wait_until(BOUND, || ready.load(Ordering::SeqCst)) {
        bail!("the waiter never started");
    }
    std::thread::sleep(Duration::from_millis(20));
    log.push("waiter blocked");
    let (s, l) = (Arc::clone(&sem), log.clone());
    let poster = rt_thread("sem-poster", 20, cpu, move || {
        l.push("V");
        s.post()?;
        l.push("poster continues");
        Ok(())
    })?;
    join(poster)?;
    join(waiter)?;
    let seen = log.get();
    let expected = ["waiter blocked", "V", "waiter runs", "poster continues"];
    let pass = seen.iter().map(String::as_str).eq(expected);
    Ok(behaviour(pass, seen, &expected.join(", ")))
}

// ------------------------------------------------------------- SEM-B-REL

fn rel(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let sem = new_sem(ctx.sem, 0)?;
    let out = controlled(&ctx.cpus, cpu, move || rel_order(sem, cpu, 8))?;
    let mut note = format!(
        "{} semaphore; 8 SCHED_FIFO waiters on CPU {cpu}, queued lowest priority first; \
         the releaser (FIFO 10, below every waiter) posts once per waiter",
        ctx.sem.name()
    );
    if ctx.sem == SemKind::Sysv {
        if let Outcome::Behaviour { pass: false, .. } = out {
            note.push_str(
                "; FAIL is Linux's System V semantics, not the test: semop() serves its queue of \
                 pending operations in arrival order (ipc/sem.c), without regard to priority",
            );
        }
    }
    Ok(vec![Variant::new("", out)
        .reference(Reference::text("pass"))
        .note(note)])
}

/// `n` waiters with distinct SCHED_FIFO priorities on `cpu`, queued in
/// ascending priority order; a releaser below them all posts `n` times;
/// PASS when they woke in descending priority order.
pub(crate) fn rel_order(sem: Arc<dyn Semaphore>, cpu: usize, n: usize) -> Result<Outcome> {
    let log = Log::default();
    let mut hs = Vec::new();
    for i in 0..n {
        let prio = 20 + 2 * i as i32;
        let ready = Arc::new(AtomicBool::new(false));
        let (s, l, r) = (Arc::clone(&sem), log.clone(), Arc::clone(&ready));
        hs.push(rt_thread(&format!("sem-w{prio}"), prio, cpu, move || {
            r.store(true, Ordering::SeqCst);
            if s.wait(BOUND)? {
                l.push(format!("p{prio}"));
            } else {
                l.push(format!("p{prio} timed out"));
            }
            Ok(())
        })?);
        if !wait_until(BOUND, || ready.load(Ordering::SeqCst)) {
            bail!("waiter p{prio} never started");
        }
        // Let it block in the kernel before the next one queues.
        std::thread::sleep(Duration::from_millis(2));
    }
    let s = Arc::clone(&sem);
    let releaser = rt_thread("sem-releaser", 10, cpu, move || {
        for _ in 0..n {
            s.post()?;
        }
        Ok(())
    })?;
    join(releaser)?;
    for h in hs {
        join(h)?;
    }
    let seen = log.get();
    let expected: Vec<String> = (0..n).rev().map(|i| format!("p{}", 20 + 2 * i)).collect();
    let pass = seen == expected;
    Ok(behaviour(pass, seen, &expected.join(", ")))
}

// ------------------------------------------------------------- SEM-P-NEW

fn new(ctx: &Ctx) -> Result<Vec<Variant>> {
    let n = ctx.samples(2_000);
    let (mut never, mut used) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let a = ctx.clock.now();
        let s = new_sem(ctx.sem, 0)?;
        let b = ctx.clock.now();
        drop(s);
        let c = ctx.clock.now();
        never.push((ctx.interval_ns(b - a) + ctx.interval_ns(c - b)) / 1e3);

        let a = ctx.clock.now();
        let s = new_sem(ctx.sem, 0)?;
        let b = ctx.clock.now();
        s.post()?;
        if !s.wait(BOUND)? {
            bail!("wait after post timed out");
        }
        let c = ctx.clock.now();
        drop(s);
        let d = ctx.clock.now();
        used.push((ctx.interval_ns(b - a) + ctx.interval_ns(d - c)) / 1e3);
    }
    let note = format!(
        "{}: create + delete, each timed on its own (the wait/post in between is not counted)",
        ctx.sem.name()
    );
    let v = |name: &str, s: Vec<f64>| -> Result<Variant> {
        Ok(Variant::new(
            name,
            Outcome::Timing(Timing::of(Unit::Us, s).ok_or_else(|| anyhow!("no samples"))?),
        )
        .reference(Reference::avg(3.5, "about 3.5 us"))
        .note(note.clone()))
    };
    Ok(vec![v("used", used)?, v("never used", never)?])
}

// ------------------------------------------------------------- SEM-P-ARN

fn arn(ctx: &Ctx) -> Result<Vec<Variant>> {
    let n = ctx.samples(20_000);
    let sem = new_sem(ctx.sem, 0)?;
    let (mut acq, mut rel) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for _ in 0..n {
        let a = ctx.clock.now();
        sem.post()?;
        let b = ctx.clock.now();
        if !sem.wait(BOUND)? {
            bail!("wait after post timed out");
        }
        let c = ctx.clock.now();
        rel.push(ctx.interval_ns(b - a) / 1e3);
        acq.push(ctx.interval_ns(c - b) / 1e3);
    }
    let note = format!(
        "{}: one thread, post then wait on a count of 1 (never blocks), each call timed",
        ctx.sem.name()
    );
    Ok(vec![
        Variant::new(
            "acquire",
            Outcome::Timing(Timing::of(Unit::Us, acq).ok_or_else(|| anyhow!("no samples"))?),
        )
        .reference(Reference::avg(2.5, "2.5 us"))
        .note(note.clone()),
        Variant::new(
            "release",
            Outcome::Timing(Timing::of(Unit::Us, rel).ok_or_else(|| anyhow!("no samples"))?),
        )
        .reference(Reference::avg(2.4, "2.4 us"))
        .note(note),
    ])
}

// ------------------------------------------------------------- SEM-P-ARC

fn arc(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let rounds = ctx.samples(2_000);
    let mut out = Vec::new();
    let mut medians = Vec::new();
    for waiters in [1usize, 16, 128] {
        if ctx.stopped() {
            break;
        }
        let sem = new_sem(ctx.sem, 0)?;
        let clock = ctx.clock;
        let ts = ctx.timestamp_ns;
        let (acq, rel) = controlled(&ctx.cpus, cpu, move || {
            arc_run(sem, cpu, waiters, rounds, clock, ts)
        })?;
        let acq = Timing::of(Unit::Us, acq).ok_or_else(|| anyhow!("no samples"))?;
        let rel = Timing::of(Unit::Us, rel).ok_or_else(|| anyhow!("no samples"))?;
        medians.push((waiters, acq.p50, rel.p50));
        out.push(
            Variant::new(
                format!("acquire, {}", waiters_label(waiters)),
                Outcome::Timing(acq),
            )
            .reference(Reference::avg(12.7, "12.7 us")),
        );
        out.push(
            Variant::new(
                format!("release, {}", waiters_label(waiters)),
                Outcome::Timing(rel),
            )
            .reference(Reference::avg(12.1, "12.1 us; independent of waiters")),
        );
    }
    let cmp = medians
        .iter()
        .map(|(w, a, r)| format!("{}: acquire {a:.2} / release {r:.2} us", waiters_label(*w)))
        .collect::<Vec<_>>()
        .join("; ");
    let verdict = match (medians.first(), medians.last()) {
        (Some(&(_, a1, r1)), Some(&(_, an, rn))) if medians.len() > 1 => {
            let ratio = (an / a1.max(1e-9)).max(rn / r1.max(1e-9));
            format!(
                "medians {cmp}: the most waiters cost {ratio:.2}x the fewest ({})",
                if ratio < 1.5 {
                    "about independent of the number of waiters"
                } else {
                    "grows with the number of waiters"
                }
            )
        }
        _ => format!("medians {cmp}"),
    };
    let method = format!(
        "{}: on CPU {cpu}, the releaser (FIFO 10) posts; the highest waiter (FIFO 90; others at 11..88) \
         wakes and waits again. release = post -> that waiter running; acquire = its blocking wait -> \
         the releaser running again. {verdict}",
        ctx.sem.name()
    );
    Ok(out.into_iter().map(|v| v.note(method.clone())).collect())
}

/// One SEM-P-ARC run: `waiters` threads queued on `sem` on `cpu`, `rounds`
/// post/wake cycles; (acquire, release) samples in us.
fn arc_run(
    sem: Arc<dyn Semaphore>,
    cpu: usize,
    waiters: usize,
    rounds: usize,
    clock: crate::measure::clock::Clock,
    ts_ns: f64,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let stop = Arc::new(AtomicBool::new(false));
    let woke = Arc::new(AtomicU64::new(0));
    let blocking = Arc::new(AtomicU64::new(0));
    let ready = Arc::new(AtomicUsize::new(0));
    let mut hs = Vec::new();
    for i in 0..waiters {
        let prio = if i == 0 { 90 } else { 11 + (i as i32 - 1) % 78 };
        let (s, st, w, b, r) = (
            Arc::clone(&sem),
            Arc::clone(&stop),
            Arc::clone(&woke),
            Arc::clone(&blocking),
            Arc::clone(&ready),
        );
        hs.push(rt_thread(&format!("arc-w{i}"), prio, cpu, move || {
            r.fetch_add(1, Ordering::SeqCst);
            loop {
                b.store(clock.now(), Ordering::SeqCst);
                if !s.wait(BOUND)? {
                    bail!("waiter (FIFO {prio}) timed out");
                }
                w.store(clock.now(), Ordering::SeqCst);
                if st.load(Ordering::SeqCst) {
                    return Ok(());
                }
            }
        })?);
    }
    let all_ready = wait_until(BOUND, || ready.load(Ordering::SeqCst) == waiters);
    std::thread::sleep(Duration::from_millis(10));
    let s = Arc::clone(&sem);
    let (st, w, b) = (Arc::clone(&stop), Arc::clone(&woke), Arc::clone(&blocking));
    let releaser = rt_thread("arc-releaser", 10, cpu, move || {
        let ns = |t: u64| (clock.ticks_to_ns(t) - ts_ns).max(0.0) / 1e3;
        let (mut acq, mut rel) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
        let mut result = Ok(());
        if all_ready {
            for _ in 0..rounds {
                let t0 = clock.now();
                if let Err(e) = s.post() {
                    result = Err(e);
                    break;
                }
                let t3 = clock.now();
                let (t1, t2) = (w.load(Ordering::SeqCst), b.load(Ordering::SeqCst));
                if t1 < t0 || t2 < t1 {
                    result = Err(anyhow!("the post did not run a waiter before returning"));
                    break;
                }
                rel.push(ns(t1 - t0));
                acq.push(ns(t3 - t2));
            }
        } else {
            result = Err(anyhow!("not every waiter started"));
        }
        st.store(true, Ordering::SeqCst);
        for _ in 0..waiters {
            s.post()?;
        }
        result.map(|_| (acq, rel))
    })?;
    let got = join(releaser);
    for h in hs {
        join(h)?;
    }
    got
}

/// "1 waiter", "16 waiters".
fn waiters_label(n: usize) -> String {
    if n == 1 {
        "1 waiter".into()
    } else {
        format!("{n} waiters")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::placement::online_cpus;
    use crate::suites::rtos::prims::semaphore::FifoSem;
    use crate::suites::rtos::prims::{fifo_or_skip, RT_TEST_LOCK};

    fn rt<T: Send + 'static>(f: impl FnOnce(usize) -> Result<T> + Send + 'static) -> Option<T> {
        if !fifo_or_skip() {
            return None;
        }
        let _g = RT_TEST_LOCK.lock().unwrap_or_else(|p| p.into_inner());
        let cpus = online_cpus();
        let cpu = test_cpu(&cpus);
        Some(controlled(&cpus, cpu, move || f(cpu)).unwrap())
    }

    fn pass(o: &Outcome) -> bool {
        matches!(o, Outcome::Behaviour { pass: true, .. })
    }

    #[test]
    fn rel_fails_with_a_fifo_waking_semaphore() {
        if let Some(o) = rt(|cpu| rel_order(Arc::new(FifoSem::new(0)), cpu, 6)) {
            assert!(!pass(&o), "FIFO-waking double passed: {o:?}");
            if let Outcome::Behaviour { observed, .. } = o {
                assert_eq!(
                    observed.first().map(String::as_str),
                    Some("p20"),
                    "{observed:?}"
                );
            }
        }
    }

    #[test]
    fn rel_passes_with_the_futex_semaphore() {
        if let Some(o) = rt(|cpu| rel_order(new_sem(SemKind::Futex, 0)?, cpu, 6)) {
            assert!(pass(&o), "{o:?}");
        }
    }

    #[test]
    fn lck_counting_passes_and_fails_as_it_should() {
        let o = lck_counting(new_sem(SemKind::Futex, 2).unwrap()).unwrap();
        assert!(pass(&o), "{o:?}");
        // Count 3: the third P does not block, which the test must catch.
        let o = lck_counting(new_sem(SemKind::Futex, 3).unwrap()).unwrap();
        assert!(!pass(&o), "{o:?}");
    }

    #[test]
    fn lck_resched_passes_with_the_futex_semaphore() {
        if let Some(o) = rt(|cpu| lck_resched(new_sem(SemKind::Futex, 0)?, cpu)) {
            assert!(pass(&o), "{o:?}");
        }
    }
}
