//! Real frames in bytes: Ethernet II + IPv4 (20-byte header, checksum) +
//! UDP (8 bytes) + payload + FCS, what a router forwards.
//!
//! A frame's size counts the 4-byte FCS, as RFC 2544's sizes do
//! ([`RFC2544_SIZES`], 64 to 1518 bytes). [`write()`] fills in headers and
//! payload; [`seal`] writes the FCS (CRC-32, IEEE 802.3); [`build`] does
//! both. A router changes the TTL and so the FCS, which its NIC recomputes
//! on transmit: [`forward_in_place`] leaves the FCS alone (it is stale
//! after it; [`seal`] again where a frame's FCS must be right). AF_PACKET
//! sockets send and receive frames without the FCS: there the frame is
//! `&frame[..size - 4]`, and every function here accepts it.
//!
//! The UDP checksum is 0 ("none", allowed over IPv4 by RFC 768), so a
//! generator can rewrite addresses cheaply; the IPv4 header checksum is
//! real and is checked and updated as a router does (RFC 1812, RFC 1624).
//! The payload starts with a 64-bit sequence number ([`seq`]), so that a
//! checker can find lost or duplicated packets.

use thiserror::Error;

/// The RFC 2544 frame sizes for Ethernet, FCS included.
pub const RFC2544_SIZES: [usize; 7] = [64, 128, 256, 512, 1024, 1280, 1518];
/// Smallest Ethernet frame, FCS included.
pub const MIN_FRAME: usize = 64;
/// Largest untagged Ethernet frame, FCS included.
pub const MAX_FRAME: usize = 1518;
/// Ethernet II header: destination, source, EtherType.
pub const ETH_HEADER: usize = 14;
/// IPv4 header without options.
pub const IPV4_HEADER: usize = 20;
/// UDP header.
pub const UDP_HEADER: usize = 8;
/// Frame check sequence at the end of the frame.
pub const FCS: usize = 4;

/// EtherType of IPv4.
const ETHERTYPE_IPV4: u16 = 0x0800;
/// IP protocol number of UDP.
const PROTO_UDP: u8 = 17;
/// Offsets of IPv4 fields in the frame.
const IP: usize = ETH_HEADER;
const IP_TTL: usize = IP + 8;
const IP_CSUM: usize = IP + 10;
const IP_DST: usize = IP + 16;

/// Why a router drops a frame. Its name shadows the `Drop` trait where
/// imported: refer to it as `packet::Drop`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Drop {
    /// Shorter than its Ethernet and IPv4 headers say.
    #[error("frame truncated")]
    Truncated,
    /// Not an IPv4 EtherType.
    #[error("not IPv4")]
    NotIpv4,
    /// IPv4 version, header length or total length invalid.
    #[error("bad IPv4 header")]
    BadHeader,
    /// IPv4 header checksum wrong.
    #[error("bad IPv4 header checksum")]
    BadChecksum,
    /// TTL 0 or 1: it may not be forwarded (RFC 1812, 5.3.1).
    #[error("TTL expired")]
    TtlExpired,
}

/// A frame size outside 64..=1518.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
#[error("frame size {0} outside {MIN_FRAME}..={MAX_FRAME}")]
pub struct SizeError(pub usize);

/// What goes into a frame's headers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Spec {
    /// Ethernet destination.
    pub dst_mac: [u8; 6],
    /// Ethernet source.
    pub src_mac: [u8; 6],
    /// IPv4 source, host order.
    pub src: u32,
    /// IPv4 destination, host order.
    pub dst: u32,
    /// UDP source port.
    pub src_port: u16,
    /// UDP destination port.
    pub dst_port: u16,
    /// IPv4 time to live.
    pub ttl: u8,
}

impl Default for Spec {
    /// Locally administered MACs, addresses of the RFC 2544 benchmarking
    /// range 198.18.0.0/15, UDP to the discard port, TTL 64.
    fn default() -> Self {
        Spec {
            dst_mac: [0x02, 0, 0, 0, 0, 0x02],
            src_mac: [0x02, 0, 0, 0, 0, 0x01],
            src: u32::from_be_bytes([198, 18, 0, 1]),
            dst: u32::from_be_bytes([198, 19, 0, 1]),
            src_port: 49152,
            dst_port: 9,
            ttl: 64,
        }
    }
}

/// One's complement sum of `data` as big-endian 16-bit words, added to
/// `sum`, not folded.
fn sum16(data: &[u8], sum: u32) -> u32 {
    let mut chunks = data.chunks_exact(2);
    let mut s = chunks
        .by_ref()
        .fold(sum, |s, w| s + u32::from(u16::from_be_bytes([w[0], w[1]])));
    if let [last] = chunks.remainder() {
        s += u32::from(*last) << 8;
    }
    s
}

/// Folds the carries of a one's complement sum into 16 bits.
fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The Internet checksum (RFC 1071) of `header`, computed from scratch
/// with its checksum field taken as zero.
pub fn ipv4_checksum(header: &[u8]) -> u16 {
    let sum = sum16(header, 0) - u32::from(u16::from_be_bytes([header[10], header[11]]));
    !fold(sum)
}

/// RFC 1624, equation 3: the checksum `hc` after a 16-bit word of the
/// header changed from `old` to `new`: HC' = ~(~HC + ~m + m').
pub fn checksum_update(hc: u16, old: u16, new: u16) -> u16 {
    !fold(u32::from(!hc) + u32::from(!old) + u32::from(new))
}

/// CRC-32 (IEEE 802.3, reflected, polynomial 0xEDB88320) lookup table.
const CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

/// The CRC-32 of `data`, as Ethernet's FCS computes it.
pub fn crc32(data: &[u8]) -> u32 {
    !data.iter().fold(!0u32, |c, &b| {
        CRC_TABLE[((c ^ u32::from(b)) & 0xff) as usize] ^ (c >> 8)
    })
}

/// Writes headers and payload of a frame of `frame.len()` bytes (FCS
/// included, left as it is) with sequence number `seq`.
pub fn write(frame: &mut [u8], spec: &Spec, seq: u64) -> Result<(), SizeError> {
    let size = frame.len();
    if !(MIN_FRAME..=MAX_FRAME).contains(&size) {
        return Err(SizeError(size));
    }
    let ip_len = size - ETH_HEADER - FCS;
    let udp_len = ip_len - IPV4_HEADER;
    frame[0..6].copy_from_slice(&spec.dst_mac);
    frame[6..12].copy_from_slice(&spec.src_mac);
    frame[12..14].copy_from_slice(&ETHERTYPE_IPV4.to_be_bytes());
    let ip = &mut frame[IP..IP + IPV4_HEADER];
    ip[0] = 0x45; // version 4, 5 words
    ip[1] = 0; // DSCP/ECN
    ip[2..4].copy_from_slice(&(ip_len as u16).to_be_bytes());
    ip[4..6].copy_from_slice(&(seq as u16).to_be_bytes()); // identification
    ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes()); // don't fragment
    ip[8] = spec.ttl;
    ip[9] = PROTO_UDP;
    ip[10..12].fill(0);
    ip[12..16].copy_from_slice(&spec.src.to_be_bytes());
    ip[16..20].copy_from_slice(&spec.dst.to_be_bytes());
    let csum = ipv4_checksum(ip);
    ip[10..12].copy_from_slice(&csum.to_be_bytes());
    let udp = &mut frame[IP + IPV4_HEADER..size - FCS];
    udp[0..2].copy_from_slice(&spec.src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&spec.dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&(udp_len as u16).to_be_bytes());
    udp[6..8].fill(0); // no UDP checksum
    udp[8..16].copy_from_slice(&seq.to_be_bytes());
    for (i, b) in udp[16..].iter_mut().enumerate() {
        *b = i as u8;
    }
    Ok(())
}

/// Writes the FCS of a full frame (its last 4 bytes), little-endian as it
/// goes on the wire.
///
/// # Panics
///
/// When the frame is shorter than 4 bytes.
pub fn seal(frame: &mut [u8]) {
    let body = frame.len() - FCS;
    let crc = crc32(&frame[..body]);
    frame[body..].copy_from_slice(&crc.to_le_bytes());
}

/// Whether a full frame's FCS is right.
pub fn fcs_ok(frame: &[u8]) -> bool {
    frame.len() >= FCS && {
        let body = frame.len() - FCS;
        frame[body..] == crc32(&frame[..body]).to_le_bytes()
    }
}

/// A complete frame of `size` bytes, FCS written.
pub fn build(size: usize, spec: &Spec, seq: u64) -> Result<Vec<u8>, SizeError> {
    let mut frame = vec![0; size];
    write(&mut frame, spec, seq)?;
    seal(&mut frame);
    Ok(frame)
}

/// Checks the Ethernet and IPv4 headers as a router does before
/// forwarding; returns the IPv4 header length in bytes.
fn check(frame: &[u8]) -> Result<usize, Drop> {
    if frame.len() < IP + IPV4_HEADER {
        return Err(Drop::Truncated);
    }
    if u16::from_be_bytes([frame[12], frame[13]]) != ETHERTYPE_IPV4 {
        return Err(Drop::NotIpv4);
    }
    let ihl = usize::from(frame[IP] & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([frame[IP + 2], frame[IP + 3]]));
    if frame[IP] >> 4 != 4 || ihl < IPV4_HEADER || total < ihl {
        return Err(Drop::BadHeader);
    }
    if IP + total > frame.len() {
        return Err(Drop::Truncated);
    }
    if fold(sum16(&frame[IP..IP + ihl], 0)) != 0xffff {
        return Err(Drop::BadChecksum);
    }
    Ok(ihl)
}

/// The IPv4 destination (host order) of a valid frame; `None` when the
/// frame fails the checks of [`forward_in_place`] other than the TTL's.
pub fn dst(frame: &[u8]) -> Option<u32> {
    check(frame).ok()?;
    let d = &frame[IP_DST..IP_DST + 4];
    Some(u32::from_be_bytes([d[0], d[1], d[2], d[3]]))
}

/// The sequence number [`write()`] put in a valid UDP frame.
pub fn seq(frame: &[u8]) -> Option<u64> {
    let ihl = check(frame).ok()?;
    let at = IP + ihl + UDP_HEADER;
    let s = frame.get(at..at + 8)?;
    Some(u64::from_be_bytes(s.try_into().ok()?))
}

/// The IPv4 TTL of a frame (no checks beyond its length).
pub fn ttl(frame: &[u8]) -> Option<u8> {
    frame.get(IP_TTL).copied()
}

/// What a router does to a frame it forwards: checks the headers, refuses
/// TTL 0 or 1, decrements the TTL and updates the header checksum
/// incrementally (RFC 1624). The frame is unchanged when it is refused.
/// The FCS is not updated (the NIC does it; see the module doc).
pub fn forward_in_place(frame: &mut [u8]) -> Result<(), Drop> {
    check(frame)?;
    let ttl = frame[IP_TTL];
    if ttl <= 1 {
        return Err(Drop::TtlExpired);
    }
    let old = u16::from_be_bytes([ttl, frame[IP_TTL + 1]]);
    let new = old - 0x100;
    frame[IP_TTL] = ttl - 1;
    let hc = u16::from_be_bytes([frame[IP_CSUM], frame[IP_CSUM + 1]]);
    let hc = checksum_update(hc, old, new);
    frame[IP_CSUM..IP_CSUM + 2].copy_from_slice(&hc.to_be_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn header(frame: &[u8]) -> &[u8] {
        &frame[IP..IP + IPV4_HEADER]
    }

    #[test]
    fn frames_have_the_rfc2544_sizes_and_valid_headers() {
        let spec = Spec::default();
        for size in RFC2544_SIZES {
            let f = build(size, &spec, 42).unwrap();
            assert_eq!(f.len(), size);
            assert_eq!(dst(&f), Some(spec.dst));
            assert_eq!(seq(&f), Some(42));
            assert!(fcs_ok(&f));
            assert_eq!(usize::from(u16::from_be_bytes([f[16], f[17]])), size - 18);
            assert_eq!(usize::from(u16::from_be_bytes([f[38], f[39]])), size - 38);
            // Without the FCS, as AF_PACKET carries it, it parses the same.
            assert_eq!(dst(&f[..size - FCS]), Some(spec.dst));
        }
        assert_eq!(build(63, &spec, 0), Err(SizeError(63)));
        assert_eq!(build(1519, &spec, 0), Err(SizeError(1519)));
    }

    #[test]
    fn known_checksums() {
        // RFC 1071-style example header (Wikipedia's IPv4 checksum example).
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(ipv4_checksum(&h), 0xb861);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        // A sealed frame's CRC over everything has the 802.3 residue.
        let f = build(64, &Spec::default(), 1).unwrap();
        assert_eq!(crc32(&f), 0x2144_DF1C);
    }

    #[test]
    fn the_incremental_checksum_equals_a_recomputed_one_for_every_ttl() {
        for size in [64, 1518] {
            for seq in [0, 1, 0xfffe, 0xffff, 12345] {
                let mut f = build(size, &Spec::default(), seq).unwrap();
                f[IP_TTL] = 255;
                let c = ipv4_checksum(header(&f));
                f[IP_CSUM..IP_CSUM + 2].copy_from_slice(&c.to_be_bytes());
                for t in (2..=255u8).rev() {
                    assert_eq!(ttl(&f), Some(t));
                    forward_in_place(&mut f).unwrap();
                    let stored = u16::from_be_bytes([f[IP_CSUM], f[IP_CSUM + 1]]);
                    assert_eq!(stored, ipv4_checksum(header(&f)), "TTL {t} -> {}", t - 1);
                }
                assert_eq!(forward_in_place(&mut f), Err(Drop::TtlExpired));
            }
        }
    }

    #[test]
    fn expired_and_damaged_frames_are_refused_unchanged() {
        let spec = Spec {
            ttl: 1,
            ..Spec::default()
        };
        let mut f = build(64, &spec, 0).unwrap();
        let before = f.clone();
        assert_eq!(forward_in_place(&mut f), Err(Drop::TtlExpired));
        assert_eq!(f, before);
        let mut f = build(64, &Spec { ttl: 0, ..spec }, 0).unwrap();
        assert_eq!(forward_in_place(&mut f), Err(Drop::TtlExpired));

        let good = build(128, &Spec::default(), 0).unwrap();
        let damaged = |at: usize, v: u8| {
            let mut f = good.clone();
            f[at] = v;
            f
        };
        let mut bad_sum = damaged(IP_DST, 1);
        assert_eq!(forward_in_place(&mut bad_sum), Err(Drop::BadChecksum));
        assert_eq!(dst(&bad_sum), None);
        assert_eq!(forward_in_place(&mut damaged(12, 0x86)), Err(Drop::NotIpv4));
        assert_eq!(
            forward_in_place(&mut damaged(IP, 0x65)),
            Err(Drop::BadHeader)
        );
        assert_eq!(
            forward_in_place(&mut damaged(IP, 0x44)),
            Err(Drop::BadHeader)
        );
        assert_eq!(
            forward_in_place(&mut good[..30].to_vec()),
            Err(Drop::Truncated)
        );
        // Total length beyond the frame.
        assert_eq!(
            forward_in_place(&mut damaged(IP + 2, 0x10)),
            Err(Drop::Truncated)
        );
    }

    #[test]
    fn forwarding_changes_only_ttl_and_checksum() {
        let mut f = build(256, &Spec::default(), 7).unwrap();
        let before = f.clone();
        forward_in_place(&mut f).unwrap();
        let changed: Vec<usize> = (0..f.len()).filter(|&i| f[i] != before[i]).collect();
        assert!(changed
            .iter()
            .all(|&i| i == IP_TTL || i == IP_CSUM || i == IP_CSUM + 1));
        assert_eq!(f[IP_TTL], 63);
        assert!(!fcs_ok(&f), "the FCS is stale until sealed again");
        seal(&mut f);
        assert!(fcs_ok(&f));
        assert_eq!(seq(&f), Some(7));
    }

    proptest! {
        /// Any header, any TTL: incremental = recomputed, and it verifies.
        #[test]
        fn incremental_update_matches_recomputation(
            src in any::<u32>(), dst_addr in any::<u32>(), ttl in 2u8..=255,
            seq_no in any::<u64>(), size in MIN_FRAME..=MAX_FRAME,
        ) {
            let spec = Spec { src, dst: dst_addr, ttl, ..Spec::default() };
            let mut f = build(size, &spec, seq_no).unwrap();
            prop_assert_eq!(dst(&f), Some(dst_addr));
            forward_in_place(&mut f).unwrap();
            let stored = u16::from_be_bytes([f[IP_CSUM], f[IP_CSUM + 1]]);
            prop_assert_eq!(stored, ipv4_checksum(header(&f)));
            prop_assert_eq!(dst(&f), Some(dst_addr));
        }
    }
}
