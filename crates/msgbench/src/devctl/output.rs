//! The seed's results block, plus our per-thread latency lines.

use std::fmt::Write;

use super::client::ClientRun;
use crate::measure::clock::Clock;
use crate::measure::cpu::CpuUsage;
use crate::measure::hist::fmt_ns;

/// Formats the results block of `client-adder`:
///
/// ```text
/// Results:
/// --------
/// Total CPU Busy (Idle Test): 0.17%
/// Total CPU Busy: 129.00%            (n/a when /proc/stat is unreadable)
/// Thread duration: 12100ms (165289 msgs/sec)
/// Thread 0 latency: p50 5.12us, p99 9.80us, p99.9 20.1us, max 120us (2000000 samples)
/// Clock: tsc (2994.4 MHz, 8 ns per timestamp), one timestamp per request
/// API: in place (zero-copy)          (or: copy, with --copy)
/// ```
pub fn results_block(run: &ClientRun, idle: Option<&CpuUsage>, clock: &Clock) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(s, "Results:\n--------");
    if let Some(idle) = idle {
        let _ = writeln!(s, "Total CPU Busy (Idle Test): {:.2}%", idle.busy_pct);
    }
    let _ = writeln!(s, "Total CPU Busy: {}", busy_cell(run.busy.as_ref()));
    for t in &run.threads {
        let _ = writeln!(
            s,
            "Thread duration: {}ms ({:.0} msgs/sec)",
            t.duration_ns / 1_000_000,
            t.rate
        );
    }
    for t in &run.threads {
        if let Some(l) = &t.latency {
            let _ = writeln!(
                s,
                "Thread {} latency: p50 {}, p99 {}, p99.9 {}, max {} ({} samples{})",
                t.thread,
                fmt_ns(l.p50_ns),
                fmt_ns(l.p99_ns),
                fmt_ns(l.p999_ns),
                fmt_ns(l.max_ns),
                l.count,
                t.cpu.map(|c| format!(", CPU {c}")).unwrap_or_default()
            );
        }
    }
    let timing = if run.latency.is_some() {
        "one timestamp per request"
    } else {
        "whole-run timing only (--no-timestamps)"
    };
    let _ = writeln!(s, "Clock: {}, {timing}", clock.describe());
    let _ = writeln!(s, "API: {}", run.api.describe());
    if let Some(steal) = run.busy.map(|b| b.steal_pct).filter(|&p| p >= 1.0) {
        let _ = writeln!(
            s,
            "Warning: the hypervisor stole {steal:.1}% CPU during the run; figures are disturbed"
        );
    }
    s
}

/// The seed's figures for the same run, the last line of `client-adder`:
/// its QNX 8.0 and 7.1 rates per thread at `n` threads, in one process
/// and in separate processes (the client cannot tell which the server
/// is, so both); none for a pool on one path (`one_path`) or past the
/// seed's 6 threads.
pub fn seed_line(n: u32, one_path: bool) -> String {
    use super::seed::{self, Layout};
    if one_path {
        return "Seed: no QNX figure for one path served by a thread pool (--one-path)\n".into();
    }
    let each: Vec<String> = seed::OSES
        .iter()
        .filter_map(|os| {
            let one = seed::rate(os, Layout::OneProcess, n)?;
            let multi = seed::rate(os, Layout::Processes, n)?;
            Some(format!(
                "{os} {} msgs/sec (one process), {} (processes)",
                crate::results::thousands(one),
                crate::results::thousands(multi)
            ))
        })
        .collect();
    if each.is_empty() {
        return format!("Seed: no QNX figure for -n{n} (it ran 1 to 6 threads)\n");
    }
    format!(
        "Seed, per thread at -n{n} ({}): {}\n",
        seed::SOURCE,
        each.join("; ")
    )
}

/// A busy figure as printed: `12.34%`, or `n/a` when it was not measured
/// (/proc/stat unreadable), never a made-up `0.00%`.
pub fn busy_cell(busy: Option<&CpuUsage>) -> String {
    busy.map_or_else(|| "n/a".into(), |b| format!("{:.2}%", b.busy_pct))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devctl::client::ClientRun;

    fn run(busy: Option<CpuUsage>) -> ClientRun {
        ClientRun {
            histogram: Vec::new(),
            transport: "shm".into(),
            api: crate::devctl::options::Api::InPlace,
            samples: 1000,
            threads: Vec::new(),
            busy,
            ave_duration_ns: 1e6,
            rate_per_thread: 1e6,
            aggregate_rate: 1e6,
            latency: None,
        }
    }

    #[test]
    fn the_seed_line_gives_both_systems_and_modes_or_says_why_not() {
        let four = seed_line(4, false);
        assert!(
            four.contains("QNX 8.0 143,450 msgs/sec (one process), 147,690 (processes)"),
            "{four}"
        );
        assert!(
            four.contains("QNX 7.1 54,990 msgs/sec (one process), 53,496"),
            "{four}"
        );
        assert!(seed_line(7, false).contains("no QNX figure for -n7"));
        assert!(seed_line(2, true).contains("--one-path"));
    }

    #[test]
    fn unreadable_proc_stat_renders_na_not_zero() {
        let out = results_block(&run(None), None, &Clock::monotonic());
        assert!(out.contains("\nTotal CPU Busy: n/a\n"), "{out}");
        assert!(!out.contains("0.00%"), "{out}");
        assert!(!out.contains("stole"), "{out}");
        assert!(out.ends_with("\nAPI: in place (zero-copy)\n"), "{out}");
        let json = serde_json::to_value(run(None)).expect("serialises");
        assert!(json["busy"].is_null(), "{json}");
    }

    #[test]
    fn measured_busy_is_printed_with_two_decimals() {
        let busy = CpuUsage {
            busy_pct: 129.0,
            steal_pct: 2.5,
            cpus: 2,
        };
        let out = results_block(&run(Some(busy)), Some(&busy), &Clock::monotonic());
        assert!(out.contains("\nTotal CPU Busy: 129.00%\n"), "{out}");
        assert!(out.contains("Total CPU Busy (Idle Test): 129.00%"), "{out}");
        assert!(out.contains("stole 2.5% CPU"), "{out}");
        let json = serde_json::to_value(run(Some(busy))).expect("serialises");
        assert_eq!(json["busy"]["busy_pct"], 129.0, "{json}");
    }
}
