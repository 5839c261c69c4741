//! The timestamp source: the TSC when the kernel trusts it, otherwise
//! `CLOCK_MONOTONIC`, with its calibrated tick length and per-read cost.
//!
//! No fences: on x86_64 `now()` is a plain `rdtsc` (about 10 ns here).
//! Measured inside the adder loop on this machine (shm-spin, pinned, 2 M
//! round trips), `lfence; rdtsc; lfence` added about 25 ns per request and
//! `rdtscp` about 60 ns, against a 115 ns round trip: far too visible. A
//! plain read is trustworthy for what the suite does with it: each sample
//! is the difference of two consecutive reads, so a read that runs a few
//! cycles early or late moves time between two neighbouring samples and
//! never adds or loses any; and in a request/reply loop the read follows
//! either a system call or the mispredicted exit branch of a spin, after
//! which the pipeline restarts, so it cannot run ahead of the reply by more
//! than a few cycles.

use std::sync::OnceLock;
use std::time::Duration;

/// Which hardware or kernel clock the timestamps come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ClockKind {
    /// The x86_64 time-stamp counter (cycles at a constant rate).
    Tsc,
    /// `clock_gettime(CLOCK_MONOTONIC)`, in nanoseconds.
    Monotonic,
}

/// A calibrated timestamp source. Cheap to copy; `now()` is one read.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    kind: ClockKind,
    ns_per_tick: f64,
    overhead_ns: f64,
}

/// Rounds of TSC calibration, and the wait between the two ends of each.
const CAL_ROUNDS: usize = 5;
const CAL_WAIT: Duration = Duration::from_millis(8);
/// Calibration rounds must agree within this relative spread.
const CAL_MAX_SPREAD: f64 = 0.005;

impl Clock {
    /// TSC when trustworthy (x86_64, current clocksource `tsc`, cpuinfo
    /// flags `constant_tsc` and `nonstop_tsc`, and a consistent
    /// calibration), else `CLOCK_MONOTONIC`. Calibrated once per process
    /// (about 40 ms); later calls return the cached clock.
    pub fn best() -> Clock {
        static BEST: OnceLock<Clock> = OnceLock::new();
        *BEST.get_or_init(|| {
            let source =
                read_or_empty("/sys/devices/system/clocksource/clocksource0/current_clocksource");
            let cpuinfo = read_or_empty("/proc/cpuinfo");
            if cfg!(target_arch = "x86_64") && tsc_trustworthy(&source, &cpuinfo) {
                if let Some(ns_per_tick) = calibrate_tsc() {
                    return Clock::with(ClockKind::Tsc, ns_per_tick);
                }
            }
            Clock::monotonic()
        })
    }

    /// `CLOCK_MONOTONIC`, with its per-read overhead measured.
    pub fn monotonic() -> Clock {
        Clock::with(ClockKind::Monotonic, 1.0)
    }

    fn with(kind: ClockKind, ns_per_tick: f64) -> Clock {
        let mut c = Clock {
            kind,
            ns_per_tick,
            overhead_ns: 0.0,
        };
        c.overhead_ns = c.measure_overhead();
        c
    }

    /// Raw ticks: TSC cycles, or nanoseconds for the monotonic clock.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        match self.kind {
            ClockKind::Tsc => rdtsc(),
            ClockKind::Monotonic => monotonic_ns(),
        }
    }

    /// Converts a tick count (a difference of two `now()`) to nanoseconds.
    pub fn ticks_to_ns(&self, ticks: u64) -> f64 {
        ticks as f64 * self.ns_per_tick
    }

    /// Which clock this is.
    pub fn kind(&self) -> ClockKind {
        self.kind
    }

    /// `"tsc"` or `"clock_monotonic"`.
    pub fn name(&self) -> &'static str {
        match self.kind {
            ClockKind::Tsc => "tsc",
            ClockKind::Monotonic => "clock_monotonic",
        }
    }

    /// Ticks per microsecond (the TSC frequency in MHz; 1000 for monotonic).
    pub fn ticks_per_us(&self) -> f64 {
        1000.0 / self.ns_per_tick
    }

    /// Median cost of taking one timestamp, in ns (back-to-back reads).
    pub fn overhead_ns(&self) -> f64 {
        self.overhead_ns
    }

    /// One line for reports, e.g. `tsc (2994.4 MHz, 8 ns per timestamp)`.
    pub fn describe(&self) -> String {
        match self.kind {
            ClockKind::Tsc => format!(
                "tsc ({:.1} MHz, {:.0} ns per timestamp)",
                self.ticks_per_us(),
                self.overhead_ns
            ),
            ClockKind::Monotonic => {
                format!("clock_monotonic ({:.0} ns per timestamp)", self.overhead_ns)
            }
        }
    }

    /// Median difference of two back-to-back reads, after a warm-up.
    fn measure_overhead(&self) -> f64 {
        for _ in 0..1000 {
            std::hint::black_box(self.now());
        }
        let mut d: Vec<u64> = (0..2001)
            .map(|_| {
                let a = self.now();
                let b = self.now();
                b.wrapping_sub(a)
            })
            .collect();
        d.sort_unstable();
        self.ticks_to_ns(d[d.len() / 2])
    }
}

/// True when the kernel uses the TSC as clocksource and the CPU says it is
/// invariant (`constant_tsc` and `nonstop_tsc` in the first `flags` line).
pub fn tsc_trustworthy(clocksource: &str, cpuinfo: &str) -> bool {
    let flags = cpuinfo
        .lines()
        .find(|l| l.starts_with("flags"))
        .and_then(|l| l.split_once(':'))
        .map_or("", |(_, v)| v);
    let has = |f: &str| flags.split_whitespace().any(|x| x == f);
    clocksource.trim() == "tsc" && has("constant_tsc") && has("nonstop_tsc")
}

fn read_or_empty(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// ns per TSC tick: median of `CAL_ROUNDS` rounds of `CAL_WAIT`, each end
/// a TSC read bracketed tightly by two monotonic reads. `None` when the
/// rounds disagree or the frequency is implausible.
fn calibrate_tsc() -> Option<f64> {
    let mut r: Vec<f64> = (0..CAL_ROUNDS)
        .map(|_| {
            let (m0, t0) = paired_read();
            std::thread::sleep(CAL_WAIT);
            let (m1, t1) = paired_read();
            (m1 - m0) / t1.wrapping_sub(t0) as f64
        })
        .collect();
    r.sort_by(f64::total_cmp);
    let med = r[r.len() / 2];
    let spread = (r[r.len() - 1] - r[0]) / med;
    // 100 MHz .. 20 GHz
    let plausible = (0.05..=10.0).contains(&med);
    (plausible && spread <= CAL_MAX_SPREAD).then_some(med)
}

/// (monotonic ns at the TSC read, TSC): the tightest bracket of 9 tries.
fn paired_read() -> (f64, u64) {
    (0..9)
        .map(|_| {
            let a = monotonic_ns();
            let t = rdtsc();
            let b = monotonic_ns();
            (b.saturating_sub(a), (a as f64 + b as f64) / 2.0, t)
        })
        .min_by_key(|&(w, _, _)| w)
        .map_or((monotonic_ns() as f64, rdtsc()), |(_, m, t)| (m, t))
}

/// The TSC, read inline. Kept here rather than in oslayer: it is the
/// timer itself (an instruction, not a system call), and any wrapper
/// around it would be inside every interval it times.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    // SAFETY: rdtsc is part of the x86_64 baseline and has no memory
    // effects; user-mode rdtsc is allowed unless the kernel set CR4.TSD,
    // which Linux does not do for ordinary processes.
    unsafe { core::arch::x86_64::_rdtsc() }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn rdtsc() -> u64 {
    // Never selected off x86_64 (best() falls back to monotonic).
    monotonic_ns()
}

/// `CLOCK_MONOTONIC` in ns (vDSO, no system call).
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    oslayer::clock::monotonic_ns()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trust_needs_clocksource_and_both_flags() {
        let good = "processor\t: 0\nflags\t\t: fpu tsc constant_tsc nonstop_tsc\n";
        assert!(tsc_trustworthy("tsc\n", good));
        assert!(!tsc_trustworthy("kvm-clock\n", good));
        assert!(!tsc_trustworthy("tsc", "flags\t: fpu tsc constant_tsc\n"));
        assert!(!tsc_trustworthy("tsc", ""));
    }

    #[test]
    fn best_clock_advances_and_describes_itself() {
        let c = Clock::best();
        let a = c.now();
        std::thread::sleep(Duration::from_millis(2));
        let b = c.now();
        assert!(b > a);
        assert!(c.ticks_to_ns(b - a) >= 1_000_000.0);
        assert!(c.overhead_ns() >= 0.0 && c.ticks_per_us() > 0.0);
        println!("clock: {} ({:?})", c.describe(), c.kind());
        println!("monotonic: {}", Clock::monotonic().describe());
    }
}
