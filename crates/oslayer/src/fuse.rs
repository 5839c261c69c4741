//! The FUSE device. Backed by rustix.

use std::io;
use std::os::fd::OwnedFd;

use rustix::fs::{Mode, OFlags};

/// Opens `/dev/fuse` read-write, close-on-exec (one new FUSE connection,
/// to be named in a `fd=` mount option).
pub fn open_device() -> io::Result<OwnedFd> {
    Ok(rustix::fs::open(
        "/dev/fuse",
        OFlags::RDWR | OFlags::CLOEXEC,
        Mode::empty(),
    )?)
}

#[cfg(test)]
mod tests {
    #[test]
    fn opens_the_device_when_there_is_one() {
        match super::open_device() {
            Ok(_) => {}
            Err(e) => assert!(
                matches!(
                    e.kind(),
                    std::io::ErrorKind::NotFound | std::io::ErrorKind::PermissionDenied
                ),
                "{e}"
            ),
        }
    }
}
