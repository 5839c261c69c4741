//! POSIX message queue ping-pong: the floor of the `posix-mq` transport.
//!
//! Two queues, one each way, made as the library makes them: created under
//! a unique name (`/msgbench-floor.<pid>.<seq>`) with `mq_maxmsg = 1`,
//! opened once for reading (blocking) and once for writing
//! (`O_NONBLOCK`: the one slot is always free in a synchronous exchange),
//! and unlinked right after opening, so nothing is left behind. The
//! message size is the 4-byte payload. Per message: one `mq_send`
//! (`mq_timedsend` syscall) and one `mq_receive` (`mq_timedreceive`).

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, Context};
use oslayer::mqueue::{self, Access};

use super::{counts, exchange, reply_of, End, PingPong};

/// Message size of the queues: the payload, nothing more.
const MSG: usize = 4;

/// Makes queue names unique within the process.
static SEQ: AtomicU64 = AtomicU64::new(0);

/// One queue: (read end, write end). The name is unlinked before this
/// returns, whatever happens.
fn make_queue() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let name = CString::new(format!("/msgbench-floor.{}.{seq}", std::process::id()))
        .context("queue name")?;
    let rx = mqueue::open(&name, Access::Read, false, Some((1, MSG)))
        .with_context(|| format!("mq_open {name:?}"))?;
    let tx = mqueue::open(&name, Access::Write, true, None);
    let unlinked = mqueue::unlink(&name);
    let tx = tx.with_context(|| format!("mq_open {name:?} for writing"))?;
    unlinked.with_context(|| format!("mq_unlink {name:?}"))?;
    Ok((rx, tx))
}

/// One side: the queue it reads, the queue it writes.
struct MqEnd {
    rx: OwnedFd,
    tx: OwnedFd,
}

impl End for MqEnd {
    fn send(&mut self, v: u32) -> anyhow::Result<()> {
        // oslayer retries EINTR.
        mqueue::send(self.tx.as_fd(), &v.to_ne_bytes()).context("mq_send")
    }

    fn recv(&mut self) -> anyhow::Result<u32> {
        let mut b = [0u8; MSG];
        match mqueue::receive(self.rx.as_fd(), &mut b).context("mq_receive")? {
            4 => Ok(u32::from_ne_bytes(b)),
            n => Err(anyhow!("expected a 4-byte message, got {n} bytes")),
        }
    }
}

/// Ping-pong over two POSIX message queues between threads on `cpus`.
pub fn posix_mq(
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
    let (a2b_r, a2b_w) = make_queue()?;
    let (b2a_r, b2a_w) = make_queue()?;
    let a = MqEnd {
        rx: b2a_r,
        tx: a2b_w,
    };
    let b = MqEnd {
        rx: a2b_r,
        tx: b2a_w,
    };
    exchange(cpus, round_trips, answer, a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(posix_mq, run);
}
