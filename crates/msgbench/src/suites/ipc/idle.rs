//! `--idle-clients N`: N idle, connected, valid clients beside a row's
//! measured one. They are processes (`msgbench ipc-peer idle`, see
//! [`super::peer`]), as many as hold them within their own RLIMIT_NOFILE
//! ([`scale::children`]), each opening its share of connections with
//! `Connection::open` and calling once on each before it says `ready`.
//!
//! The server is a thread of this process, so what the connections cost
//! it is this process's growth: resident memory and open descriptors read
//! once every child has started (their pipes are then open) and before
//! any connects, and again once all have connected and called. Each child
//! also says how many descriptors its own connections took.

use std::time::{Duration, Instant};

use super::context::RowContext;
use super::crowd::IdleCost;
use super::peer;
use super::scale;
use super::server_error::ServerError;
use super::stop::Stop;
use crate::measure::footprint::{open_fds, rss_bytes};
use crate::measure::peers::Peer;

/// How long a child may take to start, besides connecting.
const START: Duration = Duration::from_secs(15);
/// How long all children may take to connect, besides
/// [`CONNECT_PER_CONN`] for each connection.
const CONNECT: Duration = Duration::from_secs(30);
/// More time to connect for each connection (a server whose cost grows
/// with its connections takes longer for each one).
const CONNECT_PER_CONN: Duration = Duration::from_millis(20);
/// How long a child may take to exit once told to stop.
const GRACE: Duration = Duration::from_secs(5);

/// A row's idle clients, connected: the cost they were measured at, and
/// the processes holding them (stopped by [`IdleClients::stop`], else on
/// drop).
pub struct IdleClients {
    peers: Vec<Peer>,
    /// What they cost the server.
    pub cost: IdleCost,
}

impl IdleClients {
    /// Connects `n` idle clients to `endpoint` over `transport`, and
    /// measures what they cost this process. The error ends the row.
    pub fn start(
        ctx: &RowContext,
        endpoint: &str,
        transport: &str,
        n: u32,
    ) -> Result<IdleClients, Stop> {
        let failed = |e: anyhow::Error| Stop::Failed(format!("idle clients: {e:#}"));
        let shares = scale::children(n);
        let mut peers = Vec::with_capacity(shares.len());
        let mut first = 0u64;
        for (k, &count) in shares.iter().enumerate() {
            let mut args =
                peer::reach_args("idle", transport, ctx.ns.root(), endpoint, ctx.plan.spin_us);
            args.extend([
                "--count".into(),
                count.to_string(),
                "--first".into(),
                first.to_string(),
            ]);
            first += u64::from(count);
            let what = format!("idle clients process {k}");
            peers.push(Peer::start(peer::COMMAND, what, &args).map_err(failed)?);
        }
        let deadline = Instant::now() + START;
        for p in &mut peers {
            let line = ctx.line_of(p, deadline.saturating_duration_since(Instant::now()))?;
            if line != "started" {
                return Err(Stop::Failed(format!(
                    "idle clients: said {line:?}, expected started"
                )));
            }
        }
        let (rss0, fds0) = footprint().map_err(failed)?;
        let t0 = Instant::now();
        for p in &mut peers {
            p.send("connect").map_err(failed)?;
        }
        let deadline = t0 + CONNECT + CONNECT_PER_CONN * n;
        let mut client_fds = 0u64;
        for p in &mut peers {
            let line = ctx.line_of(p, deadline.saturating_duration_since(Instant::now()))?;
            let fds = line
                .strip_prefix("ready fds=")
                .and_then(|v| v.parse::<u64>().ok())
                .ok_or_else(|| {
                    Stop::Failed(format!("idle clients: said {line:?}, expected ready"))
                })?;
            client_fds += fds;
        }
        let connect_secs = t0.elapsed().as_secs_f64();
        let (rss1, fds1) = footprint().map_err(failed)?;
        let per = |a: u64, b: u64| (b as f64 - a as f64) / f64::from(n);
        let cost = IdleCost {
            connections: n,
            processes: peers.len() as u32,
            rss_before_bytes: rss0,
            rss_after_bytes: rss1,
            fds_before: fds0,
            fds_after: fds1,
            rss_bytes_per_conn: per(rss0, rss1),
            fds_per_conn: per(fds0, fds1),
            client_fds_per_conn: client_fds as f64 / f64::from(n),
            connect_secs,
        };
        Ok(IdleClients { peers, cost })
    }

    /// Stops every child (SIGTERM) and reaps it; the error says which did
    /// not exit cleanly.
    pub fn stop(mut self) -> Result<(), ServerError> {
        let errors: Vec<String> = self
            .peers
            .iter_mut()
            .filter_map(|p| p.stop(GRACE).err().map(|e| format!("{e:#}")))
            .collect();
        if errors.is_empty() {
            Ok(())
        } else {
            Err(ServerError::IdleClients(errors))
        }
    }
}

/// This process's resident memory (bytes) and open descriptors.
fn footprint() -> anyhow::Result<(u64, u64)> {
    Ok((rss_bytes()?, open_fds()? as u64))
}
