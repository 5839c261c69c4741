//! Pipes. Backed by rustix.

use std::io;
use std::os::fd::OwnedFd;

use rustix::pipe::PipeFlags;

/// A pipe: (read end, write end), close-on-exec.
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::pipe::pipe_with(PipeFlags::CLOEXEC)?)
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
}
