//! Named pipes (FIFOs). Backed by rustix (`mknodat`).

use std::io;
use std::path::Path;

use rustix::fs::{FileType, Mode, CWD};

/// Makes a named pipe at `path` with mode `mode` (then chmod'ed to exactly
/// `mode`, whatever the umask). Fails with `EEXIST` if the path is taken.
pub fn mkfifo(path: &Path, mode: u32) -> io::Result<()> {
    rustix::fs::mknodat(CWD, path, FileType::Fifo, Mode::from_raw_mode(mode), 0)?;
    crate::fs::chmod(path, mode)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};

    #[test]
    fn makes_a_fifo_with_the_exact_mode_once() {
        let p = std::env::temp_dir().join(format!("oslayer-fifo-{}", std::process::id()));
        let _ = std::fs::remove_file(&p);
        mkfifo(&p, 0o600).unwrap();
        let md = std::fs::symlink_metadata(&p).unwrap();
        assert!(md.file_type().is_fifo());
        assert_eq!(md.permissions().mode() & 0o777, 0o600);
        let e = mkfifo(&p, 0o600).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::AlreadyExists);
        std::fs::remove_file(&p).unwrap();
    }
}
