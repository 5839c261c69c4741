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
//! Only wires that read one whole message or nothing (datagram and
//! seqpacket sockets, [`Wire::whole_reads`]) are looked at: a stream read
//! without a report can stop inside a message.
//!
//! The look is one non-blocking receive. A miss costs that receive, so a
//! worker whose answered connections do not answer back at once (many
//! clients, or a peer on another CPU) backs off: after a miss it skips the
//! look for twice as many messages as the last time, up to [`MOST_SKIP`].
//! And the look must not let a busy connection jump the queue: a worker
//! reads at most one message this way between two waits on its set, so a
//! round of the set serves each ready connection once and the last one
//! answered at most once more (a broker still saves one wait of its two a
//! call: the service's result comes this way, the client's next call
//! through the set).

use std::sync::atomic::{AtomicU64, Ordering};

#[cfg(doc)]
use crate::transport::wire::framing::Wire;

/// No connection answered since the last look.
const NONE: u64 = u64::MAX;
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

/// A worker's record of its looks: whether to look.
#[derive(Debug, Default)]
pub(super) struct Looks {
    /// Messages to go without looking (after a miss).
    skip: u32,
    /// What the next miss sets `skip` to, doubled by each miss in a row.
    backoff: u32,
    /// A look found a message since the worker last waited on its set.
    spent: bool,
}

impl Looks {
    /// True when this message is one to look for first (counts a skip
    /// down otherwise).
    #[inline]
    pub(super) fn wanted(&mut self) -> bool {
        if self.spent {
            return false;
        }
        if self.skip == 0 {
            return true;
        }
        self.skip -= 1;
        false
    }

    /// The look found a message: no other until the next wait.
    #[inline]
    pub(super) fn hit(&mut self) {
        self.backoff = 0;
        self.spent = true;
    }

    /// The look found nothing: the next ones are skipped for a while.
    pub(super) fn miss(&mut self) {
        self.backoff = (self.backoff * 2).clamp(1, MOST_SKIP);
        self.skip = self.backoff;
    }

    /// The worker waited on its set: it may look again.
    #[inline]
    pub(super) fn waited(&mut self) {
        self.spent = false;
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
        l.hit();
        l.waited();
        l.miss();
        assert_eq!(
            (l.wanted(), l.wanted()),
            (false, true),
            "a hit ends the backoff"
        );
    }

    #[test]
    fn one_message_is_read_first_between_two_waits() {
        let mut l = Looks::default();
        assert!(l.wanted());
        l.hit();
        assert!(!l.wanted() && !l.wanted(), "spent until the next wait");
        l.waited();
        assert!(l.wanted());
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
