//! Shared memory: sealed memory files (`memfd_create`, seals) and shared
//! mappings ([`Mapping`]). Backed by rustix.
//!
//! [`Mapping`] hands out raw pointers for the shared-memory transports'
//! own protocols, and bounds-checked copies and atomics for everything
//! else, so that only code with a real protocol reason needs `unsafe`.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::ptr;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rustix::fs::{MemfdFlags, SealFlags};
use rustix::mm::{MapFlags, ProtFlags};

/// Creates an anonymous memory file of `len` bytes sealed against
/// shrinking and growing (a peer that could shrink it would turn our
/// accesses into `SIGBUS`) and against new seals. Close-on-exec.
pub fn memfd(name: &str, len: usize) -> io::Result<OwnedFd> {
    let fd = rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    rustix::fs::ftruncate(&fd, len as u64)?;
    rustix::fs::fcntl_add_seals(&fd, SealFlags::SHRINK | SealFlags::GROW | SealFlags::SEAL)?;
    Ok(fd)
}

/// Creates an anonymous memory file of `len` bytes that only the returned
/// mapping can write: sealed like [`memfd`], and also with
/// `F_SEAL_FUTURE_WRITE` (Linux 5.1), so a peer handed the descriptor can
/// map it only for reading (a writable shared mapping, `write`, hole
/// punching and `mprotect` to writable all fail). Close-on-exec.
pub fn memfd_owned(name: &str, len: usize) -> io::Result<(OwnedFd, Mapping)> {
    let fd = rustix::fs::memfd_create(name, MemfdFlags::CLOEXEC | MemfdFlags::ALLOW_SEALING)?;
    rustix::fs::ftruncate(&fd, len as u64)?;
    // Mapped writable before the seal: existing mappings keep their rights.
    let map = Mapping::new(fd.as_fd(), len)?;
    rustix::fs::fcntl_add_seals(
        &fd,
        SealFlags::SHRINK | SealFlags::GROW | SealFlags::FUTURE_WRITE | SealFlags::SEAL,
    )?;
    Ok((fd, map))
}

/// Maps `len` bytes of a memory file a peer passed us for reading only,
/// after the same checks as [`map_sealed`].
pub fn map_sealed_read_only(
    fd: BorrowedFd<'_>,
    len: usize,
    what: &str,
) -> io::Result<ReadOnlyMapping> {
    let size = crate::fs::file_size(fd)?;
    if size < len || !seals(fd)?.contains(SealFlags::SHRINK) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{what}: shared memory is {size} bytes (need {len}) or not sealed"),
        ));
    }
    // SAFETY: a null hint lets the kernel pick fresh addresses, so no
    // existing Rust memory is replaced.
    let p = unsafe {
        rustix::mm::mmap(
            ptr::null_mut(),
            len,
            ProtFlags::READ,
            MapFlags::SHARED,
            fd,
            0,
        )
    }?;
    Ok(ReadOnlyMapping {
        ptr: p as *const u8,
        len,
    })
}

/// A shared, read-only memory mapping, unmapped on drop. Page-aligned.
/// Offers loads only: a store would fault.
#[derive(Debug)]
pub struct ReadOnlyMapping {
    ptr: *const u8,
    len: usize,
}

// SAFETY: read-only plain memory; all access goes through atomic loads.
unsafe impl Send for ReadOnlyMapping {}
// SAFETY: as above.
unsafe impl Sync for ReadOnlyMapping {}

impl ReadOnlyMapping {
    /// Loads the 32-bit word at `offset` (a multiple of 4).
    ///
    /// # Panics
    /// When misaligned or outside the mapping (a caller's bug).
    #[inline]
    pub fn load_u32(&self, offset: usize, order: Ordering) -> u32 {
        assert!(
            offset % 4 == 0 && offset.checked_add(4).is_some_and(|e| e <= self.len),
            "word at {offset} misaligned or outside a {}-byte mapping",
            self.len
        );
        // SAFETY: inside the mapping and aligned (checked; the mapping is
        // page-aligned), valid for any bits, alive while self is; only
        // loaded, never stored (the pages are read-only).
        unsafe { (*(self.ptr.add(offset) as *const AtomicU32)).load(order) }
    }
}

impl Drop for ReadOnlyMapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe a mapping created by mmap and not yet
        // unmapped; no borrow of it outlives a call.
        let _ = unsafe { rustix::mm::munmap(self.ptr as *mut _, self.len) };
    }
}

/// The seals present on a memory file.
pub fn seals(fd: BorrowedFd<'_>) -> io::Result<SealFlags> {
    Ok(rustix::fs::fcntl_get_seals(fd)?)
}

/// Maps `len` bytes of a memory file a peer passed us, after checking it is
/// at least that long and sealed against shrinking: a peer that could
/// shrink it would turn our accesses into `SIGBUS`. `what` names the memory
/// in the error, which is `InvalidData` when the check fails.
pub fn map_sealed(fd: BorrowedFd<'_>, len: usize, what: &str) -> io::Result<Mapping> {
    let size = crate::fs::file_size(fd)?;
    if size < len || !seals(fd)?.contains(SealFlags::SHRINK) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{what}: shared memory is {size} bytes (need {len}) or not sealed"),
        ));
    }
    Mapping::new(fd, len)
}

/// A shared, read-write memory mapping of a file descriptor, unmapped on
/// drop. Page-aligned.
#[derive(Debug)]
pub struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; all access through it goes via raw
// pointers, bounded copies and atomics whose synchronisation the users
// provide.
unsafe impl Send for Mapping {}
// SAFETY: as above; shared references only hand out raw pointers, atomics
// and copies.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` shared and read-write.
    pub fn new(fd: BorrowedFd<'_>, len: usize) -> io::Result<Mapping> {
        // SAFETY: a null hint lets the kernel pick fresh addresses, so no
        // existing Rust memory is replaced.
        let p = unsafe {
            rustix::mm::mmap(
                ptr::null_mut(),
                len,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::SHARED,
                fd,
                0,
            )
        }?;
        Ok(Mapping {
            ptr: p as *mut u8,
            len,
        })
    }

    /// Base address of the mapping. Accesses through it are the caller's
    /// to justify (the memory may be shared with another process).
    #[inline]
    pub fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for a zero-length mapping.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Panics unless `offset..offset + n` lies inside the mapping.
    #[inline]
    fn check(&self, offset: usize, n: usize) {
        assert!(
            offset.checked_add(n).is_some_and(|end| end <= self.len),
            "{n} bytes at {offset} outside a {}-byte mapping",
            self.len
        );
    }

    /// Copies `src` into the mapping at `offset`.
    ///
    /// # Panics
    /// When the range is outside the mapping (a caller's bug).
    #[inline]
    pub fn write_at(&self, offset: usize, src: &[u8]) {
        self.check(offset, src.len());
        // SAFETY: the range is inside the mapping (checked), which lives as
        // long as self, and cannot overlap `src` (our own memory). A peer
        // writing concurrently can only garble the bytes it shares.
        unsafe { ptr::copy_nonoverlapping(src.as_ptr(), self.ptr.add(offset), src.len()) }
    }

    /// Copies `dst.len()` bytes out of the mapping at `offset`.
    ///
    /// # Panics
    /// When the range is outside the mapping (a caller's bug).
    #[inline]
    pub fn read_at(&self, offset: usize, dst: &mut [u8]) {
        self.check(offset, dst.len());
        // SAFETY: as in `write_at`; any bytes are valid `u8`s.
        unsafe { ptr::copy_nonoverlapping(self.ptr.add(offset), dst.as_mut_ptr(), dst.len()) }
    }

    /// The 32-bit atomic at `offset` (a multiple of 4).
    ///
    /// # Panics
    /// When misaligned or outside the mapping (a caller's bug).
    #[inline]
    pub fn atomic_u32(&self, offset: usize) -> &AtomicU32 {
        self.check(offset, 4);
        assert!(offset % 4 == 0, "misaligned atomic at {offset}");
        // SAFETY: inside the mapping (checked), aligned (the mapping is
        // page-aligned and offset a multiple of 4), valid for any bits, and
        // alive as long as the borrow of self.
        unsafe { &*(self.ptr.add(offset) as *const AtomicU32) }
    }

    /// The 64-bit atomic at `offset` (a multiple of 8).
    ///
    /// # Panics
    /// When misaligned or outside the mapping (a caller's bug).
    #[inline]
    pub fn atomic_u64(&self, offset: usize) -> &AtomicU64 {
        self.check(offset, 8);
        assert!(offset % 8 == 0, "misaligned atomic at {offset}");
        // SAFETY: as in `atomic_u32`, with 8-byte alignment.
        unsafe { &*(self.ptr.add(offset) as *const AtomicU64) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe a mapping created by mmap and not yet
        // unmapped; every borrow handed out has ended with the borrow of self.
        let _ = unsafe { rustix::mm::munmap(self.ptr as *mut _, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;
    use std::sync::atomic::Ordering;

    #[test]
    fn memfd_is_sealed_and_two_mappings_share_memory() {
        let fd = memfd("oslayer-test", 8192).unwrap();
        assert!(seals(fd.as_fd())
            .unwrap()
            .contains(SealFlags::SHRINK | SealFlags::GROW));
        assert!(rustix::fs::ftruncate(&fd, 4096).is_err());
        let a = map_sealed(fd.as_fd(), 8192, "test").unwrap();
        let b = Mapping::new(fd.as_fd(), 8192).unwrap();
        a.write_at(100, b"shared");
        let mut out = [0u8; 6];
        b.read_at(100, &mut out);
        assert_eq!(&out, b"shared");
        a.atomic_u64(8).store(7, Ordering::SeqCst);
        assert_eq!(b.atomic_u64(8).load(Ordering::SeqCst), 7);
        a.atomic_u32(4).store(3, Ordering::SeqCst);
        assert_eq!(b.atomic_u32(4).load(Ordering::SeqCst), 3);
        assert_eq!((a.len(), a.is_empty()), (8192, false));
    }

    #[test]
    fn map_sealed_refuses_short_or_unsealed_memory() {
        let fd = memfd("oslayer-short", 4096).unwrap();
        let e = map_sealed(fd.as_fd(), 8192, "short").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        let plain = rustix::fs::memfd_create("plain", MemfdFlags::CLOEXEC).unwrap();
        rustix::fs::ftruncate(&plain, 4096).unwrap();
        let e = map_sealed(plain.as_fd(), 4096, "plain").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    }

    #[test]
    fn an_owned_memfd_is_read_only_for_everyone_else() {
        let (fd, mine) = memfd_owned("oslayer-owned", 4096).unwrap();
        mine.atomic_u32(4).store(9, Ordering::SeqCst);
        assert!(Mapping::new(fd.as_fd(), 4096).is_err(), "writable mapping");
        assert!(rustix::io::pwrite(&fd, b"x", 0).is_err(), "write");
        let theirs = map_sealed_read_only(fd.as_fd(), 4096, "owned").unwrap();
        assert_eq!(theirs.load_u32(4, Ordering::SeqCst), 9);
        // SAFETY: the range is the read-only mapping just made; asking to
        // make it writable must fail and changes nothing.
        let prot = unsafe {
            rustix::mm::mprotect(
                theirs.ptr as *mut _,
                4096,
                rustix::mm::MprotectFlags::READ | rustix::mm::MprotectFlags::WRITE,
            )
        };
        assert!(prot.is_err(), "mprotect to writable");
        mine.atomic_u32(4).store(10, Ordering::SeqCst);
        assert_eq!(theirs.load_u32(4, Ordering::SeqCst), 10);
    }

    #[test]
    #[should_panic(expected = "outside")]
    fn an_access_past_the_end_panics() {
        let fd = memfd("oslayer-oob", 4096).unwrap();
        let m = Mapping::new(fd.as_fd(), 4096).unwrap();
        m.write_at(4095, b"ab");
    }
}
