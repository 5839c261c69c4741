//! The one system-call layer of msgpass and msgbench.
//!
//! Maintained crates first (rustix, nix); what they lack is wrapped here
//! once, one module per kernel interface, as safe functions over
//! `OwnedFd`/`BorrowedFd`. Nothing above this crate calls a `libc`
//! function, except where a measurement needs the raw call itself and the
//! line says so (`// libc: <why>`); msgbench's `tests/house_rules.rs`
//! checks. Functions a child may call between fork and exec say they are
//! async-signal-safe (one raw system call, no allocation).
//!
//! Every function returns `std::io::Result` (callers add context), retries
//! `EINTR` where the old wrappers did (each says so), and allocates nothing
//! on the per-message paths (read, write, send, receive, poll, futex,
//! message queues, eventfd). Which crate backs a module, and why when it is
//! hand-written, is said at the top of each module.

pub mod clock;
pub mod cpu;
pub mod epoll;
pub mod eventfd;
pub mod fd;
pub mod fifo;
pub mod fs;
pub mod fuse;
pub mod futex;
pub mod ids;
pub mod ioctl;
pub mod mem;
pub mod mman;
pub mod mount;
pub mod mqueue;
pub mod netns;
pub mod packet;
pub mod pidfd;
pub mod pipe;
pub mod pmutex;
pub mod poll;
pub mod prio;
pub mod process;
pub mod pthread;
pub mod random;
pub mod rlimit;
pub mod sched;
pub mod sem;
pub mod signal;
pub mod socket;
pub mod system;
pub mod sysv_msg;
pub mod thread;

use std::io;

/// Retries `f` while it fails with `EINTR`.
#[inline]
pub(crate) fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Converts a libc `-1` return into the current `errno`.
#[inline]
pub(crate) fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Same as [`check`] for calls returning `ssize_t`.
#[inline]
pub(crate) fn check_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// A rustix call's error as an `io::Error`, retried on `EINTR`.
#[inline]
pub(crate) fn retry_rustix<T>(mut f: impl FnMut() -> rustix::io::Result<T>) -> io::Result<T> {
    Ok(rustix::io::retry_on_intr(&mut f)?)
}
