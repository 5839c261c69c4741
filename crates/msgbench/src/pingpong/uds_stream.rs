//! Stream-socket ping-pong: the floor of the `uds-stream` transport.
//!
//! A `socketpair(AF_UNIX, SOCK_STREAM)`. Per message: one `send(2)` of the
//! 4-byte sequence number (`MSG_NOSIGNAL`), one `recv(2)` of 4 bytes on the
//! other end. A side that fails closes its end, which the peer reads as
//! EOF.

use std::os::fd::{AsFd, OwnedFd};

use anyhow::Context;
use oslayer::socket::SocketType;

use super::fdio::{put_u32, take_u32, Call};
use super::{counts, exchange, reply_of, End, PingPong};

/// A connected `AF_UNIX` socket pair of type `ty`.
pub(crate) fn unix_pair(ty: SocketType) -> anyhow::Result<(OwnedFd, OwnedFd)> {
    oslayer::socket::socketpair(ty).context("socketpair(AF_UNIX)")
}

/// One end of a byte-stream socket (also used by the TCP floor).
pub(crate) struct StreamEnd(pub(crate) OwnedFd);

impl End for StreamEnd {
    fn send(&mut self, v: u32) -> anyhow::Result<()> {
        put_u32(self.0.as_fd(), Call::SendRecv, v)
    }

    fn recv(&mut self) -> anyhow::Result<u32> {
        take_u32(self.0.as_fd(), Call::SendRecv)
    }
}

/// Ping-pong over a `SOCK_STREAM` Unix socket pair between threads on `cpus`.
pub fn uds_stream(
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
    let (a, b) = unix_pair(SocketType::STREAM)?;
    exchange(cpus, round_trips, answer, StreamEnd(a), StreamEnd(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(uds_stream, run);
}
