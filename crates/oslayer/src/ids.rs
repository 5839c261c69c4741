//! Process and user ids. Backed by rustix.

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

/// Id of this process.
#[inline]
pub fn pid() -> i32 {
    rustix::process::getpid().as_raw_nonzero().get()
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_match_libc() {
        // SAFETY: these calls have no preconditions and cannot fail.
        let want = unsafe {
            (
                libc::geteuid(),
                libc::getegid(),
                libc::getuid(),
                libc::getpid(),
            )
        };
        assert_eq!(
            (super::euid(), super::egid(), super::uid(), super::pid()),
            want
        );
    }
}
