//! Option parsers more than one suite uses, each failing in one line that
//! names the option.

use crate::measure::placement::{CpuList, CpuSet, PlacementError};

/// Why a value on the command line was refused. clap puts the option and
/// the value in front of it ([`crate::cli::parse_args`] prints the whole in
/// one line: `--repeats 0: must be a whole number of runs, 1 to 100`).
#[derive(Debug, thiserror::Error)]
pub enum ValueError {
    /// `--repeats`: not a whole number from 1 to `max`.
    #[error("must be a whole number of runs, 1 to {max}")]
    Repeats {
        /// The most runs the suite takes.
        max: usize,
    },
    /// `--seconds`: not a finite number of seconds from `min` to `max`.
    #[error("must be a number of seconds, {min} to {max}")]
    Seconds {
        /// The shortest, s.
        min: f64,
        /// The longest, s.
        max: f64,
    },
    /// An open-loop `--rate`: not a number of messages per second, more
    /// than 0 and at most 10^8.
    #[error("must be a number of messages per second, more than 0 and at most 1e8")]
    Rate,
    /// `--cpus`: not a list of online CPUs.
    #[error(transparent)]
    Cpus(#[from] PlacementError),
}

/// `-r/--repeats`: a whole number of runs from 1 to `max`.
pub fn repeats_to(s: &str, max: usize) -> Result<usize, ValueError> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=max).contains(&n) => Ok(n),
        _ => Err(ValueError::Repeats { max }),
    }
}

/// Value parser of `--seconds` for the suites that measure 0.01 to 600 s
/// per figure.
pub fn seconds_to_600(s: &str) -> Result<f64, ValueError> {
    let (min, max) = (0.01, 600.0);
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (min..=max).contains(&v) => Ok(v),
        _ => Err(ValueError::Seconds { min, max }),
    }
}

/// Value parser of a `--cpus` that names a set: online CPUs, ranges
/// allowed, repeats dropped, order kept, at least one.
pub fn cpu_set(s: &str) -> Result<CpuSet, ValueError> {
    Ok(CpuSet::parse(s)?)
}

/// Value parser of a `--cpus` whose order and repeats matter (thread k on
/// the k-th entry).
pub fn cpu_list(s: &str) -> Result<CpuList, ValueError> {
    Ok(CpuList::parse(s)?)
}

/// Why a `-t/--transport` list was refused.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// An empty name between commas.
    #[error("empty name (known: {})", msgpass::transport::NAMES.join(", "))]
    Empty,
    /// A name msgpass does not know (its error lists the known ones).
    #[error(transparent)]
    Unknown(#[from] msgpass::Error),
}

/// Value parser of `-t/--transport LIST`: msgpass transport names
/// (aliases accepted), checked against msgpass's table, duplicates
/// dropped, order kept.
pub fn transports(list: &str) -> Result<Vec<String>, TransportError> {
    let mut out: Vec<String> = Vec::new();
    for t in list.split(',').map(str::trim) {
        if t.is_empty() {
            return Err(TransportError::Empty);
        }
        msgpass::transport::by_name(t)?;
        if !out.iter().any(|o| o == t) {
            out.push(t.to_string());
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transports_are_checked_and_deduplicated() {
        assert_eq!(transports("uds, shm,uds").unwrap(), ["uds", "shm"]);
        let e = transports("uds,nope").unwrap_err().to_string();
        assert!(e.starts_with("unknown transport \"nope\" (known: "), "{e}");
        let e = transports("uds,,shm").unwrap_err().to_string();
        assert!(e.starts_with("empty name (known: shm, "), "{e}");
    }

    #[test]
    fn repeats_are_bounded() {
        assert_eq!(repeats_to("3", 100).unwrap(), 3);
        assert_eq!(repeats_to("1000", 1000).unwrap(), 1000);
        for bad in ["0", "101", "x", "-1", ""] {
            let e = repeats_to(bad, 100).unwrap_err().to_string();
            assert_eq!(e, "must be a whole number of runs, 1 to 100", "{bad}");
        }
    }

    #[test]
    fn seconds_are_bounded() {
        assert_eq!(seconds_to_600(" 0.25").unwrap(), 0.25);
        for bad in ["0", "600.5", "nan", "inf", "-1", "x"] {
            let e = seconds_to_600(bad).unwrap_err().to_string();
            assert_eq!(e, "must be a number of seconds, 0.01 to 600", "{bad}");
        }
    }

    #[test]
    fn cpu_sets_drop_repeats_and_refuse_empty() {
        let c = crate::measure::placement::online_cpus()[0];
        assert_eq!(cpu_set(&format!("{c},{c}")).unwrap().0, [c]);
        assert!(cpu_set("x").is_err());
        assert!(cpu_set("").is_err());
        assert_eq!(cpu_list(&format!("{c},{c}")).unwrap().0, [c, c]);
    }
}
