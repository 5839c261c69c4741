//! The MSG tests: QNX-style send/receive/reply between two real
//! processes over msgpass (uds), the suite's client thread and the server
//! process `msgbench rtos-peer server` ([`super::msgpeer`]), both at
//! SCHED_FIFO: the round trip (MSG-P-SRR), the same with priority
//! inheritance through messages (MSG-P-PRI: what the boost costs), and
//! the message-passing form of MUT-B-ARC ([`super::msginv`], MSG-B-PRI).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use msgpass::Connection;

use super::ctx::Ctx;
use super::def::{TestDef, Variant};
use super::msgpeer::{ECHO, TRANSPORT};
use super::msgserver::{connect, work, Server};
use super::prims::{join, rt_thread, test_cpu};
use super::row::{Group, Outcome, Reference, Timing, Unit};
use crate::measure::clock::Clock;

/// The client's SCHED_FIFO priority in the round-trip tests.
const CLIENT_FIFO: i32 = 50;
/// The server's own SCHED_FIFO priority there (below the client's, so
/// that with inheritance every request raises it and every reply
/// restores it).
const SERVER_FIFO: u32 = 40;
/// Untimed round trips before the timed ones.
const WARMUP: usize = 200;

/// QNX 8.0's figure: the devctl adder, 2,000,000 calls in 12.1 s on a
/// Raspberry Pi 4, 165,300 messages a second per thread.
const QNX_ADDER: Reference = Reference::avg(
    6.05,
    "QNX 8.0 adder, Raspberry Pi 4: 6.05 us (165,300 msgs/s per thread)",
);

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    let t = |id, title, run| TestDef {
        id,
        group: Group::MSG,
        title,
        needs_fifo: true,
        substitute: None,
        run,
    };
    vec![
        t("MSG-P-SRR", "send/receive/reply round trip between two SCHED_FIFO processes (msgpass uds)", p_srr),
        t("MSG-P-PRI", "the same round trip with priority inheritance through messages (each request boosts the server, each reply restores it)", p_pri),
        t("MSG-B-PRI", "priority inversion through messages avoided by inheritance (server busy for low L, high H calls, medium hog M must not delay H's reply)", super::msginv::b_pri),
    ]
}

// ------------------------------------------------------ MSG-P-SRR and -PRI

fn p_srr(ctx: &Ctx) -> Result<Vec<Variant>> {
    round_trip_variants(ctx, false)
}

fn p_pri(ctx: &Ctx) -> Result<Vec<Variant>> {
    round_trip_variants(ctx, true)
}

/// The two placements: both on one CPU, and the client on another CPU
/// than the server's (skipped with one CPU).
fn round_trip_variants(ctx: &Ctx, inherit: bool) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let mut out = vec![round_trip(ctx, inherit, cpu, cpu, "one CPU")?];
    match ctx.cpus.iter().copied().find(|&c| c != cpu) {
        Some(other) => out.push(round_trip(ctx, inherit, cpu, other, "two CPUs")?),
        None => out.push(Variant::new(
            "two CPUs",
            Outcome::Skipped {
                reason: "needs two online CPUs".into(),
            },
        )),
    }
    Ok(out)
}

/// One variant: the server on `server_cpu`, the client on `client_cpu`.
fn round_trip(
    ctx: &Ctx,
    inherit: bool,
    server_cpu: usize,
    client_cpu: usize,
    name: &str,
) -> Result<Variant> {
    let server = Server::start(server_cpu, SERVER_FIFO, inherit)?;
    let (ns, n, clock, ts) = (
        server.ns(),
        ctx.samples(20_000),
        ctx.clock,
        ctx.timestamp_ns,
    );
    let stop = Arc::clone(&ctx.stop);
    let h = rt_thread("msg-client", CLIENT_FIFO, client_cpu, move || {
        let mut c = connect(&ns)?;
        let served_at = work(&mut c, 0)?;
        let samples = calls(&mut c, n, clock, ts, &stop)?;
        Ok((served_at, samples))
    })?;
    let got = join(h);
    server.stop()?;
    let (served_at, samples) = got?;
    let want = if inherit {
        CLIENT_FIFO as u32
    } else {
        SERVER_FIFO
    };
    if served_at[0] != want || served_at[2] != want {
        bail!(
            "the server served a FIFO {CLIENT_FIFO} caller at FIFO {} (replied at {}), expected {want} ({})",
            served_at[0],
            served_at[2],
            if inherit { "inheritance on" } else { "its own, inheritance off" }
        );
    }
    let timing = Timing::of(Unit::Us, samples).ok_or_else(|| anyhow!("no samples"))?;
    Ok(Variant::new(name, Outcome::Timing(timing))
        .reference(QNX_ADDER)
        .note(round_trip_note(inherit, server_cpu, client_cpu)))
}

/// How a round-trip variant was measured.
fn round_trip_note(inherit: bool, server_cpu: usize, client_cpu: usize) -> String {
    let how = if inherit {
        format!(
            "with priority inheritance: each request raises the server to FIFO {CLIENT_FIFO} \
             (sched_setattr, after reading the caller's scheduling from the kernel) and its reply \
             restores FIFO {SERVER_FIFO}; checked on one call before timing"
        )
    } else {
        format!("without inheritance (the server stays at FIFO {SERVER_FIFO}, checked)")
    };
    format!(
        "msgpass {TRANSPORT}: a client thread of msgbench at SCHED_FIFO {CLIENT_FIFO} on CPU \
         {client_cpu} calls the server process (msgbench rtos-peer, one thread, SCHED_FIFO \
         {SERVER_FIFO}) on CPU {server_cpu}; each round trip sends 8 bytes and checks they come \
         back; {how}; {WARMUP} untimed first. The QNX figure is another machine's (a Raspberry \
         Pi 4), for scale"
    )
}

/// `n` timed round trips of 8 bytes, each reply checked; fewer when
/// `stop` is set. Samples in microseconds, less one timestamp's cost.
fn calls(
    c: &mut Connection,
    n: usize,
    clock: Clock,
    ts_ns: f64,
    stop: &AtomicBool,
) -> Result<Vec<f64>> {
    let mut samples = Vec::with_capacity(n);
    let mut reply = [0u8; 8];
    for i in 0..WARMUP + n {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let seq = (i as u64).to_le_bytes();
        let t0 = clock.now();
        let got = c.call(ECHO, &seq, &mut reply)?;
        let t1 = clock.now();
        if got != seq.len() || reply != seq {
            bail!("round trip {i}: the reply is not the request");
        }
        if i >= WARMUP {
            samples.push((clock.ticks_to_ns(t1.wrapping_sub(t0)) - ts_ns).max(0.0) / 1e3);
        }
    }
    Ok(samples)
}
