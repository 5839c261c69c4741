//! Network namespaces: moving the calling thread into one (`setns(2)` with
//! `CLONE_NEWNET`).
//!
//! Backed by rustix (`move_into_link_name_space`). Only the calling thread
//! moves; sockets it creates afterwards belong to that namespace for their
//! whole life, whichever thread later uses them. Callers therefore enter a
//! namespace from a dedicated thread, never from one that goes on doing
//! other work.

use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::path::Path;

use rustix::thread::{move_into_link_name_space, LinkNameSpaceType};

/// Where `ip netns add NAME` puts the handle of namespace `NAME`.
pub const NETNS_RUN_DIR: &str = "/var/run/netns";

/// Moves the calling thread into the network namespace whose handle is
/// `path` (a `/proc/<pid>/ns/net` link or an `ip netns` bind mount under
/// [`NETNS_RUN_DIR`]). Needs `CAP_SYS_ADMIN`; fails with `EINVAL` when
/// `path` is not a network namespace.
pub fn enter_net_namespace(path: &Path) -> io::Result<()> {
    let f = File::open(path)?;
    move_into_link_name_space(f.as_fd(), Some(LinkNameSpaceType::Network)).map_err(io::Error::from)
}

/// The handle of the named `ip netns` namespace.
pub fn named_net_namespace(name: &str) -> std::path::PathBuf {
    Path::new(NETNS_RUN_DIR).join(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn is_root() -> bool {
        rustix::process::geteuid().is_root()
    }

    #[test]
    fn entering_the_current_namespace_works_as_root_and_is_refused_otherwise() {
        let r = std::thread::spawn(|| enter_net_namespace(Path::new("/proc/thread-self/ns/net")))
            .join()
            .unwrap();
        match r {
            Ok(()) => {}
            Err(e) => {
                assert!(!is_root(), "root must be able to setns: {e}");
                assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}");
            }
        }
    }

    #[test]
    fn a_file_that_is_not_a_namespace_is_refused() {
        let r = std::thread::spawn(|| enter_net_namespace(Path::new("/proc/self/status")))
            .join()
            .unwrap();
        let e = r.expect_err("a plain file is no namespace");
        let code = e.raw_os_error();
        assert!(
            code == Some(libc::EINVAL) || code == Some(libc::EPERM),
            "{e}"
        );
    }

    #[test]
    fn a_missing_namespace_names_the_error() {
        let e = enter_net_namespace(&named_net_namespace("msgbench-no-such-ns")).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
    }
}
