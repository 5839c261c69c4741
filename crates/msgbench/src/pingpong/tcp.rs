//! TCP ping-pong: the floor of the `tcp` transport.
//!
//! One TCP connection on loopback (a listener on 127.0.0.1, ephemeral
//! port; connect; accept; the listener is then closed), `TCP_NODELAY` on
//! both ends as the library sets it. Per message: one `send(2)` of the
//! 4-byte sequence number (`MSG_NOSIGNAL`), one `recv(2)` of 4 bytes on the
//! other end. A side that fails closes its end, which the peer reads as
//! EOF.

use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::os::fd::OwnedFd;

use anyhow::Context;

use super::uds_stream::StreamEnd;
use super::{counts, exchange, reply_of, PingPong};

/// A connected loopback TCP pair with `TCP_NODELAY` on both ends.
fn tcp_pair() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("listen on 127.0.0.1")?;
    let addr = listener.local_addr().context("listener address")?;
    let a = TcpStream::connect(addr).with_context(|| format!("connect to {addr}"))?;
    // The only connection to an ephemeral port just opened: loop until it
    // is ours (another local process could race to it).
    let b = loop {
        let (b, peer) = listener.accept().context("accept")?;
        if peer == a.local_addr().context("local address")? {
            break b;
        }
    };
    for s in [&a, &b] {
        s.set_nodelay(true).context("TCP_NODELAY")?;
    }
    Ok((OwnedFd::from(a), OwnedFd::from(b)))
}

/// Ping-pong over a loopback TCP connection between threads on `cpus`.
pub fn tcp(cpus: (Option<usize>, Option<usize>), round_trips: u64) -> anyhow::Result<PingPong> {
    run(cpus, round_trips, reply_of)
}

/// The ping-pong, with B answering `answer(i)` (tests inject faults here).
fn run(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    counts(round_trips)?;
    let (a, b) = tcp_pair()?;
    exchange(cpus, round_trips, answer, StreamEnd(a), StreamEnd(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(tcp, run);
}
