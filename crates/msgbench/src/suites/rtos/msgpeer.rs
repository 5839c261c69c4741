//! The server process of the MSG tests: this executable re-run as the
//! hidden `msgbench rtos-peer server`, started, talked to and stopped by
//! the suite through [`crate::measure::peers`] (own process group, dead
//! with the suite, reaped). Not meant to be run by hand, but it checks
//! its options like any other command.
//!
//! It puts itself at SCHED_FIFO `--fifo` on CPU `--cpu` (every thread it
//! starts after, msgpass's watcher included, stays on that CPU), serves
//! `--endpoint` over `--transport` (uds unless named) with one thread (with
//! [`msgpass::Options::inherit_priority`] when `--inherit`), prints
//! `ready`, and answers until SIGTERM or the suite dies:
//! - [`ECHO`]: the request's bytes back;
//! - [`ECHO_AT`]: the request's bytes back, then the FIFO priority this
//!   thread was serving at, read from the kernel while handling it (a
//!   little-endian u32, 0 when not FIFO): the check of every call;
//! - [`WORK`]: busy-works the microseconds of CPU time the request names
//!   (a little-endian u64), then replies with the FIFO priority it was
//!   running at when the work began, the highest seen during the work,
//!   and the one at the reply (three little-endian u32, 0 when not FIFO),
//!   all read from the kernel;
//! - anything else: the error ENOTTY.

use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use clap::{Args, Subcommand};
use msgpass::{Channel, Namespace, Options};
use oslayer::clock::{now_ns, Clock};
use oslayer::prio;

use crate::measure::peers;

/// The hidden subcommand the server runs as.
pub const COMMAND: &str = "rtos-peer";
/// The transport of the MSG tests unless `--msg-transport` names another.
pub const TRANSPORT: &str = "uds";
/// Reply with the request's bytes.
pub const ECHO: u32 = 1;
/// Busy-work, then reply with the priorities seen (see the module docs).
pub const WORK: u32 = 2;
/// [`ECHO`], with the FIFO priority the request was served at after the
/// bytes.
pub const ECHO_AT: u32 = 3;
/// The longest work a [`WORK`] request may ask for.
const MAX_WORK: Duration = Duration::from_secs(1);

/// `msgbench rtos-peer`: the server of an MSG test.
pub type PeerArgs = peers::PeerArgs<Role>;

/// The processes of an MSG test started by the suite.
#[derive(Debug, Subcommand)]
pub enum Role {
    /// The server: ready, then serve until SIGTERM.
    Server(ServerArgs),
}

/// `rtos-peer server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    /// The test's namespace directory.
    #[arg(long = "ns", value_name = "DIR")]
    pub ns: PathBuf,
    /// The endpoint to serve.
    #[arg(long = "endpoint", value_name = "NAME")]
    pub endpoint: String,
    /// The CPU it runs on.
    #[arg(long = "cpu", value_name = "CPU",
          value_parser = clap::builder::RangedU64ValueParser::<usize>::new()
              .range(0..=crate::measure::placement::MAX_CPU_ID as u64))]
    pub cpu: usize,
    /// Its own SCHED_FIFO priority, 1 to 98.
    #[arg(long = "fifo", value_name = "PRIO", value_parser = clap::value_parser!(u32).range(1..=98))]
    pub fifo: u32,
    /// Serve with priority inheritance through messages.
    #[arg(long = "inherit")]
    pub inherit: bool,
    /// The msgpass transport to serve on.
    #[arg(long = "transport", value_name = "T", default_value = TRANSPORT,
          value_parser = crate::devctl::options::transport_name)]
    pub transport: String,
}

/// The arguments of `rtos-peer server`.
pub fn server_args(
    ns: &std::path::Path,
    endpoint: &str,
    transport: &str,
    cpu: usize,
    fifo: u32,
    inherit: bool,
) -> Vec<String> {
    let mut v = vec![
        "server".to_string(),
        "--ns".into(),
        ns.display().to_string(),
        "--endpoint".into(),
        endpoint.into(),
        "--cpu".into(),
        cpu.to_string(),
        "--fifo".into(),
        fifo.to_string(),
        "--transport".into(),
        transport.into(),
    ];
    if inherit {
        v.push("--inherit".into());
    }
    v
}

/// Runs the peer until it is stopped.
pub fn run(args: &PeerArgs, stop: Arc<AtomicBool>) -> Result<()> {
    args.die_with_parent()?;
    match &args.role {
        Role::Server(a) => serve(a, stop),
    }
}

/// The options both ends of an MSG test use: no spinning (a waiter
/// spinning at SCHED_FIFO on the CPU its peer needs would only delay it).
pub fn options(inherit: bool) -> Options {
    Options {
        spin: Duration::ZERO,
        tick: Duration::from_millis(20),
        wait: Some(Duration::from_secs(5)),
        inherit_priority: inherit,
        ..Options::default()
    }
}

fn serve(a: &ServerArgs, stop: Arc<AtomicBool>) -> Result<()> {
    super::rt::enter(Some(a.fifo as i32), Some(a.cpu))?;
    let ns = Namespace::open(&a.ns)?;
    let t = msgpass::transport::by_name(&a.transport)?;
    let mut chan = Channel::create(&ns, &a.endpoint, &*t, &options(a.inherit))
        .with_context(|| format!("cannot serve {}", a.endpoint))?;
    chan.set_stop_flag(stop);
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "ready")?;
        out.flush()?;
    }
    while let Some(req) = chan.receive()? {
        match req.cmd() {
            ECHO => {
                let data = req.data().to_vec();
                req.reply(&data)?;
            }
            ECHO_AT => {
                let mut data = req.data().to_vec();
                data.extend_from_slice(&fifo_now().to_le_bytes());
                req.reply(&data)?;
            }
            WORK => {
                let us = req
                    .data()
                    .get(..8)
                    .and_then(|b| b.try_into().ok())
                    .map(u64::from_le_bytes)
                    .ok_or_else(|| anyhow!("a WORK request without its 8 bytes"))?;
                let seen = work(Duration::from_micros(us).min(MAX_WORK));
                let mut reply = Vec::with_capacity(12);
                for p in [seen.0, seen.1, fifo_now()] {
                    reply.extend_from_slice(&p.to_le_bytes());
                }
                req.reply(&reply)?;
            }
            _ => req.reply_error(libc::ENOTTY)?,
        }
    }
    Ok(())
}

/// The calling thread's SCHED_FIFO priority as the kernel has it (0 when
/// not FIFO or unreadable).
pub fn fifo_now() -> u32 {
    match prio::attr(0) {
        Ok(a) if a.policy == libc::SCHED_FIFO => a.priority,
        _ => 0,
    }
}

/// Spins until this thread has used `cpu` of CPU time (time it is kept
/// off the CPU does not count, so the work is the same whoever preempts
/// it); the FIFO priority at the start and the highest seen meanwhile.
fn work(cpu: Duration) -> (u32, u32) {
    let first = fifo_now();
    let mut highest = first;
    let end = now_ns(Clock::ThreadCpu).saturating_add(cpu.as_nanos() as u64);
    let mut next_look = 0u64;
    loop {
        let now = now_ns(Clock::ThreadCpu);
        if now >= end {
            return (first, highest);
        }
        if now >= next_look {
            highest = highest.max(fifo_now());
            next_look = now + 200_000;
        }
        std::hint::spin_loop();
    }
}
