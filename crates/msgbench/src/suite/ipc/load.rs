//! Other load on the machine during a run: CPU time spent by everything
//! but this process (from /proc/stat and the process CPU clock), and steal,
//! so that a noisy run says so instead of being silently averaged in.

use std::time::Instant;

use serde::Serialize;

use crate::measure::cpu::{self, process_cpu_ns, CpuStat};
use crate::measure::placement::cpu_count;

/// Other work above this share of one CPU makes the run "noisy".
const NOISY_PCT: f64 = 10.0;

/// What else ran while we measured.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct OtherLoad {
    /// CPU busy outside this process, % of one CPU (200 = two CPUs busy).
    pub other_pct: f64,
    /// CPU stolen by the hypervisor, % of one CPU.
    pub steal_pct: f64,
    /// Wall time of the run, s.
    pub secs: f64,
}

impl OtherLoad {
    /// True when the figures are likely disturbed.
    pub fn noisy(&self) -> bool {
        self.other_pct > NOISY_PCT || self.steal_pct > NOISY_PCT
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
    t0: Instant,
}

impl LoadMeter {
    /// Starts measuring.
    pub fn start() -> LoadMeter {
        LoadMeter {
            stat: CpuStat::read().ok(),
            own_ns: process_cpu_ns(),
            t0: Instant::now(),
        }
    }

    /// Other load since `start`; `None` if /proc/stat is unreadable.
    pub fn finish(&self) -> Option<OtherLoad> {
        let before = self.stat?;
        let after = CpuStat::read().ok()?;
        let secs = self.t0.elapsed().as_secs_f64();
        let own_pct = (process_cpu_ns().saturating_sub(self.own_ns)) as f64 / 1e9 / secs * 100.0;
        let u = cpu::usage(&before, &after, cpu_count());
        Some(OtherLoad {
            other_pct: (u.busy_pct - own_pct).max(0.0),
            steal_pct: u.steal_pct,
            secs,
        })
    }
}
