//! Processes: ids, fork, wait, kill, the parent-death signal, `_exit`
//! (rustix where it has the call; nix for fork; libc for `_exit`, which
//! neither exposes as a safe function).

use std::io;

pub use rustix::process::{Pid, Signal};
use rustix::process::{WaitId, WaitIdOptions, WaitOptions};

/// This process's id (one system call each time: nothing cached, so a
/// forked child sees its own).
///
/// Async-signal-safe (a raw system call, no allocation): usable between
/// fork and exec.
#[inline]
pub fn pid() -> Pid {
    rustix::process::getpid()
}

/// The parent's process id, `None` when it is 0 (no parent in our pid
/// namespace). The child of a dead parent sees its reaper's id.
///
/// Async-signal-safe (a raw system call, no allocation): usable between
/// fork and exec.
#[inline]
pub fn parent_pid() -> Option<Pid> {
    rustix::process::getppid()
}

/// Sends `sig` to process `pid` (kill).
pub fn kill(pid: Pid, sig: Signal) -> io::Result<()> {
    Ok(rustix::process::kill_process(pid, sig)?)
}

/// Sends `sig` to every process of the group `pgid` (kill with -pgid).
pub fn kill_group(pgid: Pid, sig: Signal) -> io::Result<()> {
    Ok(rustix::process::kill_process_group(pgid, sig)?)
}

/// Asks for `sig` when the parent thread dies (prctl PR_SET_PDEATHSIG);
/// `None` clears it.
///
/// Async-signal-safe (a raw system call, no allocation; an error is a raw
/// OS error): usable between fork and exec, where a child started with
/// `pre_exec` sets it.
pub fn set_parent_death_signal(sig: Option<Signal>) -> io::Result<()> {
    Ok(rustix::process::set_parent_process_death_signal(sig)?)
}

/// Asks for `sig` when the parent thread dies, then checks that the
/// parent is still `parent` (it may have died before the request took
/// effect): an error when it is gone. What a helper process started with
/// the id of the process it must not outlive does first.
pub fn die_with(parent: i32, sig: Signal) -> io::Result<()> {
    set_parent_death_signal(Some(sig))?;
    if parent_pid().map_or(0, |p| p.as_raw_nonzero().get()) != parent {
        return Err(io::Error::other(format!("parent {parent} is gone")));
    }
    Ok(())
}

/// Ends the process at once with `code` (`_exit`): no destructors, no
/// atexit handlers, no stdio flush. The one way a forked child may end.
pub fn exit_now(code: i32) -> ! {
    // SAFETY: _exit is async-signal-safe, takes no memory and never returns.
    unsafe { libc::_exit(code) }
}

/// Which side of a [`fork`] we are on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fork {
    /// The parent; the child's id.
    Parent(Pid),
    /// The child.
    Child,
}

/// fork(2) (nix).
///
/// # Safety
///
/// In a process with more than one thread, the child may only call
/// async-signal-safe functions (no allocation, no locks) until it ends
/// with [`exit_now`] or execs, as nix's `fork` requires.
pub unsafe fn fork() -> io::Result<Fork> {
    // SAFETY: the caller keeps the child to async-signal-safe operations.
    match unsafe { nix::unistd::fork() }.map_err(io::Error::from)? {
        nix::unistd::ForkResult::Child => Ok(Fork::Child),
        nix::unistd::ForkResult::Parent { child } => Pid::from_raw(child.as_raw())
            .map(Fork::Parent)
            .ok_or_else(|| io::Error::other("fork returned pid 0 to the parent")),
    }
}

/// A child's wait status.
pub use rustix::process::WaitStatus;

/// Reaps child `pid` if it has ended (waitpid WNOHANG): `Some(status)`
/// once reaped, `None` while it runs.
pub fn try_reap(pid: Pid) -> io::Result<Option<WaitStatus>> {
    Ok(rustix::process::waitpid(Some(pid), WaitOptions::NOHANG)?.map(|(_, s)| s))
}

/// Waits for child `pid` to end and reaps it (waitpid).
pub fn reap(pid: Pid) -> io::Result<WaitStatus> {
    rustix::process::waitpid(Some(pid), WaitOptions::empty())?
        .map(|(_, s)| s)
        .ok_or_else(|| io::Error::other("waitpid returned no status"))
}

/// Whether child `pid` has not exited yet; does not reap it (waitid
/// WEXITED | WNOHANG | WNOWAIT). An error (no such child) reads as false.
pub fn child_running(pid: Pid) -> bool {
    matches!(
        rustix::process::waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT
        ),
        Ok(None)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_ours() {
        assert_eq!(pid().as_raw_nonzero().get() as u32, std::process::id());
        assert!(parent_pid().is_some());
    }

    /// A child that sleeps in `sleep 5`, killed, not reaped by std.
    fn sleeper() -> Pid {
        let c = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let pid = Pid::from_raw(c.id() as i32).unwrap();
        std::mem::forget(c);
        pid
    }

    #[test]
    fn kill_and_reap_a_child() {
        let pid = sleeper();
        assert!(child_running(pid));
        assert!(try_reap(pid).unwrap().is_none());
        kill(pid, Signal::KILL).unwrap();
        let s = reap(pid).unwrap();
        assert_eq!(s.terminating_signal(), Some(libc::SIGKILL));
        assert!(!child_running(pid), "reaped: no longer our child");
    }

    #[test]
    fn child_running_is_false_after_exit_without_reaping() {
        let pid = sleeper();
        kill(pid, Signal::TERM).unwrap();
        while child_running(pid) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let s = try_reap(pid).unwrap().expect("exited and still reapable");
        assert_eq!(s.terminating_signal(), Some(libc::SIGTERM));
    }

    #[test]
    fn fork_and_exit_now_report_the_code() {
        // SAFETY: the child only calls exit_now (async-signal-safe).
        match unsafe { fork() }.unwrap() {
            Fork::Child => exit_now(7),
            Fork::Parent(pid) => assert_eq!(reap(pid).unwrap().exit_status(), Some(7)),
        }
    }

    #[test]
    fn parent_death_signal_can_be_set_and_cleared() {
        std::thread::spawn(|| {
            set_parent_death_signal(Some(Signal::TERM)).unwrap();
            set_parent_death_signal(None).unwrap();
        })
        .join()
        .unwrap();
    }
}
