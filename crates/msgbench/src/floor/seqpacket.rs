//! Seqpacket ping-pong: the floor of a Unix-socket exchange.
//!
//! A `socketpair(AF_UNIX, SOCK_SEQPACKET)`; A `send`s its 4-byte sequence
//! number and blocks in `recv` for the reply, B blocks in `recv`, checks the
//! number and `send`s the next one back. One `send` and one `recv` per
//! message, nothing else: no `poll`, no header.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use anyhow::{anyhow, Context};

use super::{counts, mismatch, reply_of, request_of, result, run_pair, timed, PingPong};

/// Sends `v` as one 4-byte message.
fn send_u32(fd: &OwnedFd, v: u32) -> anyhow::Result<()> {
    let b = v.to_ne_bytes();
    loop {
        // SAFETY: b is valid for reads of b.len() bytes; fd is an open socket.
        let n = unsafe {
            libc::send(
                fd.as_raw_fd(),
                b.as_ptr().cast(),
                b.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if n == b.len() as isize {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if n < 0 && e.kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        return Err(if n < 0 {
            anyhow::Error::new(e).context("send")
        } else {
            anyhow!("short send of {n} bytes")
        });
    }
}

/// Receives one message that must be exactly 4 bytes.
fn recv_u32(fd: &OwnedFd) -> anyhow::Result<u32> {
    // One spare byte so that a longer message shows up as truncated.
    let mut b = [0u8; 5];
    loop {
        // SAFETY: b is valid for writes of b.len() bytes; fd is an open socket.
        let n = unsafe { libc::recv(fd.as_raw_fd(), b.as_mut_ptr().cast(), b.len(), 0) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(anyhow::Error::new(e).context("recv"));
        }
        return match n {
            0 => Err(anyhow!("the peer closed the socket")),
            4 => Ok(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            n => Err(anyhow!("expected a 4-byte message, got {n} bytes")),
        };
    }
}

/// Ping-pong over a `SOCK_SEQPACKET` socket pair between threads on `cpus`.
pub fn seqpacket(
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
    let (warmup, total) = counts(round_trips)?;
    let mut fds = [0; 2];
    // SAFETY: fds is valid for writes of two ints.
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    if r != 0 {
        return Err(std::io::Error::last_os_error()).context("socketpair(AF_UNIX, SOCK_SEQPACKET)");
    }
    // SAFETY: both descriptors were just created and are owned by nobody else.
    let (a, b) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    // Each side owns its end: if it fails (or panics) the end is closed and
    // the peer's blocking recv returns 0 instead of hanging.
    let elapsed = run_pair(
        cpus,
        move || {
            timed(warmup, round_trips, |i| {
                send_u32(&a, request_of(i))?;
                let got = recv_u32(&a).with_context(|| format!("side A, round trip {i}"))?;
                if got != reply_of(i) {
                    return Err(mismatch("A", i, reply_of(i), got));
                }
                Ok(())
            })
        },
        move || {
            for i in 0..total {
                let got = recv_u32(&b).with_context(|| format!("side B, round trip {i}"))?;
                if got != request_of(i) {
                    return Err(mismatch("B", i, request_of(i), got));
                }
                send_u32(&b, answer(i))?;
            }
            Ok(())
        },
    )?;
    Ok(result(round_trips, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::floor::test_util::floor_tests!(seqpacket, run);
}
