//! Semaphores: POSIX unnamed (`sem_init`) and named (`sem_open`), and
//! System V sets (`semget`, `semtimedop`, `semctl`). Neither rustix nor
//! nix wraps any of them: plain libc here, once.

use std::cell::UnsafeCell;
use std::ffi::CStr;
use std::io;
use std::time::Duration;

use crate::clock::{realtime_deadline, timespec};

/// `errno` of the last failed call.
fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn to_libc(ts: rustix::time::Timespec) -> libc::timespec {
    libc::timespec {
        tv_sec: ts.tv_sec as libc::time_t,
        tv_nsec: ts.tv_nsec as libc::c_long,
    }
}

/// What a timed or non-blocking wait ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Taken {
    /// A unit was taken.
    Yes,
    /// None was available (try) or the time ran out (timed).
    No,
    /// A signal interrupted the wait (EINTR): the caller decides.
    Interrupted,
}

fn taken(r: libc::c_int, no: i32) -> io::Result<Taken> {
    if r == 0 {
        return Ok(Taken::Yes);
    }
    match errno() {
        libc::EINTR => Ok(Taken::Interrupted),
        e if e == no => Ok(Taken::No),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// A POSIX unnamed semaphore (`sem_init`, process-private), destroyed on
/// drop.
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
    pub fn new(initial: u32) -> io::Result<PosixSem> {
        // SAFETY: an all-zero sem_t is a valid bit pattern; sem_init
        // initialises it next.
        let sem = Box::new(UnsafeCell::new(unsafe {
            std::mem::zeroed::<libc::sem_t>()
        }));
        // SAFETY: `sem` points to a sem_t that outlives the semaphore.
        if unsafe { libc::sem_init(sem.get(), 0, initial) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(PosixSem { sem })
    }

    /// `sem_timedwait` with a CLOCK_REALTIME deadline `timeout` from now.
    pub fn wait_timeout(&self, timeout: Duration) -> io::Result<Taken> {
        let deadline = to_libc(realtime_deadline(timeout));
        // SAFETY: the semaphore is initialised and live; `deadline` is a
        // valid timespec.
        taken(
            unsafe { libc::sem_timedwait(self.sem.get(), &deadline) },
            libc::ETIMEDOUT,
        )
    }

    /// `sem_wait`: blocks until a unit is available.
    pub fn wait(&self) -> io::Result<Taken> {
        // SAFETY: the semaphore is initialised and live.
        taken(unsafe { libc::sem_wait(self.sem.get()) }, 0)
    }

    /// `sem_trywait`.
    pub fn try_wait(&self) -> io::Result<Taken> {
        // SAFETY: the semaphore is initialised and live.
        taken(unsafe { libc::sem_trywait(self.sem.get()) }, libc::EAGAIN)
    }

    /// `sem_post`.
    pub fn post(&self) -> io::Result<()> {
        // SAFETY: the semaphore is initialised and live.
        if unsafe { libc::sem_post(self.sem.get()) } != 0 {
            return Err(io::Error::last_os_error());
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

/// A POSIX named semaphore (`sem_open`), closed on drop (the name stays
/// until [`NamedSem::unlink`]).
pub struct NamedSem {
    sem: *mut libc::sem_t,
}

// SAFETY: a named semaphore is used through its functions from any thread.
unsafe impl Send for NamedSem {}
// SAFETY: as above.
unsafe impl Sync for NamedSem {}

impl NamedSem {
    /// `sem_open(name, O_CREAT, 0600, initial)`: opens or creates.
    pub fn create(name: &CStr, initial: u32) -> io::Result<NamedSem> {
        // SAFETY: `name` is a valid C string; the variadic mode and value
        // are the types sem_open reads with O_CREAT.
        let sem =
            unsafe { libc::sem_open(name.as_ptr(), libc::O_CREAT, 0o600 as libc::c_uint, initial) };
        if sem == libc::SEM_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(NamedSem { sem })
    }

    /// `sem_wait`.
    pub fn wait(&self) -> io::Result<Taken> {
        // SAFETY: `sem` came from a successful sem_open and is not closed.
        taken(unsafe { libc::sem_wait(self.sem) }, 0)
    }

    /// `sem_post`.
    pub fn post(&self) -> io::Result<()> {
        // SAFETY: as in `wait`.
        if unsafe { libc::sem_post(self.sem) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// `sem_unlink(name)`: removes the name.
    pub fn unlink(name: &CStr) -> io::Result<()> {
        // SAFETY: `name` is a valid C string.
        if unsafe { libc::sem_unlink(name.as_ptr()) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }
}

impl Drop for NamedSem {
    fn drop(&mut self) {
        // SAFETY: opened by sem_open, closed once.
        unsafe { libc::sem_close(self.sem) };
    }
}

/// The kernel id of a System V semaphore set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SemId(libc::c_int);

impl SemId {
    /// The value of semaphore `num` (`semctl GETVAL`); an error once the
    /// set is gone.
    pub fn value(self, num: u16) -> io::Result<i32> {
        // SAFETY: GETVAL takes no fourth argument; no memory is passed.
        let r = unsafe { libc::semctl(self.0, libc::c_int::from(num), libc::GETVAL) };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(r)
    }
}

/// A private System V semaphore set (`semget(IPC_PRIVATE)`), removed
/// (`IPC_RMID`) on drop.
#[derive(Debug)]
pub struct SemSet {
    id: SemId,
}

impl SemSet {
    /// `semget(IPC_PRIVATE, n, IPC_CREAT | 0600)`: `n` semaphores at 0.
    pub fn private(n: u16) -> io::Result<SemSet> {
        // SAFETY: plain system call, no memory passed.
        let id = unsafe {
            libc::semget(
                libc::IPC_PRIVATE,
                libc::c_int::from(n),
                libc::IPC_CREAT | 0o600,
            )
        };
        if id < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(SemSet { id: SemId(id) })
    }

    /// The set's kernel id.
    pub fn id(&self) -> SemId {
        self.id
    }

    /// Sets semaphore `num` to `v` (`semctl SETVAL`).
    pub fn set_value(&self, num: u16, v: i32) -> io::Result<()> {
        // SAFETY: SETVAL takes an int as its fourth (variadic) argument.
        if unsafe { libc::semctl(self.id.0, libc::c_int::from(num), libc::SETVAL, v) } != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The value of semaphore `num`.
    pub fn value(&self, num: u16) -> io::Result<i32> {
        self.id.value(num)
    }

    /// One `semtimedop` adding `delta` to semaphore `num`; with `nowait`
    /// (IPC_NOWAIT) it does not sleep; `timeout` bounds a sleep (`None`:
    /// no bound). EAGAIN (would block, or timed out) reads as
    /// `Taken::No`, EINTR as `Taken::Interrupted`.
    pub fn op(
        &self,
        num: u16,
        delta: i16,
        nowait: bool,
        timeout: Option<Duration>,
    ) -> io::Result<Taken> {
        let mut b = libc::sembuf {
            sem_num: num,
            sem_op: delta,
            sem_flg: if nowait { libc::IPC_NOWAIT as i16 } else { 0 },
        };
        let ts = timeout.map(|t| to_libc(timespec(t)));
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: `b` is one valid sembuf; `ts_ptr` is null or a valid
        // relative timeout; both outlive the call (glibc's semtimedop
        // wrapper is not in every libc, so the system call is made raw).
        let r = unsafe { libc::syscall(libc::SYS_semtimedop, self.id.0, &mut b, 1usize, ts_ptr) };
        taken(r as libc::c_int, libc::EAGAIN)
    }
}

impl Drop for SemSet {
    fn drop(&mut self) {
        // SAFETY: plain system call on our own set; no memory passed.
        unsafe { libc::semctl(self.id.0, 0, libc::IPC_RMID) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn posix_sem_counts_and_times_out() {
        let s = PosixSem::new(1).unwrap();
        assert_eq!(s.try_wait().unwrap(), Taken::Yes);
        s.post().unwrap();
        assert_eq!(s.wait().unwrap(), Taken::Yes);
        s.post().unwrap();
        assert_eq!(
            s.wait_timeout(Duration::from_millis(5)).unwrap(),
            Taken::Yes
        );
        assert_eq!(s.wait_timeout(Duration::from_millis(5)).unwrap(), Taken::No);
        assert_eq!(s.try_wait().unwrap(), Taken::No);
    }

    #[test]
    fn posix_sem_post_wakes_a_waiter() {
        let s = Arc::new(PosixSem::new(0).unwrap());
        let s2 = Arc::clone(&s);
        let h = std::thread::spawn(move || s2.wait_timeout(Duration::from_secs(10)).unwrap());
        s.post().unwrap();
        assert_eq!(h.join().unwrap(), Taken::Yes);
    }

    #[test]
    fn named_sem_opens_counts_and_unlinks() {
        let name = std::ffi::CString::new(format!("/oslayer-test.{}", std::process::id())).unwrap();
        let s = NamedSem::create(&name, 1).unwrap();
        assert_eq!(s.wait().unwrap(), Taken::Yes);
        s.post().unwrap();
        drop(s);
        NamedSem::unlink(&name).unwrap();
        assert!(NamedSem::unlink(&name).is_err(), "the name is gone");
    }

    #[test]
    fn sem_set_ops_values_and_removal() {
        let s = SemSet::private(2).unwrap();
        s.set_value(1, 2).unwrap();
        assert_eq!(s.value(1).unwrap(), 2);
        assert_eq!(s.op(1, -1, true, None).unwrap(), Taken::Yes);
        assert_eq!(s.op(0, -1, true, None).unwrap(), Taken::No);
        assert_eq!(
            s.op(0, -1, false, Some(Duration::from_millis(5))).unwrap(),
            Taken::No
        );
        assert_eq!(s.op(0, 1, false, None).unwrap(), Taken::Yes);
        assert_eq!(s.value(0).unwrap(), 1);
        let id = s.id();
        drop(s);
        assert!(id.value(0).is_err(), "the set still exists after drop");
    }
}
