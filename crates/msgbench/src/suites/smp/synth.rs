//! A synthetic Internet routing table ([`generate`]) and the destination
//! addresses of the traffic sent through it ([`Destinations`]).
//!
//! The table has `n` distinct prefixes (default [`DEFAULT_ROUTES`], about
//! the size of today's full IPv4 table), drawn with the prefix-length
//! shares of [`LENGTH_SHARES`] from unicast space (first octet 1..=223, not
//! 10 or 127), each given an output port uniformly in `0..ports`. Route id
//! = index in the returned list. The same seed gives the same table (the
//! generator is `rand`'s Xoshiro256++, whose output is fixed by its
//! algorithm).
//!
//! The shares are approximate, from memory of the public BGP table reports
//! (bgp.potaroo.net, the CIDR report) for 2024-2025, about 1.0 M prefixes:
//! /24 a bit under 60 %, then /22, /23, /21, /20, /19, /16, /18, /17, and
//! well under 1 % shorter than /16. They are not fetched from a live
//! table. One deviation, on purpose: 0.5 % of prefixes longer than /24,
//! which the public table filters out but a provider's own table carries
//! (customer /29../30 links, /32 loopbacks); they make the lookup use the
//! DIR-24-8 second level as a real router's does.
//!
//! Unlike the real table, prefixes are placed at random: the real table's
//! nesting (more-specifics inside an aggregate) only happens by chance
//! here, for the short prefixes.

use std::collections::HashSet;

use rand::rngs::Xoshiro256PlusPlus;
use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_distr::Zipf;

use super::fib::{mask, Fib, Prefix, RouteId};

/// About the number of prefixes in today's full IPv4 Internet table.
pub const DEFAULT_ROUTES: usize = 1_000_000;

/// Share of each prefix length, in parts per 100,000 (they add up to
/// 100,000). Approximate Internet figures; see the module documentation.
pub const LENGTH_SHARES: [(u8, u32); 25] = [
    (8, 1),
    (9, 1),
    (10, 3),
    (11, 6),
    (12, 15),
    (13, 30),
    (14, 60),
    (15, 100),
    (16, 1_350),
    (17, 1_000),
    (18, 1_600),
    (19, 2_900),
    (20, 4_200),
    (21, 5_000),
    (22, 12_400),
    (23, 10_300),
    (24, 60_534),
    (25, 50),
    (26, 50),
    (27, 50),
    (28, 50),
    (29, 80),
    (30, 120),
    (31, 0),
    (32, 100),
];

/// One route of the synthetic table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Route {
    /// The destination prefix.
    pub prefix: Prefix,
    /// The next hop: an output port, `0..ports`.
    pub port: u16,
}

/// How many prefixes of each length a table of `n` gets: the shares,
/// rounded down, with the remainder given to /24.
fn counts(n: usize) -> Vec<(u8, usize)> {
    let mut v: Vec<(u8, usize)> = LENGTH_SHARES
        .iter()
        .map(|&(len, share)| (len, n * share as usize / 100_000))
        .collect();
    let rest = n - v.iter().map(|c| c.1).sum::<usize>();
    if let Some(c) = v.iter_mut().find(|c| c.0 == 24) {
        c.1 += rest;
    }
    v
}

/// A random unicast address: first octet 1..=223, not 10 (private) or
/// 127 (loopback).
fn unicast(rng: &mut Xoshiro256PlusPlus) -> u32 {
    loop {
        let a: u32 = rng.random();
        let first = a >> 24;
        if (1..=223).contains(&first) && first != 10 && first != 127 {
            return a;
        }
    }
}

/// `n` distinct prefixes with the Internet's length shares, each routed to
/// a port in `0..ports`, the same for the same `seed`.
///
/// # Panics
///
/// When `ports` is 0.
pub fn generate(n: usize, ports: u16, seed: u64) -> Vec<Route> {
    assert!(ports > 0, "a table needs at least one port");
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut seen = HashSet::with_capacity(n);
    let mut routes = Vec::with_capacity(n);
    for (len, count) in counts(n) {
        let first = routes.len();
        while routes.len() < first + count {
            let prefix = Prefix::new(unicast(&mut rng), len).expect("lengths are <= 32");
            if seen.insert(prefix) {
                let port = rng.random_range(0..ports);
                routes.push(Route { prefix, port });
            }
        }
    }
    routes
}

/// Inserts every route into `fib`, route id = index in `routes`.
pub fn fill<F: Fib>(fib: &mut F, routes: &[Route]) {
    for (id, r) in routes.iter().enumerate() {
        fib.insert(r.prefix, RouteId::try_from(id).expect("under 2^32 routes"));
    }
}

/// How destination addresses are spread.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Flows {
    /// Uniform over the routed address space: a route is picked with a
    /// weight of its size (a /16 256 times as often as a /24), then an
    /// address in it (addresses under nested prefixes count once per
    /// prefix, a small excess).
    Uniform,
    /// Skewed over routes, like real traffic: a route's rank in a seeded
    /// random order is drawn from a Zipf distribution with this exponent
    /// (about 1 for Internet traffic), then an address in it.
    Zipf(f64),
}

/// How a route is picked.
#[derive(Debug, Clone)]
enum Pick {
    /// Cumulative route sizes: the route whose span holds a uniform draw.
    BySize(Vec<u64>),
    /// Routes in popularity order, and the rank distribution.
    ByRank(Vec<u32>, Zipf<f64>),
}

/// An endless, seeded stream of destination addresses, each inside a
/// route of the table (so each has a route to hit, possibly a longer one
/// nested in the picked one).
#[derive(Debug, Clone)]
pub struct Destinations {
    prefixes: Vec<Prefix>,
    pick: Pick,
    rng: Xoshiro256PlusPlus,
}

impl Destinations {
    /// Addresses for `routes` spread as `flows` says; `None` for an empty
    /// table or a Zipf exponent below 0 (or NaN).
    pub fn new(routes: &[Route], flows: Flows, seed: u64) -> Option<Destinations> {
        if routes.is_empty() {
            return None;
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let pick = match flows {
            Flows::Uniform => Pick::BySize(
                routes
                    .iter()
                    .scan(0u64, |sum, r| {
                        *sum += 1u64 << (32 - r.prefix.len);
                        Some(*sum)
                    })
                    .collect(),
            ),
            Flows::Zipf(s) => {
                let zipf = Zipf::new(routes.len() as f64, s).ok()?;
                let mut order: Vec<u32> = (0..routes.len() as u32).collect();
                order.shuffle(&mut rng);
                Pick::ByRank(order, zipf)
            }
        };
        Some(Destinations {
            prefixes: routes.iter().map(|r| r.prefix).collect(),
            pick,
            rng,
        })
    }

    /// The index of the next route to send to.
    fn route(&mut self) -> usize {
        match &self.pick {
            Pick::BySize(cum) => {
                let total = *cum.last().expect("not empty");
                let x = self.rng.random_range(0..total);
                cum.partition_point(|&c| c <= x)
            }
            Pick::ByRank(order, zipf) => {
                let rank = self.rng.sample(zipf) as usize;
                order[rank.clamp(1, order.len()) - 1] as usize
            }
        }
    }

    /// The next destination address.
    pub fn next_addr(&mut self) -> u32 {
        let i = self.route();
        let p = self.prefixes[i];
        let host: u32 = self.rng.random();
        p.addr | (host & !mask(p.len))
    }
}

impl Iterator for Destinations {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        Some(self.next_addr())
    }
}

#[cfg(test)]
mod tests {
    use super::super::fib::Reference;
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn shares_add_up_and_counts_match_n() {
        let total: u32 = LENGTH_SHARES.iter().map(|s| s.1).sum();
        assert_eq!(total, 100_000);
        for n in [0, 1, 999, 100_000, DEFAULT_ROUTES] {
            assert_eq!(counts(n).iter().map(|c| c.1).sum::<usize>(), n);
        }
    }

    #[test]
    fn tables_are_distinct_seeded_and_shaped_like_the_internet() {
        let t = generate(100_000, 4, 7);
        assert_eq!(t, generate(100_000, 4, 7));
        assert_ne!(t, generate(100_000, 4, 8));
        assert_eq!(
            t.iter().map(|r| r.prefix).collect::<HashSet<_>>().len(),
            t.len()
        );
        let mut by_len = HashMap::new();
        for r in &t {
            *by_len.entry(r.prefix.len).or_insert(0usize) += 1;
            assert!(r.port < 4);
            let first = r.prefix.addr >> 24;
            assert!((1..=223).contains(&first) && first != 10 && first != 127);
        }
        let share = |len: u8| by_len.get(&len).copied().unwrap_or(0) as f64 / t.len() as f64;
        assert!((0.55..0.65).contains(&share(24)), "/24: {}", share(24));
        assert!(share(22) > share(23) && share(23) > share(21) && share(21) > share(20));
        assert!((8..16).map(share).sum::<f64>() < 0.01);
        assert!(by_len.keys().all(|&l| (8..=32).contains(&l)));
    }

    /// Every destination of both spreads has a route in the table.
    #[test]
    fn destinations_hit_routes() {
        let routes = generate(20_000, 2, 1);
        let mut fib = Reference::new();
        fill(&mut fib, &routes);
        for flows in [Flows::Uniform, Flows::Zipf(1.0)] {
            let d = Destinations::new(&routes, flows, 3).unwrap();
            for addr in d.take(5_000) {
                let id = fib.lookup(addr).expect("a route");
                assert!(routes[id as usize].prefix.contains(addr));
            }
        }
    }

    #[test]
    fn zipf_concentrates_on_few_routes_and_uniform_weighs_by_size() {
        let routes = generate(10_000, 2, 5);
        let mut zipf = Destinations::new(&routes, Flows::Zipf(1.0), 9).unwrap();
        let mut hits = HashMap::new();
        for _ in 0..20_000 {
            *hits.entry(zipf.route()).or_insert(0usize) += 1;
        }
        let mut counts: Vec<usize> = hits.into_values().collect();
        counts.sort_unstable_by(|a, b| b.cmp(a));
        let top10: usize = counts.iter().take(10).sum();
        // With s = 1 over 10^4 routes the top 10 get about 30 %.
        assert!(top10 > 20_000 / 5, "top 10 routes got {top10} of 20000");
        let mut uniform = Destinations::new(&routes, Flows::Uniform, 9).unwrap();
        let short = (0..20_000)
            .filter(|_| routes[uniform.route()].prefix.len <= 16)
            .count();
        // The /8../16 prefixes are ~1.6 % of routes but most of the space.
        assert!(short > 20_000 / 2, "{short} of 20000 to /16 or shorter");
    }

    #[test]
    fn bad_inputs_give_no_generator() {
        assert!(Destinations::new(&[], Flows::Uniform, 0).is_none());
        let routes = generate(10, 1, 0);
        assert!(Destinations::new(&routes, Flows::Zipf(-1.0), 0).is_none());
    }
}
