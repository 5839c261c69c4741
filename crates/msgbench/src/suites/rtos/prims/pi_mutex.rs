//! A pthread mutex with PTHREAD_PRIO_INHERIT (or, as a test double, with
//! no priority protocol).

use std::time::Duration;

use anyhow::{anyhow, Result};
use oslayer::pmutex::{self, Protocol};

/// A pthread mutex; `lock` and `unlock` must be called from the same
/// thread (the owner), as pthreads requires.
pub struct PthreadMutex {
    m: pmutex::PthreadMutex,
    inherit: bool,
}

impl PthreadMutex {
    /// A mutex with PTHREAD_PRIO_INHERIT when `inherit`, else
    /// PTHREAD_PRIO_NONE (a plain mutex that allows priority inversion).
    pub fn new(inherit: bool) -> Result<PthreadMutex> {
        let protocol = if inherit {
            Protocol::Inherit
        } else {
            Protocol::None
        };
        Ok(PthreadMutex {
            m: pmutex::PthreadMutex::new(protocol)?,
            inherit,
        })
    }

    /// Whether it uses priority inheritance.
    pub fn inherits(&self) -> bool {
        self.inherit
    }

    /// Locks, waiting at most `timeout`; `Ok(false)` on a timeout.
    pub fn lock(&self, timeout: Duration) -> Result<bool> {
        Ok(self.m.lock_timeout(timeout)?)
    }

    /// Locks without a deadline (for the timing loops, where the owner is
    /// known to release it).
    #[inline]
    pub fn lock_now(&self) -> Result<()> {
        self.m.lock().map_err(|e| anyhow!(e))
    }

    /// Unlocks (the caller must own it).
    #[inline]
    pub fn unlock(&self) -> Result<()> {
        self.m.unlock().map_err(|e| anyhow!(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn excludes_and_times_out() {
        for inherit in [true, false] {
            let m = Arc::new(PthreadMutex::new(inherit).unwrap());
            assert!(m.lock(Duration::from_secs(1)).unwrap());
            let m2 = Arc::clone(&m);
            let other = std::thread::spawn(move || m2.lock(Duration::from_millis(20)).unwrap());
            assert!(!other.join().unwrap(), "a held mutex was taken");
            m.unlock().unwrap();
            let m2 = Arc::clone(&m);
            let other = std::thread::spawn(move || {
                let got = m2.lock(Duration::from_secs(1)).unwrap();
                m2.unlock().unwrap();
                got
            });
            assert!(other.join().unwrap());
        }
    }
}
