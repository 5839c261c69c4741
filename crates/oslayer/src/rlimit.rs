//! Resource limits. Backed by rustix.

use std::io;

pub use rustix::process::Resource;

/// The soft limit of resource `res` (`None`: unlimited).
pub fn soft(res: Resource) -> Option<u64> {
    rustix::process::getrlimit(res).current
}

/// The hard limit of resource `res` (`None`: unlimited): how far an
/// unprivileged process may raise its soft limit.
pub fn hard(res: Resource) -> Option<u64> {
    rustix::process::getrlimit(res).maximum
}

/// Raises the soft limit of `res` to its hard limit (setrlimit), which
/// needs no privilege; returns the soft limit now in force (`None`:
/// unlimited). A soft limit already at the hard one is left alone.
pub fn raise_soft_to_hard(res: Resource) -> io::Result<Option<u64>> {
    let mut lim = rustix::process::getrlimit(res);
    if lim.current != lim.maximum {
        lim.current = lim.maximum;
        rustix::process::setrlimit(res, lim)?;
    }
    Ok(soft(res))
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
        let want = (r.rlim_max != libc::RLIM_INFINITY).then_some(r.rlim_max);
        assert_eq!(hard(Resource::Nofile), want);
    }

    #[test]
    fn raising_the_soft_limit_reaches_the_hard_one_in_a_child() {
        // In a child process, so that the test process keeps its limits.
        // SAFETY: the child only calls async-signal-safe functions
        // (getrlimit, setrlimit, _exit) before it ends.
        match unsafe { crate::process::fork() }.expect("fork") {
            crate::process::Fork::Child => {
                let ok =
                    raise_soft_to_hard(Resource::Nofile).is_ok_and(|s| s == hard(Resource::Nofile));
                crate::process::exit_now(if ok { 0 } else { 1 });
            }
            crate::process::Fork::Parent(pid) => {
                let status = crate::process::reap(pid).expect("reap");
                assert_eq!(status.exit_status(), Some(0));
            }
        }
    }
}
