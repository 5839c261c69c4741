//! POSIX message queues. On Linux a queue descriptor is an ordinary,
//! pollable file descriptor.
//!
//! Hand-written over libc: rustix has no message queues, and nix's take its
//! own owning `MqdT`, which cannot be lent as a `BorrowedFd` per call. The
//! glibc functions are thin system-call wrappers.

use std::ffi::CStr;
use std::io;
use std::mem::zeroed;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr;
use std::time::Duration;

use crate::{check, check_size, retry};

/// How a queue is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Receive end (`O_RDONLY`).
    Read,
    /// Send end (`O_WRONLY`).
    Write,
    /// Both ends on one descriptor (`O_RDWR`).
    ReadWrite,
}

/// Opens queue `name` (like `/msgbench.1.2.c2s`) for `access`, close-on-exec,
/// non-blocking when `nonblocking`. With `create`, as `(max messages,
/// message size)`, the queue is created exclusively with mode 0600
/// (`EEXIST` if the name is taken).
pub fn open(
    name: &CStr,
    access: Access,
    nonblocking: bool,
    create: Option<(usize, usize)>,
) -> io::Result<OwnedFd> {
    let mut oflag = libc::O_CLOEXEC
        | match access {
            Access::Read => libc::O_RDONLY,
            Access::Write => libc::O_WRONLY,
            Access::ReadWrite => libc::O_RDWR,
        };
    if nonblocking {
        oflag |= libc::O_NONBLOCK;
    }
    let fd = match create {
        Some((maxmsg, msgsize)) => {
            // SAFETY: mq_attr is plain old data; all-zero is a valid value.
            let mut attr: libc::mq_attr = unsafe { zeroed() };
            attr.mq_maxmsg = maxmsg as libc::c_long;
            attr.mq_msgsize = msgsize as libc::c_long;
            let mode: libc::mode_t = 0o600;
            // SAFETY: name is NUL-terminated; with O_CREAT mq_open reads a
            // mode_t and a pointer to an mq_attr that lives for the call.
            check(unsafe {
                libc::mq_open(
                    name.as_ptr(),
                    oflag | libc::O_CREAT | libc::O_EXCL,
                    mode,
                    &attr as *const libc::mq_attr,
                )
            })?
        }
        // SAFETY: name is NUL-terminated; without O_CREAT no more arguments
        // are read.
        None => check(unsafe { libc::mq_open(name.as_ptr(), oflag) })?,
    };
    // SAFETY: fd was just returned by mq_open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Removes queue `name`; the queue itself lives on until its last
/// descriptor is closed.
pub fn unlink(name: &CStr) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    check(unsafe { libc::mq_unlink(name.as_ptr()) })?;
    Ok(())
}

/// Sends `msg` as one message of priority 0 (retried on `EINTR`).
#[inline]
pub fn send(fd: BorrowedFd<'_>, msg: &[u8]) -> io::Result<()> {
    send_priority(fd, msg, 0)
}

/// Sends `msg` as one message of priority `prio` (retried on `EINTR`).
#[inline]
pub fn send_priority(fd: BorrowedFd<'_>, msg: &[u8], prio: u32) -> io::Result<()> {
    retry(|| {
        // SAFETY: msg is valid for reads of msg.len() bytes.
        check(unsafe {
            libc::mq_send(
                fd.as_raw_fd(),
                msg.as_ptr() as *const libc::c_char,
                msg.len(),
                prio,
            )
        })
    })?;
    Ok(())
}

/// Receives the oldest message into `buf` (which must hold the queue's
/// message size, or `EMSGSIZE`) and returns its length (retried on
/// `EINTR`).
#[inline]
pub fn receive(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    retry(|| {
        // SAFETY: buf is valid for writes of buf.len() bytes; a null
        // priority pointer is allowed.
        check_size(unsafe {
            libc::mq_receive(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_char,
                buf.len(),
                ptr::null_mut(),
            )
        })
    })
}

/// [`receive`], giving up with `ETIMEDOUT` (`ErrorKind::TimedOut`) when no
/// message arrives within `timeout`. The deadline is absolute, on
/// `CLOCK_REALTIME` (a vDSO read), computed once: `EINTR` retries keep it.
#[inline]
pub fn timed_receive(fd: BorrowedFd<'_>, buf: &mut [u8], timeout: Duration) -> io::Result<usize> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let at = now + timeout;
    let ts = libc::timespec {
        tv_sec: at.as_secs() as libc::time_t,
        tv_nsec: at.subsec_nanos() as libc::c_long,
    };
    retry(|| {
        // SAFETY: buf is valid for writes of buf.len() bytes; ts is a valid
        // timespec; a null priority pointer is allowed.
        check_size(unsafe {
            libc::mq_timedreceive(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_char,
                buf.len(),
                ptr::null_mut(),
                &ts,
            )
        })
    })
}

/// The message size of the queue behind `fd`.
pub fn msgsize(fd: BorrowedFd<'_>) -> io::Result<usize> {
    // SAFETY: mq_attr is plain old data; all-zero is a valid value.
    let mut attr: libc::mq_attr = unsafe { zeroed() };
    // SAFETY: attr is valid for writes for the duration of the call.
    check(unsafe { libc::mq_getattr(fd.as_raw_fd(), &mut attr) })?;
    Ok(attr.mq_msgsize.max(0) as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_message_goes_through_and_an_empty_queue_times_out() {
        let name = std::ffi::CString::new(format!("/oslayer-test-{}", std::process::id())).unwrap();
        let rx = open(&name, Access::Read, false, Some((1, 64))).unwrap();
        assert_eq!(
            open(&name, Access::Read, false, Some((1, 64)))
                .unwrap_err()
                .kind(),
            io::ErrorKind::AlreadyExists
        );
        let tx = open(&name, Access::Write, true, None).unwrap();
        unlink(&name).unwrap();
        assert_eq!(msgsize(rx.as_fd()).unwrap(), 64);
        send(tx.as_fd(), b"ping").unwrap();
        // A full queue refuses a non-blocking sender.
        assert_eq!(
            send(tx.as_fd(), b"x").unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        let mut buf = [0u8; 64];
        assert_eq!(receive(rx.as_fd(), &mut buf).unwrap(), 4);
        assert_eq!(&buf[..4], b"ping");
        let e = timed_receive(rx.as_fd(), &mut buf, Duration::from_millis(1)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
    }

    #[test]
    fn one_read_write_descriptor_sends_to_itself() {
        let name =
            std::ffi::CString::new(format!("/oslayer-test-rw-{}", std::process::id())).unwrap();
        let q = open(&name, Access::ReadWrite, false, Some((1, 16))).unwrap();
        unlink(&name).unwrap();
        send_priority(q.as_fd(), b"self", 1).unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(
            timed_receive(q.as_fd(), &mut buf, Duration::from_secs(5)).unwrap(),
            4
        );
        assert_eq!(&buf[..4], b"self");
    }
}
