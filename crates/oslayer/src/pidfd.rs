//! Process descriptors (`pidfd_open`, `pidfd_getfd`). Backed by rustix.

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd, RawFd};

use rustix::process::{PidfdFlags, PidfdGetfdFlags};

/// A close-on-exec pidfd for this process (its thread-group leader).
pub fn pidfd_self() -> io::Result<OwnedFd> {
    Ok(rustix::process::pidfd_open(
        rustix::process::getpid(),
        PidfdFlags::empty(),
    )?)
}

/// A close-on-exec pidfd for process `pid` (`ESRCH` when there is none).
pub fn open(pid: u32) -> io::Result<OwnedFd> {
    let pid = i32::try_from(pid)
        .ok()
        .and_then(rustix::process::Pid::from_raw)
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    Ok(rustix::process::pidfd_open(pid, PidfdFlags::empty())?)
}

/// True once the process behind `pidfd` has exited (its pidfd polls
/// readable); never waits.
pub fn exited(pidfd: BorrowedFd<'_>) -> bool {
    let mut p = [crate::poll::PollFd::readable(pidfd)];
    crate::poll::poll(&mut p, Some(std::time::Duration::ZERO)).unwrap_or(0) > 0
}

/// Duplicates descriptor number `fd` *of the process behind `pidfd`* (a
/// number in that process's table, hence a raw number) into this one,
/// close-on-exec, like receiving it with `SCM_RIGHTS`. Needs ptrace access
/// to that process (same user, or `CAP_SYS_PTRACE`; Yama may restrict it):
/// `EPERM` otherwise. Works for descriptors `SCM_RIGHTS` refuses
/// (io_uring).
pub fn getfd(pidfd: BorrowedFd<'_>, fd: RawFd) -> io::Result<OwnedFd> {
    Ok(rustix::process::pidfd_getfd(
        pidfd,
        fd,
        PidfdGetfdFlags::empty(),
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::{AsFd, AsRawFd};

    #[test]
    fn a_pidfd_tells_when_its_process_exits() {
        let mut child = std::process::Command::new("sleep")
            .arg("0.05")
            .spawn()
            .expect("sleep");
        let fd = open(child.id()).expect("pidfd");
        assert!(!exited(fd.as_fd()));
        child.wait().expect("wait");
        assert!(exited(fd.as_fd()));
        assert!(open(u32::MAX).is_err());
    }

    #[test]
    fn getfd_on_ourselves_duplicates_a_descriptor() {
        let me = pidfd_self().unwrap();
        let (r, w) = crate::pipe::pipe().unwrap();
        let dup = getfd(me.as_fd(), w.as_raw_fd()).unwrap();
        assert_ne!(dup.as_raw_fd(), w.as_raw_fd());
        crate::fd::write_all(dup.as_fd(), &[b"q"]).unwrap();
        let mut b = [0u8; 1];
        assert!(crate::fd::read_exact(r.as_fd(), &mut b).unwrap());
        assert_eq!(&b, b"q");
    }
}
