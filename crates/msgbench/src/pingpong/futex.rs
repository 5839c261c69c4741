//! Futex ping-pong: the floor of a blocking shared-memory exchange.
//!
//! The word lives in a `MAP_SHARED` mapping of a memfd and is used with
//! `FUTEX_WAIT`/`FUTEX_WAKE` *without* `FUTEX_PRIVATE_FLAG`, exactly like
//! the `shm` transport's slots, so the kernel takes the same (shared-key)
//! path. Both sides sleep at once, never spin: A stores `2i+1`, wakes B and
//! sleeps while the word still holds `2i+1`; B, woken, checks the value,
//! stores `2i+2` and wakes A. Each wait passes the value it expects to
//! still be there, so the kernel refuses to sleep if the peer has already
//! answered: no wake-up is lost.

use std::sync::atomic::{AtomicU32, Ordering};

use super::shared::SharedPage;
use super::{counts, mismatch, reply_of, request_of, result, run_pair, timed, PingPong, POISON};
use oslayer::futex;

/// Sleeps while `word` holds `expected` (process-shared, no time limit).
fn futex_wait(word: &AtomicU32, expected: u32) {
    // Only a misuse could fail; the caller re-checks the word anyway.
    futex::wait(word, expected, None, true);
}

/// Wakes up to `n` waiters on `word`.
fn futex_wake(word: &AtomicU32, n: u32) {
    let _ = futex::wake(word, n, true);
}

/// Waits until `word` no longer holds `last`, and returns what it holds.
/// The loop absorbs spurious wake-ups and signals.
fn wait_change(word: &AtomicU32, last: u32) -> u32 {
    loop {
        let v = word.load(Ordering::Acquire);
        if v != last {
            return v;
        }
        futex_wait(word, last);
    }
}

/// Stores `v` and wakes the peer.
fn post(word: &AtomicU32, v: u32) {
    word.store(v, Ordering::Release);
    futex_wake(word, 1);
}

/// Poisons the word and wakes everyone when dropped armed, so a side that
/// fails (error or panic) releases its peer.
struct Guard<'a> {
    word: &'a AtomicU32,
    armed: bool,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.word.store(POISON, Ordering::Release);
            futex_wake(self.word, i32::MAX as u32);
        }
    }
}

/// Ping-pong through a process-shared futex word between threads on
/// `cpus`, both sides sleeping at once.
pub fn futex(cpus: (Option<usize>, Option<usize>), round_trips: u64) -> anyhow::Result<PingPong> {
    run(cpus, round_trips, reply_of)
}

/// The ping-pong, with B answering `answer(i)` (tests inject faults here).
fn run(
    cpus: (Option<usize>, Option<usize>),
    round_trips: u64,
    answer: fn(u64) -> u32,
) -> anyhow::Result<PingPong> {
    let (warmup, total) = counts(round_trips)?;
    let shared = SharedPage::new(c"msgbench-floor-futex")?;
    let word = shared.word();
    let elapsed = run_pair(
        cpus,
        || {
            let mut guard = Guard { word, armed: true };
            let d = timed(warmup, round_trips, |i| {
                let req = request_of(i);
                post(word, req);
                let got = wait_change(word, req);
                if got != reply_of(i) {
                    return Err(mismatch("A", i, reply_of(i), got));
                }
                Ok(())
            })?;
            guard.armed = false;
            Ok(d)
        },
        || {
            let mut guard = Guard { word, armed: true };
            let mut last = 0;
            for i in 0..total {
                let got = wait_change(word, last);
                if got != request_of(i) {
                    return Err(mismatch("B", i, request_of(i), got));
                }
                last = answer(i);
                post(word, last);
            }
            guard.armed = false;
            Ok(())
        },
    )?;
    Ok(result(round_trips, elapsed))
}

#[cfg(test)]
mod tests {
    use super::*;
    crate::pingpong::test_util::floor_tests!(futex, run);
}
