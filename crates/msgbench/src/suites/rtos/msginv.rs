//! MSG-B-PRI: MUT-B-ARC with messages instead of a mutex. On one CPU a
//! single-threaded server process (own priority SCHED_FIFO 5) is working
//! on a low client L's request (FIFO 10) for [`WORK`] of CPU time; a high
//! client H (FIFO 30) calls the same server; then M (FIFO 20), a CPU hog
//! for [`M_BUSY`], becomes ready on that CPU. With priority inheritance
//! through messages the server runs L's request at 10 and is raised to 30
//! by its watcher when H sends, so M waits and H's reply comes before M
//! completes: PASS. Without (`--msg-inherit off`) the server stays at 5, M
//! runs first and H waits for it: FAIL.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};

use super::ctx::Ctx;
use super::def::Variant;
use super::msgserver::{connect, work, Server, Target};
use super::prims::{controlled, join, rt_thread, test_cpu, wait_until};
use super::row::{Outcome, Reference};
use super::rtthread::Gate;
use super::sem::Log;

/// The server's own priority, and L's, M's, H's.
const SERVER: u32 = 5;
const L: i32 = 10;
const M: i32 = 20;
const H: i32 = 30;
/// The CPU time L's request takes the server.
const WORK: Duration = Duration::from_millis(30);
/// How long M busy-loops.
const M_BUSY: Duration = Duration::from_millis(100);
/// Longest any wait of the scenario may take before the test fails.
const BOUND: Duration = Duration::from_secs(3);

pub(super) fn b_pri(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let inherit = ctx.msg_inherit;
    let server = Server::start(&ctx.msg_transport, cpu, SERVER, inherit)?;
    let to = server.target();
    let got = controlled(&ctx.cpus, cpu, move || inversion(to, cpu));
    server.stop()?;
    let (name, how) = if inherit {
        (
            "inheritance on",
            "with priority inheritance through messages",
        )
    } else {
        (
            "inheritance off",
            "WITHOUT inheritance (--msg-inherit off: FAIL expected)",
        )
    };
    Ok(vec![Variant::new(name, got?)
        .reference(Reference::text(
            "pass (QNX: the server runs at its clients' priority)",
        ))
        .note(format!(
            "on CPU {cpu}, msgpass {}, {how}: the server process (one thread, own priority \
             FIFO {SERVER}) works {} ms of CPU time for L (FIFO {L}); H (FIFO {H}) calls it; M \
             (FIFO {M}) becomes ready and would busy-loop for {} ms. The server's priorities are \
             read from the kernel by the server and sent back in its replies",
            ctx.msg_transport,
            WORK.as_millis(),
            M_BUSY.as_millis()
        ))])
}

/// What the three threads share: the log, the gates that start L's and
/// H's calls, and the flags each raises at its point.
#[derive(Clone, Default)]
struct Scene {
    log: Log,
    go_l: Arc<Gate>,
    go_h: Arc<Gate>,
    connected: Arc<[AtomicBool; 2]>,
    l_called: Arc<AtomicBool>,
    h_called: Arc<AtomicBool>,
}

/// The scenario against the server at `ns`, every thread on `cpu`.
fn inversion(ns: Target, cpu: usize) -> Result<Outcome> {
    let sc = Scene::default();
    let (s, n) = (sc.clone(), ns.clone());
    let low = rt_thread("msg-L", L, cpu, move || client(&s, &n, 0))?;
    let (s, n) = (sc.clone(), ns);
    let high = rt_thread("msg-H", H, cpu, move || client(&s, &n, 1))?;
    let all_connected = wait_until(BOUND, || {
        sc.connected.iter().all(|c| c.load(Ordering::SeqCst))
    });
    let started = all_connected && start_calls(&sc);
    if !started {
        sc.go_l.open();
        sc.go_h.open();
    }
    let medium = if started {
        // H is blocked on its call; M becomes ready.
        std::thread::sleep(Duration::from_millis(2));
        let s = sc.clone();
        Some(
            std::thread::Builder::new()
                .name("msg-M".into())
                .spawn(move || medium_runs(&s, cpu))
                .map_err(|e| anyhow!("start M: {e}"))?,
        )
    } else {
        None
    };
    if let Some(m) = medium {
        join(m)?;
    }
    let (h, l) = (join(high), join(low));
    h?;
    l?;
    if !started {
        bail!(
            "L and H never both connected and called: {}",
            sc.log.get().join(", ")
        );
    }
    Ok(verdict(sc.log.get()))
}

/// Lets L call, then (once its request is being worked on) H: true when
/// both called in time.
fn start_calls(sc: &Scene) -> bool {
    sc.go_l.open();
    if !wait_until(BOUND, || sc.l_called.load(Ordering::SeqCst)) {
        return false;
    }
    // L is blocked on its reply: the server, alone on the CPU, works.
    std::thread::sleep(Duration::from_millis(3));
    sc.go_h.open();
    wait_until(BOUND, || sc.h_called.load(Ordering::SeqCst))
}

/// L (k = 0) or H (k = 1): connects, waits for its gate, calls: L asks
/// for [`WORK`], H for none; logs the reply with the server's priorities.
fn client(s: &Scene, ns: &Target, k: usize) -> Result<()> {
    let (who, gate, called) = match k {
        0 => ("L", &s.go_l, &s.l_called),
        _ => ("H", &s.go_h, &s.h_called),
    };
    let mut c = connect(ns)?;
    s.connected[k].store(true, Ordering::SeqCst);
    if !gate.wait(BOUND + BOUND) || !s.connected.iter().all(|c| c.load(Ordering::SeqCst)) {
        return Ok(());
    }
    s.log.push(format!("{who} calls"));
    called.store(true, Ordering::SeqCst);
    let us = if k == 0 { WORK.as_micros() as u64 } else { 0 };
    let [first, highest, _] = work(&mut c, us)?;
    s.log.push(if k == 0 {
        format!("L replied (server worked at FIFO {first}, up to {highest})")
    } else {
        format!("H replied (server at FIFO {first})")
    });
    Ok(())
}

/// M: FIFO 20 first (still on the controller's CPU), says it is ready,
/// then moves to the test CPU, where it runs only if nothing above it is,
/// and busy-loops for [`M_BUSY`].
fn medium_runs(s: &Scene, cpu: usize) -> Result<()> {
    crate::measure::sched::set_thread_fifo(M).map_err(|e| anyhow!("SCHED_FIFO {M}: {e}"))?;
    s.log.push("M ready");
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

/// PASS when H's reply came before M completed, FAIL when after;
/// inconclusive when L's request was done before M was ready (the
/// scenario did not happen).
fn verdict(seen: Vec<String>) -> Outcome {
    let at = |e: &str| seen.iter().position(|s| s.starts_with(e));
    let (Some(h), Some(m), Some(ready), Some(l)) = (
        at("H replied"),
        at("M completes"),
        at("M ready"),
        at("L replied"),
    ) else {
        return Outcome::Inconclusive {
            reason: "an event is missing".into(),
            observed: seen,
        };
    };
    if l < ready {
        return Outcome::Inconclusive {
            reason: "the server finished L's request before M was ready (a loaded machine?)".into(),
            observed: seen,
        };
    }
    Outcome::Behaviour {
        pass: h < m,
        observed: seen,
        expected: format!(
            "H replied before M completes (the server raised to H's FIFO {H} when H sent)"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(e: &[&str]) -> Vec<String> {
        e.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_verdict_comes_out_either_way() {
        let pass = verdict(events(&[
            "L calls",
            "H calls",
            "M ready",
            "H replied (server at FIFO 30)",
            "M runs",
            "M completes",
            "L replied",
        ]));
        assert!(
            matches!(pass, Outcome::Behaviour { pass: true, .. }),
            "{pass:?}"
        );
        let fail = verdict(events(&[
            "L calls",
            "H calls",
            "M ready",
            "M runs",
            "M completes",
            "L replied",
            "H replied (server at FIFO 5)",
        ]));
        assert!(
            matches!(fail, Outcome::Behaviour { pass: false, .. }),
            "{fail:?}"
        );
        let early = verdict(events(&[
            "L calls",
            "L replied",
            "H calls",
            "H replied",
            "M ready",
            "M runs",
            "M completes",
        ]));
        assert!(matches!(early, Outcome::Inconclusive { .. }), "{early:?}");
    }
}
