//! The results format every suite writes and every reader reads: the
//! versioned envelope, the one text renderer (table, markdown, CSV), the
//! exports for the engines labs use (Bencher, Prometheus, LKP, LAVA), the
//! progress bar, and the clock and number formats they share. It sits
//! below the suites and the results store; the commands that read
//! results back (`msgbench report`, `compare`) live above them in
//! [`crate::report`].

pub mod envelope;
pub mod export;
pub mod peer;
pub mod progress;
pub mod table;

use serde::{Deserialize, Serialize};

use crate::measure::clock::Clock;
use crate::measure::env::Environment;

/// The clock a run used, as stored in JSON.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ClockInfo {
    /// `tsc` or `clock_monotonic`.
    pub name: String,
    /// Clock ticks per microsecond.
    pub ticks_per_us: f64,
    /// Measured cost of one timestamp, ns.
    pub overhead_ns: f64,
    /// What `MSGBENCH_CLOCK` asked for: `auto` (the TSC when trustworthy)
    /// or `monotonic` (the TSC path switched off). Runs from before it
    /// was recorded read as `auto`.
    #[serde(default = "auto")]
    pub requested: String,
}

fn auto() -> String {
    "auto".into()
}

impl ClockInfo {
    /// Describes `clock`.
    pub fn of(clock: &Clock) -> ClockInfo {
        ClockInfo {
            name: clock.name().to_string(),
            ticks_per_us: clock.ticks_per_us(),
            overhead_ns: clock.overhead_ns(),
            requested: clock.requested().name().into(),
        }
    }
}

/// The header every JSON document starts with.
#[derive(Debug, Clone, Serialize)]
pub struct Header {
    /// Machine, kernel, tool and command line.
    pub environment: Environment,
    /// The clock used for timestamps.
    pub clock: ClockInfo,
}

impl Header {
    /// Captures the environment now.
    pub fn capture(clock: &Clock) -> Header {
        Header {
            environment: Environment::capture(),
            clock: ClockInfo::of(clock),
        }
    }
}

/// A count or rate with thousands separators, rounded: 1234567.8 ->
/// "1,234,568" (negative values print as 0).
pub fn thousands(v: f64) -> String {
    let s = (v.max(0.0).round() as u64).to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn thousands_groups_digits() {
        assert_eq!(super::thousands(0.0), "0");
        assert_eq!(super::thousands(999.0), "999");
        assert_eq!(super::thousands(1000.0), "1,000");
        assert_eq!(super::thousands(165289.4), "165,289");
        assert_eq!(super::thousands(1234567.0), "1,234,567");
        assert_eq!(super::thousands(1234567.4), "1,234,567");
    }
}
