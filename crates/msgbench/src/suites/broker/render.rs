//! The printed results of `msgbench broker`: the rows, the split of each
//! call's time, what the columns mean, and the answer; and the generic
//! figures for `compare` and `report`.

use super::options::{BrokerPlan, Via};
use super::row::BrokerRow;
use crate::measure::hist::fmt_ns;
use crate::results::envelope::{Better, Figure};
use crate::results::table::{Align, Section, Table};

/// `1.2M`, `45.6k`, `789`.
fn rate(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.2}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

fn opt_ns(v: Option<f64>) -> String {
    v.map_or("-".into(), fmt_ns)
}

/// The p50 of the measured row `via`/`transport` at `ints`.
fn p50(rows: &[BrokerRow], via: Via, transport: Option<&str>, ints: u32) -> Option<f64> {
    rows.iter()
        .find(|r| {
            r.via == via
                && r.transport.as_deref() == transport
                && r.ints == ints
                && r.fault.is_none()
                && r.measured()
        })
        .map(|r| r.latency.p50_ns)
}

/// The p50 of peer-to-peer D-Bus at `r`'s size on `r`'s library.
fn p2p_of(rows: &[BrokerRow], r: &BrokerRow) -> Option<f64> {
    rows.iter()
        .find(|x| {
            x.via == Via::DbusP2p && x.dbus_lib == r.dbus_lib && x.ints == r.ints && x.measured()
        })
        .map(|x| x.latency.p50_ns)
}

/// The transport a D-Bus row's legs are taken from: Unix sockets, what
/// D-Bus runs over.
const DBUS_LEG: &str = "uds";

/// The direct call a row's arrangement is compared with: the same size
/// over the same transport (D-Bus rows: over uds, what D-Bus runs on).
fn direct(rows: &[BrokerRow], r: &BrokerRow) -> Option<f64> {
    let t = if r.via.on_msgpass() {
        r.transport.as_deref()
    } else {
        Some(DBUS_LEG)
    };
    p50(rows, Via::Direct, t, r.ints)
}

/// The results table.
pub fn table(rows: &[BrokerRow]) -> Table {
    use Align::{Left, Right};
    let mut t = Table::new(
        "",
        &[
            "Ints",
            "Via",
            "p50",
            "mean",
            "p99",
            "p99.9",
            "Calls/s",
            "CPU/call",
            "client",
            "middle",
            "service",
            "vs direct",
            "QNX 6.4 BeagleBoard",
        ],
    )
    .aligned(&[
        Right, Left, Right, Right, Right, Right, Right, Right, Right, Right, Right, Right, Left,
    ]);
    for r in rows {
        let reference = r
            .reference
            .as_ref()
            .map_or("-".into(), |q| format!("{} us ({})", q.us, q.label));
        if let Some(why) = r.skipped.as_ref().or(r.error.as_ref()) {
            let what = if r.skipped.is_some() {
                "skipped"
            } else {
                "FAILED"
            };
            let mut cells = vec![r.ints.to_string(), r.label(), format!("{what}: {why}")];
            cells.extend(std::iter::repeat_n(String::new(), 9));
            cells.push(reference);
            t.row(cells);
            continue;
        }
        let l = &r.latency;
        let c = &r.cpu_ns_per_call;
        let direct = p50(
            rows,
            Via::Direct,
            r.transport.as_deref().or(Some(DBUS_LEG)),
            r.ints,
        );
        t.row(vec![
            r.ints.to_string(),
            r.label(),
            fmt_ns(l.p50_ns),
            fmt_ns(l.mean_ns),
            fmt_ns(l.p99_ns),
            fmt_ns(l.p999_ns),
            rate(r.calls_per_s),
            fmt_ns(c.total()),
            fmt_ns(c.client),
            if r.via == Via::Direct || r.via == Via::DbusP2p {
                "-".into()
            } else {
                fmt_ns(c.middle)
            },
            fmt_ns(c.service),
            direct.map_or("-".into(), |d| format!("{:.2}x", l.p50_ns / d)),
            reference,
        ]);
    }
    t
}

/// Where each call's time goes (p50s): one direct call (a transport
/// round trip with the client's and the service's own work), the
/// broker's routing and validation, the library's marshalling, the
/// daemon's share, and what is left.
pub fn split(rows: &[BrokerRow]) -> Table {
    use Align::{Left, Right};
    let mut t = Table::new(
        "Where a call's time goes (p50)",
        &[
            "Ints",
            "Via",
            "p50",
            "Direct call",
            "Routing",
            "of which validation",
            "(De)serialisation",
            "Daemon's share",
            "Rest",
        ],
    )
    .aligned(&[Right, Left, Right, Right, Right, Right, Right, Right, Right]);
    for r in rows.iter().filter(|r| r.measured()) {
        let p = r.latency.p50_ns;
        let direct = direct(rows, r);
        let daemon = match r.via {
            Via::DbusDaemon | Via::DbusBroker => p2p_of(rows, r).map(|p2p| p - p2p),
            _ => None,
        };
        let rest = direct.map(|d| {
            p - d
                - r.routing_ns.unwrap_or(0.0)
                - r.marshal_ns.unwrap_or(0.0)
                - daemon.unwrap_or(0.0)
        });
        t.row(vec![
            r.ints.to_string(),
            r.label(),
            fmt_ns(p),
            opt_ns(direct),
            opt_ns(r.routing_ns),
            opt_ns(r.validate_ns),
            opt_ns(r.marshal_ns),
            opt_ns(daemon),
            opt_ns(rest),
        ]);
    }
    t
}

/// The fault runs beside their twins: the hung client's timeouts, the
/// other clients' latency with and without the fault.
pub fn faults(rows: &[BrokerRow]) -> Option<Table> {
    use Align::{Left, Right};
    let hung: Vec<&BrokerRow> = rows
        .iter()
        .filter(|r| r.fault.is_some() && r.measured() && r.others_latency.is_some())
        .collect();
    if hung.is_empty() {
        return None;
    }
    let mut t = Table::new(
        "Beside a hung service (--inject-fault): the other clients",
        &[
            "Ints",
            "Via",
            "Call timeout",
            "Timed out",
            "p50",
            "p99",
            "p99 without",
            "p99 ratio",
            "Most in flight",
        ],
    )
    .aligned(&[Right, Left, Right, Right, Right, Right, Right, Right, Right]);
    for r in hung {
        let Some(o) = &r.others_latency else { continue };
        let calm = rows
            .iter()
            .find(|t| {
                t.fault.is_none()
                    && t.via == r.via
                    && t.ints == r.ints
                    && t.transport == r.transport
                    && t.measured()
            })
            .and_then(|t| t.others_latency.as_ref());
        t.row(vec![
            r.ints.to_string(),
            r.label(),
            r.call_timeout_ms
                .map_or("-".into(), |ms| format!("{ms} ms")),
            r.timeouts.to_string(),
            fmt_ns(o.p50_ns),
            fmt_ns(o.p99_ns),
            opt_ns(calm.map(|c| c.p99_ns)),
            calm.map_or("-".into(), |c| format!("{:.2}x", o.p99_ns / c.p99_ns)),
            r.most_in_flight.map_or("-".into(), |n| n.to_string()),
        ]);
    }
    Some(t)
}

/// What the columns mean.
pub fn legend(plan: &BrokerPlan) -> String {
    format!(
        "GetInteger(numInts) returns numInts 4-byte integers; every reply's serial and integers are checked. \
{} client(s) at once, each calling its own service; every process on CPU(s) {} (--cpus). p50/p99/p99.9: per call, the median of {} repeat(s) by p50; mean: that repeat's average (the study gives averages). \
CPU/call: every process's CPU clock (client, middle = the broker or daemon, service) over the calls, divided by the calls. \
vs direct: p50 over a direct call on the same transport (D-Bus rows: over uds). \
Direct call: a direct call's p50 at the same size over the same transport (D-Bus rows: uds): one transport round trip with the client's and the service's own work. \
Routing: the msgbench broker's own time per call, timestamped inside it (the sends are not in it). \
(De)serialisation: the row's D-Bus library marshalling and parsing the call's request and reply, timed alone ({}). \
Daemon's share: the row's p50 minus peer-to-peer D-Bus's on the same library. \
Rest: p50 minus all of those: for the broker, its second leg and waking a third process; for D-Bus, the library's own dispatch. \
QNX column: the D-Bus study's figures (libdbus on QNX 6.4, BeagleBoard; docs/methodology.md, \"The D-Bus broker study\"), per call or round trip.{}",
        plan.clients,
        crate::measure::placement::format_list(&plan.cpus),
        plan.repeats,
        marshal_methods(plan),
        match plan.fault {
            Some(_) => " Beside a hung service: with --inject-fault hang-service each broker cell runs twice, and in the second service 0 stops answering after a few timed calls; \
Timed out: its client's calls the broker answered ETIMEDOUT; p50/p99: the other clients' calls (one caller fewer competes for the CPUs than in the run without the fault); p99 without: theirs in the run without the fault.",
            None => "",
        }
    )
}

/// What each library's marshalling figure times.
fn marshal_methods(plan: &BrokerPlan) -> String {
    let each: Vec<String> = plan
        .dbus_libs
        .iter()
        .map(|l| format!("{}: {}", l.name(), l.marshal_method()))
        .collect();
    each.join("; ")
}

/// All sections.
pub fn sections(plan: &BrokerPlan, rows: &[BrokerRow], notes: &[String]) -> Vec<Section> {
    let mut out: Vec<Section> = plan
        .components
        .iter()
        .map(|c| Section::Text(c.line()))
        .collect();
    out.extend([Section::Table(table(rows)), Section::Table(split(rows))]);
    out.extend(
        super::judge::sizes(rows)
            .into_iter()
            .filter_map(|n| super::arithmetic::table(rows, n))
            .map(Section::Table),
    );
    out.extend(faults(rows).map(Section::Table));
    out.push(Section::Text(legend(plan)));
    out.push(Section::Text(notes.join("\n")));
    out
}

/// The generic figures: p50, p99 (with the repeats' p50s), calls/s and
/// CPU per call of every measured row.
pub fn figures(rows: &[BrokerRow]) -> Vec<Figure> {
    let mut out = Vec::new();
    for r in rows.iter().filter(|r| r.measured()) {
        let mut k = vec![
            ("via", r.via.name().to_string()),
            (
                "transport",
                r.transport.clone().unwrap_or_else(|| "-".into()),
            ),
            ("ints", r.ints.to_string()),
            ("clients", r.clients.to_string()),
        ];
        if let Some(f) = r.fault {
            k.push(("fault", f.name().to_string()));
        }
        if let Some(lib) = r.dbus_lib {
            k.push(("dbus_lib", lib.name().to_string()));
        }
        out.push(
            Figure::new(&k, "p50_ns", r.latency.p50_ns, "ns", Better::Lower)
                .with_repeats(r.p50_repeats_ns.clone()),
        );
        out.push(Figure::new(
            &k,
            "p99_ns",
            r.latency.p99_ns,
            "ns",
            Better::Lower,
        ));
        out.push(
            Figure::new(&k, "calls_per_s", r.calls_per_s, "calls/s", Better::Higher)
                .with_repeats(r.calls_per_s_repeats.clone()),
        );
        out.push(Figure::new(
            &k,
            "cpu_ns_per_call",
            r.cpu_ns_per_call.total(),
            "ns",
            Better::Lower,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mean_stands_beside_the_p50() {
        let t = table(&[
            BrokerRow::measured_at(Via::Direct, "uds", 10.0, 12.5),
            BrokerRow::measured_at(Via::Broker, "uds", 25.0, 31.0),
        ]);
        let at = |name: &str| t.head.iter().position(|h| h == name).expect(name);
        assert_eq!(at("mean"), at("p50") + 1);
        let means: Vec<&str> = t.rows.iter().map(|r| r[at("mean")].as_str()).collect();
        assert_eq!(means, ["12.5us", "31.0us"]);
        let vs: Vec<&str> = t.rows.iter().map(|r| r[at("vs direct")].as_str()).collect();
        assert_eq!(vs, ["1.00x", "2.50x"], "still judged by the p50");
    }
}
