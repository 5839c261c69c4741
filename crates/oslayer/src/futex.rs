//! Futexes: wait on and wake a 32-bit word. Backed by rustix (one raw
//! `futex` system call, no allocation).

use std::sync::atomic::AtomicU32;
use std::time::Duration;

use rustix::thread::futex::{self as rfutex, Flags, Timespec};

/// The private flag unless the word is shared between processes.
#[inline]
fn flags(shared: bool) -> Flags {
    if shared {
        Flags::empty()
    } else {
        Flags::PRIVATE
    }
}

/// Blocks while `*word == expected`, at most `timeout` (`None`: no limit).
/// Spurious, interrupted and timed-out returns are normal and not told
/// apart: the caller re-checks its condition. `shared` selects a
/// process-shared futex (required for memory shared between processes;
/// the private one is cheaper otherwise).
#[inline]
pub fn wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>, shared: bool) {
    let ts = timeout.map(|d| Timespec {
        tv_sec: d.as_secs().min(i64::MAX as u64) as i64,
        tv_nsec: d.subsec_nanos() as _,
    });
    let _ = rfutex::wait(word, flags(shared), expected, ts.as_ref());
}

/// Wakes up to `n` waiters blocked on `word`; returns how many woke (0 on
/// error, which only a bad address could cause).
#[inline]
pub fn wake(word: &AtomicU32, n: u32, shared: bool) -> usize {
    rfutex::wake(word, flags(shared), n).unwrap_or(0)
}

/// The most words one [`wait_any`] watches (the kernel's `FUTEX_WAITV_MAX`).
pub const WAIT_ANY_MAX: usize = 128;

/// Blocks while every word equals its expected value, until any of them is
/// woken, at most `timeout` (`None`: no limit): `futex_waitv` (Linux 5.16).
/// As with [`wait`], every return is to be re-checked by the caller.
/// `shared` as in [`wait`]. Returns at once when `words` is empty.
///
/// # Panics
/// When given more than [`WAIT_ANY_MAX`] words (a caller's bug).
pub fn wait_any<'a>(
    words: impl IntoIterator<Item = (&'a AtomicU32, u32)>,
    timeout: Option<Duration>,
    shared: bool,
) {
    let mut list = [rfutex::Wait::new(); WAIT_ANY_MAX];
    let mut n = 0;
    for (word, expected) in words {
        assert!(n < WAIT_ANY_MAX, "more than {WAIT_ANY_MAX} futex words");
        let w = &mut list[n];
        w.val = u64::from(expected);
        w.uaddr = rfutex::WaitPtr::new(word.as_ptr().cast());
        w.flags = rfutex::WaitFlags::SIZE_U32
            | if shared {
                rfutex::WaitFlags::empty()
            } else {
                rfutex::WaitFlags::PRIVATE
            };
        n += 1;
    }
    if n == 0 {
        return;
    }
    // The timeout of futex_waitv is a deadline on the given clock.
    let deadline = timeout.map(|d| {
        let now = crate::clock::read(crate::clock::Clock::Monotonic);
        let nanos = now.tv_nsec as u64 + u64::from(d.subsec_nanos());
        let secs = (now.tv_sec as u64)
            .saturating_add(d.as_secs())
            .saturating_add(nanos / 1_000_000_000);
        Timespec {
            tv_sec: secs.min(i64::MAX as u64) as i64,
            tv_nsec: (nanos % 1_000_000_000) as _,
        }
    });
    let _ = rfutex::waitv(
        &list[..n],
        rfutex::WaitvFlags::empty(),
        deadline.as_ref(),
        rfutex::ClockId::Monotonic,
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;

    #[test]
    fn a_changed_word_does_not_block_and_a_timeout_returns() {
        let w = AtomicU32::new(1);
        wait(&w, 0, None, false); // value differs: returns at once
        wait(&w, 1, Some(Duration::from_millis(1)), true);
        assert_eq!(wake(&w, 1, false), 0);
    }

    #[test]
    fn wait_any_returns_on_a_changed_word_a_wake_or_the_deadline() {
        let (a, b) = (AtomicU32::new(1), AtomicU32::new(2));
        wait_any([(&a, 1), (&b, 0)], None, true); // b differs: at once
        wait_any([(&a, 1), (&b, 2)], Some(Duration::from_millis(1)), true);
        wait_any([], None, true);
        let words = Arc::new([AtomicU32::new(0), AtomicU32::new(0)]);
        let w2 = Arc::clone(&words);
        let t = std::thread::spawn(move || {
            while w2[1].load(Ordering::SeqCst) == 0 {
                wait_any([(&w2[0], 0), (&w2[1], 0)], None, false);
            }
        });
        words[1].store(1, Ordering::SeqCst);
        wake(&words[1], 1, false);
        t.join().unwrap();
    }

    #[test]
    fn wake_releases_a_waiter() {
        let w = Arc::new(AtomicU32::new(0));
        let w2 = Arc::clone(&w);
        let t = std::thread::spawn(move || {
            while w2.load(Ordering::SeqCst) == 0 {
                wait(&w2, 0, None, false);
            }
        });
        w.store(1, Ordering::SeqCst);
        wake(&w, 1, false);
        t.join().unwrap();
    }
}
