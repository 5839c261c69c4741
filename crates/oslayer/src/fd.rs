//! Reading and writing descriptors: `read`, `writev`, `O_NONBLOCK`; a
//! descriptor placed at a fixed number for an exec.
//!
//! Backed by rustix (raw system calls, no allocation), and libc for
//! `dup2` onto a number nothing owns (rustix's wants an `OwnedFd`). `write_all` builds
//! its iovecs on the stack: it is on every stream message's path.

use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use rustix::fs::OFlags;

use crate::{check, retry_rustix};

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
    all_parts(parts, |iov| {
        // One part (a staged small message) goes with a plain `write`,
        // which costs the kernel less than `writev`.
        match iov.len() {
            1 => retry_rustix(|| rustix::io::write(fd, &iov[0])),
            _ => retry_rustix(|| rustix::io::writev(fd, iov)),
        }
    })
}

/// [`write_all`] on a non-blocking descriptor, for a peer that must not
/// hold the writer: while the descriptor is full, waits for room for at
/// most `limit` in all (counted from the first time it is full, so a write
/// that goes through at once reads no clock), then gives up with
/// `TimedOut` (part of the parts may be written).
pub fn write_all_within(fd: BorrowedFd<'_>, parts: &[&[u8]], limit: Duration) -> io::Result<()> {
    let mut by = None;
    all_parts(parts, |iov| loop {
        let r = match iov.len() {
            1 => retry_rustix(|| rustix::io::write(fd, &iov[0])),
            _ => retry_rustix(|| rustix::io::writev(fd, iov)),
        };
        match r {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let by = *by.get_or_insert_with(|| Instant::now() + limit);
                crate::poll::wait_writable(fd, by)?
            }
            r => return r,
        }
    })
}

/// Sends `parts` in order through `send`, which takes the parts left (as
/// iovecs) and returns how many bytes went, until all went.
///
/// # Panics
/// With more than [`MAX_PARTS`] parts (a caller's bug).
#[inline]
pub(crate) fn all_parts(
    parts: &[&[u8]],
    mut send: impl FnMut(&[IoSlice<'_>]) -> io::Result<usize>,
) -> io::Result<()> {
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
        let mut written = send(&iov[..n])?;
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

/// One `read` into `buf` of what is there now, without blocking, while
/// the descriptor stays blocking for its other readers: a `WouldBlock`
/// error when nothing is. One `preadv2(RWF_NOWAIT)` where the kernel takes
/// it for this kind of file (pipes since Linux 5.x); else a zero-timeout
/// `poll`, then a `read` (a second call, which made a 64 KiB message over
/// a pipe a third slower when it is read a packet at a time).
pub fn read_now(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    use std::os::fd::AsRawFd;
    use std::sync::atomic::{AtomicBool, Ordering};
    /// False once the kernel refused `RWF_NOWAIT` (for any file: the
    /// callers read one kind each).
    static NOWAIT: AtomicBool = AtomicBool::new(true);
    while NOWAIT.load(Ordering::Relaxed) {
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: iov describes `buf`, valid for writes of its length for
        // the duration of the call; offset -1 reads at the current
        // position (a pipe has no other).
        let r = unsafe { libc::preadv2(fd.as_raw_fd(), &iov, 1, -1, libc::RWF_NOWAIT) };
        if r >= 0 {
            return Ok(r as usize);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::EOPNOTSUPP | libc::EINVAL | libc::ENOSYS) => {
                NOWAIT.store(false, Ordering::Relaxed)
            }
            _ => return Err(e),
        }
    }
    let mut p = [crate::poll::PollFd::readable(fd)];
    if crate::poll::poll(&mut p, Some(std::time::Duration::ZERO))? == 0 {
        return Err(io::ErrorKind::WouldBlock.into());
    }
    read_some(fd, buf)
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

/// One write of `buf` that does not wait (`pwritev2` with `RWF_NOWAIT`,
/// at the current position): `Ok(None)` when the file has no room now (a
/// full pipe), else the bytes written. A pipe takes a write of at most
/// `PIPE_BUF` bytes whole or not at all. Retried on `EINTR`.
#[inline]
pub fn write_now(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<Option<usize>> {
    let iov = [IoSlice::new(buf)];
    match retry_rustix(|| {
        rustix::io::pwritev2(fd, &iov, u64::MAX, rustix::io::ReadWriteFlags::NOWAIT)
    }) {
        Ok(n) => Ok(Some(n)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
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

/// Makes `fd` descriptor number `target` with close-on-exec clear, so
/// that the next exec hands it over (socket activation passes a listening
/// socket as fd 3 this way): `dup2(fd, target)`, or, when `fd` is
/// `target` already, only clearing its close-on-exec flag.
///
/// Async-signal-safe (one raw system call, no allocation; an error is a
/// raw OS error): meant for a child between fork and exec (`pre_exec`).
///
/// # Safety
///
/// Whatever descriptor `target` was is closed and replaced: nothing in
/// this process may own or use descriptor `target` afterwards (I/O
/// safety). In a child between fork and exec, where only the exec
/// follows, that holds.
pub unsafe fn install_as(fd: BorrowedFd<'_>, target: RawFd) -> io::Result<()> {
    if fd.as_raw_fd() == target {
        return Ok(rustix::io::fcntl_setfd(fd, rustix::io::FdFlags::empty())?);
    }
    // SAFETY: dup2 takes two integers; the caller gives up descriptor
    // `target` (see # Safety), and `fd` is open for the borrow.
    // dup2 leaves the new descriptor without close-on-exec.
    check(unsafe { libc::dup2(fd.as_raw_fd(), target) })?;
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

    #[test]
    fn a_full_pipe_is_waited_for_until_the_deadline_only() {
        use std::os::fd::AsFd;
        let (r, w) = crate::pipe::pipe().unwrap();
        set_nonblocking(w.as_fd(), true).unwrap();
        let big = vec![7u8; 1 << 20];
        let start = Instant::now();
        let e = write_all_within(w.as_fd(), &[&big], Duration::from_millis(50)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(start.elapsed() >= Duration::from_millis(50));
        // Room again: a small write goes through.
        let mut sink = vec![0u8; 1 << 20];
        while read_now(r.as_fd(), &mut sink).is_ok() {}
        write_all_within(w.as_fd(), &[b"ok"], Duration::ZERO).unwrap();
    }

    #[test]
    fn read_now_never_waits() {
        use std::os::fd::AsFd;
        let (r, w) = crate::pipe::pipe().unwrap();
        let mut b = [0u8; 4];
        let e = read_now(r.as_fd(), &mut b).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
        write_all(w.as_fd(), &[b"abc"]).unwrap();
        assert_eq!(read_now(r.as_fd(), &mut b).unwrap(), 3);
    }

    /// Whether descriptor `fd` has close-on-exec set.
    fn cloexec(fd: BorrowedFd<'_>) -> bool {
        rustix::io::fcntl_getfd(fd)
            .unwrap()
            .contains(rustix::io::FdFlags::CLOEXEC)
    }

    #[test]
    fn install_as_moves_a_descriptor_onto_a_number_and_keeps_it_across_exec() {
        use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
        let (r, w) = crate::pipe::pipe().unwrap();
        // A number we own: nothing else can be handed it while we hold it.
        let (_r2, spare) = crate::pipe::pipe().unwrap();
        let target = spare.into_raw_fd();
        // SAFETY: `target` is ours (taken out of its OwnedFd above) and is
        // owned again, by `moved`, right after.
        unsafe { install_as(w.as_fd(), target) }.unwrap();
        // SAFETY: `target` is open (dup2 made it) and owned by nothing else.
        let moved = unsafe { OwnedFd::from_raw_fd(target) };
        assert!(cloexec(w.as_fd()), "the original keeps its flag");
        assert!(!cloexec(moved.as_fd()), "the copy is inherited by an exec");
        assert_eq!(write_some(moved.as_fd(), b"x").unwrap(), 1);
        let mut b = [0u8; 1];
        assert_eq!(read_some(r.as_fd(), &mut b).unwrap(), 1);

        rustix::io::fcntl_setfd(&moved, rustix::io::FdFlags::CLOEXEC).unwrap();
        // SAFETY: `target` is `moved` itself: nothing is replaced.
        unsafe { install_as(moved.as_fd(), target) }.unwrap();
        assert!(
            !cloexec(moved.as_fd()),
            "already there: only the flag cleared"
        );
    }

    #[test]
    fn install_as_a_negative_number_is_ebadf() {
        let (_r, w) = crate::pipe::pipe().unwrap();
        // SAFETY: -1 is no descriptor: nothing is closed.
        let e = unsafe { install_as(w.as_fd(), -1) }.unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::EBADF));
    }
}
