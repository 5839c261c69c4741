//! Other load on the machine during a run: CPU time spent by everything
//! but msgbench (this process and its helper processes: from /proc/stat
//! and the processes' CPU clocks), and steal,
//! so that a noisy run says so instead of being silently averaged in.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::measure::cpu::{self, process_cpu_ns, CpuStat};
use crate::measure::placement::cpu_count;
use oslayer::clock::{process_cpu_ns_of, reaped_children_cpu_ns};

/// Other work above this share of one CPU makes a run or row "noisy".
pub const OTHER_WARN_PCT: f64 = 10.0;
/// Steal above this share of one CPU makes a run or row "noisy".
pub const STEAL_WARN_PCT: f64 = 2.0;

/// What else ran while we measured.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct OtherLoad {
    /// CPU busy outside this process, % of one CPU (200 = two CPUs busy).
    pub other_pct: f64,
    /// CPU stolen by the hypervisor, % of one CPU.
    pub steal_pct: f64,
    /// Wall time of the run, s.
    pub secs: f64,
    /// The smallest share of one CPU the measurement can tell from zero
    /// (/proc/stat counts in clock ticks, a few per CPU at each end), %.
    pub resolution_pct: f64,
}

impl OtherLoad {
    /// True when the figures are likely disturbed: other load above
    /// [`OTHER_WARN_PCT`] or steal above [`STEAL_WARN_PCT`], either also
    /// above the measurement's resolution.
    pub fn noisy(&self) -> bool {
        self.other_noisy() || self.steal_noisy()
    }

    fn other_noisy(&self) -> bool {
        self.other_pct > OTHER_WARN_PCT.max(self.resolution_pct)
    }

    fn steal_noisy(&self) -> bool {
        self.steal_pct > STEAL_WARN_PCT.max(self.resolution_pct)
    }

    /// The warning for a noisy row, e.g. `other load 95% of a CPU (limit
    /// 10%)`; `None` when quiet.
    pub fn warning(&self) -> Option<String> {
        let mut w = Vec::new();
        if self.other_noisy() {
            w.push(format!(
                "other load {:.0}% of a CPU (limit {:.0}%)",
                self.other_pct,
                OTHER_WARN_PCT.max(self.resolution_pct)
            ));
        }
        if self.steal_noisy() {
            w.push(format!(
                "steal {:.1}% of a CPU (limit {:.0}%)",
                self.steal_pct,
                STEAL_WARN_PCT.max(self.resolution_pct)
            ));
        }
        (!w.is_empty()).then(|| w.join(", "))
    }

    /// One line for the report.
    pub fn describe(&self) -> String {
        format!(
            "Other load during the run: {:.0}% of a CPU outside msgbench, {:.1}% steal{}",
            self.other_pct,
            self.steal_pct,
            if self.noisy() {
                ": figures may be disturbed; rerun on a quiet machine"
            } else {
                ""
            }
        )
    }
}

/// The start of a measurement of other load.
pub struct LoadMeter {
    stat: Option<CpuStat>,
    own_ns: u64,
    also: Option<i32>,
    t0: Instant,
}

/// CPU time of msgbench's own: this process, its helper processes once
/// reaped, and `also` (a helper still running, the row's server process).
fn own_cpu_ns(also: Option<i32>) -> u64 {
    let running = also.map_or(0, |pid| process_cpu_ns_of(pid).unwrap_or(0));
    process_cpu_ns() + reaped_children_cpu_ns() + running
}

impl LoadMeter {
    /// Starts measuring.
    pub fn start() -> LoadMeter {
        LoadMeter::start_beside(None)
    }

    /// Starts measuring, process `also` (the row's server process, still
    /// running at [`finish`](LoadMeter::finish)) counted as msgbench's own.
    pub fn start_beside(also: Option<i32>) -> LoadMeter {
        LoadMeter {
            stat: CpuStat::read().ok(),
            own_ns: own_cpu_ns(also),
            also,
            t0: Instant::now(),
        }
    }

    /// Other load since `start`; `None` if /proc/stat is unreadable or
    /// counted no clock tick since (nothing measured, not "no load").
    pub fn finish(&self) -> Option<OtherLoad> {
        let before = self.stat?;
        let after = CpuStat::read().ok()?;
        let secs = self.t0.elapsed().as_secs_f64();
        let own_ns = own_cpu_ns(self.also).saturating_sub(self.own_ns);
        let own_pct = own_ns as f64 / 1e9 / secs * 100.0;
        let u = cpu::usage(&before, &after, cpu_count())?;
        Some(OtherLoad {
            other_pct: (u.busy_pct - own_pct).max(0.0),
            steal_pct: u.steal_pct,
            secs,
            resolution_pct: resolution_pct(secs, cpu_count()),
        })
    }
}

/// Two clock ticks per CPU over `secs`, as a share of one CPU, percent.
fn resolution_pct(secs: f64, cpus: usize) -> f64 {
    let hz = oslayer::system::clock_ticks_per_second();
    let hz = if hz > 0 { hz as f64 } else { 100.0 };
    2.0 * cpus.max(1) as f64 / hz / secs.max(1e-3) * 100.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(other: f64, steal: f64, res: f64) -> OtherLoad {
        OtherLoad {
            other_pct: other,
            steal_pct: steal,
            secs: 1.0,
            resolution_pct: res,
        }
    }

    #[test]
    fn warns_above_the_thresholds_and_the_resolution() {
        assert!(load(5.0, 1.0, 4.0).warning().is_none());
        let w = load(50.0, 0.0, 4.0).warning().unwrap();
        assert!(w.starts_with("other load 50% of a CPU"), "{w}");
        assert!(load(0.0, 3.0, 1.0)
            .warning()
            .unwrap()
            .starts_with("steal 3.0%"));
        // Below what a short row can resolve: no claim.
        assert!(load(20.0, 0.0, 30.0).warning().is_none());
        assert!(resolution_pct(1.0, 2) > 0.0);
    }
}
