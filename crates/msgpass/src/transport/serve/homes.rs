//! A pool's homes, for every server family that has them (the reactor and
//! shm): each connection has a home thread, which the kernel tells first
//! of its requests, and a pool whose threads are pinned one per CPU moves
//! a connection's home to the thread on the CPU its client last ran on, so
//! that each client is served on its own CPU. How a family learns its
//! client's CPU (a hint message, a word of the shared slot) and how it
//! re-registers a connection with another thread are its own; which
//! thread, and how often, are decided here.

use std::sync::atomic::{AtomicU32, Ordering::Relaxed};
use std::time::{Duration, Instant};

use crate::transport::api::MAX_THREADS;

/// The CPU each thread of a pool is pinned to.
#[derive(Debug)]
pub(crate) struct Homes {
    /// Thread `w`'s CPU + 1 when it is pinned to one CPU (0: not, or not
    /// known yet).
    pinned: [AtomicU32; MAX_THREADS],
}

impl Homes {
    /// No thread placed yet.
    pub(crate) fn new() -> Homes {
        Homes {
            pinned: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }

    /// Thread `w` of a pool, at its first receive: registers the CPU it is
    /// pinned to, if it is. `placed` is the thread's own flag, so that its
    /// affinity is read once (a system call), not on every request.
    #[inline]
    pub(crate) fn place(&self, w: usize, placed: &mut bool) {
        if std::mem::replace(placed, true) {
            return;
        }
        if let Some(cpu) = oslayer::cpu::pinned_cpu() {
            self.pin(w, cpu);
        }
    }

    /// Registers thread `w` as pinned to `cpu`.
    fn pin(&self, w: usize, cpu: u32) {
        self.pinned[w].store(cpu + 1, Relaxed);
    }

    /// Where a connection whose home is thread `home` and whose client
    /// last ran on CPU `cpu` - 1 (0: unknown) should move: the thread
    /// pinned on that CPU, unless its home is on it already or none is.
    pub(crate) fn move_to(&self, cpu: u32, home: usize) -> Option<usize> {
        let on = |w: usize| self.pinned.get(w).map(|p| p.load(Relaxed));
        if cpu == 0 || on(home) == Some(cpu) {
            return None;
        }
        (0..MAX_THREADS).find(|&w| on(w) == Some(cpu))
    }
}

/// When a connection's home last moved: it moves at most once a tick, so
/// that a client hopping between CPUs cannot make its server re-register
/// it on every call.
#[derive(Debug, Default)]
pub(crate) struct LastMove(Option<Instant>);

impl LastMove {
    /// True (and the move counted from now) when the last move is a tick
    /// old or more, or there was none.
    pub(crate) fn allow(&mut self, tick: Duration) -> bool {
        let now = Instant::now();
        if self.0.is_some_and(|t| now.duration_since(t) < tick) {
            return false;
        }
        self.0 = Some(now);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_connection_moves_to_the_thread_on_its_clients_cpu() {
        let h = Homes::new();
        h.pin(0, 0);
        h.pin(1, 1);
        assert_eq!(h.move_to(2, 0), Some(1), "client on CPU 1");
        assert_eq!(h.move_to(2, 1), None, "home already there");
        assert_eq!(h.move_to(0, 0), None, "client's CPU unknown");
        assert_eq!(h.move_to(4, 0), None, "no thread on CPU 3");
    }

    #[test]
    fn a_home_on_the_right_cpu_stays_though_another_thread_shares_it() {
        let h = Homes::new();
        h.pin(0, 5);
        h.pin(2, 5);
        assert_eq!(h.move_to(6, 2), None);
        assert_eq!(h.move_to(6, 1), Some(0));
    }

    #[test]
    fn a_thread_is_placed_once() {
        let h = Homes::new();
        let mut placed = false;
        h.place(3, &mut placed);
        assert!(placed);
        // A later pin of the test thread is not looked at again.
        h.pinned[3].store(0, Relaxed);
        h.place(3, &mut placed);
        assert_eq!(h.pinned[3].load(Relaxed), 0);
    }

    #[test]
    fn a_home_moves_at_most_once_a_tick() {
        let mut m = LastMove::default();
        assert!(m.allow(Duration::from_secs(60)));
        assert!(!m.allow(Duration::from_secs(60)));
        assert!(m.allow(Duration::ZERO));
    }
}
