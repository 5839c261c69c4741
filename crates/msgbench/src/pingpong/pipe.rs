//! Pipe ping-pong: the floors of the `pipe` and `fifo` transports.
//!
//! Two pipes, one each way, blocking: anonymous (`pipe2(O_CLOEXEC)`) for
//! `pipe`, named FIFOs (made in the temporary directory, opened, then
//! unlinked) for `fifo`. A FIFO is the same kernel object opened by name,
//! but its writes update a named inode's times: a bare FIFO ping-pong
//! measured about 1.04x a bare pipe one on one CPU here, so `fifo` has a
//! floor of its own. Per message: one `write(2)` of the 4-byte sequence
//! number on the sender's pipe, one `read(2)` of 4 bytes on the
//! receiver's. A side that fails closes its ends, which the peer reads as
//! EOF (and it sends the poison value first).

use std::fs::OpenOptions;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::Context;

use super::fdio::{put_u32, take_u32, Call};
use super::{counts, exchange, reply_of, End, PingPong};

/// A pipe pair as made by `pipe2`: (read end, write end).
fn make_pipe() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    oslayer::pipe::pipe().context("pipe2")
}

/// A FIFO made in the temporary directory, opened both ways (the read end
/// first, without blocking, so the write end's open does not block) and
/// unlinked: (read end, write end).
fn make_fifo() -> anyhow::Result<(OwnedFd, OwnedFd)> {
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let path =
        std::env::temp_dir().join(format!("msgbench-floor-fifo.{}.{seq}", std::process::id()));
    oslayer::fifo::mkfifo(&path, 0o600).with_context(|| format!("mkfifo {}", path.display()))?;
    let open = |write: bool| {
        let flags = libc::O_NOFOLLOW | if write { 0 } else { libc::O_NONBLOCK };
        OpenOptions::new()
            .read(!write)
            .write(write)
            .custom_flags(flags)
            .open(&path)
            .map(OwnedFd::from)
            .with_context(|| format!("open {}", path.display()))
    };
    let ends = open(false).and_then(|rx| Ok((rx, open(true)?)));
    let unlinked =
        std::fs::remove_file(&path).with_context(|| format!("unlink {}", path.display()));
    let (rx, tx) = ends?;
    unlinked?;
    oslayer::fd::set_nonblocking(rx.as_fd(), false).context("make the FIFO blocking")?;
    Ok((rx, tx))
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

/// Ping-pong over two FIFOs between threads on `cpus`.
pub fn fifo(cpus: (Option<usize>, Option<usize>), round_trips: u64) -> anyhow::Result<PingPong> {
    run_fifo(cpus, round_trips, reply_of)
}

/// The pipe ping-pong, with B answering `answer(i)` (tests inject faults
/// here).
fn run(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    run_on(make_pipe, cpus, round_trips, answer)
}

/// The FIFO ping-pong, with B answering `answer(i)`.
fn run_fifo(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    run_on(make_fifo, cpus, round_trips, answer)
}

/// The ping-pong over two pipes that `make` makes.
fn run_on(
    make: fn() -> anyhow::Result<(OwnedFd, OwnedFd)>,
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    counts(round_trips)?;
    let (a2b_r, a2b_w) = make()?;
    let (b2a_r, b2a_w) = make()?;
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
    crate::pingpong::test_util::floor_tests!(pipe, run);

    mod fifos {
        use super::super::*;
        crate::pingpong::test_util::floor_tests!(fifo, run_fifo);
    }
}
