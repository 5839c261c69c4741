//! The study's question answered from the rows: per D-Bus library, how a
//! call through dbus-daemon splits into the daemon, the library and the
//! transport ([`dbus::judge`]); what the daemon adds per call, how much
//! of it validation explains, and how the header-routing broker compares
//! with direct calls and with the daemon (on the study's library, libdbus,
//! when it was measured); and the two goals judged. Every sentence is computed from
//! the figures, and each judgement can come out either way (the tests
//! feed it both).

use super::dbus::{self, DbusLib};
use super::options::Via;
use super::row::BrokerRow;
use crate::measure::hist::fmt_ns;

/// Most the routing broker may cost over a direct call, as a ratio
/// (two legs instead of one, plus routing).
pub const BROKER_VS_DIRECT: f64 = 2.2;
/// Least the routing broker must beat dbus-daemon by.
pub const BROKER_VS_DAEMON: f64 = 5.0;
/// Most the other clients' p99 may grow beside a hung service, as a ratio
/// to the run without the fault.
pub const HUNG_P99: f64 = 1.2;

/// The figures of one size the answer is made of, the D-Bus ones on
/// one library.
struct At<'a> {
    rows: &'a [BrokerRow],
    ints: u32,
    lib: Option<DbusLib>,
}

impl<'a> At<'a> {
    /// At `ints`, on the first library in report order (the study's,
    /// libdbus, first) with both its dbus-daemon and peer-to-peer rows.
    fn new(rows: &'a [BrokerRow], ints: u32) -> At<'a> {
        let both = |lib: DbusLib| {
            [Via::DbusDaemon, Via::DbusP2p].iter().all(|&v| {
                rows.iter().any(|r| {
                    r.via == v && r.dbus_lib == Some(lib) && r.ints == ints && r.measured()
                })
            })
        };
        At {
            rows,
            ints,
            lib: DbusLib::ALL.into_iter().find(|&l| both(l)),
        }
    }

    fn row(&self, via: Via, transport: Option<&str>) -> Option<&BrokerRow> {
        self.rows.iter().find(|r| {
            r.via == via
                && r.ints == self.ints
                && r.transport.as_deref() == transport
                && r.fault.is_none()
                && (via.on_msgpass() || r.dbus_lib == self.lib)
                && r.measured()
        })
    }

    /// The library's name, `-` without one.
    fn lib_name(&self) -> &'static str {
        self.lib.map_or("-", DbusLib::name)
    }

    fn p50(&self, via: Via, transport: Option<&str>) -> Option<f64> {
        self.row(via, transport).map(|r| r.latency.p50_ns)
    }
}

/// The transport the answer uses for the msgbench broker: uds (D-Bus's
/// own transport) when it was measured, else the first one that was.
fn transport(rows: &[BrokerRow], ints: u32) -> Option<String> {
    let measured: Vec<&str> = rows
        .iter()
        .filter(|r| r.via == Via::Broker && r.ints == ints && r.fault.is_none() && r.measured())
        .filter_map(|r| r.transport.as_deref())
        .collect();
    measured
        .iter()
        .find(|t| **t == "uds")
        .or(measured.first())
        .map(|t| t.to_string())
}

/// The sizes (`GetInteger(N)`) of `rows`, each once, in run order.
pub fn sizes(rows: &[BrokerRow]) -> Vec<u32> {
    first_seen(rows.iter().map(|r| r.ints))
}

/// `items` without repeats, in the order each first came (rows of one
/// size need not be adjacent).
fn first_seen<T: PartialEq>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// The sentences under the table: at each size, the split per D-Bus
/// library and the brokers' answer; then the goals.
pub fn judge(rows: &[BrokerRow]) -> Vec<String> {
    let mut out = Vec::new();
    for n in sizes(rows) {
        out.extend(dbus::judge::sentences(rows, n));
        out.extend(answer(rows, n));
        out.extend(super::arithmetic::sentence(rows, n));
    }
    out.extend(goals(rows));
    out.extend(rows.iter().filter_map(|r| beside_a_hung_service(rows, r)));
    out
}

/// What a fault row shows: the hung client's timeouts, and the other
/// clients' p99 against the same cell without the fault, judged against
/// [`HUNG_P99`].
pub fn beside_a_hung_service(rows: &[BrokerRow], r: &BrokerRow) -> Option<String> {
    r.fault?;
    if !r.measured() {
        return None;
    }
    let twin = rows.iter().find(|t| {
        t.fault.is_none()
            && t.via == r.via
            && t.ints == r.ints
            && t.transport == r.transport
            && t.measured()
    })?;
    let (hung, calm) = (r.others_latency.as_ref()?, twin.others_latency.as_ref()?);
    let timeout = r
        .call_timeout_ms
        .map_or("-".into(), |ms| format!("{ms} ms"));
    let mut s = format!(
        "{} GetInteger({}): service 0 stopped answering; its client's calls were answered ETIMEDOUT by the broker {} time(s), each after the call timeout ({timeout})",
        r.label(),
        r.ints,
        r.timeouts
    );
    if r.timeouts == 0 {
        s += " (none: the measurement was shorter than the call timeout, so the fault is not shown; lengthen --seconds or shorten --call-timeout)";
    }
    let x = hung.p99_ns / calm.p99_ns;
    s += &format!(
        ". The other {} client(s) carried on: p99 {} beside the hung service against {} without it. Goal, within {HUNG_P99}x: {}: {x:.2}x.",
        r.clients - 1,
        fmt_ns(hung.p99_ns),
        fmt_ns(calm.p99_ns),
        holds(x <= HUNG_P99)
    );
    Some(s)
}

/// The study's question at `GetInteger(ints)` for the brokers, when the
/// daemon and peer-to-peer rows of a library were both measured (the
/// study's library first).
pub fn answer(rows: &[BrokerRow], ints: u32) -> Option<String> {
    let at = At::new(rows, ints);
    let daemon = at.p50(Via::DbusDaemon, None)?;
    let p2p = at.p50(Via::DbusP2p, None)?;
    let added = daemon - p2p;
    let t = transport(rows, ints);
    let t = t.as_deref();
    let validation = at.row(Via::BrokerValidate, t).and_then(|r| r.validate_ns);
    // One sentence first (the answer); the figures behind it after.
    let mut s = format!(
        "GetInteger({ints}), {}: dbus-daemon adds {} per call over peer-to-peer D-Bus ({} against {})",
        at.lib_name(),
        fmt_ns(added),
        fmt_ns(daemon),
        fmt_ns(p2p)
    );
    if let (Some(v), true) = (validation, added > 0.0) {
        s += &format!(
            ", {:.0}% of it explained by validating the bodies",
            100.0 * v / added
        );
    }
    s.push('.');
    if let Some(v) = validation {
        s += &format!(
            " Validating both bodies in the D-Bus format takes about {} (measured in our broker).",
            fmt_ns(v)
        );
    }
    if let (Some(b), Some(t)) = (at.p50(Via::Broker, t), t) {
        s += &format!(
            " The header-routing broker over {t} takes {}, {:.1}x faster than dbus-daemon.",
            fmt_ns(b),
            daemon / b
        );
    }
    if let Some(v) = validation {
        s += &format!(" {}", share_verdict(v, added));
    }
    Some(s)
}

/// How much of what the daemon adds validation explains.
fn share_verdict(validation: f64, added: f64) -> String {
    if added <= 0.0 {
        return "The daemon added nothing measurable here, so there is nothing for validation to explain.".into();
    }
    let share = validation / added;
    let pct = format!("{:.0}%", 100.0 * share);
    if share > 1.0 {
        format!("So validating as our broker does takes longer ({pct}) than all the daemon adds: the daemon checks the bodies more cheaply, and validation cannot be told apart from the rest of its work here.")
    } else if share >= 0.5 {
        format!("So validation is most of what the daemon adds ({pct}).")
    } else if share >= 0.2 {
        format!("So validation is a real part of what the daemon adds ({pct}), but not most of it.")
    } else {
        format!("So the daemon's time is not validation ({pct} of it): it is the second leg and the daemon's own per-message work.")
    }
}

/// The two goals at `GetInteger(1)`, per transport: the broker within
/// [`BROKER_VS_DIRECT`] of direct, and [`BROKER_VS_DAEMON`] faster than
/// dbus-daemon (on the study's library when it was measured).
pub fn goals(rows: &[BrokerRow]) -> Vec<String> {
    let at = At::new(rows, 1);
    let mut out = Vec::new();
    let transports = first_seen(
        rows.iter()
            .filter(|r| r.via == Via::Broker && r.ints == 1 && r.fault.is_none() && r.measured())
            .filter_map(|r| r.transport.as_deref()),
    );
    for t in transports {
        let broker = at.p50(Via::Broker, Some(t)).expect("filtered on it");
        if let Some(direct) = at.p50(Via::Direct, Some(t)) {
            let x = broker / direct;
            out.push(format!(
                "Goal, broker within {BROKER_VS_DIRECT}x of direct over {t} (GetInteger(1)): {}: {x:.2}x ({} against {}).",
                holds(x <= BROKER_VS_DIRECT),
                fmt_ns(broker),
                fmt_ns(direct)
            ));
        }
        if let Some(daemon) = at.p50(Via::DbusDaemon, None) {
            let x = daemon / broker;
            out.push(format!(
                "Goal, broker over {t} at least {BROKER_VS_DAEMON}x faster than dbus-daemon (GetInteger(1), {}): {}: {x:.1}x ({} against {}).",
                at.lib_name(),
                holds(x >= BROKER_VS_DAEMON),
                fmt_ns(broker),
                fmt_ns(daemon)
            ));
        }
    }
    out
}

fn holds(yes: bool) -> &'static str {
    if yes {
        "met"
    } else {
        "NOT met"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(via: Via, t: Option<&str>, ints: u32, p50_us: f64) -> BrokerRow {
        let mut r = BrokerRow::empty(via, t.map(String::from), ints, 1);
        if !via.on_msgpass() {
            r.dbus_lib = Some(DbusLib::Libdbus);
        }
        r.calls = 1000;
        r.latency.p50_ns = p50_us * 1000.0;
        r
    }

    fn rows(daemon_us: f64, validate_us: f64, broker_us: f64) -> Vec<BrokerRow> {
        let mut v = row(Via::BrokerValidate, Some("uds"), 1, broker_us + validate_us);
        v.validate_ns = Some(validate_us * 1000.0);
        vec![
            row(Via::Direct, Some("uds"), 1, 8.0),
            row(Via::Broker, Some("uds"), 1, broker_us),
            v,
            row(Via::DbusP2p, None, 1, 25.0),
            row(Via::DbusDaemon, None, 1, daemon_us),
            row(Via::DbusBroker, None, 1, 40.0),
        ]
    }

    #[test]
    fn the_answer_says_validation_is_a_small_part_when_it_is() {
        let a = answer(&rows(50.0, 1.0, 15.0), 1).expect("figures there");
        assert!(
            a.contains("GetInteger(1), libdbus: dbus-daemon adds 25.0us per call"),
            "{a}"
        );
        assert!(a.contains("about 1.00us"), "{a}");
        assert!(a.contains("3.3x faster than dbus-daemon"), "{a}");
        assert!(a.contains("is not validation (4%"), "{a}");
    }

    #[test]
    fn the_answer_says_validation_is_most_of_it_when_it_is() {
        let a = answer(&rows(35.0, 8.0, 15.0), 1).expect("figures there");
        assert!(
            a.contains("validation is most of what the daemon adds (80%)"),
            "{a}"
        );
    }

    #[test]
    fn validation_dearer_than_the_daemon_is_said_so() {
        let a = answer(&rows(40.0, 20.0, 15.0), 1).expect("figures there");
        assert!(
            a.contains("takes longer (133%) than all the daemon adds"),
            "{a}"
        );
    }

    #[test]
    fn no_answer_without_the_daemon_and_p2p_rows() {
        let mut r = rows(50.0, 1.0, 15.0);
        r.retain(|r| r.via != Via::DbusP2p);
        assert!(answer(&r, 1).is_none());
    }

    #[test]
    fn the_answer_keeps_to_one_library_the_studys_first() {
        let mut r = rows(50.0, 1.0, 15.0);
        // zbus's rows, and a libdbus peer-to-peer row missing: the answer
        // is zbus's alone, not libdbus's daemon against zbus's p2p.
        for x in r.iter_mut().filter(|x| !x.via.on_msgpass()) {
            x.dbus_lib = Some(DbusLib::Zbus);
            x.latency.p50_ns *= 2.0;
        }
        r.push(row(Via::DbusDaemon, None, 1, 50.0));
        let a = answer(&r, 1).expect("zbus's figures");
        assert!(
            a.contains("zbus: dbus-daemon adds 50.0us per call over peer-to-peer D-Bus (100us against 50.0us)"),
            "{a}"
        );
        r.push(row(Via::DbusP2p, None, 1, 30.0));
        let a = answer(&r, 1).expect("libdbus's figures");
        assert!(a.contains("libdbus: dbus-daemon adds 20.0us"), "{a}");
        assert!(judge(&r)
            .iter()
            .any(|s| s.starts_with("GetInteger(1), libdbus (the study's library)")));
    }

    #[test]
    fn the_goals_come_out_either_way() {
        let good = goals(&rows(100.0, 1.0, 15.0));
        assert!(
            good[0].contains("within 2.2x of direct over uds (GetInteger(1)): met: 1.88x"),
            "{good:?}"
        );
        assert!(
            good[1].contains("faster than dbus-daemon (GetInteger(1), libdbus): met: 6.7x"),
            "{good:?}"
        );
        let bad = goals(&rows(50.0, 1.0, 20.0));
        assert!(bad[0].contains("NOT met: 2.50x"), "{bad:?}");
        assert!(bad[1].contains("NOT met: 2.5x"), "{bad:?}");
    }

    /// A broker row and its twin with `hang-service`, the others' p99s
    /// given.
    fn with_fault(calm_p99_us: f64, hung_p99_us: f64, timeouts: u64) -> Vec<BrokerRow> {
        let mut calm = row(Via::Broker, Some("uds"), 1, 15.0);
        calm.clients = 3;
        calm.others_latency = Some(crate::measure::hist::LatencySummary {
            p99_ns: calm_p99_us * 1000.0,
            ..Default::default()
        });
        let mut hung = calm.clone();
        hung.fault = Some(crate::suites::broker::options::Fault::HangService);
        hung.call_timeout_ms = Some(1000);
        hung.timeouts = timeouts;
        hung.others_latency = Some(crate::measure::hist::LatencySummary {
            p99_ns: hung_p99_us * 1000.0,
            ..Default::default()
        });
        vec![calm, hung]
    }

    #[test]
    fn the_hung_service_verdict_comes_out_either_way() {
        let good = with_fault(20.0, 22.0, 2);
        let s = beside_a_hung_service(&good, &good[1]).expect("a fault row");
        assert!(s.contains("broker/uds + hang-service GetInteger(1)"), "{s}");
        assert!(s.contains("ETIMEDOUT by the broker 2 time(s)"), "{s}");
        assert!(s.contains("The other 2 client(s)"), "{s}");
        assert!(s.contains("within 1.2x: met: 1.10x"), "{s}");
        let bad = with_fault(20.0, 30.0, 0);
        let s = beside_a_hung_service(&bad, &bad[1]).expect("a fault row");
        assert!(s.contains("NOT met: 1.50x"), "{s}");
        assert!(s.contains("the fault is not shown"), "{s}");
        assert!(beside_a_hung_service(&bad, &bad[0]).is_none());
        assert_eq!(goals(&bad).len(), 0, "a fault row is no goal's broker row");
    }

    #[test]
    fn each_size_is_judged_once_when_its_rows_are_apart() {
        // Sizes alternate in run order (each arrangement at 1, then 256).
        let mut r = Vec::new();
        for via in [Via::Direct, Via::Broker] {
            for n in [1, 256] {
                r.push(row(via, Some("uds"), n, 10.0));
            }
        }
        assert_eq!(sizes(&r), [1, 256]);
        assert_eq!(
            first_seen(["uds", "shm", "uds"].into_iter()),
            ["uds", "shm"]
        );
    }
}
