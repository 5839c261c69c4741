//! Reading and writing descriptors: `read`, `writev`, `O_NONBLOCK`.
//!
//! Backed by rustix (raw system calls, no allocation). `write_all` builds
//! its iovecs on the stack: it is on every stream message's path.

use std::io::{self, IoSlice};
use std::os::fd::BorrowedFd;

use rustix::fs::OFlags;

use crate::retry_rustix;

/// Most parts [`write_all`] and [`write_vectored`] take.
pub const MAX_PARTS: usize = 4;

/// One `read` into `buf`, retried on `EINTR`; `Ok(0)` is end of file.
#[inline]
pub fn read_some(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    retry_rustix(|| rustix::io::read(fd, &mut *buf))
}

/// One `write` of `buf` (not `writev`: the floors time exactly this
/// call), retried on `EINTR`; returns the bytes written (maybe fewer).
#[inline]
pub fn write_some(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    retry_rustix(|| rustix::io::write(fd, buf))
}

/// Fills `buf` from a stream. Returns `false` on end of file before the
/// first byte; end of file in the middle is `UnexpectedEof`.
#[inline]
pub fn read_exact(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        let n = read_some(fd, &mut buf[got..])?;
        if n == 0 {
            return if got == 0 {
                Ok(false)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        got += n;
    }
    Ok(true)
}

/// Writes all of `parts` (at most [`MAX_PARTS`]), in order, retrying short
/// writes and `EINTR`: one `write` (one part) or `writev` when the
/// descriptor takes everything at once. Allocates nothing.
///
/// # Panics
/// With more than [`MAX_PARTS`] parts (a caller's bug).
#[inline]
pub fn write_all(fd: BorrowedFd<'_>, parts: &[&[u8]]) -> io::Result<()> {
    assert!(parts.len() <= MAX_PARTS, "at most {MAX_PARTS} parts");
    // What is left to write: parts[first][offset..], then the later parts.
    let (mut first, mut offset) = (0, 0);
    loop {
        let mut iov = [IoSlice::new(&[]); MAX_PARTS];
        let mut n = 0;
        for (k, p) in parts[first..].iter().enumerate() {
            let p = if k == 0 { &p[offset..] } else { p };
            if !p.is_empty() {
                iov[n] = IoSlice::new(p);
                n += 1;
            }
        }
        if n == 0 {
            return Ok(());
        }
        // One part (a staged small message) goes with a plain `write`,
        // which costs the kernel less than `writev`.
        let mut written = match n {
            1 => retry_rustix(|| rustix::io::write(fd, &iov[0]))?,
            _ => retry_rustix(|| rustix::io::writev(fd, &iov[..n]))?,
        };
        while written > 0 {
            let left = parts[first].len() - offset;
            if written >= left {
                written -= left;
                first += 1;
                offset = 0;
            } else {
                offset += written;
                written = 0;
            }
        }
    }
}

/// One `writev` of `parts` (at most [`MAX_PARTS`]), retried on `EINTR`;
/// returns how many bytes were written. For descriptors that take a write
/// whole or not at all (`/dev/fuse`).
///
/// # Panics
/// With more than [`MAX_PARTS`] parts (a caller's bug).
#[inline]
pub fn write_vectored(fd: BorrowedFd<'_>, parts: &[&[u8]]) -> io::Result<usize> {
    assert!(parts.len() <= MAX_PARTS, "at most {MAX_PARTS} parts");
    let mut iov = [IoSlice::new(&[]); MAX_PARTS];
    for (v, p) in iov.iter_mut().zip(parts) {
        *v = IoSlice::new(p);
    }
    retry_rustix(|| rustix::io::writev(fd, &iov[..parts.len()]))
}

/// Sets or clears `O_NONBLOCK` on `fd` (no second call when it is already
/// as asked).
pub fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    let new = if on {
        flags | OFlags::NONBLOCK
    } else {
        flags - OFlags::NONBLOCK
    };
    if new != flags {
        rustix::fs::fcntl_setfl(fd, new)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {

    #[test]
    fn write_some_then_read_some_move_the_bytes() {
        use std::os::fd::AsFd;
        let (r, w) = crate::pipe::pipe().unwrap();
        assert_eq!(write_some(w.as_fd(), b"abc").unwrap(), 3);
        let mut b = [0u8; 8];
        assert_eq!(read_some(r.as_fd(), &mut b).unwrap(), 3);
        assert_eq!(&b[..3], b"abc");
    }
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn write_all_then_read_exact_round_trips_parts() {
        let (r, w) = crate::pipe::pipe().unwrap();
        write_all(w.as_fd(), &[b"ab", b"", b"cde", b"f"]).unwrap();
        let mut buf = [0u8; 6];
        assert!(read_exact(r.as_fd(), &mut buf).unwrap());
        assert_eq!(&buf, b"abcdef");
    }

    #[test]
    fn read_exact_tells_eof_before_and_inside_a_message() {
        let (r, w) = crate::pipe::pipe().unwrap();
        write_all(w.as_fd(), &[b"xy"]).unwrap();
        drop(w);
        let mut buf = [0u8; 4];
        let e = read_exact(r.as_fd(), &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::UnexpectedEof);
        assert!(!read_exact(r.as_fd(), &mut buf).unwrap());
    }

    #[test]
    fn read_some_and_write_vectored() {
        let (r, w) = crate::pipe::pipe().unwrap();
        assert_eq!(write_vectored(w.as_fd(), &[b"12", b"345"]).unwrap(), 5);
        let mut buf = [0u8; 16];
        assert_eq!(read_some(r.as_fd(), &mut buf).unwrap(), 5);
        assert_eq!(&buf[..5], b"12345");
    }

    #[test]
    fn set_nonblocking_makes_an_empty_read_would_block() {
        let (r, _w) = crate::pipe::pipe().unwrap();
        set_nonblocking(r.as_fd(), true).unwrap();
        let e = read_some(r.as_fd(), &mut [0u8; 1]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        set_nonblocking(r.as_fd(), false).unwrap();
        assert!(!rustix::fs::fcntl_getfl(r.as_fd())
            .unwrap()
            .contains(OFlags::NONBLOCK));
    }
}
