//! System V message queue ping-pong: the floor of the `sysv-msg` transport.
//!
//! One `IPC_PRIVATE` queue (mode 0600) carrying both directions, told apart
//! by message type: A sends type 1 and receives type 2, B the reverse. Per
//! message: one `msgsnd` (`IPC_NOWAIT`, as the library sends: the queue
//! never fills in a synchronous exchange) of a 4-byte text and one blocking
//! `msgrcv` of the receiver's type. The queue is removed (`IPC_RMID`) when
//! the run ends, also on error or panic; a side that fails sends the poison
//! value first.

use anyhow::{anyhow, Context};
use oslayer::sysv_msg::{self, MsgBuf, MsgFlags, MsgQueueId, MsgType};

use super::{counts, exchange, reply_of, End, PingPong};

/// Message type of A-to-B messages.
const TO_B: MsgType = 1;
/// Message type of B-to-A messages.
const TO_A: MsgType = 2;

/// The queue, removed on drop.
struct Queue(MsgQueueId);

impl Queue {
    fn new() -> anyhow::Result<Queue> {
        Ok(Queue(
            sysv_msg::create_private().context("msgget(IPC_PRIVATE)")?,
        ))
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        let _ = sysv_msg::remove(self.0);
    }
}

/// One side: the queue, the type it sends and the type it receives, and
/// its two 4-byte message buffers (made once, reused for every message).
struct SysvEnd {
    id: MsgQueueId,
    tx: MsgType,
    rx: MsgType,
    out: MsgBuf,
    inb: MsgBuf,
}

impl SysvEnd {
    fn new(id: MsgQueueId, tx: MsgType, rx: MsgType) -> SysvEnd {
        SysvEnd {
            id,
            tx,
            rx,
            out: MsgBuf::new(4),
            inb: MsgBuf::new(4),
        }
    }
}

impl End for SysvEnd {
    fn send(&mut self, v: u32) -> anyhow::Result<()> {
        self.out.set_mtype(self.tx);
        self.out.text_mut()[..4].copy_from_slice(&v.to_ne_bytes());
        // oslayer retries EINTR.
        sysv_msg::send(self.id, &self.out, 4, MsgFlags::NOWAIT).context("msgsnd")
    }

    fn recv(&mut self) -> anyhow::Result<u32> {
        let n = loop {
            match sysv_msg::receive(self.id, &mut self.inb, self.rx, MsgFlags::EMPTY) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(anyhow::Error::new(e).context("msgrcv")),
            }
        };
        match n {
            4 => {
                let t = self.inb.text();
                Ok(u32::from_ne_bytes([t[0], t[1], t[2], t[3]]))
            }
            n => Err(anyhow!("expected a 4-byte message, got {n} bytes")),
        }
    }
}

/// Ping-pong over one System V message queue between threads on `cpus`.
pub fn sysv_msg(
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
    let q = Queue::new()?;
    let a = SysvEnd::new(q.0, TO_B, TO_A);
    let b = SysvEnd::new(q.0, TO_A, TO_B);
    // `q` outlives both sides: it is removed after they have joined.
    exchange(cpus, round_trips, answer, a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(sysv_msg, run);
}
