//! Scheduling attributes of any thread by its id, for priority
//! inheritance through messages: `sched_getattr` / `sched_setattr` (which
//! neither rustix nor nix nor libc wraps: the raw system call here, with
//! the kernel's `struct sched_attr` written out), whether this process may
//! use the real-time policies, and whether a thread belongs to a process.

use std::io;
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
