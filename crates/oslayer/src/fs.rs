//! File metadata and locks: `chmod`, `fstat` size, `flock`. Backed by
//! rustix.

use std::io;
use std::os::fd::BorrowedFd;
use std::path::Path;

use rustix::fs::{FlockOperation, Mode};

/// Changes the mode (permission bits) of `path`.
pub fn chmod(path: &Path, mode: u32) -> io::Result<()> {
    Ok(rustix::fs::chmod(path, Mode::from_raw_mode(mode))?)
}

/// Size in bytes of the file behind `fd`.
pub fn file_size(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let st = rustix::fs::fstat(fd)?;
    Ok(st.st_size.max(0) as usize)
}

/// Takes an exclusive `flock` on `fd` without waiting: `Ok(false)` when
/// another open file description holds a lock on the file.
pub fn try_lock_exclusive(fd: BorrowedFd<'_>) -> io::Result<bool> {
    match rustix::fs::flock(fd, FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(true),
        Err(rustix::io::Errno::WOULDBLOCK) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::os::unix::fs::PermissionsExt;

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("oslayer-fs-{}-{name}", std::process::id()))
    }

    #[test]
    fn chmod_sets_exact_mode_and_size_is_seen() {
        let p = temp("chmod");
        std::fs::write(&p, b"12345").unwrap();
        chmod(&p, 0o640).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o640
        );
        let f = std::fs::File::open(&p).unwrap();
        assert_eq!(file_size(f.as_fd()).unwrap(), 5);
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn a_second_exclusive_lock_is_refused() {
        let p = temp("lock");
        std::fs::write(&p, b"").unwrap();
        let a = std::fs::File::open(&p).unwrap();
        let b = std::fs::File::open(&p).unwrap();
        assert!(try_lock_exclusive(a.as_fd()).unwrap());
        assert!(!try_lock_exclusive(b.as_fd()).unwrap());
        drop(a);
        assert!(try_lock_exclusive(b.as_fd()).unwrap());
        std::fs::remove_file(&p).unwrap();
    }
}
