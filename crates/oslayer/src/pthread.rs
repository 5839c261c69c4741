//! Threads created with explicit pthread attributes: a policy and
//! priority of their own (PTHREAD_EXPLICIT_SCHED), an affinity and a stack
//! size set before the thread runs its first instruction. `std::thread`
//! cannot do this, and neither rustix nor nix wraps `pthread_attr_*`:
//! plain libc here.

use std::ffi::c_void;
use std::io;
use std::mem::MaybeUninit;
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::sched::{Policy, MAX_CPUS};

/// How a thread is created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Attrs {
    /// Policy and priority of its own; `None` inherits the creator's.
    pub policy: Option<Policy>,
    /// The only CPU it may run on; `None`: the creator's affinity.
    pub cpu: Option<usize>,
    /// Stack size in bytes (raised to PTHREAD_STACK_MIN); `None`: default.
    pub stack: Option<usize>,
}

/// A thread started by [`spawn`]; joined by [`Thread::join`] or on drop.
#[derive(Debug)]
pub struct Thread {
    id: libc::pthread_t,
    joined: bool,
}

type Task = Box<dyn FnOnce() + Send + 'static>;

extern "C" fn trampoline(arg: *mut c_void) -> *mut c_void {
    // SAFETY: `arg` is the `Box<Task>` leaked by `spawn` for this thread
    // only; it is taken back exactly once, here.
    let task = unsafe { Box::from_raw(arg.cast::<Task>()) };
    // A panic must not unwind across the C frame; the caller sees the
    // missing result instead.
    let _ = catch_unwind(AssertUnwindSafe(task));
    std::ptr::null_mut()
}

/// An error of pthread call `what` with return code `rc`.
fn err(what: &str, rc: i32) -> io::Error {
    let e = io::Error::from_raw_os_error(rc);
    io::Error::new(e.kind(), format!("{what}: {e}"))
}

/// An initialised `pthread_attr_t`, destroyed on drop.
struct Attr(Box<MaybeUninit<libc::pthread_attr_t>>);

impl Attr {
    fn new() -> io::Result<Attr> {
        let mut a = Box::new(MaybeUninit::uninit());
        // SAFETY: `a` is writable storage for a pthread_attr_t.
        let rc = unsafe { libc::pthread_attr_init(a.as_mut_ptr()) };
        if rc != 0 {
            return Err(err("pthread_attr_init", rc));
        }
        Ok(Attr(a))
    }

    fn ptr(&mut self) -> *mut libc::pthread_attr_t {
        self.0.as_mut_ptr()
    }

    fn configure(&mut self, attrs: &Attrs) -> io::Result<()> {
        let attr = self.ptr();
        let check = |rc: i32, what: &str| if rc == 0 { Ok(()) } else { Err(err(what, rc)) };
        if let Some(size) = attrs.stack {
            // SAFETY: `attr` is an initialised attribute object.
            let rc =
                unsafe { libc::pthread_attr_setstacksize(attr, size.max(libc::PTHREAD_STACK_MIN)) };
            check(rc, "pthread_attr_setstacksize")?;
        }
        if let Some(c) = attrs.cpu {
            if c >= MAX_CPUS {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("CPU {c} out of range"),
                ));
            }
            // SAFETY: an all-zero cpu_set_t is a valid empty set; `c` is
            // below CPU_SETSIZE so CPU_SET writes inside it; `attr` is
            // initialised and `set` is a cpu_set_t of the size given.
            let rc = unsafe {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(c, &mut set);
                libc::pthread_attr_setaffinity_np(
                    attr,
                    std::mem::size_of::<libc::cpu_set_t>(),
                    &set,
                )
            };
            check(rc, "pthread_attr_setaffinity_np")?;
        }
        let Some(policy) = attrs.policy else {
            return Ok(());
        };
        let (pol, prio) = policy.raw();
        let param = libc::sched_param {
            sched_priority: prio,
        };
        // SAFETY: `attr` is initialised; `param` is a valid sched_param.
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
}

impl Drop for Attr {
    fn drop(&mut self) {
        // SAFETY: initialised by pthread_attr_init in `new`, destroyed once.
        unsafe { libc::pthread_attr_destroy(self.0.as_mut_ptr()) };
    }
}

/// Creates a thread running `f` with `attrs`. A panic in `f` ends the
/// thread without unwinding further.
pub fn spawn<F>(attrs: Attrs, f: F) -> io::Result<Thread>
where
    F: FnOnce() + Send + 'static,
{
    let mut attr = Attr::new()?;
    attr.configure(&attrs)?;
    let task: Box<Task> = Box::new(Box::new(f));
    let arg = Box::into_raw(task);
    let mut id: libc::pthread_t = 0;
    // SAFETY: `attr` is initialised; `trampoline` takes ownership of `arg`
    // when the thread starts; `id` is writable.
    let rc = unsafe { libc::pthread_create(&mut id, attr.ptr(), trampoline, arg.cast()) };
    if rc != 0 {
        // SAFETY: the thread was not created, so `arg` is still ours.
        drop(unsafe { Box::from_raw(arg) });
        return Err(err("pthread_create", rc));
    }
    Ok(Thread { id, joined: false })
}

impl Thread {
    /// Waits for the thread to end.
    pub fn join(mut self) -> io::Result<()> {
        self.join_inner()
    }

    fn join_inner(&mut self) -> io::Result<()> {
        if self.joined {
            return Ok(());
        }
        self.joined = true;
        // SAFETY: `id` is a joinable thread created by `spawn`, joined once.
        let rc = unsafe { libc::pthread_join(self.id, std::ptr::null_mut()) };
        if rc != 0 {
            return Err(err("pthread_join", rc));
        }
        Ok(())
    }
}

impl Drop for Thread {
    fn drop(&mut self) {
        let _ = self.join_inner();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn spawn_runs_with_its_attributes_and_contains_a_panic() {
        let cpu = *crate::sched::affinity().unwrap().last().unwrap();
        let seen = Arc::new(AtomicUsize::new(usize::MAX));
        let s = Arc::clone(&seen);
        let attrs = Attrs {
            policy: None,
            cpu: Some(cpu),
            stack: Some(64 * 1024),
        };
        spawn(attrs, move || {
            s.store(
                crate::sched::affinity().unwrap().len() * 1000
                    + crate::cpu::current_cpu().saturating_sub(1) as usize,
                Ordering::SeqCst,
            );
            panic!("contained");
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(seen.load(Ordering::SeqCst), 1000 + cpu);
    }

    #[test]
    fn spawn_with_a_policy_starts_at_it_or_is_refused() {
        let seen = Arc::new(std::sync::Mutex::new(None));
        let s = Arc::clone(&seen);
        let attrs = Attrs {
            policy: Some(Policy::Fifo(2)),
            ..Attrs::default()
        };
        match spawn(attrs, move || {
            *s.lock().unwrap() = crate::sched::policy().ok()
        }) {
            Ok(t) => {
                t.join().unwrap();
                assert_eq!(*seen.lock().unwrap(), Some(Policy::Fifo(2)));
            }
            Err(e) => assert_eq!(e.raw_os_error(), None, "{e}"),
        }
        let bad = Attrs {
            cpu: Some(MAX_CPUS),
            ..Attrs::default()
        };
        assert!(spawn(bad, || {}).is_err());
    }

    #[test]
    fn join_twice_through_drop_is_harmless() {
        let t = spawn(Attrs::default(), || {}).unwrap();
        drop(t);
    }
}
