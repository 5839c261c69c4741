//! A DIR-24-8 longest-prefix-match table ([`Dir24`]), the layout of DPDK's
//! `rte_lpm` (Gupta, Lin and McKeown, "Routing lookups in hardware at
//! memory access speeds", 1998): one memory read per lookup for the
//! addresses whose longest match is /24 or shorter, two for the others.
//!
//! - The first level has 2^24 entries, indexed by the top 24 bits of the
//!   address. A prefix of length 24 or less is expanded into every entry it
//!   covers (a /16 fills 256 entries, a /8 65,536).
//! - A prefix longer than /24 turns its first-level entry into the index of
//!   a 256-entry second-level block, indexed by the last 8 bits.
//!
//! Every entry is one `u32`: bit 31 says "block index", bits 25..31 hold
//! the length + 1 of the prefix the entry was filled from (0: none), bits
//! 0..25 hold the route id + 1 (0: no route) or the block index. The
//! length is what makes expansion correct: an insert only overwrites
//! entries filled from a prefix no longer than itself, and a removal
//! rewrites exactly the entries filled from the removed prefix with the
//! next shorter prefix that contains it, found in the prefix set the table
//! keeps beside the arrays (one hash map per length, as [`Reference`]).
//! A block whose entries all come from /24-or-shorter prefixes again is
//! folded back into its first-level entry and its index reused.
//!
//! Memory: the first level is 2^24 x 4 bytes = 64 MiB per table (mapped
//! lazily by the allocator: an empty table costs little until written),
//! plus 1 KiB per second-level block and the prefix set. Clones are deep
//! (a per-CPU copy or an RCU snapshot is a full 64 MiB copy, some tens of
//! milliseconds): acceptable for the study's rare route updates.
//!
//! Why not a crate: crates.io has maintained longest-prefix-match tables
//! (`prefix-trie`, a TreeBitMap-style trie; `iptrie`, Patricia and
//! LC-tries), but they are tries whose lookup walks several dependent
//! nodes; no maintained crate offers a DIR-24-8 (or similar flat) table,
//! which is what a forwarder aiming at ~10 Mpps per core uses (DPDK's
//! `rte_lpm`/`rte_fib`). It is a few hundred lines, tested here against
//! [`Reference`].
//!
//! [`Reference`]: super::fib::Reference

use std::collections::HashMap;

use super::fib::{mask, Fib, Prefix, RouteId};

/// Entries of the first level.
const TBL24_LEN: usize = 1 << 24;
/// Entries of a second-level block.
const BLOCK: usize = 256;
/// Entry flag: the value is a block index.
const EXT: u32 = 1 << 31;
/// Where the stored prefix length (+1) starts.
const DEPTH_SHIFT: u32 = 25;
/// The value bits: route id + 1, or a block index.
const VALUE: u32 = (1 << DEPTH_SHIFT) - 1;

/// The highest route id the table can hold (2^25 - 2, about 33 million).
pub const MAX_ROUTE: RouteId = VALUE - 1;

/// A DIR-24-8 table: see the module documentation.
#[derive(Debug)]
pub struct Dir24 {
    /// First level, `TBL24_LEN` entries.
    tbl24: Box<[u32]>,
    /// Second-level blocks, `BLOCK` entries each, one after the other.
    tbl8: Vec<u32>,
    /// Indices of blocks no longer in use.
    free: Vec<u32>,
    /// The prefix set, one map per length: network address -> route.
    by_len: Vec<HashMap<u32, RouteId>>,
}

impl Default for Dir24 {
    fn default() -> Self {
        Dir24::new()
    }
}

/// `n` copies of `value` in memory backed by transparent huge pages where
/// the system gives them (asked for before the pages are touched): the
/// first level is 64 MiB read at random, and with 4 KiB pages nearly
/// every lookup would also miss the TLB.
pub fn huge_vec<T: Clone>(n: usize, value: T) -> Vec<T> {
    let mut v = Vec::with_capacity(n);
    // Advice only: without huge pages the table works the same, slower.
    let _ = oslayer::mem::advise_huge_pages(&mut v);
    v.resize(n, value);
    v
}

impl Clone for Dir24 {
    fn clone(&self) -> Self {
        // Explicit, so that the 64 MiB first level is copied on the heap,
        // into huge pages.
        let mut tbl24 = Vec::with_capacity(self.tbl24.len());
        let _ = oslayer::mem::advise_huge_pages(&mut tbl24);
        tbl24.extend_from_slice(&self.tbl24);
        Dir24 {
            tbl24: tbl24.into_boxed_slice(),
            tbl8: self.tbl8.clone(),
            free: self.free.clone(),
            by_len: self.by_len.clone(),
        }
    }
}

/// An entry's value for `route` filled from a prefix of length `len`.
fn leaf(route: RouteId, len: u8) -> u32 {
    (u32::from(len) + 1) << DEPTH_SHIFT | (route + 1)
}

/// The stored length + 1 of an entry (0: empty).
fn depth(entry: u32) -> u32 {
    (entry & !EXT) >> DEPTH_SHIFT
}

impl Dir24 {
    /// An empty table (64 MiB reserved for the first level).
    pub fn new() -> Dir24 {
        Dir24 {
            tbl24: huge_vec(TBL24_LEN, 0).into_boxed_slice(),
            tbl8: Vec::new(),
            free: Vec::new(),
            by_len: vec![HashMap::new(); 33],
        }
    }

    /// Second-level blocks in use.
    pub fn blocks(&self) -> usize {
        self.tbl8.len() / BLOCK - self.free.len()
    }

    /// Bytes held by the two levels (not counting the prefix set).
    pub fn table_bytes(&self) -> usize {
        (self.tbl24.len() + self.tbl8.len()) * std::mem::size_of::<u32>()
    }

    /// The longest prefix strictly shorter than `p` that contains it, as
    /// the entry it fills (0 when there is none).
    fn fallback(&self, p: Prefix) -> u32 {
        (0..p.len)
            .rev()
            .find_map(|len| {
                let route = self.by_len[usize::from(len)].get(&(p.addr & mask(len)))?;
                Some(leaf(*route, len))
            })
            .unwrap_or(0)
    }

    /// The first-level entry range a /0../24 prefix covers.
    fn range24(p: Prefix) -> std::ops::Range<usize> {
        let start = (p.addr >> 8) as usize;
        start..start + (1 << (24 - p.len))
    }

    /// Entries of block `b` in `range`.
    fn block_mut(&mut self, b: u32, range: std::ops::Range<usize>) -> &mut [u32] {
        let base = b as usize * BLOCK;
        &mut self.tbl8[base + range.start..base + range.end]
    }

    /// Writes `new` into every entry of a /0../24 prefix's range that
    /// `replace` accepts (in blocks too).
    fn fill24(&mut self, p: Prefix, new: u32, replace: impl Fn(u32) -> bool) {
        for i in Self::range24(p) {
            let e = self.tbl24[i];
            if e & EXT != 0 {
                for x in self.block_mut(e & VALUE, 0..BLOCK) {
                    if replace(*x) {
                        *x = new;
                    }
                }
            } else if replace(e) {
                self.tbl24[i] = new;
            }
        }
    }

    /// The block of first-level entry `i`, made if it has none.
    fn block_of(&mut self, i: usize) -> u32 {
        let e = self.tbl24[i];
        if e & EXT != 0 {
            return e & VALUE;
        }
        let b = match self.free.pop() {
            Some(b) => b,
            None => {
                self.tbl8.resize(self.tbl8.len() + BLOCK, 0);
                u32::try_from(self.tbl8.len() / BLOCK - 1).expect("under 2^25 blocks")
            }
        };
        assert!(b <= VALUE, "second-level block index overflow");
        self.block_mut(b, 0..BLOCK).fill(e);
        self.tbl24[i] = EXT | b;
        b
    }

    /// The entries of a /25../32 prefix, in its block.
    fn range8(p: Prefix) -> std::ops::Range<usize> {
        let start = (p.addr & 0xff) as usize;
        start..start + (1 << (32 - p.len))
    }

    /// Folds the block of first-level entry `i` back when no entry of it
    /// comes from a prefix longer than /24 (then all its entries are equal).
    fn fold(&mut self, i: usize) {
        let b = self.tbl24[i] & VALUE;
        let entries = self.block_mut(b, 0..BLOCK);
        if entries.iter().all(|&x| depth(x) <= 25) {
            let e = entries[0];
            self.tbl24[i] = e;
            self.free.push(b);
        }
    }
}

impl Fib for Dir24 {
    #[inline]
    fn lookup(&self, addr: u32) -> Option<RouteId> {
        let mut e = self.tbl24[(addr >> 8) as usize];
        if e & EXT != 0 {
            e = self.tbl8[(e & VALUE) as usize * BLOCK + (addr & 0xff) as usize];
        }
        (e & VALUE).checked_sub(1)
    }

    /// Adds `prefix`, or replaces its route.
    ///
    /// # Panics
    ///
    /// When `route` is over [`MAX_ROUTE`].
    fn insert(&mut self, prefix: Prefix, route: RouteId) {
        assert!(route <= MAX_ROUTE, "route id {route} over {MAX_ROUTE}");
        self.by_len[usize::from(prefix.len)].insert(prefix.addr, route);
        let new = leaf(route, prefix.len);
        let covers = move |e: u32| depth(e) <= depth(new);
        if prefix.len <= 24 {
            self.fill24(prefix, new, covers);
        } else {
            let b = self.block_of((prefix.addr >> 8) as usize);
            for x in self.block_mut(b, Self::range8(prefix)) {
                if covers(*x) {
                    *x = new;
                }
            }
        }
    }

    fn remove(&mut self, prefix: Prefix) -> bool {
        let Some(route) = self.by_len[usize::from(prefix.len)].remove(&prefix.addr) else {
            return false;
        };
        let old = leaf(route, prefix.len);
        let new = self.fallback(prefix);
        let from_old = move |e: u32| depth(e) == depth(old);
        if prefix.len <= 24 {
            self.fill24(prefix, new, from_old);
        } else {
            let i = (prefix.addr >> 8) as usize;
            let b = self.tbl24[i] & VALUE;
            for x in self.block_mut(b, Self::range8(prefix)) {
                if from_old(*x) {
                    *x = new;
                }
            }
            self.fold(i);
        }
        true
    }

    fn len(&self) -> usize {
        self.by_len.iter().map(HashMap::len).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fib::Reference;
    use super::*;
    use proptest::prelude::*;

    fn p(a: [u8; 4], len: u8) -> Prefix {
        Prefix::new(u32::from_be_bytes(a), len).unwrap()
    }

    fn a(x: [u8; 4]) -> u32 {
        u32::from_be_bytes(x)
    }

    #[test]
    fn nested_prefixes_match_longest_and_fall_back_on_removal() {
        let mut t = Dir24::new();
        t.insert(p([10, 0, 0, 0], 8), 1);
        t.insert(p([10, 1, 2, 0], 24), 2);
        t.insert(p([10, 1, 2, 128], 25), 3);
        t.insert(p([10, 1, 2, 200], 32), 4);
        t.insert(p([0, 0, 0, 0], 0), 9);
        assert_eq!(t.lookup(a([10, 1, 2, 200])), Some(4));
        assert_eq!(t.lookup(a([10, 1, 2, 201])), Some(3));
        assert_eq!(t.lookup(a([10, 1, 2, 1])), Some(2));
        assert_eq!(t.lookup(a([10, 9, 0, 0])), Some(1));
        assert_eq!(t.lookup(a([11, 0, 0, 0])), Some(9));
        assert_eq!(t.blocks(), 1);
        // A shorter prefix inserted later does not hide the longer ones.
        t.insert(p([10, 1, 0, 0], 16), 5);
        assert_eq!(t.lookup(a([10, 1, 2, 201])), Some(3));
        assert_eq!(t.lookup(a([10, 1, 3, 0])), Some(5));
        assert!(t.remove(p([10, 1, 2, 128], 25)));
        assert_eq!(t.lookup(a([10, 1, 2, 201])), Some(2));
        assert!(t.remove(p([10, 1, 2, 200], 32)));
        // No prefix over /24 is left: the block folded back.
        assert_eq!(t.blocks(), 0);
        assert!(t.remove(p([10, 1, 2, 0], 24)));
        assert_eq!(t.lookup(a([10, 1, 2, 200])), Some(5));
        assert!(!t.remove(p([10, 1, 2, 0], 24)));
        assert!(t.remove(p([0, 0, 0, 0], 0)));
        assert_eq!(t.lookup(a([11, 0, 0, 0])), None);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn replacing_a_route_and_reusing_blocks() {
        let mut t = Dir24::new();
        t.insert(p([192, 0, 2, 7], 32), 1);
        t.insert(p([192, 0, 2, 7], 32), 2);
        assert_eq!(t.len(), 1);
        assert_eq!(t.lookup(a([192, 0, 2, 7])), Some(2));
        assert_eq!(t.lookup(a([192, 0, 2, 8])), None);
        assert!(t.remove(p([192, 0, 2, 7], 32)));
        t.insert(p([198, 51, 100, 0], 30), 3);
        assert_eq!(t.blocks(), 1);
        assert_eq!(t.tbl8.len(), BLOCK, "the freed block was reused");
        assert_eq!(t.lookup(a([198, 51, 100, 3])), Some(3));
        assert_eq!(t.lookup(a([198, 51, 100, 4])), None);
    }

    #[test]
    fn clones_are_independent_and_the_highest_route_id_fits() {
        let mut t = Dir24::new();
        t.insert(p([10, 0, 0, 0], 8), MAX_ROUTE);
        let snapshot = t.clone();
        t.insert(p([10, 0, 0, 0], 8), 0);
        assert_eq!(snapshot.lookup(a([10, 1, 1, 1])), Some(MAX_ROUTE));
        assert_eq!(t.lookup(a([10, 1, 1, 1])), Some(0));
        assert_eq!(t.table_bytes(), 64 << 20);
    }

    #[test]
    #[should_panic(expected = "over")]
    fn route_ids_over_the_limit_are_refused() {
        Dir24::new().insert(p([10, 0, 0, 0], 8), MAX_ROUTE + 1);
    }

    /// One change to both tables.
    #[derive(Debug, Clone)]
    enum Op {
        Insert(Prefix, RouteId),
        Remove(Prefix),
    }

    /// Prefixes around a few anchors, so that they nest and overlap; short
    /// ones (/0../7, up to 16 M entries to write) are rare.
    fn prefix(anchors: Vec<u32>) -> impl Strategy<Value = Prefix> {
        let len = prop_oneof![1 => 0u8..8, 6 => 8u8..=24, 6 => 25u8..=32];
        let spread = prop_oneof![0u32..=8, 0u32..=32];
        (0..anchors.len(), any::<u32>(), spread, len).prop_map(move |(i, r, k, len)| {
            let low = if k == 32 { u32::MAX } else { (1 << k) - 1 };
            Prefix::new(anchors[i] ^ (r & low), len).unwrap()
        })
    }

    fn ops() -> impl Strategy<Value = (Vec<u32>, Vec<Op>)> {
        proptest::collection::vec(any::<u32>(), 1..3).prop_flat_map(|anchors| {
            let op = prop_oneof![
                3 => (prefix(anchors.clone()), 0..1000u32).prop_map(|(p, r)| Op::Insert(p, r)),
                2 => prefix(anchors.clone()).prop_map(Op::Remove),
            ];
            (Just(anchors), proptest::collection::vec(op, 1..60))
        })
    }

    /// Addresses to compare on: each prefix's first and last address and
    /// their neighbours, random ones near the anchors, and fixed ones.
    fn probes(anchors: &[u32], ops: &[Op], random: &[u32]) -> Vec<u32> {
        let mut v = vec![0, u32::MAX];
        for op in ops {
            let (Op::Insert(p, _) | Op::Remove(p)) = op;
            let last = p.addr | !mask(p.len);
            v.extend([p.addr, last, p.addr.wrapping_sub(1), last.wrapping_add(1)]);
        }
        for (i, r) in random.iter().enumerate() {
            v.push(anchors[i % anchors.len()] ^ (r >> (i % 32)));
        }
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn agrees_with_the_reference(
            (anchors, ops) in ops(),
            random in proptest::collection::vec(any::<u32>(), 64),
        ) {
            let mut fast = Dir24::new();
            let mut slow = Reference::new();
            for op in &ops {
                match *op {
                    Op::Insert(p, r) => {
                        fast.insert(p, r);
                        slow.insert(p, r);
                    }
                    Op::Remove(p) => prop_assert_eq!(fast.remove(p), slow.remove(p)),
                }
            }
            prop_assert_eq!(fast.len(), slow.len());
            for addr in probes(&anchors, &ops, &random) {
                prop_assert_eq!(fast.lookup(addr), slow.lookup(addr), "address {:#010x}", addr);
            }
            let blocks = fast.by_len[25..].iter().map(HashMap::len).sum::<usize>();
            prop_assert!(fast.blocks() <= blocks, "no block outlives its prefixes");
        }
    }
}
