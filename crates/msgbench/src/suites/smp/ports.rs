//! Simulated NIC ports for the `memory` packet path: the ring is the wire.
//!
//! - An [`RxPort`] belongs to one worker. Packets arrive on it as time
//!   passes, open loop, paced by the port's own clock: arrival `i`
//!   (counting from 0) is due at `(i + 1) / rate` after the trial starts,
//!   and arrivals stop at the trial's end. Nothing generates them: when its
//!   worker polls, the port works out from the time how many have arrived
//!   since the last poll, writes as many as fit into its bounded ring (from
//!   a [`FrameSource`]) and counts the rest as dropped, an RX overrun. As
//!   on a NIC whose driver returns descriptors in bursts, slots the worker
//!   has emptied become free again at its next poll. So every arrival is
//!   either received or dropped: `generated = received + rx_dropped`,
//!   exactly.
//! - A [`TxPort`] is shared by the workers that forward to it. Its ring
//!   drains at the port's line rate (frame plus 20 bytes of preamble and
//!   inter-frame gap per frame on the wire), or at once when the rate is
//!   unlimited; a frame that finds the ring full is a TX drop. The ring is
//!   kept as the time its wire is busy until (one atomic, reserved with a
//!   compare-and-swap), so no frame is copied: a frame the ring accepts
//!   will leave, and is handed to the worker's [`Sink`] there and then.
//!
//! Times are nanoseconds since the trial's start, given by the caller, so
//! the ports behave the same under a real clock and in a test's model.

use std::sync::atomic::{AtomicU64, Ordering};

/// Bytes a frame costs on the wire besides itself: preamble and start
/// delimiter (8) and the minimum inter-frame gap (12).
pub const WIRE_OVERHEAD: usize = 20;

/// Why a `--line-rate` was refused (the value as given, quoted).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LineRateError {
    /// Neither `none` nor a number with an optional suffix.
    #[error("line rate {0:?}: expected none or e.g. 100m, 1g, 10g")]
    Syntax(String),
    /// A rate below 1 bit/s or above 1000 Tbit/s (or not finite).
    #[error("line rate {0:?}: must be between 1 bit/s and 1000 Tbit/s")]
    Range(String),
}

/// Parses `--line-rate`: `none`, or a number of bits per second with an
/// optional `k`, `m`, `g` suffix (`100m`, `1g`, `2.5g`, `10G`).
/// `None` means unlimited.
pub fn parse_line_rate(s: &str) -> Result<Option<u64>, LineRateError> {
    let t = s.trim().to_ascii_lowercase();
    if t == "none" {
        return Ok(None);
    }
    let (num, scale) = match t.char_indices().last() {
        Some((i, 'k')) => (&t[..i], 1e3),
        Some((i, 'm')) => (&t[..i], 1e6),
        Some((i, 'g')) => (&t[..i], 1e9),
        _ => (t.as_str(), 1.0),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| LineRateError::Syntax(s.to_string()))?;
    let bps = v * scale;
    if !(1.0..=1e15).contains(&bps) {
        return Err(LineRateError::Range(s.to_string()));
    }
    Ok(Some(bps.round() as u64))
}

/// The most frames per second a port of `bps` carries at `frame_len`
/// bytes (1 Gbit/s, 64 B: 1,488,095). Unlimited ports: infinity.
pub fn line_rate_pps(bps: Option<u64>, frame_len: usize) -> f64 {
    match bps {
        Some(b) => b as f64 / (((frame_len + WIRE_OVERHEAD) * 8) as f64),
        None => f64::INFINITY,
    }
}

/// Writes the frame with sequence number `seq` (per port, from 0) into
/// `frame`, which is exactly one frame long.
pub trait FrameSource {
    /// Fills `frame` with packet `seq`.
    fn fill(&mut self, seq: u64, frame: &mut [u8]);
}

impl<F: FnMut(u64, &mut [u8])> FrameSource for F {
    #[inline]
    fn fill(&mut self, seq: u64, frame: &mut [u8]) {
        self(seq, frame)
    }
}

/// Frames built once, before the trial, and copied into the ring as they
/// arrive (packet `seq` is frame `seq % count`): arrival costs one copy,
/// however expensive building a frame is.
#[derive(Debug, Clone)]
pub struct Pool {
    bytes: Vec<u8>,
    frame_len: usize,
}

impl Pool {
    /// `count` frames of `frame_len` bytes, frame `k` written by
    /// `build(k, frame)`.
    pub fn build(count: usize, frame_len: usize, mut build: impl FnMut(u64, &mut [u8])) -> Pool {
        let count = count.max(1);
        let mut bytes = vec![0u8; count * frame_len];
        for (k, frame) in bytes.chunks_exact_mut(frame_len.max(1)).enumerate() {
            build(k as u64, frame);
        }
        Pool { bytes, frame_len }
    }

    /// Number of distinct frames.
    pub fn len(&self) -> usize {
        self.bytes.len().checked_div(self.frame_len).unwrap_or(0)
    }

    /// Whether the pool holds no frame bytes (frames of length 0).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

impl FrameSource for Pool {
    #[inline]
    fn fill(&mut self, seq: u64, frame: &mut [u8]) {
        let n = self.len() as u64;
        if n == 0 {
            return;
        }
        let at = (seq % n) as usize * self.frame_len;
        frame.copy_from_slice(&self.bytes[at..at + self.frame_len]);
    }
}

/// How fast packets arrive on a receive port.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Offered {
    /// Packets per second, open loop.
    Rate(f64),
    /// As fast as the worker takes them: the ring is refilled to full at
    /// every poll and nothing counts as dropped (measures capacity).
    FlatOut,
}

/// What happened on a receive port, by the port the packets arrived on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RxCounters {
    /// Packets that arrived on the wire.
    pub generated: u64,
    /// Packets that found the ring full (RX overrun).
    pub rx_dropped: u64,
    /// Packets put in the ring (`generated - rx_dropped`).
    pub received: u64,
    /// Received packets forwarded to a transmit ring.
    pub forwarded: u64,
    /// Received packets that found their transmit ring full.
    pub tx_dropped: u64,
    /// Received packets the forwarder had no (valid) output port for.
    pub unrouted: u64,
}

impl RxCounters {
    /// Adds `o` to these counters.
    pub fn add(&mut self, o: &RxCounters) {
        self.generated += o.generated;
        self.rx_dropped += o.rx_dropped;
        self.received += o.received;
        self.forwarded += o.forwarded;
        self.tx_dropped += o.tx_dropped;
        self.unrouted += o.unrouted;
    }

    /// Every packet not forwarded, for any reason.
    pub fn lost(&self) -> u64 {
        self.rx_dropped + self.tx_dropped + self.unrouted
    }

    /// Packets lost for want of capacity: RX overruns and full transmit
    /// rings. Unrouted packets are not among them: a router that drops a
    /// packet with no route (a prefix withdrawn a moment ago, a TTL run
    /// out) did its job, at any rate. This is the RFC 2544 loss.
    pub fn overrun(&self) -> u64 {
        self.rx_dropped + self.tx_dropped
    }

    /// Whether every packet is accounted for: generated = received +
    /// RX drops, and received = forwarded + TX drops + unrouted (packets
    /// still in the ring count as received only).
    pub fn balanced(&self, still_in_ring: u64) -> bool {
        self.generated == self.received + self.rx_dropped
            && self.received == self.forwarded + self.tx_dropped + self.unrouted + still_in_ring
    }
}

/// A receive port: a bounded ring of `ring` frames of `frame_len` bytes,
/// filled from `S` at the offered rate. Owned by one worker.
pub struct RxPort<S> {
    id: u16,
    slots: Vec<u8>,
    ring: usize,
    frame_len: usize,
    /// Frames taken out and put in since the start.
    head: u64,
    tail: u64,
    /// Byte offsets of the next frame out and the next slot in.
    head_at: usize,
    tail_at: usize,
    offered: Offered,
    duration_ns: u64,
    source: S,
    counters: RxCounters,
}

impl<S> RxPort<S> {
    /// The port's number.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// The counters so far.
    pub fn counters(&self) -> RxCounters {
        self.counters
    }
}

impl<S: FrameSource> RxPort<S> {
    /// Port `id` with a ring of `ring` frames (at least 1), receiving for
    /// `duration_ns` at `offered`.
    pub fn new(
        id: u16,
        ring: usize,
        frame_len: usize,
        offered: Offered,
        duration_ns: u64,
        source: S,
    ) -> RxPort<S> {
        let ring = ring.max(1);
        RxPort {
            id,
            slots: vec![0u8; ring * frame_len],
            ring,
            frame_len,
            head: 0,
            tail: 0,
            head_at: 0,
            tail_at: 0,
            offered,
            duration_ns,
            source,
            counters: RxCounters::default(),
        }
    }

    /// Packets arrived by `t_ns` (clamped to the trial), open loop.
    pub fn arrived_by(&self, t_ns: u64) -> u64 {
        match self.offered {
            Offered::Rate(r) => (t_ns.min(self.duration_ns) as f64 * r / 1e9) as u64,
            Offered::FlatOut => 0,
        }
    }

    /// Takes in what arrived up to `now_ns`: as many as fit go in the
    /// ring, the rest are dropped. Returns how many went in.
    pub fn poll(&mut self, now_ns: u64) -> u64 {
        let (new, seq0) = match self.offered {
            Offered::Rate(_) => {
                let total = self.arrived_by(now_ns);
                // Saturating: a clock that read lower than at the last
                // poll (it must not, but) means no new arrivals.
                (
                    total.saturating_sub(self.counters.generated),
                    self.counters.generated,
                )
            }
            Offered::FlatOut if now_ns < self.duration_ns => {
                let free = self.ring as u64 - self.len();
                (free, self.counters.generated)
            }
            Offered::FlatOut => (0, self.counters.generated),
        };
        let fit = new.min(self.ring as u64 - self.len());
        for k in 0..fit {
            let at = self.tail_at;
            self.source
                .fill(seq0 + k, &mut self.slots[at..at + self.frame_len]);
            self.tail += 1;
            self.tail_at = self.next(at);
        }
        self.counters.generated += new;
        self.counters.received += fit;
        self.counters.rx_dropped += new - fit;
        fit
    }

    /// The oldest frame in the ring, removed from it; the slot stays
    /// valid (and writable) until the next poll.
    #[inline]
    pub fn recv(&mut self) -> Option<&mut [u8]> {
        if self.head == self.tail {
            return None;
        }
        let at = self.head_at;
        self.head += 1;
        self.head_at = self.next(at);
        Some(&mut self.slots[at..at + self.frame_len])
    }

    /// Frames in the ring.
    pub fn len(&self) -> u64 {
        self.tail - self.head
    }

    /// Whether the ring is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// True once the trial is over at `now_ns`, every arrival was
    /// taken in and the ring is empty.
    pub fn finished(&self, now_ns: u64) -> bool {
        let all_in = match self.offered {
            Offered::Rate(_) => self.counters.generated == self.arrived_by(self.duration_ns),
            Offered::FlatOut => true,
        };
        now_ns >= self.duration_ns && self.is_empty() && all_in
    }

    /// Counts a received frame's fate (see [`RxCounters`]).
    #[inline]
    pub fn count(&mut self, fate: Fate) {
        match fate {
            Fate::Forwarded => self.counters.forwarded += 1,
            Fate::TxDropped => self.counters.tx_dropped += 1,
            Fate::Unrouted => self.counters.unrouted += 1,
        }
    }

    /// The slot after the one at byte offset `at` (no division: this is
    /// on every frame's path).
    #[inline]
    fn next(&self, at: usize) -> usize {
        let n = at + self.frame_len;
        if n >= self.slots.len() {
            0
        } else {
            n
        }
    }
}

/// What became of a received frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Accepted by its transmit ring.
    Forwarded,
    /// Its transmit ring was full.
    TxDropped,
    /// No valid output port.
    Unrouted,
}

/// What left by a transmit port (summed over the workers feeding it).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct TxCounters {
    /// Frames accepted by the ring (they all leave).
    pub forwarded: u64,
    /// Their bytes (frames only, without wire overhead).
    pub bytes: u64,
    /// Frames that found the ring full.
    pub tx_dropped: u64,
}

impl TxCounters {
    /// Adds `o` to these counters.
    pub fn add(&mut self, o: &TxCounters) {
        self.forwarded += o.forwarded;
        self.bytes += o.bytes;
        self.tx_dropped += o.tx_dropped;
    }
}

/// A transmit port: a ring of `ring` frames draining at the line rate.
/// Shared by the workers (`&self` methods); counters are kept by each
/// worker and summed after the trial.
#[derive(Debug)]
pub struct TxPort {
    id: u16,
    ring: u64,
    /// Picoseconds one frame occupies the wire; `None`: unlimited.
    frame_ps: Option<u64>,
    /// When the wire finishes the last accepted frame (ps since start).
    busy_until_ps: AtomicU64,
}

impl TxPort {
    /// Port `id`, ring of `ring` frames (at least 1), sending frames of
    /// `frame_len` bytes at `line_rate` bits/s (`None`: unlimited).
    pub fn new(id: u16, ring: usize, line_rate: Option<u64>, frame_len: usize) -> TxPort {
        let frame_ps = line_rate.map(|bps| {
            let bits = ((frame_len + WIRE_OVERHEAD) * 8) as u128;
            ((bits * 1_000_000_000_000 / u128::from(bps.max(1))) as u64).max(1)
        });
        TxPort {
            id,
            ring: ring.max(1) as u64,
            frame_ps,
            busy_until_ps: AtomicU64::new(0),
        }
    }

    /// The port's number.
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Offers one frame at `now_ns`: true if the ring takes it (it will
    /// leave), false if the ring is full (a TX drop).
    #[inline]
    pub fn offer(&self, now_ns: u64) -> bool {
        let Some(frame_ps) = self.frame_ps else {
            return true;
        };
        let now_ps = now_ns.saturating_mul(1000);
        // Frames in the ring: ceil(backlog / frame_ps); room while that
        // is below `ring`, i.e. backlog <= (ring - 1) * frame_ps.
        let limit = (self.ring - 1).saturating_mul(frame_ps);
        let mut cur = self.busy_until_ps.load(Ordering::Relaxed);
        loop {
            if cur.saturating_sub(now_ps) > limit {
                return false;
            }
            let next = cur.max(now_ps) + frame_ps;
            match self.busy_until_ps.compare_exchange_weak(
                cur,
                next,
                Ordering::Relaxed,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(seen) => cur = seen,
            }
        }
    }

    /// Frames in the ring at `now_ns` (not yet fully on the wire).
    pub fn backlog(&self, now_ns: u64) -> u64 {
        match self.frame_ps {
            None => 0,
            Some(f) => {
                let b = self
                    .busy_until_ps
                    .load(Ordering::Relaxed)
                    .saturating_sub(now_ns.saturating_mul(1000));
                b.div_ceil(f)
            }
        }
    }
}

/// Where forwarded frames go: one per worker, called for every frame a
/// transmit ring accepts, with the output port. Tests use it to check
/// every frame; runs use [`Discard`].
pub trait Sink {
    /// Frame `frame` leaves by port `port`.
    fn deliver(&mut self, port: u16, frame: &[u8]);
}

impl<F: FnMut(u16, &[u8])> Sink for F {
    #[inline]
    fn deliver(&mut self, port: u16, frame: &[u8]) {
        self(port, frame)
    }
}

/// A sink that looks at nothing (the wire takes the frame).
#[derive(Debug, Clone, Copy, Default)]
pub struct Discard;

impl Sink for Discard {
    #[inline(always)]
    fn deliver(&mut self, _port: u16, _frame: &[u8]) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(seq: u64, f: &mut [u8]) {
        f[..8].copy_from_slice(&seq.to_le_bytes());
    }

    fn seq_of(f: &[u8]) -> u64 {
        u64::from_le_bytes(f[..8].try_into().unwrap())
    }

    #[test]
    fn parses_line_rates() {
        assert_eq!(parse_line_rate("none"), Ok(None));
        assert_eq!(parse_line_rate("1g"), Ok(Some(1_000_000_000)));
        assert_eq!(parse_line_rate("10G"), Ok(Some(10_000_000_000)));
        assert_eq!(parse_line_rate("100m"), Ok(Some(100_000_000)));
        assert_eq!(parse_line_rate("2.5g"), Ok(Some(2_500_000_000)));
        assert_eq!(parse_line_rate("64k"), Ok(Some(64_000)));
        assert_eq!(parse_line_rate("9600"), Ok(Some(9600)));
        for bad in ["", "g", "fast", "1t"] {
            let e = parse_line_rate(bad).unwrap_err();
            assert_eq!(e, LineRateError::Syntax(bad.into()));
            assert_eq!(
                e.to_string(),
                format!("line rate {bad:?}: expected none or e.g. 100m, 1g, 10g")
            );
        }
        for bad in ["-1g", "0", "nan", "inf", "1000001g"] {
            assert_eq!(
                parse_line_rate(bad),
                Err(LineRateError::Range(bad.into())),
                "{bad}"
            );
        }
        assert_eq!(
            parse_line_rate("0").unwrap_err().to_string(),
            "line rate \"0\": must be between 1 bit/s and 1000 Tbit/s"
        );
    }

    #[test]
    fn line_rate_counts_preamble_and_gap() {
        let pps = line_rate_pps(Some(1_000_000_000), 64);
        assert_eq!(pps.floor(), 1_488_095.0);
        assert_eq!(line_rate_pps(Some(1_000_000_000), 1518).floor(), 81_274.0);
        assert!(line_rate_pps(None, 64).is_infinite());
    }

    #[test]
    fn arrivals_follow_the_clock_and_stop_at_the_end() {
        // 1 Mpps for 1 ms: one packet per microsecond, 1000 in all.
        let mut rx = RxPort::new(0, 4096, 64, Offered::Rate(1e6), 1_000_000, stamp);
        assert_eq!(rx.poll(0), 0);
        assert_eq!(rx.poll(999), 0);
        assert_eq!(rx.poll(1000), 1);
        assert_eq!(rx.poll(10_500), 9);
        assert_eq!(rx.poll(5_000_000), 990);
        assert_eq!(rx.counters().generated, 1000);
        let seqs: Vec<u64> = std::iter::from_fn(|| rx.recv().map(|f| seq_of(f))).collect();
        assert_eq!(seqs, (0..1000).collect::<Vec<_>>());
        assert!(rx.finished(5_000_000));
    }

    #[test]
    fn a_full_ring_drops_exactly_the_overrun() {
        let mut rx = RxPort::new(3, 8, 16, Offered::Rate(1e6), 1_000_000_000, stamp);
        assert_eq!(rx.poll(20_000), 8); // 20 arrived, 8 fit
        let c = rx.counters();
        assert_eq!((c.generated, c.received, c.rx_dropped), (20, 8, 12));
        // Take 3 out: 3 slots free at the next poll.
        for want in 0..3 {
            assert_eq!(seq_of(rx.recv().unwrap()), want);
        }
        assert_eq!(rx.poll(25_000), 3);
        let c = rx.counters();
        assert_eq!((c.generated, c.received, c.rx_dropped), (25, 11, 14));
        // The ones that fit are the first arrivals after the free slots.
        let seqs: Vec<u64> = std::iter::from_fn(|| rx.recv().map(|f| seq_of(f))).collect();
        assert_eq!(seqs, vec![3, 4, 5, 6, 7, 20, 21, 22]);
        // Their fates make the books balance.
        for fate in [Fate::Forwarded, Fate::TxDropped, Fate::Unrouted] {
            rx.count(fate);
        }
        assert!(!rx.counters().balanced(0));
        for _ in 3..11 {
            rx.count(Fate::Forwarded);
        }
        assert!(rx.counters().balanced(0));
        assert_eq!(rx.counters().lost(), 14 + 1 + 1);
    }

    #[test]
    fn flat_out_refills_and_drops_nothing() {
        let mut rx = RxPort::new(0, 4, 8, Offered::FlatOut, 1000, stamp);
        assert_eq!(rx.poll(0), 4);
        rx.recv();
        assert_eq!(rx.poll(10), 1);
        assert_eq!(rx.poll(1000), 0, "no arrivals after the end");
        assert_eq!(rx.counters().rx_dropped, 0);
        assert_eq!(rx.counters().generated, 5);
    }

    #[test]
    fn a_pool_copies_prebuilt_frames() {
        let mut built = 0;
        let mut pool = Pool::build(3, 4, |k, f| {
            built += 1;
            f.fill(k as u8 + 1);
        });
        assert_eq!((built, pool.len()), (3, 3));
        let mut f = [0u8; 4];
        pool.fill(4, &mut f);
        assert_eq!(f, [2; 4]);
    }

    #[test]
    fn tx_drains_at_the_line_rate() {
        // 1 Gbit/s, 105-byte frames: (105 + 20) * 8 = 1000 bits = 1 us.
        let tx = TxPort::new(1, 4, Some(1_000_000_000), 105);
        let accepted = (0..10).filter(|_| tx.offer(0)).count();
        assert_eq!(accepted, 4, "a ring of 4 takes 4 at once");
        assert_eq!(tx.backlog(0), 4);
        assert_eq!(tx.backlog(1000), 3);
        assert!(tx.offer(1000), "one left after 1 us");
        assert!(!tx.offer(1000));
        assert_eq!(tx.backlog(5000), 0);
        // An idle wire does not bank time: 4 again, no more.
        assert_eq!((0..10).filter(|_| tx.offer(100_000)).count(), 4);
    }

    #[test]
    fn tx_at_the_line_rate_never_drops() {
        let tx = TxPort::new(0, 1, Some(1_000_000_000), 105);
        assert!((0..1000).all(|i| tx.offer(i * 1000)));
        assert!(TxPort::new(0, 1, None, 64).offer(0));
    }

    #[test]
    fn closures_are_sinks() {
        let mut seen = Vec::new();
        let mut sink = |p: u16, f: &[u8]| seen.push((p, f.len()));
        sink.deliver(2, &[0; 64]);
        Discard.deliver(0, &[]);
        assert_eq!(seen, vec![(2, 64)]);
    }
}
