//! sigwaittest's equivalent: a signal hand-over between two threads.
//!
//! The receiver waits for SIGUSR2 and the sender for SIGUSR1, both
//! blocked in the waiting thread; a wake-up is a thread-directed
//! `tgkill` (what `pthread_kill` does), the wait `sigtimedwait` (the
//! system call behind `sigwait`, bounded here).

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use oslayer::signal::{self, SigSet};
use oslayer::thread;

use super::handover::{Mechanism, Side};

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
fn signal_of(side: Side) -> i32 {
    match side {
        Side::Receiver => libc::SIGUSR2,
        Side::Sender => libc::SIGUSR1,
    }
}

impl Mechanism for SignalHandover {
    fn enter(&self, side: Side) -> Result<()> {
        // Both signals blocked in both threads: each is only ever taken by
        // sigtimedwait.
        let mut set = SigSet::of(libc::SIGUSR1);
        set.add(libc::SIGUSR2);
        if let Err(e) = signal::block_in_thread(&set) {
            bail!("pthread_sigmask: error {}", e.raw_os_error().unwrap_or(0));
        }
        let tid = thread::gettid();
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
        // The target is a thread of this process that has the signal
        // blocked (see enter).
        signal::send_to_thread(tid, signal_of(to)).context("tgkill")
    }

    fn wait(&self, side: Side, limit: Duration) -> Result<()> {
        let sig = signal_of(side);
        match signal::timed_wait(&SigSet::of(sig), limit).context("sigtimedwait")? {
            s if s == sig => Ok(()),
            s => bail!("sigtimedwait: took signal {s}, not {sig}"),
        }
    }
}
