//! The few descriptor calls the kernel floors share, each one syscall per
//! message in the normal case: the loops only absorb `EINTR` and short
//! transfers (which a 4-byte message on these mechanisms never sees in
//! practice, but a floor must not misread one if it happens).

use std::os::fd::{AsRawFd, BorrowedFd};

use anyhow::anyhow;

/// How bytes leave or enter a descriptor.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Call {
    /// `write(2)` / `read(2)` (pipes, eventfds).
    ReadWrite,
    /// `send(2)` with `MSG_NOSIGNAL` / `recv(2)` with no flags (sockets).
    SendRecv,
}

/// One transfer: the syscall's return value.
fn transfer_out(fd: BorrowedFd<'_>, how: Call, b: &[u8]) -> isize {
    match how {
        // SAFETY: b is valid for reads of b.len() bytes; fd is open.
        Call::ReadWrite => unsafe { libc::write(fd.as_raw_fd(), b.as_ptr().cast(), b.len()) },
        // SAFETY: as above; fd is a socket.
        Call::SendRecv => unsafe {
            libc::send(
                fd.as_raw_fd(),
                b.as_ptr().cast(),
                b.len(),
                libc::MSG_NOSIGNAL,
            )
        },
    }
}

/// One transfer in: the syscall's return value.
fn transfer_in(fd: BorrowedFd<'_>, how: Call, b: &mut [u8]) -> isize {
    match how {
        // SAFETY: b is valid for writes of b.len() bytes; fd is open.
        Call::ReadWrite => unsafe { libc::read(fd.as_raw_fd(), b.as_mut_ptr().cast(), b.len()) },
        // SAFETY: as above; fd is a socket.
        Call::SendRecv => unsafe { libc::recv(fd.as_raw_fd(), b.as_mut_ptr().cast(), b.len(), 0) },
    }
}

/// The error of a failed call named `what`, or `None` for `EINTR`.
fn failed(what: &str) -> Option<anyhow::Error> {
    let e = std::io::Error::last_os_error();
    if e.kind() == std::io::ErrorKind::Interrupted {
        None
    } else {
        Some(anyhow::Error::new(e).context(what.to_string()))
    }
}

/// Writes all of `b` on a byte stream (or one whole datagram).
pub(crate) fn put(fd: BorrowedFd<'_>, how: Call, b: &[u8]) -> anyhow::Result<()> {
    let mut done = 0;
    while done < b.len() {
        let n = transfer_out(fd, how, &b[done..]);
        if n < 0 {
            match failed(name_out(how)) {
                Some(e) => return Err(e),
                None => continue,
            }
        }
        done += n as usize;
    }
    Ok(())
}

/// Reads exactly `b.len()` bytes from a byte stream; the peer closing
/// first is an error.
pub(crate) fn take(fd: BorrowedFd<'_>, how: Call, b: &mut [u8]) -> anyhow::Result<()> {
    let mut done = 0;
    while done < b.len() {
        let n = transfer_in(fd, how, &mut b[done..]);
        if n < 0 {
            match failed(name_in(how)) {
                Some(e) => return Err(e),
                None => continue,
            }
        }
        if n == 0 {
            return Err(anyhow!("the peer closed its end"));
        }
        done += n as usize;
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
    loop {
        let n = transfer_in(fd, Call::SendRecv, &mut b);
        if n < 0 {
            match failed("recv") {
                Some(e) => return Err(e),
                None => continue,
            }
        }
        return match n {
            4 => Ok(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
            n => Err(anyhow!("expected a 4-byte datagram, got {n} bytes")),
        };
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
