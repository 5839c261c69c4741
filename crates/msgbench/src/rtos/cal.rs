//! Calibration: CAL-P-TRC (cost of one timestamp) and CAL-P-CPU (CPU and
//! memory speed, cached against uncached).

use anyhow::Result;

use super::catalogue::{Group, TestDef, Variant};
use super::ctx::Ctx;
use super::outcome::{Outcome, Reference, Timing, Unit};

/// The group's tests.
pub fn tests() -> Vec<TestDef> {
    vec![TestDef {
        id: "CAL-P-TRC",
        group: Group::CAL,
        title: "overhead of taking one timestamp (subtracted from every other result)",
        needs_fifo: false,
        substitute: None,
        run: trc,
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
