//! `msgbench serve adder|ipc`: the server side of a suite on one host, for
//! a `msgbench adder --server` or `msgbench ipc --server` on another. It
//! listens on `--listen ADDR:PORT` (the control channel: what the client
//! learns first, see [`control`]) and on the ports after it (adder:
//! instance k on PORT+1+k; ipc: each row's server on PORT+1), every one a
//! msgpass remote tcp channel that asks for the token. When all listen,
//! it prints one ready line on standard output (JSON: the address, the
//! token, the host) and serves until SIGTERM or SIGINT, then closes every
//! channel and exits 0. The token is `--token-file FILE`'s or
//! `MSGBENCH_TOKEN`'s, else a fresh random one ([`secret`]).
//!
//! The client side: [`remote`] (reaching a server, what the results say
//! of it).

mod adder;
pub mod control;
mod ipc;
pub mod remote;
pub mod secret;

use std::io::Write;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use msgpass::{Channel, Token};

use crate::measure::placement::CpuList;

/// The default `--listen`: every address, port 7100.
pub const DEFAULT_LISTEN: &str = "0.0.0.0:7100";

/// Options of `msgbench serve`.
#[derive(Debug, Args)]
pub struct ServeArgs {
    /// The suite whose server side to run.
    #[command(subcommand)]
    pub suite: ServeSuite,
}

/// The suites `msgbench serve` serves.
#[derive(Debug, Subcommand)]
pub enum ServeSuite {
    /// Adder instances for `msgbench adder --server` (its "One process"
    /// rows): instance k on PORT+1+k, each on a thread of its own.
    Adder(AdderServeArgs),
    /// ipc rows for `msgbench ipc --server` (its tcp rows): each row's
    /// echo server, on PORT+1, one row at a time.
    Ipc(IpcServeArgs),
}

/// What every `msgbench serve` takes.
#[derive(Debug, Clone, Args)]
pub struct Listen {
    /// The control address clients give as --server; the suite's channels
    /// listen on the ports after it (port 1 to 65535).
    #[arg(long = "listen", value_name = "ADDR:PORT", default_value = DEFAULT_LISTEN)]
    pub listen: String,
    /// Ask clients for the token in FILE (32 hexadecimal digits, a file of
    /// this user that nobody else may read) [default: $MSGBENCH_TOKEN,
    /// else a fresh random token]; the ready line prints it.
    #[arg(long = "token-file", value_name = "FILE")]
    pub token_file: Option<PathBuf>,
}

/// Options of `msgbench serve adder`.
#[derive(Debug, Clone, Args)]
pub struct AdderServeArgs {
    /// Instances served (1 to 128): a client may run up to N threads.
    #[arg(short = 'n', value_name = "N", default_value_t = 1)]
    pub n: u32,
    /// Pin instance k to the k-th CPU of LIST (e.g. 0,1 or 0-3).
    #[arg(long = "cpus", value_name = "LIST", value_parser = crate::measure::placement::parse_cpus_arg)]
    pub cpus: Option<CpuList>,
    /// --listen, --token-file.
    #[command(flatten)]
    pub listen: Listen,
}

/// Options of `msgbench serve ipc`.
#[derive(Debug, Clone, Args)]
pub struct IpcServeArgs {
    /// The CPU each row's server thread is pinned to [default: the first
    /// this process may run on].
    #[arg(long = "cpu", value_name = "N")]
    pub cpu: Option<usize>,
    /// --listen, --token-file.
    #[command(flatten)]
    pub listen: Listen,
}

/// Runs `msgbench serve` until `stop` is set (SIGINT, SIGTERM).
pub fn run(args: &ServeArgs, stop: Arc<AtomicBool>) -> Result<()> {
    match &args.suite {
        ServeSuite::Adder(a) => adder::run(a, stop),
        ServeSuite::Ipc(a) => ipc::run(a, stop),
    }
}

/// The checked `--listen` address and port count: the control port and
/// `ports` more after it must fit below 65536.
fn listen_addr(given: &str, ports: u32) -> Result<SocketAddr> {
    let addr = given
        .to_socket_addrs()
        .map_err(|e| anyhow!("--listen {given}: expected ADDR:PORT, like 10.0.0.1:7100 ({e})"))?
        .next()
        .ok_or_else(|| anyhow!("--listen {given}: the name has no address"))?;
    if addr.port() == 0 {
        bail!("--listen {given}: give a port from 1 to 65535 (the suite's channels take the next ones)");
    }
    if u32::from(addr.port()) + ports > u32::from(u16::MAX) {
        bail!(
            "--listen {given}: the last channel would need port {}, above 65535 (use a lower port)",
            u32::from(addr.port()) + ports
        );
    }
    Ok(addr)
}

/// `addr` with port `port + k`, which [`listen_addr`] has checked fits.
fn port_after(addr: SocketAddr, k: u32) -> SocketAddr {
    let mut a = addr;
    a.set_port(addr.port().saturating_add(k as u16));
    a
}

/// The msgpass options of every channel a server makes: the token asked.
fn options(token: &Token) -> msgpass::Options {
    msgpass::Options {
        token: Some(token.clone()),
        ..msgpass::Options::default()
    }
}

/// A remote tcp channel at `addr` with the token, sharing `stop`.
fn listen(addr: SocketAddr, token: &Token, stop: &Arc<AtomicBool>) -> Result<Channel> {
    let mut ch = Channel::listen_tcp(addr, &options(token))
        .with_context(|| format!("cannot listen on {addr}"))?;
    ch.set_stop_flag(Arc::clone(stop));
    Ok(ch)
}

/// Prints the ready line (one line of JSON) and flushes it.
fn ready(listen: SocketAddr, token: &Token, info: &control::Info) -> Result<()> {
    let line = serde_json::to_string(&control::Ready {
        ready: true,
        listen: listen.to_string(),
        token: token.to_hex(),
        pid: std::process::id(),
        info,
    })?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}").context("cannot print the ready line")?;
    out.flush().context("cannot print the ready line")
}
