//! The study's question per D-Bus library: of a call through dbus-daemon
//! at `GetInteger(N)`, how much is the daemon (dbus-daemon minus peer to
//! peer, same library), the library (peer to peer minus a direct uds
//! call: its marshalling, timed alone, and its dispatch, the rest) and
//! the transport (a direct uds call); how much of the daemon's share
//! validation explains (measured in our broker); and how dbus-broker
//! compares. The study's own library, libdbus, comes first, with the
//! study's figure beside it. Every sentence is computed from the rows and
//! its verdict can come out either way (the tests feed it both).

use super::DbusLib;
use crate::measure::hist::fmt_ns;
use crate::suites::broker::options::Via;
use crate::suites::broker::row::{BrokerRow, Reference};

/// The transport the direct call is taken over: Unix sockets, what
/// D-Bus runs on.
const LEG: &str = "uds";

/// The figures of one library at one size.
#[derive(Debug, Clone, PartialEq)]
pub struct LibSplit {
    /// The library.
    pub lib: DbusLib,
    /// numInts.
    pub ints: u32,
    /// p50 through dbus-daemon, ns.
    pub daemon: f64,
    /// p50 peer to peer, ns.
    pub p2p: f64,
    /// p50 of a direct call over uds, ns, if measured.
    pub direct: Option<f64>,
    /// The library's marshalling and parsing of the call and its reply,
    /// timed alone, ns.
    pub marshal: Option<f64>,
    /// Validating both bodies, in our broker, ns.
    pub validation: Option<f64>,
    /// p50 through dbus-broker, ns, if measured.
    pub broker: Option<f64>,
    /// The study's figure for the dbus-daemon call.
    pub reference: Option<Reference>,
}

/// The largest part of a call through dbus-daemon.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The daemon's share.
    Daemon,
    /// The library's marshalling and dispatch.
    Library,
    /// A direct round trip over the transport.
    Transport,
}

/// The measured row of `via` at `ints` (and `lib`, `transport`).
fn row<'a>(
    rows: &'a [BrokerRow],
    via: Via,
    lib: Option<DbusLib>,
    transport: Option<&str>,
    ints: u32,
) -> Option<&'a BrokerRow> {
    rows.iter().find(|r| {
        r.via == via
            && r.dbus_lib == lib
            && r.transport.as_deref() == transport
            && r.ints == ints
            && r.measured()
    })
}

impl LibSplit {
    /// The figures of `lib` at `ints`, when its dbus-daemon and
    /// peer-to-peer rows were both measured.
    pub fn of(rows: &[BrokerRow], lib: DbusLib, ints: u32) -> Option<LibSplit> {
        let daemon = row(rows, Via::DbusDaemon, Some(lib), None, ints)?;
        let p2p = row(rows, Via::DbusP2p, Some(lib), None, ints)?;
        let p50 = |r: &BrokerRow| r.latency.p50_ns;
        Some(LibSplit {
            lib,
            ints,
            daemon: p50(daemon),
            p2p: p50(p2p),
            direct: row(rows, Via::Direct, None, Some(LEG), ints).map(p50),
            marshal: p2p.marshal_ns,
            validation: row(rows, Via::BrokerValidate, None, Some(LEG), ints)
                .and_then(|r| r.validate_ns),
            broker: row(rows, Via::DbusBroker, Some(lib), None, ints).map(p50),
            reference: daemon.reference.clone(),
        })
    }

    /// What dbus-daemon adds over peer to peer.
    pub fn daemon_share(&self) -> f64 {
        self.daemon - self.p2p
    }

    /// Peer to peer minus a direct call: marshalling and dispatch.
    pub fn library(&self) -> Option<f64> {
        self.direct.map(|d| self.p2p - d)
    }

    /// The library's own dispatch: its part less marshalling.
    pub fn dispatch(&self) -> Option<f64> {
        Some(self.library()? - self.marshal?)
    }

    /// The largest of the daemon, the library and the transport, when a
    /// direct call was measured.
    pub fn largest(&self) -> Option<Part> {
        let parts = [
            (Part::Daemon, self.daemon_share()),
            (Part::Library, self.library()?),
            (Part::Transport, self.direct?),
        ];
        parts
            .into_iter()
            .max_by(|a, b| a.1.total_cmp(&b.1))
            .map(|p| p.0)
    }

    /// `x` as a share of the call through dbus-daemon; a part measured
    /// at zero or below (the difference of two noisy p50s) is nothing
    /// measurable.
    fn pct(&self, x: f64) -> String {
        if x <= 0.0 {
            "nothing measurable".into()
        } else {
            format!("{:.0}%", 100.0 * x / self.daemon)
        }
    }

    /// A figure that may come out at zero or below: `12.3us`, or
    /// `nothing measurable (-1.20us)`.
    fn part(x: f64) -> String {
        if x <= 0.0 {
            format!("nothing measurable ({})", fmt_ns(x))
        } else {
            fmt_ns(x)
        }
    }

    /// The library's name, the study's marked as such.
    fn who(&self) -> String {
        match self.lib {
            DbusLib::Libdbus => "libdbus (the study's library)".into(),
            l => l.name().into(),
        }
    }

    /// `, the library ... , the transport ...`, when a direct call was
    /// measured.
    fn library_and_transport(&self) -> String {
        let (Some(lib), Some(direct)) = (self.library(), self.direct) else {
            return String::new();
        };
        let mut s = if lib <= 0.0 {
            format!(
                ", the library nothing measurable (peer to peer took {}, a direct {LEG} call {}",
                fmt_ns(self.p2p),
                fmt_ns(direct)
            )
        } else {
            format!(", the library {} ({}", fmt_ns(lib), self.pct(lib))
        };
        if let (Some(m), Some(d), true) = (self.marshal, self.dispatch(), lib > 0.0) {
            s += &format!(": marshalling {}, dispatch {}", fmt_ns(m), Self::part(d));
        }
        s + &format!(
            "), the transport {} ({}, a direct {LEG} call)",
            fmt_ns(direct),
            self.pct(direct)
        )
    }

    /// `; validating both bodies ...`, when our broker measured it.
    fn validation_clause(&self) -> String {
        let share = self.daemon_share();
        match self.validation {
            Some(v) if share > 0.0 && v > share => format!(
                "; validating both bodies takes {} in our broker, more than the daemon's whole share, so the daemon checks them more cheaply than our broker does",
                fmt_ns(v)
            ),
            Some(v) if share > 0.0 => format!(
                "; validating both bodies would explain {} of the daemon's share ({:.0}%, measured in our broker)",
                fmt_ns(v),
                100.0 * v / share
            ),
            _ => String::new(),
        }
    }

    /// `. dbus-broker takes ...`, when it was measured.
    fn broker_clause(&self) -> String {
        self.broker.map_or_else(String::new, |b| {
            format!(
                ". dbus-broker takes {} with {}, {:.2}x dbus-daemon's time (its share {} against dbus-daemon's {})",
                fmt_ns(b),
                self.lib.name(),
                b / self.daemon,
                Self::part(b - self.p2p),
                Self::part(self.daemon_share())
            )
        })
    }

    /// The sentences: the split of a call through dbus-daemon, then the
    /// verdict.
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "GetInteger({}), {}: dbus-daemon takes {} per call",
            self.ints,
            self.who(),
            fmt_ns(self.daemon)
        );
        if let (DbusLib::Libdbus, Some(q)) = (self.lib, &self.reference) {
            s += &format!(" (the study on QNX 6.4: {} us)", q.us);
        }
        let share = self.daemon_share();
        // The answer in one sentence; the split and the verdict after.
        s += &format!(
            ", {} of it the daemon's own ({}). A call through dbus-daemon: the daemon {} ({}, against {} peer to peer)",
            Self::part(share),
            self.pct(share),
            Self::part(share),
            self.pct(share),
            fmt_ns(self.p2p)
        );
        s += &self.library_and_transport();
        s += &self.validation_clause();
        s += &self.broker_clause();
        s.push_str(". ");
        s += &self.verdict();
        s
    }

    /// Which part is the largest, computed from the figures.
    fn verdict(&self) -> String {
        let lib = self.lib.name();
        let share = self.daemon_share();
        if share <= 0.0 {
            return format!("So with {lib} the daemon added nothing measurable here.");
        }
        let Some(part) = self.largest() else {
            return if share > self.p2p {
                format!("So with {lib} the daemon costs more than a whole peer-to-peer call.")
            } else {
                format!("So with {lib} the daemon costs less than a whole peer-to-peer call.")
            };
        };
        let (lib_part, direct) = (self.library().unwrap_or(0.0), self.direct.unwrap_or(0.0));
        match part {
            Part::Daemon => format!(
                "So with {lib} the daemon is the largest part of a call through dbus-daemon ({}), more than the library ({}) or the transport ({}).",
                self.pct(share),
                self.pct(lib_part),
                self.pct(direct)
            ),
            Part::Library => format!(
                "So with {lib} the library, not the daemon, is the largest part of a call through dbus-daemon ({} against the daemon's {}).",
                self.pct(lib_part),
                self.pct(share)
            ),
            Part::Transport => format!(
                "So with {lib} the transport is the largest part of a call through dbus-daemon ({} against the daemon's {} and the library's {}).",
                self.pct(direct),
                self.pct(share),
                self.pct(lib_part)
            ),
        }
    }
}

/// The sentence of each library measured at `ints`, libdbus first.
pub fn sentences(rows: &[BrokerRow], ints: u32) -> Vec<String> {
    DbusLib::ALL
        .into_iter()
        .filter_map(|lib| LibSplit::of(rows, lib, ints))
        .map(|s| s.sentence())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(via: Via, lib: Option<DbusLib>, t: Option<&str>, p50_us: f64) -> BrokerRow {
        let mut r = BrokerRow::empty(via, t.map(String::from), 256, 1);
        r.dbus_lib = lib;
        r.calls = 1000;
        r.latency.p50_ns = p50_us * 1000.0;
        r
    }

    /// One library's rows: daemon, p2p (with its marshalling), broker.
    fn lib_rows(lib: DbusLib, daemon: f64, p2p: f64, marshal: f64) -> Vec<BrokerRow> {
        let mut p = row(Via::DbusP2p, Some(lib), None, p2p);
        p.marshal_ns = Some(marshal * 1000.0);
        vec![
            p,
            row(Via::DbusDaemon, Some(lib), None, daemon),
            row(Via::DbusBroker, Some(lib), None, daemon * 0.8),
        ]
    }

    fn msgpass_rows() -> Vec<BrokerRow> {
        let mut v = row(Via::BrokerValidate, None, Some("uds"), 20.0);
        v.validate_ns = Some(2000.0);
        vec![row(Via::Direct, None, Some("uds"), 10.0), v]
    }

    #[test]
    fn the_daemon_is_the_largest_part_when_it_is() {
        let mut rows = msgpass_rows();
        rows.extend(lib_rows(DbusLib::Libdbus, 100.0, 30.0, 5.0));
        let s = sentences(&rows, 256);
        assert_eq!(s.len(), 1, "{s:?}");
        let s = &s[0];
        assert!(s.starts_with("GetInteger(256), libdbus (the study's library): dbus-daemon takes 100us per call (the study on QNX 6.4: 16212 us)"), "{s}");
        assert!(
            s.contains("the daemon 70.0us (70%, against 30.0us peer to peer)"),
            "{s}"
        );
        assert!(
            s.contains("the library 20.0us (20%: marshalling 5.00us, dispatch 15.0us)"),
            "{s}"
        );
        assert!(
            s.contains("the transport 10.0us (10%, a direct uds call)"),
            "{s}"
        );
        assert!(
            s.contains("explain 2.00us of the daemon's share (3%"),
            "{s}"
        );
        assert!(
            s.contains("dbus-broker takes 80.0us with libdbus, 0.80x"),
            "{s}"
        );
        assert!(
            s.contains("So with libdbus the daemon is the largest part"),
            "{s}"
        );
    }

    #[test]
    fn the_library_is_the_largest_part_when_it_is() {
        let mut rows = msgpass_rows();
        rows.extend(lib_rows(DbusLib::Zbus, 60.0, 50.0, 4.0));
        rows.extend(lib_rows(DbusLib::SdBus, 45.0, 25.0, 1.0));
        let s = sentences(&rows, 256);
        assert_eq!(s.len(), 2, "{s:?}");
        assert!(
            s[0].starts_with("GetInteger(256), sd-bus: dbus-daemon takes 45.0us per call, 20.0us of it the daemon's own (44%). "),
            "{s:?}"
        );
        assert!(
            !s[0].contains("QNX"),
            "the study's figure is libdbus's: {s:?}"
        );
        assert!(s[1].contains("So with zbus the library, not the daemon, is the largest part of a call through dbus-daemon (67% against the daemon's 17%)"), "{s:?}");
        assert!(
            s[0].contains("So with sd-bus the daemon is the largest part"),
            "{s:?}"
        );
    }

    #[test]
    fn without_a_direct_call_the_daemon_is_weighed_against_peer_to_peer() {
        let more = lib_rows(DbusLib::Libdbus, 100.0, 30.0, 5.0);
        let s = sentences(&more, 256);
        assert!(
            s[0].contains("So with libdbus the daemon costs more than a whole peer-to-peer call."),
            "{s:?}"
        );
        assert!(!s[0].contains("the library"), "{s:?}");
        let less = lib_rows(DbusLib::Libdbus, 50.0, 30.0, 5.0);
        assert!(sentences(&less, 256)[0].contains("costs less than"));
        let none = lib_rows(DbusLib::Libdbus, 29.0, 30.0, 5.0);
        assert!(sentences(&none, 256)[0].contains("added nothing measurable"));
    }

    #[test]
    fn parts_below_zero_and_validation_above_the_share_are_said_so() {
        let mut rows = msgpass_rows();
        // p2p (9us) faster than the direct call (10us); validation (2us)
        // more than the daemon's share (1.5us).
        rows.extend(lib_rows(DbusLib::SdBus, 10.5, 9.0, 1.0));
        let s = &sentences(&rows, 256)[0];
        assert!(
            s.contains("the library nothing measurable (peer to peer took 9.00us, a direct uds call 10.0us), the transport 10.0us (95%"),
            "{s}"
        );
        assert!(
            s.contains("validating both bodies takes 2.00us in our broker, more than the daemon's whole share"),
            "{s}"
        );
        assert!(
            s.contains("So with sd-bus the transport is the largest part"),
            "{s}"
        );
    }

    #[test]
    fn no_sentence_without_both_rows_of_a_library() {
        let mut rows = lib_rows(DbusLib::Libdbus, 100.0, 30.0, 5.0);
        rows.retain(|r| r.via != Via::DbusP2p);
        assert!(sentences(&rows, 256).is_empty());
        assert!(sentences(&lib_rows(DbusLib::Libdbus, 100.0, 30.0, 5.0), 1).is_empty());
    }
}
