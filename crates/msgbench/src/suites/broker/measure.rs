//! One measurement: the processes of one arrangement started, every
//! client warmed up and released at once, their calls timed, the CPU
//! clocks of every process read around the calls, everything stopped.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use super::client::ClientReport;
use super::dbus::{DaemonKind, DbusLib, PrivateBus, Unavailable};
use super::options::{BrokerPlan, Fault, Via};
use super::role::{COMMAND, WARMUP};
use super::router::RouterStats;
use crate::measure::clock::Clock;
use crate::measure::hist::Recorder;
use crate::measure::peers::Peer;

/// What is measured: one arrangement, transport and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// The arrangement.
    pub via: Via,
    /// Its msgpass transport (the msgpass arrangements only).
    pub transport: Option<String>,
    /// numInts of every call.
    pub ints: u32,
    /// The D-Bus library of client and service (the D-Bus arrangements).
    pub lib: Option<DbusLib>,
    /// The fault injected in this measurement, if any.
    pub fault: Option<Fault>,
}

/// CPU time per call, ns, by who spent it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct CpuSplit {
    /// The client processes.
    pub client: f64,
    /// The broker or daemon processes (0 when there is none).
    pub middle: f64,
    /// The service processes.
    pub service: f64,
}

impl CpuSplit {
    /// Summed over every process.
    pub fn total(&self) -> f64 {
        self.client + self.middle + self.service
    }
}

/// What one measurement found.
pub struct CellRun {
    /// Calls completed and checked, over all clients.
    pub calls: u64,
    /// Calls per second, summed over the clients.
    pub calls_per_s: f64,
    /// Latency per call, ns ticks of [`Clock::monotonic`].
    pub latency: Recorder,
    /// The same of every client but client 0 (the one whose service the
    /// fault hangs).
    pub others: Recorder,
    /// Calls the broker answered `ETIMEDOUT`, over all clients.
    pub timeouts: u64,
    /// CPU per call.
    pub cpu: CpuSplit,
    /// The msgbench broker's account of itself.
    pub router: Option<RouterStats>,
}

/// How long a peer may take to connect and warm up.
const READY: Duration = Duration::from_secs(15);
/// How long a peer may take to stop.
const GRACE: Duration = Duration::from_secs(3);
/// Calls the hung service answers after its client's warm-up before it
/// stops answering (`hang-service`), so that the fault comes while the
/// clients are timed.
const HANG_AFTER_MEASURED: u32 = 20;

/// Measures `cell` with the run's settings, its processes meeting in
/// `dir` (a fresh directory, removed by the caller).
pub fn measure(plan: &BrokerPlan, cell: &Cell, dir: &Path) -> Result<CellRun> {
    // Started before the peers and stopped after them: services and
    // clients leave the bus before the daemon stops.
    let mut bus = start_bus(cell.via, dir)?;
    let address = bus.as_ref().map(|b| b.address().to_string());
    let reach = |k: usize| reach(cell, dir, address.as_deref(), k);
    let mut router = match cell.via.via_broker() {
        true => Some(start_router(plan, cell, reach(0))?),
        false => None,
    };
    let mut services = Vec::new();
    for k in 0..plan.clients {
        services.push(start_service(cell, k, reach(k))?);
    }
    let mut clients = Vec::new();
    for k in 0..plan.clients {
        clients.push(start_client(plan, cell, k, router.is_some(), reach(k))?);
    }
    let middle_pids: Vec<i32> = match (&router, &bus) {
        (Some(r), _) => vec![r.pid()],
        (None, Some(b)) => b.pids(),
        (None, None) => Vec::new(),
    };
    let service_pids: Vec<i32> = services.iter().map(Peer::pid).collect();
    let (reports, middle_ns, service_ns) =
        time_calls(plan, &mut clients, &middle_pids, &service_pids)?;
    let stats = router.as_mut().map(stop_router).transpose()?;
    for s in &mut services {
        s.stop(GRACE)?;
    }
    if let Some(b) = bus.take() {
        b.stop()?;
    }
    Ok(summarise(&reports, middle_ns, service_ns, stats))
}

/// The private bus of a daemon arrangement, started in `dir/bus`.
fn start_bus(via: Via, dir: &Path) -> Result<Option<PrivateBus>> {
    daemon(via)
        .map(|kind| {
            let d = dir.join("bus");
            std::fs::create_dir(&d).with_context(|| format!("cannot create {}", d.display()))?;
            PrivateBus::start(kind, &d)
        })
        .transpose()
}

/// How peer `k` of `cell` reaches the others: its D-Bus library, then
/// the msgpass transport and namespace, the peer-to-peer socket, or the
/// private bus's `address`.
fn reach(cell: &Cell, dir: &Path, address: Option<&str>, k: usize) -> Vec<String> {
    let mut a = super::dbus::library::peer_args(cell.lib);
    a.extend(match (&cell.transport, cell.via) {
        (Some(t), _) => vec![
            "-t".into(),
            t.clone(),
            "--ns".into(),
            dir.display().to_string(),
        ],
        (None, Via::DbusP2p) => vec![
            "--dbus-p2p".into(),
            dir.join(format!("p2p-{k}.sock")).display().to_string(),
        ],
        (None, _) => vec!["--dbus-bus".into(), address.unwrap_or_default().to_string()],
    });
    a
}

/// Starts client `k` of `cell`, calling service `k` (through the broker
/// when `via_broker`).
fn start_client(
    plan: &BrokerPlan,
    cell: &Cell,
    k: usize,
    via_broker: bool,
    reach: Vec<String>,
) -> Result<Peer> {
    let mut a = vec![
        "client".into(),
        "--index".into(),
        k.to_string(),
        "--destination".into(),
        k.to_string(),
        "--ints".into(),
        cell.ints.to_string(),
        "--seconds".into(),
        plan.seconds.to_string(),
    ];
    if via_broker {
        a.push("--via-broker".into());
    }
    a.extend(reach);
    Peer::start(COMMAND, format!("client {k}"), &a)
}

/// Waits for every client to be warmed up, releases them at once, reads
/// their reports and stops them; with the CPU time the middle and the
/// services spent meanwhile, ns. A client's own error fails the cell.
fn time_calls(
    plan: &BrokerPlan,
    clients: &mut [Peer],
    middle_pids: &[i32],
    service_pids: &[i32],
) -> Result<(Vec<ClientReport>, u64, u64)> {
    for c in clients.iter_mut() {
        c.expect("ready", READY)?;
    }
    let before = (cpu_of(middle_pids)?, cpu_of(service_pids)?);
    for c in clients.iter_mut() {
        c.send("go")?;
    }
    let mut reports = Vec::new();
    for c in clients.iter_mut() {
        let line = c.line(plan.duration() + READY)?;
        let r: ClientReport =
            serde_json::from_str(&line).with_context(|| format!("bad client report {line:?}"))?;
        reports.push(r);
    }
    let after = (cpu_of(middle_pids)?, cpu_of(service_pids)?);
    for c in clients.iter_mut() {
        c.finish(GRACE)?;
    }
    if let Some(e) = reports.iter().find_map(|r| r.error.clone()) {
        anyhow::bail!("a client failed: {e}");
    }
    Ok((reports, after.0 - before.0, after.1 - before.1))
}

/// Stops the msgbench broker and reads its account of itself.
fn stop_router(r: &mut Peer) -> Result<RouterStats> {
    r.stop(GRACE)?;
    let line = r.line(GRACE)?;
    serde_json::from_str(&line).with_context(|| format!("bad broker stats {line:?}"))
}

/// Starts the msgbench broker of `cell`: its services attach to it.
fn start_router(plan: &BrokerPlan, cell: &Cell, reach: Vec<String>) -> Result<Peer> {
    let mut a = vec![
        "route".into(),
        "--services".into(),
        plan.clients.to_string(),
        "--call-timeout-ms".into(),
        plan.call_timeout.as_millis().to_string(),
    ];
    if cell.via == Via::BrokerValidate {
        a.push("--validate".into());
    }
    a.extend(reach);
    Peer::start(COMMAND, "the broker", &a)
}

/// Starts service `k` of `cell`: on an endpoint of its own (direct,
/// D-Bus), or attached to the msgbench broker; service 0 hangs under
/// `hang-service`.
fn start_service(cell: &Cell, k: usize, reach: Vec<String>) -> Result<Peer> {
    let mut a = vec!["service".into(), "--index".into(), k.to_string()];
    if cell.via.via_broker() {
        a.push("--via-broker".into());
        if cell.fault == Some(Fault::HangService) && k == 0 {
            a.push("--hang-after".into());
            a.push((WARMUP + HANG_AFTER_MEASURED).to_string());
        }
    }
    a.extend(reach);
    Peer::start(COMMAND, format!("service {k}"), &a)
}

/// The daemon an arrangement goes through, if any.
fn daemon(via: Via) -> Option<DaemonKind> {
    match via {
        Via::DbusDaemon => Some(DaemonKind::DbusDaemon),
        Via::DbusBroker => Some(DaemonKind::DbusBroker),
        _ => None,
    }
}

/// CPU time so far of every process in `pids`, summed, ns.
fn cpu_of(pids: &[i32]) -> Result<u64> {
    pids.iter()
        .map(|&p| {
            oslayer::clock::process_cpu_ns_of(p).with_context(|| format!("CPU clock of pid {p}"))
        })
        .sum()
}

/// The clients' reports and the other processes' CPU, per call.
fn summarise(
    reports: &[ClientReport],
    middle_ns: u64,
    service_ns: u64,
    router: Option<RouterStats>,
) -> CellRun {
    let mut latency = Recorder::new();
    let mut others = Recorder::new();
    for (k, r) in reports.iter().enumerate() {
        for &(ns, count) in &r.histogram {
            for _ in 0..count {
                latency.record(ns as u64);
                if k > 0 {
                    others.record(ns as u64);
                }
            }
        }
    }
    let calls: u64 = reports.iter().map(|r| r.calls).sum();
    let per_call = |ns: u64| {
        if calls == 0 {
            0.0
        } else {
            ns as f64 / calls as f64
        }
    };
    CellRun {
        calls,
        calls_per_s: reports
            .iter()
            .filter(|r| r.elapsed_ns > 0)
            .map(|r| r.calls as f64 / (r.elapsed_ns as f64 / 1e9))
            .sum(),
        latency,
        others,
        timeouts: reports.iter().map(|r| r.timeouts).sum(),
        cpu: CpuSplit {
            client: per_call(reports.iter().map(|r| r.cpu_ns).sum()),
            middle: per_call(middle_ns),
            service: per_call(service_ns),
        },
        router,
    }
}

/// The clock the clients' latencies are in.
pub fn latency_clock() -> Clock {
    Clock::monotonic()
}

/// Whether an arrangement can run here: `Err` with the reason and the
/// install line when its daemon is missing.
pub fn available(via: Via) -> Result<(), Unavailable> {
    match daemon(via) {
        Some(kind) => kind.available(),
        None => Ok(()),
    }
}
