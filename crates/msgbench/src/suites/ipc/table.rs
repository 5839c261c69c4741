//! The default output: one table per (size, placement), rows sorted by
//! median round trip, the winners marked; fits 120 columns.

use super::results::Timing;
use super::results::{GroupSummary, Placement, Row, Status, WaitClass};
use crate::measure::clock::Clock;
use crate::measure::hist::fmt_ns;
use crate::pingpong::floor::FloorReport;
use crate::report::thousands;

/// Widths of the columns after the mark and the transport name.
const WIDTHS: [usize; 11] = [6, 8, 7, 7, 7, 7, 10, 8, 8, 8, 8];
const TITLES: [&str; 11] = [
    "Wait", "Samples", "p50", "p99", "p99.9", "max", "Msgs/s", "MB/s", "CPU cli", "CPU srv",
    "CPU all",
];

/// "1 B, same CPU: client and server on CPU 0".
pub fn title(size: usize, placement: Placement, cpus: Option<(usize, usize)>) -> String {
    let head = format!("{size} B, {} CPU", placement.name());
    match cpus {
        Some((c, s)) if c == s => format!("{head}: client and server on CPU {c}"),
        Some((c, s)) => format!("{head}: client on CPU {c}, server on CPU {s}"),
        None => head,
    }
}

fn line(mark: &str, name: &str, name_w: usize, cells: &[String]) -> String {
    let mut s = format!("{mark:<2} {name:<name_w$}");
    // Optional columns (Mean, Spread) after the fixed ones are 7 wide.
    for (c, w) in cells
        .iter()
        .zip(WIDTHS.into_iter().chain(std::iter::repeat(7)))
    {
        s.push_str(&format!("  {c:>w$}"));
    }
    s.trim_end().to_string()
}

/// The table of one group: header, rule, rows (measured ones by p50,
/// then the others in run order); with `floor`, a last column of each
/// row's p50 as a multiple of its floor (see [`vs_floor`]).
pub fn group(rows: &[Row], summary: &GroupSummary, floor: Option<&FloorReport>) -> String {
    let name_w = rows
        .iter()
        .map(|r| r.transport.len())
        .chain(["Transport".len()])
        .max()
        .unwrap_or(9);
    let mut titles: Vec<String> = TITLES.iter().map(|t| t.to_string()).collect();
    let whole = rows.iter().any(|r| {
        r.latency
            .as_ref()
            .is_some_and(|l| l.timing == Timing::Whole)
    });
    let spread = rows.iter().any(|r| r.repeats.len() > 1);
    if whole {
        titles.push("Mean".into());
    }
    if spread {
        titles.push("Spread".into());
    }
    if floor.is_some() {
        titles.push(VS_FLOOR.into());
    }
    let head = line("", "Transport", name_w, &titles);
    let mut out = vec![head.clone(), "-".repeat(head.len())];
    let mut measured: Vec<&Row> = rows.iter().filter(|r| r.p50_ns().is_some()).collect();
    measured.sort_by(|a, b| {
        a.p50_ns()
            .unwrap_or(0.0)
            .total_cmp(&b.p50_ns().unwrap_or(0.0))
    });
    for r in measured {
        let mut mark = String::new();
        if summary.fastest.as_deref() == Some(r.transport.as_str()) {
            mark.push('*');
        }
        if summary.fastest_blocking.as_deref() == Some(r.transport.as_str()) {
            mark.push('B');
        }
        let mut c = cells(r);
        if whole {
            c.push(
                r.latency
                    .as_ref()
                    .map_or("-".into(), |l| fmt_ns(l.summary.mean_ns)),
            );
        }
        if spread {
            c.push(
                r.repeat_stats
                    .as_ref()
                    .map_or("-".into(), |s| format!("{:.1}%", s.spread_pct)),
            );
        }
        if let Some(f) = floor {
            c.push(vs_floor(r, f).map_or("-".to_string(), times));
        }
        out.push(line(&mark, &r.transport, name_w, &c));
    }
    for r in rows.iter().filter(|r| r.p50_ns().is_none()) {
        out.push(format!("{:<2} {:<name_w$}  {}", "", r.transport, r.note()));
    }
    out.join("\n")
}

fn cells(r: &Row) -> Vec<String> {
    let mut c = vec![r.wait.label().to_string()];
    if let Some(l) = &r.latency {
        let cap = if l.time_capped { "~" } else { "" };
        c.push(format!("{}{cap}", thousands(l.samples as f64)));
        // With repeats, p50 is the median of their p50s; whole-run
        // timing has no percentiles.
        let p50 = r.p50_ns().unwrap_or(l.summary.p50_ns);
        for v in [p50, l.summary.p99_ns, l.summary.p999_ns, l.summary.max_ns] {
            c.push(match l.timing {
                Timing::Whole => "-".to_string(),
                Timing::PerMessage => fmt_ns(v),
            });
        }
    }
    match &r.throughput {
        Some(t) => {
            let cap = if t.time_capped { "~" } else { "" };
            c.push(format!("{}{cap}", thousands(t.msgs_per_s)));
            c.push(mb(t.mb_per_s));
        }
        None => c.extend(["-".to_string(), "-".to_string()]),
    }
    if let Some(l) = &r.latency {
        for v in [l.cpu.client_ns, l.cpu.server_ns, l.cpu.total_ns] {
            c.push(fmt_ns(v));
        }
    }
    c
}

/// Title of the `--vs-floor` column (an optional column: 7 wide).
const VS_FLOOR: &str = "x floor";

/// A row's p50 as a multiple of the matching floor: polling and hybrid
/// transports against the cache-line ping-pong between threads, blocking
/// ones against the futex ping-pong, on one CPU or two as the row was.
/// `None` when the row has no p50 or the floor lacks that figure.
pub fn vs_floor(r: &Row, floor: &FloorReport) -> Option<f64> {
    let f = floor_ns(r.wait, r.placement, floor)?;
    (f > 0.0).then_some(r.p50_ns()? / f)
}

/// The floor a row of this wait class and placement is compared with.
fn floor_ns(wait: WaitClass, placement: Placement, floor: &FloorReport) -> Option<f64> {
    let same = placement == Placement::Same;
    match wait {
        WaitClass::Blocking => floor.futex_ns(same),
        WaitClass::Polling | WaitClass::Hybrid => floor.cacheline_ns(same),
    }
}

/// A ratio with 3 significant digits at most: "1.25x", "12.3x", "250x".
fn times(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}x")
    } else if v < 100.0 {
        format!("{v:.1}x")
    } else {
        format!("{v:.0}x")
    }
}

/// What the `--vs-floor` column means, with the floors used.
pub fn floor_legend(floor: &FloorReport) -> String {
    let f = |v: Option<f64>| v.map_or("n/a".to_string(), fmt_ns);
    format!(
        "x floor: p50 / the bare round trip of the same kind on the same placement (msgbench floor, measured at\n\
         the start): poll and hybrid against a cache line between threads ({} same CPU, {} cross CPU), block\n\
         against a futex wait/wake ({} same CPU, {} cross CPU).",
        f(floor.cacheline_ns(true)),
        f(floor.cacheline_ns(false)),
        f(floor.futex_ns(true)),
        f(floor.futex_ns(false)),
    )
}

/// MB/s with 3 significant digits at most ("0.52", "12.3", "2048").
fn mb(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else if v < 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Which throughput window the rows used: "Window: 16 for uds, pipe; 1
/// for shm (no one-way messages: each message waits for its reply)."
fn windows(rows: &[Row]) -> String {
    let mut by: Vec<(u32, Vec<&str>)> = Vec::new();
    for r in rows {
        let Some(t) = &r.throughput else { continue };
        match by.iter_mut().find(|(w, _)| *w == t.window) {
            Some((_, names)) if names.contains(&r.transport.as_str()) => {}
            Some((_, names)) => names.push(&r.transport),
            None => by.push((t.window, vec![&r.transport])),
        }
    }
    if by.is_empty() {
        return "Window: no throughput was measured.".to_string();
    }
    by.sort_by_key(|(w, _)| std::cmp::Reverse(*w));
    let parts: Vec<String> = by
        .iter()
        .map(|(w, names)| {
            let why = if *w == 1 && by.len() > 1 {
                " (no one-way messages, or --window 1)"
            } else if *w == 1 {
                " (each message waits for its reply)"
            } else {
                ""
            };
            format!("{w} for {}{why}", names.join(", "))
        })
        .collect();
    format!("Window: {}.", parts.join("; "))
}

/// What the columns and marks mean; lines about capped rows and polling on
/// one CPU only when such rows exist.
pub fn legend(rows: &[Row], clock: &Clock, row_secs: f64) -> String {
    let mut l = vec![
        format!(
            "Samples, p50..max: round trips of SIZE bytes each way, after a warm-up; one timestamp before and one after\n\
             each call ({}); every reply byte and sequence number checked.",
            clock.describe()
        ),
        "Msgs/s, MB/s: SIZE bytes one way, at most a window of W messages in flight (W-1 one-way messages, then a\n\
         call whose reply checks the count and checksums of all W; window 1: each message waits for its checksum);\n\
         MB = 10^6 bytes of payload. CPU cli/srv: thread CPU time per round trip of the latency run, the client\n\
         thread and the server's serving thread; CPU all: every thread of both sides (client and server share this\n\
         process: its CPU clock over the run), so the transports' helper threads (fuse's reader, sysv-msg's ticker,\n\
         the pokers of signal, eventfd and pipe) count too."
            .to_string(),
        windows(rows),
        "Wait: poll = both sides spin (\"spin\" in the name); hybrid = spin, then block (polling+blocking);\n\
         block = sleep in the kernel. * lowest p50 of the table; B lowest p50 among \"block\" transports."
            .to_string(),
    ];
    if rows.iter().any(|r| {
        r.latency.as_ref().is_some_and(|x| x.time_capped)
            || r.throughput.as_ref().is_some_and(|x| x.time_capped)
    }) {
        l.push(format!(
            "~ time-capped: the run stopped after {:.2} s, before its target count; figures are over what was done.",
            row_secs * 2.0
        ));
    }
    if rows.iter().any(|r| {
        r.status == Status::Ok && r.wait == WaitClass::Polling && r.placement == Placement::Same
    }) {
        l.push(
            "Polling on one CPU: the spinning side keeps the CPU until the scheduler preempts it, so each round trip\n\
             costs scheduler ticks (milliseconds) and both sides' CPU time."
                .to_string(),
        );
    }
    l.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mb_and_times() {
        assert_eq!(mb(0.5234), "0.52");
        assert_eq!(mb(12.34), "12.3");
        assert_eq!(mb(2048.4), "2048");
        assert_eq!(times(1.254), "1.25x");
        assert_eq!(times(12.34), "12.3x");
        assert_eq!(times(250.4), "250x");
    }

    #[test]
    fn each_wait_class_meets_its_floor() {
        use crate::pingpong::floor::{FloorKind, FloorRow};
        let row = |kind, same: bool, ns| FloorRow {
            kind,
            what: String::new(),
            unit: "round_trip",
            cpus: Some((0, if same { 0 } else { 1 })),
            same_cpu: Some(same),
            count: 1,
            ns,
            spread: 0.0,
            runs_ns: vec![ns],
        };
        let floor = FloorReport {
            quick: true,
            runs_per_figure: 1,
            cpus: vec![0, 1],
            rows: vec![
                row(FloorKind::CachelineThreads, true, 1.0),
                row(FloorKind::CachelineThreads, false, 2.0),
                row(FloorKind::Futex, true, 3.0),
                row(FloorKind::Futex, false, 4.0),
            ],
        };
        let f = |w, p| floor_ns(w, p, &floor);
        assert_eq!(f(WaitClass::Polling, Placement::Same), Some(1.0));
        assert_eq!(f(WaitClass::Hybrid, Placement::Cross), Some(2.0));
        assert_eq!(f(WaitClass::Blocking, Placement::Same), Some(3.0));
        assert_eq!(f(WaitClass::Blocking, Placement::Cross), Some(4.0));
        // A row without a p50 has no ratio.
        let r = Row::new("uds", "uds", 1, Placement::Same);
        assert_eq!(vs_floor(&r, &floor), None);
    }

    #[test]
    fn titles_name_the_cpus() {
        assert_eq!(
            title(64, Placement::Same, Some((0, 0))),
            "64 B, same CPU: client and server on CPU 0"
        );
        assert_eq!(
            title(1, Placement::Cross, Some((0, 1))),
            "1 B, cross CPU: client on CPU 0, server on CPU 1"
        );
    }
}
