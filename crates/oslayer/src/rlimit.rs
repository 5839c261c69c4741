//! Resource limits. Backed by rustix.

pub use rustix::process::Resource;

/// The soft limit of resource `res` (`None`: unlimited).
pub fn soft(res: Resource) -> Option<u64> {
    rustix::process::getrlimit(res).current
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_limit_matches_libc() {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: r is valid for writes for the duration of the call.
        assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) }, 0);
        let want = (r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur);
        assert_eq!(soft(Resource::Nofile), want);
    }
}
