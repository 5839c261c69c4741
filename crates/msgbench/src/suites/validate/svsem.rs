//! svsematest's equivalent: a SysV semaphore hand-over.
//!
//! One `IPC_PRIVATE` set of two semaphores (0: test, 1: sync), both 0.
//! The wake-up is `semop(+1)`; the wait `semtimedop(-1)` (svsematest's
//! `semop(-1)` with a bound). The set is removed on drop.

use std::time::Duration;

use anyhow::{Context, Result};

use oslayer::sem::{SemSet, Taken};

use super::handover::{Mechanism, Side};

/// The semaphore set.
pub struct SemHandover {
    set: SemSet,
}

impl SemHandover {
    /// Creates the set.
    pub fn new() -> Result<SemHandover> {
        Ok(SemHandover {
            set: SemSet::private(2).context("semget")?,
        })
    }

    fn op(&self, side: Side, delta: i16, limit: Option<Duration>) -> Result<()> {
        let num = match side {
            Side::Receiver => 0,
            Side::Sender => 1,
        };
        match self.set.op(num, delta, false, limit).context("semop")? {
            Taken::Yes => Ok(()),
            Taken::No => Err(std::io::Error::from_raw_os_error(libc::EAGAIN)).context("semop"),
            Taken::Interrupted => {
                Err(std::io::Error::from_raw_os_error(libc::EINTR)).context("semop")
            }
        }
    }
}

impl Mechanism for SemHandover {
    fn post(&self, to: Side) -> Result<()> {
        self.op(to, 1, None)
    }

    fn wait(&self, side: Side, limit: Duration) -> Result<()> {
        self.op(side, -1, Some(limit))
    }
}
