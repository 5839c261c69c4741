//! ptsematest's equivalent: a pthread-mutex hand-over.
//!
//! ptsematest unlocks, in the sender, a mutex the receiver is blocked
//! locking (a default glibc mutex, which tolerates the unlock by another
//! thread). This is the same object without the undefined unlock: glibc's
//! low-level lock on a futex word (0 free, 1 locked, 2 locked with
//! waiters): `unlock` swaps in 0 and, if there were waiters, wakes one
//! with `FUTEX_WAKE_PRIVATE`; `lock` tries 0 -> 1, else marks the word 2
//! and sleeps in `FUTEX_WAIT_PRIVATE` (bounded here). Both locks start
//! locked.

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::handover::{Mechanism, Side};
use oslayer::futex;

/// One low-level lock.
struct Lock(AtomicU32);

impl Lock {
    fn unlock(&self) -> Result<()> {
        if self.0.swap(0, Ordering::Release) == 2 {
            futex::wake(&self.0, 1, false);
        }
        Ok(())
    }

    fn lock(&self, limit: Duration) -> Result<()> {
        if self
            .0
            .compare_exchange(0, 1, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return Ok(());
        }
        let deadline = Instant::now() + limit;
        while self.0.swap(2, Ordering::Acquire) != 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                bail!("mutex not released within {limit:?}");
            }
            futex::wait(&self.0, 2, Some(left), false);
        }
        Ok(())
    }
}

/// The test lock (receiver blocks on it) and the sync lock (sender).
pub struct MutexHandover {
    test: Lock,
    sync: Lock,
}

impl MutexHandover {
    /// Both locks held.
    pub fn new() -> MutexHandover {
        MutexHandover {
            test: Lock(AtomicU32::new(1)),
            sync: Lock(AtomicU32::new(1)),
        }
    }

    fn lock_of(&self, side: Side) -> &Lock {
        match side {
            Side::Receiver => &self.test,
            Side::Sender => &self.sync,
        }
    }
}

impl Default for MutexHandover {
    fn default() -> Self {
        Self::new()
    }
}

impl Mechanism for MutexHandover {
    fn post(&self, to: Side) -> Result<()> {
        self.lock_of(to).unlock()
    }

    fn wait(&self, side: Side, limit: Duration) -> Result<()> {
        self.lock_of(side).lock(limit)
    }
}
