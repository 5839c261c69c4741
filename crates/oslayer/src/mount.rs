//! Mounting and unmounting, a private mount namespace, and the type of a
//! mounted filesystem. Backed by rustix.
//!
//! The namespace functions ([`unshare_mount_namespace`],
//! [`make_private_recursive`], [`bind`]) take their paths as `&CStr`, made
//! beforehand: each is one raw system call with no allocation, so a child
//! may call them between fork and exec (`pre_exec`).

use std::ffi::CStr;
use std::io;
use std::path::Path;

pub use rustix::mount::MountFlags;
use rustix::mount::{MountPropagationFlags, UnmountFlags};

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

/// Gives the calling thread its own copy of the mount namespace
/// (`unshare(CLONE_NEWNS)`; a single-threaded child's is the process's):
/// what it mounts from then on only it and its children see, once the
/// copy is made private ([`make_private_recursive`]). Needs
/// `CAP_SYS_ADMIN`.
///
/// Async-signal-safe (one raw system call, no allocation).
pub fn unshare_mount_namespace() -> io::Result<()> {
    // SAFETY: unshare_unsafe's one hazard is `UnshareFlags::FILES` (a
    // thread left with a descriptor table the others' descriptors are not
    // in); only NEWNS is asked for, which touches no descriptor.
    Ok(unsafe { rustix::thread::unshare_unsafe(rustix::thread::UnshareFlags::NEWNS) }?)
}

/// Makes every mount at and under `path` private (`mount(NULL, path,
/// NULL, MS_REC | MS_PRIVATE, NULL)`): mounts made here do not propagate
/// to the namespace this one was copied from, nor its to here.
///
/// Async-signal-safe (one raw system call, no allocation).
pub fn make_private_recursive(path: &CStr) -> io::Result<()> {
    Ok(rustix::mount::mount_change(
        path,
        MountPropagationFlags::REC | MountPropagationFlags::PRIVATE,
    )?)
}

/// Bind-mounts `source` over `target` (`mount(source, target, NULL,
/// MS_BIND, NULL)`): `target` shows what `source` holds.
///
/// Async-signal-safe (one raw system call, no allocation).
pub fn bind(source: &CStr, target: &CStr) -> io::Result<()> {
    Ok(rustix::mount::mount_bind(source, target)?)
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

    /// The child's bind mount of `source` over `target`, in its own mount
    /// namespace: what `ls target` prints there, or the child's error.
    fn ls_in_private_namespace(source: &Path, target: &Path) -> io::Result<String> {
        use std::os::unix::ffi::OsStrExt;
        use std::os::unix::process::CommandExt;
        let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        let (src, tgt) = (c(source), c(target));
        let mut cmd = std::process::Command::new("ls");
        cmd.arg(target);
        let setup = move || {
            unshare_mount_namespace()?;
            make_private_recursive(c"/")?;
            bind(&src, &tgt)
        };
        // SAFETY: `setup` makes only the async-signal-safe calls above, on
        // strings made before the fork; it allocates nothing.
        unsafe { cmd.pre_exec(setup) };
        let out = cmd.output()?;
        assert!(out.status.success(), "{out:?}");
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    #[test]
    fn a_bind_mount_in_a_private_namespace_is_seen_by_the_child_only() {
        if crate::ids::euid() != 0 {
            assert!(
                std::env::var_os("CI").is_none(),
                "a_bind_mount_in_a_private_namespace_is_seen_by_the_child_only needs root (CI is set)"
            );
            eprintln!("skipped a_bind_mount_in_a_private_namespace_is_seen_by_the_child_only: needs root (CAP_SYS_ADMIN)");
            return;
        }
        let dir = std::env::temp_dir().join(format!("oslayer-bind-{}", std::process::id()));
        let (source, target) = (dir.join("source"), dir.join("target"));
        std::fs::create_dir_all(&source).unwrap();
        std::fs::create_dir_all(&target).unwrap();
        std::fs::write(source.join("marker"), b"").unwrap();
        match ls_in_private_namespace(&source, &target) {
            Ok(listing) => assert_eq!(listing.trim(), "marker"),
            // A container may refuse namespaces even to root.
            Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EPERM), "{e}"),
        }
        let here = std::fs::read_dir(&target).unwrap().count();
        assert_eq!(here, 0, "the mount stayed in the child's namespace");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn binding_a_missing_source_is_enoent() {
        let e = bind(c"/nonexistent-oslayer-source", c"/tmp").unwrap_err();
        // Without CAP_SYS_ADMIN the permission check comes first.
        assert!(
            matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EPERM)),
            "{e}"
        );
    }
}
