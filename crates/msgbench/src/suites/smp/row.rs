//! One row of `msgbench smp`: the RFC 2544 throughput of one forwarder
//! (a table variant with N workers, or the kernel) at one frame size, with
//! what explains it, and the QNX study's figure for the same case.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use super::search::SearchResult;
use super::tables::LockStats;
use crate::suites::{RowStatus, SuiteRow};

/// Who forwards in a row (written as its name: `mutex`, ..., `kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarder {
    /// Our workers, sharing the table this way.
    Table(super::tables::Variant),
    /// The kernel's own IPv4 forwarding (veth mode's reference row).
    Kernel,
}

impl Serialize for Forwarder {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Forwarder {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Forwarder, D::Error> {
        let name = String::deserialize(d)?;
        Forwarder::named(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown forwarder `{name}` (mutex, rwlock, rcu, per-cpu or kernel)"
            ))
        })
    }
}

impl Forwarder {
    /// The forwarder called `name` ([`Forwarder::name`]), if any.
    pub fn named(name: &str) -> Option<Forwarder> {
        use super::tables::Variant;
        let table = Variant::ALL.into_iter().find(|v| v.name() == name);
        match table {
            Some(v) => Some(Forwarder::Table(v)),
            None => (name == "kernel").then_some(Forwarder::Kernel),
        }
    }

    /// `mutex`, ..., `kernel`.
    pub fn name(self) -> &'static str {
        match self {
            Forwarder::Table(v) => v.name(),
            Forwarder::Kernel => "kernel",
        }
    }
}

/// The study's figure for a row's case, per port (QNX 6.2.1, dual-core
/// 600 MHz MIPS, two 1 Gbit/s ports).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// Which column of the study: `1 CPU`, `2 CPU`, `2 CPU, per-CPU tables`.
    pub column: Cow<'static, str>,
    /// Packets per second per port.
    pub pps_per_port: f64,
    /// Total Mbit/s as the study gives it.
    pub mbit_s: f64,
    /// The study reports the line rate here rather than a count.
    pub line_rate: bool,
}

/// The study's rows: size, then (pps per port, Mbit/s) for 1 CPU, 2 CPU
/// (one shared table), 2 CPU with per-CPU tables.
const STUDY: [(usize, [(f64, f64); 3]); 4] = [
    (
        64,
        [(167_280.0, 214.0), (323_429.0, 413.0), (341_390.0, 436.0)],
    ),
    (
        128,
        [(164_666.0, 421.0), (315_630.0, 808.0), (339_602.0, 869.0)],
    ),
    (
        256,
        [(166_254.0, 851.0), (312_545.0, 1600.0), (330_858.0, 1693.0)],
    ),
    (
        512,
        [
            (145_056.0, 1485.0),
            (195_312.0, 2000.0),
            (195_312.0, 2000.0),
        ],
    ),
];

/// The study's figure for `forwarder` with `workers` at `size` bytes, if
/// the study has that case: 1 CPU (any table), 2 CPUs with one shared
/// table (`mutex`), 2 CPUs with per-CPU tables. 768 bytes and more: line
/// rate on two 1 Gbit/s ports.
pub fn reference(forwarder: Forwarder, workers: usize, size: usize) -> Option<Reference> {
    use super::tables::Variant;
    let (col, name) = match (forwarder, workers) {
        (Forwarder::Table(_), 1) => (0, "1 CPU"),
        (Forwarder::Table(Variant::Mutex), 2) => (1, "2 CPU"),
        (Forwarder::Table(Variant::PerCpu), 2) => (2, "2 CPU, per-CPU tables"),
        _ => return None,
    };
    if size >= 768 {
        let pps = super::ports::line_rate_pps(Some(1_000_000_000), size);
        return Some(Reference {
            column: name.into(),
            pps_per_port: pps,
            mbit_s: 2000.0,
            line_rate: true,
        });
    }
    let (_, cols) = STUDY.iter().find(|(s, _)| *s == size)?;
    let (pps, mbit) = cols[col];
    Some(Reference {
        column: name.into(),
        pps_per_port: pps,
        mbit_s: mbit,
        line_rate: false,
    })
}

/// One measured case. What a run from before a field existed lacks reads
/// as empty (none, zero).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SmpRow {
    /// `memory` or `veth`.
    pub ports: super::options::PortsMode,
    /// Who forwarded.
    pub forwarder: Forwarder,
    /// Worker threads (the kernel row: none).
    pub workers: Option<usize>,
    /// Frame size, bytes, FCS included.
    pub size: usize,
    /// Input ports the offered load arrived on.
    pub input_ports: usize,
    /// The zero-loss throughput, packets/s over all input ports (median
    /// of the repeats).
    pub pps: f64,
    /// The same per input port (the study's unit).
    pub pps_per_port: f64,
    /// The same in Mbit/s of frame bytes (FCS included, no preamble or gap).
    pub mbit_s: f64,
    /// The zero-loss rate of every repeat, pps.
    #[serde(default)]
    pub repeats_pps: Vec<f64>,
    /// What the forwarder did flat out, pps over all ports (memory mode's
    /// probe; the upper bound of the search).
    pub capacity_pps: Option<f64>,
    /// The port speed's packet rate per port, if there is one.
    pub line_pps: Option<f64>,
    /// Throughput against the same forwarder with 1 worker at this size.
    pub scaling: Option<f64>,
    /// Lock figures per worker, over the trials at the zero-loss rate.
    #[serde(default)]
    pub locks: Vec<LockStats>,
    /// Share of busy time at the zero-loss rate: memory mode, the workers'
    /// polls that found packets; veth mode, the whole machine's CPU time
    /// (/proc/stat: generator, workers or kernel, sink).
    pub cpu_busy: Option<f64>,
    /// Each worker's longest time away from its rings at the zero-loss
    /// rate, microseconds (memory mode).
    #[serde(default)]
    pub max_gap_us: Vec<f64>,
    /// Memory mode: the lowest trial above the zero-loss rate that lost
    /// frames, with its longest worker stall.
    pub first_loss: Option<super::measured::FirstLoss>,
    /// The search of the median repeat.
    #[serde(default)]
    pub search: SearchResult,
    /// Route changes applied per second during that search.
    #[serde(default)]
    pub updates_per_s: f64,
    /// The longest single route change, microseconds (per-cpu: all copies).
    #[serde(default)]
    pub update_max_us: f64,
    /// Packets the forwarder had no route for, in the trials at the
    /// zero-loss rate (dropped by design, not counted as loss).
    #[serde(default)]
    pub unrouted: u64,
    /// Memory mode: per port, the books of the last trial at the
    /// zero-loss rate (what arrived on it and what became of it; what left
    /// by it).
    #[serde(default)]
    pub rx_ports: Vec<super::ports::RxCounters>,
    /// The transmit side of the same books.
    #[serde(default)]
    pub tx_ports: Vec<super::ports::TxCounters>,
    /// The study's figure for this case.
    pub reference: Option<Reference>,
    /// Why the row was not measured (skipped) or failed.
    pub error: Option<String>,
    /// True when skipped rather than failed.
    #[serde(default)]
    pub skipped: bool,
}

impl SmpRow {
    /// A row of `forwarder` with `workers` (none: the kernel) at `size`
    /// bytes, measured at `pps` over `input_ports` (per port and Mbit/s
    /// follow), with the study's figure for its case and nothing else.
    pub fn new(
        ports: super::options::PortsMode,
        forwarder: Forwarder,
        workers: Option<usize>,
        size: usize,
        input_ports: usize,
        pps: f64,
    ) -> SmpRow {
        SmpRow {
            ports,
            forwarder,
            workers,
            size,
            input_ports,
            pps,
            pps_per_port: pps / input_ports.max(1) as f64,
            mbit_s: pps * (size * 8) as f64 / 1e6,
            repeats_pps: vec![pps],
            capacity_pps: None,
            line_pps: None,
            scaling: None,
            locks: Vec::new(),
            cpu_busy: None,
            max_gap_us: Vec::new(),
            first_loss: None,
            search: SearchResult::default(),
            updates_per_s: 0.0,
            update_max_us: 0.0,
            unrouted: 0,
            rx_ports: Vec::new(),
            tx_ports: Vec::new(),
            reference: workers.and_then(|n| reference(forwarder, n, size)),
            error: None,
            skipped: false,
        }
    }

    /// Mean lock wait per packet over the workers, ns.
    pub fn wait_ns(&self) -> Vec<f64> {
        self.locks.iter().map(LockStats::mean_wait_ns).collect()
    }

    /// The workers' mean lock wait per packet, averaged over the workers,
    /// ns (the report's lock wait figure); `None` without lock figures.
    pub fn lock_wait_ns(&self) -> Option<f64> {
        let w = self.wait_ns();
        (!w.is_empty()).then(|| w.iter().sum::<f64>() / w.len() as f64)
    }

    /// Mean lock hold per packet over the workers, ns.
    pub fn hold_ns(&self) -> Vec<f64> {
        self.locks.iter().map(LockStats::mean_hold_ns).collect()
    }

    /// Whether the row has a figure.
    pub fn measured(&self) -> bool {
        self.error.is_none()
    }

    /// Whether the zero-loss rate is within 1% of the line rate.
    pub fn at_line_rate(&self) -> bool {
        self.line_pps
            .is_some_and(|l| self.pps_per_port >= 0.99 * l && self.measured())
    }
}

impl SuiteRow for SmpRow {
    fn status(&self) -> RowStatus {
        match (self.skipped, self.measured()) {
            (true, _) => RowStatus::Skipped,
            (false, true) => RowStatus::Ok,
            (false, false) => RowStatus::Failed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tables::Variant;
    use super::*;

    #[test]
    fn the_study_has_one_two_and_per_cpu_columns() {
        let r = reference(Forwarder::Table(Variant::Rcu), 1, 64).unwrap();
        assert_eq!((&*r.column, r.pps_per_port), ("1 CPU", 167_280.0));
        let r = reference(Forwarder::Table(Variant::Mutex), 2, 128).unwrap();
        assert_eq!((&*r.column, r.pps_per_port), ("2 CPU", 315_630.0));
        let r = reference(Forwarder::Table(Variant::PerCpu), 2, 256).unwrap();
        assert_eq!(r.pps_per_port, 330_858.0);
        assert!(reference(Forwarder::Table(Variant::Rcu), 2, 64).is_none());
        assert!(reference(Forwarder::Kernel, 1, 64).is_none());
        assert!(reference(Forwarder::Table(Variant::Mutex), 4, 64).is_none());
        let r = reference(Forwarder::Table(Variant::Mutex), 1, 1518).unwrap();
        assert!(r.line_rate);
        assert!((r.pps_per_port - 81_274.0).abs() < 1.0, "{r:?}");
        assert!(reference(Forwarder::Table(Variant::Mutex), 1, 600).is_none());
    }
}
