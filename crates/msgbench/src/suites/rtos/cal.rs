//! Calibration: CAL-P-TRC (cost of one timestamp) and CAL-P-CPU (CPU and
//! memory speed, cached against uncached).

use std::hint::black_box;

use anyhow::{anyhow, Result};

use super::ctx::Ctx;
use super::def::{TestDef, Variant};
use super::row::Group;
use super::row::{Outcome, Reference, Timing, Unit};

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    vec![
    TestDef {
        id: "CAL-P-TRC",
        group: Group::CAL,
        title: "overhead of taking one timestamp (subtracted from every other result)",
        needs_fifo: false,
        substitute: None,
        run: trc,
    },
    TestDef {
        id: "CAL-P-CPU",
        group: Group::CAL,
        title: "CPU and memory speed, cached vs uncached (ALU loop, pointer chase in L1 and beyond the LLC)",
        needs_fifo: false,
        substitute: None,
        run: cpu,
    }]
}

/// Back-to-back timestamps: each sample is the difference of two
/// consecutive reads, i.e. the cost of one read.
fn trc(ctx: &Ctx) -> Result<Vec<Variant>> {
    let n = ctx.samples(100_000);
    let mut samples = Vec::with_capacity(n);
    for _ in 0..n {
        let a = ctx.clock.now();
        let b = ctx.clock.now();
        samples.push(ctx.clock.ticks_to_ns(b.wrapping_sub(a)));
    }
    let t = Timing::of(Unit::Ns, samples).ok_or_else(|| anyhow::anyhow!("no samples"))?;
    Ok(vec![Variant::new("", Outcome::Timing(t))
        .reference(Reference::avg(209.0, "209 ns"))
        .note(format!(
            "clock {}; the median of the start-up measurement ({:.1} ns) is what other tests subtract",
            ctx.clock.name(),
            ctx.timestamp_ns
        ))])
}

/// Iterations of the ALU loop (or accesses of a walk) per sample.
const BLOCK: usize = 10_000;

/// Bytes of one cache line: the walks touch one slot per line.
const LINE: usize = 64;

/// CPU and memory speed: a dependent ALU loop, then a pointer chase over a
/// random cycle (so the prefetcher cannot guess the next line) in a buffer
/// that fits in L1 and in one much larger than the last-level cache.
fn cpu(ctx: &Ctx) -> Result<Vec<Variant>> {
    let cpu = super::rtthread::test_cpu(&ctx.cpus);
    let quick = ctx.quick;
    let (alu_n, l1_n, big_n) = (ctx.samples(1000), ctx.samples(1000), ctx.samples(200));
    let clock = ctx.clock;
    let ts = ctx.timestamp_ns;
    let llc = llc_bytes();
    let (small, big) = walk_sizes(llc, quick);
    let h = super::rt::spawn("cal-cpu", None, Some(cpu), move || {
        let per = |ticks: u64| (clock.ticks_to_ns(ticks) - ts).max(0.0) / BLOCK as f64;
        let mut alu = Vec::with_capacity(alu_n);
        let mut x = black_box(1u64);
        for _ in 0..alu_n {
            let t0 = clock.now();
            x = alu_loop(x, BLOCK);
            alu.push(per(clock.now().wrapping_sub(t0)));
        }
        black_box(x);
        let walk = |bytes: usize, n: usize| {
            let ring = chase_ring(bytes / LINE);
            let mut at = 0usize;
            // One lap first so the cached walk starts warm.
            at = chase(&ring, at, ring.len());
            let mut out = Vec::with_capacity(n);
            for _ in 0..n {
                let t0 = clock.now();
                at = chase(&ring, at, BLOCK);
                out.push(per(clock.now().wrapping_sub(t0)));
            }
            black_box(at);
            out
        };
        let l1 = walk(small, l1_n);
        let far = walk(big, big_n);
        Ok((alu, l1, far))
    })?;
    let (alu, l1, far) = super::rt::join(h)?;
    let l1_med = median(&l1).filter(|m| *m > 0.0);
    let ratios: Vec<f64> = match l1_med {
        Some(m) => far.iter().map(|v| v / m).collect(),
        None => Vec::new(),
    };
    let t = |unit, v: Vec<f64>| Timing::of(unit, v).ok_or_else(|| anyhow!("no samples"));
    let llc_text = match llc {
        Some(b) => format!("LLC {} KiB (sysfs)", b / 1024),
        None => "LLC size unknown".to_string(),
    };
    let mut out = vec![
        Variant::new("ALU loop, ns/iteration", Outcome::Timing(t(Unit::Ns, alu)?)).note(format!(
            "dependent multiply-add-xorshift chain, {BLOCK} iterations per sample, pinned to CPU {cpu}"
        )),
        Variant::new(
            format!("L1 walk ({} KiB), ns/access", small / 1024),
            Outcome::Timing(t(Unit::Ns, l1)?),
        )
        .note(format!(
            "pointer chase over a random cycle, one slot per {LINE}-byte line, {BLOCK} accesses per sample"
        )),
        Variant::new(
            format!("uncached walk ({} MiB), ns/access", big >> 20),
            Outcome::Timing(t(Unit::Ns, far)?),
        )
        .note(format!("same walk over a buffer beyond the last-level cache ({llc_text})")),
    ];
    out.push(match Timing::of(Unit::Count, ratios) {
        Some(r) => Variant::new("cache effect (uncached / L1)", Outcome::Timing(r))
            .reference(Reference::text("cache effect 1.0-6.2x"))
            .note("each uncached sample divided by the median L1 sample"),
        None => Variant::new(
            "cache effect (uncached / L1)",
            Outcome::Error {
                message: "the L1 walk measured no time".into(),
            },
        ),
    });
    Ok(out)
}

/// A dependent chain of `n` integer operations (an LCG step and a
/// xorshift), so neither the compiler nor the CPU can overlap iterations.
#[inline(never)]
fn alu_loop(mut x: u64, n: usize) -> u64 {
    for _ in 0..n {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        x ^= x >> 29;
    }
    black_box(x)
}

/// Follows `n` links of `ring` from `at`; returns where it stopped.
#[inline(never)]
fn chase(ring: &[Slot], mut at: usize, n: usize) -> usize {
    for _ in 0..n {
        at = ring[at].next;
    }
    at
}

/// One cache line of the walk: the index of the next line to visit.
#[repr(align(64))]
#[derive(Clone, Copy)]
struct Slot {
    next: usize,
}

/// `lines` slots linked into one random cycle (Sattolo's shuffle), so a
/// walk visits every line once per lap in an unpredictable order.
fn chase_ring(lines: usize) -> Vec<Slot> {
    let lines = lines.max(2);
    let mut order: Vec<usize> = (0..lines).collect();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..lines).rev() {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let j = (rng % i as u64) as usize;
        order.swap(i, j);
    }
    let mut ring = vec![Slot { next: 0 }; lines];
    for w in 0..lines {
        ring[order[w]].next = order[(w + 1) % lines];
    }
    ring
}

/// The buffer sizes of the two walks: half of a typical L1d, and well
/// beyond the last-level cache (8x its size, 64 MiB when unknown; capped,
/// and smaller with `--quick`).
fn walk_sizes(llc: Option<usize>, quick: bool) -> (usize, usize) {
    let big = llc.map_or(64 << 20, |b| (b * 8).clamp(16 << 20, 512 << 20));
    let big = if quick {
        big.min(llc.map_or(64 << 20, |b| (b * 4).max(16 << 20)))
    } else {
        big
    };
    (16 << 10, big)
}

/// The largest cache of CPU 0 in bytes (sysfs), if known.
fn llc_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("size")).ok())
        .filter_map(|s| parse_size(s.trim()))
        .max()
}

/// "32K", "1024K", "32M" or plain bytes.
fn parse_size(s: &str) -> Option<usize> {
    let (num, mult) = match s.chars().last()? {
        'K' | 'k' => (&s[..s.len() - 1], 1024),
        'M' | 'm' => (&s[..s.len() - 1], 1 << 20),
        'G' | 'g' => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    num.parse::<usize>().ok()?.checked_mul(mult)
}

fn median(v: &[f64]) -> Option<f64> {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s.get(s.len() / 2).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ring_is_one_cycle_over_every_line() {
        for n in [2, 3, 17, 256, 1000] {
            let ring = chase_ring(n);
            let mut seen = vec![false; n];
            let mut at = 0;
            for _ in 0..n {
                assert!(!seen[at], "line {at} visited twice in {n}");
                seen[at] = true;
                at = ring[at].next;
            }
            assert_eq!(at, 0, "the walk returns to its start after one lap");
            assert!(seen.iter().all(|s| *s));
        }
    }

    #[test]
    fn sizes_parse_and_walks_exceed_the_llc() {
        assert_eq!(parse_size("32K"), Some(32 << 10));
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("x"), None);
        assert_eq!(parse_size(""), None);
        let (small, big) = walk_sizes(Some(32 << 20), false);
        assert!(small <= 32 << 10 && big > 32 << 20);
        let (_, big_q) = walk_sizes(Some(32 << 20), true);
        assert!(big_q > 32 << 20 && big_q <= big);
    }

    #[test]
    fn alu_loop_is_deterministic() {
        assert_eq!(alu_loop(1, 100), alu_loop(1, 100));
        assert_ne!(alu_loop(1, 100), alu_loop(1, 101));
    }
}
