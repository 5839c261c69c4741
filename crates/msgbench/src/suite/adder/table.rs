//! The adder table, as printed.

use super::{latency_cells, Row};
use crate::measure::clock::Clock;
use crate::report::thousands;

const WIDTHS: [usize; 10] = [13, 7, 6, 8, 12, 11, 11, 7, 8, 8];

fn fmt_row(cells: [&str; 10]) -> String {
    let mut s = String::new();
    for (i, (c, w)) in cells.iter().zip(WIDTHS).enumerate() {
        if i == 0 {
            s.push_str(&format!("{c:<w$}"));
        } else {
            s.push_str(&format!("  {c:>w$}"));
        }
    }
    s.trim_end().to_string()
}

/// Column titles.
pub(super) fn header() -> String {
    let h = fmt_row([
        "Mode",
        "Threads",
        "Idle",
        "CPU Busy",
        "Ave Duration",
        "Rate/thread",
        "Aggregate",
        "Scaling",
        "p50",
        "p99",
    ]);
    let rule = "-".repeat(h.len());
    format!("{h}\n{rule}")
}

/// One row; the mode label only on the first row of each mode.
pub(super) fn line(r: &Row, first_of_mode: bool) -> String {
    let (p50, p99) = latency_cells(&r.latency);
    fmt_row([
        if first_of_mode { r.mode.label() } else { "" },
        &r.threads.to_string(),
        &r.idle_pct.map_or("-".into(), |i| format!("{i:.2}%")),
        &format!("{:.2}%", r.busy_pct),
        &format!(
            "{:.0} ms{}",
            r.ave_duration_ms,
            if r.cut { "*" } else { "" }
        ),
        &thousands(r.rate_per_thread),
        &thousands(r.aggregate_rate),
        &r.efficiency
            .map_or("-".into(), |e| format!("{:.0}%", e * 100.0)),
        &p50,
        &p99,
    ])
}

/// What the columns mean.
pub(super) fn legend(clock: &Clock) -> String {
    format!(
        "\nIdle and CPU Busy are summed over CPUs ({}% = all busy). Rate/thread = samples / Ave Duration (msgs/s);\n\
         Aggregate = all round trips / wall time of the row; Scaling = Aggregate / (Threads x Rate/thread at 1 thread).\n\
         Latency p50/p99 per round trip from per-request timestamps ({}).",
        crate::measure::placement::cpu_count() * 100,
        clock.describe()
    )
}
