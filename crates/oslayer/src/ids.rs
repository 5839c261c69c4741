//! User and group ids. Backed by rustix. (This process's id, its
//! parent's and the rest of process life are in [`crate::process`].)

/// Effective user id of this process.
#[inline]
pub fn euid() -> u32 {
    rustix::process::geteuid().as_raw()
}

/// Effective group id of this process.
#[inline]
pub fn egid() -> u32 {
    rustix::process::getegid().as_raw()
}

/// Real user id of this process.
#[inline]
pub fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}

/// The process thread `tid` belongs to (its thread group id, the `Tgid`
/// line of `/proc/<tid>/status`), if the thread is there.
pub fn process_of(tid: i32) -> Option<i32> {
    if tid <= 0 {
        return None;
    }
    let status = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_thread_belongs_to_this_process() {
        let me = std::process::id() as i32;
        assert_eq!(super::process_of(me), Some(me));
        let tid = std::thread::spawn(crate::thread::gettid).join().unwrap();
        // Gone now: its id names no thread (unless reused at once).
        assert_ne!(super::process_of(tid), Some(tid));
        assert_eq!(super::process_of(crate::thread::gettid()), Some(me));
        assert_eq!(super::process_of(0), None);
    }

    #[test]
    fn ids_match_libc() {
        // SAFETY: these calls have no preconditions and cannot fail.
        let want = unsafe { (libc::geteuid(), libc::getegid(), libc::getuid()) };
        assert_eq!((super::euid(), super::egid(), super::uid()), want);
    }
}
