//! Real frames over the veth test bed: AF_PACKET sockets opened inside a
//! namespace, a paced open-loop generator (`sendmmsg` batches), a counting
//! sink (`recvmmsg` with `MSG_TRUNC`: only each frame's start is copied),
//! fanout receivers for forwarding workers, and a relay loop that hands
//! each received frame to a closure and sends the ones it keeps out of the
//! other port.
//!
//! System calls go through `oslayer::packet`. Frame sizes follow RFC 2544:
//! a "64-byte" frame counts the 4-byte FCS, which veth does not carry, so
//! its buffer is 60 bytes.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use oslayer::packet::{self, Fanout, MAX_BATCH};

use super::topology::{End, Topology, DEST_PREFIX, FWD0, GEN0};

/// Bytes of an Ethernet frame's FCS, counted in RFC 2544 sizes but not
/// carried by veth.
pub const FCS: usize = 4;

/// Receive timeout of every loop here: how late it notices a stop flag.
const POLL: Duration = Duration::from_millis(10);

/// Opens a send-only socket on `end`, bypassing the qdisc.
pub fn open_sender(topo: &Topology, end: End) -> Result<OwnedFd> {
    topo.in_ns(end.role, || {
        let fd = packet::packet_socket(0)?;
        let ix = packet::interface_index(fd.as_fd(), end.name)?;
        packet::bind_interface(fd.as_fd(), ix, 0)?;
        packet::set_qdisc_bypass(fd.as_fd(), true)?;
        Ok(fd)
    })
    .with_context(|| format!("cannot open a packet sender on {}", end.name))
}

/// Opens `n` IPv4 receivers on `end` (arrivals only); with more than one
/// they form fanout group `group`, spread by flow hash.
pub fn open_receivers(topo: &Topology, end: End, n: usize, group: u16) -> Result<Vec<OwnedFd>> {
    topo.in_ns(end.role, || {
        let mut fds = Vec::with_capacity(n);
        for _ in 0..n {
            let fd = packet::packet_socket(packet::ETH_P_IP)?;
            let ix = packet::interface_index(fd.as_fd(), end.name)?;
            packet::bind_interface(fd.as_fd(), ix, packet::ETH_P_IP)?;
            packet::set_ignore_outgoing(fd.as_fd(), true)?;
            packet::force_recv_buffer(fd.as_fd(), 8 << 20)?;
            packet::set_recv_timeout(fd.as_fd(), POLL)?;
            if n > 1 {
                packet::join_fanout(fd.as_fd(), group, Fanout::Hash)?;
            }
            fds.push(fd);
        }
        Ok(fds)
    })
    .with_context(|| format!("cannot open {n} packet receiver(s) on {}", end.name))
}

/// What a generator did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sent {
    /// Frames the kernel took.
    pub frames: u64,
    /// Their bytes (without FCS).
    pub bytes: u64,
    /// Frames due that the kernel did not take (`ENOBUFS`, or a short
    /// `sendmmsg`): not offered again, not counted as sent.
    pub refused: u64,
    /// Frames still due when the trial's time was up: the generator (and
    /// whatever the kernel made its thread do while sending) could not
    /// offer the rate. Not sent, not lost.
    pub late: u64,
    /// Wall time from the start to the last frame sent.
    pub elapsed: Duration,
}

impl Sent {
    /// Whether every frame due was sent: the offered rate was really
    /// offered (a trial where it was not says nothing about loss at that
    /// rate).
    pub fn offered_in_full(&self) -> bool {
        self.late == 0 && self.refused == 0
    }

    /// Frames sent per second of the trial.
    pub fn rate(&self) -> f64 {
        self.frames as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// `n` frames from `source(i)`, built before sending starts so the send
/// loop only copies pointers.
pub fn frame_pool(n: usize, source: impl FnMut(usize) -> Vec<u8>) -> Vec<Vec<u8>> {
    (0..n).map(source).collect()
}

/// Sends `pool` round and round at `rate` frames per second for
/// `duration`, paced open loop by its own clock: at every moment the
/// frames due so far (`elapsed × rate`) are sent in batches, whether or not
/// anyone keeps up. Ends at `duration` (plus 0.5% grace) even when behind (the frames still
/// due are counted as [`Sent::late`]: the generator could not offer the
/// rate), or early when `stop` is set.
pub fn generate(
    fd: &OwnedFd,
    pool: &[Vec<u8>],
    rate: f64,
    duration: Duration,
    stop: &AtomicBool,
) -> Result<Sent> {
    anyhow::ensure!(
        !pool.is_empty() && rate > 0.0,
        "generator: needs frames and a positive rate"
    );
    // Frames due within the trial: the last one falls due at or before
    // `duration` (rounding up would put one past the deadline).
    let total = (rate * duration.as_secs_f64()).floor() as u64;
    // The last frames fall due at `duration`: a little grace to send them.
    let deadline = duration + (duration / 200).max(Duration::from_millis(1));
    let start = Instant::now();
    let mut s = Sent::default();
    let mut next = 0usize;
    while s.frames + s.refused < total && !stop.load(Ordering::Relaxed) {
        let now = start.elapsed();
        if now >= deadline {
            break;
        }
        let due = ((now.as_secs_f64() * rate) as u64).min(total);
        let behind = due - (s.frames + s.refused);
        if behind == 0 {
            wait_for_next(start, s.frames + s.refused + 1, rate);
            continue;
        }
        let k = (behind as usize).min(MAX_BATCH);
        let batch = (0..k).map(|j| pool[(next + j) % pool.len()].as_slice());
        let took = match packet::send_batch(fd, batch) {
            Ok(t) => t,
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => 0,
            Err(e) => return Err(e).context("generator: sendmmsg failed"),
        };
        for j in 0..took {
            s.bytes += pool[(next + j) % pool.len()].len() as u64;
        }
        s.frames += took as u64;
        s.refused += (k - took) as u64; // open loop: not offered again
        next = (next + k) % pool.len();
    }
    s.elapsed = start.elapsed();
    if !stop.load(Ordering::Relaxed) {
        s.late = total - s.frames - s.refused;
    }
    Ok(s)
}

/// Sleeps (or, for gaps under 100 µs, yields) until frame number `n` is due.
fn wait_for_next(start: Instant, n: u64, rate: f64) {
    let at = start + Duration::from_secs_f64(n as f64 / rate);
    let now = Instant::now();
    if at <= now {
        return;
    }
    let gap = at - now;
    if gap >= Duration::from_micros(100) {
        std::thread::sleep(gap);
    } else {
        std::thread::yield_now();
    }
}

/// What a sink counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counted {
    /// Frames that arrived.
    pub frames: u64,
    /// Their full lengths (without FCS).
    pub bytes: u64,
    /// Frames that reached the sink's socket but found its buffer full
    /// (part of the loss: the sink, not the forwarder, fell behind).
    pub socket_drops: u64,
}

/// Counts frames arriving on `fd` until `done` is set and then no frame
/// has come for one receive timeout (the ones in flight are drained), or
/// at once when `stop` is set.
pub fn count(fd: &OwnedFd, done: &AtomicBool, stop: &AtomicBool) -> Result<Counted> {
    const SLOT: usize = 64; // headers only: MSG_TRUNC reports full lengths
    let mut bufs = vec![0u8; SLOT * MAX_BATCH];
    let mut lens = [0usize; MAX_BATCH];
    let mut c = Counted::default();
    while !stop.load(Ordering::Relaxed) {
        let finishing = done.load(Ordering::Acquire);
        let n = packet::recv_batch(fd.as_fd(), &mut bufs, SLOT, &mut lens, true)
            .context("sink: recvmmsg failed")?;
        c.frames += n as u64;
        c.bytes += lens[..n].iter().map(|&l| l as u64).sum::<u64>();
        if n == 0 && finishing {
            break;
        }
    }
    c.socket_drops = socket_drops(fd)?;
    Ok(c)
}

/// What one relay worker did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Relayed {
    /// Frames received.
    pub received: u64,
    /// Frames sent out of the other port.
    pub forwarded: u64,
    /// Frames the closure dropped, or the kernel refused to send.
    pub dropped: u64,
    /// Frames that reached the worker's socket but found its buffer full
    /// (an RX overrun: the worker fell behind).
    pub socket_drops: u64,
}

/// Drops counted by the kernel on a receiving socket since it was opened
/// (or since the last call).
fn socket_drops(fd: &OwnedFd) -> Result<u64> {
    let st = packet::take_stats(fd.as_fd()).context("cannot read packet socket statistics")?;
    Ok(u64::from(st.drops))
}

/// A forwarding worker's loop: receives batches on `rx`, lets `forward`
/// rewrite each frame in place (MACs, TTL, checksum; `false` drops it),
/// and sends the kept ones out of `tx`, until `stop` is set and the
/// socket is empty (frames still queued when the trial ends are forwarded,
/// late, so every frame that reached the worker is accounted for).
pub fn relay(
    rx: &OwnedFd,
    tx: &OwnedFd,
    stop: &AtomicBool,
    mut forward: impl FnMut(&mut [u8]) -> bool,
) -> Result<Relayed> {
    const SLOT: usize = 2048;
    let mut bufs = vec![0u8; SLOT * MAX_BATCH];
    let mut lens = [0usize; MAX_BATCH];
    let mut r = Relayed::default();
    loop {
        let stopping = stop.load(Ordering::Relaxed);
        let n = packet::recv_batch(rx.as_fd(), &mut bufs, SLOT, &mut lens, false)
            .context("relay: recvmmsg failed")?;
        if n == 0 && stopping {
            break;
        }
        let mut keep = [false; MAX_BATCH];
        for (i, k) in keep.iter_mut().enumerate().take(n) {
            *k = forward(&mut bufs[i * SLOT..i * SLOT + lens[i]]);
        }
        let out = (0..n)
            .filter(|&i| keep[i])
            .map(|i| &bufs[i * SLOT..i * SLOT + lens[i]]);
        let sent = match packet::send_batch(tx, out) {
            Ok(t) => t,
            Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => 0,
            Err(e) => return Err(e).context("relay: sendmmsg failed"),
        };
        r.received += n as u64;
        r.forwarded += sent as u64;
        r.dropped += (n - sent) as u64;
    }
    r.socket_drops = socket_drops(rx)?;
    Ok(r)
}

/// Internet checksum (RFC 1071) of `data`.
pub fn ip_checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// A minimal valid Ethernet + IPv4 + UDP frame of RFC 2544 size `size`
/// (FCS included, so the buffer is `size - 4` bytes, at least 60) from
/// the generator's port to the forwarder's, addressed to host `flow` of
/// [`DEST_PREFIX`]. A stand-in until the suite's packet builder exists.
pub fn udp_frame(size: usize, flow: u16) -> Vec<u8> {
    let len = size.saturating_sub(FCS).max(60);
    let mut f = vec![0u8; len];
    f[0..6].copy_from_slice(&FWD0.mac);
    f[6..12].copy_from_slice(&GEN0.mac);
    f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    let ip_len = (len - 14) as u16;
    let dst = [
        DEST_PREFIX.0[0],
        DEST_PREFIX.0[1],
        (flow >> 8) as u8,
        flow as u8,
    ];
    let ip = &mut f[14..34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    ip[8] = 64; // TTL
    ip[9] = 17; // UDP
    ip[12..16].copy_from_slice(&GEN0.ip);
    ip[16..20].copy_from_slice(&dst);
    let sum = ip_checksum(ip);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let udp = &mut f[34..42];
    udp[0..2].copy_from_slice(&49152u16.to_be_bytes());
    udp[2..4].copy_from_slice(&(1024 + flow % 1024).to_be_bytes());
    udp[4..6].copy_from_slice(&(ip_len - 20).to_be_bytes()); // checksum 0: none (IPv4)
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_udp_frame_has_the_rfc_2544_size_and_a_valid_header_checksum() {
        for size in [64, 128, 1518] {
            let f = udp_frame(size, 258);
            assert_eq!(f.len(), size - FCS);
            assert_eq!(ip_checksum(&f[14..34]), 0, "a correct header sums to zero");
            assert_eq!(&f[30..34], &[198, 19, 1, 2]);
            assert_eq!(u16::from_be_bytes([f[16], f[17]]) as usize, size - FCS - 14);
        }
    }
}
