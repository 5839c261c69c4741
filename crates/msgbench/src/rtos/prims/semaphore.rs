//! Counting semaphores behind one trait: POSIX unnamed (`sem_init`),
//! System V (`semget` + `semtimedop`), a futex semaphore of our own, and
//! [`FifoSem`], a test double that wakes waiters in arrival order.

use std::cell::UnsafeCell;
use std::collections::VecDeque;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};

use crate::futex::{self, Scope};
use crate::rtos::SemKind;

/// A counting semaphore shared between threads.
pub trait Semaphore: Send + Sync {
    /// P: takes one unit, sleeping for at most `timeout` while the count
    /// is zero. `Ok(false)` on a timeout.
    fn wait(&self, timeout: Duration) -> Result<bool>;
    /// Takes one unit if the count is above zero, without sleeping.
    fn try_wait(&self) -> Result<bool>;
    /// V: gives one unit back, waking a waiter if there is one.
    fn post(&self) -> Result<()>;
}

/// A new semaphore of `kind` with count `initial`.
pub fn new_sem(kind: SemKind, initial: u32) -> Result<Arc<dyn Semaphore>> {
    Ok(match kind {
        SemKind::Posix => Arc::new(PosixSem::new(initial)?),
        SemKind::Sysv => Arc::new(SysvSem::new(initial)?),
        SemKind::Futex => Arc::new(FutexSem::new(initial)),
    })
}

/// `errno` of the last failed call.
fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// `d` as a timespec (saturating).
fn timespec(d: Duration) -> libc::timespec {
    libc::timespec {
        tv_sec: libc::time_t::try_from(d.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(i32::try_from(d.subsec_nanos()).unwrap_or(0)),
    }
}

/// CLOCK_REALTIME now plus `d`, for the calls that take an absolute
/// deadline on that clock.
pub(crate) fn realtime_deadline(d: Duration) -> libc::timespec {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `now` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut now) };
    let d = timespec(d);
    let mut sec = now.tv_sec.saturating_add(d.tv_sec);
    let mut nsec = now.tv_nsec + d.tv_nsec;
    if nsec >= 1_000_000_000 {
        nsec -= 1_000_000_000;
        sec = sec.saturating_add(1);
    }
    libc::timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

/// A POSIX unnamed semaphore (`sem_init`, process-private).
pub struct PosixSem {
    sem: Box<UnsafeCell<libc::sem_t>>,
}

// SAFETY: sem_t is designed to be used from several threads at once
// through its functions; it lives in a Box, so its address never changes.
unsafe impl Send for PosixSem {}
// SAFETY: as above.
unsafe impl Sync for PosixSem {}

impl PosixSem {
    /// `sem_init(pshared = 0, initial)`.
    pub fn new(initial: u32) -> Result<PosixSem> {
        // SAFETY: an all-zero sem_t is a valid bit pattern; sem_init
        // initialises it next.
        let sem = Box::new(UnsafeCell::new(unsafe {
            std::mem::zeroed::<libc::sem_t>()
        }));
        // SAFETY: `sem` points to a sem_t that outlives the semaphore.
        if unsafe { libc::sem_init(sem.get(), 0, initial) } != 0 {
            bail!("sem_init: {}", io::Error::last_os_error());
        }
        Ok(PosixSem { sem })
    }
}

impl Semaphore for PosixSem {
    fn wait(&self, timeout: Duration) -> Result<bool> {
        let deadline = realtime_deadline(timeout);
        loop {
            // SAFETY: the semaphore was initialised by sem_init and is
            // live; `deadline` is a valid timespec.
            if unsafe { libc::sem_timedwait(self.sem.get(), &deadline) } == 0 {
                return Ok(true);
            }
            match errno() {
                libc::EINTR => continue,
                libc::ETIMEDOUT => return Ok(false),
                e => bail!("sem_timedwait: {}", io::Error::from_raw_os_error(e)),
            }
        }
    }

    fn try_wait(&self) -> Result<bool> {
        loop {
            // SAFETY: the semaphore is initialised and live.
            if unsafe { libc::sem_trywait(self.sem.get()) } == 0 {
                return Ok(true);
            }
            match errno() {
                libc::EINTR => continue,
                libc::EAGAIN => return Ok(false),
                e => bail!("sem_trywait: {}", io::Error::from_raw_os_error(e)),
            }
        }
    }

    fn post(&self) -> Result<()> {
        // SAFETY: the semaphore is initialised and live.
        if unsafe { libc::sem_post(self.sem.get()) } != 0 {
            bail!("sem_post: {}", io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for PosixSem {
    fn drop(&mut self) {
        // SAFETY: initialised, and no thread can be waiting on it any more
        // (we own it exclusively).
        unsafe { libc::sem_destroy(self.sem.get()) };
    }
}

/// A System V semaphore set of one semaphore (`semget(IPC_PRIVATE)`),
/// removed (`IPC_RMID`) on drop.
pub struct SysvSem {
    id: libc::c_int,
}

impl SysvSem {
    /// `semget(IPC_PRIVATE, 1)` then `SETVAL initial`.
    pub fn new(initial: u32) -> Result<SysvSem> {
        // SAFETY: plain system call, no memory passed.
        let id = unsafe { libc::semget(libc::IPC_PRIVATE, 1, libc::IPC_CREAT | 0o600) };
        if id < 0 {
            bail!("semget: {}", io::Error::last_os_error());
        }
        let s = SysvSem { id };
        let v = libc::c_int::try_from(initial).map_err(|_| anyhow!("initial count too large"))?;
        // SAFETY: SETVAL takes an int as its fourth (variadic) argument.
        if unsafe { libc::semctl(id, 0, libc::SETVAL, v) } != 0 {
            bail!("semctl SETVAL: {}", io::Error::last_os_error());
        }
        Ok(s)
    }

    /// One `semtimedop` of `op` with `flags`; the raw result and errno.
    fn op(&self, op: i16, flags: i16, timeout: Option<&libc::timespec>) -> (libc::c_long, i32) {
        let mut b = libc::sembuf {
            sem_num: 0,
            sem_op: op,
            sem_flg: flags,
        };
        let ts = timeout.map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `b` is one valid sembuf; `ts` is null or a valid
        // relative timeout; both outlive the call.
        let r = unsafe { libc::syscall(libc::SYS_semtimedop, self.id, &mut b, 1usize, ts) };
        (r, if r < 0 { errno() } else { 0 })
    }
}

impl Semaphore for SysvSem {
    fn wait(&self, timeout: Duration) -> Result<bool> {
        let end = Instant::now() + timeout;
        loop {
            let ts = timespec(end.saturating_duration_since(Instant::now()));
            match self.op(-1, 0, Some(&ts)) {
                (0, _) => return Ok(true),
                (_, libc::EINTR) => continue,
                (_, libc::EAGAIN) => return Ok(false),
                (_, e) => bail!("semtimedop: {}", io::Error::from_raw_os_error(e)),
            }
        }
    }

    fn try_wait(&self) -> Result<bool> {
        loop {
            match self.op(-1, libc::IPC_NOWAIT as i16, None) {
                (0, _) => return Ok(true),
                (_, libc::EINTR) => continue,
                (_, libc::EAGAIN) => return Ok(false),
                (_, e) => bail!("semtimedop: {}", io::Error::from_raw_os_error(e)),
            }
        }
    }

    fn post(&self) -> Result<()> {
        match self.op(1, 0, None) {
            (0, _) => Ok(()),
            (_, e) => bail!("semtimedop: {}", io::Error::from_raw_os_error(e)),
        }
    }
}

impl Drop for SysvSem {
    fn drop(&mut self) {
        // SAFETY: plain system call on our own set; no memory passed.
        unsafe { libc::semctl(self.id, 0, libc::IPC_RMID) };
    }
}

/// A counting semaphore on a futex: the count is the futex word; waiters
/// count the sleepers so that `post` makes a system call only when one
/// may be asleep.
#[derive(Default)]
pub struct FutexSem {
    count: AtomicU32,
    waiters: AtomicU32,
}

impl FutexSem {
    /// A semaphore with count `initial`.
    pub fn new(initial: u32) -> FutexSem {
        FutexSem {
            count: AtomicU32::new(initial),
            waiters: AtomicU32::new(0),
        }
    }
}

impl Semaphore for FutexSem {
    fn wait(&self, timeout: Duration) -> Result<bool> {
        let end = Instant::now() + timeout;
        loop {
            if self.try_wait()? {
                return Ok(true);
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(false);
            }
            self.waiters.fetch_add(1, Ordering::SeqCst);
            // Sleeps only while the count is still zero: a post in between
            // makes it return at once.
            let _ = futex::wait(&self.count, 0, Some(left), Scope::Private);
            self.waiters.fetch_sub(1, Ordering::SeqCst);
        }
    }

    fn try_wait(&self) -> Result<bool> {
        let mut c = self.count.load(Ordering::SeqCst);
        while c > 0 {
            match self
                .count
                .compare_exchange(c, c - 1, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return Ok(true),
                Err(now) => c = now,
            }
        }
        Ok(false)
    }

    fn post(&self) -> Result<()> {
        let old = self.count.fetch_add(1, Ordering::SeqCst);
        if old == u32::MAX {
            self.count.fetch_sub(1, Ordering::SeqCst);
            bail!("semaphore count overflow");
        }
        if self.waiters.load(Ordering::SeqCst) > 0 {
            let _ = futex::wake(&self.count, 1, Scope::Private);
        }
        Ok(())
    }
}

/// A deliberately wrong semaphore for unit tests: it hands each unit to
/// the waiter that arrived FIRST, whatever its priority (a queue of
/// per-waiter tickets, each a futex of its own). A priority-order test
/// must FAIL with it.
#[derive(Default)]
pub struct FifoSem {
    inner: Mutex<FifoInner>,
}

#[derive(Default)]
struct FifoInner {
    count: u32,
    queue: VecDeque<Arc<AtomicU32>>,
}

impl FifoSem {
    /// A semaphore with count `initial`.
    pub fn new(initial: u32) -> FifoSem {
        FifoSem {
            inner: Mutex::new(FifoInner {
                count: initial,
                queue: VecDeque::new(),
            }),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FifoInner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Semaphore for FifoSem {
    fn wait(&self, timeout: Duration) -> Result<bool> {
        let ticket = {
            let mut g = self.lock();
            if g.count > 0 {
                g.count -= 1;
                return Ok(true);
            }
            let t = Arc::new(AtomicU32::new(0));
            g.queue.push_back(Arc::clone(&t));
            t
        };
        let end = Instant::now() + timeout;
        loop {
            if ticket.load(Ordering::SeqCst) == 1 {
                return Ok(true);
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let mut g = self.lock();
                if ticket.load(Ordering::SeqCst) == 1 {
                    return Ok(true);
                }
                g.queue.retain(|t| !Arc::ptr_eq(t, &ticket));
                return Ok(false);
            }
            let _ = futex::wait(&ticket, 0, Some(left), Scope::Private);
        }
    }

    fn try_wait(&self) -> Result<bool> {
        let mut g = self.lock();
        if g.count > 0 {
            g.count -= 1;
            return Ok(true);
        }
        Ok(false)
    }

    fn post(&self) -> Result<()> {
        let next = {
            let mut g = self.lock();
            match g.queue.pop_front() {
                Some(t) => t,
                None => {
                    g.count = g.count.saturating_add(1);
                    return Ok(());
                }
            }
        };
        next.store(1, Ordering::SeqCst);
        let _ = futex::wake(&next, 1, Scope::Private);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kind's name, a semaphore at count 2 and one at count 0.
    type Case = (&'static str, Arc<dyn Semaphore>, Arc<dyn Semaphore>);

    fn all() -> Vec<Case> {
        let mk = |k| (new_sem(k, 2).unwrap(), new_sem(k, 0).unwrap());
        let mut v = Vec::new();
        for k in [SemKind::Posix, SemKind::Sysv, SemKind::Futex] {
            let (a, b) = mk(k);
            v.push((k.name(), a, b));
        }
        v.push((
            "fifo-double",
            Arc::new(FifoSem::new(2)) as Arc<dyn Semaphore>,
            Arc::new(FifoSem::new(0)) as Arc<dyn Semaphore>,
        ));
        v
    }

    #[test]
    fn counts_down_to_zero_then_refuses() {
        for (name, two, _) in all() {
            assert!(two.try_wait().unwrap(), "{name}");
            assert!(two.wait(Duration::from_secs(1)).unwrap(), "{name}");
            assert!(!two.try_wait().unwrap(), "{name}: count should be 0");
            two.post().unwrap();
            assert!(two.try_wait().unwrap(), "{name}: post gives one back");
        }
    }

    #[test]
    fn timed_wait_times_out_at_zero() {
        for (name, _, zero) in all() {
            let t = Instant::now();
            assert!(!zero.wait(Duration::from_millis(20)).unwrap(), "{name}");
            assert!(
                t.elapsed() >= Duration::from_millis(15),
                "{name} returned early"
            );
        }
    }

    #[test]
    fn post_wakes_a_waiter() {
        for (name, _, zero) in all() {
            let s = Arc::clone(&zero);
            let h = std::thread::spawn(move || s.wait(Duration::from_secs(10)).unwrap());
            std::thread::sleep(Duration::from_millis(20));
            assert!(!h.is_finished(), "{name}: waiter did not block");
            zero.post().unwrap();
            assert!(h.join().unwrap(), "{name}: waiter timed out");
        }
    }

    #[test]
    fn sysv_set_is_removed_on_drop() {
        let s = SysvSem::new(0).unwrap();
        let id = s.id;
        drop(s);
        // SAFETY: plain system call, no memory passed.
        let r = unsafe { libc::semctl(id, 0, libc::GETVAL) };
        assert!(r < 0, "the set still exists after drop");
    }
}
