//! The processes of `--idle-clients`, `--clients` and `--layout process`:
//! this executable re-run as the hidden `msgbench ipc-peer
//! idle|client|server`, started, talked
//! to and stopped by the suite through [`crate::measure::peers`] (own
//! process group, dead with the suite, reaped). Not meant to be run by
//! hand, but they check their options like any other command.
//!
//! `idle`: raises its soft RLIMIT_NOFILE to the hard limit, prints
//! `started`, waits for `connect` on its standard input (so the suite can
//! read its own memory and descriptors before any connection exists),
//! opens `--count` connections with [`Connection::open`], each making one
//! checked call (`CMD_PING`), prints `ready fds=N` (the descriptors it
//! opened for them) and holds them, idle, until SIGTERM or the suite dies.
//!
//! `server`: the row's server with `--layout process`: starts the same
//! server thread a thread-layout row runs, pinned to `--cpu`, prints
//! `ready` (or `skip REASON`), serves until told `stop` (or its input
//! ends, or SIGTERM), then prints `stopped` or `failed REASON`.
//!
//! `client`: pins itself, opens its connection as the rows' measured
//! client does (typed for shm), warms up, prints `ready` (or `n/a MAX`
//! when the size is beyond the transport's), waits for `go`, makes
//! checked round trips for `--secs` and prints its `ClientReport` as one
//! JSON line.

use std::io::{BufRead, Write};
use std::os::fd::AsFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use msgpass::transport::ClientConnection;
use msgpass::{Connection, Namespace, Options};
use oslayer::rlimit::{self, Resource};

use super::connect::{open_then, OverConnection};
use super::context::SERVER_STOP_LIMIT;
use super::crowd::ClientReport;
use super::echo::Echo;
use super::options::{parse_fault, parse_spin_us, MAX_SIZE};
use super::protocol::{echo_transform, CMD_PING, PING_MAX};
use super::row::Api;
use super::scale::{CHILD_SLACK_FDS, MAX_CLIENTS, MAX_IDLE, MAX_PER_CHILD};
use super::server::{Fault, ServerThread};
use crate::measure::clock::Clock;
use crate::measure::footprint::open_fds;
use crate::measure::hist::Recorder;
use crate::measure::peers;
use crate::measure::placement::{pin_current_thread, MAX_CPU_ID};

// Every count and size a peer takes is bounded by what the suite itself
// asks for, by its value parser, before anything is allocated (a peer
// run by hand with `--count 4294967295` is a usage error, issue 33).

/// The most round trips before `ready` (`--warmup`).
const MAX_WARMUP: i64 = 1_000_000;
/// The longest a client makes round trips (`--secs`).
const MAX_SECS: f64 = 3600.0;

/// `--secs` out of (0, `MAX_SECS`] (clap prints it after `--secs VALUE: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must be a number of seconds above 0, at most {MAX_SECS}")]
pub struct BadSecs;

/// Value parser of `--secs`.
fn secs(s: &str) -> std::result::Result<f64, BadSecs> {
    match s.trim().parse::<f64>() {
        Ok(v) if v > 0.0 && v <= MAX_SECS => Ok(v),
        _ => Err(BadSecs),
    }
}

/// The hidden subcommand the peers run as.
pub const COMMAND: &str = "ipc-peer";

/// `msgbench ipc-peer`: one process of an ipc row's clients.
pub type PeerArgs = peers::PeerArgs<Role>;

/// The processes of an ipc row.
#[derive(Debug, Subcommand)]
pub enum Role {
    /// Idle clients: connect, call once each, hold.
    Idle(IdleArgs),
    /// One active client: ready, go, report.
    Client(ClientArgs),
    /// The row's server (`--layout process`): ready, serve, stop.
    Server(ServerArgs),
}

/// The row's server.
#[derive(Debug, Clone, Args)]
pub struct Reach {
    /// msgpass transport.
    #[arg(short = 't', long = "transport", value_name = "NAME")]
    pub transport: String,
    /// The run's namespace directory.
    #[arg(long = "ns", value_name = "DIR")]
    pub ns: PathBuf,
    /// The row's endpoint.
    #[arg(long = "endpoint", value_name = "NAME")]
    pub endpoint: String,
    /// Hybrid waiting: spin budget in microseconds.
    #[arg(long = "spin-us", value_name = "US", default_value_t = 20, value_parser = parse_spin_us)]
    pub spin_us: u64,
}

/// The arguments of `ipc-peer ROLE` up to the role's own: where the
/// row's server is (the reverse of [`Reach`]).
pub fn reach_args(
    role: &str,
    transport: &str,
    ns: &std::path::Path,
    endpoint: &str,
    spin_us: u64,
) -> Vec<String> {
    vec![
        role.to_string(),
        "-t".into(),
        transport.into(),
        "--ns".into(),
        ns.display().to_string(),
        "--endpoint".into(),
        endpoint.into(),
        "--spin-us".into(),
        spin_us.to_string(),
    ]
}

impl Reach {
    fn options(&self) -> Result<Options> {
        crate::cli::check_spin_us(self.spin_us)?;
        Ok(Options {
            spin: Duration::from_micros(self.spin_us),
            wait: Some(WAIT),
            ..Options::default()
        })
    }
}

/// `ipc-peer idle`.
#[derive(Debug, Args)]
pub struct IdleArgs {
    /// Connections to open (at most as many as the suite gives a child).
    #[arg(long = "count", value_name = "N",
          value_parser = clap::value_parser!(u32).range(0..=MAX_PER_CHILD as i64))]
    pub count: u32,
    /// Number of the first connection (each pings with its own).
    #[arg(long = "first", value_name = "K", default_value_t = 0,
          value_parser = clap::value_parser!(u64).range(0..u64::from(MAX_IDLE)))]
    pub first: u64,
    /// The server.
    #[command(flatten)]
    pub reach: Reach,
}

/// What a row's client or server process measures with, and where.
#[derive(Debug, Clone, Args)]
pub struct Shape {
    /// Message size, bytes (at most the suite's largest `--sizes`).
    #[arg(long = "size", value_name = "BYTES",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=MAX_SIZE as u64))]
    pub size: usize,
    /// The API: in-place or copy.
    #[arg(
        long = "api",
        value_name = "API",
        default_value = "in-place",
        value_parser = parse_api
    )]
    pub api: Api,
    /// CPU to pin the measuring thread to.
    #[arg(long = "cpu", value_name = "CPU",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(0..=MAX_CPU_ID as u64))]
    pub cpu: usize,
}

/// The arguments of a [`Shape`] (the reverse of its parsing).
pub fn shape_args(size: usize, api: Api, cpu: usize) -> [String; 6] {
    [
        "--size".into(),
        size.to_string(),
        "--api".into(),
        api.name().into(),
        "--cpu".into(),
        cpu.to_string(),
    ]
}

/// `ipc-peer client`.
#[derive(Debug, Args)]
pub struct ClientArgs {
    /// Its index (its range of sequence numbers).
    #[arg(long = "index", value_name = "K",
          value_parser = clap::value_parser!(u32).range(0..i64::from(MAX_CLIENTS)))]
    pub index: u32,
    /// Its message size, API and CPU.
    #[command(flatten)]
    pub shape: Shape,
    /// Seconds of round trips after `go`.
    #[arg(long = "secs", value_name = "SECS", value_parser = secs)]
    pub secs: f64,
    /// Round trips before `ready`.
    #[arg(long = "warmup", value_name = "CALLS", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(0..=MAX_WARMUP))]
    pub warmup: u32,
    /// The server.
    #[command(flatten)]
    pub reach: Reach,
}

/// `ipc-peer server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// The row's message size and API, and the CPU of the serving thread.
    #[command(flatten)]
    pub shape: Shape,
    /// Test hook: the reply this server breaks (as ipc's --inject-fault).
    #[arg(long = "fault", value_name = "KIND", value_parser = parse_fault)]
    pub fault: Option<Fault>,
    /// Where to serve.
    #[command(flatten)]
    pub reach: Reach,
}

/// Threads an idle peer connects from.
const CONNECT_THREADS: u64 = 32;

/// How long a peer waits for the row's endpoint.
const WAIT: Duration = Duration::from_secs(5);

/// Runs one peer until it is done or stopped.
pub fn run(args: &PeerArgs, stop: Arc<AtomicBool>) -> Result<()> {
    args.die_with_parent()?;
    match &args.role {
        Role::Idle(a) => idle(a, &stop),
        Role::Client(a) => client(a, stop),
        Role::Server(a) => server(a, &stop),
    }
}

/// Serves the row as its server thread would, until the suite says
/// `stop` (or closes our input, or SIGTERM), then says how it stopped.
fn server(a: &ServerArgs, stop: &AtomicBool) -> Result<()> {
    let opts = a.reach.options()?;
    let ns = Namespace::open(&a.reach.ns)?;
    let r = &a.reach;
    let started = ServerThread::start(
        &ns,
        &r.endpoint,
        &r.transport,
        &opts,
        a.shape.cpu,
        a.shape.size,
        a.fault,
        a.shape.api,
    );
    let server = match started {
        Ok(s) => s,
        Err(e) => return say(&format!("skip {e}")),
    };
    say("ready")?;
    hold(stop)?;
    match server.stop(SERVER_STOP_LIMIT) {
        Ok(()) => say("stopped"),
        Err(e) => say(&format!("failed {e}")),
    }
}

/// One line to the suite.
fn say(line: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(())
}

/// Waits for the line `want` from the suite: false when another line or
/// the end of input came instead (the suite is done with us).
fn told(want: &str) -> Result<bool> {
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(line.trim() == want)
}

fn idle(a: &IdleArgs, stop: &AtomicBool) -> Result<()> {
    let limit = rlimit::raise_soft_to_hard(Resource::Nofile).context("RLIMIT_NOFILE")?;
    let opts = a.reach.options()?;
    let ns = Namespace::open(&a.reach.ns)?;
    let t = msgpass::transport::by_name(&a.reach.transport)?;
    say("started")?;
    if !told("connect")? {
        return Ok(());
    }
    let base = open_fds()?;
    let connect = |id: u64| -> Result<Connection> {
        let mut c = Connection::open(&ns, &a.reach.endpoint, &*t, &opts)
            .with_context(|| format!("idle connection {id}: cannot connect"))?;
        ping(&mut c, id).with_context(|| format!("idle connection {id}"))?;
        Ok(c)
    };
    let mut conns = Vec::with_capacity(a.count as usize);
    if a.count == 0 {
        return say("ready fds=0");
    }
    conns.push(connect(a.first)?);
    room_for(a.count, open_fds()?.saturating_sub(base), base, limit)?;
    // The rest from several threads at once: a server that takes new
    // clients only now and then (shm: once a tick while it has many)
    // then takes a batch each time rather than one.
    let rest = u64::from(a.count) - 1;
    let threads = rest.min(CONNECT_THREADS);
    let batches = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|i| {
                let connect = &connect;
                s.spawn(move || -> Result<Vec<Connection>> {
                    let mut mine = Vec::new();
                    for k in (1 + i..=rest).step_by(threads as usize) {
                        if stop.load(Ordering::Relaxed) {
                            break;
                        }
                        mine.push(connect(a.first + k)?);
                    }
                    Ok(mine)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a connecting thread panicked")))
            })
            .collect::<Vec<_>>()
    });
    for b in batches {
        conns.extend(b?);
    }
    if stop.load(Ordering::Relaxed) {
        return Ok(());
    }
    say(&format!("ready fds={}", open_fds()?.saturating_sub(base)))?;
    hold(stop)
}

/// Holds the connections until the suite is done with us: its line, the
/// end of our standard input (the suite stopped us, or died), or SIGTERM;
/// waking once a second at most, so as not to disturb what is measured.
fn hold(stop: &AtomicBool) -> Result<()> {
    let stdin = std::io::stdin();
    while !stop.load(Ordering::Relaxed) {
        let mut p = [oslayer::poll::PollFd::readable(stdin.as_fd())];
        match oslayer::poll::poll(&mut p, Some(Duration::from_secs(1))) {
            Ok(0) => {}
            Ok(_) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e).context("waiting for the suite"),
        }
    }
    Ok(())
}

/// Checks, after the first connection took `first` descriptors, that
/// `count` of them fit within `limit` beside the `base` ones.
fn room_for(count: u32, first: usize, base: usize, limit: Option<u64>) -> Result<()> {
    let Some(limit) = limit else { return Ok(()) };
    let need = (base as u64 + CHILD_SLACK_FDS / 2).saturating_add(first as u64 * u64::from(count));
    if need > limit {
        bail!(
            "{count} idle connections of {first} descriptor(s) each need about {need} \
             descriptors in one process, more than its RLIMIT_NOFILE of {limit}"
        );
    }
    Ok(())
}

/// One call on `c` that proves it valid: [`CMD_PING`] with `id`, the
/// reply checked.
fn ping<C: ClientConnection + ?Sized>(c: &mut Connection<C>, id: u64) -> Result<()> {
    let req = id.to_le_bytes();
    let mut want = [0u8; 8];
    echo_transform(&req, &mut want);
    let mut reply = [0u8; PING_MAX];
    let n = c.call(CMD_PING, &req, &mut reply).context("its call")?;
    if reply[..n] != want {
        bail!(
            "wrong reply to its call: {:02x?}, expected {want:02x?}",
            &reply[..n]
        );
    }
    Ok(())
}

/// An `--api` other than in-place and copy (clap prints it after
/// `--api value: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown API (known: in-place, copy)")]
pub struct UnknownApi;

/// Value parser of `--api`.
fn parse_api(s: &str) -> std::result::Result<Api, UnknownApi> {
    match s {
        "in-place" => Ok(Api::InPlace),
        "copy" => Ok(Api::Copy),
        _ => Err(UnknownApi),
    }
}

fn client(a: &ClientArgs, stop: Arc<AtomicBool>) -> Result<()> {
    let api = a.shape.api;
    pin_current_thread(a.shape.cpu).map_err(|e| anyhow!("--cpu {}: {e}", a.shape.cpu))?;
    let opts = a.reach.options()?;
    let ns = Namespace::open(&a.reach.ns)?;
    let r = &a.reach;
    open_then(
        &ns,
        &r.endpoint,
        &r.transport,
        &opts,
        Active { a, api, stop },
    )
    .context("cannot connect")?
}

/// An active client over its connection.
struct Active<'a> {
    a: &'a ClientArgs,
    api: Api,
    stop: Arc<AtomicBool>,
}

impl OverConnection for Active<'_> {
    type Out = Result<()>;

    fn over<C: ClientConnection + ?Sized>(self, mut conn: Connection<C>) -> Result<()> {
        let a = self.a;
        if conn.max_msg() < a.shape.size {
            return say(&format!("n/a {}", conn.max_msg()));
        }
        let clock = Clock::monotonic();
        let mut echo = Echo::new(a.shape.size, self.api, conn.in_place())
            .numbered_from(u64::from(a.index) << 40);
        echo.restart();
        for _ in 0..a.warmup {
            echo.round(&mut conn, &clock)
                .map_err(|s| anyhow!("warm-up: {}", s.reason()))?;
        }
        say("ready")?;
        if !told("go")? {
            return Ok(());
        }
        let report = timed(a, &mut conn, &mut echo, &clock, &self.stop);
        say(&serde_json::to_string(&report)?)
    }
}

/// Round trips for `a.secs`, each timed and checked; a wrong reply ends
/// them, and the report says why.
fn timed<C: ClientConnection + ?Sized>(
    a: &ClientArgs,
    conn: &mut Connection<C>,
    echo: &mut Echo,
    clock: &Clock,
    stop: &AtomicBool,
) -> ClientReport {
    // One timestamp's cost comes out of each round trip, as in the rows.
    let overhead = (clock.overhead_ns() / 1000.0 * clock.ticks_per_us()).round() as u64;
    let mut rec = Recorder::new();
    let start = clock.now();
    let deadline = start.wrapping_add((a.secs * 1e6 * clock.ticks_per_us()) as u64);
    echo.begin_run(u64::MAX, deadline);
    let (mut calls, mut error) = (0u64, None);
    loop {
        match echo.round(conn, clock) {
            Ok((t0, t1)) => {
                rec.record(t1.wrapping_sub(t0).saturating_sub(overhead));
                calls += 1;
                if t1 >= deadline {
                    break;
                }
            }
            Err(s) => {
                error = Some(s.reason());
                break;
            }
        }
        if calls % 256 == 0 && stop.load(Ordering::Relaxed) {
            error = Some("interrupted".into());
            break;
        }
    }
    echo.end_run();
    let elapsed_ns = clock.ticks_to_ns(clock.now().wrapping_sub(start));
    let s = rec.summary(clock);
    ClientReport {
        index: a.index,
        calls,
        elapsed_ns,
        msgs_per_s: calls as f64 / (elapsed_ns / 1e9).max(1e-9),
        p50_ns: s.p50_ns,
        p99_ns: s.p99_ns,
        max_ns: s.max_ns,
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_refuses_what_its_limit_cannot_hold() {
        assert!(room_for(1000, 3, 10, Some(20_000)).is_ok());
        assert!(room_for(1000, 3, 10, None).is_ok());
        let e = room_for(10_000, 3, 10, Some(20_000))
            .unwrap_err()
            .to_string();
        assert!(e.contains("RLIMIT_NOFILE of 20000"), "{e}");
    }

    #[test]
    fn the_api_is_in_place_or_copy() {
        assert_eq!(parse_api("in-place"), Ok(Api::InPlace));
        assert_eq!(parse_api("copy"), Ok(Api::Copy));
        let e = parse_api("zero-copy").unwrap_err();
        assert_eq!(e.to_string(), "unknown API (known: in-place, copy)");
    }
}
