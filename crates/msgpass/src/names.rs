//! The endpoint namespace: a directory msgpass owns, in which a server's
//! endpoint `adder/3` is the path `<root>/adder/3`.
//!
//! Rules, checked on every open:
//! - the root (and every directory msgpass creates under it) is owned by the
//!   effective user, is not a symbolic link, and is not writable by group or
//!   others; directories msgpass creates are mode 0700, endpoints 0600;
//! - a server claims an endpoint by holding an advisory lock on
//!   `<endpoint>.lock` for its lifetime. The kernel drops the lock when the
//!   process dies, so an endpoint whose lock is free is stale and is
//!   replaced; one whose lock is held is live and is never stolen.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Seek, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

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

    /// Removes the now-empty directories between `path` and the root.
    pub(crate) fn prune(&self, path: &Path) {
        let mut dir = path.parent();
        while let Some(d) = dir {
            if d == self.root || !d.starts_with(&self.root) || fs::remove_dir(d).is_err() {
                break;
            }
            dir = d.parent();
        }
    }
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
    ns: Namespace,
    path: PathBuf,
    lock_path: PathBuf,
    _lock: File,
    /// A stale endpoint from a dead server was found and removed.
    pub replaced_stale: bool,
}

impl EndpointClaim {
    /// Claims endpoint `name` in `ns`: creates its directories, takes the
    /// lock and clears whatever a dead server left at the path.
    pub(crate) fn new(ns: &Namespace, name: &str) -> Result<EndpointClaim> {
        let path = ns.prepare(name)?;
        let mut lock_path = path.clone().into_os_string();
        lock_path.push(".lock");
        let lock_path = PathBuf::from(lock_path);
        let lock = loop {
            let mut f = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(&lock_path)
                .map_err(|e| Error::io(format!("open {}", lock_path.display()), e))?;
            let locked = oslayer::fs::try_lock_exclusive(f.as_fd())
                .map_err(|e| Error::io(format!("lock {}", lock_path.display()), e))?;
            if !locked {
                let mut s = String::new();
                let pid = f
                    .read_to_string(&mut s)
                    .ok()
                    .and_then(|_| s.trim().parse().ok());
                return Err(Error::AlreadyServed { path, pid });
            }
            // The previous owner may have unlinked the file between our open
            // and our lock: only a lock on the file still at the path counts.
            let held = f.metadata().map_err(|e| Error::io("fstat lock file", e))?;
            match fs::symlink_metadata(&lock_path) {
                Ok(now) if now.ino() == held.ino() && now.dev() == held.dev() => {
                    f.set_len(0)
                        .map_err(|e| Error::io("truncate lock file", e))?;
                    f.rewind().map_err(|e| Error::io("rewind lock file", e))?;
                    write!(f, "{}", std::process::id())
                        .map_err(|e| Error::io("write lock file", e))?;
                    break f;
                }
                _ => continue,
            }
        };
        // We hold the lock, so whoever left anything at or beside the path
        // is dead: every transport's stale-endpoint hook clears its kind
        // (a fuse server's dead mount, a sysv-msg server's queues, FIFOs).
        let cleaned = crate::transport::table::clean_stale(&path);
        let replaced_file = match fs::symlink_metadata(&path) {
            Ok(md) if md.is_dir() => {
                // Still holding the lock: leave no lock file behind.
                let _ = fs::remove_file(&lock_path);
                return Err(Error::Namespace {
                    path,
                    reason: "a directory stands where the endpoint should be".into(),
                });
            }
            Ok(_) => {
                fs::remove_file(&path)
                    .map_err(|e| Error::io(format!("remove stale {}", path.display()), e))?;
                true
            }
            Err(_) => false,
        };
        let replaced_stale = cleaned || replaced_file;
        Ok(EndpointClaim {
            ns: ns.clone(),
            path,
            lock_path,
            _lock: lock,
            replaced_stale,
        })
    }

    /// The endpoint path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for EndpointClaim {
    fn drop(&mut self) {
        // Remove while still holding the lock, so no one claims a file we
        // are about to delete (a claimer re-checks the inode after locking).
        let _ = fs::remove_file(&self.path);
        let _ = fs::remove_file(&self.lock_path);
        self.ns.prune(&self.path);
    }
}
