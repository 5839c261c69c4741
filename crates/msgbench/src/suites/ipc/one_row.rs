//! One row: start the server, a thread or (`--layout process`) a process
//! (and, with `--idle-clients`, the idle clients beside it), run the client thread under a hard time
//! limit, stop the server, and turn what happened into a [`Row`].

use std::sync::atomic::Ordering;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::client::{self, ClientConfig};
use super::context::{RowContext, SERVER_STOP_LIMIT};
use super::idle::IdleClients;
use super::load::LoadMeter;
use super::row::{LatencyRun, Layout, Row, RowSpec, Status, WaitClass};
use super::server::ServerThread;
use super::server_error::ServerError;
use super::server_process::{RowServer, ServerProcess};
use super::stats::{median_index, repeat_stats, REPEAT_WARN_PCT};
use super::stop::{conclude_stop, Stop};

/// Runs row `spec` (one client, and its idle clients if it has any)
/// with the client on `cpus.0` and the server on `cpus.1`, as endpoint
/// `endpoint`.
pub fn run(ctx: &RowContext, endpoint: &str, spec: &RowSpec, cpus: (usize, usize)) -> Row {
    let mut row = Row::for_spec(spec);
    let (transport, api, size) = (spec.transport, spec.api, spec.size);
    if crate::measure::sched::in_effect().fifo_priority.is_some() && row.wait == WaitClass::Polling
    {
        return row.end(
            Status::Skipped,
            "spins, and a spinning SCHED_FIFO thread never yields its CPU",
        );
    }
    if spec.clients.is_some() {
        return super::clients::run(ctx, endpoint, spec, cpus);
    }
    let server = match start_server(ctx, endpoint, spec, cpus.1) {
        Ok(s) => s,
        Err(reason) => return row.end(Status::Skipped, reason.to_string()),
    };
    (row.client_cpu, row.server_cpu) = (Some(cpus.0), Some(cpus.1));
    let idle = match spec.idle.filter(|&n| n > 0) {
        None => None,
        Some(n) => match IdleClients::start(ctx, endpoint, transport, n) {
            Ok(i) => {
                row.idle = Some(i.cost.clone());
                Some(i)
            }
            Err(stop) => {
                let stopped = server.stop(SERVER_STOP_LIMIT);
                return conclude_stop(row, transport, stop, stopped);
            }
        },
    };
    let cfg = ClientConfig {
        ns: ctx.ns.clone(),
        endpoint: endpoint.to_string(),
        transport: transport.to_string(),
        api,
        opts: ctx.opts.clone(),
        size,
        cpu: cpus.0,
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
        remote: None,
        count: ctx.plan.count,
        server_pid: server.pid(),
    };
    let meter = LoadMeter::start_beside(server.pid());
    let outcome = run_client(cfg, ctx.hard_limit());
    row.other_load = meter.finish();
    // The client has sent CMD_STOP when all went well; otherwise the flag
    // makes the server return within one tick.
    let stopped = server.stop(SERVER_STOP_LIMIT);
    // Stopped after the server: nothing they do can touch the figures.
    let stopped = match idle.map(IdleClients::stop) {
        Some(Err(e)) => Err(match stopped {
            Err(s) => ServerError::Both(Box::new(s), Box::new(e)),
            Ok(()) => e,
        }),
        _ => stopped,
    };
    conclude(row, transport, outcome, stopped)
}

/// The row's server on `cpu`: a thread of this process or, with
/// `--layout process`, a process of its own.
fn start_server(
    ctx: &RowContext,
    endpoint: &str,
    spec: &RowSpec,
    cpu: usize,
) -> Result<RowServer, ServerError> {
    match spec.layout {
        Layout::Thread => ServerThread::start(
            ctx.ns,
            endpoint,
            spec.transport,
            ctx.opts,
            cpu,
            spec.size,
            ctx.fault,
            spec.api,
        )
        .map(RowServer::Thread),
        Layout::Process => ServerProcess::start(ctx, endpoint, spec, cpu).map(RowServer::Process),
    }
}

/// The row as the client's `outcome` and the server's stop (`stopped`)
/// leave it: figures, or the status and reason it ended with.
pub(super) fn conclude(
    mut row: Row,
    transport: &str,
    outcome: Result<client::Measured, Stop>,
    stopped: Result<(), ServerError>,
) -> Row {
    match outcome {
        Ok(m) => {
            row.max_msg = Some(m.max_msg);
            set_repeats(&mut row, m.latency);
            row.throughput = m.throughput;
            if let Some(w) = row.other_load.as_ref().and_then(|l| l.warning()) {
                row.warnings.push(w);
            }
            match stopped {
                Ok(()) => row,
                Err(e) => row.end(Status::Failed, e.to_string()),
            }
        }
        Err(stop) => conclude_stop(row, transport, stop, stopped),
    }
}

/// Keeps every repeat, the median one as the row's latency, and warns
/// about a wide spread or an outlying first repeat.
pub(super) fn set_repeats(row: &mut Row, runs: Vec<LatencyRun>) {
    let central: Vec<f64> = runs.iter().map(LatencyRun::central_ns).collect();
    row.latency = runs.get(median_index(&central)).cloned();
    row.histogram = row
        .latency
        .as_ref()
        .map_or_else(Vec::new, |l| l.histogram.clone());
    row.repeat_stats = repeat_stats(&central);
    if let Some(r) = &row.repeat_stats {
        let figures = || {
            r.central_ns
                .iter()
                .map(|v| crate::measure::hist::fmt_ns(*v))
                .collect::<Vec<_>>()
                .join(", ")
        };
        if r.spread_pct > REPEAT_WARN_PCT {
            row.warnings.push(format!(
                "repeats spread {:.0}% (limit {REPEAT_WARN_PCT:.0}%): {}",
                r.spread_pct,
                figures()
            ));
        }
        if r.first_outlier {
            row.warnings.push(format!(
                "first repeat is an outlier (more than {REPEAT_WARN_PCT:.0}% off the others, \
                 which agree; warm-up too short?): {}",
                figures()
            ));
        }
    }
    row.repeats = runs;
}

/// Runs the client in its own thread and waits at most `limit` for it. A
/// thread stuck in a call is left behind: stopping the server makes its
/// call return (the peer closed) within a tick.
pub(super) fn run_client(cfg: ClientConfig, limit: Duration) -> Result<client::Measured, Stop> {
    let (tx, rx) = mpsc::channel();
    let stop = Arc::clone(&cfg.stop);
    let spawned = std::thread::Builder::new()
        .name("ipc-client".into())
        .spawn(move || {
            let _ = tx.send(client::run(&cfg));
        });
    let handle = match spawned {
        Ok(h) => h,
        Err(e) => return Err(Stop::Failed(format!("cannot start a client thread: {e}"))),
    };
    match rx.recv_timeout(limit) {
        Ok(r) => {
            let _ = handle.join();
            r
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            let _ = handle.join();
            Err(Stop::Failed("the client thread panicked".into()))
        }
        Err(mpsc::RecvTimeoutError::Timeout) if stop.load(Ordering::Relaxed) => {
            Err(Stop::Interrupted)
        }
        Err(mpsc::RecvTimeoutError::Timeout) => Err(Stop::Failed(format!(
            "no reply within the row's hard limit of {:.1} s (a call hung)",
            limit.as_secs_f64()
        ))),
    }
}
