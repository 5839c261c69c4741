//! futex(2) wait and wake, the one wrapper the floors, the rtos primitives
//! and the validation equivalents share.

use std::io;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Whether a futex word is private to the process or shared with others
/// (a `MAP_SHARED` mapping).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Threads of this process only (`FUTEX_PRIVATE_FLAG`: cheaper).
    Private,
    /// Processes sharing the memory.
    Shared,
}

impl Scope {
    fn flag(self) -> libc::c_int {
        match self {
            Scope::Private => libc::FUTEX_PRIVATE_FLAG,
            Scope::Shared => 0,
        }
    }
}

/// Sleeps while `word` holds `expected`, at most `timeout` (`None`: no
/// limit). Returns when woken, timed out, interrupted, or at once when the
/// word differs: the caller re-checks its condition. Only a misuse (a bad
/// address or argument) is an error.
pub fn wait(
    word: &AtomicU32,
    expected: u32,
    timeout: Option<Duration>,
    scope: Scope,
) -> io::Result<()> {
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: libc::time_t::try_from(t.as_secs()).unwrap_or(libc::time_t::MAX),
        tv_nsec: libc::c_long::from(t.subsec_nanos()),
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `word` is a live, aligned u32 for the duration of the call;
    // `ts_ptr` is null or points to a valid relative timeout; FUTEX_WAIT
    // uses no other argument.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT | scope.flag(),
            expected,
            ts_ptr,
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN | libc::ETIMEDOUT | libc::EINTR) => {}
            _ => return Err(e),
        }
    }
    Ok(())
}

/// Wakes up to `n` threads sleeping on `word` (for real-time threads the
/// kernel picks them in priority order); returns how many it woke.
pub fn wake(word: &AtomicU32, n: i32, scope: Scope) -> io::Result<usize> {
    // SAFETY: FUTEX_WAKE only uses the address of `word` as a key and
    // reads no other memory.
    let r = unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE | scope.flag(),
            n,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0u32,
        )
    };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_returns_at_once_on_another_value_and_times_out() {
        let w = AtomicU32::new(1);
        wait(&w, 0, None, Scope::Private).unwrap();
        let t = std::time::Instant::now();
        wait(&w, 1, Some(Duration::from_millis(20)), Scope::Private).unwrap();
        assert!(t.elapsed() >= Duration::from_millis(15));
        assert_eq!(wake(&w, 1, Scope::Private).unwrap(), 0);
    }
}
