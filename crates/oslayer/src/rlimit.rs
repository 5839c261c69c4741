//! Resource limits. Backed by rustix.

pub use rustix::process::Resource;

/// The soft limit of resource `res` (`None`: unlimited).
pub fn soft(res: Resource) -> Option<u64> {
    rustix::process::getrlimit(res).current
}

/// The hard limit of resource `res` (`None`: unlimited).
pub fn hard(res: Resource) -> Option<u64> {
    rustix::process::getrlimit(res).maximum
}

/// Raises the soft limit of resource `res` to its hard limit, as servers
/// do for descriptors at start; returns the soft limit now in force
/// (`None`: unlimited). Never lowers it.
pub fn raise_to_hard(res: Resource) -> std::io::Result<Option<u64>> {
    let mut lim = rustix::process::getrlimit(res);
    if lim.current != lim.maximum {
        lim.current = lim.maximum;
        rustix::process::setrlimit(res, lim)?;
    }
    Ok(lim.current)
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

    #[test]
    fn raising_reaches_the_hard_limit_and_never_lowers() {
        let now = raise_to_hard(Resource::Nofile).unwrap();
        assert_eq!(now, hard(Resource::Nofile));
        assert_eq!(soft(Resource::Nofile), now);
        assert_eq!(raise_to_hard(Resource::Nofile).unwrap(), now);
    }
}
