//! The server of a `--layout process` row: `msgbench ipc-peer server`
//! ([`super::peer`]), the same [`ServerThread`](super::ServerThread) run
//! in a process of its own, started, told to stop and reaped through
//! [`crate::measure::peers`]. It says `ready` once its channel exists (or
//! `skip REASON` when it cannot serve), and after `stop` says `stopped`
//! or `failed REASON`: what went wrong in it reaches the row as it would
//! from a thread.

use std::time::Duration;

use super::context::RowContext;
use super::peer;
use super::row::RowSpec;
use super::server_error::ServerError;
use crate::measure::peers::Peer;

/// How long the server process may take to start and make its channel.
const READY: Duration = Duration::from_secs(15);
/// How long it may take to exit once it said how it stopped.
const GRACE: Duration = Duration::from_secs(3);

/// A running server process.
pub struct ServerProcess {
    peer: Peer,
}

impl ServerProcess {
    /// Starts the server of row `spec` as endpoint `endpoint`, its
    /// serving thread pinned to `cpu`; waits until it serves. The error
    /// is the row's skip reason.
    pub fn start(
        ctx: &RowContext,
        endpoint: &str,
        spec: &RowSpec,
        cpu: usize,
    ) -> Result<ServerProcess, ServerError> {
        let mut args = peer::reach_args(
            "server",
            spec.transport,
            ctx.ns.root(),
            endpoint,
            ctx.plan.spin_us,
        );
        args.extend(peer::shape_args(spec.size, spec.api, cpu));
        if let Some(f) = ctx.fault {
            args.extend(["--fault".into(), f.name().into()]);
        }
        let failed = |e: anyhow::Error| ServerError::Process(format!("{e:#}"));
        let mut peer = Peer::start(peer::COMMAND, "the server process", &args).map_err(failed)?;
        let line = peer.line(READY).map_err(failed)?;
        if let Some(reason) = line.strip_prefix("skip ") {
            let _ = peer.finish(GRACE);
            return Err(ServerError::Process(reason.to_string()));
        }
        if line != "ready" {
            return Err(ServerError::Process(format!(
                "the server process said {line:?}, expected ready"
            )));
        }
        Ok(ServerProcess { peer })
    }

    /// Its process id (its CPU clock counts in the row's "CPU all").
    pub fn pid(&self) -> i32 {
        self.peer.pid()
    }

    /// Stops it (if the client's stop did not already end its serving)
    /// and waits up to `limit` for its word and its exit.
    pub fn stop(mut self, limit: Duration) -> Result<(), ServerError> {
        let failed = |e: anyhow::Error| ServerError::Process(format!("{e:#}"));
        self.peer.send("stop").map_err(failed)?;
        let line = self.peer.line(limit + GRACE).map_err(failed)?;
        let said = match line.strip_prefix("failed ") {
            Some(reason) => Err(ServerError::Process(reason.to_string())),
            None if line == "stopped" => Ok(()),
            None => Err(ServerError::Process(format!(
                "the server process said {line:?}, expected stopped"
            ))),
        };
        self.peer.finish(GRACE).map_err(failed)?;
        said
    }
}

/// A row's server: a thread of this process or a process of its own.
pub enum RowServer {
    /// `--layout thread`.
    Thread(super::ServerThread),
    /// `--layout process`.
    Process(ServerProcess),
}

impl RowServer {
    /// The server's process when it is not this one.
    pub fn pid(&self) -> Option<i32> {
        match self {
            RowServer::Thread(_) => None,
            RowServer::Process(p) => Some(p.pid()),
        }
    }

    /// Stops it and waits up to `limit`.
    pub fn stop(self, limit: Duration) -> Result<(), ServerError> {
        match self {
            RowServer::Thread(t) => t.stop(limit),
            RowServer::Process(p) => p.stop(limit),
        }
    }
}
