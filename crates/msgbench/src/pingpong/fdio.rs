//! The few descriptor calls the kernel floors share, each one syscall per
//! message in the normal case: the loops only absorb `EINTR` and short
//! transfers (which a 4-byte message on these mechanisms never sees in
//! practice, but a floor must not misread one if it happens).

use std::os::fd::BorrowedFd;

use oslayer::{fd, socket};

use anyhow::anyhow;

/// How bytes leave or enter a descriptor.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Call {
    /// `write(2)` / `read(2)` (pipes, eventfds).
    ReadWrite,
    /// `send(2)` with `MSG_NOSIGNAL` / `recv(2)` with no flags (sockets).
    SendRecv,
}

/// One transfer out: one `write(2)` or `send(2)` (MSG_NOSIGNAL); oslayer
/// absorbs `EINTR`.
#[inline]
fn transfer_out(fd: BorrowedFd<'_>, how: Call, b: &[u8]) -> anyhow::Result<usize> {
    match how {
        Call::ReadWrite => fd::write_some(fd, b),
        Call::SendRecv => socket::send_bytes(fd, b),
    }
    .map_err(|e| anyhow::Error::new(e).context(name_out(how)))
}

/// One transfer in: one `read(2)` or `recv(2)` with no flags.
#[inline]
fn transfer_in(fd: BorrowedFd<'_>, how: Call, b: &mut [u8]) -> anyhow::Result<usize> {
    match how {
        Call::ReadWrite => fd::read_some(fd, b),
        Call::SendRecv => socket::recv_some(fd, b),
    }
    .map_err(|e| anyhow::Error::new(e).context(name_in(how)))
}

/// Writes all of `b` on a byte stream (or one whole datagram).
pub(crate) fn put(fd: BorrowedFd<'_>, how: Call, b: &[u8]) -> anyhow::Result<()> {
    let mut done = 0;
    while done < b.len() {
        done += transfer_out(fd, how, &b[done..])?;
    }
    Ok(())
}

/// Reads exactly `b.len()` bytes from a byte stream; the peer closing
/// first is an error.
pub(crate) fn take(fd: BorrowedFd<'_>, how: Call, b: &mut [u8]) -> anyhow::Result<()> {
    let mut done = 0;
    while done < b.len() {
        let n = transfer_in(fd, how, &mut b[done..])?;
        if n == 0 {
            return Err(anyhow!("the peer closed its end"));
        }
        done += n;
    }
    Ok(())
}

/// Sends `v` as exactly 4 bytes (a whole datagram on a datagram socket).
pub(crate) fn put_u32(fd: BorrowedFd<'_>, how: Call, v: u32) -> anyhow::Result<()> {
    put(fd, how, &v.to_ne_bytes())
}

/// Reads 4 bytes from a byte stream.
pub(crate) fn take_u32(fd: BorrowedFd<'_>, how: Call) -> anyhow::Result<u32> {
    let mut b = [0u8; 4];
    take(fd, how, &mut b)?;
    Ok(u32::from_ne_bytes(b))
}

/// Receives one datagram that must be exactly 4 bytes (`recv(2)`, one
/// spare byte so that a longer one shows up as too long).
pub(crate) fn recv_datagram_u32(fd: BorrowedFd<'_>) -> anyhow::Result<u32> {
    let mut b = [0u8; 5];
    match transfer_in(fd, Call::SendRecv, &mut b)? {
        4 => Ok(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        n => Err(anyhow!("expected a 4-byte datagram, got {n} bytes")),
    }
}

fn name_out(how: Call) -> &'static str {
    match how {
        Call::ReadWrite => "write",
        Call::SendRecv => "send",
    }
}

fn name_in(how: Call) -> &'static str {
    match how {
        Call::ReadWrite => "read",
        Call::SendRecv => "recv",
    }
}
