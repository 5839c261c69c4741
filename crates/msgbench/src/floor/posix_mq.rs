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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{anyhow, Context};

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
    // SAFETY: mq_attr is plain old data; all-zero is a valid value.
    let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
    attr.mq_maxmsg = 1;
    attr.mq_msgsize = MSG as libc::c_long;
    let mode: libc::mode_t = 0o600;
    // SAFETY: name is NUL-terminated; with O_CREAT mq_open reads a mode_t
    // and a pointer to an mq_attr that lives for the call.
    let rx = unsafe {
        libc::mq_open(
            name.as_ptr(),
            libc::O_RDONLY | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            mode,
            &attr as *const libc::mq_attr,
        )
    };
    if rx < 0 {
        return Err(std::io::Error::last_os_error()).with_context(|| format!("mq_open {name:?}"));
    }
    // SAFETY: rx was just returned by mq_open and is owned by nobody else.
    let rx = unsafe { OwnedFd::from_raw_fd(rx) };
    // SAFETY: name is NUL-terminated; without O_CREAT no more arguments
    // are read.
    let tx = unsafe {
        libc::mq_open(
            name.as_ptr(),
            libc::O_WRONLY | libc::O_NONBLOCK | libc::O_CLOEXEC,
        )
    };
    let tx_err = std::io::Error::last_os_error();
    // SAFETY: name is NUL-terminated.
    let unlinked = unsafe { libc::mq_unlink(name.as_ptr()) };
    let unlink_err = std::io::Error::last_os_error();
    if tx < 0 {
        return Err(tx_err).with_context(|| format!("mq_open {name:?} for writing"));
    }
    // SAFETY: tx was just returned by mq_open and is owned by nobody else.
    let tx = unsafe { OwnedFd::from_raw_fd(tx) };
    if unlinked != 0 {
        return Err(unlink_err).with_context(|| format!("mq_unlink {name:?}"));
    }
    Ok((rx, tx))
}

/// One side: the queue it reads, the queue it writes.
struct MqEnd {
    rx: OwnedFd,
    tx: OwnedFd,
}

impl End for MqEnd {
    fn send(&mut self, v: u32) -> anyhow::Result<()> {
        let b = v.to_ne_bytes();
        loop {
            // SAFETY: b is valid for reads of b.len() bytes; tx is a queue.
            let r = unsafe { libc::mq_send(self.tx.as_raw_fd(), b.as_ptr().cast(), b.len(), 0) };
            if r == 0 {
                return Ok(());
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != std::io::ErrorKind::Interrupted {
                return Err(anyhow::Error::new(e).context("mq_send"));
            }
        }
    }

    fn recv(&mut self) -> anyhow::Result<u32> {
        let mut b = [0u8; MSG];
        loop {
            // SAFETY: b is valid for writes of b.len() bytes (the queue's
            // message size); a null priority pointer is allowed.
            let n = unsafe {
                libc::mq_receive(
                    self.rx.as_raw_fd(),
                    b.as_mut_ptr().cast(),
                    b.len(),
                    std::ptr::null_mut(),
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(anyhow::Error::new(e).context("mq_receive"));
            }
            return match n {
                4 => Ok(u32::from_ne_bytes(b)),
                n => Err(anyhow!("expected a 4-byte message, got {n} bytes")),
            };
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
    crate::floor::test_util::floor_tests!(posix_mq, run);
}
