//! The printed table of `msgbench floor`, and its rows as generic figures.

use super::RUNS;
use crate::measure::hist::fmt_ns;
use crate::pingpong::floor::FloorRow;
use crate::results::envelope::{Better, Figure};
use crate::results::table::{Align, Table};

/// "0 -> 1" for a ping-pong (side A -> side B), "-" for a cost.
fn cpus(r: &FloorRow) -> String {
    match r.cpus {
        Some((a, b)) => format!("{a} -> {b}"),
        None => "-".to_string(),
    }
}

/// One row per figure: what, CPUs, median, what it is per, spread, count.
pub fn table(rows: &[FloorRow]) -> Table {
    use Align::{Left, Right};
    let mut t = Table::new(
        "",
        &["Floor", "CPUs", "Median", "per", "Spread", "Count/run"],
    )
    .aligned(&[Left, Right, Right, Left, Right, Right]);
    for r in rows {
        t.row(vec![
            r.what.clone(),
            cpus(r),
            fmt_ns(r.ns),
            if r.unit == "call" {
                "call"
            } else {
                "round trip"
            }
            .to_string(),
            format!("{:.1}%", r.spread * 100.0),
            r.count.to_string(),
        ]);
    }
    t
}

/// What the columns mean.
pub fn legend() -> String {
    format!(
        "Median: of {RUNS} runs, each timed as a whole after a warm-up; Count/run: round trips or calls of a run.\n\
         Spread: (max - min) / median of the runs. CPUs: side A -> side B, each pinned.\n\
         cache line: one 64-byte line carries request and reply; spinning on two CPUs, sched_yield after each\n\
         look on one CPU; processes: the peer is a forked process sharing a memfd mapping.\n\
         futex: process-shared FUTEX_WAIT/FUTEX_WAKE on a memfd word, both sides asleep at once.\n\
         clock, system call and spin-wait hint: back-to-back calls in a tight loop, unpinned."
    )
}

/// A floor row as a generic figure: keyed by what and between which CPUs.
pub fn figure(r: &FloorRow) -> Figure {
    let cpus = r.cpus.map_or("-".into(), |(a, b)| format!("{a}->{b}"));
    Figure::new(
        &[("floor", r.what.clone()), ("cpus", cpus)],
        &format!("ns_per_{}", r.unit),
        r.ns,
        "ns",
        Better::Lower,
    )
    .with_repeats(r.runs_ns.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pingpong::floor::FloorKind;

    fn row(kind: FloorKind, cpus: Option<(usize, usize)>) -> FloorRow {
        FloorRow {
            kind,
            what: kind.describe(cpus.map(|(a, b)| a == b)).to_string(),
            unit: if kind.per_round_trip() {
                "round_trip"
            } else {
                "call"
            }
            .into(),
            cpus,
            same_cpu: cpus.map(|(a, b)| a == b),
            count: 1000,
            ns: 123.0,
            spread: 0.05,
            runs_ns: vec![123.0; RUNS],
        }
    }

    #[test]
    fn rows_show_what_cpus_figure_and_spread() {
        let t = crate::results::table::render(
            &[crate::results::table::Section::Table(table(&[
                row(FloorKind::CachelineThreads, Some((0, 1))),
                row(FloorKind::Syscall, None),
            ]))],
            crate::results::table::Format::Table,
        );
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 4, "{t}");
        assert!(lines[2].starts_with("cache line, threads, spinning"), "{t}");
        assert!(
            lines[2].contains("0 -> 1") && lines[2].contains("123ns"),
            "{t}"
        );
        assert!(
            lines[2].contains("round trip") && lines[2].contains("5.0%"),
            "{t}"
        );
        assert!(lines[3].contains("call"), "{t}");
    }
}
