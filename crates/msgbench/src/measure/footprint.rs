//! What this process holds: its resident memory (`/proc/self/statm`) and
//! its open descriptors (`/proc/self/fd`), and a count of a directory's
//! entries. Read before and after something to see what it cost.

use std::path::Path;

use anyhow::{anyhow, Result};

/// This process's resident memory, bytes (the resident pages of
/// `/proc/self/statm` times the page size).
pub fn rss_bytes() -> Result<u64> {
    let s = std::fs::read_to_string("/proc/self/statm")?;
    let pages: u64 = s
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| anyhow!("/proc/self/statm: unexpected contents"))?;
    let page = oslayer::system::page_size().max(1) as u64;
    Ok(pages * page)
}

/// How many descriptors this process has open (the entries of
/// `/proc/self/fd`, less the one listing it).
pub fn open_fds() -> Result<usize> {
    count_dir(Path::new("/proc/self/fd"), |_| true)
        .map(|n| n.saturating_sub(1))
        .ok_or_else(|| anyhow!("cannot list /proc/self/fd"))
}

/// The entries of `dir` whose names `keep` accepts; `None` when `dir`
/// cannot be listed.
pub fn count_dir(dir: &Path, keep: impl Fn(&str) -> bool) -> Option<usize> {
    let rd = std::fs::read_dir(dir).ok()?;
    Some(
        rd.filter_map(|e| e.ok())
            .filter(|e| keep(&e.file_name().to_string_lossy()))
            .count(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_descriptor_counts_and_memory_is_resident() {
        assert!(rss_bytes().unwrap() > 0);
        // Other tests open descriptors meanwhile: only "at least" holds.
        let before = open_fds().unwrap();
        let f = std::fs::File::open("/proc/self/statm").unwrap();
        let during = open_fds().unwrap();
        drop(f);
        assert!(before >= 3 && during >= 1, "{before} {during}");
        assert!(count_dir(Path::new("/nonexistent-msgbench"), |_| true).is_none());
    }
}
