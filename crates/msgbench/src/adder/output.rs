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
/// Total CPU Busy: 129.00%
/// Thread duration: 12100ms (165289 msgs/sec)
/// Thread 0 latency: p50 5.12us, p99 9.80us, p99.9 20.1us, max 120us (2000000 samples)
/// Clock: tsc (2994.4 MHz, 8 ns per timestamp), one timestamp per request
/// ```
pub fn results_block(run: &ClientRun, idle: Option<&CpuUsage>, clock: &Clock) -> String {
    let mut s = String::new();
    // Writing to a String cannot fail.
    let _ = writeln!(s, "Results:\n--------");
    if let Some(idle) = idle {
        let _ = writeln!(s, "Total CPU Busy (Idle Test): {:.2}%", idle.busy_pct);
    }
    let _ = writeln!(s, "Total CPU Busy: {:.2}%", run.busy.busy_pct);
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
    if run.busy.steal_pct >= 1.0 {
        let _ = writeln!(
            s,
            "Warning: the hypervisor stole {:.1}% CPU during the run; figures are disturbed",
            run.busy.steal_pct
        );
    }
    s
}
