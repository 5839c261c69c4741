//! Reading what the reference programs print: goldsborough/ipc-bench's
//! results block (the study's format) and rigtorp/ipc-bench's one line.

/// The figures a program printed, ns and round trips per second.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Printed {
    /// Mean round trip.
    pub mean_ns: f64,
    /// Smallest round trip, where printed.
    pub min_ns: Option<f64>,
    /// Largest round trip, where printed.
    pub max_ns: Option<f64>,
    /// Round trips per second, where printed.
    pub rate_per_s: Option<f64>,
}

/// The number after `label` on its line, e.g. `Average duration:   1.934\tus`.
fn field(out: &str, label: &str) -> Option<f64> {
    out.lines()
        .find_map(|l| l.trim().strip_prefix(label))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
}

/// goldsborough/ipc-bench's block: "Average duration", "Minimum
/// duration", "Maximum duration" in microseconds, "Message rate" in
/// msg/s; `None` without an average.
pub fn goldsborough(out: &str) -> Option<Printed> {
    let us = |label: &str| field(out, label).map(|v| v * 1000.0);
    Some(Printed {
        mean_ns: us("Average duration:")?,
        min_ns: us("Minimum duration:"),
        max_ns: us("Maximum duration:"),
        rate_per_s: field(out, "Message rate:"),
    })
}

/// rigtorp/ipc-bench's "average latency: N ns", half a round trip (its
/// programs divide the run's time by twice the round trips): the mean
/// round trip is twice it.
pub fn rigtorp(out: &str) -> Option<Printed> {
    let half = field(out, "average latency:")?;
    Some(Printed {
        mean_ns: 2.0 * half,
        ..Printed::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_studys_block_reads_in_ns() {
        // The block as the study shows it (docs/methodology.md).
        let out = "\n============ RESULTS ================\nMessage size:       1\n\
                   Message count:      1000\nTotal duration:     2.648\tms\n\
                   Average duration:   1.934\tus\nMinimum duration:   1.792\tus\n\
                   Maximum duration:   71.680\tus\nStandard deviation: 2.210\tus\n\
                   Message rate:       377670\tmsg/s\n=====================================\n";
        let p = goldsborough(out).expect("figures");
        assert!((p.mean_ns - 1934.0).abs() < 1e-6, "{p:?}");
        assert_eq!(p.min_ns.map(f64::round), Some(1792.0));
        assert_eq!(p.max_ns.map(f64::round), Some(71680.0));
        assert_eq!(p.rate_per_s, Some(377670.0));
        assert!(goldsborough("Message count: 1000\n").is_none());
        assert!(goldsborough("Average duration:   nan\tus").is_none());
    }

    #[test]
    fn rigtorps_half_round_trip_doubles() {
        let out = "message size: 64 octets\nroundtrip count: 1000\naverage latency: 4321 ns\n";
        assert_eq!(rigtorp(out).map(|p| p.mean_ns), Some(8642.0));
        assert!(rigtorp("usage: pipe_lat <message-size> <roundtrip-count>").is_none());
    }
}
