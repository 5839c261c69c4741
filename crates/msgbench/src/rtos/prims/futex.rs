//! Private futex wait and wake.

use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Sleeps while `word` holds `expected`, for at most `timeout`. Returns
/// when woken, on a timeout, on a signal, or at once when `word` differs:
/// the caller re-checks its condition.
pub fn wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: libc::time_t::try_from(timeout.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(i32::try_from(timeout.subsec_nanos()).unwrap_or(0)),
    };
    // SAFETY: `word` is a live, aligned u32 for the duration of the call;
    // `ts` is a valid relative timeout; the other arguments are unused by
    // FUTEX_WAIT.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG,
            expected,
            &ts as *const libc::timespec,
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}

/// Wakes up to `n` threads sleeping on `word` (the kernel picks them in
/// priority order for real-time threads).
pub fn wake(word: &AtomicU32, n: i32) {
    // SAFETY: `word` is a live, aligned u32; FUTEX_WAKE reads no memory.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG,
            n,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        );
    }
}
