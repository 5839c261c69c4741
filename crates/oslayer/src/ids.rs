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

#[cfg(test)]
mod tests {
    #[test]
    fn ids_match_libc() {
        // SAFETY: these calls have no preconditions and cannot fail.
        let want = unsafe { (libc::geteuid(), libc::getegid(), libc::getuid()) };
        assert_eq!((super::euid(), super::egid(), super::uid()), want);
    }
}
