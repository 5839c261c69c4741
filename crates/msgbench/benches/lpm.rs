//! The forwarding table's cost per packet, measured alone: the DIR-24-8
//! table (`smp::lpm::Dir24`) filled with the synthetic 1,000,000-route
//! Internet table, looked up for uniform and Zipf (s = 1) destinations,
//! then the same with a router's per-packet work on a 64-byte frame
//! (header checks, TTL and checksum update, lookup).
//!
//! One thread, pinned to the last online CPU. Destinations (and frames)
//! are generated before the clock starts; the lookups of a pass are
//! independent of each other, as a forwarder's packets are, so the CPU
//! overlaps their cache misses: this is throughput per packet, not the
//! latency of one lookup. Each figure is the median of 5 passes.
//!
//! Run: `cargo bench -p msgbench --bench lpm [-- --quick]`
//! (`--quick`: 100,000 routes and fewer packets, for a smoke test).

use std::hint::black_box;
use std::time::Instant;

use anyhow::{bail, Context};
use msgbench::measure::placement::{online_cpus, pin_current_thread};
use msgbench::suites::smp::fib::Fib;
use msgbench::suites::smp::lpm::Dir24;
use msgbench::suites::smp::packet::{self, Spec};
use msgbench::suites::smp::synth::{self, Destinations, Flows, Route};

/// Passes per figure; the median is printed.
const PASSES: usize = 5;
/// Bytes per frame in the forwarding figure.
const FRAME: usize = 64;

/// Sizes of one run.
struct Plan {
    routes: usize,
    /// Destinations per pass.
    packets: usize,
}

fn main() -> anyhow::Result<()> {
    let quick = std::env::args().any(|a| a == "--quick");
    let plan = if quick {
        Plan {
            routes: 100_000,
            packets: 1 << 20,
        }
    } else {
        Plan {
            routes: synth::DEFAULT_ROUTES,
            packets: 1 << 22,
        }
    };
    let cpu = *online_cpus().last().context("no online CPU")?;
    pin_current_thread(cpu).context("pinning")?;
    println!("lpm: pinned to CPU {cpu}");
    let (routes, fib) = table(&plan);
    for (name, flows) in [("uniform", Flows::Uniform), ("zipf", Flows::Zipf(1.0))] {
        let dsts: Vec<u32> = Destinations::new(&routes, flows, 2)
            .context("destinations")?
            .take(plan.packets)
            .collect();
        check_hits(&fib, &routes, &dsts)?;
        let per = median(|| lookups(&fib, &dsts));
        print_row(&format!("lookup, {name}"), per);
        let mut frames = frames(&dsts)?;
        let per = median(|| forwards(&fib, &mut frames));
        print_row(&format!("forward 64 B + lookup, {name}"), per);
    }
    Ok(())
}

/// The synthetic table and a DIR-24-8 filled with it.
fn table(plan: &Plan) -> (Vec<Route>, Dir24) {
    let t = Instant::now();
    let routes = synth::generate(plan.routes, 2, 1);
    let generated = t.elapsed();
    let t = Instant::now();
    let mut fib = Dir24::new();
    synth::fill(&mut fib, &routes);
    println!(
        "lpm: {} routes generated in {:.2?}, inserted in {:.2?} ({} second-level blocks, {} MiB)",
        fib.len(),
        generated,
        t.elapsed(),
        fib.blocks(),
        fib.table_bytes() >> 20
    );
    (routes, fib)
}

/// Every destination has a route, and it contains the destination.
fn check_hits(fib: &Dir24, routes: &[Route], dsts: &[u32]) -> anyhow::Result<()> {
    for &d in dsts {
        match fib.lookup(d) {
            Some(id) if routes[id as usize].prefix.contains(d) => {}
            other => bail!("destination {d:#010x}: lookup gave {other:?}"),
        }
    }
    Ok(())
}

/// Frames of `FRAME` bytes to the destinations, TTL 255 (enough for
/// every pass to decrement it).
fn frames(dsts: &[u32]) -> anyhow::Result<Vec<u8>> {
    let mut buf = vec![0u8; dsts.len() * FRAME];
    for (i, (f, &dst)) in buf.chunks_exact_mut(FRAME).zip(dsts).enumerate() {
        let spec = Spec {
            dst,
            ttl: 255,
            ..Spec::default()
        };
        packet::write(f, &spec, i as u64)?;
        packet::seal(f);
    }
    Ok(buf)
}

/// Nanoseconds per lookup over all of `dsts`.
fn lookups(fib: &Dir24, dsts: &[u32]) -> f64 {
    let t = Instant::now();
    let mut acc = 0u32;
    for &d in dsts {
        acc = acc.wrapping_add(fib.lookup(black_box(d)).unwrap_or(u32::MAX));
    }
    black_box(acc);
    t.elapsed().as_secs_f64() * 1e9 / dsts.len() as f64
}

/// Nanoseconds per frame for checks, TTL/checksum update and lookup.
fn forwards(fib: &Dir24, frames: &mut [u8]) -> f64 {
    let n = frames.len() / FRAME;
    let t = Instant::now();
    let mut acc = 0u32;
    for f in frames.chunks_exact_mut(FRAME) {
        if packet::forward_in_place(f).is_ok() {
            // Checked by forward_in_place: read the destination directly.
            let dst = u32::from_be_bytes([f[30], f[31], f[32], f[33]]);
            acc = acc.wrapping_add(fib.lookup(dst).unwrap_or(u32::MAX));
        }
    }
    black_box(acc);
    t.elapsed().as_secs_f64() * 1e9 / n as f64
}

/// The median of `PASSES` runs of `f`.
fn median(mut f: impl FnMut() -> f64) -> f64 {
    let mut v: Vec<f64> = (0..PASSES).map(|_| f()).collect();
    v.sort_by(f64::total_cmp);
    v[PASSES / 2]
}

/// One line of figures.
fn print_row(name: &str, ns: f64) {
    println!("{name:<32} {ns:>7.2} ns/packet {:>8.1} M/s", 1e3 / ns);
}
