//! The memory the in-place API lends: [`Window`] (a message to build, or
//! the request to answer over) and [`View`] (a reply to read). On the
//! shm transports they lie over the connection's slot, memory the peer
//! process can write at any moment; elsewhere over a buffer of the
//! library's. Either way they are read and written only by copies, the
//! atomic copies of `transport::shared`, never lent as a `&[u8]`: what
//! the application copies out is a value the bytes held, private from
//! then on, and a length or an index read from it is checked there (see
//! `transport/mem/shared.rs` for the rules). So a message is built and read
//! in place, with no copy of the bytes the application does not touch,
//! and no peer can change a value under the code that checked it.

use std::fmt;
use std::marker::PhantomData;
use std::ops::Deref;
use std::ptr::NonNull;

use super::shared;

/// Bytes lent to build a message in place: the request of
/// [`Connection::call_with`](crate::Connection::call_with), or the reply
/// of [`Request::reply_with`](crate::Request::reply_with), which starts
/// with the request's bytes. Read and written by copies
/// ([`write`](Window::write), and a [`View`]'s [`read`](View::read) and
/// [`get`](View::get), which it derefs to);
/// on the shm transports the peer process may write the same bytes at
/// any moment, so what you read is copied into your own memory first,
/// and checked there.
///
/// A window over your own buffer ([`Window::from`]) lets a handler be
/// tested, or used, without a channel.
pub struct Window<'a> {
    /// The same bytes, read only: a window reads as a [`View`] does.
    view: View<'a>,
    _lent: PhantomData<&'a mut [u8]>,
}

/// Bytes lent to read a message in place: the reply
/// [`Connection::call_with`](crate::Connection::call_with) returns. Read
/// by copies, as a [`Window`] is, for the same reason.
#[derive(Clone, Copy)]
pub struct View<'a> {
    ptr: NonNull<u8>,
    len: usize,
    _lent: PhantomData<&'a [u8]>,
}

impl<'a> Window<'a> {
    /// A window over `len` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr` is valid for reads and writes of `len` bytes for `'a`, and
    /// for `'a` every access to them by this process is atomic or through
    /// this window (no `&[u8]` or `&mut [u8]` over them); another process
    /// may write them.
    #[inline]
    pub(crate) unsafe fn from_raw(ptr: *mut u8, len: usize) -> Window<'a> {
        Window {
            // SAFETY: valid for reads (the caller's word), and every write
            // by this process is atomic: this window's own are.
            view: unsafe { View::from_raw(ptr, len) },
            _lent: PhantomData,
        }
    }

    /// Copies `src` to `offset`.
    ///
    /// # Panics
    /// When the range is not inside the window.
    #[inline]
    pub fn write(&mut self, offset: usize, src: &[u8]) {
        check(self.view.len, offset, src.len());
        // SAFETY: the range is inside the window (checked), valid for
        // writes for 'a; `src` is our own memory, which no window covers
        // (a window's bytes are never lent as a slice).
        unsafe { shared::store_raw(src, self.view.ptr.as_ptr().add(offset)) }
    }

    /// The first `n` bytes only (all when `n` is longer).
    #[inline]
    pub(crate) fn prefix(self, n: usize) -> Window<'a> {
        Window {
            view: View {
                len: self.view.len.min(n),
                ..self.view
            },
            _lent: PhantomData,
        }
    }
}

impl<'a> Deref for Window<'a> {
    type Target = View<'a>;

    /// A window reads as a [`View`]: [`View::read`], [`View::get`],
    /// [`View::len`]...
    #[inline]
    fn deref(&self) -> &View<'a> {
        &self.view
    }
}

impl<'a> View<'a> {
    /// A view of `len` bytes at `ptr`.
    ///
    /// # Safety
    /// `ptr` is valid for reads of `len` bytes for `'a`, and for `'a`
    /// every write to them by this process is atomic; another process may
    /// write them.
    #[inline]
    pub(crate) unsafe fn from_raw(ptr: *const u8, len: usize) -> View<'a> {
        View {
            ptr: NonNull::new(ptr.cast_mut()).unwrap_or(NonNull::dangling()),
            len,
            _lent: PhantomData,
        }
    }

    /// Its length in bytes: the reply's.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it has no bytes.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Copies `dst.len()` bytes from `offset` into `dst`.
    ///
    /// # Panics
    /// When the range is not inside the view, as slice indexing does.
    #[inline]
    pub fn read(&self, offset: usize, dst: &mut [u8]) {
        check(self.len, offset, dst.len());
        // SAFETY: the range is inside the view (checked), valid for reads
        // for 'a; `dst` is our own memory, which no view covers.
        unsafe { shared::load_raw(self.ptr.as_ptr().add(offset), dst) }
    }

    /// The `N` bytes at `offset`, copied out.
    ///
    /// # Panics
    /// When the range is not inside the view.
    #[inline]
    pub fn get<const N: usize>(&self, offset: usize) -> [u8; N] {
        let mut out = [0u8; N];
        self.read(offset, &mut out);
        out
    }

    /// Where the view starts: to tell views apart, never to read through.
    #[inline]
    pub fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// All its bytes, copied into a new vector.
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = vec![0u8; self.len];
        self.read(0, &mut out);
        out
    }
}

impl<'a> From<&'a mut [u8]> for Window<'a> {
    /// A window over a buffer of your own.
    #[inline]
    fn from(buf: &'a mut [u8]) -> Window<'a> {
        // SAFETY: the exclusive borrow makes the window the only way to
        // the bytes for 'a.
        unsafe { Window::from_raw(buf.as_mut_ptr(), buf.len()) }
    }
}

impl<'a> From<&'a [u8]> for View<'a> {
    /// A view of bytes of your own.
    #[inline]
    fn from(buf: &'a [u8]) -> View<'a> {
        // SAFETY: shared for 'a, so nobody writes them meanwhile.
        unsafe { View::from_raw(buf.as_ptr(), buf.len()) }
    }
}

impl fmt::Debug for Window<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Window")
            .field("len", &self.view.len)
            .finish()
    }
}

impl fmt::Debug for View<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("View").field("len", &self.len).finish()
    }
}

/// Panics unless `offset..offset + n` lies inside `len` bytes.
#[inline]
fn check(len: usize, offset: usize, n: usize) {
    if offset.checked_add(n).is_none_or(|end| end > len) {
        out_of_range(len, offset, n)
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn out_of_range(len: usize, offset: usize, n: usize) -> ! {
    panic!("{n} bytes at {offset} outside a window of {len}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_reads_back_what_was_written_at_any_offset() {
        let mut own = [0u8; 64];
        let mut w = Window::from(&mut own[..]);
        w.write(3, b"hello");
        assert_eq!(&w.get::<5>(3), b"hello");
        assert_eq!(w.to_vec()[..9], *b"\0\0\0hello\0");
        w.write(56, &7u64.to_le_bytes());
        assert_eq!(u64::from_le_bytes(w.get(56)), 7);
        assert_eq!(w.len(), 64);
        assert_eq!(w.prefix(10).len(), 10);
        assert_eq!(&own[3..8], b"hello");
    }

    #[test]
    #[should_panic(expected = "outside a window of 8")]
    fn a_write_past_the_end_panics() {
        let mut own = [0u8; 8];
        Window::from(&mut own[..]).write(4, &[1; 5]);
    }

    #[test]
    #[should_panic(expected = "outside a window of 8")]
    fn a_read_past_the_end_panics() {
        let own = [0u8; 8];
        View::from(&own[..]).get::<2>(usize::MAX);
    }
}
