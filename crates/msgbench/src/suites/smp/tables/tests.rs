//! Behaviour of the four variants (not speed: see benches/tables.rs).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::update::SplitMix;
use super::*;
use crate::suites::smp::fib::{Prefix, Reference};

const ROUTES: u32 = 64;
const PORTS: u16 = 4;
const WORKERS: usize = 2;

/// A nested table under 10/8 (plus 10/8 itself), its route list, and
/// destinations mostly inside its prefixes, some outside (misses).
struct Setup {
    fib: Reference,
    prefixes: Vec<(Prefix, RouteId)>,
    ports: Vec<u16>,
    dsts: Vec<u32>,
}

fn setup(seed: u64) -> Setup {
    let mut rng = SplitMix(seed);
    let mut fib = Reference::new();
    let mut seen = HashSet::new();
    let mut prefixes = Vec::new();
    let mut add = |p: Prefix, route: RouteId| {
        if seen.insert(p) {
            fib.insert(p, route);
            prefixes.push((p, route));
        }
    };
    add(Prefix::new(0x0A00_0000, 8).unwrap(), 0);
    for _ in 0..300 {
        let addr = 0x0A00_0000 | (rng.next() as u32 & 0x00FF_FFFF);
        let len = 9 + (rng.next() % 20) as u8;
        add(
            Prefix::new(addr, len).unwrap(),
            (rng.next() % u64::from(ROUTES)) as RouteId,
        );
    }
    let dsts = (0..400)
        .map(|i| {
            if i % 10 == 0 {
                return rng.next() as u32;
            }
            let (p, _) = prefixes[(rng.next() % prefixes.len() as u64) as usize];
            p.addr | (rng.next() as u32 & !fib_mask(p.len))
        })
        .collect();
    let ports = (0..ROUTES).map(|r| (r % u32::from(PORTS)) as u16).collect();
    Setup {
        fib,
        prefixes,
        ports,
        dsts,
    }
}

fn fib_mask(len: u8) -> u32 {
    crate::suites::smp::fib::mask(len)
}

/// One forwarded packet: index into `dsts`, its size, the result.
type Record = (usize, u32, Option<Hop>);

/// `WORKERS` threads forward `dsts` round after round (each from its own
/// offset) until `more(round)` says stop; records and lock figures.
fn forward_all(
    table: &Table<Reference>,
    dsts: &[u32],
    more: &(dyn Fn(usize) -> bool + Sync),
) -> Vec<(Vec<Record>, LockStats)> {
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..WORKERS)
            .map(|w| {
                s.spawn(move || {
                    let mut h = table.worker(w);
                    let mut out = Vec::new();
                    let mut round = 0;
                    while more(round) {
                        for k in 0..dsts.len() {
                            let i = (k + w * 97) % dsts.len();
                            let bytes = 64 + (i as u32 * 37) % 1455;
                            out.push((i, bytes, h.forward(dsts[i], bytes)));
                        }
                        round += 1;
                    }
                    (out, h.finish())
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).collect()
    })
}

/// The counters the records say the table must hold.
fn expected_totals(runs: &[(Vec<Record>, LockStats)]) -> Vec<Counts> {
    let mut want = vec![Counts::default(); ROUTES as usize];
    for (_, bytes, hop) in runs.iter().flat_map(|r| &r.0) {
        if let Some(h) = hop {
            want[h.route as usize].add(*bytes);
        }
    }
    want
}

fn check_counters_and_stats(table: &Table<Reference>, runs: &[(Vec<Record>, LockStats)]) {
    let v = table.variant();
    assert_eq!(table.totals(), expected_totals(runs), "{v}: counters");
    for (records, stats) in runs {
        let n = records.len() as u64;
        assert_eq!(stats.acquisitions, n, "{v}: one acquisition per packet");
        assert_eq!(stats.sampled, n.div_ceil(SAMPLE_EVERY), "{v}: sampling");
        assert!(stats.contended <= n);
        if v == Variant::Rcu {
            assert_eq!(
                (stats.hold_ns, stats.contended),
                (0, 0),
                "rcu holds no lock"
            );
        }
    }
}

#[test]
fn without_updates_every_variant_forwards_exactly_as_the_reference() {
    let s = setup(1);
    let want: Vec<Option<Hop>> = {
        let r = Routing {
            fib: s.fib.clone(),
            ports: s.ports.clone(),
        };
        s.dsts.iter().map(|&d| r.hop(d)).collect()
    };
    assert!(want.iter().any(Option::is_none) && want.iter().filter(|h| h.is_some()).count() > 300);
    for v in Variant::ALL {
        let table = Table::new(v, s.fib.clone(), s.ports.clone(), WORKERS);
        let runs = forward_all(&table, &s.dsts, &|round| round < 3);
        for (i, _, hop) in runs.iter().flat_map(|r| &r.0) {
            assert_eq!(*hop, want[*i], "{v}: {:#x}", s.dsts[*i]);
        }
        check_counters_and_stats(&table, &runs);
    }
}

/// Every (route, port) each destination had in some state of the replayed
/// change log, and the final state.
fn replay(
    s: &Setup,
    plan: &UpdatePlan,
    applied: u64,
) -> (Vec<HashSet<Option<Hop>>>, Routing<Reference>) {
    let mut r = Routing {
        fib: s.fib.clone(),
        ports: s.ports.clone(),
    };
    let mut now: Vec<Option<Hop>> = s.dsts.iter().map(|&d| r.hop(d)).collect();
    let mut valid: Vec<HashSet<_>> = now.iter().map(|h| HashSet::from([*h])).collect();
    for change in plan.changes().take(applied as usize) {
        r.apply(&change);
        for (i, &d) in s.dsts.iter().enumerate() {
            let touched = match change {
                RouteChange::NextHop { route, .. } => now[i].is_some_and(|h| h.route == route),
                RouteChange::Insert { prefix, .. } | RouteChange::Withdraw { prefix } => {
                    prefix.contains(d)
                }
            };
            if touched {
                now[i] = r.hop(d);
                valid[i].insert(now[i]);
            }
        }
    }
    (valid, r)
}

fn assert_same_routing(v: Variant, got: &Routing<Reference>, want: &Routing<Reference>, s: &Setup) {
    assert_eq!(got.ports, want.ports, "{v}: route list");
    assert_eq!(got.fib.len(), want.fib.len(), "{v}: prefix count");
    let probes = s
        .dsts
        .iter()
        .copied()
        .chain(s.prefixes.iter().map(|(p, _)| p.addr));
    for d in probes {
        assert_eq!(got.hop(d), want.hop(d), "{v}: {d:#x}");
    }
}

#[test]
fn while_routes_change_every_result_was_valid_and_every_copy_ends_up_right() {
    let s = setup(2);
    for v in Variant::ALL {
        let table = Arc::new(Table::new(v, s.fib.clone(), s.ports.clone(), WORKERS));
        let plan = UpdatePlan {
            rate: 20_000.0,
            seed: 7,
            prefixes: s.prefixes.clone(),
            routes: ROUTES,
            ports: PORTS,
        };
        let updater = Updater::start(Arc::clone(&table), &plan).unwrap();
        let stop = AtomicBool::new(false);
        let runs = std::thread::scope(|sc| {
            sc.spawn(|| {
                std::thread::sleep(Duration::from_millis(300));
                stop.store(true, Ordering::Relaxed);
            });
            forward_all(&table, &s.dsts, &|round| {
                round < 2 || !stop.load(Ordering::Relaxed)
            })
        });
        let report = updater.stop();
        assert!(report.applied > 10, "{v}: only {} updates", report.applied);
        let (valid, last) = replay(&s, &plan, report.applied);
        for (i, _, hop) in runs.iter().flat_map(|r| &r.0) {
            assert!(
                valid[*i].contains(hop),
                "{v}: {:#x} -> {hop:?}, never valid",
                s.dsts[*i]
            );
        }
        check_counters_and_stats(&table, &runs);
        let views = table.views();
        assert_eq!(views.len(), if v == Variant::PerCpu { WORKERS } else { 1 });
        for view in &views {
            assert_same_routing(v, view, &last, &s);
        }
    }
}

#[test]
fn the_updater_never_runs_ahead_of_its_rate() {
    let s = setup(3);
    let table = Arc::new(Table::new(
        Variant::PerCpu,
        s.fib.clone(),
        s.ports.clone(),
        2,
    ));
    let plan = UpdatePlan {
        rate: 200.0,
        seed: 1,
        prefixes: s.prefixes.clone(),
        routes: ROUTES,
        ports: PORTS,
    };
    let updater = Updater::start(Arc::clone(&table), &plan).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    let r = updater.stop();
    assert!(r.applied >= 1);
    assert!(
        r.applied as f64 <= 200.0 * r.elapsed.as_secs_f64() + 1.0,
        "{r:?}"
    );
    assert!(r.apply_max <= r.apply_total);
}

#[test]
fn a_change_to_a_route_outside_the_list_is_refused_whole() {
    let s = setup(4);
    let table = Table::new(Variant::PerCpu, s.fib.clone(), s.ports.clone(), 2);
    let bad = RouteChange::Insert {
        prefix: s.prefixes[0].0,
        route: ROUTES,
    };
    assert_eq!(
        table.update(&bad),
        Err(TableError::NoSuchRoute {
            route: ROUTES,
            routes: ROUTES as usize
        })
    );
    let want = Routing {
        fib: s.fib.clone(),
        ports: s.ports.clone(),
    };
    for view in table.views() {
        assert_same_routing(Variant::PerCpu, &view, &want, &s);
    }
}

#[test]
fn variants_parse_from_their_names() {
    for v in Variant::ALL {
        assert_eq!(v.name().parse::<Variant>(), Ok(v));
        assert_eq!(v.to_string(), v.name());
    }
    assert!("spinlock".parse::<Variant>().is_err());
    assert_eq!(Variant::parse("per-cpu"), Some(Variant::PerCpu));
}

#[test]
fn the_change_stream_is_deterministic_and_readds_what_it_withdraws() {
    let s = setup(5);
    let plan = UpdatePlan {
        rate: 1.0,
        seed: 9,
        prefixes: s.prefixes.clone(),
        routes: ROUTES,
        ports: PORTS,
    };
    let a: Vec<_> = plan.changes().take(500).collect();
    assert_eq!(a, plan.changes().take(500).collect::<Vec<_>>());
    for w in a.windows(2) {
        if let RouteChange::Withdraw { prefix } = w[0] {
            assert!(matches!(w[1], RouteChange::Insert { prefix: p, .. } if p == prefix));
        }
    }
    assert!(a.iter().all(|c| c.route().is_none_or(|r| r < ROUTES)));
}
