//! Process descriptors (`pidfd_open`, `pidfd_getfd`), of a process or of
//! one thread. Backed by rustix.

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

/// `PIDFD_THREAD` (Linux 6.9; `O_EXCL`).
const PIDFD_THREAD: u32 = libc::O_EXCL as u32;

/// A close-on-exec pidfd for *thread* `tid` (`PIDFD_THREAD`): it names
/// that thread and no other, and polls readable once that thread has
/// exited (see [`running`]), also when its id has gone to a new thread
/// since. `ESRCH` when no thread has that id, `EINVAL` on a kernel older
/// than 6.9.
pub fn open_thread(tid: i32) -> io::Result<OwnedFd> {
    // Pid::from_raw panics on a negative number: a caller may pass any.
    let tid = (tid > 0)
        .then(|| rustix::process::Pid::from_raw(tid))
        .flatten()
        .ok_or_else(|| io::Error::from_raw_os_error(libc::ESRCH))?;
    let thread = PidfdFlags::from_bits_retain(PIDFD_THREAD);
    Ok(rustix::process::pidfd_open(tid, thread)?)
}

/// True while the process behind `pidfd` (for a pidfd of [`open_thread`],
/// the thread) has not exited: one poll with zero timeout that finds it
/// not readable (retried on `EINTR`). False once it has exited, and on any
/// other error, so that a caller that checks before it trusts fails
/// closed.
pub fn running(pidfd: BorrowedFd<'_>) -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec};
    let zero = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    let mut p = [PollFd::new(&pidfd, PollFlags::IN)];
    match crate::retry_rustix(|| rustix::event::poll(&mut p, Some(&zero))) {
        Ok(0) => true,
        Ok(_) | Err(_) => false,
    }
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
    fn a_thread_pidfd_tells_when_its_thread_exits_not_its_process() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(crate::thread::gettid()).unwrap();
            let _ = wait.recv();
        });
        let tid = rx.recv().unwrap();
        let fd = open_thread(tid).expect("Linux 6.9 or later");
        assert!(running(fd.as_fd()));
        drop(stop);
        t.join().unwrap();
        // The kernel lets go of the thread just after the join returns.
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while running(fd.as_fd()) && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!running(fd.as_fd()));
        let me = pidfd_self().unwrap();
        assert!(running(me.as_fd()), "this process goes on");
        assert!(open_thread(0).is_err() && open_thread(i32::MIN).is_err());
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
