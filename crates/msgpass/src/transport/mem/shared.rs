//! How msgpass reads and writes memory that a peer process can write at
//! the same moment (the shm family's slots, the message areas of
//! `eventfd`, `io-uring` and `signal`).
//!
//! A peer need not follow the protocol, so such memory may change under
//! any read of ours. In Rust's memory model a write racing with a plain
//! (non-atomic) access, or with a live `&[u8]` / `&mut [u8]` over the
//! bytes, is undefined behaviour even when the protocol forbids the
//! write: the compiler may assume the bytes do not change, and for
//! instance load a checked length a second time. So msgpass keeps three
//! rules over peer-writable memory:
//!
//! 1. **No reference over it.** Never a `&[u8]`, `&mut [u8]` or `&T` of a
//!    plain type over a peer-writable byte; only raw pointers, and
//!    `&AtomicU32` / `&AtomicU64` for the protocol's words (atomics
//!    tolerate any concurrent access).
//! 2. **Every access is atomic.** Payload bytes move with the copies of
//!    this module, [`load`] and [`store`]: relaxed atomic loads and
//!    stores, a machine word at a time where aligned and a byte at a time
//!    at the edges (the byte-wise atomic memcpy of C++ proposal P1478,
//!    what a seqlock's reader needs; from 512 bytes on x86-64 one `rep
//!    movsb`, which moves bytes the same way, only faster). They compile to plain moves; they
//!    differ from `memcpy` only in that the compiler must do each access
//!    exactly once. The peer is no part of our program, so the model
//!    cannot speak for it; what we rely on is that each aligned access of
//!    ours is single-copy atomic on the hardware (x86-64 and AArch64
//!    alike), whatever the peer does: a load returns bytes that were
//!    there, never a value the compiler made up or re-read. Within this
//!    process no two threads touch the same bytes with different widths
//!    at the same time.
//! 3. **Copy, then check, never re-read.** A header (length, command,
//!    status) is loaded once into a private value and checked there;
//!    only the checked value is used after. A payload the application
//!    reads is first copied into private memory, so what it reads cannot
//!    change under it.
//!
//! The in-place API ([`Connection::call_with`](crate::Connection::call_with),
//! [`Request::reply_with`](crate::Request::reply_with)) therefore lends
//! shared memory only as a [`Window`](crate::Window) or a
//! [`View`](crate::View) (`transport/mem/window.rs`), whose every access is
//! one of these copies, between the shared bytes and the application's
//! own memory: a message is built and read in place, and only the bytes
//! the application touches are copied. [`Request::data`](crate::Request::data),
//! which is a slice, is a private copy made once, after the length
//! check. The areas of `eventfd`, `io-uring` and `signal` are not lent:
//! their in-place calls lend a private buffer, copied to and from the
//! area once per direction.

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

use oslayer::mman::Mapping;

const WORD: usize = std::mem::size_of::<usize>();

/// Copies `dst.len()` bytes of `map` at `offset` into `dst` (our own
/// memory) with relaxed atomic loads: whatever the peer writes meanwhile,
/// `dst` gets, for each byte, a value that byte held.
///
/// # Panics
/// When the range is outside the mapping (a caller's bug).
#[inline]
pub(crate) fn load(map: &Mapping, offset: usize, dst: &mut [u8]) {
    check(map, offset, dst.len());
    // SAFETY: the range is inside the mapping (checked), which lives as
    // long as the borrow of `map`; `dst` is our own memory, not in it.
    unsafe { load_raw(map.ptr().add(offset), dst) }
}

/// Copies `src` (our own memory) into `map` at `offset` with relaxed
/// atomic stores.
///
/// # Panics
/// When the range is outside the mapping (a caller's bug).
#[inline]
pub(crate) fn store(map: &Mapping, offset: usize, src: &[u8]) {
    check(map, offset, src.len());
    // SAFETY: as in `load`.
    unsafe { store_raw(src, map.ptr().add(offset)) }
}

/// Grows `buf`, a private buffer the in-place calls lend, to at least
/// `n` bytes, keeping what it holds; false when they cannot be had (a
/// peer may claim a maximum of up to 4 GiB): the caller then lends
/// nothing, and the copying path serves. New bytes are zeroed pages,
/// mapped lazily by a large allocation, so a large maximum costs only the
/// pages used.
#[inline]
pub(crate) fn grow(buf: &mut Vec<u8>, n: usize) -> bool {
    if buf.len() >= n {
        return true;
    }
    match zeroed(n) {
        Some(mut v) => {
            v[..buf.len()].copy_from_slice(buf);
            *buf = v;
            true
        }
        None => false,
    }
}

/// `n` zeroed bytes, or `None` when the allocator refuses them.
#[cold]
fn zeroed(n: usize) -> Option<Vec<u8>> {
    if n == 0 {
        return Some(Vec::new());
    }
    let layout = std::alloc::Layout::array::<u8>(n).ok()?;
    // SAFETY: the layout's size is not zero.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` comes from the global allocator with the layout of `n`
    // bytes (alignment 1), all of them initialised (zeroed): length and
    // capacity are `n`.
    Some(unsafe { Vec::from_raw_parts(p, n, n) })
}

/// Panics unless `offset..offset + n` lies inside `map`.
#[inline]
fn check(map: &Mapping, offset: usize, n: usize) {
    assert!(
        offset.checked_add(n).is_some_and(|end| end <= map.len()),
        "{n} bytes at {offset} outside a {}-byte mapping",
        map.len()
    );
}

/// The byte-wise atomic copy out of shared memory.
///
/// # Safety
/// `src` is valid for `dst.len()` bytes of a live mapping, which `dst`
/// does not overlap.
#[inline(always)]
pub(crate) unsafe fn load_raw(src: *const u8, dst: &mut [u8]) {
    let n = dst.len();
    let out = dst.as_mut_ptr();
    #[cfg(target_arch = "x86_64")]
    if n >= BULK {
        // SAFETY: as for this function; `dst` is ours and writable.
        unsafe { bulk(src, out, n) };
        return;
    }
    let lead = src.align_offset(WORD).min(n);
    let mut i = 0;
    while i < lead {
        // SAFETY: i < n: inside both ranges; AtomicU8 has no alignment
        // requirement; the caller guarantees the mapping lives.
        unsafe {
            out.add(i)
                .write(AtomicU8::from_ptr(src.add(i).cast_mut()).load(Relaxed))
        };
        i += 1;
    }
    while n - i >= WORD {
        // SAFETY: src + i is word-aligned (past `lead`) and the word lies
        // inside the range; the write to `out` is unaligned-safe.
        unsafe {
            let w = AtomicUsize::from_ptr(src.add(i).cast_mut().cast()).load(Relaxed);
            out.add(i).cast::<usize>().write_unaligned(w);
        }
        i += WORD;
    }
    while i < n {
        // SAFETY: as for the leading bytes.
        unsafe {
            out.add(i)
                .write(AtomicU8::from_ptr(src.add(i).cast_mut()).load(Relaxed))
        };
        i += 1;
    }
}

/// The byte-wise atomic copy into shared memory.
///
/// # Safety
/// `dst` is valid for `src.len()` bytes of a live writable mapping, which
/// `src` does not overlap.
#[inline(always)]
pub(crate) unsafe fn store_raw(src: &[u8], dst: *mut u8) {
    let n = src.len();
    let inp = src.as_ptr();
    #[cfg(target_arch = "x86_64")]
    if n >= BULK {
        // SAFETY: as for this function.
        unsafe { bulk(inp, dst, n) };
        return;
    }
    let lead = dst.align_offset(WORD).min(n);
    let mut i = 0;
    while i < lead {
        // SAFETY: i < n: inside both ranges; the caller guarantees the
        // mapping lives and is writable.
        unsafe { AtomicU8::from_ptr(dst.add(i)).store(inp.add(i).read(), Relaxed) };
        i += 1;
    }
    while n - i >= WORD {
        // SAFETY: dst + i is word-aligned (past `lead`) and the word lies
        // inside the range; the read of `src` is unaligned-safe.
        unsafe {
            let w = inp.add(i).cast::<usize>().read_unaligned();
            AtomicUsize::from_ptr(dst.add(i).cast()).store(w, Relaxed);
        }
        i += WORD;
    }
    while i < n {
        // SAFETY: as for the leading bytes.
        unsafe { AtomicU8::from_ptr(dst.add(i)).store(inp.add(i).read(), Relaxed) };
        i += 1;
    }
}

/// Bytes from which a copy goes by `rep movsb` (x86-64): the word loop
/// cannot be vectorised (each access is its own), and at kilobytes it
/// falls well behind the string instruction.
#[cfg(target_arch = "x86_64")]
const BULK: usize = 512;

/// Copies `n` bytes with `rep movsb`. The instruction is opaque to the
/// compiler, which must assume it reads and writes the ranges once, as
/// the hardware does; every byte it moves is a single-copy atomic access,
/// so it is the byte-wise atomic copy of the loops above, only faster.
///
/// # Safety
/// `src` is valid for reading and `dst` for writing `n` bytes, and the
/// ranges do not overlap.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn bulk(src: *const u8, dst: *mut u8, n: usize) {
    // SAFETY: the caller guarantees both ranges; the direction flag is
    // clear at every call boundary (System V ABI), so the copy runs
    // forwards; no stack is used and the flags are left as they were.
    unsafe {
        std::arch::asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rsi") src => _,
            inout("rdi") dst => _,
            options(nostack, preserves_flags)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn mapping(len: usize) -> Mapping {
        let fd = oslayer::mman::memfd("shared-test", len).expect("memfd");
        Mapping::new(fd.as_fd(), len).expect("map")
    }

    /// Every offset and length around the word edges comes back as it
    /// went in, and nothing beside the range is touched.
    #[test]
    fn copies_are_exact_at_every_alignment() {
        let map = mapping(4096);
        let src: Vec<u8> = (0..100u8).map(|b| b.wrapping_mul(37) | 1).collect();
        for offset in 0..2 * WORD {
            for n in 0..40 {
                store(&map, 0, &[0u8; 128]);
                store(&map, offset, &src[..n]);
                let mut all = [0xffu8; 128];
                load(&map, 0, &mut all);
                assert_eq!(&all[offset..offset + n], &src[..n], "{offset} {n}");
                assert!(all[..offset].iter().all(|&b| b == 0), "{offset} {n}");
                assert!(all[offset + n..].iter().all(|&b| b == 0), "{offset} {n}");
                let mut back = vec![0u8; n];
                load(&map, offset, &mut back);
                assert_eq!(back, &src[..n]);
            }
        }
    }

    /// The bulk path (kilobytes) and the word loop agree, at every edge.
    #[test]
    fn large_copies_are_exact() {
        let map = mapping(3 * 4096);
        let src: Vec<u8> = (0..8192u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for (offset, n) in [(0, 8192), (3, 5000), (8, 511), (1, 512), (4095, 4097)] {
            store(&map, 0, &vec![0u8; 3 * 4096]);
            store(&map, offset, &src[..n]);
            let mut all = vec![0xffu8; 3 * 4096];
            load(&map, 0, &mut all);
            assert_eq!(&all[offset..offset + n], &src[..n], "{offset} {n}");
            assert!(all[..offset].iter().all(|&b| b == 0), "{offset} {n}");
            assert!(all[offset + n..].iter().all(|&b| b == 0), "{offset} {n}");
        }
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn a_range_past_the_mapping_is_refused() {
        let map = mapping(4096);
        let mut out = [0u8; 8];
        load(&map, 4090, &mut out);
    }
}
