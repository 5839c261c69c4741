//! One page of a memfd, mapped shared: the memory the floors' two sides
//! (threads or processes) meet in.

use std::ffi::CStr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::AtomicU32;

use anyhow::Context;

/// Size of the shared mapping.
const LEN: usize = 4096;

/// A page of a memfd, mapped shared, unmapped on drop. A child made by
/// `fork` shares it.
pub(super) struct SharedPage {
    ptr: *mut u8,
    // Kept open for the life of the mapping (not needed by the kernel, but
    // it is what the library holds too).
    _fd: OwnedFd,
}

impl SharedPage {
    /// A fresh zero-filled page of a memfd called `name`.
    pub(super) fn new(name: &CStr) -> anyhow::Result<SharedPage> {
        // SAFETY: the name is a valid NUL-terminated string.
        let fd = unsafe { libc::memfd_create(name.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error()).context("memfd_create");
        }
        // SAFETY: fd was just created and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: ftruncate on a descriptor we own.
        if unsafe { libc::ftruncate(fd.as_raw_fd(), LEN as libc::off_t) } != 0 {
            return Err(std::io::Error::last_os_error()).context("ftruncate memfd");
        }
        // SAFETY: mapping a descriptor we hold, with a null hint; the
        // result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                LEN,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error()).context("mmap memfd");
        }
        Ok(SharedPage {
            ptr: p.cast(),
            _fd: fd,
        })
    }

    /// The word at offset 0 (alone in its cache line: nothing else is used).
    pub(super) fn word(&self) -> &AtomicU32 {
        // SAFETY: offset 0 of a live, page-aligned, zero-filled mapping of
        // LEN bytes: aligned and in bounds for a u32, and the mapping
        // outlives the reference (it is unmapped only on drop of `self`).
        unsafe { &*(self.ptr as *const AtomicU32) }
    }
}

impl Drop for SharedPage {
    fn drop(&mut self) {
        // SAFETY: ptr/LEN is the mapping made in `new`; no reference from
        // `word` outlives `self`.
        unsafe { libc::munmap(self.ptr.cast(), LEN) };
    }
}
