//! **The connection answered first.** A single worker that answers a
//! connection (a reply, or a held request answered later) reads that
//! connection first the next time it has nothing queued, before it waits
//! on its set: in a request/reply exchange the connection just answered is
//! the one most likely to send next, and on one CPU the woken peer often
//! runs at once and has sent before the worker looks. A broker lives on
//! this: each call is two exchanges (client to broker, broker to service),
//! each answered connection sends the next message, and every message
//! read this way is an `epoll_wait` saved.
//!
//! The look is one non-blocking receive. A miss costs that receive, so a
//! worker whose answered connections do not answer back at once (many
//! clients, or a peer on another CPU) backs off: after a miss it skips the
//! look for twice as many messages as the last time, up to [`MOST_SKIP`].
//! And the look must not starve the set: after [`LOOK_EVERY`] hits in a
//! row the worker looks at its set without waiting, and what is ready
//! there is served next.

use std::sync::atomic::{AtomicU64, Ordering};

/// No connection answered since the last look.
const NONE: u64 = u64::MAX;
/// Hits in a row before the worker looks at its set (without waiting).
pub(super) const LOOK_EVERY: u32 = 16;
/// The most messages a miss makes the worker go without looking.
const MOST_SKIP: u32 = 256;

/// The connection whose held request a single worker answered last (its
/// raw token), set by the held request's reply (a request answered at once
/// is the one the worker served last: it knows it without this).
pub(super) struct Answered(AtomicU64);

impl Default for Answered {
    fn default() -> Answered {
        Answered(AtomicU64::new(NONE))
    }
}

impl Answered {
    /// Connection `raw` was answered.
    #[inline]
    pub(super) fn set(&self, raw: u64) {
        self.0.store(raw, Ordering::Relaxed);
    }

    /// The connection answered last, once.
    #[inline]
    pub(super) fn take(&self) -> Option<u64> {
        match self.0.swap(NONE, Ordering::Relaxed) {
            NONE => None,
            raw => Some(raw),
        }
    }
}

/// A worker's record of its looks: whether to look, and when to look at
/// the set instead.
#[derive(Debug, Default)]
pub(super) struct Looks {
    /// Messages to go without looking (after a miss).
    skip: u32,
    /// What the next miss sets `skip` to, doubled by each miss in a row.
    backoff: u32,
    /// Hits since the worker last looked at its set.
    hits: u32,
}

impl Looks {
    /// True when this message is one to look for first (counts it down
    /// otherwise).
    #[inline]
    pub(super) fn wanted(&mut self) -> bool {
        if self.skip == 0 {
            return true;
        }
        self.skip -= 1;
        false
    }

    /// The look found a message; true when it is time to look at the set.
    #[inline]
    pub(super) fn hit(&mut self) -> bool {
        self.backoff = 0;
        self.hits += 1;
        if self.hits < LOOK_EVERY {
            return false;
        }
        self.hits = 0;
        true
    }

    /// The look found nothing: the next ones are skipped for a while.
    pub(super) fn miss(&mut self) {
        self.backoff = (self.backoff * 2).clamp(1, MOST_SKIP);
        self.skip = self.backoff;
        self.hits = 0;
    }

    /// The worker waited on its set: the hits start over.
    #[inline]
    pub(super) fn waited(&mut self) {
        self.hits = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn misses_in_a_row_back_off_doubling_and_a_hit_ends_it() {
        let mut l = Looks::default();
        assert!(l.wanted());
        l.miss();
        assert_eq!((l.wanted(), l.wanted()), (false, true), "one skipped");
        l.miss();
        let skipped = (0..10).take_while(|_| !l.wanted()).count();
        assert_eq!(skipped, 2);
        for _ in 0..20 {
            l.miss();
        }
        let skipped = (0..1000).take_while(|_| !l.wanted()).count();
        assert_eq!(skipped, MOST_SKIP as usize, "bounded");
        assert!(!l.hit());
        l.miss();
        assert_eq!(
            (l.wanted(), l.wanted()),
            (false, true),
            "a hit ends the backoff"
        );
    }

    #[test]
    fn the_set_is_looked_at_every_so_many_hits() {
        let mut l = Looks::default();
        let looks: Vec<bool> = (0..2 * LOOK_EVERY).map(|_| l.hit()).collect();
        assert_eq!(looks.iter().filter(|x| **x).count(), 2);
        assert!(looks[LOOK_EVERY as usize - 1]);
        l.waited();
        assert!(!l.hit(), "a wait starts the count over");
    }

    #[test]
    fn the_answered_connection_is_taken_once() {
        let a = Answered::default();
        assert_eq!(a.take(), None);
        a.set(7);
        a.set(9);
        assert_eq!((a.take(), a.take()), (Some(9), None));
    }
}
