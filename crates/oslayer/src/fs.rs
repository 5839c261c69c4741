//! File metadata and locks: `chmod`, `fstat` size and owner, `flock`;
//! directory-relative opens and removals (`openat`, `unlinkat`), which a
//! path swapped for a symbolic link cannot redirect. Backed by rustix.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};

/// Opens the directory `name`, relative to `dir` when given (else an
/// absolute path, or relative to the current directory), read-only and
/// close-on-exec. A symbolic link as the last component is refused
/// (`O_NOFOLLOW`), and so is anything but a directory: both are `ENOTDIR`.
pub fn open_dir_at(dir: Option<BorrowedFd<'_>>, name: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let dir = dir.unwrap_or(rustix::fs::CWD);
    Ok(rustix::fs::openat(dir, name, flags, Mode::empty())?)
}

/// Removes `name` (anything but a directory) from the directory `dir`
/// (`unlinkat`): a symbolic link is removed itself, never followed.
pub fn unlink_at(dir: BorrowedFd<'_>, name: &Path) -> io::Result<()> {
    Ok(rustix::fs::unlinkat(dir, name, AtFlags::empty())?)
}

/// Removes the empty directory `name` from the directory `dir`
/// (`unlinkat` with `AT_REMOVEDIR`).
pub fn remove_dir_at(dir: BorrowedFd<'_>, name: &Path) -> io::Result<()> {
    Ok(rustix::fs::unlinkat(dir, name, AtFlags::REMOVEDIR)?)
}

/// Owner uid and mode bits (type and permissions) of the file behind `fd`.
pub fn owner_and_mode(fd: BorrowedFd<'_>) -> io::Result<(u32, u32)> {
    let st = rustix::fs::fstat(fd)?;
    Ok((st.st_uid, st.st_mode))
}

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
    fn open_dir_at_refuses_a_symlink_and_a_file() {
        let d = temp("opendir");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir(&d).unwrap();
        let fd = open_dir_at(None, &d).unwrap();
        std::fs::write(d.join("f"), b"").unwrap();
        std::os::unix::fs::symlink("/", d.join("l")).unwrap();
        let e = open_dir_at(Some(fd.as_fd()), Path::new("l")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR), "{e}");
        let e = open_dir_at(Some(fd.as_fd()), Path::new("f")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTDIR), "{e}");
        let (uid, mode) = owner_and_mode(fd.as_fd()).unwrap();
        assert_eq!(uid, crate::ids::euid());
        assert_eq!(mode & libc::S_IFMT, libc::S_IFDIR);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn removals_stay_in_the_opened_directory() {
        let d = temp("unlinkat");
        let moved = temp("unlinkat-moved");
        let _ = std::fs::remove_dir_all(&d);
        let _ = std::fs::remove_dir_all(&moved);
        std::fs::create_dir(&d).unwrap();
        let fd = open_dir_at(None, &d).unwrap();
        std::fs::write(d.join("f"), b"").unwrap();
        std::fs::create_dir(d.join("sub")).unwrap();
        std::fs::write(d.join("sub/x"), b"").unwrap();
        // The path is swapped for a symbolic link to another directory
        // holding the same names: removals still act on the opened one.
        std::fs::rename(&d, &moved).unwrap();
        std::fs::create_dir(d.with_extension("decoy")).unwrap();
        std::fs::write(d.with_extension("decoy").join("f"), b"").unwrap();
        std::os::unix::fs::symlink(d.with_extension("decoy"), &d).unwrap();
        unlink_at(fd.as_fd(), Path::new("f")).unwrap();
        assert!(!moved.join("f").exists());
        assert!(d.with_extension("decoy").join("f").exists());
        let e = remove_dir_at(fd.as_fd(), Path::new("sub")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOTEMPTY), "{e}");
        std::fs::remove_file(moved.join("sub/x")).unwrap();
        remove_dir_at(fd.as_fd(), Path::new("sub")).unwrap();
        assert!(!moved.join("sub").exists());
        std::fs::remove_file(&d).unwrap();
        std::fs::remove_dir_all(d.with_extension("decoy")).unwrap();
        std::fs::remove_dir_all(&moved).unwrap();
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
