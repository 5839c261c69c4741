//! Option parsers more than one suite uses, each failing in one line that
//! names the option.

use anyhow::{anyhow, bail, Result};

/// `-t/--transport LIST`: msgpass transport names (aliases accepted),
/// checked against msgpass's table, duplicates dropped, order kept.
pub fn transports(list: &str) -> Result<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for t in list.split(',').map(str::trim) {
        if t.is_empty() {
            bail!(
                "--transport {list}: empty name (known: {})",
                msgpass::transport::NAMES.join(", ")
            );
        }
        msgpass::transport::by_name(t).map_err(|e| anyhow!("--transport {t}: {e}"))?;
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    Ok(out)
}

/// `-r/--repeats N`: 1 to `max` runs.
pub fn repeats(s: &str, max: usize) -> Result<usize> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => bail!("--repeats {s}: must be a whole number of runs, 1 to {max}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_are_checked_and_deduplicated() {
        assert_eq!(transports("uds, shm,uds").unwrap(), ["uds", "shm"]);
        let e = transports("uds,nope").unwrap_err().to_string();
        assert!(e.starts_with("--transport nope:"), "{e}");
        assert!(transports("uds,,shm")
            .unwrap_err()
            .to_string()
            .contains("empty name"));
    }

    #[test]
    fn repeats_are_bounded() {
        assert_eq!(repeats("3", 10).unwrap(), 3);
        for bad in ["0", "11", "x", "-1"] {
            let e = repeats(bad, 10).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("--repeats {bad}: must be a whole number of runs, 1 to 10")
            );
        }
    }
}
