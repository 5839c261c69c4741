//! The reference row: the kernel's own IPv4 forwarding between the same
//! namespaces, driven by the same generator and counted by the same sink
//! as our forwarder. One trial: offer `rate` frames per second for
//! `duration`, then count what reached the sink.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{anyhow, Result};

use super::afpacket::{self, Counted, Sent};
use super::topology::{Topology, GEN0, SINK0};

/// Distinct destinations (flows) in the generator's frame pool.
pub const FLOWS: usize = 256;

/// One trial's offer.
#[derive(Debug, Clone, Copy)]
pub struct Trial {
    /// RFC 2544 frame size (FCS included).
    pub size: usize,
    /// Offered frames per second.
    pub rate: f64,
    /// How long the offer lasts.
    pub duration: Duration,
}

/// What one trial saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    /// What the generator sent.
    pub sent: Sent,
    /// What the sink counted.
    pub received: Counted,
}

impl Outcome {
    /// Frames sent but never counted (RFC 2544's frame loss).
    pub fn lost(&self) -> u64 {
        self.sent.frames.saturating_sub(self.received.frames)
    }
}

/// Runs one trial through the kernel's forwarding (ip_forward on in the
/// middle namespace for the trial, off again after), the generator
/// sending `pool` round and round. `stop` (SIGINT) ends it early; the
/// counts so far are returned.
pub fn kernel_trial(
    topo: &Topology,
    trial: &Trial,
    pool: &[Vec<u8>],
    stop: &AtomicBool,
) -> Result<Outcome> {
    topo.set_kernel_forwarding(true)?;
    let out = run_trial(topo, trial, pool, stop);
    let off = topo.set_kernel_forwarding(false);
    let out = out?;
    off?;
    Ok(out)
}

/// The generator's frames of the test bed's own tests: [`FLOWS`] flows to
/// [`DEST_PREFIX`](super::topology::DEST_PREFIX).
pub fn flow_pool(size: usize) -> Vec<Vec<u8>> {
    afpacket::frame_pool(FLOWS, |i| afpacket::udp_frame(size, i as u16))
}

/// Generator and sink around whatever forwards in the middle namespace.
pub fn run_trial(
    topo: &Topology,
    trial: &Trial,
    pool: &[Vec<u8>],
    stop: &AtomicBool,
) -> Result<Outcome> {
    let tx = afpacket::open_sender(topo, GEN0)?;
    let rx = afpacket::open_receivers(topo, SINK0, 1, 0)?.remove(0);
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        let sink = std::thread::Builder::new()
            .name("smp-sink".into())
            .spawn_scoped(s, || afpacket::count(&rx, &done, stop))?;
        let sent = afpacket::generate(&tx, pool, trial.rate, trial.duration, stop);
        done.store(true, Ordering::Release);
        let received = sink
            .join()
            .map_err(|_| anyhow!("the sink thread panicked"))??;
        Ok(Outcome {
            sent: sent?,
            received,
        })
    })
}
