//! One row against a remote server (`--server`: `msgbench serve ipc` on
//! another host): ask it for the row's server (the same echo server a
//! local row runs, on its row port), run the client thread against it
//! over tcp under the row's time limit, and end the row as a local one
//! ends (the client's stop ends the remote row's server).

use std::sync::Arc;

use super::client::ClientConfig;
use super::context::RowContext;
use super::load::LoadMeter;
use super::one_row::{conclude, run_client};
use super::options::NoCpus;
use super::row::{Api, Row, RowSpec, Status};
use crate::serve::remote::RemoteServer;

/// Runs row `spec` against `server`, the client on this host's first CPU.
pub fn run(ctx: &RowContext, server: &RemoteServer, spec: &RowSpec) -> Row {
    let row = Row::for_spec(spec);
    let Some(&cpu) = ctx.plan.cpus.first() else {
        return row.end(Status::Skipped, NoCpus::None.to_string());
    };
    let (addr, server_cpu) = match server.ipc_row(spec.size, spec.api == Api::Copy) {
        Ok(offer) => offer,
        Err(e) => return row.end(Status::Failed, format!("{e:#}")),
    };
    let mut row = row;
    (row.client_cpu, row.server_cpu) = (Some(cpu), Some(server_cpu));
    let cfg = ClientConfig {
        ns: ctx.ns.clone(),
        endpoint: String::new(),
        transport: spec.transport.to_string(),
        api: spec.api,
        opts: server.options(ctx.opts.clone()),
        size: spec.size,
        cpu,
        row_secs: ctx.row_secs,
        clock: ctx.clock,
        stop: Arc::clone(ctx.stop),
        warmup_secs: ctx.plan.warmup_secs,
        repeats: ctx.plan.repeats,
        throughput: ctx.throughput,
        sized: ctx.sized,
        timing: ctx.plan.timing,
        rate: ctx.plan.rate,
        window: ctx.plan.window,
        remote: Some(addr),
        count: ctx.plan.count,
        server_pid: None,
    };
    let meter = LoadMeter::start();
    let outcome = run_client(cfg, ctx.hard_limit());
    row.other_load = meter.finish();
    // The remote row's server is the server's to stop: the client's stop
    // ends it, and the next row's ask (or the server's end) stops it
    // otherwise. What went wrong in it is on the server's side.
    conclude(row, spec.transport, outcome, Ok(()))
}
