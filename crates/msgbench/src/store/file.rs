//! A SQLite store's file, opened only where nobody else can redirect it
//! (issue 33).
//!
//! A store may lie in a directory others can write (`MSGBENCH_STORE` in
//! `/tmp`, a shared `$XDG_DATA_HOME`), where another user could plant a
//! symbolic link at the store's path, or at one of SQLite's own files
//! beside it, so that a run writes the link's target. The rules, after
//! the kernel's `fs.protected_symlinks` and `fs.protected_regular` (which
//! systemd turns on) and OpenSSH's `StrictModes` (which trusts only root
//! and the user):
//!
//! - a symbolic link anywhere on the path (the file or a directory) is
//!   followed only when it is the user's own or root's: a link of your
//!   own to another disk is fine, one planted by someone else is refused,
//!   naming it, before anything is opened or created;
//! - the store, when it exists, is a regular file: a device, a FIFO or a
//!   socket is refused (`--store /dev/null`), and so is a file of another
//!   user (not root, not the directory's owner) in a world-writable
//!   directory, as the kernel's `protected_regular` refuses to create it;
//! - SQLite's side files (`-wal`, `-shm`, `-journal`), named after the
//!   store, are never links (SQLite makes them itself), nor anything but
//!   regular files.
//!
//! The path is resolved here, link by link, into one with no link on it,
//! and that is what SQLite opens, with `SQLITE_OPEN_NOFOLLOW`: SQLite
//! then refuses a path with any link on it, and opens the file and its
//! side files with `O_NOFOLLOW`, so a link planted after these checks
//! (the race between a check and an open) is refused too, not followed.
//! Missing directories are made one at a time (never through a link).

use std::ffi::OsString;
use std::fs::Metadata;
use std::os::unix::fs::{DirBuilderExt, FileTypeExt, MetadataExt};
use std::path::{Component, Path, PathBuf};

use super::StoreError;

/// Most links followed on one path (as the kernel's `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// SQLite's files beside a store named `X`: `X-wal`, `X-shm`, `X-journal`.
pub const SIDE_FILES: [&str; 3] = ["-wal", "-shm", "-journal"];

/// A store's file, checked: its path with no link on it, and whether
/// it exists.
#[derive(Debug)]
pub struct Checked {
    /// The path to open.
    pub path: PathBuf,
    /// Whether the file is there already.
    pub exists: bool,
}

/// The refusal of `path`, one line naming it.
fn refused(path: &Path, why: impl Into<String>) -> StoreError {
    StoreError::File {
        path: path.display().to_string(),
        why: why.into(),
    }
}

/// Resolves and checks the store at `given` (see the module's rules).
pub fn check(given: &Path) -> Result<Checked, StoreError> {
    let (path, meta) = resolve(given)?;
    if let Some(m) = &meta {
        regular(&path, m)?;
        owned_fairly(&path, m)?;
    }
    for side in SIDE_FILES {
        let p = side_file(&path, side);
        if let Some(m) = lstat(&p)? {
            if m.file_type().is_symlink() {
                return Err(refused(
                    &p,
                    "is a symbolic link beside the store, where SQLite keeps its own file: not followed, nothing was written",
                ));
            }
            regular(&p, &m)?;
        }
    }
    Ok(Checked {
        path,
        exists: meta.is_some(),
    })
}

/// Checks, once SQLite has opened it, that the store at `path` (no link
/// on it) is still a regular file: what was swapped in between the
/// checks and the open is refused before SQLite reads a byte.
pub fn recheck(path: &Path) -> Result<(), StoreError> {
    match lstat(path)? {
        Some(m) if m.file_type().is_symlink() => Err(refused(
            path,
            "became a symbolic link while it was opened: refused",
        )),
        Some(m) => regular(path, &m).and_then(|()| owned_fairly(path, &m)),
        None => Err(refused(path, "vanished while it was opened")),
    }
}

/// `path` with `suffix` appended to its file name.
pub fn side_file(path: &Path, suffix: &str) -> PathBuf {
    let mut s: OsString = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The metadata of `path` itself (not of a link's target); `None` when
/// there is nothing there.
fn lstat(path: &Path) -> Result<Option<Metadata>, StoreError> {
    match std::fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(refused(path, format!("cannot be examined: {e}"))),
    }
}

/// A regular file, or the refusal naming what it is.
fn regular(path: &Path, m: &Metadata) -> Result<(), StoreError> {
    let t = m.file_type();
    let what = if t.is_file() {
        return Ok(());
    } else if t.is_dir() {
        "a directory"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else {
        "a special file"
    };
    Err(refused(
        path,
        format!("is {what}, not a regular file: a store is a SQLite file"),
    ))
}

/// Refuses a file of another user (not root, not the directory's owner)
/// in a world-writable directory, where anyone may have put it.
fn owned_fairly(path: &Path, m: &Metadata) -> Result<(), StoreError> {
    let me = oslayer::ids::euid();
    if m.uid() == me || m.uid() == 0 {
        return Ok(());
    }
    let Some(dir) = path.parent() else {
        return Ok(());
    };
    let Some(d) = lstat(dir)? else {
        return Ok(());
    };
    if d.mode() & 0o002 == 0 || d.uid() == m.uid() {
        return Ok(());
    }
    Err(refused(
        path,
        format!(
            "belongs to another user (uid {}) in a directory anyone can write: refused, nothing was written",
            m.uid()
        ),
    ))
}

/// Follows a link only when it is the user's own or root's.
fn trusted(link: &Path, m: &Metadata) -> Result<(), StoreError> {
    let me = oslayer::ids::euid();
    if m.uid() == me || m.uid() == 0 {
        return Ok(());
    }
    Err(refused(
        link,
        format!(
            "is a symbolic link of another user (uid {}): not followed (only your own or root's are), nothing was written",
            m.uid()
        ),
    ))
}

/// `given` made absolute, every link on it resolved (each checked by
/// [`trusted`]); the metadata of the file when it exists. The part of the
/// path that does not exist yet is kept as given.
fn resolve(given: &Path) -> Result<(PathBuf, Option<Metadata>), StoreError> {
    let absolute = if given.is_absolute() {
        given.to_path_buf()
    } else {
        std::env::current_dir()
            .map_err(|e| refused(given, format!("cannot be made absolute: {e}")))?
            .join(given)
    };
    let mut todo: Vec<OsString> = parts(&absolute);
    todo.reverse(); // popped from the end: the next part is last
    let mut done = PathBuf::from("/");
    let mut meta = None;
    let mut links = 0;
    while let Some(part) = todo.pop() {
        if part == ".." {
            done.pop();
            continue;
        }
        let next = done.join(&part);
        let Some(m) = lstat(&next)? else {
            return Ok((rest_as_given(next, todo), None));
        };
        if !m.file_type().is_symlink() {
            done = next;
            meta = Some(m);
            continue;
        }
        trusted(&next, &m)?;
        links += 1;
        if links > MAX_LINKS {
            return Err(refused(given, "has too many symbolic links on it"));
        }
        let target = std::fs::read_link(&next)
            .map_err(|e| refused(&next, format!("cannot be read: {e}")))?;
        if target.is_absolute() {
            done = PathBuf::from("/");
        }
        todo.extend(parts(&target).into_iter().rev());
    }
    Ok((done, meta))
}

/// The named parts of `p` (`.` dropped, `..` kept, the root dropped).
fn parts(p: &Path) -> Vec<OsString> {
    p.components()
        .filter_map(|c| match c {
            Component::Normal(s) => Some(s.to_owned()),
            Component::ParentDir => Some("..".into()),
            _ => None,
        })
        .collect()
}

/// `first` (which does not exist) and the parts still to do (last to
/// first), `..` taken lexically.
fn rest_as_given(first: PathBuf, mut todo: Vec<OsString>) -> PathBuf {
    let mut p = first;
    while let Some(part) = todo.pop() {
        if part == ".." {
            p.pop();
        } else {
            p.push(part);
        }
    }
    p
}

/// Makes the missing directories above `path` (no link on it), private
/// to the user, one at a time: a directory is never made through a link,
/// and one that appears meanwhile must be a directory, not a link.
pub fn create_parent(path: &Path) -> Result<(), StoreError> {
    let mut missing = Vec::new();
    let mut dir = path.parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if lstat(d)?.is_some() {
            break;
        }
        missing.push(d.to_path_buf());
        dir = d.parent();
    }
    for d in missing.iter().rev() {
        match std::fs::DirBuilder::new().mode(0o700).create(d) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                if !lstat(d)?.is_some_and(|m| m.file_type().is_dir()) {
                    return Err(refused(
                        d,
                        "appeared, not as a directory, while it was made",
                    ));
                }
            }
            Err(e) => return Err(refused(d, format!("cannot be created: {e}"))),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private directory, removed on drop.
    struct Dir(PathBuf);

    impl Dir {
        fn new(tag: &str) -> Dir {
            let d =
                std::env::temp_dir().join(format!("msgbench-file-{}-{tag}", std::process::id()));
            let _ = std::fs::remove_dir_all(&d);
            std::fs::create_dir_all(&d).unwrap();
            Dir(d.canonicalize().unwrap())
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn own_links_are_resolved_and_the_missing_part_kept() {
        let d = Dir::new("resolve");
        std::fs::create_dir(d.0.join("real")).unwrap();
        std::os::unix::fs::symlink("real", d.0.join("link")).unwrap();
        let c = check(&d.0.join("link/./sub/../x.db")).unwrap();
        assert_eq!(c.path, d.0.join("real/x.db"));
        assert!(!c.exists);
        std::fs::write(d.0.join("real/x.db"), b"").unwrap();
        std::os::unix::fs::symlink(d.0.join("real/x.db"), d.0.join("abs.db")).unwrap();
        let c = check(&d.0.join("abs.db")).unwrap();
        assert_eq!(c.path, d.0.join("real/x.db"));
        assert!(c.exists);
    }

    #[test]
    fn devices_loops_and_links_beside_the_store_are_refused() {
        let e = check(Path::new("/dev/null")).unwrap_err().to_string();
        assert_eq!(
            e,
            "/dev/null is a character device, not a regular file: a store is a SQLite file"
        );
        let d = Dir::new("refuse");
        std::os::unix::fs::symlink("b", d.0.join("a")).unwrap();
        std::os::unix::fs::symlink("a", d.0.join("b")).unwrap();
        let e = check(&d.0.join("a")).unwrap_err().to_string();
        assert!(e.ends_with("has too many symbolic links on it"), "{e}");
        std::os::unix::fs::symlink("/etc/passwd", d.0.join("s.db-wal")).unwrap();
        let e = check(&d.0.join("s.db")).unwrap_err().to_string();
        assert!(
            e.starts_with(&format!(
                "{} is a symbolic link beside",
                d.0.join("s.db-wal").display()
            )),
            "{e}"
        );
    }

    #[test]
    fn missing_directories_are_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let d = Dir::new("mkdir");
        let store = d.0.join("a/b/s.db");
        create_parent(&store).unwrap();
        let mode = std::fs::metadata(d.0.join("a/b"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o700);
        create_parent(&store).unwrap();
    }
}
