//! `ioctl` with a buffer the kernel reads and writes.
//!
//! Hand-written over libc: the request numbers are computed at run time
//! (msgpass's fuse endpoints encode the buffer size in them), which
//! rustix's typed `Ioctl` trait does not model without unsafe code at
//! every caller.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

use crate::check;

/// The argument size encoded in a Linux ioctl request number
/// (`_IOC_SIZE`).
#[inline]
pub const fn encoded_size(cmd: u32) -> usize {
    ((cmd >> 16) & 0x3fff) as usize
}

/// `ioctl(fd, cmd, buf)` for a request whose encoded size ([`encoded_size`])
/// fits `buf`: the kernel reads and writes at most that many bytes. Not
/// retried on `EINTR` (an interrupted request's outcome is the caller's to
/// judge).
///
/// # Errors
/// `InvalidInput` when `cmd` encodes no direction or size (a legacy
/// request, whose argument size the kernel does not say) or a size larger
/// than `buf`.
#[inline]
pub fn read_write(fd: BorrowedFd<'_>, cmd: u32, buf: &mut [u8]) -> io::Result<()> {
    let size = encoded_size(cmd);
    if cmd >> 30 == 0 || size == 0 || size > buf.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "ioctl request encodes a larger argument than the buffer",
        ));
    }
    // SAFETY: `buf` is valid for reads and writes of its whole length, which
    // covers the size encoded in `cmd` (checked; the kernel touches no more
    // for a request with an encoded size).
    check(unsafe { libc::ioctl(fd.as_raw_fd(), cmd as libc::c_ulong, buf.as_mut_ptr()) })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn a_request_on_a_pipe_fails_cleanly_and_an_oversized_one_is_refused() {
        let (r, _w) = crate::pipe::pipe().unwrap();
        // _IOWR('Q', 1, 16): a pipe knows no such request.
        let cmd = (3 << 30) | (16 << 16) | ((b'Q' as u32) << 8) | 1;
        assert_eq!(encoded_size(cmd), 16);
        let mut buf = [0u8; 16];
        let e = read_write(r.as_fd(), cmd, &mut buf).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTTY));
        let e = read_write(r.as_fd(), cmd, &mut buf[..8]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        // FIONREAD encodes no size: refused rather than trusted.
        let e = read_write(r.as_fd(), libc::FIONREAD as u32, &mut buf).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
