//! Scheduling attributes of any thread by its id, for priority
//! inheritance through messages: `sched_getattr` / `sched_setattr` (which
//! neither rustix nor nix nor libc wraps: the raw system call here, with
//! the kernel's `struct sched_attr` written out), whether this process may
//! use the real-time policies, and whether a thread belongs to a process
//! (`/proc/<pid>/task/<tid>`, also held open as a handle that a reused
//! thread id cannot pass).

use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::PathBuf;

use crate::rlimit::{self, Resource};

/// The kernel's `struct sched_attr`, its first version (48 bytes).
#[repr(C)]
#[derive(Debug, Default, Clone, Copy)]
struct RawAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
}

/// `SCHED_DEADLINE` (not in every libc).
const SCHED_DEADLINE: i32 = 6;

/// What a thread is scheduled by: its policy, its static priority (1 to
/// 99 under FIFO and RR, 0 otherwise) and its nice value (the
/// time-sharing policies').
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchedAttr {
    /// The kernel's policy number (`SCHED_OTHER`, `SCHED_FIFO`...).
    pub policy: i32,
    /// The static priority.
    pub priority: u32,
    /// The nice value (-20 to 19).
    pub nice: i32,
}

impl SchedAttr {
    /// SCHED_FIFO at `priority`.
    pub fn fifo(priority: u32) -> SchedAttr {
        SchedAttr {
            policy: libc::SCHED_FIFO,
            priority,
            nice: 0,
        }
    }

    /// How urgent the kernel holds a thread so scheduled, as one number
    /// (higher runs first): FIFO and RR above every time-sharing thread
    /// (100 + priority), then OTHER and BATCH by nice (20 - nice, 1 to
    /// 40), IDLE at 0. `None` for SCHED_DEADLINE, which has no place on
    /// this scale (and is not copied to another thread).
    pub fn rank(&self) -> Option<u32> {
        match self.policy {
            libc::SCHED_FIFO | libc::SCHED_RR => Some(100 + self.priority),
            libc::SCHED_OTHER | libc::SCHED_BATCH => Some((20 - self.nice.clamp(-20, 19)) as u32),
            libc::SCHED_IDLE => Some(0),
            SCHED_DEADLINE => None,
            _ => None,
        }
    }

    /// True for FIFO and RR.
    pub fn realtime(&self) -> bool {
        matches!(self.policy, libc::SCHED_FIFO | libc::SCHED_RR)
    }
}

/// The scheduling attributes of thread `tid` (0: the calling thread),
/// read from the kernel (`sched_getattr`).
pub fn attr(tid: i32) -> io::Result<SchedAttr> {
    let mut raw = RawAttr::default();
    let size = std::mem::size_of::<RawAttr>() as libc::c_uint;
    // SAFETY: `raw` is a valid, writable sched_attr of `size` bytes for
    // the duration of the call; flags must be 0.
    let r = unsafe { libc::syscall(libc::SYS_sched_getattr, tid, &mut raw, size, 0u32) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(SchedAttr {
        policy: raw.policy as i32,
        priority: raw.priority,
        nice: raw.nice,
    })
}

/// Schedules thread `tid` (0: the calling thread) by `a`
/// (`sched_setattr`). Raising a priority needs CAP_SYS_NICE or an
/// RLIMIT_RTPRIO that allows it; SCHED_DEADLINE is refused here.
pub fn set_attr(tid: i32, a: SchedAttr) -> io::Result<()> {
    if a.policy == SCHED_DEADLINE {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "SCHED_DEADLINE is not copied between threads",
        ));
    }
    let raw = RawAttr {
        size: std::mem::size_of::<RawAttr>() as u32,
        policy: a.policy as u32,
        nice: a.nice,
        priority: a.priority,
        ..RawAttr::default()
    };
    // SAFETY: `raw` is a valid sched_attr whose `size` field says its
    // length; flags must be 0.
    let r = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, &raw, 0u32) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// CAP_SYS_NICE's bit in the capability sets.
const CAP_SYS_NICE: u32 = 23;

/// True when CAP_SYS_NICE is in this process's effective set (the
/// `CapEff` line of `/proc/self/status`).
pub fn has_cap_sys_nice() -> bool {
    let Ok(status) = std::fs::read_to_string("/proc/self/status") else {
        return false;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_some_and(|caps| caps & (1 << CAP_SYS_NICE) != 0)
}

/// The highest real-time priority this process may give its threads:
/// 99 with CAP_SYS_NICE, else its RLIMIT_RTPRIO (0: none at all).
pub fn max_rt_priority() -> u32 {
    if has_cap_sys_nice() {
        return 99;
    }
    rlimit::soft(Resource::Rtprio).map_or(99, |l| l.min(99) as u32)
}

/// True when thread `tid` is a thread of process `pid` now, as the kernel
/// lists it (`/proc/<pid>/task/<tid>` exists).
pub fn thread_of(pid: i32, tid: i32) -> bool {
    if pid <= 0 || tid <= 0 {
        return false;
    }
    PathBuf::from(format!("/proc/{pid}/task/{tid}")).exists()
}

/// `/proc/<pid>/task/<tid>` opened as a handle (`O_PATH`, close-on-exec):
/// found only when `tid` is a thread of process `pid` now. The directory
/// keeps naming that thread, not its id: see [`task_listed`]. For kernels
/// without thread pidfds ([`crate::pidfd::open_thread`]).
pub fn task_dir(pid: i32, tid: i32) -> io::Result<OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    if pid <= 0 || tid <= 0 {
        return Err(io::Error::from_raw_os_error(libc::ESRCH));
    }
    let path = format!("/proc/{pid}/task/{tid}");
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC;
    Ok(rustix::fs::open(path.as_str(), flags, Mode::empty())?)
}

/// True while the thread of a [`task_dir`] has not been reaped: the
/// kernel finds `stat` under its directory (one `faccessat`). Once that
/// thread is gone it finds nothing there, even when a new thread has its
/// id (the directory names the old one). False on any error.
pub fn task_listed(dir: BorrowedFd<'_>) -> bool {
    use rustix::fs::{Access, AtFlags};
    crate::retry_rustix(|| rustix::fs::accessat(dir, "stat", Access::EXISTS, AtFlags::empty()))
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_thread_reads_back_and_belongs_to_this_process() {
        let me = attr(0).unwrap();
        assert_eq!(me, attr(crate::thread::gettid()).unwrap());
        assert!(me.rank().is_some());
        assert!(thread_of(
            crate::process::pid().as_raw_nonzero().get(),
            crate::thread::gettid()
        ));
        assert!(!thread_of(crate::process::pid().as_raw_nonzero().get(), 0));
        assert!(!thread_of(1, crate::thread::gettid()));
        // Setting what is there already needs no privilege.
        set_attr(0, me).unwrap();
    }

    #[test]
    fn a_task_dir_stops_listing_its_thread_once_it_is_gone() {
        use std::os::fd::AsFd;
        let pid = crate::process::pid().as_raw_nonzero().get();
        let (tx, rx) = std::sync::mpsc::channel();
        let (stop, wait) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(crate::thread::gettid()).unwrap();
            let _ = wait.recv();
        });
        let tid = rx.recv().unwrap();
        let dir = task_dir(pid, tid).unwrap();
        assert!(task_listed(dir.as_fd()));
        assert!(task_dir(1, tid).is_err(), "not a thread of process 1");
        drop(stop);
        t.join().unwrap();
        let end = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while task_listed(dir.as_fd()) && std::time::Instant::now() < end {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(!task_listed(dir.as_fd()));
        assert!(task_listed(task_dir(pid, pid).unwrap().as_fd()));
    }

    #[test]
    fn ranks_put_realtime_first_and_order_nice() {
        let other = |nice| SchedAttr {
            policy: libc::SCHED_OTHER,
            priority: 0,
            nice,
        };
        assert!(SchedAttr::fifo(1).rank() > other(-20).rank());
        assert!(other(-5).rank() > other(0).rank());
        assert!(SchedAttr::fifo(30).rank() > SchedAttr::fifo(10).rank());
    }
}
