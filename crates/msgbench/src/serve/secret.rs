//! Where a token comes from, on either side: `--token-file FILE` or the
//! `MSGBENCH_TOKEN` environment variable, never a command-line value
//! (`ps` shows every process's command line to every user; a process's
//! environment and a mode-0600 file only to its owner and root).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use anyhow::{bail, Context, Result};
use msgpass::Token;

/// The environment variable a token may be given in.
pub const TOKEN_ENV: &str = "MSGBENCH_TOKEN";

/// The largest token file read: a token and some white space.
const MAX_FILE: u64 = 1024;

/// The token of `--token-file FILE`, else of [`TOKEN_ENV`], else `None`.
/// A file must be a regular file of this user that no one else may read
/// or write.
pub fn given(file: Option<&Path>) -> Result<Option<Token>> {
    if let Some(path) = file {
        return from_file(path).map(Some);
    }
    match std::env::var(TOKEN_ENV) {
        Ok(text) => Token::from_hex(&text).map(Some).context(TOKEN_ENV),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => {
            bail!("{TOKEN_ENV}: not text (a token is 32 hexadecimal digits)")
        }
    }
}

/// The token a server asks for: the one given (see [`given`]), else a
/// fresh random one.
pub fn for_server(file: Option<&Path>) -> Result<Token> {
    match given(file)? {
        Some(t) => Ok(t),
        None => Token::random().context("cannot make a token"),
    }
}

/// Reads a token file, checked first.
fn from_file(path: &Path) -> Result<Token> {
    let shown = path.display();
    let meta = std::fs::symlink_metadata(path)
        .with_context(|| format!("--token-file {shown}: cannot read"))?;
    check_file(&meta).map_err(|why| anyhow::anyhow!("--token-file {shown}: {why}"))?;
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--token-file {shown}: cannot read"))?;
    Token::from_hex(&text).with_context(|| format!("--token-file {shown}"))
}

/// Why a token file's metadata is refused, if it is.
fn check_file(meta: &std::fs::Metadata) -> std::result::Result<(), String> {
    if !meta.file_type().is_file() {
        return Err("not a regular file (a link is not followed)".into());
    }
    if meta.len() > MAX_FILE {
        return Err(format!(
            "{} bytes: a token file holds 32 hexadecimal digits",
            meta.len()
        ));
    }
    let me = oslayer::ids::euid();
    if meta.uid() != me {
        return Err(format!(
            "owned by uid {}, not by this user ({me})",
            meta.uid()
        ));
    }
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(format!(
            "mode {mode:04o} lets other users read or write it: chmod 600 it"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    /// A file holding `text` with `mode`, in a fresh directory.
    fn file(tag: &str, text: &str, mode: u32) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("msgbench-secret-{}-{tag}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("dir");
        let p = dir.join("token");
        let mut f = std::fs::File::create(&p).expect("create");
        f.write_all(text.as_bytes()).expect("write");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).expect("chmod");
        p
    }

    #[test]
    fn a_token_file_must_be_private_and_hold_a_token() {
        let t = Token::random().expect("token");
        let ok = file("ok", &format!("{}\n", t.to_hex()), 0o600);
        assert_eq!(from_file(&ok).expect("read"), t);
        let open = file("open", &t.to_hex(), 0o644);
        let e = format!("{:#}", from_file(&open).expect_err("refused"));
        assert!(e.contains("mode 0644") && e.contains("chmod 600"), "{e}");
        let bad = file("bad", "not a token", 0o600);
        let e = format!("{:#}", from_file(&bad).expect_err("refused"));
        assert!(e.contains("bad token"), "{e}");
        assert!(!e.contains("not a token"), "the text is not repeated: {e}");
        for p in [ok, open, bad] {
            if let Some(d) = p.parent() {
                let _ = std::fs::remove_dir_all(d);
            }
        }
    }
}
