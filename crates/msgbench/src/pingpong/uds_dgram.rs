//! Datagram-socket ping-pong: the floor of the `uds-dgram` transport.
//!
//! A `socketpair(AF_UNIX, SOCK_DGRAM)`. Per message: one `send(2)` of a
//! 4-byte datagram (`MSG_NOSIGNAL`), one `recv(2)` on the other end. A
//! datagram socket is not told that its peer closed, so a side that fails
//! sends the poison value.

use std::os::fd::{AsFd, OwnedFd};

use super::fdio::{put_u32, recv_datagram_u32, Call};
use super::uds_stream::unix_pair;
use super::{counts, exchange, reply_of, End, PingPong};

/// One end of a connected datagram socket (also used by the UDP floor).
pub(crate) struct DatagramEnd(pub(crate) OwnedFd);

impl End for DatagramEnd {
    fn send(&mut self, v: u32) -> anyhow::Result<()> {
        put_u32(self.0.as_fd(), Call::SendRecv, v)
    }

    fn recv(&mut self) -> anyhow::Result<u32> {
        recv_datagram_u32(self.0.as_fd())
    }
}

/// Ping-pong over a `SOCK_DGRAM` Unix socket pair between threads on `cpus`.
pub fn uds_dgram(
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
    let (a, b) = unix_pair(oslayer::socket::SocketType::DGRAM)?;
    exchange(cpus, round_trips, answer, DatagramEnd(a), DatagramEnd(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(uds_dgram, run);
}
