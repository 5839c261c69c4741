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

use super::{counts, exchange, reply_of, End, PingPong};

/// Message type of A-to-B messages.
const TO_B: libc::c_long = 1;
/// Message type of B-to-A messages.
const TO_A: libc::c_long = 2;

/// A message as `msgsnd`/`msgrcv` lay it out: the type, then the text.
#[repr(C)]
struct Msg {
    mtype: libc::c_long,
    text: [u8; 4],
}

/// The queue, removed on drop.
struct Queue(libc::c_int);

impl Queue {
    fn new() -> anyhow::Result<Queue> {
        // SAFETY: msgget takes no pointers.
        let id = unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            return Err(std::io::Error::last_os_error()).context("msgget(IPC_PRIVATE)");
        }
        Ok(Queue(id))
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // SAFETY: IPC_RMID ignores the buffer pointer, which may be null.
        unsafe { libc::msgctl(self.0, libc::IPC_RMID, std::ptr::null_mut()) };
    }
}

/// One side: the queue, the type it sends and the type it receives.
struct SysvEnd {
    id: libc::c_int,
    tx: libc::c_long,
    rx: libc::c_long,
}

impl End for SysvEnd {
    fn send(&mut self, v: u32) -> anyhow::Result<()> {
        let m = Msg {
            mtype: self.tx,
            text: v.to_ne_bytes(),
        };
        loop {
            // SAFETY: m is a type word followed by 4 text bytes, as msgsnd
            // reads them.
            let r = unsafe {
                libc::msgsnd(
                    self.id,
                    (&m as *const Msg).cast(),
                    m.text.len(),
                    libc::IPC_NOWAIT,
                )
            };
            if r == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(anyhow::Error::new(e).context("msgsnd"));
            }
        }
    }

    fn recv(&mut self) -> anyhow::Result<u32> {
        let mut m = Msg {
            mtype: 0,
            text: [0; 4],
        };
        loop {
            // SAFETY: m has room for a type word and 4 text bytes, as
            // msgrcv writes them (a longer message fails with E2BIG).
            let n = unsafe {
                libc::msgrcv(
                    self.id,
                    (&mut m as *mut Msg).cast(),
                    m.text.len(),
                    self.rx,
                    0,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(anyhow::Error::new(e).context("msgrcv"));
            }
            return match n {
                4 => Ok(u32::from_ne_bytes(m.text)),
                n => Err(anyhow!("expected a 4-byte message, got {n} bytes")),
            };
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
    let a = SysvEnd {
        id: q.0,
        tx: TO_B,
        rx: TO_A,
    };
    let b = SysvEnd {
        id: q.0,
        tx: TO_A,
        rx: TO_B,
    };
    // `q` outlives both sides: it is removed after they have joined.
    exchange(cpus, round_trips, answer, a, b)
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::floor::test_util::floor_tests!(sysv_msg, run);
}
