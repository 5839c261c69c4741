//! UDP ping-pong: the floor of the `udp` transport.
//!
//! Two UDP sockets on 127.0.0.1 (ephemeral ports), each connected to the
//! other, as the library pairs them. Per message: one `send(2)` of a
//! 4-byte datagram (`MSG_NOSIGNAL`), one `recv(2)` on the other socket. A
//! datagram socket is not told that its peer closed, so a side that fails
//! sends the poison value.

use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::OwnedFd;

use anyhow::Context;

use super::uds_dgram::DatagramEnd;
use super::{counts, exchange, reply_of, PingPong};

/// Discards datagrams that reached `s` before it was connected (a stray
/// local sender could hit the port between bind and connect).
fn drain(s: &UdpSocket) -> anyhow::Result<()> {
    s.set_nonblocking(true).context("O_NONBLOCK")?;
    let mut scratch = [0u8; 1];
    while s.recv(&mut scratch).is_ok() {}
    s.set_nonblocking(false).context("clear O_NONBLOCK")
}

/// A connected pair of loopback UDP sockets.
fn udp_pair() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    let a = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).context("bind 127.0.0.1")?;
    let b = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).context("bind 127.0.0.1")?;
    a.connect(b.local_addr().context("local address")?)
        .context("connect")?;
    b.connect(a.local_addr().context("local address")?)
        .context("connect")?;
    drain(&a)?;
    drain(&b)?;
    Ok((OwnedFd::from(a), OwnedFd::from(b)))
}

/// Ping-pong over a connected loopback UDP pair between threads on `cpus`.
pub fn udp(cpus: (Option<usize>, Option<usize>), round_trips: u64) -> anyhow::Result<PingPong> {
    run(cpus, round_trips, reply_of)
}

/// The ping-pong, with B answering `answer(i)` (tests inject faults here).
fn run(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    counts(round_trips)?;
    let (a, b) = udp_pair()?;
    exchange(cpus, round_trips, answer, DatagramEnd(a), DatagramEnd(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(udp, run);
}
