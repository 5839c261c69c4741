//! Event counters (`eventfd`). Backed by rustix.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};

use rustix::event::EventfdFlags;

use crate::retry_rustix;

/// A new blocking, close-on-exec eventfd with counter semantics (a read
/// returns the whole count and resets it to zero), starting at zero.
pub fn new() -> io::Result<OwnedFd> {
    Ok(rustix::event::eventfd(0, EventfdFlags::CLOEXEC)?)
}

/// A new non-blocking, close-on-exec eventfd: a write that would overflow
/// its counter fails with `WouldBlock` instead of waiting.
pub fn new_nonblocking() -> io::Result<OwnedFd> {
    Ok(rustix::event::eventfd(
        0,
        EventfdFlags::CLOEXEC | EventfdFlags::NONBLOCK,
    )?)
}

/// Reads an eventfd's counter (blocking while it is zero, unless the
/// descriptor is non-blocking) and resets it; retried on `EINTR`.
#[inline]
pub fn read(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut v = [0u8; 8];
    let n = retry_rustix(|| rustix::io::read(fd, &mut v))?;
    if n != v.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "short read from an eventfd",
        ));
    }
    Ok(u64::from_ne_bytes(v))
}

/// Adds `v` to an eventfd's counter, waking its reader; retried on `EINTR`.
#[inline]
pub fn write(fd: BorrowedFd<'_>, v: u64) -> io::Result<()> {
    let n = retry_rustix(|| rustix::io::write(fd, &v.to_ne_bytes()))?;
    if n != 8 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "short write to an eventfd",
        ));
    }
    Ok(())
}

/// Adds `v` to an eventfd's counter like [`write()`], but once: a signal
/// that interrupts it is `ErrorKind::Interrupted`, not retried. (A write
/// blocks while the counter would overflow; see
/// [`crate::signal::install_interrupter`] for a way to end that wait.)
#[inline]
pub fn write_once(fd: BorrowedFd<'_>, v: u64) -> io::Result<()> {
    let n = rustix::io::write(fd, &v.to_ne_bytes())?;
    if n != 8 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "short write to an eventfd",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn writes_add_up_and_a_read_resets() {
        let e = new().unwrap();
        write(e.as_fd(), 2).unwrap();
        write(e.as_fd(), 3).unwrap();
        assert_eq!(read(e.as_fd()).unwrap(), 5);
        crate::fd::set_nonblocking(e.as_fd(), true).unwrap();
        assert_eq!(
            read(e.as_fd()).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }

    #[test]
    fn a_write_blocked_on_a_full_counter_is_interrupted_once() {
        let e = new().unwrap();
        write_once(e.as_fd(), 1).unwrap();
        assert_eq!(read(e.as_fd()).unwrap(), 1);
        // One below the maximum: a write of 1 more would overflow, and blocks.
        write(e.as_fd(), u64::MAX - 1).unwrap();
        let sig = crate::signal::rt(12);
        assert!(crate::signal::install_interrupter(sig).unwrap());
        let (tid_tx, tid) = std::sync::mpsc::channel();
        let (done_tx, done) = std::sync::mpsc::channel();
        let fd = e.try_clone().unwrap();
        std::thread::spawn(move || {
            tid_tx.send(crate::thread::gettid()).unwrap();
            let _ = done_tx.send(write_once(fd.as_fd(), 1).map_err(|e| e.kind()));
        });
        let tid = tid.recv().unwrap();
        let got = loop {
            crate::signal::send_to_thread(tid, sig).unwrap();
            if let Ok(got) = done.recv_timeout(std::time::Duration::from_millis(20)) {
                break got;
            }
        };
        assert_eq!(got, Err(io::ErrorKind::Interrupted));
        assert_eq!(read(e.as_fd()).unwrap(), u64::MAX - 1);
    }
}
