//! What runs in a daemon's child between fork and exec: die with us, take
//! the listening socket as fd 3, and see a private journald socket. Every
//! string is made before the fork; after it only oslayer's
//! async-signal-safe calls run (one system call each, no allocation, no
//! locks), as `pre_exec` requires.

use std::ffi::CString;
use std::io;
use std::os::fd::{BorrowedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;

use oslayer::mount;
use oslayer::process::{self, Signal};

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
    let parent = process::pid();
    let setup = move || -> io::Result<()> {
        process::set_parent_death_signal(Some(Signal::TERM))?;
        // The parent may have died before the request took effect. (A raw
        // OS error: building an error with a message would allocate.)
        if process::parent_pid() != Some(parent) {
            return Err(io::Error::from_raw_os_error(libc::ESRCH));
        }
        if let Some(fd) = listen_fd {
            // SAFETY: `fd` is the listener's descriptor, open in the parent
            // until the spawn returns and so in this child; fd 3 is given up
            // to it, and nothing but the exec runs after this closure.
            unsafe { oslayer::fd::install_as(BorrowedFd::borrow_raw(fd), 3) }?;
        }
        if let Some(j) = &journal {
            mount::unshare_mount_namespace()?;
            // Our mounts must not propagate back to the host.
            mount::make_private_recursive(c"/")?;
            mount::bind(&j.source, &j.target)?;
        }
        Ok(())
    };
    // SAFETY: `setup` runs in the child between fork and exec. It makes
    // only oslayer calls documented async-signal-safe (one raw system call
    // each, no allocation) on values made before the fork, and takes no
    // lock.
    unsafe { cmd.pre_exec(setup) };
}
