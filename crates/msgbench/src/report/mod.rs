//! Writing results out.

pub mod json;

use serde::Serialize;

use crate::measure::clock::Clock;
use crate::measure::env::Environment;

/// The clock a run used, as stored in JSON.
#[derive(Debug, Clone, Serialize)]
pub struct ClockInfo {
    /// `tsc` or `clock_monotonic`.
    pub name: &'static str,
    /// Clock ticks per microsecond.
    pub ticks_per_us: f64,
    /// Measured cost of one timestamp, ns.
    pub overhead_ns: f64,
}

impl ClockInfo {
    /// Describes `clock`.
    pub fn of(clock: &Clock) -> ClockInfo {
        ClockInfo {
            name: clock.name(),
            ticks_per_us: clock.ticks_per_us(),
            overhead_ns: clock.overhead_ns(),
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
