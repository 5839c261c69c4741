//! Where threads run: CPU lists (`--cpus 0,2-3`), pinning that is verified
//! with `sched_getcpu`, and the online CPU set.

use std::fmt;

/// Why a CPU list or a pin was refused.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PlacementError {
    /// The list is not of the form `0,2-3`.
    #[error("invalid CPU list {list:?}: {reason}")]
    BadList {
        /// The list as given.
        list: String,
        /// What is wrong with it.
        reason: RangeError,
    },
    /// A CPU in the list is not online on this machine.
    #[error("CPU {cpu} does not exist or is offline (online: {online})")]
    NoSuchCpu {
        /// The CPU asked for.
        cpu: usize,
        /// The online CPUs, as a list.
        online: String,
    },
    /// sched_setaffinity failed.
    #[error("cannot pin to CPU {cpu}: {reason}")]
    PinFailed {
        /// The CPU asked for.
        cpu: usize,
        /// The system's answer.
        reason: String,
    },
    /// The thread was pinned but found itself running elsewhere.
    #[error("pinned to CPU {cpu} but running on CPU {actual}")]
    NotHonoured {
        /// The CPU asked for.
        cpu: usize,
        /// Where sched_getcpu says it runs.
        actual: usize,
    },
}

/// An ordered list of CPUs, as given by the user (order matters: thread k
/// goes to the k-th entry).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpuList(pub Vec<usize>);

impl CpuList {
    /// Parses `0,2-3,5` (ranges inclusive, order kept, duplicates allowed)
    /// and checks every CPU is online.
    pub fn parse(list: &str) -> Result<CpuList, PlacementError> {
        let cpus = parse_list(list)?;
        let online = online_cpus();
        for &c in &cpus {
            if !online.contains(&c) {
                return Err(PlacementError::NoSuchCpu {
                    cpu: c,
                    online: format_list(&online),
                });
            }
        }
        Ok(CpuList(cpus))
    }

    /// The CPU for thread `k`, cycling through the list; `None` if empty.
    pub fn for_thread(&self, k: usize) -> Option<usize> {
        (!self.0.is_empty()).then(|| self.0[k % self.0.len()])
    }

    /// True when no CPU was given (threads float).
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for CpuList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s: Vec<String> = self.0.iter().map(|c| c.to_string()).collect();
        f.write_str(&s.join(","))
    }
}

/// clap value parser for `--cpus`.
pub fn parse_cpus_arg(s: &str) -> Result<CpuList, PlacementError> {
    CpuList::parse(s)
}

/// A set of CPUs as given by `--cpus`: online, repeats dropped, order
/// kept, at least one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuSet(pub Vec<usize>);

impl CpuSet {
    /// Parses `0,2-3` like [`CpuList::parse`] and drops repeats.
    pub fn parse(list: &str) -> Result<CpuSet, PlacementError> {
        let mut out: Vec<usize> = Vec::new();
        for c in CpuList::parse(list)?.0 {
            if !out.contains(&c) {
                out.push(c);
            }
        }
        Ok(CpuSet(out))
    }

    /// The given set, or every online CPU without one.
    pub fn or_online(given: Option<&CpuSet>) -> Vec<usize> {
        given.map_or_else(online_cpus, |s| s.0.clone())
    }
}

fn parse_list(list: &str) -> Result<Vec<usize>, PlacementError> {
    parse_ranges(list, MAX_CPU_ID).map_err(|reason| PlacementError::BadList {
        list: list.to_string(),
        reason,
    })
}

/// The highest CPU number a list may name: the last one an affinity set
/// (`CPU_SETSIZE`) can hold. Checked while parsing, so `0-4294967295`
/// is refused at once instead of allocating gigabytes.
pub const MAX_CPU_ID: usize = oslayer::sched::MAX_CPUS - 1;

/// The most entries a list may expand to (ranges counted in full,
/// repeats included).
pub const MAX_LIST_LEN: usize = 4096;

/// Why a list of numbers and ranges (`1,2,4-6`) was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// Nothing but blanks.
    #[error("empty")]
    Empty,
    /// A number above the list's maximum (kept as written: it may be
    /// beyond `usize`).
    #[error("{value} is above the maximum, {max}")]
    AboveMax {
        /// The number as written.
        value: String,
        /// The largest the list takes.
        max: usize,
    },
    /// An entry that is not a number.
    #[error("{0:?} is not a number")]
    NotANumber(String),
    /// `b-a` with `b > a`.
    #[error("range {0}-{1} runs backwards")]
    Backwards(usize, usize),
    /// More than [`MAX_LIST_LEN`] entries once ranges are expanded.
    #[error("longer than {MAX_LIST_LEN} entries")]
    TooLong,
}

/// Parses a list of numbers and inclusive ranges, like `1,2,4-6`, keeping
/// order and duplicates; every number must be at most `max` and the list
/// at most [`MAX_LIST_LEN`] entries long. The error says what is wrong.
pub fn parse_ranges(list: &str, max: usize) -> Result<Vec<usize>, RangeError> {
    let mut out = Vec::new();
    if list.trim().is_empty() {
        return Err(RangeError::Empty);
    }
    for part in list.split(',') {
        let part = part.trim();
        let num = |s: &str| {
            let s = s.trim();
            match s.parse::<usize>() {
                Ok(v) if v <= max => Ok(v),
                Ok(v) => Err(RangeError::AboveMax {
                    value: v.to_string(),
                    max,
                }),
                Err(_) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                    Err(RangeError::AboveMax {
                        value: s.to_string(),
                        max,
                    })
                }
                Err(_) => Err(RangeError::NotANumber(s.to_string())),
            }
        };
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (num(a)?, num(b)?),
            None => {
                let v = num(part)?;
                (v, v)
            }
        };
        if a > b {
            return Err(RangeError::Backwards(a, b));
        }
        if out.len() + (b - a) >= MAX_LIST_LEN {
            return Err(RangeError::TooLong);
        }
        out.extend(a..=b);
    }
    Ok(out)
}

/// Formats CPUs as a compact list (`0-3,6`).
pub fn format_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let mut j = i;
        while j + 1 < cpus.len() && cpus[j + 1] == cpus[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", cpus[i], cpus[j])
        } else {
            cpus[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// The online CPUs (from /sys; falls back to 0..available_parallelism).
pub fn online_cpus() -> Vec<usize> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| parse_list(s.trim()).ok())
        .unwrap_or_else(|| {
            (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect()
        })
}

/// Number of online CPUs.
pub fn cpu_count() -> usize {
    online_cpus().len()
}

/// The CPU the calling thread runs on now.
pub fn current_cpu() -> usize {
    // oslayer counts from 1 (0: unknown); unknown reads as CPU 0, as before.
    oslayer::cpu::current_cpu().saturating_sub(1) as usize
}

/// Pins the calling thread to `cpu` and verifies it now runs there.
pub fn pin_current_thread(cpu: usize) -> Result<(), PlacementError> {
    if cpu >= oslayer::sched::MAX_CPUS {
        return Err(PlacementError::PinFailed {
            cpu,
            reason: "CPU number beyond CPU_SETSIZE".into(),
        });
    }
    if let Err(e) = oslayer::sched::set_affinity(&[cpu]) {
        return Err(PlacementError::PinFailed {
            cpu,
            reason: e.to_string(),
        });
    }
    // The migration happens at the latest on the next schedule: yield once.
    std::thread::yield_now();
    let actual = current_cpu();
    if actual != cpu {
        return Err(PlacementError::NotHonoured { cpu, actual });
    }
    Ok(())
}

/// Restricts the calling thread (and the threads it creates later) to the
/// set `cpus`, as `taskset -c` does; the thread may run on any of them.
pub fn restrict_current_thread(cpus: &[usize]) -> std::io::Result<()> {
    oslayer::sched::set_affinity(cpus)?;
    std::thread::yield_now();
    Ok(())
}

/// Pins to `cpu` when given; returns the CPU actually in use.
pub fn maybe_pin(cpu: Option<usize>) -> Result<Option<usize>, PlacementError> {
    match cpu {
        Some(c) => pin_current_thread(c).map(|_| Some(c)),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_lists_and_ranges() {
        assert_eq!(parse_list("0").unwrap(), vec![0]);
        assert_eq!(parse_list("1,0").unwrap(), vec![1, 0]);
        assert_eq!(parse_list("0-2,5").unwrap(), vec![0, 1, 2, 5]);
        assert!(parse_list("").is_err());
        assert!(parse_list("a").is_err());
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("0,,1").is_err());
    }

    #[test]
    fn refuses_missing_cpu() {
        let missing = (0..=MAX_CPU_ID)
            .rev()
            .find(|c| !online_cpus().contains(c))
            .expect("fewer online CPUs than CPU_SETSIZE");
        let err = CpuList::parse(&missing.to_string()).unwrap_err();
        assert!(
            matches!(err, PlacementError::NoSuchCpu { cpu, .. } if cpu == missing),
            "{err}"
        );
    }

    #[test]
    fn refuses_cpus_beyond_the_affinity_set_without_allocating() {
        let beyond = (MAX_CPU_ID + 1).to_string();
        for (list, why) in [
            (
                "0-4294967295",
                format!("4294967295 is above the maximum, {MAX_CPU_ID}"),
            ),
            ("4294967295", "4294967295 is above the maximum".into()),
            ("0-18446744073709551615", "is above the maximum".into()),
            ("99999999999999999999999", "is above the maximum".into()),
            (&beyond, format!("{beyond} is above the maximum")),
        ] {
            let e = CpuList::parse(list).unwrap_err();
            assert!(matches!(e, PlacementError::BadList { .. }), "{list}: {e}");
            assert!(e.to_string().contains(&why), "{list}: {e}");
        }
    }

    #[test]
    fn bounds_the_length_of_a_list() {
        let long = ["0-1023"; 5].join(",");
        let e = parse_ranges(&long, 1023).unwrap_err();
        assert_eq!(e, RangeError::TooLong);
        assert_eq!(e.to_string(), "longer than 4096 entries");
        let fits = ["0-1023"; 4].join(",");
        assert_eq!(parse_ranges(&fits, 1023).unwrap().len(), MAX_LIST_LEN);
    }

    #[test]
    fn range_errors_read_as_before() {
        for (list, why) in [
            (" ", "empty"),
            ("0-5", "5 is above the maximum, 4"),
            (
                "99999999999999999999999",
                "99999999999999999999999 is above the maximum, 4",
            ),
            ("-1", "\"\" is not a number"),
            ("1,x", "\"x\" is not a number"),
            ("3-1", "range 3-1 runs backwards"),
        ] {
            assert_eq!(
                parse_ranges(list, 4).unwrap_err().to_string(),
                why,
                "{list}"
            );
        }
        assert_eq!(parse_ranges("1,3-4", 4).unwrap(), [1, 3, 4]);
    }

    #[test]
    fn formats_compactly() {
        assert_eq!(format_list(&[0, 1, 2, 3, 6]), "0-3,6");
        assert_eq!(format_list(&[1]), "1");
    }

    #[test]
    fn pins_and_verifies() {
        let cpu = *online_cpus().last().unwrap();
        std::thread::spawn(move || {
            pin_current_thread(cpu).unwrap();
            assert_eq!(current_cpu(), cpu);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn cycles_through_list() {
        let l = CpuList(vec![1, 0]);
        assert_eq!(l.for_thread(0), Some(1));
        assert_eq!(l.for_thread(3), Some(0));
        assert_eq!(CpuList::default().for_thread(0), None);
    }
}
