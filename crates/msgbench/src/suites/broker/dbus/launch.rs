//! What runs in a daemon's child between fork and exec: die with us, take
//! the listening socket as fd 3, and see a private journald socket. Every
//! string is made before the fork; after it only system calls run (no
//! allocation, no locks), as `pre_exec` requires.

use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

/// Where a private journald socket is bind-mounted in the daemon's own
/// mount namespace: `source` (a directory of ours) over `target` (an
/// existing directory of the host's, seen only by the daemon).
pub(super) struct JournalMount {
    source: CString,
    target: CString,
}

impl JournalMount {
    /// The mount for `source` over `target`.
    pub(super) fn new(source: &Path, target: &Path) -> io::Result<JournalMount> {
        let c = |p: &Path| {
            CString::new(p.as_os_str().as_bytes())
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path has a NUL byte"))
        };
        Ok(JournalMount {
            source: c(source)?,
            target: c(target)?,
        })
    }
}

/// Makes `cmd`'s child die (SIGTERM) when the thread that spawned it dies,
/// optionally move `listen_fd` to fd 3 (socket activation), and optionally
/// enter a private mount namespace with `journal` mounted.
///
/// Note the parent-death signal follows the spawning *thread*: spawn from
/// a thread that outlives the daemon.
pub(super) fn prepare(cmd: &mut Command, listen_fd: Option<RawFd>, journal: Option<JournalMount>) {
    // SAFETY: `getpid` is async-signal-safe and has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the closure runs in the child between fork and exec. It
    // calls only async-signal-safe system calls (prctl, getppid, dup2,
    // fcntl, unshare, mount) on values made before the fork; it allocates
    // nothing and takes no lock.
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGTERM as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            // The parent may have died before the prctl took effect. (A
            // raw OS error: building an error with a message would
            // allocate.)
            if libc::getppid() != parent {
                return Err(io::Error::from_raw_os_error(libc::ESRCH));
            }
            if let Some(fd) = listen_fd {
                if fd == 3 {
                    // Already there: only clear close-on-exec.
                    if libc::fcntl(3, libc::F_SETFD, 0) != 0 {
                        return Err(io::Error::last_os_error());
                    }
                } else if libc::dup2(fd, 3) != 3 {
                    // dup2 leaves the new fd without close-on-exec.
                    return Err(io::Error::last_os_error());
                }
            }
            if let Some(j) = &journal {
                if libc::unshare(libc::CLONE_NEWNS) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // Our mounts must not propagate back to the host.
                let root = c"/";
                if libc::mount(
                    std::ptr::null(),
                    root.as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                if libc::mount(
                    j.source.as_ptr(),
                    j.target.as_ptr(),
                    std::ptr::null(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ) != 0
                {
                    return Err(io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}
