//! JSON export: one pretty-printed document per run.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

/// Writes `value` to `path` as pretty JSON, creating parent directories.
pub fn write(path: &Path, value: &impl Serialize) -> Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| {
            format!("--json {}: cannot create {}", path.display(), dir.display())
        })?;
    }
    let text = serde_json::to_string_pretty(value).context("serialising results")?;
    std::fs::write(path, text + "\n")
        .with_context(|| format!("--json {}: cannot write", path.display()))
}
