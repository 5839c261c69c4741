//! Where a forwarded packet's time goes in the `memory` path: flat-out
//! rates (full rings, no search, no loss counted) of the worker loop with
//! one more part at a time, then of every `--table` variant, with 1 and 2
//! workers. `msgbench smp` measures the zero-loss rates; this says what
//! each part costs, so those rates can be judged against it.
//!
//! The parts, each row adding one:
//! - `bare`: the loop alone: a receive port's arrival copies the frame from
//!   a pool into its ring, the worker picks the output port from a byte;
//! - `+header`: what a router does to the header (checks, TTL, checksum:
//!   `packet::forward_in_place`);
//! - `+lookup`: the DIR-24-8 lookup of the destination in the synthetic
//!   table, with no lock and no counters;
//! - `mutex` .. `per-cpu`: the lookup and per-route counters through each
//!   variant's worker handle (locks, lock timing), no route updates.
//!
//! Setup as in `msgbench smp`: a synthetic Internet table (`--routes`,
//! default 1,000,000), 2 ports, each fed from 65,536 real frames
//! (`--size`, default 64) with Zipf (s = 1) destinations; workers pinned
//! to the online CPUs in order.
//!
//! Run: `cargo bench -p msgbench --bench smp_memory [-- --routes N]
//! [--size BYTES] [--trial SECONDS]`.

use std::time::Duration;

use anyhow::{anyhow, bail, Context};
use msgbench::measure::clock::Clock;
use msgbench::measure::placement::{online_cpus, CpuList};
use msgbench::suites::smp::fib::Fib;
use msgbench::suites::smp::forwarder::{self, ForwarderConfig};
use msgbench::suites::smp::lpm::Dir24;
use msgbench::suites::smp::packet::{self, Spec};
use msgbench::suites::smp::ports::{Offered, Pool};
use msgbench::suites::smp::synth::{self, Destinations, Flows, Route};
use msgbench::suites::smp::tables::{Table, Variant};

const PORTS: usize = 2;
const POOL_FRAMES: usize = 65_536;

struct Args {
    routes: usize,
    size: usize,
    trial: Duration,
}

fn args() -> anyhow::Result<Args> {
    let mut a = Args {
        routes: synth::DEFAULT_ROUTES,
        size: packet::MIN_FRAME,
        trial: Duration::from_millis(500),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--routes" => a.routes = value("--routes")?.parse()?,
            "--size" => a.size = value("--size")?.parse()?,
            "--trial" => a.trial = Duration::from_secs_f64(value("--trial")?.parse()?),
            _ => {} // cargo bench passes --bench
        }
    }
    if !(packet::MIN_FRAME..=packet::MAX_FRAME).contains(&a.size) {
        bail!(
            "--size must be in {}..={}",
            packet::MIN_FRAME,
            packet::MAX_FRAME
        );
    }
    Ok(a)
}

/// Port `p`'s frames: destinations from its own Zipf stream.
fn pool(routes: &[Route], size: usize, port: usize) -> anyhow::Result<Pool> {
    let mut dsts =
        Destinations::new(routes, Flows::Zipf(1.0), 100 + port as u64).context("destinations")?;
    let mut spec = Spec::default();
    let mut err = None;
    let pool = Pool::build(POOL_FRAMES, size, |k, frame| {
        spec.dst = dsts.next_addr();
        match packet::write(frame, &spec, k) {
            Ok(()) => packet::seal(frame),
            Err(e) => err = Some(e),
        }
    });
    err.map_or(Ok(pool), |e| Err(e.into()))
}

/// Flat-out pps over all ports of `route` (one closure per worker).
fn flat_out<F>(
    cfg: &ForwarderConfig,
    clock: &Clock,
    route: impl Fn(usize) -> F,
    pools: &[Pool],
) -> anyhow::Result<f64>
where
    F: FnMut(&mut [u8]) -> Option<u16> + Send,
{
    let source = |p: u16| pools[usize::from(p)].clone();
    let per_port =
        forwarder::probe_capacity(cfg, clock, route, source).map_err(|e| anyhow!("{e}"))?;
    Ok(per_port * PORTS as f64)
}

fn show(what: &str, workers: usize, pps: f64) {
    println!(
        "{what:<10} N={workers} {:>7.2} Mpps  {:>6.1} ns per packet per worker",
        pps / 1e6,
        1e9 * workers as f64 / pps
    );
}

fn main() -> anyhow::Result<()> {
    let a = args()?;
    let clock = Clock::best();
    let routes = synth::generate(a.routes, PORTS as u16, 1);
    let mut fib = Dir24::new();
    synth::fill(&mut fib, &routes);
    let pools = (0..PORTS)
        .map(|p| pool(&routes, a.size, p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let ports: Vec<u16> = routes.iter().map(|r| r.port).collect();
    println!(
        "smp_memory: {} routes (Dir24 {} MiB), {PORTS} ports, {}-byte frames, zipf s=1, flat out for {:?}, clock {}, CPUs {:?}",
        routes.len(),
        fib.table_bytes() >> 20,
        a.size,
        a.trial,
        clock.describe(),
        online_cpus(),
    );
    let bytes = a.size as u32;
    let by_byte = |f: &mut [u8]| Some(u16::from(f[33] & 1));
    for workers in [1, 2].into_iter().filter(|&n| n <= online_cpus().len()) {
        let mut cfg = ForwarderConfig::new(workers, PORTS, a.size, Offered::FlatOut, a.trial);
        cfg.cpus = CpuList(online_cpus());
        show(
            "bare",
            workers,
            flat_out(&cfg, &clock, |_| by_byte, &pools)?,
        );
        let header = |_| {
            |f: &mut [u8]| {
                packet::forward_in_place(f).ok()?;
                by_byte(f)
            }
        };
        show("+header", workers, flat_out(&cfg, &clock, header, &pools)?);
        let lookup = |_| {
            |f: &mut [u8]| {
                packet::forward_in_place(f).ok()?;
                let r = fib.lookup(u32::from_be_bytes(f[30..34].try_into().ok()?))?;
                ports.get(r as usize).copied()
            }
        };
        show("+lookup", workers, flat_out(&cfg, &clock, lookup, &pools)?);
        for v in Variant::ALL {
            let table = Table::new(v, fib.clone(), ports.clone(), workers);
            let variant = |k| {
                let mut h = table.worker(k);
                move |f: &mut [u8]| -> Option<u16> {
                    packet::forward_in_place(f).ok()?;
                    let dst = u32::from_be_bytes(f[30..34].try_into().ok()?);
                    h.forward(dst, bytes).map(|hop| hop.port)
                }
            };
            show(v.name(), workers, flat_out(&cfg, &clock, variant, &pools)?);
        }
    }
    Ok(())
}
