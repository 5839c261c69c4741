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
