//! CPU accounting: machine-wide usage from /proc/stat and per-thread or
//! per-process CPU time from the kernel's CPU-time clocks.

use oslayer::clock::{now_ns, Clock};
use std::io;
use std::time::Duration;

/// Aggregate "cpu" line of /proc/stat, in jiffies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuStat {
    /// Time in user mode (includes guest).
    pub user: u64,
    /// Time in user mode at low priority (includes guest_nice).
    pub nice: u64,
    /// Time in kernel mode.
    pub system: u64,
    /// Idle time.
    pub idle: u64,
    /// Idle time waiting for I/O.
    pub iowait: u64,
    /// Time servicing hardware interrupts.
    pub irq: u64,
    /// Time servicing softirqs.
    pub softirq: u64,
    /// Time stolen by the hypervisor for other guests.
    pub steal: u64,
}

impl CpuStat {
    /// Reads the aggregate line of /proc/stat now.
    pub fn read() -> io::Result<CpuStat> {
        parse_proc_stat(&std::fs::read_to_string("/proc/stat")?)
    }

    /// Sum of all fields (guest and guest_nice are already in user/nice).
    pub fn total(&self) -> u64 {
        self.user
            + self.nice
            + self.system
            + self.idle
            + self.iowait
            + self.irq
            + self.softirq
            + self.steal
    }
}

/// Parses the aggregate `cpu ` line of a /proc/stat text. Fields missing
/// on old kernels (iowait onwards) read as 0; at least 4 are required.
pub fn parse_proc_stat(text: &str) -> io::Result<CpuStat> {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, format!("/proc/stat: {why}"));
    let line = text
        .lines()
        .find(|l| l.split_whitespace().next() == Some("cpu"))
        .ok_or_else(|| bad("no aggregate \"cpu\" line"))?;
    let v = line
        .split_whitespace()
        .skip(1)
        .map(str::parse::<u64>)
        .collect::<Result<Vec<u64>, _>>()
        .map_err(|e| bad(&format!("bad number in {line:?}: {e}")))?;
    if v.len() < 4 {
        return Err(bad(&format!("too few fields in {line:?}")));
    }
    let f = |i: usize| v.get(i).copied().unwrap_or(0);
    Ok(CpuStat {
        user: f(0),
        nice: f(1),
        system: f(2),
        idle: f(3),
        iowait: f(4),
        irq: f(5),
        softirq: f(6),
        steal: f(7),
    })
}

/// Machine CPU usage over an interval, summed over CPUs.
#[derive(Debug, Clone, Copy, Default, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct CpuUsage {
    /// Busy time as a percentage of one CPU, summed (2 busy CPUs = 200).
    pub busy_pct: f64,
    /// Time stolen by the hypervisor, same scale as `busy_pct`.
    pub steal_pct: f64,
    /// Number of CPUs the percentages are scaled to.
    pub cpus: usize,
}

/// Busy percentage over the interval SUMMED over CPUs (2 fully busy CPUs =
/// 200%): busy = total - idle - iowait - steal, as a share of total, times
/// cpus*100. steal_pct likewise. `None` when no clock tick was counted in
/// between (an interval shorter than /proc/stat's resolution, or a
/// counter that went backwards): nothing was measured, and a 0% would be
/// a figure made up.
pub fn usage(before: &CpuStat, after: &CpuStat, cpus: usize) -> Option<CpuUsage> {
    let d = |a: u64, b: u64| b.saturating_sub(a);
    let total = d(before.total(), after.total());
    if total == 0 {
        return None;
    }
    let idle = d(before.idle, after.idle);
    let iowait = d(before.iowait, after.iowait);
    let steal = d(before.steal, after.steal);
    let busy = total.saturating_sub(idle + iowait + steal);
    let pct = |x: u64| x as f64 / total as f64 * cpus as f64 * 100.0;
    Some(CpuUsage {
        busy_pct: pct(busy),
        steal_pct: pct(steal),
        cpus,
    })
}

/// Sleeps `d` and returns the usage meanwhile (the "idle baseline"); an
/// error when /proc/stat is unreadable or counted no tick meanwhile.
pub fn idle_baseline(d: Duration) -> io::Result<CpuUsage> {
    let before = CpuStat::read()?;
    std::thread::sleep(d);
    let after = CpuStat::read()?;
    usage(&before, &after, super::placement::cpu_count()).ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!(
                "/proc/stat counted no clock tick in {} s: too short to measure",
                d.as_secs_f64()
            ),
        )
    })
}

/// CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), ns.
pub fn thread_cpu_ns() -> u64 {
    now_ns(Clock::ThreadCpu)
}

/// CPU time of the whole process (CLOCK_PROCESS_CPUTIME_ID), ns.
pub fn process_cpu_ns() -> u64 {
    now_ns(Clock::ProcessCpu)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  2703 5 2085 169494 136 1 15 10 7 2\n\
                        cpu0 1172 0 986 85050 15 0 4 4 0 0\n\
                        intr 12345 0 0\nctxt 999\n";

    #[test]
    fn parses_aggregate_line_without_guest() {
        let s = parse_proc_stat(STAT).unwrap();
        let want = CpuStat {
            user: 2703,
            nice: 5,
            system: 2085,
            idle: 169494,
            iowait: 136,
            irq: 1,
            softirq: 15,
            steal: 10,
        };
        assert_eq!(s, want);
        assert_eq!(s.total(), 2703 + 5 + 2085 + 169494 + 136 + 1 + 15 + 10);
    }

    #[test]
    fn parser_tolerates_old_kernels_and_rejects_garbage() {
        let old = parse_proc_stat("cpu 1 2 3 4\n").unwrap();
        assert_eq!((old.idle, old.steal), (4, 0));
        assert!(parse_proc_stat("cpu0 1 2 3 4\n").is_err());
        assert!(parse_proc_stat("cpu 1 2\n").is_err());
        assert!(parse_proc_stat("cpu 1 x 3 4\n").is_err());
    }

    #[test]
    fn usage_sums_over_cpus() {
        let a = parse_proc_stat("cpu 100 0 100 1000 0 0 0 0 0 0\n").unwrap();
        // +150 user, +40 system, +0 idle, +10 steal over 200 jiffies
        let b = parse_proc_stat("cpu 250 0 140 1000 0 0 0 10 0 0\n").unwrap();
        let u = usage(&a, &b, 2).expect("200 jiffies counted");
        assert_eq!(u.cpus, 2);
        assert!((u.busy_pct - 190.0).abs() < 1e-9, "{u:?}");
        assert!((u.steal_pct - 10.0).abs() < 1e-9, "{u:?}");
    }

    #[test]
    fn an_interval_without_a_tick_is_unmeasured_not_zero() {
        let a = parse_proc_stat(
            "cpu 100 0 100 1000 0 0 0 0 0 0
",
        )
        .unwrap();
        assert_eq!(usage(&a, &a, 2), None);
        // Counters that went backwards (a wrapped or reset /proc) neither.
        let b = parse_proc_stat(
            "cpu 50 0 50 500 0 0 0 0 0 0
",
        )
        .unwrap();
        assert_eq!(usage(&a, &b, 2), None);
    }

    #[test]
    fn cpu_clocks_advance() {
        let t0 = thread_cpu_ns();
        let mut x = 0u64;
        for i in 0..1_000_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        assert!(thread_cpu_ns() > t0);
        assert!(process_cpu_ns() > 0);
    }
}
