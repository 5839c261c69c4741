//! Thread ids. Backed by rustix.

use std::cell::Cell;

thread_local! {
    /// This thread's id, once asked.
    static TID: Cell<i32> = const { Cell::new(0) };
}

/// The calling thread's id (as `gettid(2)`), cached per thread after the
/// first call so that per-message users pay no system call. (A child made
/// by `fork` inherits the forking thread's cache: do not call it there
/// expecting the child's id before exec.)
#[inline]
pub fn gettid() -> i32 {
    TID.with(|t| {
        if t.get() == 0 {
            t.set(rustix::thread::gettid().as_raw_nonzero().get());
        }
        t.get()
    })
}

#[cfg(test)]
mod tests {
    use super::gettid;

    #[test]
    fn cached_equal_to_the_kernel_and_distinct_per_thread() {
        let me = gettid();
        assert_eq!(me, gettid());
        let other = std::thread::spawn(gettid).join().unwrap();
        assert_ne!(me, other);
        // SAFETY: gettid takes no arguments and cannot fail.
        assert_eq!(me as libc::c_long, unsafe {
            libc::syscall(libc::SYS_gettid)
        });
    }
}
