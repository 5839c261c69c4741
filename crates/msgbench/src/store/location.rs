//! Where the results store is: `--store URL`, else `$MSGBENCH_STORE`,
//! else the user's data directory; and `--no-store` (or
//! `MSGBENCH_NO_STORE=1`), which records nothing.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use clap::Args;

use super::StoreError;

/// The environment variable naming the store (as `--store` does).
pub const ENV_STORE: &str = "MSGBENCH_STORE";
/// The environment variable that, set to anything but `0` or empty,
/// records nothing (as `--no-store` does).
pub const ENV_NO_STORE: &str = "MSGBENCH_NO_STORE";

/// `--store`: which store a command reads or writes.
#[derive(Debug, Clone, Default, Args)]
pub struct StoreArgs {
    /// The results store: a SQLite file, or `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`
    /// for one store many machines write to [default: $MSGBENCH_STORE, else
    /// $XDG_DATA_HOME/msgbench/results.db, else ~/.local/share/msgbench/results.db].
    #[arg(long = "store", value_name = "URL")]
    pub store: Option<String>,
}

/// The store options of a suite run: `--store` and `--no-store`.
#[derive(Debug, Clone, Default, Args)]
pub struct RecordArgs {
    /// Where the run is recorded (`--store`).
    #[command(flatten)]
    pub store: StoreArgs,
    /// Record nothing in the results store (also MSGBENCH_NO_STORE=1).
    #[arg(long = "no-store", conflicts_with = "store")]
    pub no_store: bool,
}

impl RecordArgs {
    /// Where to record, or `None` for `--no-store` / `MSGBENCH_NO_STORE`.
    pub fn choice(&self) -> Option<Result<Location, StoreError>> {
        let off = std::env::var(ENV_NO_STORE).is_ok_and(|v| !v.is_empty() && v != "0");
        if self.no_store || (off && self.store.store.is_none()) {
            return None;
        }
        Some(self.store.location())
    }
}

/// A store's place, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    /// A SQLite file.
    Sqlite(PathBuf),
    /// A PostgreSQL server (the URL as given; shown without its password).
    Postgres(String),
}

impl StoreArgs {
    /// The store named by `--store`, else `$MSGBENCH_STORE`, else the
    /// default file; a bad value fails naming where it came from.
    pub fn location(&self) -> Result<Location, StoreError> {
        if let Some(s) = &self.store {
            return parse(s, "--store");
        }
        match std::env::var(ENV_STORE) {
            Ok(s) if !s.is_empty() => parse(&s, ENV_STORE),
            _ => default_path().map(Location::Sqlite),
        }
    }
}

/// The default store: `$XDG_DATA_HOME/msgbench/results.db`, else
/// `$HOME/.local/share/msgbench/results.db`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let data = nonempty("XDG_DATA_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| nonempty("HOME").map(|h| Path::new(&h).join(".local/share")))
        .ok_or(StoreError::NoHome)?;
    Ok(data.join("msgbench").join("results.db"))
}

/// Parses a `--store` value (`what` names where it came from).
pub fn parse(s: &str, what: &str) -> Result<Location, StoreError> {
    let bad = |why: String| StoreError::BadLocation {
        what: what.to_string(),
        given: redact(s),
        why,
    };
    if s.trim().is_empty() {
        return Err(bad("empty; give a SQLite file or a postgres:// URL".into()));
    }
    if let Some((scheme, _)) = s.split_once("://") {
        if scheme == "postgres" || scheme == "postgresql" {
            tokio_postgres::Config::from_str(s).map_err(|e| bad(format!("bad URL: {e}")))?;
            return Ok(Location::Postgres(s.to_string()));
        }
        return Err(bad(format!(
            "unknown kind of store '{scheme}' (a SQLite file path, or postgres://USER@HOST[:PORT]/DB)"
        )));
    }
    let path = PathBuf::from(s);
    if path.is_dir() {
        return Err(bad(
            "is a directory; give a file (e.g. DIR/results.db)".into()
        ));
    }
    Ok(Location::Sqlite(path))
}

/// `url` with any password replaced by `***`, for messages.
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let (auth, tail) = match rest.find(['/', '?']) {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    let Some((userinfo, host)) = auth.rsplit_once('@') else {
        return url.to_string();
    };
    let user = match userinfo.split_once(':') {
        Some((u, _)) => format!("{u}:***"),
        None => userinfo.to_string(),
    };
    let tail = redact_query(tail);
    format!("{scheme}://{user}@{host}{tail}")
}

/// A `password=` query parameter replaced by `***`.
fn redact_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else {
        return tail.to_string();
    };
    let parts: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some(("password", _)) => "password=***".to_string(),
            _ => p.to_string(),
        })
        .collect();
    format!("{path}?{}", parts.join("&"))
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Sqlite(p) => write!(f, "{}", p.display()),
            Location::Postgres(u) => write!(f, "{}", redact(u)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_show() {
        assert_eq!(
            redact("postgres://lab:s3cret@db:5432/runs"),
            "postgres://lab:***@db:5432/runs"
        );
        assert_eq!(
            redact("postgres://lab@db/runs?password=x&sslmode=disable"),
            "postgres://lab@db/runs?password=***&sslmode=disable"
        );
        assert_eq!(redact("postgres://db/runs"), "postgres://db/runs");
        let e = parse("postgres://u:pw@db:notaport/x", "--store")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--store postgres://u:***@db:notaport/x: bad URL"),
            "{e}"
        );
        assert!(!e.contains("pw"), "{e}");
    }

    #[test]
    fn kinds_of_store() {
        assert_eq!(
            parse("/tmp/x.db", "--store").unwrap(),
            Location::Sqlite("/tmp/x.db".into())
        );
        assert!(matches!(
            parse("postgresql://u@h/db", "--store").unwrap(),
            Location::Postgres(_)
        ));
        let e = parse("mysql://h/db", "MSGBENCH_STORE")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("MSGBENCH_STORE mysql://h/db: unknown kind of store 'mysql'"),
            "{e}"
        );
        let e = parse("/", "--store").unwrap_err().to_string();
        assert!(e.contains("is a directory"), "{e}");
        let e = parse(" ", "--store").unwrap_err().to_string();
        assert!(e.contains("empty"), "{e}");
    }
}
