//! Route changes, a deterministic stream of them, and the route-update
//! thread ([`Updater`]) that applies them to a table at a set rate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::super::fib::{Fib, Prefix, RouteId};
use super::Table;

/// One change to the routing: a table applies it to its FIB and its route
/// list (the output port of each route).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteChange {
    /// Route `route` now leaves through `port`.
    NextHop {
        /// The route.
        route: RouteId,
        /// Its new output port.
        port: u16,
    },
    /// Adds `prefix`, or points it at another route.
    Insert {
        /// The prefix.
        prefix: Prefix,
        /// Its route.
        route: RouteId,
    },
    /// Removes `prefix` (its addresses fall back to a shorter prefix).
    Withdraw {
        /// The prefix.
        prefix: Prefix,
    },
}

impl RouteChange {
    /// The route this change names, if any (to check it is in the list).
    pub fn route(&self) -> Option<RouteId> {
        match *self {
            RouteChange::NextHop { route, .. } | RouteChange::Insert { route, .. } => Some(route),
            RouteChange::Withdraw { .. } => None,
        }
    }

    /// Applies the change to a FIB and its route list. A `NextHop` for a
    /// route outside `ports` does nothing (tables check routes first).
    pub fn apply<F: Fib>(&self, fib: &mut F, ports: &mut [u16]) {
        match *self {
            RouteChange::NextHop { route, port } => {
                if let Some(p) = ports.get_mut(route as usize) {
                    *p = port;
                }
            }
            RouteChange::Insert { prefix, route } => fib.insert(prefix, route),
            RouteChange::Withdraw { prefix } => {
                fib.remove(prefix);
            }
        }
    }
}

/// What the route-update thread does: `rate` changes per second drawn
/// from a [`ChangeStream`] seeded with `seed` over `prefixes`.
#[derive(Debug, Clone)]
pub struct UpdatePlan {
    /// Changes per second; 0 or less: none.
    pub rate: f64,
    /// Seed of the change stream.
    pub seed: u64,
    /// The table's prefixes and their routes, as the table was built.
    pub prefixes: Vec<(Prefix, RouteId)>,
    /// Number of routes in the route list (route ids are below it).
    pub routes: u32,
    /// Number of output ports (ports are below it).
    pub ports: u16,
}

impl UpdatePlan {
    /// The plan's change stream, from its start: the same every time.
    pub fn changes(&self) -> ChangeStream {
        ChangeStream {
            rng: SplitMix(self.seed),
            prefixes: self.prefixes.clone(),
            routes: self.routes,
            ports: self.ports,
            withdrawn: None,
        }
    }
}

/// A deterministic, endless stream of valid changes: a quarter re-point a
/// prefix to another route, half move a route to another port, and a
/// quarter withdraw a prefix, which the next change adds back (to a random
/// route). Ends at once if there are no routes or no ports.
#[derive(Debug, Clone)]
pub struct ChangeStream {
    rng: SplitMix,
    prefixes: Vec<(Prefix, RouteId)>,
    routes: u32,
    ports: u16,
    withdrawn: Option<usize>,
}

impl Iterator for ChangeStream {
    type Item = RouteChange;

    fn next(&mut self) -> Option<RouteChange> {
        if self.routes == 0 || self.ports == 0 {
            return None;
        }
        let route = (self.rng.next() % u64::from(self.routes)) as RouteId;
        if let Some(i) = self.withdrawn.take() {
            self.prefixes[i].1 = route;
            return Some(RouteChange::Insert {
                prefix: self.prefixes[i].0,
                route,
            });
        }
        let kind = self.rng.next() % 4;
        if kind < 2 || self.prefixes.is_empty() {
            let port = (self.rng.next() % u64::from(self.ports)) as u16;
            return Some(RouteChange::NextHop { route, port });
        }
        let i = (self.rng.next() % self.prefixes.len() as u64) as usize;
        let prefix = self.prefixes[i].0;
        if kind == 2 {
            self.prefixes[i].1 = route;
            return Some(RouteChange::Insert { prefix, route });
        }
        self.withdrawn = Some(i);
        Some(RouteChange::Withdraw { prefix })
    }
}

/// splitmix64: a small, well-mixed deterministic generator.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix(pub(crate) u64);

impl SplitMix {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
}

/// What the route-update thread did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UpdaterReport {
    /// Changes applied: the first `applied` of the plan's stream.
    pub applied: u64,
    /// From start to stop.
    pub elapsed: Duration,
    /// Total time inside [`Table::update`] (per-cpu: all copies).
    pub apply_total: Duration,
    /// Longest single [`Table::update`].
    pub apply_max: Duration,
}

/// The route-update thread: applies the plan's changes at its rate, paced
/// by its own clock (change k is due k/rate seconds after the start; a
/// late thread catches up), until stopped.
#[derive(Debug)]
pub struct Updater {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<UpdaterReport>,
}

/// Longest sleep between looks at the stop flag.
const MAX_NAP: Duration = Duration::from_millis(5);

impl Updater {
    /// Starts the thread. Fails only if the thread cannot be spawned.
    pub fn start<F: Fib>(table: Arc<Table<F>>, plan: &UpdatePlan) -> std::io::Result<Updater> {
        Updater::start_on(table, plan, &[])
    }

    /// Starts the thread, kept to `cpus` (none: anywhere). A forwarder
    /// gives it the CPUs its workers do not spin on, when there are any:
    /// then an update never takes a worker's CPU from it.
    pub fn start_on<F: Fib>(
        table: Arc<Table<F>>,
        plan: &UpdatePlan,
        cpus: &[usize],
    ) -> std::io::Result<Updater> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let (rate, changes) = (plan.rate, plan.changes());
        let cpus = cpus.to_vec();
        let thread = std::thread::Builder::new()
            .name("smp-updater".into())
            .spawn(move || {
                if !cpus.is_empty() {
                    // Best effort: where it runs changes timing, not results.
                    let _ = crate::measure::placement::restrict_current_thread(&cpus);
                }
                run(&table, rate, changes, &flag)
            })?;
        Ok(Updater { stop, thread })
    }

    /// Stops the thread after the change in hand and reports.
    pub fn stop(self) -> UpdaterReport {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().unwrap_or_default()
    }
}

fn run<F: Fib>(
    table: &Table<F>,
    rate: f64,
    mut changes: ChangeStream,
    stop: &AtomicBool,
) -> UpdaterReport {
    let start = Instant::now();
    let mut report = UpdaterReport::default();
    while !stop.load(Ordering::Relaxed) {
        let due = if rate > 0.0 {
            start + Duration::from_secs_f64((report.applied + 1) as f64 / rate)
        } else {
            Instant::now() + MAX_NAP
        };
        let now = Instant::now();
        if now < due {
            std::thread::sleep((due - now).min(MAX_NAP));
            continue;
        }
        let Some(change) = changes.next() else { break };
        let t = Instant::now();
        if table.update(&change).is_err() {
            break;
        }
        let took = t.elapsed();
        report.apply_total += took;
        report.apply_max = report.apply_max.max(took);
        report.applied += 1;
    }
    report.elapsed = start.elapsed();
    report
}
