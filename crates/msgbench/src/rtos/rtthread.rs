//! What the THR and CLK tests need beyond [`super::rt`]: threads created
//! with explicit scheduling attributes (so a thread starts at its own
//! SCHED_FIFO or SCHED_RR priority instead of inheriting the creator's),
//! pinned through the attributes; a futex gate with bounded waits; and a
//! few small scheduler calls.

use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use anyhow::{anyhow, Result};

use crate::futex::{self, Scope};
use crate::measure::clock::monotonic_ns;

/// The scheduling a new thread is created with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The creator's policy and priority (pthread's default).
    Inherit,
    /// SCHED_FIFO at this priority.
    Fifo(i32),
    /// SCHED_RR at this priority.
    Rr(i32),
}

/// A thread started by [`spawn`]; joined by [`RawThread::join`] or on drop.
pub struct RawThread {
    id: libc::pthread_t,
    joined: bool,
}

type Task = Box<dyn FnOnce() + Send + 'static>;

extern "C" fn trampoline(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `arg` is the `Box<Task>` leaked by `spawn` for this thread
    // only; it is taken back exactly once, here.
    let task = unsafe { Box::from_raw(arg.cast::<Task>()) };
    // A panic must not unwind across the C frame; the test sees the
    // missing result instead.
    let _ = catch_unwind(AssertUnwindSafe(task));
    std::ptr::null_mut()
}

/// Creates a thread running `f` with `policy`, on `cpu` when given, with a
/// stack of `stack` bytes when given (else the default).
pub fn spawn<F>(policy: Policy, cpu: Option<usize>, stack: Option<usize>, f: F) -> Result<RawThread>
where
    F: FnOnce() + Send + 'static,
{
    let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
    // SAFETY: attr is writable storage for a pthread_attr_t.
    let rc = unsafe { libc::pthread_attr_init(attr.as_mut_ptr()) };
    if rc != 0 {
        return Err(anyhow!("pthread_attr_init: {}", err(rc)));
    }
    let attr_ptr = attr.as_mut_ptr();
    let res = configure(attr_ptr, policy, cpu, stack).and_then(|()| {
        let task: Box<Task> = Box::new(Box::new(f));
        let arg = Box::into_raw(task);
        let mut id: libc::pthread_t = 0;
        // SAFETY: attr is initialised; `trampoline` takes ownership of `arg`
        // when the thread starts; `id` is writable.
        let rc = unsafe { libc::pthread_create(&mut id, attr_ptr, trampoline, arg.cast()) };
        if rc != 0 {
            // SAFETY: the thread was not created, so `arg` is still ours.
            drop(unsafe { Box::from_raw(arg) });
            return Err(anyhow!("pthread_create ({policy:?}): {}", err(rc)));
        }
        Ok(RawThread { id, joined: false })
    });
    // SAFETY: attr was initialised by pthread_attr_init above.
    unsafe { libc::pthread_attr_destroy(attr_ptr) };
    res
}

fn configure(
    attr: *mut libc::pthread_attr_t,
    policy: Policy,
    cpu: Option<usize>,
    stack: Option<usize>,
) -> Result<()> {
    let check = |rc: i32, what: &str| {
        if rc == 0 {
            Ok(())
        } else {
            Err(anyhow!("{what}: {}", err(rc)))
        }
    };
    if let Some(size) = stack {
        // SAFETY: attr is an initialised attribute object.
        check(
            unsafe { libc::pthread_attr_setstacksize(attr, size.max(libc::PTHREAD_STACK_MIN)) },
            "pthread_attr_setstacksize",
        )?;
    }
    if let Some(c) = cpu {
        if c >= libc::CPU_SETSIZE as usize {
            return Err(anyhow!("CPU {c} out of range"));
        }
        // SAFETY: an all-zero cpu_set_t is a valid empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: c < CPU_SETSIZE (checked above).
        unsafe { libc::CPU_SET(c, &mut set) };
        // SAFETY: attr is initialised; set is a valid cpu_set_t of that size.
        check(
            unsafe {
                libc::pthread_attr_setaffinity_np(
                    attr,
                    std::mem::size_of::<libc::cpu_set_t>(),
                    &set,
                )
            },
            "pthread_attr_setaffinity_np",
        )?;
    }
    let (pol, prio) = match policy {
        Policy::Inherit => return Ok(()),
        Policy::Fifo(p) => (libc::SCHED_FIFO, p),
        Policy::Rr(p) => (libc::SCHED_RR, p),
    };
    let param = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: attr is initialised; param is a valid sched_param.
    unsafe {
        check(
            libc::pthread_attr_setinheritsched(attr, libc::PTHREAD_EXPLICIT_SCHED),
            "pthread_attr_setinheritsched",
        )?;
        check(
            libc::pthread_attr_setschedpolicy(attr, pol),
            "pthread_attr_setschedpolicy",
        )?;
        check(
            libc::pthread_attr_setschedparam(attr, &param),
            "pthread_attr_setschedparam",
        )?;
    }
    Ok(())
}

fn err(rc: i32) -> std::io::Error {
    std::io::Error::from_raw_os_error(rc)
}

impl RawThread {
    /// Waits for the thread to end.
    pub fn join(mut self) -> Result<()> {
        self.join_inner()
    }

    fn join_inner(&mut self) -> Result<()> {
        if self.joined {
            return Ok(());
        }
        self.joined = true;
        // SAFETY: id is a joinable thread created by `spawn`, joined once.
        let rc = unsafe { libc::pthread_join(self.id, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(anyhow!("pthread_join: {}", err(rc)));
        }
        Ok(())
    }
}

impl Drop for RawThread {
    fn drop(&mut self) {
        let _ = self.join_inner();
    }
}

/// A one-shot gate on a futex word: threads wait (bounded) until it opens.
#[derive(Debug, Default)]
pub struct Gate(AtomicU32);

impl Gate {
    /// A closed gate.
    pub fn new() -> Gate {
        Gate(AtomicU32::new(0))
    }

    /// True once opened.
    pub fn is_open(&self) -> bool {
        self.0.load(Ordering::Acquire) != 0
    }

    /// Opens it and wakes every waiter.
    pub fn open(&self) {
        self.0.store(1, Ordering::Release);
        let _ = futex::wake(&self.0, i32::MAX, Scope::Private);
    }

    /// Waits until it opens, at most `limit`; true when it opened.
    pub fn wait(&self, limit: Duration) -> bool {
        let deadline = monotonic_ns().saturating_add(limit.as_nanos() as u64);
        loop {
            if self.is_open() {
                return true;
            }
            let now = monotonic_ns();
            if now >= deadline {
                return false;
            }
            let left = deadline - now;
            let _ = futex::wait(&self.0, 0, Some(Duration::from_nanos(left)), Scope::Private);
        }
    }
}

/// sched_yield(2).
pub fn yield_now() {
    // SAFETY: no arguments, no preconditions.
    unsafe { libc::sched_yield() };
}

/// The CPU to run single-CPU tests on: the last online one (the first is
/// more likely to take device interrupts).
pub fn test_cpu(cpus: &[usize]) -> usize {
    cpus.last().copied().unwrap_or(0)
}

/// Runs `f` on a new thread created with `policy` on `cpu` and returns its
/// result (an error when the thread could not start or panicked).
pub fn run_on<T, F>(policy: Policy, cpu: Option<usize>, f: F) -> Result<T>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T> + Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::channel();
    spawn(policy, cpu, None, move || {
        let _ = tx.send(f());
    })?
    .join()?;
    rx.try_recv()
        .map_err(|_| anyhow!("the test thread panicked"))?
}

/// The SCHED_RR time slice of the calling thread (sched_rr_get_interval).
pub fn rr_interval() -> Result<Duration> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: pid 0 is the calling thread; ts is a valid, writable timespec.
    if unsafe { libc::sched_rr_get_interval(0, &mut ts) } != 0 {
        return Err(anyhow!(
            "sched_rr_get_interval: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(Duration::new(
        ts.tv_sec.max(0) as u64,
        ts.tv_nsec.clamp(0, 999_999_999) as u32,
    ))
}

/// Spins (reading the monotonic clock) for `d`, or until `until` is true.
pub fn spin_for(d: Duration, mut until: impl FnMut() -> bool) {
    let end = monotonic_ns().saturating_add(d.as_nanos() as u64);
    while monotonic_ns() < end && !until() {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn gate_opens_and_bounds_the_wait() {
        let g = Arc::new(Gate::new());
        assert!(!g.wait(Duration::from_millis(5)), "a closed gate times out");
        let g2 = Arc::clone(&g);
        let t = spawn(Policy::Inherit, None, Some(64 * 1024), move || {
            g2.open();
        })
        .expect("spawn");
        assert!(g.wait(Duration::from_secs(10)));
        t.join().expect("join");
    }

    #[test]
    fn spawned_closure_runs_and_a_panic_is_contained() {
        let g = Arc::new(Gate::new());
        let g2 = Arc::clone(&g);
        spawn(Policy::Inherit, None, None, move || {
            g2.open();
            panic!("contained");
        })
        .expect("spawn")
        .join()
        .expect("join");
        assert!(g.is_open());
    }
}
