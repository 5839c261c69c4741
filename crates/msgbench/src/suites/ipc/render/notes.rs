//! The lines printed with the tables about how the figures were taken
//! (timing mode, loop mode, timestamp cost, repeats) and the warnings
//! under each table (noisy rows, repeats that disagree).

use super::super::load::{OTHER_WARN_PCT, STEAL_WARN_PCT};
use super::super::options::Plan;
use super::super::row::Row;
use super::super::row::Timing;
use super::super::stats::REPEAT_WARN_PCT;
use crate::measure::clock::Clock;

/// Legend lines on the measurement mode of the run.
pub fn legend(plan: &Plan, clock: &Clock) -> String {
    let mut l = Vec::new();
    l.push(match plan.timing {
        Timing::PerMessage => format!(
            "Timing: per-message (--timing per-message): one timestamp's cost ({:.0} ns, measured at start) is\n\
             subtracted from each sample, clamped at 0.",
            clock.overhead_ns()
        ),
        Timing::Whole => "Timing: whole run (--timing whole): no clock around each call, latency = elapsed / count;\n\
             only the mean is known (column Mean), percentiles show -."
            .to_string(),
    });
    l.push(match plan.rate {
        Some(r) => format!(
            "Loop: open (--rate {r}): message k is sent at start + k/R and timed from that intended time, so a\n\
             stall delays every message behind it and shows in the tail (no coordinated omission)."
        ),
        None => "Loop: closed: each message is sent when the previous reply arrives.".to_string(),
    });
    l.push(match plan.warmup_secs {
        Some(s) if s <= 0.0 => {
            "Warm-up: none (--warmup 0); latency runs last one row each.".to_string()
        }
        Some(s) => format!("Warm-up: {s} s before each latency run."),
        None => "Warm-up: a fifth of a row (at least 50 round trips) before each latency run."
            .to_string(),
    });
    if plan.repeats > 1 {
        l.push(format!(
            "Repeats: {} latency runs per row, the rows of a size in turn (A B C A B C); p50 is the median of\n\
             their p50s (tables sorted by it); Spread = (max - min) / median of the repeats' p50s.\n\
             Warned: spread above {REPEAT_WARN_PCT:.0}%, or a first repeat more than {REPEAT_WARN_PCT:.0}% off the others' median while\n\
             they agree.",
            plan.repeats
        ));
    }
    l.push(format!(
        "Noise: a row is warned about when other processes use more than {OTHER_WARN_PCT:.0}% of a CPU or steal\n\
         exceeds {STEAL_WARN_PCT:.0}% while it runs (or more than /proc/stat can resolve over the row)."
    ));
    l.join("\n")
}

/// One `warning:` line per warning of each row.
pub fn warnings(rows: &[Row]) -> Vec<String> {
    rows.iter()
        .flat_map(|r| {
            r.warnings.iter().map(move |w| {
                format!(
                    "warning: {} {} B {}: {w}",
                    r.label(),
                    r.size,
                    r.placement.name()
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::ipc::{Api, Placement};

    #[test]
    fn one_line_per_row_warning() {
        let mut r = Row::new("uds", "uds", Api::InPlace, 1, Placement::Same);
        assert!(warnings(std::slice::from_ref(&r)).is_empty());
        r.warnings = vec!["a".into(), "b".into()];
        assert_eq!(
            warnings(&[r]),
            ["warning: uds 1 B same: a", "warning: uds 1 B same: b"]
        );
    }
}
