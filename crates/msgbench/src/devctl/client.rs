//! `client-adder`: N threads, thread j talking only to instance K+j (or,
//! against a pool, every thread to instance K), each running
//! `value = 0; while value < S { value = devctl(INCREMENT, value) }` and
//! checking every reply.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use msgpass::transport::shm::Shm;
use msgpass::transport::ClientConnection;
use msgpass::{Connection, Namespace};
use serde::Serialize;

use super::options::{self, Api};
use super::{endpoint, ADDER_INCREMENT};
use crate::measure::clock::Clock;
use crate::measure::cpu::{self, CpuStat, CpuUsage};
use crate::measure::hist::{LatencySummary, Recorder, SampleBuffer};
use crate::measure::placement::{self, CpuList};

/// What one client run needs.
pub struct RunConfig<'a> {
    /// Namespace holding the endpoints.
    pub ns: &'a Namespace,
    /// Transport name.
    pub transport: &'a str,
    /// msgpass tuning (wait for endpoints, spin budget).
    pub opts: msgpass::Options,
    /// Number of client threads.
    pub n: u32,
    /// First instance.
    pub first: u32,
    /// Every thread calls instance `first` (a server's pool of threads on
    /// one path) instead of thread j calling `first + j`.
    pub one_path: bool,
    /// Round trips per thread.
    pub samples: u64,
    /// Client thread placement.
    pub cpus: &'a CpuList,
    /// Take a timestamp per request (distributions) or not (mean only).
    pub timestamps: bool,
    /// The clock for timestamps.
    pub clock: &'a Clock,
    /// Set to abort the run (signal, or another thread failed).
    pub abort: &'a AtomicBool,
    /// Stop each thread after this long even if it has not done `samples`
    /// round trips (`None`: always finish, as the seed does).
    pub time_limit: Option<Duration>,
    /// In place (`Connection::call_with`) or copying (`Connection::call`).
    pub api: Api,
}

impl RunConfig<'_> {
    /// The instance thread `j` calls.
    pub fn instance(&self, j: u32) -> u32 {
        match self.one_path {
            true => self.first,
            false => self.first + j,
        }
    }
}

/// One client thread's figures.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ThreadResult {
    /// Thread index j.
    pub thread: u32,
    /// The instance it talked to (K + j).
    pub instance: u32,
    /// The CPU it was pinned to, if any.
    pub cpu: Option<usize>,
    /// Wall time from the start barrier to the last reply, ns.
    pub duration_ns: u64,
    /// Round trips per second.
    pub rate: f64,
    /// The adder's final value: the number of round trips done, which is
    /// the sample count unless the time limit stopped the thread.
    pub final_value: u32,
    /// The time limit stopped this thread before the sample count.
    pub cut: bool,
    /// Per-request latency, when timestamps were taken.
    pub latency: Option<LatencySummary>,
}

/// Figures of a whole client run.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct ClientRun {
    /// Transport name.
    pub transport: String,
    /// The API the client used: `in-place` or `copy`.
    pub api: Api,
    /// Round trips per thread.
    pub samples: u64,
    /// Per-thread results.
    pub threads: Vec<ThreadResult>,
    /// Machine busy during the run (summed over CPUs); `None` (JSON
    /// `null`) when /proc/stat could not be read or counted no tick
    /// during the run: never a made-up 0.
    pub busy: Option<CpuUsage>,
    /// Mean of the thread durations, ns.
    pub ave_duration_ns: f64,
    /// samples / mean duration: the seed's per-thread rate.
    pub rate_per_thread: f64,
    /// All round trips / wall time of the whole run (see `aggregate_rate`).
    pub aggregate_rate: f64,
    /// All threads' latencies merged.
    pub latency: Option<LatencySummary>,
    /// The same, raw: `[upper_ns, count]` per non-empty bucket of the
    /// merged HDR histogram, increasing (empty without timestamps).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub histogram: Vec<(f64, u64)>,
}

/// Connects every thread, runs them from one barrier, and checks results.
pub fn run(cfg: &RunConfig) -> Result<ClientRun> {
    run_to(cfg, None)
}

/// Like [`run`]; with `tcp = Some(base)` thread j connects over TCP to
/// instance K+j at `base`'s port + K+j (no namespace involved).
pub fn run_to(cfg: &RunConfig, tcp: Option<std::net::SocketAddr>) -> Result<ClientRun> {
    // The shared-memory transports are used typed: the calls are then
    // direct and the compiler inlines them into the adder loop.
    let (results, busy) = match (tcp, Shm::by_name(cfg.transport)) {
        (None, Some(shm)) => {
            let conns = connect_all(cfg, |k| {
                Connection::open_typed(cfg.ns, &endpoint(k), &shm, &cfg.opts)
            })?;
            run_threads(cfg, conns)
        }
        _ => {
            let transport = msgpass::transport::by_name(cfg.transport)?;
            let conns = match tcp {
                Some(base) => (0..cfg.n)
                    .map(|j| connect_tcp(cfg, base, cfg.instance(j)))
                    .collect::<Result<Vec<_>>>()?,
                None => connect_all(cfg, |k| {
                    Connection::open(cfg.ns, &endpoint(k), &*transport, &cfg.opts)
                })?,
            };
            run_threads(cfg, conns)
        }
    };
    let mut threads = Vec::new();
    let mut merged = Recorder::new();
    // Report the failure that caused an abort, not the threads it stopped.
    if let Some(i) = results
        .iter()
        .position(|r| r.as_ref().is_err_and(|e| !e.is::<Aborted>()))
    {
        return Err(results
            .into_iter()
            .nth(i)
            .and_then(|r| r.err())
            .unwrap_or_else(|| anyhow!(Aborted)));
    }
    for r in results {
        let (t, rec) = r?;
        merged.merge(&rec);
        threads.push(t);
    }
    let ave = threads.iter().map(|t| t.duration_ns as f64).sum::<f64>() / threads.len() as f64;
    Ok(ClientRun {
        transport: cfg.transport.to_string(),
        api: cfg.api,
        samples: cfg.samples,
        ave_duration_ns: ave,
        rate_per_thread: rate_per_thread(&threads),
        aggregate_rate: aggregate_rate(&threads),
        latency: cfg.timestamps.then(|| merged.summary(cfg.clock)),
        histogram: if cfg.timestamps {
            merged.buckets(cfg.clock)
        } else {
            Vec::new()
        },
        threads,
        busy,
    })
}

/// One connection per thread, to instances `first..first+n`, each opened
/// by name with `open(k)`; a missing server says how to start one.
fn connect_all<C: ClientConnection + ?Sized>(
    cfg: &RunConfig,
    open: impl Fn(u32) -> msgpass::Result<Connection<C>>,
) -> Result<Vec<Connection<C>>> {
    let mut conns = Vec::with_capacity(cfg.n as usize);
    for j in 0..cfg.n {
        let k = cfg.instance(j);
        let serve = match cfg.one_path {
            true => format!("--pool {} -i {}", cfg.n, cfg.first),
            false => format!("-n {} -i {}", cfg.n, cfg.first),
        };
        let c = open(k).map_err(|e| match e {
            msgpass::Error::NotFound { path } => anyhow!(
                "no server at {}: start one with `dev-adder {serve} -t {}{}`, or pass --wait SECS",
                path.display(),
                cfg.transport,
                ns_flag(cfg.ns)
            ),
            msgpass::Error::WrongTransport { ref found, .. } => {
                anyhow!("{e}: use -t {found}").context(format!("cannot connect to {}", endpoint(k)))
            }
            e => anyhow!(e).context(format!("cannot connect to {}", endpoint(k))),
        })?;
        conns.push(c);
    }
    Ok(conns)
}

/// What every thread returned, and the machine's busy share over the run.
type ThreadsRun = (Vec<Result<(ThreadResult, Recorder)>>, Option<CpuUsage>);

/// Runs one thread per connection from one barrier; the first to fail
/// aborts the others. /proc/stat is read around the whole run.
fn run_threads<C: ClientConnection + ?Sized>(
    cfg: &RunConfig,
    conns: Vec<Connection<C>>,
) -> ThreadsRun {
    let barrier = Barrier::new(cfg.n as usize + 1);
    std::thread::scope(|s| {
        let handles: Vec<_> = conns
            .into_iter()
            .enumerate()
            .map(|(j, conn)| {
                let barrier = &barrier;
                s.spawn(move || {
                    let r = match cfg.api {
                        Api::InPlace => one_thread::<C, false>(cfg, j as u32, conn, barrier),
                        Api::Copy => one_thread::<C, true>(cfg, j as u32, conn, barrier),
                    };
                    if r.is_err() {
                        cfg.abort.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        let before = CpuStat::read();
        barrier.wait();
        let results: Vec<Result<(ThreadResult, Recorder)>> = handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow!("a client thread panicked")))
            })
            .collect();
        let after = CpuStat::read();
        let busy = match (before, after) {
            (Ok(b), Ok(a)) => cpu::usage(&b, &a, placement::cpu_count()),
            _ => None,
        };
        (results, busy)
    })
}

/// Connects to instance `k` over TCP, instance 0 being at `base`.
fn connect_tcp(cfg: &RunConfig, base: std::net::SocketAddr, k: u32) -> Result<Connection> {
    let addr = options::instance_addr(base, k)?;
    Connection::connect_tcp(addr, &cfg.opts).map_err(|e| match e {
        msgpass::Error::NotFound { path } => anyhow!(
            "no server at {}: start one there with `dev-adder -t tcp --listen {base} -n {} -i {}`, or pass --wait SECS",
            path.display(),
            cfg.n,
            cfg.first
        ),
        e => anyhow!(e).context(format!("cannot connect to {} at tcp {addr}", endpoint(k))),
    })
}

/// A thread stopped because the run was aborted (a signal, or another
/// thread failed).
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
struct Aborted;

/// All round trips over the wall time of the whole run (start barrier to
/// the last thread's end). Not the sum of the threads' rates: when one
/// thread finishes early, the others run alone and faster, and the sum
/// would count both speeds as if they were simultaneous.
fn aggregate_rate(threads: &[ThreadResult]) -> f64 {
    let longest = threads.iter().map(|t| t.duration_ns).max().unwrap_or(0);
    if longest == 0 {
        return 0.0;
    }
    let done: u64 = threads.iter().map(|t| t.final_value as u64).sum();
    done as f64 / (longest as f64 / 1e9)
}

/// The seed's per-thread rate: round trips per thread over the mean thread
/// duration (S / Ave Duration when every thread did S).
fn rate_per_thread(threads: &[ThreadResult]) -> f64 {
    let n = threads.len().max(1) as f64;
    let done = threads.iter().map(|t| t.final_value as f64).sum::<f64>() / n;
    let ave = threads.iter().map(|t| t.duration_ns as f64).sum::<f64>() / n;
    if ave > 0.0 {
        done / (ave / 1e9)
    } else {
        0.0
    }
}

/// The `--ns DIR` to repeat in a hint, when the namespace is not the default.
fn ns_flag(ns: &Namespace) -> String {
    let default = std::env::var_os(msgpass::NS_ENV)
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(Namespace::default_root);
    if default == ns.root() {
        String::new()
    } else {
        format!(" --ns {}", ns.root().display())
    }
}

/// One client thread: pin, wait for the start, run the adder loop.
/// `COPY` picks the API at compile time, so the loop carries no test for
/// it: the copying `Connection::call` into a buffer of ours, or (`false`)
/// `Connection::call_with`, writing the request into the transport's
/// buffer and reading the reply where it lies.
fn one_thread<C: ClientConnection + ?Sized, const COPY: bool>(
    cfg: &RunConfig,
    j: u32,
    mut conn: Connection<C>,
    barrier: &Barrier,
) -> Result<(ThreadResult, Recorder)> {
    let cpu = cfg.cpus.for_thread(j as usize);
    let pinned = placement::maybe_pin(cpu);
    barrier.wait();
    pinned.with_context(|| format!("thread {j}"))?;
    let k = cfg.instance(j);
    let target = cfg.samples as u32;
    let mut rec = SampleBuffer::new();
    let mut reply = [0u8; 4];
    let mut value: u32 = 0;
    let t0 = Instant::now();
    let mut prev = cfg.clock.now();
    while value < target {
        // The reply, copied out of the transport's buffer (in place) or
        // ours, and its length. Between the reply and the next request
        // only the timestamp, this copy and the check below run.
        let (got, n) = if COPY {
            let n = conn
                .call(ADDER_INCREMENT, &value.to_le_bytes(), &mut reply)
                .map_err(|e| call_failed(e, j, k))?;
            (u32::from_le_bytes(reply), n)
        } else {
            let r = conn
                .call_with(ADDER_INCREMENT, |buf| {
                    buf.write(0, &value.to_le_bytes());
                    4
                })
                .map_err(|e| call_failed(e, j, k))?;
            match r.len() {
                4 => (u32::from_le_bytes(r.get(0)), 4),
                n => (0, n),
            }
        };
        if cfg.timestamps {
            let now = cfg.clock.now();
            rec.push(now.wrapping_sub(prev));
            prev = now;
        }
        if n != 4 || got != value.wrapping_add(1) {
            return Err(wrong_reply(j, k, value, got, n));
        }
        value = got;
        if value & 1023 == 0 {
            if cfg.abort.load(Ordering::Relaxed) {
                return Err(Aborted.into());
            }
            if cfg.time_limit.is_some_and(|l| t0.elapsed() >= l) {
                break;
            }
        }
    }
    let d = t0.elapsed();
    let cut = (value as u64) < cfg.samples;
    if value as u64 != cfg.samples && !cut {
        bail!("thread {j}: final value {value}, expected {}", cfg.samples);
    }
    let rec = rec.finish();
    let latency = cfg.timestamps.then(|| rec.summary(cfg.clock));
    Ok((
        ThreadResult {
            thread: j,
            instance: k,
            cpu,
            duration_ns: d.as_nanos() as u64,
            rate: value as f64 / d.as_secs_f64(),
            final_value: value,
            cut,
            latency,
        },
        rec,
    ))
}

/// Thread `j`'s call to instance `k` failed.
#[cold]
fn call_failed(e: msgpass::Error, j: u32, k: u32) -> anyhow::Error {
    match e {
        msgpass::Error::Disconnected => anyhow!(
            "thread {j}: {} went away mid-run (server died or stopped)",
            endpoint(k)
        ),
        e => anyhow!(e).context(format!("thread {j}: call to {}", endpoint(k))),
    }
}

/// Instance `k` answered `got` (`n` bytes) to thread `j`'s `value`.
#[cold]
fn wrong_reply(j: u32, k: u32, value: u32, got: u32, n: usize) -> anyhow::Error {
    anyhow!(
        "thread {j}: {} answered {got} ({n} bytes) to {value}: wrong reply",
        endpoint(k)
    )
}

/// The `-I` idle baseline: sleep and measure the machine's busy share.
pub fn idle_baseline(secs: f64) -> Result<CpuUsage> {
    cpu::idle_baseline(Duration::from_secs_f64(secs)).context("reading /proc/stat")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn thread(duration_ms: u64) -> ThreadResult {
        ThreadResult {
            thread: 0,
            instance: 0,
            cpu: None,
            duration_ns: duration_ms * 1_000_000,
            rate: 1000.0 / (duration_ms as f64 / 1e3),
            final_value: 1000,
            cut: false,
            latency: None,
        }
    }

    #[test]
    fn aggregate_is_work_over_wall_time() {
        // Two threads of 1000 round trips; one took 1 s, the other 0.1 s:
        // 2000 round trips in 1 s, not 1000 + 10000 per second.
        let r = aggregate_rate(&[thread(1000), thread(100)]);
        assert!((r - 2000.0).abs() < 1e-6, "{r}");
        assert_eq!(aggregate_rate(&[]), 0.0);
        // Per thread: 1000 round trips over a mean of 0.55 s.
        let p = rate_per_thread(&[thread(1000), thread(100)]);
        assert!((p - 1000.0 / 0.55).abs() < 1e-6, "{p}");
    }
}
