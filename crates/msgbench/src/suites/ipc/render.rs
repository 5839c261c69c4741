//! The text output: one table per (size, placement, layout), rows sorted by
//! median round trip, the winners marked, rows without figures last with
//! why; with `--format csv` one flat table of every row in raw units.
//! The scale axes' tables ([`scale`]), the legends on how the figures
//! were taken ([`notes`]), the old study's blocks ([`ipcbench`]) and the
//! generic figures ([`figures`]) are its submodules.

pub mod figures;
pub mod ipcbench;
pub mod layouts;
pub mod notes;
pub mod peers;
pub mod scale;

use super::judge::GroupSummary;
use super::options::Plan;
use super::row::Timing;
use super::row::{Api, Placement, Row, Status, WaitClass};
use crate::measure::clock::Clock;
use crate::measure::hist::fmt_ns;
use crate::pingpong::floor::FloorReport;
use crate::results::table::{Align, Format, Section, Table};
use crate::results::thousands;
use crate::suites::Results;

/// The text output. Table and markdown: a table per size, placement and
/// count of idle clients (with `--ipcbench-block`, the old study's blocks
/// after each); with `--idle-clients`, each transport's p50 against the
/// count per size and placement; with `--clients`, the active-clients
/// table per size and placement; then the legends and the run's notes.
/// CSV: one flat table of every row.
pub(super) fn sections(plan: &Plan, results: &Results<Row>) -> Vec<Section> {
    let floor = results.floor.as_ref();
    if plan.format == Format::Csv {
        return vec![Section::Table(flat(&results.rows, floor))];
    }
    let (active, single): (Vec<Row>, Vec<Row>) = results
        .rows
        .iter()
        .cloned()
        .partition(|r| r.clients.is_some());
    // A remote server's CPU is one of another host: the notes name it,
    // the rows' server_cpu holds it.
    let local = plan.server.is_none();
    let cpus = |r: Option<&Row>| {
        r.filter(|_| local)
            .and_then(|r| plan.cpus_for(r.placement).ok())
    };
    let mut out = Vec::new();
    for g in single.chunk_by(|a, b| (a.size, a.placement) == (b.size, b.placement)) {
        for g in layouts::split(g) {
            out.push(Section::Table(group(
                &g,
                cpus(g.first()),
                floor,
                plan.throughput,
            )));
            if plan.ipcbench_block {
                let blocks: Vec<String> = g.iter().map(ipcbench::row).collect();
                out.push(Section::Text(blocks.join("\n")));
            }
        }
        if let Some(t) = layouts::side_by_side(g) {
            out.push(Section::Table(t));
        }
    }
    if !plan.idle_clients.is_empty() {
        for g in single.chunk_by(|a, b| (a.size, a.placement) == (b.size, b.placement)) {
            out.push(Section::Table(scale::idle_summary(g, cpus(g.first()))));
        }
    }
    for g in active.chunk_by(|a, b| (a.size, a.placement) == (b.size, b.placement)) {
        out.push(Section::Table(scale::active(g, cpus(g.first()))));
    }
    if let Some(t) = peers::table(&results.peers) {
        out.push(Section::Table(t));
    }
    // The clock of the run: Clock::best() is chosen once per process.
    let clock = Clock::best();
    out.push(Section::Text(legend(
        &single,
        &clock,
        plan.row_secs,
        plan.throughput,
    )));
    if let Some(l) = scale::legend(&results.rows) {
        out.push(Section::Text(l));
    }
    if let Some(f) = floor {
        out.push(Section::Text(floor_legend(f)));
    }
    out.push(Section::Text(notes::legend(plan, &clock)));
    if !results.notes.is_empty() {
        out.push(Section::Text(results.notes.join("\n")));
    }
    out
}

/// The figure columns after the mark, the transport and its wait class:
/// the ipc-bench study's round-trip figures (count, average, minimum,
/// maximum, rate), with p50 and p99 between, then CPU per round trip.
const FIGURES: [&str; 10] = [
    "Round trips",
    "Average",
    "Minimum",
    "p50",
    "p99",
    "Maximum",
    "Msg rate",
    "CPU cli",
    "CPU srv",
    "CPU all",
];

/// The one-way throughput columns (`--throughput`).
const THROUGHPUT: [&str; 2] = ["One-way msg/s", "One-way MB/s"];

/// "1 B, same CPU: client and server on CPU 0".
pub fn title(size: usize, placement: Placement, cpus: Option<(usize, usize)>) -> String {
    title_with(size, placement, cpus, "")
}

/// [`title`] with `with` after the placement, e.g. ", 1000 idle clients".
pub fn title_with(
    size: usize,
    placement: Placement,
    cpus: Option<(usize, usize)>,
    with: &str,
) -> String {
    let head = format!("{size} B, {} CPU{with}", placement.name());
    match cpus {
        Some((c, s)) if c == s => format!("{head}: client and server on CPU {c}"),
        Some((c, s)) => format!("{head}: client on CPU {c}, server on CPU {s}"),
        None => head,
    }
}

/// Which optional columns a group's table has.
#[derive(Debug, Clone, Copy)]
struct Columns<'a> {
    /// One-way throughput (`--throughput`).
    throughput: bool,
    /// Spread of the repeats.
    spread: bool,
    /// Ratio to the floor (`--vs-floor`).
    floor: Option<&'a FloorReport>,
    /// Why a row has no figures.
    note: bool,
    /// Which API (`--copy`: some rows use the copying one).
    api: bool,
    /// What idle connections cost (`--idle-clients`, rows with some).
    idle: bool,
}

impl<'a> Columns<'a> {
    fn of(rows: &[Row], floor: Option<&'a FloorReport>, throughput: bool) -> Columns<'a> {
        Columns {
            throughput,
            spread: rows.iter().any(|r| r.repeats.len() > 1),
            floor,
            note: rows.iter().any(|r| r.p50_ns().is_none()),
            api: rows.iter().any(|r| r.api != Api::InPlace),
            idle: rows.iter().any(|r| r.idle.is_some()),
        }
    }

    /// The header and the alignment of each column.
    fn head(&self) -> (Vec<&'static str>, Vec<Align>) {
        let mut head = vec!["", "Transport"];
        if self.api {
            head.push("API");
        }
        head.push("Wait");
        let left = head.len();
        head.extend(FIGURES);
        if self.throughput {
            head.extend(THROUGHPUT);
        }
        for (on, name) in [
            (self.spread, "Spread"),
            (self.floor.is_some(), VS_FLOOR),
            (self.idle, RSS_CONN),
            (self.idle, FDS_CONN),
        ] {
            if on {
                head.push(name);
            }
        }
        let mut align = vec![Align::Right; head.len()];
        align[..left].fill(Align::Left);
        if self.note {
            head.push("Note");
            align.push(Align::Left);
        }
        (head, align)
    }
}

/// The table of one group (rows of one size and placement): measured
/// rows by p50, then the others in run order with why; warnings under it.
/// With `floor`, a column of each row's p50 as a multiple of its floor
/// (see [`vs_floor`]).
pub fn group(
    rows: &[Row],
    cpus: Option<(usize, usize)>,
    floor: Option<&FloorReport>,
    throughput: bool,
) -> Table {
    let (size, placement, idle) = rows.first().map_or((0, Placement::Same, None), |r| {
        (r.size, r.placement, r.idle_clients)
    });
    let summary = GroupSummary::of(size, placement, rows);
    let cols = Columns::of(rows, floor, throughput);
    let (head, align) = cols.head();
    let with = match (idle, rows.first().map(|r| r.layout)) {
        (Some(n), _) => format!(", {n} idle clients"),
        (None, Some(l)) => format!(", {}", layouts::label(l)),
        (None, None) => String::new(),
    };
    let mut t = Table::new(title_with(size, placement, cpus, &with), &head).aligned(&align);
    let mut measured: Vec<&Row> = rows.iter().filter(|r| r.p50_ns().is_some()).collect();
    measured.sort_by(|a, b| {
        a.p50_ns()
            .unwrap_or(0.0)
            .total_cmp(&b.p50_ns().unwrap_or(0.0))
    });
    for r in measured {
        t.row(measured_row(r, &summary, &cols));
    }
    for r in rows.iter().filter(|r| r.p50_ns().is_none()) {
        let mut c = vec![String::new(), r.transport.clone()];
        if cols.api {
            c.push(r.api.label().into());
        }
        c.push(r.wait.label().into());
        c.resize(head.len() - 1, "-".to_string());
        c.push(r.note());
        t.row(c);
    }
    t.notes = notes::warnings(rows);
    t
}

/// The cells of a measured row: mark, name, figures, optional columns.
fn measured_row(r: &Row, summary: &GroupSummary, cols: &Columns) -> Vec<String> {
    let mut mark = String::new();
    if summary.is_fastest(r, false) {
        mark.push('*');
    }
    if summary.is_fastest(r, true) {
        mark.push('B');
    }
    let mut c = vec![mark, r.transport.clone()];
    if cols.api {
        c.push(r.api.label().into());
    }
    c.extend(cells(r));
    if cols.throughput {
        c.extend(throughput_cells(r));
    }
    if cols.spread {
        c.push(
            r.repeat_stats
                .as_ref()
                .map_or("-".into(), |s| format!("{:.1}%", s.spread_pct)),
        );
    }
    if let Some(f) = cols.floor {
        c.push(vs_floor(r, f).map_or("-".to_string(), times));
    }
    if cols.idle {
        c.extend(idle_cells(r));
    }
    if cols.note {
        c.push(String::new());
    }
    c
}

/// The wait class and the figures of [`FIGURES`]: round trips, their
/// average, minimum, p50, p99 and maximum (a run timed as a whole has
/// only its average), the round-trip rate (1 / average) and CPU per round
/// trip.
fn cells(r: &Row) -> Vec<String> {
    let mut c = vec![r.wait.label().to_string()];
    let Some(l) = &r.latency else {
        return c;
    };
    let cap = if l.time_capped { "~" } else { "" };
    c.push(format!("{}{cap}", thousands(l.samples as f64)));
    let mean = l.exact.mean_ns;
    c.push(fmt_ns(mean));
    // With repeats, p50 is the median of their p50s.
    let p50 = r.p50_ns().unwrap_or(l.summary.p50_ns);
    for v in [l.exact.min_ns, p50, l.summary.p99_ns, l.exact.max_ns] {
        c.push(match l.timing {
            Timing::Whole => "-".to_string(),
            Timing::PerMessage => fmt_ns(v),
        });
    }
    c.push(match mean > 0.0 {
        true => thousands(1e9 / mean),
        false => "-".to_string(),
    });
    for v in [l.cpu.client_ns, l.cpu.server_ns, l.cpu.total_ns] {
        c.push(fmt_ns(v));
    }
    c
}

/// The one-way throughput cells: messages per second and MB/s.
fn throughput_cells(r: &Row) -> [String; 2] {
    match &r.throughput {
        Some(t) => {
            let cap = if t.time_capped { "~" } else { "" };
            [format!("{}{cap}", thousands(t.msgs_per_s)), mb(t.mb_per_s)]
        }
        None => ["-".to_string(), "-".to_string()],
    }
}

/// Every row in one table for `--format csv`: what it is, its status,
/// and its figures in raw units (ns, messages per second, MB/s, ratio);
/// empty where not measured.
pub fn flat(rows: &[Row], floor: Option<&FloorReport>) -> Table {
    let mut head = vec![
        "transport",
        "mechanism",
        "api",
        "wait",
        "size",
        "placement",
        "layout",
        "status",
        "samples",
        "p50_ns",
        "p99_ns",
        "p999_ns",
        "max_ns",
        "mean_ns",
        "msgs_per_s",
        "mb_per_s",
        "cpu_client_ns",
        "cpu_server_ns",
        "cpu_total_ns",
        "vs_floor",
    ];
    head.extend(scale::csv_head(rows));
    head.push("note");
    let mut t = Table::new("", &head);
    for r in rows {
        let mut c = vec![
            r.transport.clone(),
            r.mechanism.clone(),
            r.api.name().to_string(),
            r.wait.label().to_string(),
            r.size.to_string(),
            r.placement.name().to_string(),
            r.layout.name().to_string(),
            status_name(r.status).to_string(),
        ];
        c.extend(raw_figures(r, floor));
        c.extend(scale::csv_cells(rows, r));
        c.push(r.reason.clone().unwrap_or_default());
        t.row(c);
    }
    t
}

/// The status as in the JSON.
fn status_name(s: Status) -> &'static str {
    match s {
        Status::Ok => "ok",
        Status::Failed => "failed",
        Status::NotApplicable => "not_applicable",
        Status::Skipped => "skipped",
        Status::Interrupted => "interrupted",
    }
}

/// The figures of [`flat`], from samples to vs_floor.
fn raw_figures(r: &Row, floor: Option<&FloorReport>) -> Vec<String> {
    let num = |v: Option<f64>| {
        v.filter(|x| x.is_finite())
            .map_or(String::new(), |x| format!("{x:.1}"))
    };
    let l = r.latency.as_ref().filter(|_| r.status == Status::Ok);
    let tp = r.throughput.as_ref().filter(|_| r.status == Status::Ok);
    let per_message = l.is_some_and(|l| l.timing == Timing::PerMessage);
    let s = l.map(|l| &l.summary);
    let cpu = l.map(|l| l.cpu);
    vec![
        l.map_or(String::new(), |l| l.samples.to_string()),
        num(r.p50_ns().filter(|_| per_message)),
        num(s.map(|s| s.p99_ns)),
        num(s.map(|s| s.p999_ns)),
        num(s.map(|s| s.max_ns)),
        num(s.map(|s| s.mean_ns)),
        num(tp.map(|t| t.msgs_per_s)),
        num(tp.map(|t| t.mb_per_s)),
        num(cpu.map(|c| c.client_ns)),
        num(cpu.map(|c| c.server_ns)),
        num(cpu.map(|c| c.total_ns)),
        floor
            .and_then(|f| vs_floor(r, f))
            .map_or(String::new(), |v| format!("{v:.3}")),
    ]
}

/// Title of the `--vs-floor` column (an optional column: 7 wide).
const VS_FLOOR: &str = "x floor";
/// Titles of the `--idle-clients` columns.
pub const RSS_CONN: &str = "RSS/conn";
/// See [`RSS_CONN`].
pub const FDS_CONN: &str = "fds/conn";

/// The `RSS/conn` and `fds/conn` cells of a row: what each idle
/// connection cost the server; `-` without idle clients.
pub fn idle_cells(r: &Row) -> [String; 2] {
    match &r.idle {
        Some(i) => [
            bytes(i.rss_bytes_per_conn),
            format!("{:.2}", i.fds_per_conn),
        ],
        None => ["-".into(), "-".into()],
    }
}

/// A size in bytes, short: "812 B", "4.1 KiB", "1.50 MiB" (negative
/// when memory was given back).
pub fn bytes(v: f64) -> String {
    let a = v.abs();
    if a < 1024.0 {
        format!("{v:.0} B")
    } else if a < 1024.0 * 1024.0 {
        format!("{:.1} KiB", v / 1024.0)
    } else {
        format!("{:.2} MiB", v / (1024.0 * 1024.0))
    }
}

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

/// What the table says, in a few lines: the full method is in `msgbench
/// ipc --help` and docs/methodology.md ("msgbench ipc"). The one-way
/// throughput's lines only with `throughput`.
pub fn legend(rows: &[Row], clock: &Clock, row_secs: f64, throughput: bool) -> String {
    let mut l = vec![format!(
        "Round trips of SIZE bytes each way after a warm-up, a timestamp around each call ({}); every reply checked.\n\
         Average, Minimum, p50, p99, Maximum: per round trip. Msg rate: round trips per second, 1 / Average\n\
         (ipc-bench's \"message rate\"). CPU cli, srv, all: CPU time per round trip of the client thread, the\n\
         server thread, and every thread of both sides (both processes with --layout process, the titles say which).\n\
         Wait: poll spins, hybrid spins then blocks, block sleeps.\n\
         Marks: * lowest p50 of the table, B lowest p50 among block transports. API {}: call_with/reply_with{}.",
        clock.describe(),
        Api::InPlace.label(),
        if rows.iter().any(|r| r.api == Api::Copy) {
            format!("; {}: call/reply, every byte checked (--copy)", Api::Copy.label())
        } else {
            String::new()
        }
    )];
    if throughput {
        l.push(format!(
            "One-way msg/s, MB/s (--throughput): SIZE bytes one way, up to a window of messages in flight, then a\n\
             call that checks their count and checksums; MB = 10^6 bytes. {}",
            windows(rows)
        ));
    }
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
    l.push(
        "The whole method: msgbench ipc --help; docs/methodology.md, \"msgbench ipc\".".to_string(),
    );
    l.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_sizes_are_short() {
        assert_eq!(bytes(812.0), "812 B");
        assert_eq!(bytes(4198.4), "4.1 KiB");
        assert_eq!(bytes(-2048.0), "-2.0 KiB");
        assert_eq!(bytes(1.5 * 1024.0 * 1024.0), "1.50 MiB");
    }

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
            unit: "round_trip".into(),
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
        let r = Row::new("uds", "uds", Api::InPlace, 1, Placement::Same);
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
