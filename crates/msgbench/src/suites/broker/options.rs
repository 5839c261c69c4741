//! The command line of `msgbench broker` and its checked form, the plan:
//! every bad option fails here in one line naming it, before any process
//! is started (a value its clap value parser refuses with exit status 2,
//! what two options decide together with 1).

use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use super::dbus::library::{self, DbusLib};
use super::proto::MAX_INTS;
use crate::measure::placement::{format_list, online_cpus, CpuSet};
use crate::measure::sched::SchedArgs;
use crate::suites::args::{Cpus, CpusSpec, Repeats, RepeatsSpec, Seconds, SecondsSpec};
use crate::suites::parse::{self, ValueError};
use crate::suites::OutputArgs;

/// `numInts` of a default run: one integer, the study's 1 KB case, 16 KB.
pub const INTS: [u32; 3] = [1, 256, 4096];
/// msgpass transports of a default run.
pub const TRANSPORTS: [&str; 2] = ["uds", "shm"];
/// Seconds of calls per measurement, default and `--quick`.
pub const SECONDS: f64 = 1.0;
/// Seconds of calls per measurement with `--quick`.
pub const QUICK_SECONDS: f64 = 0.25;
/// Repeats of a default run.
pub const REPEATS: usize = 3;
/// Most `--clients`.
pub const MAX_CLIENTS: usize = 64;
/// Clients of a run with `--inject-fault` when `--clients` is not given:
/// the one whose service hangs and two beside it.
pub const FAULT_CLIENTS: usize = 3;
/// The msgbench broker's call timeout when `--call-timeout` is not given.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(1);
/// Longest `--call-timeout`.
pub const MAX_CALL_TIMEOUT: Duration = Duration::from_secs(3600);

/// A fault a run can inject (`--inject-fault`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Fault {
    /// Service 0 takes one call shortly after its client's warm-up and
    /// never answers it, as a service that hangs does.
    HangService,
}

impl Fault {
    /// The `--inject-fault` name.
    pub fn name(self) -> &'static str {
        match self {
            Fault::HangService => "hang-service",
        }
    }
}

/// How a call reaches the service (`--via`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Serialize,
    serde::Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "kebab-case")]
pub enum Via {
    /// Client to service over a msgpass transport: one round trip.
    Direct,
    /// Through the msgbench broker, which routes on a fixed header.
    Broker,
    /// Through the msgbench broker validating every body as D-Bus.
    BrokerValidate,
    /// Peer-to-peer D-Bus, no daemon (zbus).
    DbusP2p,
    /// Through a private dbus-daemon (zbus client and service).
    DbusDaemon,
    /// Through a private dbus-broker (zbus client and service).
    DbusBroker,
}

impl Via {
    /// Every arrangement, in table order.
    pub const ALL: [Via; 6] = [
        Via::Direct,
        Via::Broker,
        Via::BrokerValidate,
        Via::DbusP2p,
        Via::DbusDaemon,
        Via::DbusBroker,
    ];

    /// The `--via` name.
    pub fn name(self) -> &'static str {
        match self {
            Via::Direct => "direct",
            Via::Broker => "broker",
            Via::BrokerValidate => "broker-validate",
            Via::DbusP2p => "dbus-p2p",
            Via::DbusDaemon => "dbus-daemon",
            Via::DbusBroker => "dbus-broker",
        }
    }

    /// True for the arrangements through the msgbench broker.
    pub fn via_broker(self) -> bool {
        matches!(self, Via::Broker | Via::BrokerValidate)
    }

    /// True for the arrangements over a msgpass transport (`-t`).
    pub fn on_msgpass(self) -> bool {
        matches!(self, Via::Direct | Via::Broker | Via::BrokerValidate)
    }

    fn parse(s: &str) -> Option<Via> {
        Via::ALL.into_iter().find(|v| v.name() == s)
    }
}

/// What broker's shared options mean: `--seconds`, `--cpus` (a set) and
/// `-r/--repeats`, whose defaults depend on `--quick` (the plan's).
#[derive(Debug, Clone)]
pub struct BrokerSpec;

impl SecondsSpec for BrokerSpec {
    const HELP: &'static str = "Seconds of calls per measurement [default: 1; --quick: 0.25]";
}

impl CpusSpec for BrokerSpec {
    type Cpus = CpuSet;
    const HELP: &'static str = "CPUs every process of the run (clients, brokers, daemons, \
        services) may run on [default: the first online CPU, as on the study's single-core \
        BeagleBoard; e.g. 0-1 spreads them, and then cross-CPU wake-ups, which a VM's host \
        placement can make 10x dearer, weigh on every leg]";
    fn parse(list: &str) -> std::result::Result<CpuSet, ValueError> {
        parse::cpu_set(list)
    }
}

impl RepeatsSpec for BrokerSpec {
    const HELP: &'static str =
        "Runs of the whole sweep, interleaved; each figure is the median [default: 3; --quick: 1]";
    const DEFAULT: Option<&'static str> = None;
    const MAX: usize = 100;
}

/// Options of `msgbench broker`.
#[derive(Debug, Clone, Args)]
pub struct BrokerArgs {
    /// A short run (under 30 s): GetInteger(1) only, 0.25 s per
    /// measurement, one repeat.
    #[arg(long = "quick")]
    pub quick: bool,
    /// Arrangements: a list of direct, broker, broker-validate, dbus-p2p,
    /// dbus-daemon, dbus-broker, or all [default: all].
    #[arg(long = "via", value_name = "LIST", value_parser = parse_vias)]
    pub via: Option<std::vec::Vec<Via>>,
    /// msgpass transports of the direct and broker arrangements
    /// [default: uds,shm].
    #[arg(
        short = 't',
        long = "transport",
        value_name = "LIST",
        value_parser = parse::transports
    )]
    pub transports: Option<std::vec::Vec<String>>,
    /// D-Bus libraries of the dbus-p2p, dbus-daemon and dbus-broker
    /// arrangements (client and service on the same one): a list of
    /// libdbus, sd-bus, zbus, or all [default: all; every one built in is
    /// measured, one that is not is a skipped row with its install line].
    #[arg(long = "dbus-lib", value_name = "LIST", value_parser = library::parse_list)]
    pub dbus_libs: Option<std::vec::Vec<DbusLib>>,
    /// numInts of the calls, a list [default: 1,256,4096; --quick: 1].
    #[arg(long = "ints", value_name = "LIST", value_parser = parse_ints)]
    pub ints: Option<std::vec::Vec<u32>>,
    /// Clients calling at once, each its own service, so the brokers
    /// route concurrent calls [default: 1; with --inject-fault: 3].
    #[arg(
        long = "clients",
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = parse_clients
    )]
    pub clients: Option<usize>,
    /// How long the msgbench broker lets a service take over a call
    /// before it answers the caller ETIMEDOUT (and drops the late result),
    /// so that a silent service never holds its callers for ever; e.g.
    /// 250ms, 2s [default: 1s].
    #[arg(long = "call-timeout", value_name = "DURATION", value_parser = humantime::parse_duration)]
    pub call_timeout: Option<Duration>,
    /// Measure each broker cell a second time with a fault injected, next
    /// to the run without it. hang-service: service 0 stops answering
    /// after a few calls; its client's calls time out (--call-timeout)
    /// while the other clients carry on, and their p99 is set against the
    /// run without the fault. Needs 2 or more --clients.
    #[arg(long = "inject-fault", value_name = "FAULT")]
    pub inject_fault: Option<Fault>,
    /// --seconds: the length of a measurement.
    #[command(flatten)]
    pub seconds: Seconds<BrokerSpec>,
    /// --cpus: the CPUs of every process of the run.
    #[command(flatten)]
    pub cpus: Cpus<BrokerSpec>,
    /// -r/--repeats: runs of the whole sweep.
    #[command(flatten)]
    pub repeats: Repeats<BrokerSpec>,
    /// Scheduling controls, inherited by every process started: --fifo,
    /// --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: SchedArgs,
    /// --format, --json.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The checked settings of `msgbench broker`.
#[derive(Debug, Clone, Serialize)]
pub struct BrokerPlan {
    /// `--quick`.
    pub quick: bool,
    /// Arrangements, in table order.
    pub vias: Vec<Via>,
    /// msgpass transports of the msgpass arrangements.
    pub transports: Vec<String>,
    /// D-Bus libraries of the D-Bus arrangements, in report order.
    pub dbus_libs: Vec<DbusLib>,
    /// numInts values, ascending.
    pub ints: Vec<u32>,
    /// Clients (and services) at once.
    pub clients: usize,
    /// Seconds of calls per measurement.
    pub seconds: f64,
    /// CPUs every process may use.
    pub cpus: Vec<usize>,
    /// Runs of the sweep.
    pub repeats: usize,
    /// The msgbench broker's call timeout.
    pub call_timeout: Duration,
    /// The fault injected beside the broker cells, if any.
    pub fault: Option<Fault>,
    /// The versions of the D-Bus components, read when a D-Bus
    /// arrangement is planned.
    pub components: Option<super::dbus::versions::Components>,
}

impl BrokerPlan {
    /// One measurement's length.
    pub fn duration(&self) -> Duration {
        Duration::from_secs_f64(self.seconds)
    }

    /// One line: what is swept.
    pub fn describe(&self) -> String {
        let vias: Vec<&str> = self.vias.iter().map(|v| v.name()).collect();
        let ints: Vec<String> = self.ints.iter().map(u32::to_string).collect();
        let fault = self
            .fault
            .map(|f| format!(", fault {} beside the broker cells", f.name()))
            .unwrap_or_default();
        let libs: Vec<&str> = self.dbus_libs.iter().map(|l| l.name()).collect();
        format!(
            "via {}, transports {}, D-Bus libraries {}, GetInteger({}), {} client(s), {} s per measurement, {} repeat(s), CPUs {}, call timeout {}{fault}",
            vias.join(","),
            self.transports.join(","),
            libs.join(","),
            ints.join(","),
            self.clients,
            self.seconds,
            self.repeats,
            format_list(&self.cpus),
            humantime::format_duration(self.call_timeout),
        )
    }
}

/// Checks the options, every one, before anything runs.
pub fn plan(args: &BrokerArgs) -> Result<BrokerPlan> {
    let q = args.quick;
    let vias = args.via.clone().unwrap_or_else(|| Via::ALL.to_vec());
    let fault = args.inject_fault;
    Ok(BrokerPlan {
        quick: q,
        clients: clients(args.clients, fault)?,
        call_timeout: call_timeout(args.call_timeout)?,
        fault: match fault {
            Some(f) if !vias.iter().any(|v| v.via_broker()) => bail!(
                "--inject-fault {}: the fault is shown on the broker arrangements; add broker or broker-validate to --via",
                f.name()
            ),
            f => f,
        },
        components: vias
            .iter()
            .any(|v| !v.on_msgpass())
            .then(super::dbus::versions::Components::read),
        vias,
        transports: match &args.transports {
            Some(l) => l.clone(),
            None => TRANSPORTS.map(String::from).to_vec(),
        },
        dbus_libs: args
            .dbus_libs
            .clone()
            .unwrap_or_else(|| DbusLib::ALL.to_vec()),
        ints: match &args.ints {
            Some(l) => l.clone(),
            None if q => vec![1],
            None => INTS.to_vec(),
        },
        seconds: args.seconds.or(if q { QUICK_SECONDS } else { SECONDS }),
        cpus: match args.cpus.given() {
            Some(set) => set.0.clone(),
            None => online_cpus().into_iter().take(1).collect(),
        },
        repeats: args.repeats.or(if q { 1 } else { REPEATS }),
    })
}

/// Why a value of a broker option was refused (clap prints it after
/// `--option value: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadValue {
    /// A `--via` entry that names no arrangement.
    #[error("unknown arrangement `{0}` (direct, broker, broker-validate, dbus-p2p, dbus-daemon, dbus-broker, all)")]
    Via(String),
    /// An `--ints` entry out of range.
    #[error("`{0}` is not a number of integers from 0 to {MAX_INTS}")]
    Ints(String),
    /// `--clients` out of range.
    #[error("must be a whole number of clients, 1 to {MAX_CLIENTS}")]
    Clients,
}

/// Value parser of `--via`: arrangements in table order, each once
/// (`all`: every one).
fn parse_vias(list: &str) -> Result<Vec<Via>, BadValue> {
    if list.trim() == "all" {
        return Ok(Via::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim) {
        let v = Via::parse(name).ok_or_else(|| BadValue::Via(name.to_string()))?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    out.sort_by_key(|v| Via::ALL.iter().position(|a| a == v));
    Ok(out)
}

/// Value parser of `--ints`: numInts values, ascending, each once.
fn parse_ints(list: &str) -> Result<Vec<u32>, BadValue> {
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim) {
        match s.parse::<u32>() {
            Ok(n) if n <= MAX_INTS => out.push(n),
            _ => return Err(BadValue::Ints(s.to_string())),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Value parser of `--clients`: 1 to [`MAX_CLIENTS`].
fn parse_clients(s: &str) -> Result<usize, BadValue> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_CLIENTS).contains(&n) => Ok(n),
        _ => Err(BadValue::Clients),
    }
}

/// `--clients`, or its default; `--inject-fault` needs 2 or more.
fn clients(n: Option<usize>, fault: Option<Fault>) -> Result<usize> {
    let Some(n) = n else {
        return Ok(if fault.is_some() { FAULT_CLIENTS } else { 1 });
    };
    match fault {
        Some(f) if n < 2 => bail!(
            "--clients {n}: --inject-fault {} needs 2 or more clients (the others are what it shows)",
            f.name()
        ),
        _ => Ok(n),
    }
}

fn call_timeout(t: Option<Duration>) -> Result<Duration> {
    match t {
        None => Ok(CALL_TIMEOUT),
        Some(t) if t >= Duration::from_millis(1) && t <= MAX_CALL_TIMEOUT => Ok(t),
        Some(t) => bail!(
            "--call-timeout {}: must be from 1ms to 1h",
            humantime::format_duration(t)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::anyhow;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        broker: BrokerArgs,
    }

    fn plan_of(args: &[&str]) -> Result<BrokerPlan> {
        let cli = Cli::try_parse_from(std::iter::once("broker").chain(args.iter().copied()))
            .map_err(|e| anyhow!(crate::cli::one_line(&e)))?;
        plan(&cli.broker)
    }

    #[test]
    fn defaults_and_quick() {
        let p = plan_of(&[]).unwrap();
        assert_eq!(p.vias, Via::ALL);
        assert_eq!(p.transports, ["uds", "shm"]);
        assert_eq!(p.dbus_libs, DbusLib::ALL);
        let l = plan_of(&["--dbus-lib", "zbus,libdbus"]).unwrap();
        assert_eq!(l.dbus_libs, [DbusLib::Libdbus, DbusLib::Zbus]);
        assert_eq!((p.ints.as_slice(), p.clients, p.repeats), (&INTS[..], 1, 3));
        assert_eq!(p.cpus.len(), 1, "one CPU, like the study's board");
        let q = plan_of(&["--quick"]).unwrap();
        assert_eq!(
            (q.ints.as_slice(), q.seconds, q.repeats),
            (&[1][..], 0.25, 1)
        );
        assert_eq!((p.call_timeout, p.fault), (CALL_TIMEOUT, None));
        let f = plan_of(&["--inject-fault", "hang-service", "--call-timeout", "250ms"]).unwrap();
        assert_eq!(
            (f.clients, f.fault, f.call_timeout),
            (3, Some(Fault::HangService), Duration::from_millis(250))
        );
    }

    #[test]
    fn lists_are_ordered_and_deduplicated() {
        let p = plan_of(&["--via", "dbus-daemon,direct,direct", "--ints", "256,1,1"]).unwrap();
        assert_eq!(p.vias, [Via::Direct, Via::DbusDaemon]);
        assert_eq!(p.ints, [1, 256]);
    }

    #[test]
    fn every_bad_option_is_named() {
        for (args, start) in [
            (
                &["--via", "bus"][..],
                "--via bus: unknown arrangement `bus`",
            ),
            (&["--ints", "1,x"], "--ints 1,x: `x` is not"),
            (&["--ints", "16001"], "--ints 16001:"),
            (&["--clients", "0"], "--clients 0:"),
            (
                &["--dbus-lib", "gdbus"],
                "--dbus-lib gdbus: unknown D-Bus library `gdbus`",
            ),
            (&["--clients", "65"], "--clients 65:"),
            (&["--seconds", "0"], "--seconds 0:"),
            (&["--seconds", "nan"], "--seconds nan:"),
            (&["-t", "nope"], "--transport nope:"),
            (&["-r", "0"], "--repeats 0:"),
            (&["--cpus", "99999"], "--cpus"),
            (&["--call-timeout", "0s"], "--call-timeout 0s:"),
            (
                &["--inject-fault", "hang-service", "--clients", "1"],
                "--clients 1: --inject-fault hang-service needs 2",
            ),
            (
                &["--inject-fault", "hang-service", "--via", "direct"],
                "--inject-fault hang-service: the fault is shown on the broker",
            ),
        ] {
            let e = plan_of(args).unwrap_err().to_string();
            assert!(e.starts_with(start), "{args:?}: {e}");
        }
    }
}
