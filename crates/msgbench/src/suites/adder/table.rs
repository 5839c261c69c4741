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
        &r.busy_pct.map_or("n/a".into(), |b| format!("{b:.2}%")),
        &format!(
            "{:.0} ms{}{}",
            r.ave_duration_ms,
            if r.cut { "*" } else { "" },
            if r.discarded_runs.is_empty() { "" } else { "+" }
        ),
        &thousands(r.rate_per_thread),
        &thousands(r.aggregate_rate),
        &r.efficiency
            .map_or("-".into(), |e| format!("{:.0}%", e * 100.0)),
        &p50,
        &p99,
    ])
}

/// The footnote of a row marked `+`.
pub(super) const RERUN_NOTE: &str =
    "+ The row was run again: its first measured run lasted under a third of --row-secs (the probe that sized\n\
     it ran slower than the row), so it was re-run sized from its own rate, up to 3 times; the table shows the last run.\n\
     The discarded runs, their figures and why, are in the JSON (rows[].discarded_runs).";

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devctl::client::ClientRun;
    use crate::suites::adder::Mode;

    #[test]
    fn unmeasured_busy_is_na_in_the_table_and_null_in_json() {
        let run = ClientRun {
            transport: "shm".into(),
            samples: 1000,
            threads: Vec::new(),
            busy: None,
            ave_duration_ns: 1e6,
            rate_per_thread: 1e6,
            aggregate_rate: 1e6,
            latency: None,
        };
        let row = super::super::make_row(Mode::One, 1, run, None, None);
        let l = line(&row, true);
        let cells: Vec<&str> = l.split_whitespace().collect();
        assert!(cells.contains(&"n/a"), "{l}");
        assert!(!l.contains("0.00%"), "{l}");
        let json = serde_json::to_value(&row).expect("serialises");
        assert!(json["busy_pct"].is_null(), "{json}");
        assert!(json["steal_pct"].is_null(), "{json}");
    }
}
