//! The client of one row: for each repeat a warm-up (the first one sizes
//! the runs) and a latency run (echo of `size` bytes: closed loop with one
//! timestamp before and after each call, open loop at a fixed schedule, or
//! whole-run timing), then the throughput run (`size` bytes one way, a
//! checksum back), each reply verified, and both threads' CPU time.

mod config;
mod cpu_marks;
mod latency;
mod throughput;

use msgpass::transport::ClientConnection;
use msgpass::Connection;

use super::connect::{open_then, OverConnection};
use super::echo::Echo;
use super::protocol::CMD_STOP;
use super::row::{LatencyRun, ThroughputRun};
use super::stop::Stop;
use crate::measure::placement::pin_current_thread;
pub use config::ClientConfig;
use config::{check_stop, target, ticks, MIN_WARMUP};
pub(crate) use config::{COUNT_CAP_SECS, MAX_MESSAGES};
use latency::{latency, Sizing};
use throughput::throughput;

/// Every run of a row that went well.
pub struct Measured {
    /// Largest message the connection takes.
    pub max_msg: usize,
    /// Round-trip latency, one run per repeat, in order.
    pub latency: Vec<LatencyRun>,
    /// One-way throughput, when measured.
    pub throughput: Option<ThroughputRun>,
}

/// The measured runs of a row, over whichever connection.
struct Measure<'a>(&'a ClientConfig);

impl OverConnection for Measure<'_> {
    type Out = Result<Measured, Stop>;
    fn over<C: ClientConnection + ?Sized>(self, conn: Connection<C>) -> Self::Out {
        measure(self.0, conn)
    }
}

/// Runs the client side of a row (see [`open_then`]).
pub fn run(cfg: &ClientConfig) -> Result<Measured, Stop> {
    pin_current_thread(cfg.cpu).map_err(|e| Stop::Skipped(format!("client thread: {e}")))?;
    if let Some(addr) = cfg.remote {
        let conn = Connection::connect_tcp(addr, &cfg.opts).map_err(|e| {
            Stop::Failed(format!("cannot connect to the row's server at {addr}: {e}"))
        })?;
        return Measure(cfg).over(conn);
    }
    open_then(
        &cfg.ns,
        &cfg.endpoint,
        &cfg.transport,
        &cfg.opts,
        Measure(cfg),
    )
    .map_err(|e| Stop::Skipped(format!("cannot connect: {e}")))?
}

/// Every run of a row over `conn`.
fn measure<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    mut conn: Connection<C>,
) -> Result<Measured, Stop> {
    let max_msg = conn.max_msg();
    if max_msg < cfg.size {
        return Err(Stop::NotApplicable(max_msg));
    }
    let mut echo = Echo::new(cfg.size, cfg.api, conn.in_place());
    let mut runs = Vec::with_capacity(cfg.repeats);
    // Every repeat has the count the first warm-up's rate asks for, so
    // that repeats compare; without a warm-up, runs are sized by time.
    let mut sizing: Option<Sizing> = None;
    for _ in 0..cfg.repeats.max(1) {
        let warm_rate = warm_up(cfg, &mut conn, &mut echo)?;
        let s = *sizing.get_or_insert(match (cfg.count, cfg.sized, cfg.rate.or(warm_rate)) {
            (Some(n), _, r) => Sizing::Exactly(n, r.unwrap_or(0.0)),
            (None, Some(n), Some(r)) => Sizing::Count(n, r),
            (None, None, Some(r)) => Sizing::Count(target(r, cfg.row_secs), r),
            (None, _, None) => Sizing::Time,
        });
        runs.push(latency(cfg, &mut conn, &mut echo, s)?);
    }
    let first = &runs[0];
    let rate = first.samples as f64 / (first.duration_ns / 1e9).max(1e-9);
    let throughput = match cfg.throughput {
        true => Some(throughput(cfg, &mut conn, rate)?),
        false => None,
    };
    // The server returns right after this reply and closes its channel. A
    // transport may lose a reply that is followed at once by the close
    // (shm did: its close overwrote the unread reply); that ends nothing
    // here but the teardown, and anything else that went wrong in the
    // server is reported by the server thread itself.
    match conn.call(CMD_STOP, &[], &mut [0u8; 8]) {
        Ok(_) | Err(msgpass::Error::Disconnected) => {}
        Err(e) => return Err(Stop::Failed(format!("stopping the server: {e}"))),
    }
    Ok(Measured {
        max_msg,
        latency: runs,
        throughput,
    })
}

/// Round trips for at least a fifth of a row and [`MIN_WARMUP`] of them
/// (at most a whole row's time), or for `--warmup` seconds (at most the
/// longer of that and a row); returns their rate, `None` with `--warmup 0`.
fn warm_up<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    echo: &mut Echo,
) -> Result<Option<f64>, Stop> {
    let clock = &cfg.clock;
    echo.restart();
    let (enough, limit) = match cfg.warmup_secs {
        Some(s) if s <= 0.0 => return Ok(None),
        Some(s) => (ticks(clock, s), ticks(clock, s.max(cfg.row_secs))),
        None => (ticks(clock, cfg.row_secs / 5.0), ticks(clock, cfg.row_secs)),
    };
    let start = clock.now();
    let mut n: u64 = 0;
    loop {
        let (_, t1) = echo.round(conn, clock)?;
        n += 1;
        let spent = t1.wrapping_sub(start);
        if (spent >= enough && n >= MIN_WARMUP) || spent >= limit {
            return Ok(Some(n as f64 / (clock.ticks_to_ns(spent.max(1)) / 1e9)));
        }
        check_stop(cfg)?;
    }
}
