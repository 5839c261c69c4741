//! The text of the scale axes: with `--idle-clients`, a table per size
//! and placement of each transport's p50 against the number of idle
//! clients and what an idle connection costs the server; with
//! `--clients`, a table per size and placement of the active-clients rows
//! (aggregate rate, the clients' p50 and p99, fairness); their legend,
//! and their CSV columns.

use super::super::crowd::ActiveRun;
use super::super::row::{Api, Placement, Row, Status};
use super::{idle_cells, title, title_with, FDS_CONN, RSS_CONN};
use crate::measure::hist::fmt_ns;
use crate::results::table::{Align, Table};
use crate::results::thousands;

/// The p50 of each transport (and API) of `rows` (one size and
/// placement, rows with idle clients) at each count of idle clients, and
/// what an idle connection cost at the largest count measured.
pub fn idle_summary(rows: &[Row], cpus: Option<(usize, usize)>) -> Table {
    let (size, placement) = rows
        .first()
        .map_or((0, Placement::Same), |r| (r.size, r.placement));
    let mut counts: Vec<u32> = Vec::new();
    let mut who: Vec<(&str, Api)> = Vec::new();
    for r in rows {
        if let Some(n) = r.idle_clients.filter(|n| !counts.contains(n)) {
            counts.push(n);
        }
        if !who.contains(&(r.transport.as_str(), r.api)) {
            who.push((&r.transport, r.api));
        }
    }
    let api = who.iter().any(|w| w.1 != Api::InPlace);
    let mut head = vec!["Transport".to_string()];
    if api {
        head.push("API".into());
    }
    head.extend(counts.iter().map(|n| format!("p50 @{n}")));
    head.extend([RSS_CONN.to_string(), FDS_CONN.to_string()]);
    let mut align = vec![Align::Right; head.len()];
    align[..if api { 2 } else { 1 }].fill(Align::Left);
    let head: Vec<&str> = head.iter().map(String::as_str).collect();
    let with = ", p50 by idle clients";
    let mut t = Table::new(title_with(size, placement, cpus, with), &head).aligned(&align);
    for (transport, a) in who {
        let mine: Vec<&Row> = rows
            .iter()
            .filter(|r| r.transport == transport && r.api == a)
            .collect();
        let mut c = vec![transport.to_string()];
        if api {
            c.push(a.label().into());
        }
        for n in &counts {
            let r = mine.iter().find(|r| r.idle_clients == Some(*n));
            c.push(r.and_then(|r| r.p50_ns()).map_or("-".into(), fmt_ns));
        }
        let largest = mine
            .iter()
            .filter(|r| r.idle.is_some())
            .max_by_key(|r| r.idle_clients);
        c.extend(largest.map_or_else(|| ["-".into(), "-".into()], |r| idle_cells(r)));
        t.row(c);
    }
    t
}

/// The active-clients rows of one size and placement, in run order: the
/// aggregate rate, the median and worst of the clients' p50 and p99, and
/// fairness; rows without figures with why.
pub fn active(rows: &[Row], cpus: Option<(usize, usize)>) -> Table {
    let (size, placement) = rows
        .first()
        .map_or((0, Placement::Same), |r| (r.size, r.placement));
    let cpus_said = match cpus {
        Some((c, s)) if c == s => format!(": server and every client on CPU {c}"),
        Some((c, s)) => format!(": clients on CPU {c}, server on CPU {s}"),
        None => String::new(),
    };
    let api = rows.iter().any(|r| r.api != Api::InPlace);
    let mut head = vec!["Transport"];
    if api {
        head.push("API");
    }
    let left = head.len() + 1;
    head.extend([
        "Wait",
        "Clients",
        "Msgs/s",
        "p50 med",
        "p50 worst",
        "p99 med",
        "p99 worst",
        "Slow/fast",
        "CV",
    ]);
    let note = rows
        .iter()
        .any(|r| r.status != Status::Ok || r.active.is_none());
    let mut align = vec![Align::Right; head.len()];
    align[..left].fill(Align::Left);
    if note {
        head.push("Note");
        align.push(Align::Left);
    }
    let name = format!(
        "{}, active clients{cpus_said}",
        title(size, placement, None)
    );
    let mut t = Table::new(name, &head).aligned(&align);
    for r in rows {
        let mut c = vec![r.transport.clone()];
        if api {
            c.push(r.api.label().into());
        }
        c.push(r.wait.label().into());
        c.push(r.clients.map_or("-".into(), |n| n.to_string()));
        match r.active.as_ref().filter(|_| r.status == Status::Ok) {
            Some(a) => {
                c.push(thousands(a.msgs_per_s));
                for v in [
                    a.p50_median_ns,
                    a.p50_worst_ns,
                    a.p99_median_ns,
                    a.p99_worst_ns,
                ] {
                    c.push(fmt_ns(v));
                }
                c.push(format!("{:.2}", a.slowest_over_fastest));
                c.push(format!("{:.2}", a.rate_cv));
                if note {
                    c.push(String::new());
                }
            }
            None => {
                c.resize(head.len() - 1, "-".into());
                c.push(r.note());
            }
        }
        t.row(c);
    }
    t.notes = super::notes::warnings(rows);
    t
}

/// What the scale columns mean, for the axes the rows have.
pub fn legend(rows: &[Row]) -> Option<String> {
    let mut l = Vec::new();
    if rows.iter().any(|r| r.idle_clients.is_some()) {
        l.push(
            "Idle clients (--idle-clients N): N other clients stay connected to the row's server while it is measured,\n\
             held by child processes (each connection opened with Connection::open and called once, its reply checked,\n\
             then idle). RSS/conn, fds/conn: what one idle connection costs the server, a thread of this process: its\n\
             resident memory and open descriptors after they all connected, less before, divided by N."
                .to_string(),
        );
    }
    if rows.iter().any(|r| r.clients.is_some()) {
        l.push(
            "Active clients (--clients N): N client processes on one server, pinned as the placement says (same: server\n\
             and clients on one CPU; cross: server on one, clients on the other), released together, each making checked\n\
             round trips (its own sequence numbers) for a row's time, timed with CLOCK_MONOTONIC. Msgs/s: their rates\n\
             summed. p50/p99 med, worst: the median and the worst of the clients' own p50 and p99. Slow/fast: the\n\
             slowest client's rate over the fastest's (1 = even); CV: the coefficient of variation of their rates (0 = even)."
                .to_string(),
        );
    }
    (!l.is_empty()).then(|| l.join("\n"))
}

/// The CSV columns of the scale axes the rows have.
pub fn csv_head(rows: &[Row]) -> Vec<&'static str> {
    let mut h = Vec::new();
    if rows.iter().any(|r| r.idle_clients.is_some()) {
        h.extend(["idle_clients", "rss_bytes_per_conn", "fds_per_conn"]);
    }
    if rows.iter().any(|r| r.clients.is_some()) {
        h.extend([
            "clients",
            "aggregate_msgs_per_s",
            "client_p50_median_ns",
            "client_p50_worst_ns",
            "client_p99_median_ns",
            "client_p99_worst_ns",
            "slowest_over_fastest",
            "rate_cv",
        ]);
    }
    h
}

/// Row `r`'s cells under [`csv_head`] of `rows`, raw units, empty where
/// not measured.
pub fn csv_cells(rows: &[Row], r: &Row) -> Vec<String> {
    let num = |v: Option<f64>| {
        v.filter(|x| x.is_finite())
            .map_or(String::new(), |x| format!("{x:.3}"))
    };
    let count = |v: Option<u32>| v.map_or(String::new(), |n| n.to_string());
    let mut c = Vec::new();
    if rows.iter().any(|r| r.idle_clients.is_some()) {
        let i = r.idle.as_ref();
        c.push(count(r.idle_clients));
        c.push(num(i.map(|i| i.rss_bytes_per_conn)));
        c.push(num(i.map(|i| i.fds_per_conn)));
    }
    if rows.iter().any(|r| r.clients.is_some()) {
        let a = r.active.as_ref().filter(|_| r.status == Status::Ok);
        c.push(count(r.clients));
        let fields: [fn(&ActiveRun) -> f64; 7] = [
            |a| a.msgs_per_s,
            |a| a.p50_median_ns,
            |a| a.p50_worst_ns,
            |a| a.p99_median_ns,
            |a| a.p99_worst_ns,
            |a| a.slowest_over_fastest,
            |a| a.rate_cv,
        ];
        for f in fields {
            c.push(num(a.map(f)));
        }
    }
    c
}
