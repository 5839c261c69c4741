//! svsematest's equivalent: a SysV semaphore hand-over.
//!
//! One `IPC_PRIVATE` set of two semaphores (0: test, 1: sync), both 0.
//! The wake-up is `semop(+1)`; the wait `semtimedop(-1)` (svsematest's
//! `semop(-1)` with a bound). The set is removed on drop.

use std::time::Duration;

use anyhow::{Context, Result};

use super::handover::{relative, Mechanism, Side};

/// The semaphore set.
pub struct SemHandover {
    id: libc::c_int,
}

impl SemHandover {
    /// Creates the set.
    pub fn new() -> Result<SemHandover> {
        // SAFETY: semget has no memory-safety preconditions.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, 2, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            return Err(std::io::Error::last_os_error()).context("semget");
        }
        Ok(SemHandover { id })
    }

    fn op(&self, side: Side, delta: i16, limit: Option<Duration>) -> Result<()> {
        let mut op = libc::sembuf {
            sem_num: match side {
                Side::Receiver => 0,
                Side::Sender => 1,
            },
            sem_op: delta,
            sem_flg: 0,
        };
        let r = match limit {
            // SAFETY: op is one valid sembuf; ts a valid timespec; both
            // live for the call (libc has no semtimedop wrapper).
            Some(l) => unsafe {
                let ts = relative(l);
                libc::syscall(
                    libc::SYS_semtimedop,
                    self.id,
                    &mut op as *mut libc::sembuf,
                    1,
                    &ts as *const libc::timespec,
                ) as libc::c_int
            },
            // SAFETY: op is one valid sembuf.
            None => unsafe { libc::semop(self.id, &mut op, 1) },
        };
        if r != 0 {
            return Err(std::io::Error::last_os_error()).context("semop");
        }
        Ok(())
    }
}

impl Drop for SemHandover {
    fn drop(&mut self) {
        // SAFETY: IPC_RMID takes no further argument.
        unsafe { libc::semctl(self.id, 0, libc::IPC_RMID) };
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
