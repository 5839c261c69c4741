//! Pipes. Backed by rustix.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, OwnedFd};

use rustix::fs::{Mode, OFlags};
use rustix::pipe::PipeFlags;

/// A pipe: (read end, write end), close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?)
}

/// Puts the write end `fd` of a pipe or FIFO in packet mode (`O_DIRECT`):
/// each write of up to [`PIPE_BUF`] bytes becomes one packet, which a read
/// returns whole and alone (a read into a smaller buffer drops the rest of
/// the packet), and writes of several writers never mix inside a packet.
pub fn set_packet_mode(fd: BorrowedFd<'_>) -> io::Result<()> {
    let flags = rustix::fs::fcntl_getfl(fd)?;
    Ok(rustix::fs::fcntl_setfl(fd, flags | OFlags::DIRECT)?)
}

/// Makes the pipe (or FIFO) of end `fd` hold at least `bytes` (the kernel
/// rounds up to a power of two pages, within `fs.pipe-max-size` and the
/// user's pipe page quota). Returns the capacity it has.
pub fn set_capacity(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<usize> {
    rustix::pipe::fcntl_setpipe_size(fd, bytes)?;
    Ok(rustix::pipe::fcntl_getpipe_size(fd)?)
}

/// The most bytes a write to a pipe moves at once (and a packet holds).
pub const PIPE_BUF: usize = 4096;

/// A new, non-blocking, close-on-exec write end for the pipe or FIFO whose
/// end `fd` this process holds, opened through `/proc/self/fd` (so it
/// needs no name): a second writer that exists only as long as it is kept.
pub fn open_writer(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let path = format!("/proc/self/fd/{}", fd.as_raw_fd());
    Ok(rustix::fs::open(
        path.as_str(),
        OFlags::WRONLY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn bytes_written_come_out_of_the_read_end() {
        let (r, w) = pipe().unwrap();
        crate::fd::write_all(w.as_fd(), &[b"hi"]).unwrap();
        let mut b = [0u8; 2];
        assert!(crate::fd::read_exact(r.as_fd(), &mut b).unwrap());
        assert_eq!(&b, b"hi");
        let fl = rustix::io::fcntl_getfd(r.as_fd()).unwrap();
        assert!(fl.contains(rustix::io::FdFlags::CLOEXEC));
    }

    #[test]
    fn a_pipe_grows_to_hold_a_large_message() {
        let (_r, w) = pipe().unwrap();
        assert!(set_capacity(w.as_fd(), 65536 + 8).unwrap() >= 65536 + 8);
    }

    #[test]
    fn packets_stay_whole_and_apart_whoever_writes_them() {
        let (r, w) = pipe().unwrap();
        set_packet_mode(w.as_fd()).unwrap();
        crate::fd::write_all(w.as_fd(), &[b"abc"]).unwrap();
        let second = open_writer(r.as_fd()).unwrap();
        set_packet_mode(second.as_fd()).unwrap();
        crate::fd::write_all(second.as_fd(), &[b"p"]).unwrap();
        drop(second);
        crate::fd::write_all(w.as_fd(), &[&[7u8; PIPE_BUF + 10]]).unwrap();
        let mut b = [0u8; 2 * PIPE_BUF];
        let mut sizes = Vec::new();
        for _ in 0..4 {
            sizes.push(crate::fd::read_some(r.as_fd(), &mut b).unwrap());
        }
        assert_eq!(sizes, [3, 1, PIPE_BUF, 10]);
        // The second writer is gone and the first still open: no EOF yet.
        drop(w);
        assert_eq!(crate::fd::read_some(r.as_fd(), &mut b).unwrap(), 0);
    }
}
