//! Mounting and unmounting, and the type of a mounted filesystem. Backed by
//! rustix.

use std::ffi::CStr;
use std::io;
use std::path::Path;

pub use rustix::mount::MountFlags;
use rustix::mount::UnmountFlags;

/// Mounts a `fstype` filesystem from `source` on `target` with `flags` and
/// the filesystem-specific `data` (needs `CAP_SYS_ADMIN`).
pub fn mount(
    source: &CStr,
    target: &Path,
    fstype: &CStr,
    flags: MountFlags,
    data: &CStr,
) -> io::Result<()> {
    Ok(rustix::mount::mount(source, target, fstype, flags, data)?)
}

/// Detaches whatever is mounted at `path` (lazy unmount, `MNT_DETACH`,
/// never following a final symbolic link).
pub fn detach(path: &Path) -> io::Result<()> {
    Ok(rustix::mount::unmount(
        path,
        UnmountFlags::DETACH | UnmountFlags::NOFOLLOW,
    )?)
}

/// The filesystem type (`statfs`'s `f_type`, a magic number such as
/// `0x65735546` for FUSE) of the filesystem holding `path`.
pub fn fs_type(path: &Path) -> io::Result<i64> {
    Ok(rustix::fs::statfs(path)?.f_type as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn proc_is_procfs_and_detaching_a_non_mount_fails() {
        assert_eq!(fs_type(Path::new("/proc")).unwrap(), 0x9fa0); // PROC_SUPER_MAGIC
        let dir = std::env::temp_dir().join(format!("oslayer-mnt-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert!(detach(&dir).is_err()); // EINVAL (not a mount) or EPERM
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn mount_and_detach_a_tmpfs_as_root() {
        if crate::ids::euid() != 0 {
            // Under CI nothing may be skipped; by hand, say why.
            assert!(
                std::env::var_os("CI").is_none(),
                "mount_and_detach_a_tmpfs_as_root needs root (CI is set)"
            );
            eprintln!("skipped mount_and_detach_a_tmpfs_as_root: needs root (CAP_SYS_ADMIN)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("oslayer-tmpfs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        match mount(
            c"oslayer",
            &dir,
            c"tmpfs",
            MountFlags::NOSUID | MountFlags::NODEV,
            c"size=64k",
        ) {
            Ok(()) => {
                assert_eq!(fs_type(&dir).unwrap(), 0x0102_1994); // TMPFS_MAGIC
                detach(&dir).unwrap();
            }
            // A container may refuse mounts even to root.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM)),
        }
        std::fs::remove_dir(&dir).unwrap();
    }
}
