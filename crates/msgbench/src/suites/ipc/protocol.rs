//! The wire protocol between the `msgbench ipc` client and its server, and
//! the payload checks: every byte of every copying-API reply is verified;
//! in place, every reply's stamps and, now and then, its whole body (see
//! the client's `Echo`).
//!
//! - [`CMD_ECHO`]: the reply is the request with every byte XORed with
//!   [`ECHO_MASK`] (a reply that merely repeats the request fails). This
//!   is the copying API's exchange (`--copy` rows).
//! - [`CMD_ECHO`] in place (the default rows): the request carries the
//!   sequence number in its two stamps ([`stamp_ends`]: its first and last
//!   [`STAMP`] bytes); the reply has the same length and is the request
//!   with only the stamps XORed with [`ECHO_MASK`] ([`echo_ends`]), the body
//!   between them untouched, so neither side's work grows with the size.
//! - [`CMD_SUM`]: the reply is the 4-byte [`checksum`] of the request.
//! - [`CMD_CPU`]: the reply is the server thread's CPU time (8 bytes, ns).
//! - [`CMD_STOP`]: empty reply, then the server returns.
//! - [`CMD_SUM`] sent one-way ([`msgpass::Connection::send_oneway`]): no
//!   reply; the server folds the request's checksum into its running
//!   check ([`ack_fold`]).
//! - [`CMD_ACK`]: the request is one more [`CMD_SUM`] message, folded in
//!   the same way; the reply is the running check over every message since
//!   the last ack (12 bytes: count u32, check u64), which is then reset.
//! - [`CMD_PING`]: at most [`PING_MAX`] bytes, answered like the copying
//!   echo (every byte XORed with [`ECHO_MASK`]); how an idle client proves
//!   its connection valid without counting among the measured echoes.
//!
//! A request is a fixed position-dependent pattern ([`body`]) whose first
//! bytes carry the sequence number ([`stamp`]), so a stale, reordered or
//! lost reply shows as a wrong sequence number. The checksum is linear in
//! the first word, so the client derives each expected checksum from the
//! body's in O(1) ([`SumBase`]) instead of summing every request twice.

use msgpass::{View, Window};

/// Reply with the request, every byte XORed with [`ECHO_MASK`].
pub const CMD_ECHO: u32 = 1;
/// Reply with the 4-byte [`checksum`] of the request.
pub const CMD_SUM: u32 = 2;
/// Reply with the server thread's CPU time in ns (u64, little-endian).
pub const CMD_CPU: u32 = 3;
/// Reply empty, then stop serving.
pub const CMD_STOP: u32 = 4;
/// Fold the request into the running check and reply with it (see
/// [`ack_fold`]), then reset it.
pub const CMD_ACK: u32 = 5;
/// Reply with the request, every byte XORed with [`ECHO_MASK`], outside
/// the counts of the measured exchanges (see [`PING_MAX`]).
pub const CMD_PING: u32 = 6;
/// Largest [`CMD_PING`] request.
pub const PING_MAX: usize = 64;
/// Length of a [`CMD_ACK`] reply: count (u32) and check (u64).
pub const ACK_LEN: usize = 12;

/// The running check over a window of messages, extended by one message's
/// [`checksum`]: order-sensitive, so a lost, duplicated, reordered or
/// corrupted message changes it.
#[inline(always)]
pub fn ack_fold(check: u64, sum: u32) -> u64 {
    (check ^ sum as u64)
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .rotate_left(23)
}

/// What the server XORs every echoed byte with.
pub const ECHO_MASK: u8 = 0xA5;

/// Independent accumulator lanes of the checksum (32 bytes per step).
const LANES: usize = 8;
const STEP: usize = 4 * LANES;

/// The request pattern of `size` bytes: byte i is the top byte of
/// i x 0x9E3779B1 (no short period, so a shifted payload is caught).
pub fn body(size: usize) -> Vec<u8> {
    (0..size)
        .map(|i| ((i as u32).wrapping_mul(0x9E37_79B1) >> 24) as u8)
        .collect()
}

/// Writes `seq` (little-endian) into the first `width` bytes of `buf`, or
/// as many as it has.
#[inline(always)]
pub fn stamp(buf: &mut [u8], seq: u64, width: usize) {
    let n = buf.len().min(width);
    buf[..n].copy_from_slice(&seq.to_le_bytes()[..n]);
}

/// The server's echo: `dst[i] = src[i] ^ ECHO_MASK`.
#[inline]
pub fn echo_transform(src: &[u8], dst: &mut [u8]) {
    for (d, s) in dst.iter_mut().zip(src) {
        *d = s ^ ECHO_MASK;
    }
}

/// Width of each stamp of an in-place echo message.
pub const STAMP: usize = 8;

/// Writes `seq` into both stamps of an in-place echo message: the low
/// `min(8, n)` bytes of `seq` (little-endian) at the start and at the end
/// of `buf` (`n` bytes), the end one last. Under 16 bytes the two overlap
/// and cover the whole message; in the overlap the end stamp is what
/// stays (so a message of 9 to 15 bytes holds the start stamp's first
/// bytes, then the whole end stamp).
#[inline(always)]
pub fn stamp_ends(buf: &mut [u8], seq: u64) {
    let n = buf.len();
    let w = n.min(STAMP);
    let b = seq.to_le_bytes();
    buf[..w].copy_from_slice(&b[..w]);
    buf[n - w..].copy_from_slice(&b[..w]);
}

/// The bytes the stamps of an `n`-byte message cover: the whole message
/// up to `2 * STAMP` bytes; beyond that, the first and last [`STAMP`].
#[inline(always)]
pub fn all_stamps(n: usize) -> bool {
    n <= 2 * STAMP
}

/// The server's in-place echo: XORs every stamped byte (once, even where
/// the stamps overlap) with [`ECHO_MASK`]; the body is left alone.
#[inline(always)]
pub fn echo_ends(buf: &mut [u8]) {
    let n = buf.len();
    if all_stamps(n) {
        for b in buf.iter_mut() {
            *b ^= ECHO_MASK;
        }
    } else {
        let (head, rest) = buf.split_at_mut(STAMP);
        for b in head.iter_mut().chain(rest[n - 2 * STAMP..].iter_mut()) {
            *b ^= ECHO_MASK;
        }
    }
}

/// The stamped bytes of an `n`-byte in-place echo message, gathered from
/// the memory the transport lends, where the message lies (never copied
/// whole for them): the whole message up to `2 * STAMP` bytes, else the
/// first [`STAMP`] then the last. The stamps lie in them as in the
/// message, so [`stamp_ends`], [`echo_ends`] and [`stamps_mismatch`]
/// work on them alike ([`Ends::index`] maps a position back).
#[derive(Debug, Clone, Copy)]
pub struct Ends {
    bytes: [u8; 2 * STAMP],
    /// The message's length.
    n: usize,
}

impl Ends {
    /// The (zeroed) stamped bytes of an `n`-byte message, to be stamped.
    #[inline(always)]
    pub fn new(n: usize) -> Ends {
        Ends {
            bytes: [0; 2 * STAMP],
            n,
        }
    }

    /// The stamped bytes of the `n`-byte message at the start of `v`.
    #[inline(always)]
    pub fn read(v: &View<'_>, n: usize) -> Ends {
        let mut e = Ends::new(n);
        if all_stamps(n) {
            v.read(0, &mut e.bytes[..n]);
        } else {
            v.read(0, &mut e.bytes[..STAMP]);
            v.read(n - STAMP, &mut e.bytes[STAMP..]);
        }
        e
    }

    /// Writes them back where they lie in the message at the start of `w`.
    #[inline(always)]
    pub fn write(&self, w: &mut Window<'_>) {
        let n = self.n;
        if all_stamps(n) {
            w.write(0, &self.bytes[..n]);
        } else {
            w.write(0, &self.bytes[..STAMP]);
            w.write(n - STAMP, &self.bytes[STAMP..]);
        }
    }

    /// The gathered bytes.
    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        &self.bytes[..self.n.min(2 * STAMP)]
    }

    /// The gathered bytes, to change.
    #[inline(always)]
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.bytes[..self.n.min(2 * STAMP)]
    }

    /// Where gathered byte `i` lies in the message.
    #[inline(always)]
    pub fn index(&self, i: usize) -> usize {
        if all_stamps(self.n) || i < STAMP {
            i
        } else {
            self.n - 2 * STAMP + i
        }
    }
}

/// The expected stamped bytes of an in-place echo reply to `seq` in an
/// `n`-byte message: up to 16 bytes the whole message; beyond, the start
/// stamp then the end stamp.
#[inline(always)]
fn expected_stamps(n: usize, seq: u64) -> [u8; 2 * STAMP] {
    let mut e = [0u8; 2 * STAMP];
    let k = n.min(2 * STAMP);
    stamp_ends(&mut e[..k], seq);
    echo_ends(&mut e[..k]);
    e
}

/// The first stamped byte of an in-place echo `reply` (of the request
/// length) that is not right for `seq`, or `None`.
#[inline(always)]
pub fn stamps_mismatch(reply: &[u8], seq: u64) -> Option<usize> {
    let n = reply.len();
    let e = expected_stamps(n, seq);
    if all_stamps(n) {
        return reply.iter().zip(&e[..n]).position(|(r, x)| r != x);
    }
    if let Some(i) = reply[..STAMP]
        .iter()
        .zip(&e[..STAMP])
        .position(|(r, x)| r != x)
    {
        return Some(i);
    }
    reply[n - STAMP..]
        .iter()
        .zip(&e[STAMP..])
        .position(|(r, x)| r != x)
        .map(|i| n - STAMP + i)
}

/// The expected byte `i` of an in-place echo reply to `seq` whose body is
/// `body` (for error messages).
pub fn in_place_expected(body: &[u8], seq: u64, i: usize) -> u8 {
    let n = body.len();
    let e = expected_stamps(n, seq);
    if all_stamps(n) || i < STAMP {
        e[i]
    } else if i >= n - STAMP {
        e[STAMP + i - (n - STAMP)]
    } else {
        body[i]
    }
}

/// The sequence number both stamps of an in-place echo reply carry (the
/// low `min(8, n)` bytes of it), when they agree: a reply right but for
/// its sequence number is lost, stale or reordered.
pub fn stamps_seq(reply: &[u8]) -> Option<u64> {
    let n = reply.len();
    let w = n.min(STAMP);
    if w == 0 {
        return None;
    }
    let mut buf = reply.to_vec();
    echo_ends(&mut buf);
    let mut a = [0u8; 8];
    a[..w].copy_from_slice(&buf[..w]);
    let mut b = [0u8; 8];
    b[..w].copy_from_slice(&buf[n - w..]);
    // Under 16 bytes the start stamp is partly overwritten: it agrees
    // with the end one only where it is still whole.
    let kept = if n >= 2 * STAMP { w } else { n - w };
    (a[..kept] == b[..kept]).then(|| u64::from_le_bytes(b))
}

/// The first body byte (between the stamps) of an in-place echo `reply`
/// that differs from `body`, or `None` (also when there is no body).
#[inline]
pub fn body_mismatch(body: &[u8], reply: &[u8]) -> Option<usize> {
    let n = reply.len();
    if all_stamps(n) {
        return None;
    }
    let (b, r) = (&body[STAMP..n - STAMP], &reply[STAMP..n - STAMP]);
    if b == r {
        return None;
    }
    b.iter().zip(r).position(|(x, y)| x != y).map(|i| i + STAMP)
}

/// The first byte of `reply` that is not the echo of `req` (same length
/// assumed), or `None` when every byte is right.
#[inline]
pub fn echo_mismatch(req: &[u8], reply: &[u8]) -> Option<usize> {
    // A branch-free pass (vectorised); the slow search only on failure.
    let bad = req
        .iter()
        .zip(reply)
        .fold(0u8, |acc, (q, r)| acc | (q ^ r ^ ECHO_MASK));
    if bad == 0 {
        return None;
    }
    req.iter().zip(reply).position(|(q, r)| q ^ ECHO_MASK != *r)
}

/// Per-lane Fletcher sums over little-endian u32 words (the tail padded
/// with zeros): lane l takes words l, l + 8, ...; `s1 += w; s2 += s1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Sums {
    s1: [u32; LANES],
    s2: [u32; LANES],
}

impl Sums {
    fn of(data: &[u8]) -> Sums {
        let mut s = Sums {
            s1: [0; LANES],
            s2: [0; LANES],
        };
        let mut chunks = data.chunks_exact(STEP);
        for c in &mut chunks {
            s.add(c);
        }
        let rem = chunks.remainder();
        if !rem.is_empty() {
            let mut pad = [0u8; STEP];
            pad[..rem.len()].copy_from_slice(rem);
            s.add(&pad);
        }
        s
    }

    #[inline(always)]
    fn add(&mut self, chunk: &[u8]) {
        for l in 0..LANES {
            let w = u32::from_le_bytes([
                chunk[4 * l],
                chunk[4 * l + 1],
                chunk[4 * l + 2],
                chunk[4 * l + 3],
            ]);
            self.s1[l] = self.s1[l].wrapping_add(w);
            self.s2[l] = self.s2[l].wrapping_add(self.s1[l]);
        }
    }

    fn fold(&self) -> u32 {
        let mut h: u32 = 0x811C_9DC5;
        for l in 0..LANES {
            h = h.rotate_left(5) ^ self.s1[l];
            h = h.wrapping_mul(0x0100_0193);
            h = h.rotate_left(5) ^ self.s2[l];
            h = h.wrapping_mul(0x0100_0193);
        }
        h
    }
}

/// The 4-byte checksum the server returns for [`CMD_SUM`].
pub fn checksum(data: &[u8]) -> u32 {
    Sums::of(data).fold()
}

/// Bytes of the sequence number in a [`CMD_SUM`] request.
pub const SUM_SEQ_BYTES: usize = 4;

/// The checksum of a [`CMD_SUM`] request of a given body, for any sequence
/// number: the first word enters lane 0 once in `s1` and once per 32-byte
/// step in `s2`, so its contribution is added to the body's sums.
#[derive(Debug, Clone)]
pub struct SumBase {
    base: Sums,
    size: usize,
    steps: u32,
}

impl SumBase {
    /// Prepares for requests made of `body` with [`stamp`]ed sequence
    /// numbers ([`SUM_SEQ_BYTES`] wide).
    pub fn new(body: &[u8]) -> SumBase {
        let mut zeroed = body.to_vec();
        stamp(&mut zeroed, 0, SUM_SEQ_BYTES);
        SumBase {
            base: Sums::of(&zeroed),
            size: body.len(),
            steps: body.len().div_ceil(STEP) as u32,
        }
    }

    /// The checksum of the request carrying `seq`.
    #[inline]
    pub fn expected(&self, seq: u64) -> u32 {
        let mut w = [0u8; 4];
        stamp(&mut w[..self.size.min(SUM_SEQ_BYTES)], seq, SUM_SEQ_BYTES);
        let w = u32::from_le_bytes(w);
        let mut s = self.base;
        s.s1[0] = s.s1[0].wrapping_add(w);
        s.s2[0] = s.s2[0].wrapping_add(w.wrapping_mul(self.steps));
        s.fold()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expected_checksum_matches_a_full_pass() {
        for size in [0, 1, 2, 3, 4, 5, 31, 32, 33, 64, 100, 4096, 65536] {
            let base = SumBase::new(&body(size));
            for seq in [0u64, 1, 2, 255, 256, 65_537, u32::MAX as u64, 1 << 40] {
                let mut req = body(size);
                stamp(&mut req, seq, SUM_SEQ_BYTES);
                assert_eq!(base.expected(seq), checksum(&req), "size {size}, seq {seq}");
            }
        }
    }

    #[test]
    fn checksum_sees_changed_and_moved_bytes() {
        let a = body(4096);
        let mut flipped = a.clone();
        flipped[1234] ^= 1;
        assert_ne!(checksum(&a), checksum(&flipped));
        let mut swapped = a.clone();
        swapped.swap(0, 32); // same lane, different step
        assert_ne!(checksum(&a), checksum(&swapped));
        let mut lanes = a.clone();
        lanes.swap(0, 4); // different lanes, same step
        assert_ne!(checksum(&a), checksum(&lanes));
        assert_ne!(checksum(&a[..4095]), checksum(&a));
    }

    #[test]
    fn echo_round_trip_and_mismatch() {
        let mut req = body(100);
        stamp(&mut req, 7, 8);
        assert_eq!(&req[..8], &7u64.to_le_bytes());
        let mut reply = vec![0u8; 100];
        echo_transform(&req, &mut reply);
        assert_eq!(echo_mismatch(&req, &reply), None);
        assert_eq!(echo_mismatch(&req, &req), Some(0), "a plain copy fails");
        reply[42] ^= 0x10;
        assert_eq!(echo_mismatch(&req, &reply), Some(42));
        // Short messages carry the low bytes of the sequence number.
        let mut one = body(1);
        stamp(&mut one, 0x1234, 8);
        assert_eq!(one, vec![0x34]);
        assert_eq!(echo_mismatch(&[], &[]), None);
    }

    #[test]
    fn in_place_stamps_round_trip_at_every_small_size() {
        for n in (0..=40).chain([4096, 65536]) {
            let body = body(n);
            for seq in [0u64, 1, 99, 0x0102_0304_0506_0708, u64::MAX] {
                let mut m = body.clone();
                stamp_ends(&mut m, seq);
                echo_ends(&mut m);
                assert_eq!(stamps_mismatch(&m, seq), None, "n {n} seq {seq}");
                assert_eq!(body_mismatch(&body, &m), None, "n {n}");
                for (i, &b) in m.iter().enumerate() {
                    assert_eq!(b, in_place_expected(&body, seq, i), "n {n} byte {i}");
                }
                if n > 0 {
                    let w = n.min(8);
                    let low = if w == 8 {
                        seq
                    } else {
                        seq & ((1 << (8 * w)) - 1)
                    };
                    assert_eq!(stamps_seq(&m), Some(low), "n {n} seq {seq}");
                    if seq != 99 {
                        assert!(stamps_mismatch(&m, 99).is_some(), "n {n} seq {seq}");
                    }
                }
                // The server's transform is its own inverse: the request again.
                echo_ends(&mut m);
                let mut req = body.clone();
                stamp_ends(&mut req, seq);
                assert_eq!(m, req);
            }
        }
    }

    #[test]
    fn in_place_checks_see_a_flipped_byte_where_it_is() {
        let body = body(4096);
        let mut m = body.clone();
        stamp_ends(&mut m, 7);
        echo_ends(&mut m);
        m[2048] ^= 1;
        assert_eq!(stamps_mismatch(&m, 7), None, "the stamps alone miss it");
        assert_eq!(body_mismatch(&body, &m), Some(2048));
        m[2048] ^= 1;
        m[4095] ^= 1;
        assert_eq!(stamps_mismatch(&m, 7), Some(4095));
        assert_eq!(stamps_seq(&m), None, "the two stamps disagree");
    }

    #[test]
    fn ack_fold_sees_order_and_loss() {
        let f = |sums: &[u32]| sums.iter().fold(0u64, |c, &s| ack_fold(c, s));
        assert_ne!(f(&[1, 2, 3]), f(&[2, 1, 3]));
        assert_ne!(f(&[1, 2, 3]), f(&[1, 3]));
        assert_ne!(f(&[1, 2, 3]), f(&[1, 2, 2, 3]));
        assert_ne!(f(&[1, 2, 3]), f(&[1, 2, 4]));
    }

    #[test]
    fn body_has_no_short_period() {
        let b = body(65536);
        for p in [1, 2, 4, 8, 16, 32, 64, 256, 4096] {
            assert!(b.iter().zip(&b[p..]).any(|(x, y)| x != y), "period {p}");
        }
    }
}
