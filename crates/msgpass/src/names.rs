//! The endpoint namespace: a directory msgpass owns, in which a server's
//! endpoint `adder/3` is the path `<root>/adder/3`.
//!
//! Rules, checked on every open:
//! - every directory above the root (each one the root's path goes
//!   through, symbolic links followed one at a time) is owned by root or
//!   the effective user, and is not writable by group or others unless
//!   sticky (like `/tmp`): otherwise someone else could swap the root, or
//!   a directory on the way to it, for a symbolic link, and a server
//!   cleaning up would delete files wherever that link points;
//! - the root (and every directory msgpass creates under it) is owned by the
//!   effective user, is not a symbolic link, and is not writable by group or
//!   others; directories msgpass creates are mode 0700, endpoints 0600;
//! - a server claims an endpoint by holding an advisory lock on
//!   `<endpoint>.lock` for its lifetime. The kernel drops the lock when the
//!   process dies, so an endpoint whose lock is free is stale and is
//!   replaced; one whose lock is held is live and is never stolen;
//! - a claim opens the directories from the root down to the endpoint's
//!   (`O_NOFOLLOW`, each checked again through its descriptor) and removes
//!   the endpoint, its lock file and empty directories relative to those
//!   descriptors (`unlinkat`), so a path swapped after the checks cannot
//!   redirect a removal.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Environment variable that overrides the default namespace root.
pub const NS_ENV: &str = "MSGBENCH_NS";

/// An opened and checked endpoint namespace.
#[derive(Debug, Clone)]
pub struct Namespace {
    root: PathBuf,
}

impl Namespace {
    /// The default root: `$XDG_RUNTIME_DIR/msgbench` when set, else
    /// `/run/msgbench` for root, else `/tmp/msgbench-<uid>`.
    pub fn default_root() -> PathBuf {
        match std::env::var_os("XDG_RUNTIME_DIR") {
            Some(d) if !d.is_empty() => PathBuf::from(d).join("msgbench"),
            _ if oslayer::ids::euid() == 0 => PathBuf::from("/run/msgbench"),
            _ => PathBuf::from(format!("/tmp/msgbench-{}", oslayer::ids::euid())),
        }
    }

    /// Opens the namespace chosen by, in order: `flag` (a `--ns DIR`
    /// option), the `MSGBENCH_NS` environment variable, the default root.
    pub fn resolve(flag: Option<&Path>) -> Result<Namespace> {
        match flag {
            Some(p) => Namespace::open(p),
            None => match std::env::var_os(NS_ENV) {
                Some(p) if !p.is_empty() => Namespace::open(PathBuf::from(p)),
                _ => Namespace::open(Namespace::default_root()),
            },
        }
    }

    /// Opens `root`, creating it (mode 0700) if missing, and checks it.
    pub fn open(root: impl Into<PathBuf>) -> Result<Namespace> {
        let root = root.into();
        let root = if root.is_relative() {
            std::env::current_dir()
                .map_err(|e| Error::io("current directory", e))?
                .join(root)
        } else {
            root
        };
        if let Some(parent) = root.parent() {
            if !parent.as_os_str().is_empty() && !parent.exists() {
                fs::create_dir_all(parent)
                    .map_err(|e| ns_err(parent, format!("cannot create: {e}")))?;
            }
            check_ancestors(parent, 0)?;
        }
        ensure_private_dir(&root)?;
        Ok(Namespace { root })
    }

    /// The namespace directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of endpoint `name` (not created, not checked for existence).
    pub fn path_of(&self, name: &str) -> Result<PathBuf> {
        validate_name(name)?;
        Ok(self.root.join(name))
    }

    /// The path of endpoint `name`, with its parent directories created and
    /// checked like the root.
    pub(crate) fn prepare(&self, name: &str) -> Result<PathBuf> {
        let path = self.path_of(name)?;
        let mut dir = self.root.clone();
        let rel = Path::new(name);
        if let Some(parent) = rel.parent() {
            for c in parent.components() {
                dir.push(c);
                ensure_private_dir(&dir)?;
            }
        }
        Ok(path)
    }
}

/// How many symbolic links [`check_ancestors`] follows (as the kernel's
/// `MAXSYMLINKS`).
const MAX_LINKS: u32 = 40;

/// Checks every directory the absolute path `dir` goes through, `dir`
/// included, following symbolic links one at a time (a link is safe to
/// follow once the directory holding it is checked): each must be owned by
/// root or by us, and not writable by group or others unless sticky.
/// Returns the path with its links resolved.
fn check_ancestors(dir: &Path, links: u32) -> Result<PathBuf> {
    let mut cur = PathBuf::from("/");
    check_ancestor(&cur)?;
    for c in dir.components() {
        match c {
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            // `cur` has no links in it: its parent is checked already.
            Component::ParentDir => {
                cur.pop();
            }
            Component::Normal(n) => {
                let next = cur.join(n);
                let md = fs::symlink_metadata(&next)
                    .map_err(|e| ns_err(&next, format!("cannot inspect: {e}")))?;
                if md.file_type().is_symlink() {
                    if links >= MAX_LINKS {
                        return Err(ns_err(&next, "too many symbolic links".into()));
                    }
                    let target = fs::read_link(&next)
                        .map_err(|e| ns_err(&next, format!("cannot read link: {e}")))?;
                    cur = check_ancestors(&cur.join(target), links + 1)?;
                } else {
                    check_ancestor(&next)?;
                    cur = next;
                }
            }
        }
    }
    Ok(cur)
}

/// One directory above the root (see [`check_ancestors`]).
fn check_ancestor(dir: &Path) -> Result<()> {
    let md = fs::symlink_metadata(dir).map_err(|e| ns_err(dir, format!("cannot inspect: {e}")))?;
    if !md.is_dir() {
        return Err(ns_err(dir, "is not a directory".into()));
    }
    let me = oslayer::ids::euid();
    if md.uid() != 0 && md.uid() != me {
        return Err(ns_err(
            dir,
            format!(
                "is above the namespace and owned by uid {}, neither root nor you (uid {me}), \
                 who could swap the namespace for a symbolic link; choose another --ns",
                md.uid()
            ),
        ));
    }
    if md.mode() & 0o022 != 0 && md.mode() & libc::S_ISVTX == 0 {
        return Err(ns_err(
            dir,
            format!(
                "is above the namespace and writable by group or others without the sticky \
                 bit (mode {:o}), so they could swap the namespace for a symbolic link; \
                 choose another --ns",
                md.mode() & 0o7777
            ),
        ));
    }
    Ok(())
}

/// Opens directory `name` (in `dir`, or a path) without following a link
/// and checks, through the descriptor, that it is ours and private: what
/// was checked by path is what we hold.
fn open_private(dir: Option<BorrowedFd<'_>>, name: &Path, shown: &Path) -> Result<OwnedFd> {
    let fd = oslayer::fs::open_dir_at(dir, name)
        .map_err(|e| ns_err(shown, format!("cannot open the directory: {e}")))?;
    let (uid, mode) =
        oslayer::fs::owner_and_mode(fd.as_fd()).map_err(|e| ns_err(shown, e.to_string()))?;
    if uid != oslayer::ids::euid() || mode & 0o022 != 0 {
        return Err(ns_err(
            shown,
            "changed while being opened (no longer ours and private)".into(),
        ));
    }
    Ok(fd)
}

fn ns_err(path: &Path, reason: String) -> Error {
    Error::Namespace {
        path: path.to_path_buf(),
        reason,
    }
}

/// Creates `dir` with mode 0700 if missing, then checks that it is a real
/// directory owned by us and not writable by anyone else.
fn ensure_private_dir(dir: &Path) -> Result<()> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(ns_err(dir, format!("cannot create directory: {e}"))),
    }
    let md = fs::symlink_metadata(dir).map_err(|e| ns_err(dir, format!("cannot inspect: {e}")))?;
    if md.file_type().is_symlink() {
        return Err(ns_err(
            dir,
            "is a symbolic link; refusing to use it (remove it, or choose another --ns)".into(),
        ));
    }
    if !md.is_dir() {
        return Err(ns_err(dir, "exists and is not a directory".into()));
    }
    let me = oslayer::ids::euid();
    if md.uid() != me {
        return Err(ns_err(
            dir,
            format!(
                "is owned by uid {}, not by you (uid {me}); choose another --ns",
                md.uid()
            ),
        ));
    }
    if md.mode() & 0o022 != 0 {
        return Err(ns_err(
            dir,
            format!(
                "is writable by group or others (mode {:o}); run `chmod 700 {}`",
                md.mode() & 0o7777,
                dir.display()
            ),
        ));
    }
    Ok(())
}

/// Checks that `name` is a plain relative path of normal components, spelt
/// canonically (one name, one endpoint path).
fn validate_name(name: &str) -> Result<()> {
    let bad = |reason| {
        Err(Error::BadName {
            name: name.to_string(),
            reason,
        })
    };
    if name.is_empty() {
        return bad("empty");
    }
    if name.contains('\0') {
        return bad("contains a NUL byte");
    }
    // Split by hand: Path::components() silently drops "." and empty
    // segments, so "a/./b", "a//b" and "a/" would pass as other names.
    for seg in name.split('/') {
        if seg.is_empty() || seg == "." || seg == ".." {
            return bad("must be a relative path without '.', '..' or empty parts (like adder/0)");
        }
        // A directory "x.lock" would block endpoint "x" from taking its lock.
        if seg.ends_with(".lock") {
            return bad("names ending in .lock are reserved");
        }
    }
    Ok(())
}

/// A server's claim on an endpoint path. While it lives no other process can
/// claim the same path; on drop the endpoint and its lock file are removed.
#[derive(Debug)]
pub(crate) struct EndpointClaim {
    path: PathBuf,
    /// The directories from the root down to the endpoint's, opened, each
    /// with its name in the one before (empty for the root).
    dirs: Vec<(OwnedFd, OsString)>,
    /// The endpoint's and its lock file's names in the last of `dirs`.
    file: OsString,
    lock_file: OsString,
    _lock: File,
    /// A stale endpoint from a dead server was found and removed.
    pub replaced_stale: bool,
}

impl EndpointClaim {
    /// Claims endpoint `name` in `ns`: creates its directories, takes the
    /// lock and clears whatever a dead server left at the path, first what
    /// only the transports know of (`clean_stale`: every transport's
    /// cleanup run on the path, true when one found something; the
    /// transport table's, passed down by the channel, so that this layer
    /// imports no transport).
    pub(crate) fn new(
        ns: &Namespace,
        name: &str,
        clean_stale: fn(&Path) -> bool,
    ) -> Result<EndpointClaim> {
        let path = ns.prepare(name)?;
        let mut lock_path = path.clone().into_os_string();
        lock_path.push(".lock");
        let lock_path = PathBuf::from(lock_path);
        let dirs = open_dirs(ns, name)?;
        let rel = Path::new(name);
        let file = rel.file_name().expect("validated name").to_owned();
        let mut lock_file = file.clone();
        lock_file.push(".lock");
        let lock = take_lock(&lock_path, &path)?;
        let (at, _) = dirs.last().expect("the root");
        let cleaned = clean_stale(&path);
        let replaced_stale = clear_stale(&path, at.as_fd(), &file, &lock_file)? || cleaned;
        Ok(EndpointClaim {
            path,
            dirs,
            file,
            lock_file,
            _lock: lock,
            replaced_stale,
        })
    }

    /// The endpoint path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens the directories from the namespace root down to endpoint
/// `name`'s, each relative to the one before (every removal goes through
/// these descriptors: see the module documentation), with each one's name
/// in the one before (empty for the root).
fn open_dirs(ns: &Namespace, name: &str) -> Result<Vec<(OwnedFd, OsString)>> {
    let mut dirs = vec![(open_private(None, &ns.root, &ns.root)?, OsString::new())];
    let mut shown = ns.root.clone();
    if let Some(parent) = Path::new(name).parent() {
        for c in parent.components() {
            shown.push(c);
            let (at, _) = dirs.last().expect("the root");
            let fd = open_private(Some(at.as_fd()), Path::new(&c), &shown)?;
            dirs.push((fd, c.as_os_str().to_owned()));
        }
    }
    Ok(dirs)
}

/// Takes the exclusive lock of endpoint `path` at `lock_path` and writes
/// our pid in it; [`Error::AlreadyServed`] (with the owner's pid, if it
/// says) when a live server holds it.
fn take_lock(lock_path: &Path, path: &Path) -> Result<File> {
    loop {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(lock_path)
            .map_err(|e| Error::io(format!("open {}", lock_path.display()), e))?;
        let locked = oslayer::fs::try_lock_exclusive(f.as_fd())
            .map_err(|e| Error::io(format!("lock {}", lock_path.display()), e))?;
        if !locked {
            let mut s = String::new();
            let pid = f
                .read_to_string(&mut s)
                .ok()
                .and_then(|_| s.trim().parse().ok());
            return Err(Error::AlreadyServed {
                path: path.to_owned(),
                pid,
            });
        }
        // The previous owner may have unlinked the file between our open
        // and our lock: only a lock on the file still at the path counts.
        let held = f.metadata().map_err(|e| Error::io("fstat lock file", e))?;
        match fs::symlink_metadata(lock_path) {
            Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                f.set_len(0)
                    .map_err(|e| Error::io("truncate lock file", e))?;
                f.rewind().map_err(|e| Error::io("rewind lock file", e))?;
                write!(f, "{}", std::process::id()).map_err(|e| Error::io("write lock file", e))?;
                return Ok(f);
            }
            _ => continue,
        }
    }
}

/// With the lock held, so that whoever left anything at `path` is dead
/// (and after the transports' own hooks cleared their kind beside it: a
/// fuse server's dead mount, a sysv-msg server's queues, FIFOs): a stale
/// `file` in directory `at` is removed. True when one was found; a
/// directory standing at the path is an error (and the lock file is
/// removed, leaving nothing behind).
fn clear_stale(
    path: &Path,
    at: BorrowedFd<'_>,
    file: &OsString,
    lock_file: &OsString,
) -> Result<bool> {
    let replaced_file = match fs::symlink_metadata(path) {
        Ok(md) if md.is_dir() => {
            let _ = oslayer::fs::unlink_at(at, Path::new(lock_file));
            return Err(Error::Namespace {
                path: path.to_owned(),
                reason: "a directory stands where the endpoint should be".into(),
            });
        }
        Ok(_) => {
            oslayer::fs::unlink_at(at, Path::new(file))
                .map_err(|e| Error::io(format!("remove stale {}", path.display()), e))?;
            true
        }
        Err(_) => false,
    };
    Ok(replaced_file)
}

impl Drop for EndpointClaim {
    fn drop(&mut self) {
        // Remove while still holding the lock, so no one claims a file we
        // are about to delete (a claimer re-checks the inode after locking).
        // Relative to the directories opened at the claim: a path swapped
        // since cannot send a removal elsewhere.
        if let Some((at, _)) = self.dirs.last() {
            let _ = oslayer::fs::unlink_at(at.as_fd(), Path::new(&self.file));
            let _ = oslayer::fs::unlink_at(at.as_fd(), Path::new(&self.lock_file));
        }
        // Then the directories left empty, from the deepest up (the root
        // stays).
        for i in (1..self.dirs.len()).rev() {
            let name = Path::new(&self.dirs[i].1);
            if oslayer::fs::remove_dir_at(self.dirs[i - 1].0.as_fd(), name).is_err() {
                break;
            }
        }
    }
}
