//! The fixed header the msgbench broker routes on, in front of every
//! request and reply body on the msgpass arrangements (`direct`,
//! `broker`, `broker-validate`). The body behind it is in the D-Bus wire
//! format (`i` for the request, `ai` for the reply), so the validating
//! broker can check it with a D-Bus library; the header is all the
//! routing broker ever reads.

/// The msgpass command code of `GetInteger`.
pub const GET_INTEGER: u32 = 1;
/// Bytes of a request header: destination, method, serial.
pub const REQUEST_HEADER: usize = 16;
/// Bytes of a reply header: the serial of the request it answers.
pub const REPLY_HEADER: usize = 8;
/// Largest `numInts` any arrangement serves: its reply, with both
/// headers, fits msgpass's default 64 KiB message.
pub const MAX_INTS: u32 = 16_000;

/// A request's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestHeader {
    /// The service it is for (its index).
    pub destination: u32,
    /// The method (always [`GET_INTEGER`] here).
    pub method: u32,
    /// The caller's serial; the reply carries it back. Each client's
    /// serials are its own (its index in the top 32 bits), so a reply
    /// routed to the wrong client shows.
    pub serial: u64,
}

impl RequestHeader {
    /// Writes the header at the front of `out` (cleared first).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.clear();
        out.extend_from_slice(&self.destination.to_le_bytes());
        out.extend_from_slice(&self.method.to_le_bytes());
        out.extend_from_slice(&self.serial.to_le_bytes());
    }

    /// Reads a header off the front of `msg`; `None` when it is short.
    pub fn read(msg: &[u8]) -> Option<(RequestHeader, &[u8])> {
        let (head, body) = msg.split_at_checked(REQUEST_HEADER)?;
        let u32_at = |i: usize| u32::from_le_bytes(head[i..i + 4].try_into().expect("4 bytes"));
        Some((
            RequestHeader {
                destination: u32_at(0),
                method: u32_at(4),
                serial: u64::from_le_bytes(head[8..16].try_into().expect("8 bytes")),
            },
            body,
        ))
    }
}

/// The msgpass command a service attached to the broker first calls it
/// with: `[index u32][pid u32]`, "I serve this index, give me work".
pub const ATTACH: u32 = 2;
/// The command of every later call of an attached service: the result of
/// its last work, `[token u64][status u32]` then the reply (none when the
/// status is an errno), and "give me the next".
pub const RESULT: u32 = 3;
/// Bytes before a result's reply: the token, the status.
pub const RESULT_HEADER: usize = 12;
/// Bytes before a work item's request: the token, the client's command.
pub const WORK_HEADER: usize = 12;
/// The code of the pulses the broker's timer sends it.
pub const TICK: u8 = 1;
/// The msgpass command the broker's timer first calls it with: `[secret
/// u64]`, the secret the broker made for it, which no other connection
/// knows. Only that connection's [`TICK`] pulses count from then on.
pub const TIMER: u32 = 4;

/// The work the broker hands a service, in the reply to its call: the
/// client request's token, its command, then the request as the client
/// sent it. Returns (token, command, request); `None` when short.
pub fn read_work(msg: &[u8]) -> Option<(u64, u32, &[u8])> {
    let (head, req) = msg.split_at_checked(WORK_HEADER)?;
    let token = u64::from_le_bytes(head[..8].try_into().ok()?);
    let cmd = u32::from_le_bytes(head[8..12].try_into().ok()?);
    Some((token, cmd, req))
}

/// Writes a work item's header at the front of `out`.
pub fn write_work_header(out: &mut [u8], token: u64, cmd: u32) {
    out[..8].copy_from_slice(&token.to_le_bytes());
    out[8..12].copy_from_slice(&cmd.to_le_bytes());
}

/// A result as a service sends it: (token, status, reply); `None` when
/// short.
pub fn read_result(msg: &[u8]) -> Option<(u64, u32, &[u8])> {
    let (head, reply) = msg.split_at_checked(RESULT_HEADER)?;
    let token = u64::from_le_bytes(head[..8].try_into().ok()?);
    let status = u32::from_le_bytes(head[8..12].try_into().ok()?);
    Some((token, status, reply))
}

/// Writes a result's header at the front of `out` (cleared first).
pub fn write_result_header(out: &mut Vec<u8>, token: u64, status: u32) {
    out.clear();
    out.extend_from_slice(&token.to_le_bytes());
    out.extend_from_slice(&status.to_le_bytes());
}

/// Reads the serial off the front of a reply; `None` when it is short.
pub fn read_reply(msg: &[u8]) -> Option<(u64, &[u8])> {
    let (head, body) = msg.split_at_checked(REPLY_HEADER)?;
    Some((u64::from_le_bytes(head.try_into().expect("8 bytes")), body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_header_round_trips_and_a_short_one_is_refused() {
        let h = RequestHeader {
            destination: 3,
            method: GET_INTEGER,
            serial: (7 << 32) | 42,
        };
        let mut buf = Vec::new();
        h.write(&mut buf);
        buf.extend_from_slice(&[1, 2, 3, 4]);
        let (back, body) = RequestHeader::read(&buf).expect("whole");
        assert_eq!((back, body), (h, &[1u8, 2, 3, 4][..]));
        assert!(RequestHeader::read(&buf[..15]).is_none());
        assert!(read_reply(&[0; 7]).is_none());
        assert_eq!(read_reply(&[9, 0, 0, 0, 0, 0, 0, 0]), Some((9, &[][..])));
    }

    #[test]
    fn work_and_results_round_trip_and_short_ones_are_refused() {
        let mut w = vec![0u8; WORK_HEADER + 3];
        write_work_header(&mut w, 0x1_0000_0002, GET_INTEGER);
        w[WORK_HEADER..].copy_from_slice(b"abc");
        assert_eq!(
            read_work(&w),
            Some((0x1_0000_0002, GET_INTEGER, &b"abc"[..]))
        );
        assert!(read_work(&w[..11]).is_none());
        let mut r = Vec::new();
        write_result_header(&mut r, 7, 22);
        r.extend_from_slice(b"xy");
        assert_eq!(read_result(&r), Some((7, 22, &b"xy"[..])));
        assert!(read_result(&r[..11]).is_none());
    }
}
