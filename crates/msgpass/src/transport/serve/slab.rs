//! The connection table of a server: entries reached in O(1) by a token
//! that names one connection for ever, so that a token the kernel hands
//! back late (an epoll event harvested before the connection was dropped)
//! never reaches the connection that took its place.
//!
//! A token is `generation << 32 | index`, with bit 31 of the index part
//! left free for the caller (a server marks which of a connection's
//! descriptors an event is about: [`Token::with_mark`]). Hand-written
//! rather than `slotmap`, whose keys use every bit of their 64.

/// A connection's name in its table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Token(u64);

/// The bit a caller may set in a token it registers ([`Token::with_mark`]).
const MARK: u64 = 1 << 31;

impl Token {
    /// The token as registered with the kernel, with the caller's mark
    /// bit set when `mark`.
    #[inline]
    pub(crate) fn with_mark(self, mark: bool) -> u64 {
        self.0 | if mark { MARK } else { 0 }
    }

    /// A token and its mark from what the kernel handed back.
    #[inline]
    pub(crate) fn from_raw(raw: u64) -> (Token, bool) {
        (Token(raw & !MARK), raw & MARK != 0)
    }

    /// True when `raw` (as the kernel hands it back) can be a table's
    /// token: tokens are below 2^63, the rest is the server's.
    #[inline]
    pub(crate) fn is_table(raw: u64) -> bool {
        raw < 1 << 63
    }

    fn index(self) -> usize {
        (self.0 & 0x7fff_ffff) as usize
    }

    fn generation(self) -> u32 {
        (self.0 >> 32) as u32
    }
}

/// The generation after `g`: 31 bits, so that every token stays below
/// 2^63 and a server may use the tokens above for its own descriptors
/// ([`Token::is_table`]).
fn next_generation(g: u32) -> u32 {
    g.wrapping_add(1) & 0x7fff_ffff
}

struct Entry<T> {
    generation: u32,
    value: Option<T>,
}

/// Entries by token. Removing one and inserting another reuses its place
/// under a new generation.
pub(crate) struct Slab<T> {
    entries: Vec<Entry<T>>,
    free: Vec<usize>,
    len: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Slab<T> {
        Slab {
            entries: Vec::new(),
            free: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Slab<T> {
    /// The token the next [`Slab::insert`] returns, so that a value can
    /// carry its own token.
    pub(crate) fn next_token(&self) -> Token {
        match self.free.last() {
            Some(&i) => Token((self.entries[i].generation as u64) << 32 | i as u64),
            None => Token(self.entries.len() as u64),
        }
    }

    /// Stores `value`; returns its token. The table holds at most 2^31
    /// entries (a server's descriptors run out long before).
    pub(crate) fn insert(&mut self, value: T) -> Token {
        let token = self.next_token();
        match self.free.pop() {
            Some(i) => self.entries[i].value = Some(value),
            None => self.entries.push(Entry {
                generation: 0,
                value: Some(value),
            }),
        }
        self.len += 1;
        token
    }

    /// The entry of `token`, if it is still there.
    #[inline]
    pub(crate) fn get(&self, token: Token) -> Option<&T> {
        let e = self.entries.get(token.index())?;
        (e.generation == token.generation())
            .then_some(e.value.as_ref())
            .flatten()
    }

    /// The entry of `token`, if it is still there, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, token: Token) -> Option<&mut T> {
        let e = self.entries.get_mut(token.index())?;
        (e.generation == token.generation())
            .then_some(e.value.as_mut())
            .flatten()
    }

    /// Removes the entry of `token`; its place gets a new generation.
    pub(crate) fn remove(&mut self, token: Token) -> Option<T> {
        let i = token.index();
        let e = self.entries.get_mut(i)?;
        if e.generation != token.generation() {
            return None;
        }
        let v = e.value.take()?;
        e.generation = next_generation(e.generation);
        self.free.push(i);
        self.len -= 1;
        Some(v)
    }

    /// Number of entries.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Every entry.
    pub(crate) fn values(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().filter_map(|e| e.value.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_reaches_its_entry_and_never_the_one_after_it() {
        let mut s = Slab::default();
        let a = s.insert("a");
        let b = s.insert("b");
        assert_eq!(s.next_token(), Token(2));
        assert_eq!((s.get(a), s.get(b), s.len()), (Some(&"a"), Some(&"b"), 2));
        assert_eq!(s.remove(a), Some("a"));
        assert_eq!(s.remove(a), None);
        let c = s.next_token();
        assert_eq!(s.insert("c"), c);
        assert_ne!(c, a, "same place, new generation");
        assert_eq!(s.get(a), None);
        assert_eq!(s.get(c), Some(&"c"));
        assert_eq!(s.get_mut(a), None);
        *s.get_mut(c).unwrap() = "C";
        assert_eq!(s.get(c), Some(&"C"));
        assert_eq!(s.values().count(), 2);
        assert_eq!(s.get(b), Some(&"b"));
    }

    #[test]
    fn the_mark_travels_beside_the_token() {
        let mut s = Slab::default();
        for _ in 0..3 {
            let t = s.insert(());
            s.remove(t);
        }
        let t = s.insert(());
        for mark in [false, true] {
            assert_eq!(Token::from_raw(t.with_mark(mark)), (t, mark));
        }
    }
}
