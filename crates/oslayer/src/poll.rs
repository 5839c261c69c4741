//! `poll(2)` over a caller-kept array.
//!
//! Hand-written over libc: the servers keep one `pollfd` array across
//! iterations and rebuild it only when their connection set changes;
//! rustix's `PollFd<'fd>` borrows each descriptor, so such an array could
//! not live in the server beside the descriptors it owns. A stale entry is
//! harmless (the kernel reports `POLLNVAL`, or events of the number's new
//! owner): `poll` touches no memory through a descriptor.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::time::{Duration, Instant};

/// Data to read (or a connection to accept).
pub const IN: i16 = libc::POLLIN;
/// Room to write.
pub const OUT: i16 = libc::POLLOUT;
/// Error condition (reported whether asked or not).
pub const ERR: i16 = libc::POLLERR;
/// Hang-up (reported whether asked or not).
pub const HUP: i16 = libc::POLLHUP;
/// The descriptor is not open (reported whether asked or not).
pub const NVAL: i16 = libc::POLLNVAL;

/// One entry of a poll set: laid out exactly as the kernel's `pollfd`.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct PollFd {
    fd: RawFd,
    /// Events asked for ([`IN`], [`OUT`]).
    pub events: i16,
    /// Events reported by the last [`poll`] (zero before).
    pub revents: i16,
}

const _: () = assert!(std::mem::size_of::<PollFd>() == std::mem::size_of::<libc::pollfd>());

impl PollFd {
    /// An entry asking for `events` on `fd`.
    #[inline]
    pub fn new(fd: BorrowedFd<'_>, events: i16) -> PollFd {
        PollFd {
            fd: fd.as_raw_fd(),
            events,
            revents: 0,
        }
    }

    /// An entry asking whether `fd` is readable ([`IN`]).
    #[inline]
    pub fn readable(fd: BorrowedFd<'_>) -> PollFd {
        PollFd::new(fd, IN)
    }

    /// An entry asking whether `fd` is writable ([`OUT`]).
    #[inline]
    pub fn writable(fd: BorrowedFd<'_>) -> PollFd {
        PollFd::new(fd, OUT)
    }

    /// A placeholder entry that `poll` skips (descriptor -1): keeps an
    /// array's positions when a slot has no descriptor.
    #[inline]
    pub fn unused() -> PollFd {
        PollFd {
            fd: -1,
            events: 0,
            revents: 0,
        }
    }

    /// True when the entry is for `fd`.
    #[inline]
    pub fn is_for(&self, fd: BorrowedFd<'_>) -> bool {
        self.fd == fd.as_raw_fd()
    }
}

/// Waits until `fd` has room for a write (or an error or hang-up to
/// report), at the latest until `by`; `TimedOut` after that.
pub fn wait_writable(fd: BorrowedFd<'_>, by: Instant) -> io::Result<()> {
    loop {
        let left = by.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::ErrorKind::TimedOut.into());
        }
        // Rounded up: a wait of less than a millisecond is not a busy loop.
        let mut p = [PollFd::new(fd, OUT)];
        if poll(&mut p, Some(left + Duration::from_micros(999)))? > 0 {
            return Ok(());
        }
    }
}

/// Polls `fds`, waiting at most `timeout` (`None` waits forever; rounded
/// down to milliseconds). Returns how many entries have events; `EINTR`
/// counts as zero.
#[inline]
pub fn poll(fds: &mut [PollFd], timeout: Option<Duration>) -> io::Result<usize> {
    let ms = match timeout {
        None => -1,
        Some(d) => d.as_millis().min(i32::MAX as u128) as libc::c_int,
    };
    // SAFETY: PollFd has the layout of libc::pollfd (checked above) and fds
    // is a valid, writable slice of them for the duration of the call.
    let r = unsafe {
        libc::poll(
            fds.as_mut_ptr() as *mut libc::pollfd,
            fds.len() as libc::nfds_t,
            ms,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn reports_readable_only_after_a_write() {
        let (r, w) = crate::pipe::pipe().unwrap();
        let mut p = [PollFd::readable(r.as_fd())];
        assert!(p[0].is_for(r.as_fd()));
        assert_eq!(poll(&mut p, Some(Duration::ZERO)).unwrap(), 0);
        assert_eq!(p[0].revents, 0);
        crate::fd::write_all(w.as_fd(), &[b"x"]).unwrap();
        assert_eq!(poll(&mut p, None).unwrap(), 1);
        assert_ne!(p[0].revents & IN, 0);
    }

    #[test]
    fn an_unused_entry_is_skipped() {
        let (r, w) = crate::pipe::pipe().unwrap();
        crate::fd::write_all(w.as_fd(), &[b"x"]).unwrap();
        let mut p = [PollFd::unused(), PollFd::readable(r.as_fd())];
        assert_eq!(poll(&mut p, None).unwrap(), 1);
        assert_eq!(p[0].revents, 0);
        assert_ne!(p[1].revents & IN, 0);
    }

    #[test]
    fn reports_hang_up_of_the_writer() {
        let (r, w) = crate::pipe::pipe().unwrap();
        drop(w);
        let mut p = [PollFd::readable(r.as_fd())];
        assert_eq!(poll(&mut p, Some(Duration::from_secs(5))).unwrap(), 1);
        assert_ne!(p[0].revents & HUP, 0);
    }
}
