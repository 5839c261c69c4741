//! The MSG tests: QNX-style send/receive/reply between two real
//! processes over msgpass (uds), the suite's client thread and the server
//! process `msgbench rtos-peer server` ([`super::msgpeer`]), both at
//! SCHED_FIFO: the round trip (MSG-P-SRR), the same with priority
//! inheritance through messages (MSG-P-PRI: what the boost costs), and
//! the message-passing form of MUT-B-ARC ([`super::msginv`], MSG-B-PRI).
//!
//! Each round-trip variant is followed by the same number of calls
//! checked one by one, as Android's binder latency test checks its
//! calls: the server replies with the FIFO priority it served each one
//! at, read from the kernel, and the variant "..., every call checked"
//! PASSes only if every call was served at the priority the test claims
//! (MSG-P-PRI: the caller's, so it FAILs with `--msg-inherit off`;
//! MSG-P-SRR: the server's own).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, bail, Result};
use msgpass::Connection;

use super::ctx::Ctx;
use super::def::{TestDef, Variant};
use super::msgpeer::{ECHO, ECHO_AT};
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
        t("MSG-P-SRR", "send/receive/reply round trip between two SCHED_FIFO processes (msgpass, uds unless --msg-transport)", p_srr),
        t("MSG-P-PRI", "the same round trip with priority inheritance through messages (each request serves at its caller's priority, read from the kernel)", p_pri),
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
/// than the server's (skipped with one CPU); each timed, then checked on
/// every call. `inherit`: the test is MSG-P-PRI (its server inherits
/// unless `--msg-inherit off`).
fn round_trip_variants(ctx: &Ctx, inherit: bool) -> Result<Vec<Variant>> {
    let cpu = test_cpu(&ctx.cpus);
    let mut out = round_trip(ctx, inherit, cpu, cpu, "one CPU")?;
    match ctx.cpus.iter().copied().find(|&c| c != cpu) {
        Some(other) => out.extend(round_trip(ctx, inherit, cpu, other, "two CPUs")?),
        None => {
            for name in ["two CPUs", "two CPUs, every call checked"] {
                out.push(Variant::new(
                    name,
                    Outcome::Skipped {
                        reason: "needs two online CPUs".into(),
                    },
                ));
            }
        }
    }
    Ok(out)
}

/// One placement, the server on `server_cpu`, the client on
/// `client_cpu`: the timed variant, then the every-call check.
fn round_trip(
    ctx: &Ctx,
    inherit: bool,
    server_cpu: usize,
    client_cpu: usize,
    name: &str,
) -> Result<Vec<Variant>> {
    let boosts = inherit && ctx.msg_inherit;
    let server = Server::start(&ctx.msg_transport, server_cpu, SERVER_FIFO, boosts)?;
    let (to, n, clock, ts) = (
        server.target(),
        ctx.samples(20_000),
        ctx.clock,
        ctx.timestamp_ns,
    );
    let stop = Arc::clone(&ctx.stop);
    let h = rt_thread("msg-client", CLIENT_FIFO, client_cpu, move || {
        let mut c = connect(&to)?;
        let served_at = work(&mut c, 0)?;
        let samples = calls(&mut c, n, clock, ts, &stop)?;
        let served = checked_calls(&mut c, n, &stop)?;
        Ok((served_at, samples, served))
    })?;
    let got = join(h);
    server.stop()?;
    let (served_at, samples, served) = got?;
    let runs_at = if boosts {
        CLIENT_FIFO as u32
    } else {
        SERVER_FIFO
    };
    if served_at[0] != runs_at || served_at[2] != runs_at {
        bail!(
            "the server served a FIFO {CLIENT_FIFO} caller at FIFO {} (replied at {}), expected {runs_at} ({})",
            served_at[0],
            served_at[2],
            if boosts { "inheritance on" } else { "its own, inheritance off" }
        );
    }
    let timing = Timing::of(Unit::Us, samples).ok_or_else(|| anyhow!("no samples"))?;
    let timed = Variant::new(name, Outcome::Timing(timing))
        .reference(QNX_ADDER)
        .note(round_trip_note(
            &ctx.msg_transport,
            boosts,
            (server_cpu, client_cpu),
        ));
    Ok(vec![timed, check_variant(name, &served, inherit)])
}

/// What the every-call check saw: calls by the FIFO priority they were
/// served at (0: not FIFO), and the first call and priority that missed
/// the expected one.
#[derive(Debug, Default)]
struct Served {
    at: BTreeMap<u32, usize>,
    first_miss: Option<(usize, u32)>,
}

/// `n` round trips of 8 bytes (fewer when `stop` is set), each reply
/// checked to be the request and the priority the server served it at.
fn checked_calls(c: &mut Connection, n: usize, stop: &AtomicBool) -> Result<Vec<u32>> {
    let mut at = Vec::with_capacity(n);
    let mut reply = [0u8; 12];
    for i in 0..n {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        let seq = (i as u64).to_le_bytes();
        let got = c.call(ECHO_AT, &seq, &mut reply)?;
        if got != reply.len() || reply[..8] != seq {
            bail!("checked call {i}: the reply is not the request and a priority");
        }
        at.push(u32::from_le_bytes([
            reply[8], reply[9], reply[10], reply[11],
        ]));
    }
    Ok(at)
}

impl Served {
    /// The tally of `at` (each call's priority, in order) against `want`.
    fn of(at: &[u32], want: u32) -> Served {
        let mut s = Served::default();
        for (i, &p) in at.iter().enumerate() {
            *s.at.entry(p).or_default() += 1;
            if p != want && s.first_miss.is_none() {
                s.first_miss = Some((i, p));
            }
        }
        s
    }
}

/// `FIFO 50`, or `not FIFO` for 0.
fn fifo_name(p: u32) -> String {
    match p {
        0 => "not FIFO".into(),
        p => format!("FIFO {p}"),
    }
}

/// The every-call check of placement `name`: PASS when every call was
/// served at the caller's priority (`inherit`, MSG-P-PRI) or at the
/// server's own (MSG-P-SRR), with the share that was.
fn check_variant(name: &str, at: &[u32], inherit: bool) -> Variant {
    let (want, whose) = if inherit {
        (CLIENT_FIFO as u32, "the caller's, inherited")
    } else {
        (SERVER_FIFO, "the server's own: no inheritance asked")
    };
    let s = Served::of(at, want);
    let n = at.len();
    let hit = s.at.get(&want).copied().unwrap_or(0);
    let pct = if n == 0 {
        0.0
    } else {
        100.0 * hit as f64 / n as f64
    };
    let mut observed = vec![format!(
        "{hit} of {n} calls ({pct:.1}%) served at {}",
        fifo_name(want)
    )];
    for (p, k) in s.at.iter().filter(|(p, _)| **p != want) {
        observed.push(format!("{k} served at {}", fifo_name(*p)));
    }
    if let Some((i, p)) = s.first_miss {
        observed.push(format!(
            "the first call not at {}: call {i}, at {}",
            fifo_name(want),
            fifo_name(p)
        ));
    }
    Variant::new(
        format!("{name}, every call checked"),
        Outcome::Behaviour {
            pass: n > 0 && hit == n,
            observed,
            expected: format!("every call served at {} ({whose})", fifo_name(want)),
        },
    )
    .note(format!(
        "{n} more round trips after the timed ones, untimed: the server replies with the FIFO \
         priority it served each call at, read from the kernel (sched_getattr) while serving it"
    ))
}

/// How a round-trip variant was measured.
fn round_trip_note(transport: &str, inherit: bool, cpus: (usize, usize)) -> String {
    let (server_cpu, client_cpu) = cpus;
    let how = if inherit {
        format!(
            "with priority inheritance: each request reads the caller's scheduling from the \
             kernel and serves at it; the server, raised to FIFO {CLIENT_FIFO} at the first \
             request, keeps it until a message of another priority (as on QNX, which sets a \
             server's priority when it receives, not when it replies), so a caller calling \
             again pays no sched_setattr; checked on one call before timing"
        )
    } else {
        format!("without inheritance (the server stays at FIFO {SERVER_FIFO}, checked)")
    };
    format!(
        "msgpass {transport}: a client thread of msgbench at SCHED_FIFO {CLIENT_FIFO} on CPU \
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
