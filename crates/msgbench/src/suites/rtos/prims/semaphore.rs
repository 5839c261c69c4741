//! Counting semaphores behind one trait: POSIX unnamed (`sem_init`),
//! System V (`semget` + `semtimedop`), a futex semaphore of our own, and
//! [`FifoSem`], a test double that wakes waiters in arrival order.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Result};
use oslayer::sem::{self, SemSet, Taken};

use super::super::ctx::SemKind;
use oslayer::futex;

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

/// A POSIX unnamed semaphore (`sem_init`, process-private).
pub struct PosixSem(sem::PosixSem);

impl PosixSem {
    /// `sem_init(pshared = 0, initial)`.
    pub fn new(initial: u32) -> Result<PosixSem> {
        Ok(PosixSem(
            sem::PosixSem::new(initial).map_err(|e| anyhow!("sem_init: {e}"))?,
        ))
    }
}

impl Semaphore for PosixSem {
    fn wait(&self, timeout: Duration) -> Result<bool> {
        // The deadline is fixed once: a retry after EINTR keeps it.
        let end = Instant::now() + timeout;
        loop {
            match self
                .0
                .wait_timeout(end.saturating_duration_since(Instant::now()))
            {
                Ok(Taken::Yes) => return Ok(true),
                Ok(Taken::Interrupted) => continue,
                Ok(Taken::No) => return Ok(false),
                Err(e) => bail!("sem_timedwait: {e}"),
            }
        }
    }

    fn try_wait(&self) -> Result<bool> {
        loop {
            match self.0.try_wait() {
                Ok(Taken::Yes) => return Ok(true),
                Ok(Taken::Interrupted) => continue,
                Ok(Taken::No) => return Ok(false),
                Err(e) => bail!("sem_trywait: {e}"),
            }
        }
    }

    fn post(&self) -> Result<()> {
        self.0.post().map_err(|e| anyhow!("sem_post: {e}"))
    }
}

/// A System V semaphore set of one semaphore (`semget(IPC_PRIVATE)`),
/// removed (`IPC_RMID`) on drop.
pub struct SysvSem(SemSet);

impl SysvSem {
    /// `semget(IPC_PRIVATE, 1)` then `SETVAL initial`.
    pub fn new(initial: u32) -> Result<SysvSem> {
        let set = SemSet::private(1).map_err(|e| anyhow!("semget: {e}"))?;
        let v = i32::try_from(initial).map_err(|_| anyhow!("initial count too large"))?;
        set.set_value(0, v)
            .map_err(|e| anyhow!("semctl SETVAL: {e}"))?;
        Ok(SysvSem(set))
    }

    /// One `semtimedop` of `op`; the error named.
    fn op(&self, op: i16, nowait: bool, timeout: Option<Duration>) -> Result<Taken> {
        self.0
            .op(0, op, nowait, timeout)
            .map_err(|e| anyhow!("semtimedop: {e}"))
    }
}

impl Semaphore for SysvSem {
    fn wait(&self, timeout: Duration) -> Result<bool> {
        let end = Instant::now() + timeout;
        loop {
            let left = end.saturating_duration_since(Instant::now());
            match self.op(-1, false, Some(left))? {
                Taken::Yes => return Ok(true),
                Taken::Interrupted => continue,
                Taken::No => return Ok(false),
            }
        }
    }

    fn try_wait(&self) -> Result<bool> {
        loop {
            match self.op(-1, true, None)? {
                Taken::Yes => return Ok(true),
                Taken::Interrupted => continue,
                Taken::No => return Ok(false),
            }
        }
    }

    fn post(&self) -> Result<()> {
        match self.op(1, false, None)? {
            Taken::Yes => Ok(()),
            _ => bail!("semtimedop: interrupted"),
        }
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
            futex::wait(&self.count, 0, Some(left), false);
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
            let _ = futex::wake(&self.count, 1, false);
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
            futex::wait(&ticket, 0, Some(left), false);
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
        let _ = futex::wake(&next, 1, false);
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
        let id = s.0.id();
        drop(s);
        assert!(id.value(0).is_err(), "the set still exists after drop");
    }
}
