//! One row of `msgbench broker`: an arrangement, transport and size, what
//! was measured there (the median repeat), and the D-Bus study's figure
//! for the same case.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::dbus::DbusLib;
use super::measure::CpuSplit;
use super::options::{Fault, Via};
use crate::measure::hist::LatencySummary;
use crate::suites::{RowStatus, SuiteRow};

/// A row. What a run from before a field existed lacks reads as empty
/// (none, zero).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BrokerRow {
    /// The arrangement.
    pub via: Via,
    /// Its msgpass transport (`null` for the D-Bus arrangements).
    pub transport: Option<String>,
    /// The D-Bus library of client and service (`null` for the msgpass
    /// arrangements).
    pub dbus_lib: Option<DbusLib>,
    /// numInts of every call.
    pub ints: u32,
    /// Clients calling at once.
    pub clients: usize,
    /// The fault injected in this row's runs (`--inject-fault`), if any.
    pub fault: Option<Fault>,
    /// Calls completed and checked (median repeat).
    pub calls: u64,
    /// Calls per second over all clients (median repeat).
    pub calls_per_s: f64,
    /// Latency per call (median repeat).
    pub latency: LatencySummary,
    /// The latency distribution: `[upper_ns, count]` pairs.
    #[serde(default)]
    pub histogram: Vec<(f64, u64)>,
    /// CPU per call, ns, by process role, from their CPU clocks.
    #[serde(default)]
    pub cpu_ns_per_call: CpuSplit,
    /// The msgbench broker's own time per call, ns (request in hand to
    /// call onward, plus reply back to reply sent): broker rows only.
    pub routing_ns: Option<f64>,
    /// Of that, validating the bodies: broker-validate rows only.
    pub validate_ns: Option<f64>,
    /// The broker's call timeout, ms: broker rows only.
    pub call_timeout_ms: Option<u64>,
    /// Calls the broker answered `ETIMEDOUT`, over all clients (median
    /// repeat).
    #[serde(default)]
    pub timeouts: u64,
    /// Most calls in flight in the broker at once (median repeat):
    /// broker rows only.
    pub most_in_flight: Option<u64>,
    /// Latency per call of every client but client 0, whose service
    /// `hang-service` hangs: broker rows of a run with `--inject-fault`.
    pub others_latency: Option<LatencySummary>,
    /// The D-Bus library's marshal + unmarshal of this call's request and
    /// reply, timed alone: D-Bus rows only.
    pub marshal_ns: Option<f64>,
    /// p50 of every repeat, ns, in run order.
    #[serde(default)]
    pub p50_repeats_ns: Vec<f64>,
    /// Calls/s of every repeat.
    #[serde(default)]
    pub calls_per_s_repeats: Vec<f64>,
    /// Why the row was not measured (a daemon not installed).
    pub skipped: Option<String>,
    /// Why the row failed.
    pub error: Option<String>,
    /// The study's figure for the same case (QNX 6.4, BeagleBoard).
    pub reference: Option<Reference>,
}

/// A figure of the D-Bus study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// What it was.
    pub label: Cow<'static, str>,
    /// Per call (or round trip), microseconds.
    pub us: f64,
}

impl BrokerRow {
    /// A row with nothing measured yet.
    pub fn empty(via: Via, transport: Option<String>, ints: u32, clients: usize) -> BrokerRow {
        BrokerRow {
            reference: reference(via, transport.as_deref(), ints),
            via,
            transport,
            dbus_lib: None,
            ints,
            clients,
            fault: None,
            call_timeout_ms: None,
            timeouts: 0,
            most_in_flight: None,
            others_latency: None,
            calls: 0,
            calls_per_s: 0.0,
            latency: LatencySummary::default(),
            histogram: Vec::new(),
            cpu_ns_per_call: CpuSplit::default(),
            routing_ns: None,
            validate_ns: None,
            marshal_ns: None,
            p50_repeats_ns: Vec::new(),
            calls_per_s_repeats: Vec::new(),
            skipped: None,
            error: None,
        }
    }

    /// A row measured at GetInteger(1) with one client over `transport`,
    /// its p50 and mean in microseconds (for tests of what is made of
    /// rows).
    #[cfg(test)]
    pub fn measured_at(via: Via, transport: &str, p50_us: f64, mean_us: f64) -> BrokerRow {
        let mut r = BrokerRow::empty(via, Some(transport.to_string()), 1, 1);
        r.calls = 1000;
        r.latency.p50_ns = p50_us * 1e3;
        r.latency.mean_ns = mean_us * 1e3;
        r
    }

    /// True when it holds a measurement.
    pub fn measured(&self) -> bool {
        self.skipped.is_none() && self.error.is_none() && self.calls > 0
    }

    /// `broker/uds`, `dbus-daemon/libdbus`, `broker/uds + hang-service`.
    pub fn label(&self) -> String {
        let l = label(self.via, self.transport.as_deref());
        let l = match self.dbus_lib {
            Some(lib) => format!("{l}/{}", lib.name()),
            None => l,
        };
        match self.fault {
            Some(f) => format!("{l} + {}", f.name()),
            None => l,
        }
    }
}

/// An arrangement with its transport: `broker/uds`, `dbus-daemon`.
pub fn label(via: Via, transport: Option<&str>) -> String {
    match transport {
        Some(t) => format!("{}/{t}", via.name()),
        None => via.name().to_string(),
    }
}

/// The study's figure for an arrangement and size, where it has one:
/// the raw 1 KB point-to-point round trips (local socket, QNX native
/// message passing) and the D-Bus daemon's calls (1 KB, one integer).
pub fn reference(via: Via, transport: Option<&str>, ints: u32) -> Option<Reference> {
    match (via, ints) {
        (Via::Direct, 256) if matches!(transport, Some("uds" | "uds-stream" | "uds-dgram")) => {
            Some(Reference {
                label: Cow::Borrowed("QNX local socket, 1 KB"),
                us: 324.0,
            })
        }
        (Via::Direct, 256) => Some(Reference {
            label: Cow::Borrowed("QNX native messages, 1 KB"),
            us: 177.0,
        }),
        (Via::DbusDaemon, 1) => Some(Reference {
            label: Cow::Borrowed("QNX dbus-daemon, 1 int"),
            us: 12_000.0,
        }),
        (Via::DbusDaemon, 256) => Some(Reference {
            label: Cow::Borrowed("QNX dbus-daemon, 1 KB"),
            us: 16_212.0,
        }),
        _ => None,
    }
}

impl SuiteRow for BrokerRow {
    fn status(&self) -> RowStatus {
        match (&self.error, &self.skipped) {
            (Some(_), _) => RowStatus::Failed,
            (None, Some(_)) => RowStatus::Skipped,
            (None, None) => RowStatus::Ok,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_study_figures_sit_on_the_matching_rows() {
        assert_eq!(reference(Via::Direct, Some("uds"), 256).unwrap().us, 324.0);
        assert_eq!(reference(Via::Direct, Some("shm"), 256).unwrap().us, 177.0);
        assert_eq!(reference(Via::DbusDaemon, None, 1).unwrap().us, 12_000.0);
        assert_eq!(reference(Via::DbusDaemon, None, 256).unwrap().us, 16_212.0);
        assert!(reference(Via::Broker, Some("uds"), 256).is_none());
        assert!(reference(Via::DbusBroker, None, 1).is_none());
        assert!(reference(Via::Direct, Some("uds"), 1).is_none());
    }
}
