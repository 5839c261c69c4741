//! `--clients N`: a row of N active clients on one server. The server is
//! the row's thread, as in every row; each client is a process
//! (`msgbench ipc-peer client`, see [`super::peer`]) pinned as the
//! placement says (same: every client on the server's CPU; cross: the
//! clients on the other), connecting and warming up, then released
//! together and making checked round trips for a row's time. Each reports
//! its round trips, rate and percentiles; the row keeps them all and
//! their aggregate rate, the median and worst of their p50 and p99, and
//! how evenly the server shared itself out.

use std::time::Duration;

use super::context::{RowContext, SERVER_STOP_LIMIT};
use super::crowd::{ActiveRun, ClientReport};
use super::peer;
use super::row::{Row, RowSpec, Status};
use super::server::ServerThread;
use super::stats::median;
use super::stop::{conclude_stop, Stop};
use crate::measure::peers::Peer;

/// How long a client may take to start, connect and warm up, besides
/// [`READY_PER_CLIENT`] for each client.
const READY: Duration = Duration::from_secs(15);
/// More time to get ready for each client (they start one by one and
/// share the CPUs).
const READY_PER_CLIENT: Duration = Duration::from_millis(100);
/// How long a client may take to report beyond twice a row.
const REPORT: Duration = Duration::from_secs(10);
/// How long a client may take to exit once it reported.
const GRACE: Duration = Duration::from_secs(3);

/// The row's figures from its clients' reports (all without error).
pub fn summarise(reports: Vec<ClientReport>) -> ActiveRun {
    let rates: Vec<f64> = reports.iter().map(|r| r.msgs_per_s).collect();
    let p50s: Vec<f64> = reports.iter().map(|r| r.p50_ns).collect();
    let p99s: Vec<f64> = reports.iter().map(|r| r.p99_ns).collect();
    let worst = |v: &[f64]| v.iter().copied().fold(f64::NAN, f64::max);
    let (lo, hi) = (
        rates.iter().copied().fold(f64::NAN, f64::min),
        worst(&rates),
    );
    let n = rates.len().max(1) as f64;
    let mean = rates.iter().sum::<f64>() / n;
    let var = rates.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / n;
    ActiveRun {
        clients: reports.len() as u32,
        calls: reports.iter().map(|r| r.calls).sum(),
        msgs_per_s: rates.iter().sum(),
        p50_median_ns: median(&p50s),
        p50_worst_ns: worst(&p50s),
        p99_median_ns: median(&p99s),
        p99_worst_ns: worst(&p99s),
        slowest_over_fastest: if hi > 0.0 { lo / hi } else { f64::NAN },
        rate_cv: if mean > 0.0 {
            var.sqrt() / mean
        } else {
            f64::NAN
        },
        per_client: reports,
    }
}

/// Runs the active-clients row `spec` (its `clients` set) as endpoint
/// `endpoint`, the clients on `cpus.0` and the server on `cpus.1`.
pub fn run(ctx: &RowContext, endpoint: &str, spec: &RowSpec, cpus: (usize, usize)) -> Row {
    let n = spec.clients.unwrap_or(1);
    let mut row = Row::for_spec(spec);
    let server = match ServerThread::start(
        ctx.ns,
        endpoint,
        spec.transport,
        ctx.opts,
        cpus.1,
        spec.size,
        ctx.fault,
        spec.api,
    ) {
        Ok(s) => s,
        Err(reason) => return row.end(Status::Skipped, reason.to_string()),
    };
    (row.client_cpu, row.server_cpu) = (Some(cpus.0), Some(cpus.1));
    let outcome = drive(ctx, endpoint, spec, cpus.0, n);
    let stopped = server.stop(SERVER_STOP_LIMIT);
    match outcome {
        Ok(run) => {
            row.active = Some(run);
            match stopped {
                Ok(()) => row,
                Err(e) => row.end(Status::Failed, e.to_string()),
            }
        }
        Err(stop) => conclude_stop(row, spec.transport, stop, stopped),
    }
}

/// Starts the `n` clients, releases them together, and collects their
/// reports; every client is stopped and reaped before this returns.
fn drive(
    ctx: &RowContext,
    endpoint: &str,
    spec: &RowSpec,
    cpu: usize,
    n: u32,
) -> Result<ActiveRun, Stop> {
    let failed = |e: anyhow::Error| Stop::Failed(format!("{e:#}"));
    let mut peers = Vec::with_capacity(n as usize);
    for k in 0..n {
        let mut args = peer::reach_args(
            "client",
            spec.transport,
            ctx.ns.root(),
            endpoint,
            ctx.plan.spin_us,
        );
        args.extend(["--index".into(), k.to_string()]);
        args.extend(peer::shape_args(spec.size, spec.api, cpu));
        args.extend(["--secs".into(), ctx.row_secs.to_string()]);
        peers.push(Peer::start(peer::COMMAND, format!("client {k}"), &args).map_err(failed)?);
    }
    let ready = READY + READY_PER_CLIENT * n;
    for p in &mut peers {
        let line = ctx.line_of(p, ready)?;
        if let Some(max) = line.strip_prefix("n/a ") {
            let max = max.trim().parse().map_err(|_| not_said(&line))?;
            return Err(Stop::NotApplicable(max));
        }
        if line != "ready" {
            return Err(not_said(&line));
        }
    }
    for p in &mut peers {
        p.send("go").map_err(failed)?;
    }
    let mut reports = Vec::with_capacity(n as usize);
    let report = Duration::from_secs_f64(ctx.row_secs * 2.0) + REPORT;
    for p in &mut peers {
        let line = ctx.line_of(p, report)?;
        let r: ClientReport = serde_json::from_str(&line)
            .map_err(|e| Stop::Failed(format!("a client's report {line:?}: {e}")))?;
        if let Some(e) = &r.error {
            return Err(Stop::Failed(format!("client {}: {e}", r.index)));
        }
        reports.push(r);
    }
    for p in &mut peers {
        p.finish(GRACE).map_err(failed)?;
    }
    Ok(summarise(reports))
}

/// A line a client should not have said.
fn not_said(line: &str) -> Stop {
    Stop::Failed(format!("a client said {line:?}, expected ready or n/a"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(index: u32, rate: f64, p50: f64, p99: f64) -> ClientReport {
        ClientReport {
            index,
            calls: rate as u64,
            elapsed_ns: 1e9,
            msgs_per_s: rate,
            p50_ns: p50,
            p99_ns: p99,
            max_ns: p99,
            error: None,
        }
    }

    #[test]
    fn fairness_comes_out_either_way() {
        let even = summarise(vec![
            report(0, 1000.0, 10.0, 20.0),
            report(1, 1000.0, 12.0, 30.0),
        ]);
        assert_eq!(even.msgs_per_s, 2000.0);
        assert_eq!(even.calls, 2000);
        assert_eq!(even.slowest_over_fastest, 1.0);
        assert_eq!(even.rate_cv, 0.0);
        assert_eq!((even.p50_median_ns, even.p50_worst_ns), (11.0, 12.0));
        assert_eq!((even.p99_median_ns, even.p99_worst_ns), (25.0, 30.0));
        let skewed = summarise(vec![
            report(0, 100.0, 10.0, 20.0),
            report(1, 900.0, 10.0, 20.0),
            report(2, 500.0, 10.0, 90.0),
        ]);
        assert!((skewed.slowest_over_fastest - 100.0 / 900.0).abs() < 1e-12);
        // Rates 100, 900, 500: mean 500, population sd sqrt(320000/3).
        let cv = (320_000.0f64 / 3.0).sqrt() / 500.0;
        assert!((skewed.rate_cv - cv).abs() < 1e-12, "{}", skewed.rate_cv);
        assert_eq!(skewed.p99_worst_ns, 90.0);
        assert_eq!(skewed.per_client.len(), 3);
    }
}
