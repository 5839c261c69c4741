//! Memory locking (rustix).

use std::io;

use rustix::mm::MlockAllFlags;

/// Locks all current and future memory of the process
/// (mlockall(MCL_CURRENT | MCL_FUTURE)).
pub fn lock_all() -> io::Result<()> {
    Ok(rustix::mm::mlockall(
        MlockAllFlags::CURRENT | MlockAllFlags::FUTURE,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_all_succeeds_or_is_refused_for_lack_of_privilege() {
        // In a child, so the test process's memory stays unlocked.
        // SAFETY: the child calls only mlockall and _exit (no allocation).
        match unsafe { crate::process::fork() }.unwrap() {
            crate::process::Fork::Child => {
                let code = match lock_all() {
                    Ok(()) => 0,
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOMEM)) => 0,
                    Err(_) => 1,
                };
                crate::process::exit_now(code)
            }
            crate::process::Fork::Parent(pid) => {
                assert_eq!(crate::process::reap(pid).unwrap().exit_status(), Some(0))
            }
        }
    }
}
