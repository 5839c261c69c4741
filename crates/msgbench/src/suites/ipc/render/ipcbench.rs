//! `--format ipc-bench`: the old study's results block (see
//! docs/methodology.md, "msgbench ipc"), one per transport, size and placement,
//! from the latency run: exact mean, min, max and standard deviation of
//! the round trips, total wall time, and round trips per second.

use super::super::row::{Row, Status};
use super::title;

/// The figures of one block.
#[derive(Debug, Clone, Copy)]
pub struct Block {
    /// Message size, bytes.
    pub size: usize,
    /// Round trips.
    pub count: u64,
    /// Wall time of the run, ns.
    pub total_ns: f64,
    /// Mean round trip, ns.
    pub mean_ns: f64,
    /// Smallest round trip, ns.
    pub min_ns: f64,
    /// Largest round trip, ns.
    pub max_ns: f64,
    /// Standard deviation, ns.
    pub stddev_ns: f64,
    /// Round trips per second (the study truncates it to an integer).
    pub rate: u64,
}

impl Block {
    /// The block of a measured row.
    pub fn of(row: &Row) -> Option<Block> {
        let l = row.latency.as_ref().filter(|_| row.status == Status::Ok)?;
        Some(Block {
            size: row.size,
            count: l.samples,
            total_ns: l.duration_ns,
            mean_ns: l.exact.mean_ns,
            min_ns: l.exact.min_ns,
            max_ns: l.exact.max_ns,
            stddev_ns: l.exact.stddev_ns,
            rate: (l.samples as f64 / (l.duration_ns / 1e9).max(1e-9)) as u64,
        })
    }

    /// The block as the study printed it. Its values were followed by a
    /// tab; the spec shows tab stops every 4 columns, reproduced here with
    /// spaces.
    pub fn render(&self) -> String {
        let line = |label: &str, value: String, unit: &str| {
            let mut s = format!("{label:<20}{value}");
            if !unit.is_empty() {
                let pad = 4 - s.len() % 4;
                s.push_str(&" ".repeat(pad));
                s.push_str(unit);
            }
            s
        };
        [
            "============ RESULTS ================".to_string(),
            line("Message size:", self.size.to_string(), ""),
            line("Message count:", self.count.to_string(), ""),
            line(
                "Total duration:",
                format!("{:.3}", self.total_ns / 1e6),
                "ms",
            ),
            line(
                "Average duration:",
                format!("{:.3}", self.mean_ns / 1e3),
                "us",
            ),
            line(
                "Minimum duration:",
                format!("{:.3}", self.min_ns / 1e3),
                "us",
            ),
            line(
                "Maximum duration:",
                format!("{:.3}", self.max_ns / 1e3),
                "us",
            ),
            line(
                "Standard deviation:",
                format!("{:.3}", self.stddev_ns / 1e3),
                "us",
            ),
            line("Message rate:", self.rate.to_string(), "msg/s"),
            "=====================================".to_string(),
        ]
        .join("\n")
    }
}

/// A row's title line, then its block (or why it has none), then a blank line.
pub fn row(r: &Row) -> String {
    let head = format!(
        "{}: {}",
        r.label(),
        title(r.size, r.placement, r.client_cpu.zip(r.server_cpu))
    );
    match Block::of(r) {
        Some(b) => format!("{head}\n{}\n", b.render()),
        None => format!("{head}\n{}\n", r.note()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_the_spec_example_exactly() {
        let b = Block {
            size: 1,
            count: 1000,
            total_ns: 2.648e6,
            mean_ns: 1934.0,
            min_ns: 1792.0,
            max_ns: 71680.0,
            stddev_ns: 2210.0,
            rate: 377670,
        };
        let want = "\
============ RESULTS ================
Message size:       1
Message count:      1000
Total duration:     2.648   ms
Average duration:   1.934   us
Minimum duration:   1.792   us
Maximum duration:   71.680  us
Standard deviation: 2.210   us
Message rate:       377670  msg/s
=====================================";
        assert_eq!(b.render(), want);
    }

    #[test]
    fn long_values_keep_a_gap_before_the_unit() {
        let b = Block {
            size: 65536,
            count: 1,
            total_ns: 12345.678e6,
            mean_ns: 1.0,
            min_ns: 1.0,
            max_ns: 1.0,
            stddev_ns: 0.0,
            rate: 12345678,
        };
        let r = b.render();
        assert!(r.contains("Total duration:     12345.678   ms"), "{r}");
        assert!(r.contains("Message rate:       12345678    msg/s"), "{r}");
    }
}
