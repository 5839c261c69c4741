//! The processes of a broker run: this executable re-run as `msgbench
//! broker-peer service|route|client`, so that every arrangement is made
//! of real processes whose CPU clocks can be read. The suite starts
//! them; they are not meant to be run by hand (the command is hidden),
//! but they check their options like any other.
//!
//! A client connects and warms up, prints `ready`, waits for `go` on its
//! standard input, calls for the time asked, and prints its
//! `ClientReport` as one JSON line. The broker prints its
//! `RouterStats` as one JSON line when it is stopped (SIGTERM).

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::{Args, Subcommand};
use msgpass::{Namespace, Options};

use super::client::{self, Caller, MsgpassCaller};
use super::dbus::{self, library::DbusLib};
use super::options::{MAX_CALL_TIMEOUT, MAX_CLIENTS};
use super::proto::MAX_INTS;
use super::router::{self, Router};
use super::service;
use crate::measure::peers;

/// The hidden subcommand the peers run as.
pub const COMMAND: &str = "broker-peer";
/// Untimed calls a client makes before it says `ready`.
pub const WARMUP: u32 = 200;
/// The most untimed calls a client is asked for (`--warmup`).
const MAX_WARMUP: i64 = 1_000_000;
/// The longest a client calls (`--seconds`), as the suite's bound.
const MAX_SECONDS: f64 = 3600.0;

// Every count a peer takes is bounded by what the suite itself asks for,
// by its value parser, before anything is allocated: a peer run by hand
// with `--services 4294967295` is a usage error, not 584 GB (issue 33).

/// Value parser of a peer's service or client index: below
/// [`MAX_CLIENTS`], as the suite's.
fn index() -> clap::builder::RangedI64ValueParser<u32> {
    clap::value_parser!(u32).range(0..MAX_CLIENTS as i64)
}

/// `--seconds` out of (0, `MAX_SECONDS`] (clap prints it after
/// `--seconds VALUE: `).
#[derive(Debug, thiserror::Error)]
#[error("must be a number of seconds above 0, at most {MAX_SECONDS}")]
pub struct BadSeconds;

/// Value parser of a client's `--seconds`.
fn seconds(s: &str) -> std::result::Result<f64, BadSeconds> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= MAX_SECONDS => Ok(v),
        _ => Err(BadSeconds),
    }
}

/// `msgbench broker-peer`: one process of a broker run.
pub type PeerArgs = peers::PeerArgs<Role>;

/// The processes of a broker run.
#[derive(Debug, Subcommand)]
pub enum Role {
    /// A GetInteger service.
    Service(ServiceArgs),
    /// The msgbench broker.
    Route(RouteArgs),
    /// A client: ready, go, report.
    Client(ClientArgs),
}

/// Where a peer meets the others.
#[derive(Debug, Clone, Args)]
pub struct Reach {
    /// msgpass transport (with --ns).
    #[arg(short = 't', long = "transport", value_name = "NAME")]
    pub transport: Option<String>,
    /// msgpass namespace directory of the run.
    #[arg(long = "ns", value_name = "DIR")]
    pub ns: Option<PathBuf>,
    /// A D-Bus bus address (a private bus of the run).
    #[arg(long = "dbus-bus", value_name = "ADDRESS")]
    pub dbus_bus: Option<String>,
    /// A Unix socket path for peer-to-peer D-Bus (no daemon).
    #[arg(long = "dbus-p2p", value_name = "PATH")]
    pub dbus_p2p: Option<PathBuf>,
    /// The D-Bus library (libdbus, sd-bus, zbus) [default: zbus].
    #[arg(long = "dbus-lib", value_name = "NAME", value_parser = dbus::library::of_peer)]
    pub dbus_lib: Option<DbusLib>,
}

/// The way a peer was told to meet the others.
enum Meet {
    Msgpass { ns: Namespace, transport: String },
    Dbus(dbus::Target),
}

impl Reach {
    /// The D-Bus library it was told, zbus when none.
    fn lib(&self) -> DbusLib {
        self.dbus_lib.unwrap_or(DbusLib::Zbus)
    }

    fn meet(&self) -> Result<Meet> {
        match (&self.transport, &self.ns, &self.dbus_bus, &self.dbus_p2p) {
            (Some(t), Some(ns), None, None) => Ok(Meet::Msgpass {
                ns: Namespace::open(ns)?,
                transport: t.clone(),
            }),
            (None, None, Some(a), None) => Ok(Meet::Dbus(dbus::Target::Bus(a.clone()))),
            (None, None, None, Some(p)) => Ok(Meet::Dbus(dbus::Target::P2p(p.clone()))),
            _ => bail!("give either --transport with --ns, or --dbus-bus, or --dbus-p2p"),
        }
    }
}

/// `broker-peer service`.
#[derive(Debug, Args)]
pub struct ServiceArgs {
    /// Its index: service K serves `svc/K` (msgpass) or the bus name of
    /// service K (D-Bus).
    #[arg(long = "index", value_name = "K", value_parser = index())]
    pub index: u32,
    /// Attach to the msgbench broker instead of serving an endpoint of
    /// its own (msgpass).
    #[arg(long = "via-broker")]
    pub via_broker: bool,
    /// Attached to the broker: after this many calls, take the next and
    /// never answer it (the fault `hang-service`).
    #[arg(long = "hang-after", value_name = "CALLS")]
    pub hang_after: Option<u64>,
    /// Where it meets the others.
    #[command(flatten)]
    pub reach: Reach,
}

/// `broker-peer route`.
#[derive(Debug, Args)]
pub struct RouteArgs {
    /// Services to route to (`svc/0` ...), 1 to the suite's most clients.
    #[arg(long = "services", value_name = "N",
          value_parser = clap::value_parser!(u32).range(1..=MAX_CLIENTS as i64))]
    pub services: u32,
    /// Decode and validate every body with the D-Bus library.
    #[arg(long = "validate")]
    pub validate: bool,
    /// Answer a call not answered within this many milliseconds
    /// `ETIMEDOUT` (1 to the suite's longest `--call-timeout`).
    #[arg(long = "call-timeout-ms", value_name = "MS",
          value_parser = clap::value_parser!(u64).range(1..=MAX_CALL_TIMEOUT.as_millis() as u64))]
    pub call_timeout_ms: Option<u64>,
    /// Where it meets the others.
    #[command(flatten)]
    pub reach: Reach,
}

/// `broker-peer client`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// Its index (its serial space).
    #[arg(long = "index", value_name = "K", value_parser = index())]
    pub index: u32,
    /// The service it calls.
    #[arg(long = "destination", value_name = "K", value_parser = index())]
    pub destination: u32,
    /// Call through the msgbench broker instead of straight to the
    /// service (msgpass only).
    #[arg(long = "via-broker")]
    pub via_broker: bool,
    /// numInts of every call.
    #[arg(long = "ints", value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=i64::from(MAX_INTS)))]
    pub ints: u32,
    /// Untimed calls before `ready`.
    #[arg(long = "warmup", value_name = "CALLS", default_value_t = WARMUP,
          value_parser = clap::value_parser!(u32).range(0..=MAX_WARMUP))]
    pub warmup: u32,
    /// Seconds of timed calls after `go`.
    #[arg(long = "seconds", value_name = "SECS", value_parser = seconds)]
    pub seconds: f64,
    /// Where it meets the others.
    #[command(flatten)]
    pub reach: Reach,
}

/// How long a peer waits for the one it connects to.
const WAIT: Duration = Duration::from_secs(5);

fn opts() -> Options {
    Options {
        wait: Some(WAIT),
        ..Options::default()
    }
}

/// Runs one peer until it is done or stopped.
pub fn run(args: &PeerArgs, stop: Arc<AtomicBool>) -> Result<()> {
    args.die_with_parent()?;
    match &args.role {
        Role::Service(a) => serve(a, stop),
        Role::Route(a) => route(a, stop),
        Role::Client(a) => call(a),
    }
}

fn serve(a: &ServiceArgs, stop: Arc<AtomicBool>) -> Result<()> {
    match a.reach.meet()? {
        Meet::Msgpass { ns, transport } if a.via_broker => {
            service::attach(&ns, &transport, a.index, &opts(), a.hang_after, stop)
        }
        Meet::Msgpass { .. } if a.hang_after.is_some() => {
            bail!("--hang-after: only a service attached to the broker (--via-broker) hangs")
        }
        Meet::Msgpass { ns, transport } => service::serve(&ns, &transport, a.index, &opts(), stop),
        Meet::Dbus(target) => a.reach.lib().serve(&target, a.index, &stop),
    }
}

fn route(a: &RouteArgs, stop: Arc<AtomicBool>) -> Result<()> {
    let Meet::Msgpass { ns, transport } = a.reach.meet()? else {
        bail!("the msgbench broker routes msgpass transports only");
    };
    let timeout = a.call_timeout_ms.map(Duration::from_millis);
    let router = Router::new(&ns, &transport, a.services, a.validate, timeout, &opts())?;
    let stats = router.serve(stop)?;
    println!("{}", serde_json::to_string(&stats)?);
    Ok(())
}

fn call(a: &ClientArgs) -> Result<()> {
    let mut caller: Box<dyn Caller> = match a.reach.meet()? {
        Meet::Msgpass { ns, transport } => {
            let endpoint = if a.via_broker {
                router::ENDPOINT.to_string()
            } else {
                service::endpoint(a.destination)
            };
            Box::new(MsgpassCaller::connect(
                &ns,
                &endpoint,
                &transport,
                a.index,
                a.destination,
                &opts(),
            )?)
        }
        Meet::Dbus(target) => a.reach.lib().connect(&target, a.destination)?,
    };
    client::warm_up(&mut *caller, a.ints, a.warmup)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready")?;
    out.flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    if line.trim() != "go" {
        return Ok(()); // told to leave without measuring
    }
    let report = client::measure(&mut *caller, a.ints, Duration::from_secs_f64(a.seconds));
    writeln!(out, "{}", serde_json::to_string(&report)?)?;
    out.flush()?;
    Ok(())
}
