//! The request a server thread holds, copied out of its client's slot
//! only when the handler asks for it as a slice
//! ([`Request::data`](crate::Request::data)): a handler that answers in
//! place reads what it needs through the window instead, and the rest of
//! a large request is never copied.

use std::cell::{Cell, OnceCell};

use super::Slot;

/// The private copy of the request a thread holds, made at most once per
/// request, in a buffer kept from request to request.
pub(super) struct RequestCopy {
    /// The copy of the request held, once made.
    made: OnceCell<Box<[u8]>>,
    /// The buffer for the next copy (`max` bytes), when not in `made`.
    spare: Cell<Option<Box<[u8]>>>,
    /// The largest request.
    max: usize,
}

impl RequestCopy {
    /// No copy yet; its buffer of `max` bytes is made at the first.
    pub(super) fn new(max: usize) -> RequestCopy {
        RequestCopy {
            made: OnceCell::new(),
            spare: Cell::new(None),
            max,
        }
    }

    /// Forgets the copy of the last request, keeping its buffer.
    #[inline]
    pub(super) fn forget(&mut self) {
        if let Some(b) = self.made.take() {
            *self.spare.get_mut() = Some(b);
        }
    }

    /// The first `len` bytes of `slot`'s payload (`len`, the request's
    /// checked length, is at most `max`), copied out once: later calls
    /// for the same request return the same bytes, whatever the client
    /// writes meanwhile.
    #[inline]
    pub(super) fn get(&self, slot: &Slot, len: usize) -> &[u8] {
        let copy = self.made.get_or_init(|| {
            let mut b = self
                .spare
                .take()
                .unwrap_or_else(|| vec![0; self.max].into_boxed_slice());
            slot.read(&mut b[..len]);
            b
        });
        &copy[..len]
    }

    /// The copy made of the request held (its first `len` bytes), for a
    /// handle that takes the request away; `None` when none was made.
    pub(super) fn take(&mut self, len: usize) -> Option<Vec<u8>> {
        let b = self.made.take()?;
        let v = b[..len].to_vec();
        *self.spare.get_mut() = Some(b);
        Some(v)
    }
}
