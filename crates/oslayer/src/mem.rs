//! Memory locking and advice (rustix).

use std::io;

use rustix::mm::MlockAllFlags;

/// Locks all current and future memory of the process
/// (mlockall(MCL_CURRENT | MCL_FUTURE)).
pub fn lock_all() -> io::Result<()> {
    Ok(rustix::mm::mlockall(
        MlockAllFlags::CURRENT | MlockAllFlags::FUTURE,
    )?)
}

/// Size of a transparent huge page on x86-64 and arm64 (4 KiB base pages).
pub const HUGE_PAGE: usize = 2 << 20;

/// Asks for transparent huge pages (MADV_HUGEPAGE) over the whole 2 MiB
/// pages inside `v`'s allocation, before they are touched: a large table
/// read at random then costs one TLB entry per 2 MiB instead of per
/// 4 KiB. Advice only: where THP is off (or the range holds no whole huge
/// page) nothing changes and `Ok` is returned; contents never change.
pub fn advise_huge_pages<T>(v: &mut Vec<T>) -> io::Result<()> {
    let start = v.as_mut_ptr() as usize;
    let end = start + v.capacity() * std::mem::size_of::<T>();
    let first = start.next_multiple_of(HUGE_PAGE);
    let last = end / HUGE_PAGE * HUGE_PAGE;
    if first >= last {
        return Ok(());
    }
    // SAFETY: [first, last) lies inside `v`'s own allocation, which `v`
    // keeps alive for the call; MADV_HUGEPAGE changes how the range is
    // backed, never what it holds.
    unsafe {
        rustix::mm::madvise(
            first as *mut std::ffi::c_void,
            last - first,
            rustix::mm::Advice::LinuxHugepage,
        )
    }
    .or_else(|e| match e {
        rustix::io::Errno::INVAL => Ok(()), // a kernel without THP
        e => Err(e),
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn huge_page_advice_keeps_contents_and_tolerates_small_buffers() {
        let mut small: Vec<u8> = Vec::with_capacity(100);
        super::advise_huge_pages(&mut small).unwrap();
        let mut big: Vec<u64> = Vec::with_capacity(3 * super::HUGE_PAGE / 8);
        super::advise_huge_pages(&mut big).unwrap();
        big.resize(big.capacity(), 7);
        super::advise_huge_pages(&mut big).unwrap();
        assert!(big.iter().all(|&x| x == 7));
    }

    use super::*;

    #[test]
    fn lock_all_succeeds_or_is_refused_for_lack_of_privilege() {
        // In a child, so the test process's memory stays unlocked.
        // SAFETY: the child calls only mlockall and _exit (no allocation).
        match unsafe { crate::process::fork() }.unwrap() {
            crate::process::Fork::Child => {
                let code = match lock_all() {
                    Ok(()) => 0,
                    Err(e) if matches!(e.raw_os_error(), Some(libc::EPERM | libc::ENOMEM)) => 0,
                    Err(_) => 1,
                };
                crate::process::exit_now(code)
            }
            crate::process::Fork::Parent(pid) => {
                assert_eq!(crate::process::reap(pid).unwrap().exit_status(), Some(0))
            }
        }
    }
}
