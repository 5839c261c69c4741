//! One page of a memfd, mapped shared: the memory the floors' two sides
//! (threads or processes) meet in.

use std::ffi::CStr;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::AtomicU32;

use anyhow::Context;
use oslayer::mman::{self, Mapping};

/// Size of the shared mapping.
const LEN: usize = 4096;

/// A page of a memfd, mapped shared, unmapped on drop. A child made by
/// `fork` shares it.
pub(super) struct SharedPage {
    map: Mapping,
    // Kept open for the life of the mapping (not needed by the kernel, but
    // it is what the library holds too).
    _fd: OwnedFd,
}

impl SharedPage {
    /// A fresh zero-filled page of a memfd called `name` (sealed against
    /// resizing, as the library's are).
    pub(super) fn new(name: &CStr) -> anyhow::Result<SharedPage> {
        let fd = mman::memfd(&name.to_string_lossy(), LEN).context("memfd_create")?;
        let map = Mapping::new(fd.as_fd(), LEN).context("mmap memfd")?;
        Ok(SharedPage { map, _fd: fd })
    }

    /// The word at offset 0 (alone in its cache line: nothing else is used).
    #[inline]
    pub(super) fn word(&self) -> &AtomicU32 {
        self.map.atomic_u32(0)
    }
}
