//! Pipe ping-pong: the floor of the `pipe` and `fifo` transports.
//!
//! Two anonymous pipes, one each way (`pipe2(O_CLOEXEC)`, blocking). Per
//! message: one `write(2)` of the 4-byte sequence number on the sender's
//! pipe, one `read(2)` of 4 bytes on the receiver's. A FIFO is the same
//! kernel object opened by name, so this is also the `fifo` floor. A side
//! that fails closes its ends, which the peer reads as EOF (and it sends
//! the poison value first).

use std::os::fd::{AsFd, OwnedFd};

use anyhow::Context;

use super::fdio::{put_u32, take_u32, Call};
use super::{counts, exchange, reply_of, End, PingPong};

/// A pipe pair as made by `pipe2`: (read end, write end).
fn make_pipe() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    oslayer::pipe::pipe().context("pipe2")
}

/// One side: the pipe it reads, the pipe it writes.
struct PipeEnd {
    rx: OwnedFd,
    tx: OwnedFd,
}

impl End for PipeEnd {
    fn send(&mut self, v: u32) -> anyhow::Result<()> {
        put_u32(self.tx.as_fd(), Call::ReadWrite, v)
    }

    fn recv(&mut self) -> anyhow::Result<u32> {
        take_u32(self.rx.as_fd(), Call::ReadWrite)
    }
}

/// Ping-pong over two pipes between threads on `cpus`.
pub fn pipe(cpus: (Option<usize>, Option<usize>), round_trips: u64) -> anyhow::Result<PingPong> {
    run(cpus, round_trips, reply_of)
}

/// The ping-pong, with B answering `answer(i)` (tests inject faults here).
fn run(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    counts(round_trips)?;
    let (a2b_r, a2b_w) = make_pipe()?;
    let (b2a_r, b2a_w) = make_pipe()?;
    let a = PipeEnd {
        rx: b2a_r,
        tx: a2b_w,
    };
    let b = PipeEnd {
        rx: a2b_r,
        tx: b2a_w,
    };
    exchange(cpus, round_trips, answer, a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::floor::test_util::floor_tests!(pipe, run);
}
