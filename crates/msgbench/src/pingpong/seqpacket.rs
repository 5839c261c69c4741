//! Seqpacket ping-pong: the floor of a Unix-socket exchange.
//!
//! A `socketpair(AF_UNIX, SOCK_SEQPACKET)`; A `send`s its 4-byte sequence
//! number and blocks in `recv` for the reply, B blocks in `recv`, checks the
//! number and `send`s the next one back. One `send` and one `recv` per
//! message, nothing else: no `poll`, no header. Each message is one packet,
//! so the ends are the datagram floor's ([`DatagramEnd`]).

use super::uds_dgram::DatagramEnd;
use super::uds_stream::unix_pair;
use super::{counts, exchange, reply_of, PingPong};

/// Ping-pong over a `SOCK_SEQPACKET` socket pair between threads on `cpus`.
pub fn seqpacket(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
) -> anyhow::Result<PingPong> {
    run(cpus, round_trips, reply_of)
}

/// The ping-pong, with B answering `answer(i)` (tests inject faults here).
fn run(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    counts(round_trips)?;
    let (a, b) = unix_pair(oslayer::socket::SocketType::SEQPACKET)?;
    exchange(cpus, round_trips, answer, DatagramEnd(a), DatagramEnd(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(seqpacket, run);
}
