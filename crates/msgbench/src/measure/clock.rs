//! The timestamp source: the TSC when the kernel trusts it, otherwise
//! `CLOCK_MONOTONIC`, with its calibrated tick length and per-read cost.
//! `MSGBENCH_CLOCK=monotonic` ([`ENV_CLOCK`]) switches the TSC path off,
//! so the portable path (the only one on a board without a TSC, such as
//! the seed's Raspberry Pi 4) can be run and checked on any machine; the
//! cost of a read is measured and subtracted the same way on both.
//!
//! On x86_64 `now()` is `lfence; rdtsc`: the fence waits for every earlier
//! instruction, so the read cannot run ahead of the load that saw the
//! reply. Without it, it did: `rdtsc` is not ordered with loads, and once
//! shm's paced waiters made the reply usually come on the first look, the
//! spin's exit branch was predicted and the read ran speculatively while
//! the reply's cache miss was still in flight. Measured with `msgbench ipc
//! -t shm-spin` across CPUs, the plain read gave a p50 of 59 ns, half the
//! cache-line floor of 115 ns (the samples' mean, about 190 ns, was right:
//! each sample is the difference of two consecutive reads, so an early
//! read moved time into the next sample, and the distribution split in
//! two). No fence after the read is needed: later stores cannot reach the
//! peer before the read retires. (Before the pacing, the exit branch was
//! mispredicted and restarted the pipeline, which hid the problem.)

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

/// The environment variable that chooses the clock: `auto` (the default:
/// the TSC when trustworthy) or `monotonic` (always `CLOCK_MONOTONIC`).
pub const ENV_CLOCK: &str = "MSGBENCH_CLOCK";

/// What `--help` says about [`ENV_CLOCK`].
pub const ENV_HELP: &str = "Environment:\n  MSGBENCH_CLOCK=monotonic  time with clock_gettime(CLOCK_MONOTONIC) instead of the TSC: the portable path, the only one on a machine without a TSC (aarch64); its read cost is measured and subtracted as the TSC's is. auto (the default) uses the TSC when the kernel trusts it. The results record the choice (clock.requested) and the clock used (clock.name).";

/// What [`ENV_CLOCK`] asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockChoice {
    /// The TSC when the kernel trusts it, else `CLOCK_MONOTONIC`.
    Auto,
    /// `CLOCK_MONOTONIC` whatever the CPU has (the portable path).
    Monotonic,
}

/// [`ENV_CLOCK`] holds something other than `auto` or `monotonic`.
#[derive(Debug, thiserror::Error)]
#[error("{ENV_CLOCK}={0:?}: not a clock (auto or monotonic)")]
pub struct BadClockChoice(String);

impl ClockChoice {
    /// Parses a value of [`ENV_CLOCK`]; empty is `auto`.
    pub fn parse(value: &str) -> Result<ClockChoice, BadClockChoice> {
        match value.trim() {
            "" | "auto" => Ok(ClockChoice::Auto),
            "monotonic" => Ok(ClockChoice::Monotonic),
            other => Err(BadClockChoice(other.to_string())),
        }
    }

    /// The choice in the environment (unset is `auto`). The programs check
    /// it at start, so a bad value is one line and exit status 1 there.
    pub fn from_env() -> Result<ClockChoice, BadClockChoice> {
        match std::env::var(ENV_CLOCK) {
            Ok(v) => ClockChoice::parse(&v),
            Err(std::env::VarError::NotPresent) => Ok(ClockChoice::Auto),
            Err(std::env::VarError::NotUnicode(v)) => {
                Err(BadClockChoice(v.to_string_lossy().into_owned()))
            }
        }
    }

    /// `"auto"` or `"monotonic"`, as in the results' `clock.requested`.
    pub fn name(self) -> &'static str {
        match self {
            ClockChoice::Auto => "auto",
            ClockChoice::Monotonic => "monotonic",
        }
    }
}

/// A calibrated timestamp source. Cheap to copy; `now()` is one read.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    kind: ClockKind,
    ns_per_tick: f64,
    overhead_ns: f64,
    requested: ClockChoice,
}

/// Rounds of TSC calibration, and the wait between the two ends of each.
const CAL_ROUNDS: usize = 5;
const CAL_WAIT: Duration = Duration::from_millis(8);
/// Calibration rounds must agree within this relative spread.
const CAL_MAX_SPREAD: f64 = 0.005;

impl Clock {
    /// The run's clock, as [`ENV_CLOCK`] chooses (a bad value counts as
    /// `auto` here; the programs refuse it at start): `CLOCK_MONOTONIC`
    /// for `monotonic`, else the TSC when trustworthy (x86_64, current
    /// clocksource `tsc`, cpuinfo flags `constant_tsc` and `nonstop_tsc`,
    /// and a consistent calibration), else `CLOCK_MONOTONIC`. Calibrated
    /// once per process (about 40 ms); later calls return the cached clock.
    pub fn best() -> Clock {
        static BEST: OnceLock<Clock> = OnceLock::new();
        *BEST.get_or_init(
            || match ClockChoice::from_env().unwrap_or(ClockChoice::Auto) {
                ClockChoice::Monotonic => {
                    Clock::with(ClockKind::Monotonic, 1.0, ClockChoice::Monotonic)
                }
                ClockChoice::Auto => Clock::auto(),
            },
        )
    }

    /// The TSC when trustworthy, else `CLOCK_MONOTONIC`.
    fn auto() -> Clock {
        let source =
            read_or_empty("/sys/devices/system/clocksource/clocksource0/current_clocksource");
        let cpuinfo = read_or_empty("/proc/cpuinfo");
        if cfg!(target_arch = "x86_64") && tsc_trustworthy(&source, &cpuinfo) {
            if let Some(ns_per_tick) = calibrate_tsc() {
                return Clock::with(ClockKind::Tsc, ns_per_tick, ClockChoice::Auto);
            }
        }
        Clock::monotonic()
    }

    /// `CLOCK_MONOTONIC`, with its per-read overhead measured.
    pub fn monotonic() -> Clock {
        Clock::with(ClockKind::Monotonic, 1.0, ClockChoice::Auto)
    }

    /// A clock of `kind`, its overhead measured the same way whatever the
    /// kind ([`Clock::overhead_ns`]).
    fn with(kind: ClockKind, ns_per_tick: f64, requested: ClockChoice) -> Clock {
        let mut c = Clock {
            kind,
            ns_per_tick,
            overhead_ns: 0.0,
            requested,
        };
        c.overhead_ns = c.measure_overhead();
        c
    }

    /// What [`ENV_CLOCK`] asked for when this clock was chosen (`Auto` for
    /// a clock made directly).
    pub fn requested(&self) -> ClockChoice {
        self.requested
    }

    /// Raw ticks: TSC cycles, or nanoseconds for the monotonic clock.
    #[inline(always)]
    pub fn now(&self) -> u64 {
        match self.kind {
            ClockKind::Tsc => fenced_rdtsc(),
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
            ClockKind::Monotonic => format!(
                "clock_monotonic ({}{:.0} ns per timestamp)",
                match self.requested {
                    ClockChoice::Monotonic => "MSGBENCH_CLOCK=monotonic, ",
                    ClockChoice::Auto => "",
                },
                self.overhead_ns
            ),
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

/// The TSC, read once every earlier instruction has completed (`lfence;
/// rdtsc`): a timestamp taken after a reply cannot run ahead of it.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(crate) fn fenced_rdtsc() -> u64 {
    // SAFETY: lfence (SSE2) and rdtsc are part of the x86_64 baseline and
    // have no memory effects beyond ordering; user-mode rdtsc is allowed
    // (see `rdtsc`).
    unsafe {
        core::arch::x86_64::_mm_lfence();
        core::arch::x86_64::_rdtsc()
    }
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(crate) fn fenced_rdtsc() -> u64 {
    monotonic_ns()
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
    fn the_clock_choice_parses_or_names_the_variable() {
        assert_eq!(ClockChoice::parse("").unwrap(), ClockChoice::Auto);
        assert_eq!(ClockChoice::parse("auto").unwrap(), ClockChoice::Auto);
        assert_eq!(
            ClockChoice::parse("monotonic").unwrap(),
            ClockChoice::Monotonic
        );
        let e = ClockChoice::parse("rdtsc").unwrap_err().to_string();
        assert_eq!(
            e,
            "MSGBENCH_CLOCK=\"rdtsc\": not a clock (auto or monotonic)"
        );
    }

    #[test]
    fn a_monotonic_clock_measures_its_own_read_cost() {
        let c = Clock::monotonic();
        assert_eq!(c.kind(), ClockKind::Monotonic);
        assert_eq!(c.ticks_per_us(), 1000.0);
        // A vDSO read takes well over one nanosecond: the median of
        // back-to-back reads is a real cost, never 0.
        assert!(c.overhead_ns() >= 1.0, "{}", c.describe());
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
