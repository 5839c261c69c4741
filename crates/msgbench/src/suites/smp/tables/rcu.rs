//! The `rcu` table: readers load the current snapshot ([`arc_swap`]),
//! an update publishes a new one.
//!
//! Copying a 1,000,000-prefix table for every change would cost tens of
//! megabytes per update, so the writer keeps two snapshots, as left-right
//! does: the published one and a spare (the one published before it, one
//! change behind). An update waits until no reader still holds the spare
//! (the grace period: `Arc::get_mut` succeeds once every guard of it is
//! dropped, and readers hold one for one lookup only), applies the change
//! it missed and the new one, publishes it, and keeps the old one as the
//! next spare. Two FIB operations per change, no copy, no unsafe.

use std::sync::{Arc, Mutex, PoisonError};

use arc_swap::{ArcSwap, Guard};

use super::super::fib::Fib;
use super::update::RouteChange;
use super::Routing;

/// The published snapshot and the writer's side.
#[derive(Debug)]
pub(super) struct Rcu<F> {
    current: ArcSwap<Routing<F>>,
    writer: Mutex<Writer<F>>,
}

#[derive(Debug)]
struct Writer<F> {
    /// The previously published snapshot, behind by `pending`.
    spare: Arc<Routing<F>>,
    /// The change published but not yet applied to `spare`.
    pending: Option<RouteChange>,
}

impl<F: Fib> Rcu<F> {
    /// Publishes `routing` (one copy of it is made, for the spare).
    pub(super) fn new(routing: Routing<F>) -> Rcu<F> {
        Rcu {
            writer: Mutex::new(Writer {
                spare: Arc::new(routing.clone()),
                pending: None,
            }),
            current: ArcSwap::from_pointee(routing),
        }
    }

    /// The current snapshot, for one lookup.
    #[inline(always)]
    pub(super) fn load(&self) -> Guard<Arc<Routing<F>>> {
        self.current.load()
    }

    /// A copy of the current snapshot.
    pub(super) fn snapshot(&self) -> Routing<F> {
        Routing::clone(&self.current.load_full())
    }

    /// Applies `change` and publishes the result (see the module doc).
    pub(super) fn update(&self, change: &RouteChange) {
        let mut w = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        let w = &mut *w;
        while Arc::get_mut(&mut w.spare).is_none() {
            std::thread::yield_now();
        }
        if let Some(spare) = Arc::get_mut(&mut w.spare) {
            if let Some(missed) = w.pending.take() {
                spare.apply(&missed);
            }
            spare.apply(change);
        }
        let old = self.current.swap(Arc::clone(&w.spare));
        w.spare = old;
        w.pending = Some(*change);
    }
}
