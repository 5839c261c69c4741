//! Table variants (`--table`), the heart of the study: how N forwarding
//! workers share one FIB, its route list (output port per route) and the
//! per-route counters while a route-update thread changes them.
//!
//! | variant   | a lookup takes                          | counters               | an update takes                  |
//! |-----------|-----------------------------------------|------------------------|----------------------------------|
//! | `mutex`   | the one `std::sync::Mutex`              | under that same lock   | the same lock                    |
//! | `rwlock`  | the shared read lock (`std::sync::RwLock`) | per worker, merged at the end | the write lock           |
//! | `rcu`     | a snapshot load (`arc-swap`), no lock   | per worker, merged at the end | a spare copy, then a swap (below) |
//! | `per-cpu` | the worker's own copy's own `Mutex`     | in the worker's copy   | every copy's lock, one by one    |
//!
//! `mutex` is what the study found (the lock was needed only for the
//! statistics and the rare updates, yet every packet took it); `per-cpu`
//! is its fix. For `rwlock` the standard library's lock is used rather
//! than `parking_lot` (also maintained): since Rust 1.62 it is a futex
//! lock of one atomic word that prefers waiting writers, the same design
//! class, so a read costs the same atomic read-modify-write on one shared
//! cache line either way, and that cache line is what the variant is
//! about; no dependency is added for it. The per-worker locks of
//! `per-cpu` sit on cache lines of their own.
//!
//! The forwarder's interface: [`Table::worker`] gives each worker thread a
//! [`WorkerHandle`] whose [`WorkerHandle::forward`] does lookup and
//! counters; the route-update thread ([`Updater`]) calls
//! [`Table::update`]. Lock timing is explained in [`stats`].
//!
//! `rcu` updates without copying the table: the writer keeps the
//! previously published snapshot as a spare, one change behind; an update
//! waits until no reader holds the spare (each holds it for one lookup),
//! applies the change it missed and the new one, and swaps it in.

mod rcu;
pub mod stats;
pub mod update;

#[cfg(test)]
mod tests;

use std::sync::{Mutex, PoisonError, RwLock};

use super::fib::{Fib, RouteId};
use crate::measure::clock::Clock;
use stats::{lock, read, LockTimer};
pub use stats::{LockStats, INTERRUPTED_NS, SAMPLE_EVERY};
pub use update::{ChangeStream, RouteChange, UpdatePlan, Updater, UpdaterReport};

/// Which way the workers share the table (`--table`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Variant {
    /// One mutex around lookup, next hops and counters.
    Mutex,
    /// A reader-writer lock; counters per worker.
    #[serde(rename = "rwlock")]
    RwLock,
    /// Snapshots that updates replace; counters per worker.
    Rcu,
    /// A copy per worker, each with its own mutex and counters.
    PerCpu,
}

impl Variant {
    /// All four, in the study's order of interest.
    pub const ALL: [Variant; 4] = [
        Variant::Mutex,
        Variant::RwLock,
        Variant::Rcu,
        Variant::PerCpu,
    ];

    /// The `--table` name: `mutex`, `rwlock`, `rcu` or `per-cpu`.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Mutex => "mutex",
            Variant::RwLock => "rwlock",
            Variant::Rcu => "rcu",
            Variant::PerCpu => "per-cpu",
        }
    }

    /// The variant of a `--table` name.
    pub fn parse(name: &str) -> Option<Variant> {
        Variant::ALL.into_iter().find(|v| v.name() == name)
    }
}

impl std::str::FromStr for Variant {
    type Err = TableError;

    fn from_str(s: &str) -> Result<Variant, TableError> {
        Variant::parse(s).ok_or_else(|| TableError::UnknownVariant(s.to_string()))
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What can go wrong with a table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// A `--table` name that is none of the four.
    #[error("unknown table variant `{0}` (mutex, rwlock, rcu, per-cpu)")]
    UnknownVariant(String),
    /// A change names a route outside the route list.
    #[error("route {route} is outside the route list ({routes} routes)")]
    NoSuchRoute {
        /// The route named.
        route: RouteId,
        /// The length of the route list.
        routes: usize,
    },
}

/// Where a packet goes: its route and that route's output port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Hop {
    /// The route the lookup found.
    pub route: RouteId,
    /// Its output port at the time.
    pub port: u16,
}

/// A route's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct Counts {
    /// Packets forwarded on the route.
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
}

impl Counts {
    #[inline(always)]
    fn add(&mut self, bytes: u32) {
        self.packets += 1;
        self.bytes += u64::from(bytes);
    }
}

/// A FIB with its route list: what a lookup reads and an update changes.
#[derive(Debug, Clone, PartialEq)]
pub struct Routing<F> {
    /// The prefixes.
    pub fib: F,
    /// Output port per route id.
    pub ports: Vec<u16>,
}

impl<F: Fib> Routing<F> {
    /// The hop of `dst`; `None` without a matching prefix, or when the
    /// prefix's route has no entry in the route list.
    #[inline(always)]
    pub fn hop(&self, dst: u32) -> Option<Hop> {
        let route = self.fib.lookup(dst)?;
        let port = *self.ports.get(route as usize)?;
        Some(Hop { route, port })
    }

    fn apply(&mut self, change: &RouteChange) {
        change.apply(&mut self.fib, &mut self.ports);
    }
}

/// Routing and counters under one lock (`mutex`, and each `per-cpu` copy).
#[derive(Debug)]
struct Locked<F> {
    routing: Routing<F>,
    counts: Vec<Counts>,
}

impl<F: Fib> Locked<F> {
    fn new(routing: Routing<F>) -> Locked<F> {
        let counts = super::lpm::huge_vec(routing.ports.len(), Counts::default());
        Locked { routing, counts }
    }

    #[inline(always)]
    fn forward(&mut self, dst: u32, bytes: u32) -> Option<Hop> {
        let hop = self.routing.hop(dst)?;
        self.counts[hop.route as usize].add(bytes);
        Some(hop)
    }
}

/// Keeps a per-worker lock off its neighbours' cache lines (128 bytes:
/// the adjacent-line prefetcher pairs 64-byte lines).
#[derive(Debug)]
#[repr(align(128))]
struct Padded<T>(T);

#[derive(Debug)]
enum Shared<F> {
    Mutex(Mutex<Locked<F>>),
    RwLock(RwLock<Routing<F>>),
    Rcu(rcu::Rcu<F>),
    PerCpu(Vec<Padded<Mutex<Locked<F>>>>),
}

/// A forwarding table shared by `workers` worker threads in one of the
/// four ways ([`Variant`]).
#[derive(Debug)]
pub struct Table<F> {
    variant: Variant,
    workers: usize,
    routes: usize,
    shared: Shared<F>,
    /// Counters handed back by the workers of `rwlock` and `rcu`.
    merged: Mutex<Vec<Counts>>,
    /// Serialises updates, so every per-cpu copy sees them in one order.
    updating: Mutex<()>,
    clock: Clock,
}

impl<F: Fib> Table<F> {
    /// A table of `fib` with `ports[route]` the output port of each route,
    /// shared the `variant` way by `workers` workers (at least one).
    /// `per-cpu` makes a copy per worker, `rcu` one spare copy.
    pub fn new(variant: Variant, fib: F, ports: Vec<u16>, workers: usize) -> Table<F> {
        let workers = workers.max(1);
        let routes = ports.len();
        let routing = Routing { fib, ports };
        let shared = match variant {
            Variant::Mutex => Shared::Mutex(Mutex::new(Locked::new(routing))),
            Variant::RwLock => Shared::RwLock(RwLock::new(routing)),
            Variant::Rcu => Shared::Rcu(rcu::Rcu::new(routing)),
            Variant::PerCpu => Shared::PerCpu(
                (0..workers)
                    .map(|_| Padded(Mutex::new(Locked::new(routing.clone()))))
                    .collect(),
            ),
        };
        Table {
            variant,
            workers,
            routes,
            shared,
            merged: Mutex::new(vec![Counts::default(); routes]),
            updating: Mutex::new(()),
            clock: Clock::best(),
        }
    }

    /// How the table is shared.
    pub fn variant(&self) -> Variant {
        self.variant
    }

    /// The number of workers it was made for.
    pub fn workers(&self) -> usize {
        self.workers
    }

    /// The length of the route list.
    pub fn routes(&self) -> usize {
        self.routes
    }

    /// The handle of worker `index`, for its thread. With `per-cpu`, the
    /// index picks the copy (taken modulo the number of workers; give
    /// each worker its own index).
    pub fn worker(&self, index: usize) -> WorkerHandle<'_, F> {
        let per_worker = matches!(self.variant, Variant::RwLock | Variant::Rcu);
        WorkerHandle {
            table: self,
            index: index % self.workers,
            local: if per_worker {
                super::lpm::huge_vec(self.routes, Counts::default())
            } else {
                Vec::new()
            },
            timer: LockTimer::new(self.clock),
        }
    }

    /// Applies `change` (per-cpu: to every copy, one after the other).
    /// Fails, changing nothing, if it names a route outside the list.
    pub fn update(&self, change: &RouteChange) -> Result<(), TableError> {
        if let Some(route) = change.route().filter(|&r| r as usize >= self.routes) {
            return Err(TableError::NoSuchRoute {
                route,
                routes: self.routes,
            });
        }
        let _order = self.updating.lock().unwrap_or_else(PoisonError::into_inner);
        match &self.shared {
            Shared::Mutex(m) => locked(m).routing.apply(change),
            Shared::RwLock(l) => l
                .write()
                .unwrap_or_else(PoisonError::into_inner)
                .apply(change),
            Shared::Rcu(r) => r.update(change),
            Shared::PerCpu(copies) => {
                for c in copies {
                    locked(&c.0).routing.apply(change);
                }
            }
        }
        Ok(())
    }

    /// Packets and bytes per route, summed over all workers. Complete
    /// once every [`WorkerHandle`] is dropped or finished (`rwlock` and
    /// `rcu` workers count privately and hand their counts back then).
    pub fn totals(&self) -> Vec<Counts> {
        let mut sum = self
            .merged
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let mut add = |counts: &[Counts]| add_all(&mut sum, counts);
        match &self.shared {
            Shared::Mutex(m) => add(&locked(m).counts),
            Shared::PerCpu(copies) => copies.iter().for_each(|c| add(&locked(&c.0).counts)),
            Shared::RwLock(_) | Shared::Rcu(_) => {}
        }
        sum
    }

    /// A copy of the routing each worker reads: one for the shared
    /// variants, one per worker for `per-cpu` (to check updates reached
    /// every copy).
    pub fn views(&self) -> Vec<Routing<F>> {
        match &self.shared {
            Shared::Mutex(m) => vec![locked(m).routing.clone()],
            Shared::RwLock(l) => vec![l.read().unwrap_or_else(PoisonError::into_inner).clone()],
            Shared::Rcu(r) => vec![r.snapshot()],
            Shared::PerCpu(copies) => copies
                .iter()
                .map(|c| locked(&c.0).routing.clone())
                .collect(),
        }
    }
}

/// One worker's access to a [`Table`]: forwards packets, counts them, and
/// times its lock. Its counters reach the table when it is dropped or
/// [finished](WorkerHandle::finish).
#[derive(Debug)]
pub struct WorkerHandle<'a, F> {
    table: &'a Table<F>,
    index: usize,
    /// Per-route counters of `rwlock` and `rcu` workers (else empty).
    local: Vec<Counts>,
    timer: LockTimer,
}

impl<F: Fib> WorkerHandle<'_, F> {
    /// Looks `dst` up and counts a packet of `bytes` on its route; `None`
    /// (nothing counted) when no route matches.
    #[inline]
    pub fn forward(&mut self, dst: u32, bytes: u32) -> Option<Hop> {
        let table = self.table;
        match &table.shared {
            Shared::Mutex(m) => self
                .timer
                .run(true, |c| lock(m, c), |g| g.forward(dst, bytes)),
            Shared::PerCpu(copies) => {
                let own = &copies[self.index].0;
                self.timer
                    .run(true, |c| lock(own, c), |g| g.forward(dst, bytes))
            }
            Shared::RwLock(l) => {
                let hop = self.timer.run(true, |c| read(l, c), |g| g.hop(dst));
                self.count(hop, bytes)
            }
            Shared::Rcu(r) => {
                let hop = self.timer.run(false, |_| (r.load(), None), |g| g.hop(dst));
                self.count(hop, bytes)
            }
        }
    }

    #[inline(always)]
    fn count(&mut self, hop: Option<Hop>, bytes: u32) -> Option<Hop> {
        if let Some(h) = hop {
            self.local[h.route as usize].add(bytes);
        }
        hop
    }

    /// This worker's index (its copy, for `per-cpu`).
    pub fn index(&self) -> usize {
        self.index
    }

    /// The lock figures so far.
    pub fn stats(&self) -> LockStats {
        self.timer.stats()
    }

    /// Hands the counters back to the table and returns the lock figures.
    pub fn finish(self) -> LockStats {
        self.stats()
    }
}

impl<F> Drop for WorkerHandle<'_, F> {
    fn drop(&mut self) {
        if !self.local.is_empty() {
            let local = std::mem::take(&mut self.local);
            let mut merged = self
                .table
                .merged
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            add_all(&mut merged, &local);
        }
    }
}

/// Takes `m` outside the forwarding path (poisoned or not).
fn locked<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Adds `counts` route by route to `sum`.
fn add_all(sum: &mut [Counts], counts: &[Counts]) {
    for (s, c) in sum.iter_mut().zip(counts) {
        s.packets += c.packets;
        s.bytes += c.bytes;
    }
}
