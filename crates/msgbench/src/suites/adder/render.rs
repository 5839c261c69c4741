//! The text of `msgbench adder`: one table per placement and transport
//! (pinned first when both ran), the verdict sentence, the legend and the
//! footnotes; and the rows as generic figures.

use super::options::AdderPlan;
use super::past_cores::past_cores;
use super::row::{Measured, Row};
use super::{judge, Mode, Placement};
use crate::devctl::seed;
use crate::measure::hist::fmt_ns;
use crate::measure::placement::{cpu_count, format_list};
use crate::results::envelope::{Better, Figure};
use crate::results::table::{Align, Section, Table};
use crate::results::thousands;
use crate::suites::Results;

/// Column titles.
const HEAD: [&str; 10] = [
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
];

/// The column titles with `--copy`: an API column after Threads; then
/// the seed's rate per thread on each of its systems.
fn head(show_api: bool) -> Vec<String> {
    let mut h: Vec<String> = HEAD.iter().map(|s| s.to_string()).collect();
    if show_api {
        h.insert(2, "API".to_string());
    }
    h.extend(seed::OSES.iter().map(|os| seed::column(os)));
    h
}

/// Every section, in order: notes on the run, the tables, the verdict,
/// the legend and the footnotes the rows call for.
pub(super) fn sections(plan: &AdderPlan, results: &Results<Row>) -> Vec<Section> {
    let mut out = Vec::new();
    if !results.notes.is_empty() {
        out.push(Section::Text(results.notes.join("\n")));
    }
    for &p in &plan.placements {
        for t in &plan.transports {
            let rows: Vec<&Row> = results
                .rows
                .iter()
                .filter(|r| r.placement == p && &r.transport == t)
                .collect();
            if !rows.is_empty() {
                out.push(Section::Table(table(plan, p, t, &rows)));
            }
        }
    }
    out.extend(judge::verdict(&results.rows, cpu_count()).map(Section::Text));
    out.extend(judge::models(&results.rows, cpu_count()).map(Section::Text));
    for &m in &plan.modes {
        out.extend(past_cores(&results.rows, cpu_count(), m).map(Section::Text));
    }
    out.push(Section::Text(legend(&plan.modes)));
    out.extend(footnotes(&results.rows).into_iter().map(Section::Text));
    out
}

/// The title of a table: transport and placement.
fn title(plan: &AdderPlan, p: Placement, transport: &str) -> String {
    match p {
        Placement::Pinned if plan.client_cpus == plan.server_cpus => format!(
            "Transport {transport}, pinned: client k and server k on CPU k of {}",
            format_list(&plan.client_cpus)
        ),
        Placement::Pinned => format!(
            "Transport {transport}, pinned: clients on CPUs {}, servers on CPUs {}",
            list_or_any(&plan.client_cpus),
            list_or_any(&plan.server_cpus)
        ),
        Placement::Unpinned if plan.placements.contains(&Placement::Pinned) => {
            format!("Transport {transport}, unpinned (contrast: the scheduler places every thread)")
        }
        Placement::Unpinned => format!("Transport {transport}, unpinned"),
    }
}

fn list_or_any(cpus: &[usize]) -> String {
    if cpus.is_empty() {
        "any".to_string()
    } else {
        format_list(cpus)
    }
}

/// One table: a row per mode and X (with `--copy`, an in-place and a
/// copying row per X, side by side); failed rows say so under it.
fn table(plan: &AdderPlan, p: Placement, transport: &str, rows: &[&Row]) -> Table {
    let show_api = plan.apis.len() > 1;
    let head = head(show_api);
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let mut t = Table::new(title(plan, p, transport), &head);
    let mut align = vec![Align::Right; head.len()];
    align[0] = Align::Left;
    if show_api {
        align[2] = Align::Left;
    }
    t = t.aligned(&align);
    for (i, r) in rows.iter().enumerate() {
        let first_of_mode = i == 0 || rows[i - 1].mode != r.mode;
        t.row(cells(r, first_of_mode, show_api));
        if let Some(e) = &r.error {
            t.notes.push(format!(
                "{}, {} threads{} FAILED: {e}",
                r.mode.label(),
                r.threads,
                if show_api {
                    format!(", {} API", r.api.key())
                } else {
                    String::new()
                }
            ));
        }
    }
    t
}

/// One row's cells; the mode label only on the first row of each mode;
/// the API (`in-place`, `copy`) after the threads when `show_api`.
pub(super) fn cells(r: &Row, first_of_mode: bool, show_api: bool) -> Vec<String> {
    let mode = if first_of_mode { r.mode.label() } else { "" };
    let mut c = vec![mode.to_string(), r.threads.to_string()];
    if show_api {
        c.push(r.api.key().to_string());
    }
    match &r.measured {
        Some(m) => c.extend(figures(m)),
        None => {
            c.extend(["-", "-", "FAILED"].map(String::from));
            c.extend(std::iter::repeat_n("-".to_string(), 5));
        }
    }
    c.extend(seed_cells(r));
    c
}

/// The seed's rate per thread for the row's mode and thread count on each
/// of its systems; blank where it published none (a pool, past 6
/// threads).
fn seed_cells(r: &Row) -> Vec<String> {
    seed::OSES
        .iter()
        .map(|os| {
            r.mode
                .seed_layout()
                .and_then(|l| seed::rate(os, l, r.threads))
                .map_or_else(String::new, thousands)
        })
        .collect()
}

/// The eight figure cells of a measured row.
fn figures(m: &Measured) -> [String; 8] {
    let (p50, p99) = match &m.latency {
        Some(l) => (fmt_ns(l.p50_ns), fmt_ns(l.p99_ns)),
        None => ("-".into(), "-".into()),
    };
    [
        m.idle_pct.map_or("-".into(), |i| format!("{i:.2}%")),
        m.busy_pct.map_or("n/a".into(), |b| format!("{b:.2}%")),
        format!(
            "{:.0} ms{}{}",
            m.ave_duration_ms,
            if m.cut { "*" } else { "" },
            if m.discarded_runs.is_empty() { "" } else { "+" }
        ),
        thousands(m.rate_per_thread),
        thousands(m.aggregate_rate),
        m.efficiency
            .map_or("-".into(), |e| format!("{:.0}%", e * 100.0)),
        p50,
        p99,
    ]
}

/// The footnote of a row marked `+`.
const RERUN_NOTE: &str =
    "+ The row was run again: its first measured run lasted under a third of --row-secs (the probe that sized\n\
     it ran slower than the row), so it was re-run sized from its own rate, up to 3 times; the table shows the last run.\n\
     The discarded runs, their figures and why, are in the JSON (rows[].discarded_runs).";

/// The footnote of a row marked `*`.
const CUT_NOTE: &str =
    "* The row hit its time limit before its sample count: the rate fell 3x or more\n\
     during the run (threads outnumbering CPUs can flip between fast and slow phases).\n\
     Its figures are over the round trips done; every reply was still checked.";

/// Why unpinned scaling can read above 100%.
const OVER_NOTE: &str =
    "Note: Scaling above 100% means the 1-thread row ran in a slower placement. Unpinned, a lone\n\
     client and server are often woken across CPUs, which on a virtual machine costs tens of\n\
     microseconds; with more threads the scheduler packs pairs onto one CPU. The pinned rows\n\
     (--placement pinned, or --client-cpus/--server-cpus) hold the placement fixed.";

/// What the modes that ran and the columns mean.
fn legend(modes: &[Mode]) -> String {
    let modes: Vec<String> = modes
        .iter()
        .map(|m| format!("{}: {}.", m.label(), m.describe()))
        .collect();
    format!(
        "{}\n\
         Idle and CPU Busy are summed over CPUs ({}% = all busy). Rate/thread = samples / Ave Duration (msgs/s);\n\
         Aggregate = all round trips / wall time of the row; Scaling = Aggregate / (Threads x Rate/thread at 1 thread).\n\
         Latency p50/p99 per round trip from per-request timestamps.\n\
         {}: the seed's rate per thread for the same mode and threads ({}; blank where it has none).",
        modes.join("\n"),
        cpu_count() * 100,
        seed::OSES.map(seed::column).join(", "),
        seed::SOURCE,
    )
}

/// The footnotes the rows call for.
fn footnotes(rows: &[Row]) -> Vec<String> {
    let ms: Vec<&Measured> = rows.iter().filter_map(|r| r.measured.as_ref()).collect();
    let mut out = Vec::new();
    if ms.iter().any(|m| m.cut) {
        out.push(CUT_NOTE.to_string());
    }
    if ms.iter().any(|m| !m.discarded_runs.is_empty()) {
        out.push(RERUN_NOTE.to_string());
    }
    if rows.iter().any(|r| r.efficiency().is_some_and(|e| e > 1.2)) {
        out.push(OVER_NOTE.to_string());
    }
    out
}

/// A row's figures, keyed by transport, mode, threads and placement,
/// plus `api: copy` for the copying rows of `--copy` (so the default
/// in-place rows keep the keys of earlier results; docs/results.md); a
/// failed row has none.
pub(super) fn row_figures(r: &Row) -> Vec<Figure> {
    let Some(m) = &r.measured else {
        return Vec::new();
    };
    let key = vec![
        ("transport", r.transport.clone()),
        ("api", r.api.key().to_string()),
        ("mode", r.mode.key().to_string()),
        ("threads", r.threads.to_string()),
        ("placement", r.placement.key().to_string()),
    ];
    let mut out = vec![
        Figure::new(
            &key,
            "rate_per_thread",
            m.rate_per_thread,
            "msg/s",
            Better::Higher,
        ),
        Figure::new(
            &key,
            "aggregate_rate",
            m.aggregate_rate,
            "msg/s",
            Better::Higher,
        ),
    ];
    if let Some(b) = m.busy_pct {
        out.push(Figure::new(&key, "cpu_busy", b, "%", Better::Neither));
    }
    if let Some(l) = &m.latency {
        out.push(Figure::new(&key, "p50_ns", l.p50_ns, "ns", Better::Lower));
        out.push(Figure::new(&key, "p99_ns", l.p99_ns, "ns", Better::Lower));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devctl::client::ClientRun;

    fn row(error: Option<&str>) -> Row {
        let run = ClientRun {
            histogram: Vec::new(),
            api: crate::devctl::options::Api::InPlace,
            transport: "shm".into(),
            samples: 1000,
            threads: Vec::new(),
            busy: None,
            ave_duration_ns: 1e6,
            rate_per_thread: 1e6,
            aggregate_rate: 1e6,
            latency: None,
        };
        Row {
            transport: "shm".into(),
            placement: Placement::Unpinned,
            mode: Mode::One,
            threads: 1,
            api: crate::devctl::options::Api::InPlace,
            error: error.map(String::from),
            measured: error.is_none().then(|| Measured::new(1, run, None, None)),
        }
    }

    #[test]
    fn unmeasured_busy_is_na_in_the_table_and_null_in_json() {
        let r = row(None);
        let c = cells(&r, true, false);
        assert_eq!(c.len(), head(false).len());
        assert_eq!(c[3], "n/a", "{c:?}");
        // The seed's rates per thread for one process at 1 thread.
        assert_eq!(&c[HEAD.len()..], ["165,300", "264,550"], "{c:?}");
        assert_eq!(&head(false)[HEAD.len()..], ["QNX 8.0 Pi 4", "QNX 7.1 Pi 4"]);
        assert!(!c.contains(&"0.00%".to_string()), "{c:?}");
        let json = serde_json::to_value(&r).expect("serialises");
        assert!(json["busy_pct"].is_null(), "{json}");
        assert!(json["steal_pct"].is_null(), "{json}");
    }

    #[test]
    fn a_failed_row_says_so_in_the_table_and_has_no_figures_in_json() {
        let r = row(Some("thread 0: adder/0 answered 7 to 5: wrong reply"));
        let c = cells(&r, true, false);
        assert_eq!(c.len(), head(false).len());
        assert_eq!(c[4], "FAILED");
        let json = serde_json::to_value(&r).expect("serialises");
        assert!(json["error"]
            .as_str()
            .is_some_and(|e| e.contains("wrong reply")));
        assert!(json.get("rate_per_thread").is_none(), "{json}");
        assert!(row_figures(&r).is_empty());
    }

    #[test]
    fn copy_rows_get_an_api_column_and_json_field() {
        let mut r = row(None);
        r.api = crate::devctl::options::Api::Copy;
        let c = cells(&r, true, true);
        assert_eq!(c.len(), head(true).len());
        assert_eq!(head(true)[2], "API");
        assert_eq!(c[2], "copy", "{c:?}");
        assert_eq!(c[4], "n/a", "{c:?}");
        let json = serde_json::to_value(&r).expect("serialises");
        assert_eq!(json["api"], "copy", "{json}");
        let json = serde_json::to_value(row(None)).expect("serialises");
        assert_eq!(json["api"], "in-place", "{json}");
        let keys: Vec<_> = row_figures(&r)
            .into_iter()
            .map(|f| serde_json::to_value(f).expect("serialises")["key"].clone())
            .collect();
        assert!(keys.iter().all(|k| k["api"] == "copy"), "{keys:?}");
        assert!(row_figures(&row(None))
            .into_iter()
            .all(|f| serde_json::to_value(f).expect("serialises")["key"]["api"] == "in-place"));
    }

    /// A measured row of `mode` at 2 threads, aggregate `rate`.
    fn at_two(mode: Mode, rate: f64) -> Row {
        let mut r = row(None);
        r.mode = mode;
        r.threads = 2;
        if let Some(m) = r.measured.as_mut() {
            m.aggregate_rate = rate;
        }
        r
    }

    #[test]
    fn seed_cells_follow_mode_and_threads_and_are_blank_where_it_has_none() {
        let mut r = at_two(Mode::Multi, 2e6);
        r.threads = 5;
        assert_eq!(&cells(&r, true, false)[HEAD.len()..], ["91,651", "39,164"]);
        r.threads = 7;
        assert_eq!(&cells(&r, true, false)[HEAD.len()..], ["", ""]);
        let r = at_two(Mode::Pool, 2e6);
        assert_eq!(&cells(&r, true, false)[HEAD.len()..], ["", ""]);
    }

    #[test]
    fn a_pool_row_is_labelled_and_keyed_as_a_pool() {
        let r = at_two(Mode::Pool, 2e6);
        assert_eq!(cells(&r, true, false)[0], "Thread pool (one path)");
        let json = serde_json::to_value(&r).expect("serialises");
        assert_eq!(json["mode"], "pool", "{json}");
        let keys: Vec<_> = row_figures(&r)
            .into_iter()
            .map(|f| f.key["mode"].clone())
            .collect();
        assert!(
            !keys.is_empty() && keys.iter().all(|k| k == "pool"),
            "{keys:?}"
        );
    }

    #[test]
    fn compare_pairs_a_pool_row_with_the_same_pool_row() {
        use crate::report::compare::match_rows;
        use crate::report::compare::verdict::DEFAULT_THRESHOLD_PCT;
        let figures = |rows: &[Row]| -> Vec<_> { rows.iter().flat_map(row_figures).collect() };
        let base = figures(&[at_two(Mode::One, 2e6), at_two(Mode::Pool, 1e6)]);
        let new = figures(&[at_two(Mode::Pool, 3e6), at_two(Mode::One, 2e6)]);
        let paired = match_rows(&base, &new, DEFAULT_THRESHOLD_PCT);
        let aggregate: Vec<_> = paired
            .iter()
            .filter(|r| r.metric == "aggregate_rate")
            .map(|r| (r.key["mode"].as_str(), r.base, r.new))
            .collect();
        assert_eq!(
            aggregate,
            [
                ("one", Some(2e6), Some(2e6)),
                ("pool", Some(1e6), Some(3e6))
            ],
            "each mode against itself"
        );
        // A run without pool rows leaves them unpaired, not matched to another mode.
        let new = figures(&[at_two(Mode::One, 2e6)]);
        let paired = match_rows(&base, &new, DEFAULT_THRESHOLD_PCT);
        assert!(paired
            .iter()
            .filter(|r| r.key["mode"] == "pool")
            .all(|r| r.new.is_none()));
    }
}
