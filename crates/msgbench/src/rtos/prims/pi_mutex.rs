//! A pthread mutex with PTHREAD_PRIO_INHERIT (or, as a test double, with
//! no priority protocol).

use std::cell::UnsafeCell;
use std::io;
use std::time::Duration;

use anyhow::{bail, Result};

use super::semaphore::realtime_deadline;

/// A pthread mutex; `lock` and `unlock` must be called from the same
/// thread (the owner), as pthreads requires.
pub struct PthreadMutex {
    m: Box<UnsafeCell<libc::pthread_mutex_t>>,
    inherit: bool,
}

// SAFETY: a pthread mutex is made to be shared between threads through its
// functions; it is boxed, so its address never changes.
unsafe impl Send for PthreadMutex {}
// SAFETY: as above.
unsafe impl Sync for PthreadMutex {}

impl PthreadMutex {
    /// A mutex with PTHREAD_PRIO_INHERIT when `inherit`, else
    /// PTHREAD_PRIO_NONE (a plain mutex that allows priority inversion).
    pub fn new(inherit: bool) -> Result<PthreadMutex> {
        // SAFETY: all-zero is a valid bit pattern for both; they are
        // initialised by the init calls below before use.
        let m = Box::new(UnsafeCell::new(unsafe {
            std::mem::zeroed::<libc::pthread_mutex_t>()
        }));
        // SAFETY: as above.
        let mut attr = unsafe { std::mem::zeroed::<libc::pthread_mutexattr_t>() };
        let protocol = if inherit {
            libc::PTHREAD_PRIO_INHERIT
        } else {
            libc::PTHREAD_PRIO_NONE
        };
        // SAFETY: `attr` is valid writable memory for the attribute; it is
        // initialised first and destroyed last; `m` outlives the mutex.
        let r = unsafe {
            let mut r = libc::pthread_mutexattr_init(&mut attr);
            if r == 0 {
                r = libc::pthread_mutexattr_setprotocol(&mut attr, protocol);
                if r == 0 {
                    r = libc::pthread_mutex_init(m.get(), &attr);
                }
                libc::pthread_mutexattr_destroy(&mut attr);
            }
            r
        };
        if r != 0 {
            bail!("pthread mutex init: {}", io::Error::from_raw_os_error(r));
        }
        Ok(PthreadMutex { m, inherit })
    }

    /// Whether it uses priority inheritance.
    pub fn inherits(&self) -> bool {
        self.inherit
    }

    /// Locks, waiting at most `timeout`; `Ok(false)` on a timeout.
    pub fn lock(&self, timeout: Duration) -> Result<bool> {
        let deadline = realtime_deadline(timeout);
        // SAFETY: the mutex is initialised and live; `deadline` is valid.
        match unsafe { libc::pthread_mutex_timedlock(self.m.get(), &deadline) } {
            0 => Ok(true),
            libc::ETIMEDOUT => Ok(false),
            e => bail!(
                "pthread_mutex_timedlock: {}",
                io::Error::from_raw_os_error(e)
            ),
        }
    }

    /// Locks without a deadline (for the timing loops, where the owner is
    /// known to release it).
    pub fn lock_now(&self) -> Result<()> {
        // SAFETY: the mutex is initialised and live.
        match unsafe { libc::pthread_mutex_lock(self.m.get()) } {
            0 => Ok(()),
            e => bail!("pthread_mutex_lock: {}", io::Error::from_raw_os_error(e)),
        }
    }

    /// Unlocks (the caller must own it).
    pub fn unlock(&self) -> Result<()> {
        // SAFETY: the mutex is initialised and live.
        match unsafe { libc::pthread_mutex_unlock(self.m.get()) } {
            0 => Ok(()),
            e => bail!("pthread_mutex_unlock: {}", io::Error::from_raw_os_error(e)),
        }
    }
}

impl Drop for PthreadMutex {
    fn drop(&mut self) {
        // SAFETY: initialised, and exclusively ours now.
        unsafe { libc::pthread_mutex_destroy(self.m.get()) };
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
