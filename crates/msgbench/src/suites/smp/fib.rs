//! A forwarding information base: IPv4 prefixes to route ids, looked up by
//! longest-prefix match. [`Fib`] is what every table implementation
//! offers; [`Reference`] is a slow, obviously correct one (a map per
//! prefix length) that the fast tables are tested against.

use std::collections::HashMap;

/// The index of a route in the route list: its next hop (output port) and
/// its counters live at this index.
pub type RouteId = u32;

/// An IPv4 prefix: the address with the host bits cleared, and its length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Prefix {
    /// The network address, host order, host bits zero.
    pub addr: u32,
    /// Prefix length, 0 to 32.
    pub len: u8,
}

impl Prefix {
    /// `addr/len` with the host bits of `addr` cleared; `None` when `len`
    /// is over 32.
    pub fn new(addr: u32, len: u8) -> Option<Prefix> {
        (len <= 32).then(|| Prefix {
            addr: addr & mask(len),
            len,
        })
    }

    /// Whether `addr` falls in this prefix.
    pub fn contains(self, addr: u32) -> bool {
        addr & mask(self.len) == self.addr
    }
}

/// The network mask of a prefix length (0 for /0).
pub fn mask(len: u8) -> u32 {
    match len {
        0 => 0,
        l => u32::MAX << (32 - u32::from(l.min(32))),
    }
}

/// A longest-prefix-match table. `Clone` so that a copy per CPU, or a new
/// snapshot with one change, can be made from it.
pub trait Fib: Clone + Send + Sync + 'static {
    /// The route of the longest prefix containing `addr`, if any.
    fn lookup(&self, addr: u32) -> Option<RouteId>;
    /// Adds `prefix`, or replaces its route.
    fn insert(&mut self, prefix: Prefix, route: RouteId);
    /// Removes `prefix`; its addresses fall back to the next shorter
    /// prefix that contains them. Returns whether it was there.
    fn remove(&mut self, prefix: Prefix) -> bool;
    /// Number of prefixes.
    fn len(&self) -> usize;
    /// Whether there is none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The slow, obviously correct table: one hash map per prefix length,
/// searched from /32 down to /0.
#[derive(Debug, Clone, Default)]
pub struct Reference {
    by_len: Vec<HashMap<u32, RouteId>>,
}

impl Reference {
    /// An empty table.
    pub fn new() -> Reference {
        Reference {
            by_len: vec![HashMap::new(); 33],
        }
    }
}

impl Fib for Reference {
    fn lookup(&self, addr: u32) -> Option<RouteId> {
        (0..=32u8)
            .rev()
            .find_map(|len| self.by_len.get(usize::from(len))?.get(&(addr & mask(len))))
            .copied()
    }

    fn insert(&mut self, prefix: Prefix, route: RouteId) {
        if self.by_len.is_empty() {
            *self = Reference::new();
        }
        self.by_len[usize::from(prefix.len)].insert(prefix.addr, route);
    }

    fn remove(&mut self, prefix: Prefix) -> bool {
        self.by_len
            .get_mut(usize::from(prefix.len))
            .is_some_and(|m| m.remove(&prefix.addr).is_some())
    }

    fn len(&self) -> usize {
        self.by_len.iter().map(HashMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(a: [u8; 4], len: u8) -> Prefix {
        Prefix::new(u32::from_be_bytes(a), len).unwrap()
    }

    #[test]
    fn the_longest_prefix_wins_and_removal_falls_back() {
        let mut t = Reference::new();
        t.insert(p([10, 0, 0, 0], 8), 1);
        t.insert(p([10, 1, 0, 0], 16), 2);
        t.insert(p([10, 1, 2, 3], 32), 3);
        t.insert(p([0, 0, 0, 0], 0), 9);
        let a = |x: [u8; 4]| u32::from_be_bytes(x);
        assert_eq!(t.lookup(a([10, 1, 2, 3])), Some(3));
        assert_eq!(t.lookup(a([10, 1, 2, 4])), Some(2));
        assert_eq!(t.lookup(a([10, 2, 0, 0])), Some(1));
        assert_eq!(t.lookup(a([11, 0, 0, 0])), Some(9));
        assert!(t.remove(p([10, 1, 0, 0], 16)));
        assert!(!t.remove(p([10, 1, 0, 0], 16)));
        assert_eq!(t.lookup(a([10, 1, 2, 4])), Some(1));
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn prefixes_clear_host_bits_and_refuse_long_lengths() {
        assert_eq!(p([10, 1, 2, 3], 8).addr, u32::from_be_bytes([10, 0, 0, 0]));
        assert!(Prefix::new(0, 33).is_none());
        assert_eq!(mask(0), 0);
        assert_eq!(mask(32), u32::MAX);
        assert!(p([192, 168, 0, 0], 16).contains(u32::from_be_bytes([192, 168, 7, 9])));
    }
}
