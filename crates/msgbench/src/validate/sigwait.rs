//! sigwaittest's equivalent: a signal hand-over between two threads.
//!
//! The receiver waits for SIGUSR2 and the sender for SIGUSR1, both
//! blocked in the waiting thread; a wake-up is a thread-directed
//! `tgkill` (what `pthread_kill` does), the wait `sigtimedwait` (the
//! system call behind `sigwait`, bounded here).

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::handover::{relative, Mechanism, Side};

/// The two threads' ids, published by [`Mechanism::enter`].
pub struct SignalHandover {
    receiver: AtomicI32,
    sender: AtomicI32,
}

impl SignalHandover {
    /// No thread known yet.
    pub fn new() -> SignalHandover {
        SignalHandover {
            receiver: AtomicI32::new(0),
            sender: AtomicI32::new(0),
        }
    }
}

impl Default for SignalHandover {
    fn default() -> Self {
        Self::new()
    }
}

/// The signal `side` waits for.
fn signal_of(side: Side) -> libc::c_int {
    match side {
        Side::Receiver => libc::SIGUSR2,
        Side::Sender => libc::SIGUSR1,
    }
}

/// A set of one signal.
fn set_of(sig: libc::c_int) -> libc::sigset_t {
    // SAFETY: sigset_t is plain data, initialised by sigemptyset before use.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid sigset_t; sig is a valid signal number.
    unsafe {
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, sig);
    }
    set
}

impl Mechanism for SignalHandover {
    fn enter(&self, side: Side) -> Result<()> {
        // Both signals blocked in both threads: each is only ever taken by
        // sigtimedwait.
        let mut set = set_of(libc::SIGUSR1);
        // SAFETY: set is a valid sigset_t.
        unsafe { libc::sigaddset(&mut set, libc::SIGUSR2) };
        // SAFETY: set is valid; the old mask is not wanted.
        let r = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
        if r != 0 {
            bail!("pthread_sigmask: error {r}");
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        match side {
            Side::Receiver => self.receiver.store(tid, Ordering::SeqCst),
            Side::Sender => self.sender.store(tid, Ordering::SeqCst),
        }
        Ok(())
    }

    fn post(&self, to: Side) -> Result<()> {
        let tid = match to {
            Side::Receiver => self.receiver.load(Ordering::SeqCst),
            Side::Sender => self.sender.load(Ordering::SeqCst),
        };
        anyhow::ensure!(tid > 0, "the peer thread is not known");
        // SAFETY: tgkill takes plain integers; the target is a thread of
        // this process that has the signal blocked (see enter).
        let r = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), tid, signal_of(to)) };
        if r != 0 {
            return Err(std::io::Error::last_os_error()).context("tgkill");
        }
        Ok(())
    }

    fn wait(&self, side: Side, limit: Duration) -> Result<()> {
        let set = set_of(signal_of(side));
        let ts = relative(limit);
        // SAFETY: set and ts are valid for the call; no siginfo wanted.
        let r = unsafe { libc::sigtimedwait(&set, std::ptr::null_mut(), &ts) };
        if r != signal_of(side) {
            return Err(std::io::Error::last_os_error()).context("sigtimedwait");
        }
        Ok(())
    }
}
