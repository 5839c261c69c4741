//! Eventfd ping-pong: the floor of the `eventfd` transport's wake-ups.
//!
//! Two eventfds (`eventfd(0, EFD_CLOEXEC)`: blocking, counter semantics),
//! one per receiver, and no payload area: the sequence number itself is the
//! value added to the counter. Per message: one 8-byte `write(2)` on the
//! peer's eventfd, one 8-byte `read(2)` on one's own, which blocks while
//! the counter is zero and takes it back to zero. At most one message is
//! outstanding per direction, so a read returns exactly what was written.
//! The library transport moves its payload (and 8-byte header) through a
//! shared-memory area besides: those copies are part of what it adds.

use std::os::fd::{AsFd, OwnedFd};

use anyhow::{anyhow, Context};

use super::fdio::{put, take, Call};
use super::{counts, exchange, reply_of, End, PingPong};

/// A new blocking eventfd.
fn make_eventfd() -> anyhow::Result<OwnedFd> {
    oslayer::eventfd::new().context("eventfd")
}

/// One side: its own eventfd and the peer's.
struct EventEnd {
    rx: OwnedFd,
    tx: OwnedFd,
}

impl End for EventEnd {
    fn send(&mut self, v: u32) -> anyhow::Result<()> {
        put(
            self.tx.as_fd(),
            Call::ReadWrite,
            &u64::from(v).to_ne_bytes(),
        )
    }

    fn recv(&mut self) -> anyhow::Result<u32> {
        let mut b = [0u8; 8];
        take(self.rx.as_fd(), Call::ReadWrite, &mut b)?;
        let v = u64::from_ne_bytes(b);
        u32::try_from(v).map_err(|_| anyhow!("eventfd counter {v} is not one value"))
    }
}

/// Ping-pong over two eventfds between threads on `cpus`.
pub fn eventfd(cpus: (Option<usize>, Option<usize>), round_trips: u64) -> anyhow::Result<PingPong> {
    run(cpus, round_trips, reply_of)
}

/// The ping-pong, with B answering `answer(i)` (tests inject faults here).
fn run(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    counts(round_trips)?;
    let (to_a, to_b) = (make_eventfd()?, make_eventfd()?);
    let a = EventEnd {
        rx: to_a.try_clone().context("dup eventfd")?,
        tx: to_b.try_clone().context("dup eventfd")?,
    };
    let b = EventEnd { rx: to_b, tx: to_a };
    exchange(cpus, round_trips, answer, a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(eventfd, run);
}
