//! pthread mutexes with a chosen priority protocol (PTHREAD_PRIO_INHERIT
//! or PTHREAD_PRIO_NONE): `std::sync::Mutex` cannot choose, and neither
//! rustix nor nix wraps `pthread_mutexattr_setprotocol`: plain libc here.

use std::cell::UnsafeCell;
use std::io;
use std::time::Duration;

use crate::clock::realtime_deadline;

/// The priority protocol of a [`PthreadMutex`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Default attributes (no attribute object at all).
    Default,
    /// PTHREAD_PRIO_NONE: a plain mutex that allows priority inversion.
    None,
    /// PTHREAD_PRIO_INHERIT: the owner inherits the highest waiter's
    /// priority.
    Inherit,
}

/// A pthread mutex; `lock` and `unlock` must be called from the same
/// thread (the owner), as pthreads requires.
pub struct PthreadMutex {
    m: Box<UnsafeCell<libc::pthread_mutex_t>>,
}

// SAFETY: a pthread mutex is made to be used from several threads at once
// through its functions; it lives in a Box, so its address never changes.
unsafe impl Send for PthreadMutex {}
// SAFETY: as above.
unsafe impl Sync for PthreadMutex {}

fn check(what: &str, r: i32) -> io::Result<()> {
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::from_raw_os_error(r);
    Err(io::Error::new(e.kind(), format!("{what}: {e}")))
}

impl PthreadMutex {
    /// A mutex with `protocol`.
    pub fn new(protocol: Protocol) -> io::Result<PthreadMutex> {
        // SAFETY: an all-zero pthread_mutex_t is a valid bit pattern;
        // pthread_mutex_init initialises it next.
        let m = Box::new(UnsafeCell::new(unsafe {
            std::mem::zeroed::<libc::pthread_mutex_t>()
        }));
        let proto = match protocol {
            Protocol::Default => {
                // SAFETY: `m` is storage for a mutex that outlives it; null
                // attributes are the defaults.
                check("pthread_mutex_init", unsafe {
                    libc::pthread_mutex_init(m.get(), std::ptr::null())
                })?;
                return Ok(PthreadMutex { m });
            }
            Protocol::None => libc::PTHREAD_PRIO_NONE,
            Protocol::Inherit => libc::PTHREAD_PRIO_INHERIT,
        };
        // SAFETY: the attribute object is initialised before use and
        // destroyed after the mutex is initialised from it; `m` outlives
        // the mutex.
        let r = unsafe {
            let mut attr = std::mem::zeroed::<libc::pthread_mutexattr_t>();
            let mut r = libc::pthread_mutexattr_init(&mut attr);
            if r == 0 {
                r = libc::pthread_mutexattr_setprotocol(&mut attr, proto);
                if r == 0 {
                    r = libc::pthread_mutex_init(m.get(), &attr);
                }
                libc::pthread_mutexattr_destroy(&mut attr);
            }
            r
        };
        check("pthread mutex init", r)?;
        Ok(PthreadMutex { m })
    }

    /// Locks, waiting at most `timeout` (pthread_mutex_timedlock on a
    /// CLOCK_REALTIME deadline); `Ok(false)` on a timeout.
    pub fn lock_timeout(&self, timeout: Duration) -> io::Result<bool> {
        let d = realtime_deadline(timeout);
        let deadline = libc::timespec {
            tv_sec: d.tv_sec as libc::time_t,
            tv_nsec: d.tv_nsec as libc::c_long,
        };
        // SAFETY: the mutex is initialised and live; `deadline` is valid.
        match unsafe { libc::pthread_mutex_timedlock(self.m.get(), &deadline) } {
            libc::ETIMEDOUT => Ok(false),
            r => check("pthread_mutex_timedlock", r).map(|()| true),
        }
    }

    /// Locks without a deadline.
    #[inline]
    pub fn lock(&self) -> io::Result<()> {
        // SAFETY: the mutex is initialised and live.
        check("pthread_mutex_lock", unsafe {
            libc::pthread_mutex_lock(self.m.get())
        })
    }

    /// Unlocks (the caller must own it: otherwise an error for an
    /// error-checking or PI mutex, undefined for the kernel's view of a
    /// default one, never memory-unsafe).
    #[inline]
    pub fn unlock(&self) -> io::Result<()> {
        // SAFETY: the mutex is initialised and live.
        check("pthread_mutex_unlock", unsafe {
            libc::pthread_mutex_unlock(self.m.get())
        })
    }
}

impl Drop for PthreadMutex {
    fn drop(&mut self) {
        // SAFETY: initialised, and no thread can hold a reference any more
        // (we own it exclusively).
        unsafe { libc::pthread_mutex_destroy(self.m.get()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn excludes_and_times_out() {
        for p in [Protocol::Inherit, Protocol::None, Protocol::Default] {
            let m = Arc::new(PthreadMutex::new(p).unwrap());
            assert!(m.lock_timeout(Duration::from_secs(1)).unwrap());
            let m2 = Arc::clone(&m);
            let other =
                std::thread::spawn(move || m2.lock_timeout(Duration::from_millis(20)).unwrap());
            assert!(!other.join().unwrap(), "{p:?}: a held mutex was taken");
            m.unlock().unwrap();
            let m2 = Arc::clone(&m);
            let other = std::thread::spawn(move || {
                m2.lock().unwrap();
                m2.unlock().unwrap();
            });
            other.join().unwrap();
        }
    }

    #[test]
    fn lock_then_unlock_leaves_it_free() {
        let m = PthreadMutex::new(Protocol::Default).unwrap();
        m.lock().unwrap();
        m.unlock().unwrap();
        assert!(m.lock_timeout(Duration::from_millis(1)).unwrap());
        m.unlock().unwrap();
    }
}
