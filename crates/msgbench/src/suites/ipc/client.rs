//! The client of one row: for each repeat a warm-up (the first one sizes
//! the runs) and a latency run (echo of `size` bytes: closed loop with one
//! timestamp before and after each call, open loop at a fixed schedule, or
//! whole-run timing), then the throughput run (`size` bytes one way, a
//! checksum back), each reply verified, and both threads' CPU time.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use msgpass::transport::shm::Shm;
use msgpass::transport::ClientConnection;
use msgpass::{Connection, Namespace, Options};

use super::echo::{call_error, Echo};
use super::protocol::{
    ack_fold, body, stamp, SumBase, ACK_LEN, CMD_ACK, CMD_CPU, CMD_STOP, CMD_SUM, SUM_SEQ_BYTES,
};
use super::row::{Api, Timing};
use super::row::{CpuCost, ExactStats, LatencyRun, ThroughputRun};
use super::stats::{exact, histogram, subtract_overhead};
use crate::measure::clock::Clock;
use crate::measure::cpu::{process_cpu_ns, thread_cpu_ns};
use crate::measure::hist::LatencySummary;
use crate::measure::placement::pin_current_thread;

/// Fewest messages in a measured run (unless the time cap comes first).
const MIN_MESSAGES: u64 = 100;
/// Most messages in a measured run (bounds the sample memory: 16 MiB).
const MAX_MESSAGES: u64 = 2_000_000;
/// Fewest warm-up round trips (unless a whole row's time runs out).
const MIN_WARMUP: u64 = 50;
/// A measured run stops at this many times its target length.
const CAP_FACTOR: f64 = 2.0;

/// What one client thread needs (owned: the thread may outlive a hung row).
pub struct ClientConfig {
    /// The row's private namespace.
    pub ns: Namespace,
    /// Endpoint name of the row's server.
    pub endpoint: String,
    /// Transport name.
    pub transport: String,
    /// The API measured.
    pub api: Api,
    /// msgpass tuning.
    pub opts: Options,
    /// Message size, bytes.
    pub size: usize,
    /// CPU to pin the client thread to.
    pub cpu: usize,
    /// Target seconds of each measured run.
    pub row_secs: f64,
    /// Timestamp source.
    pub clock: Clock,
    /// Set by SIGINT/SIGTERM.
    pub stop: Arc<AtomicBool>,
    /// Warm-up before each latency run, seconds (`None`: the default).
    pub warmup_secs: Option<f64>,
    /// Latency runs.
    pub repeats: usize,
    /// How latency runs are timed.
    pub timing: Timing,
    /// Open loop: messages per second.
    pub rate: Option<f64>,
    /// Throughput window asked for (`--window`).
    pub window: u32,
}

/// Every run of a row that went well.
pub struct Measured {
    /// Largest message the connection takes.
    pub max_msg: usize,
    /// Round-trip latency, one run per repeat, in order.
    pub latency: Vec<LatencyRun>,
    /// One-way throughput.
    pub throughput: ThroughputRun,
}

/// Why a row ended without figures.
#[derive(Debug)]
pub enum Stop {
    /// The transport cannot carry the size: its maximum.
    NotApplicable(usize),
    /// The client could not be set up (pin or connect): one-line reason.
    Skipped(String),
    /// A call failed or a reply was wrong.
    Failed(String),
    /// SIGINT/SIGTERM.
    Interrupted,
}

impl Stop {
    /// What happened, in a few words.
    pub fn reason(&self) -> String {
        match self {
            Stop::NotApplicable(max) => format!("messages of at most {max} bytes"),
            Stop::Skipped(r) | Stop::Failed(r) => r.clone(),
            Stop::Interrupted => "interrupted".into(),
        }
    }
}

/// What is done over a connection, whichever type it has.
pub trait OverConnection {
    /// What comes of it.
    type Out;
    /// Does it over `conn`.
    fn over<C: ClientConnection + ?Sized>(self, conn: Connection<C>) -> Self::Out;
}

/// Opens a connection to `endpoint` over `transport` and hands it to
/// `user`: a typed connection ([`Connection::open_typed`]) for a
/// shared-memory transport, so that the calls inline into its loop, else
/// one opened by name.
pub fn open_then<U: OverConnection>(
    ns: &Namespace,
    endpoint: &str,
    transport: &str,
    opts: &Options,
    user: U,
) -> msgpass::Result<U::Out> {
    if let Some(shm) = Shm::by_name(transport) {
        return Ok(user.over(Connection::open_typed(ns, endpoint, &shm, opts)?));
    }
    let t = msgpass::transport::by_name(transport)?;
    Ok(user.over(Connection::open(ns, endpoint, &*t, opts)?))
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
        let s = *sizing.get_or_insert(match (cfg.rate, warm_rate) {
            (Some(r), _) => Sizing::Count(target(r, cfg.row_secs), r),
            (None, Some(r)) => Sizing::Count(target(r, cfg.row_secs), r),
            (None, None) => Sizing::Time,
        });
        runs.push(latency(cfg, &mut conn, &mut echo, s)?);
    }
    let first = &runs[0];
    let rate = first.samples as f64 / (first.duration_ns / 1e9).max(1e-9);
    let throughput = throughput(cfg, &mut conn, rate)?;
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

/// How long a latency run is.
#[derive(Debug, Clone, Copy)]
enum Sizing {
    /// This many messages (capped at [`CAP_FACTOR`] rows), at about this
    /// rate (messages per second).
    Count(u64, f64),
    /// As many as fit in one row's time (no warm-up measured a rate).
    Time,
}

/// Messages for a run of `secs` at `rate`.
fn target(rate: f64, secs: f64) -> u64 {
    ((rate * secs) as u64).clamp(MIN_MESSAGES, MAX_MESSAGES)
}

/// Clock ticks in `secs`.
fn ticks(clock: &Clock, secs: f64) -> u64 {
    (secs * 1e6 * clock.ticks_per_us()) as u64
}

fn check_stop(cfg: &ClientConfig) -> Result<(), Stop> {
    if cfg.stop.load(Ordering::Relaxed) {
        return Err(Stop::Interrupted);
    }
    Ok(())
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

/// Asks the server for its thread's CPU time.
fn server_cpu_ns<C: ClientConnection + ?Sized>(conn: &mut Connection<C>) -> Result<u64, Stop> {
    let mut r = [0u8; 16];
    let n = conn
        .call(CMD_CPU, &[], &mut r)
        .map_err(|e| Stop::Failed(format!("asking the server for its CPU time: {e}")))?;
    if n != 8 {
        return Err(Stop::Failed(format!(
            "the server's CPU time came as {n} bytes, expected 8"
        )));
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&r[..8]);
    Ok(u64::from_le_bytes(b))
}

/// CPU clocks read around a run: the server's serving thread (asked
/// over the connection), the whole process and this thread.
struct CpuMark {
    server: u64,
    process: u64,
    client: u64,
}

impl CpuMark {
    /// Reads the clocks before a run (the server's first).
    fn before<C: ClientConnection + ?Sized>(conn: &mut Connection<C>) -> Result<CpuMark, Stop> {
        let server = server_cpu_ns(conn)?;
        Ok(CpuMark {
            server,
            process: process_cpu_ns(),
            client: thread_cpu_ns(),
        })
    }

    /// Reads the clocks after a run (the server's last).
    fn after<C: ClientConnection + ?Sized>(conn: &mut Connection<C>) -> Result<CpuMark, Stop> {
        let client = thread_cpu_ns();
        let process = process_cpu_ns();
        Ok(CpuMark {
            server: server_cpu_ns(conn)?,
            process,
            client,
        })
    }

    /// The CPU per message between `self` and `end`.
    fn per_message(&self, end: &CpuMark, messages: u64) -> CpuCost {
        CpuCost::per_message(
            end.client.saturating_sub(self.client),
            end.server.saturating_sub(self.server),
            end.process.saturating_sub(self.process),
            messages,
        )
    }
}

/// The bounds of one measured latency loop.
struct Bounds {
    /// Messages to send.
    target: u64,
    /// Clock reading at the start.
    start: u64,
    /// The clock reading at which the loop stops early.
    deadline: u64,
    /// About how many round trips per second (for whole-run timing).
    est_rate: f64,
}

/// One latency run: closed loop (a timestamp around each call), open loop
/// (`--rate`: each message sent at its intended time and timed from it) or
/// whole-run timing (the mean only). Per-message samples have one
/// timestamp's cost subtracted (clamped at 0).
fn latency<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    echo: &mut Echo,
    sizing: Sizing,
) -> Result<LatencyRun, Stop> {
    let clock = &cfg.clock;
    let (target, cap_secs, est_rate) = match sizing {
        Sizing::Count(n, r) => (n, cfg.row_secs * CAP_FACTOR, r),
        Sizing::Time => (MAX_MESSAGES, cfg.row_secs, 0.0),
    };
    let per_message = cfg.timing == Timing::PerMessage;
    let mut samples: Vec<u64> = Vec::with_capacity(if per_message { target as usize } else { 0 });
    let cpu0 = CpuMark::before(conn)?;
    let start = clock.now();
    let b = Bounds {
        target,
        start,
        deadline: start.wrapping_add(ticks(clock, cap_secs)),
        est_rate,
    };
    echo.begin_run(b.target, b.deadline);
    let n = match (cfg.timing, cfg.rate) {
        (Timing::Whole, _) => loop_whole(cfg, conn, echo, &b)?,
        (Timing::PerMessage, Some(rate)) => loop_open(cfg, conn, echo, &b, rate, &mut samples)?,
        (Timing::PerMessage, None) => loop_closed(cfg, conn, echo, &b, &mut samples)?,
    };
    echo.end_run();
    let end = clock.now();
    let cpu1 = CpuMark::after(conn)?;
    let duration_ns = clock.ticks_to_ns(end.wrapping_sub(start));
    let (summary, exact, histogram, subtracted) = if per_message {
        per_message_stats(&mut samples, clock)
    } else {
        whole_run_stats(duration_ns, n)
    };
    Ok(LatencyRun {
        target,
        samples: n,
        time_capped: matches!(sizing, Sizing::Count(..)) && n < target,
        duration_ns,
        timing: cfg.timing,
        rate: cfg.rate,
        overhead_subtracted_ns: subtracted,
        summary,
        exact,
        histogram,
        cpu: cpu0.per_message(&cpu1, n),
    })
}

/// Whole-run timing: no clock around each call; the clock is read about
/// once per millisecond, only for the cap. Returns the round trips done.
fn loop_whole<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    echo: &mut Echo,
    b: &Bounds,
) -> Result<u64, Stop> {
    let mask = ((b.est_rate / 1000.0) as u64)
        .clamp(1, 1024)
        .next_power_of_two()
        - 1;
    let mut n: u64 = 0;
    while n < b.target {
        // The clock is read after every `mask + 1`-th round trip.
        let look = (n + 1) & mask == 0;
        let now = echo.round_untimed(conn, look.then_some(&cfg.clock))?;
        n += 1;
        if let Some(now) = now {
            if now >= b.deadline {
                break;
            }
            check_stop(cfg)?;
        }
    }
    Ok(n)
}

/// Open loop: message k is sent at start + k / `rate` and timed from that
/// intended time. Returns the round trips done.
fn loop_open<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    echo: &mut Echo,
    b: &Bounds,
    rate: f64,
    samples: &mut Vec<u64>,
) -> Result<u64, Stop> {
    let clock = &cfg.clock;
    let period = clock.ticks_per_us() * 1e6 / rate;
    let mut n: u64 = 0;
    while n < b.target {
        let intended = b.start.wrapping_add((n as f64 * period) as u64);
        let t1 = echo.round_at(conn, clock, intended)?;
        samples.push(t1.saturating_sub(intended));
        n += 1;
        if t1 >= b.deadline {
            break;
        }
        check_stop(cfg)?;
    }
    Ok(n)
}

/// Closed loop: a timestamp before and after each call. Returns the round
/// trips done.
fn loop_closed<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    echo: &mut Echo,
    b: &Bounds,
    samples: &mut Vec<u64>,
) -> Result<u64, Stop> {
    let mut n: u64 = 0;
    while n < b.target {
        let (t0, t1) = echo.round(conn, &cfg.clock)?;
        samples.push(t1.wrapping_sub(t0));
        n += 1;
        if t1 >= b.deadline {
            break;
        }
        check_stop(cfg)?;
    }
    Ok(n)
}

/// What a latency run's samples give: the HDR summary, the exact figures,
/// the histogram's buckets, and the cost subtracted from each sample (ns).
type RunStats = (LatencySummary, ExactStats, Vec<(f64, u64)>, f64);

/// The figures of per-message samples (ticks), one timestamp's cost
/// taken out of each first.
fn per_message_stats(samples: &mut [u64], clock: &Clock) -> RunStats {
    let overhead_ticks = (clock.overhead_ns() / 1000.0 * clock.ticks_per_us()).round() as u64;
    subtract_overhead(samples, overhead_ticks);
    let (summary, histogram) = histogram(samples, clock);
    let exact = exact(samples, clock);
    (summary, exact, histogram, clock.ticks_to_ns(overhead_ticks))
}

/// The figures of a run timed as a whole: the mean only, the rest NaN.
fn whole_run_stats(duration_ns: f64, n: u64) -> RunStats {
    let mean = duration_ns / n.max(1) as f64;
    let summary = LatencySummary {
        count: n,
        mean_ns: mean,
        min_ns: f64::NAN,
        stddev_ns: f64::NAN,
        p50_ns: f64::NAN,
        p90_ns: f64::NAN,
        p99_ns: f64::NAN,
        p999_ns: f64::NAN,
        max_ns: f64::NAN,
    };
    let exact = ExactStats {
        min_ns: f64::NAN,
        max_ns: f64::NAN,
        mean_ns: mean,
        stddev_ns: f64::NAN,
    };
    (summary, exact, Vec::new(), 0.0)
}

/// Request and reply buffers of the checksum exchange. The request is
/// `req` with the sequence number [`stamp`]ed into its first
/// [`SUM_SEQ_BYTES`]; the calls go through the row's API: copied, or in
/// place, where only the stamp is written into the transport's buffer
/// unless `write_body` is set (the first call of the run and after the
/// CPU-time calls, or every call when the transport is not in place) and
/// the (short) reply is copied out of it. One-way messages have no
/// in-place API: both APIs send them copied.
struct Sum {
    api: Api,
    in_place: bool,
    req: Vec<u8>,
    reply: [u8; 64],
    base: SumBase,
    seq: u64,
    write_body: bool,
}

impl Sum {
    fn new(size: usize, api: Api, in_place: bool) -> Sum {
        let req = body(size);
        Sum {
            api,
            in_place,
            base: SumBase::new(&req),
            req,
            reply: [0u8; 64],
            seq: 0,
            write_body: true,
        }
    }

    /// Calls `cmd` with the request stamped with the current sequence
    /// number; the reply's first bytes land in `reply`; returns its length.
    #[inline(always)]
    fn call<C: ClientConnection + ?Sized>(
        &mut self,
        conn: &mut Connection<C>,
        cmd: u32,
    ) -> Result<usize, Stop> {
        let seq = self.seq;
        stamp(&mut self.req, seq, SUM_SEQ_BYTES);
        let n = match self.api {
            Api::Copy => conn.call(cmd, &self.req, &mut self.reply),
            Api::InPlace => {
                let (req, whole) = (&self.req, self.write_body || !self.in_place);
                let k = req.len().min(SUM_SEQ_BYTES);
                conn.call_with(cmd, |buf| {
                    let m = &mut buf[..req.len()];
                    if whole {
                        m.copy_from_slice(req);
                    } else {
                        m[..k].copy_from_slice(&req[..k]);
                    }
                    req.len()
                })
                .map(|r| {
                    let k = r.len().min(self.reply.len());
                    self.reply[..k].copy_from_slice(&r[..k]);
                    r.len()
                })
            }
        }
        .map_err(|e| call_error(e, "message", seq))?;
        self.write_body = false;
        Ok(n)
    }

    /// One message and its verified checksum.
    #[inline(always)]
    fn round<C: ClientConnection + ?Sized>(
        &mut self,
        conn: &mut Connection<C>,
    ) -> Result<(), Stop> {
        let seq = self.seq;
        let n = self.call(conn, CMD_SUM)?;
        let r = &self.reply;
        let got = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
        if n != 4 || got != self.base.expected(seq) {
            return Err(Stop::Failed(format!(
                "message #{seq}: checksum reply {got:#010x} in {n} bytes, expected {:#010x} in 4 \
                 (corrupted, lost or stale message)",
                self.base.expected(seq)
            )));
        }
        self.seq += 1;
        Ok(())
    }

    /// A window of `w` messages: `w - 1` one-way, then a [`CMD_ACK`]
    /// call whose reply must be the count and running check of all `w`.
    #[inline(always)]
    fn window<C: ClientConnection + ?Sized>(
        &mut self,
        conn: &mut Connection<C>,
        w: u32,
    ) -> Result<(), Stop> {
        if w <= 1 {
            return self.round(conn);
        }
        let first = self.seq;
        let mut check = 0u64;
        for _ in 1..w {
            let seq = self.seq;
            stamp(&mut self.req, seq, SUM_SEQ_BYTES);
            conn.send_oneway(CMD_SUM, &self.req)
                .map_err(|e| call_error(e, "one-way message", seq))?;
            check = ack_fold(check, self.base.expected(seq));
            self.seq += 1;
        }
        let seq = self.seq;
        let n = self.call(conn, CMD_ACK)?;
        check = ack_fold(check, self.base.expected(seq));
        self.seq += 1;
        let r = &self.reply;
        let count = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
        let got = u64::from_le_bytes([r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]]);
        if n != ACK_LEN || count != w || got != check {
            return Err(Stop::Failed(format!(
                "messages #{first}..#{seq}: checksum reply of the window (count {count}, check \
                 {got:#018x}) in {n} bytes, expected (count {w}, check {check:#018x}) in \
                 {ACK_LEN} (a one-way message corrupted, lost, duplicated or reordered)"
            )));
        }
        Ok(())
    }
}

/// `size` bytes one way, the checksum back; sized from the latency run's
/// rate, the clock read about once per millisecond.
fn throughput<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    rate: f64,
) -> Result<ThroughputRun, Stop> {
    let clock = &cfg.clock;
    let mut sum = Sum::new(cfg.size, cfg.api, conn.in_place());
    // Window 1 unless the transport has one-way messages.
    let window = if conn.supports_oneway() {
        cfg.window.max(1)
    } else {
        1
    };
    let target = target(rate, cfg.row_secs);
    // The clock is looked at every `mask + 1` windows.
    let mask = ((rate / 1000.0 / window as f64) as u64)
        .clamp(1, 1024)
        .next_power_of_two()
        - 1;
    // Warm the checksum path: a few windows, at most a fiftieth of a row.
    let warm_until = clock.now().wrapping_add(ticks(clock, cfg.row_secs / 50.0));
    for _ in 0..10 {
        sum.window(conn, window)?;
        if clock.now() >= warm_until {
            break;
        }
    }
    let cpu0 = CpuMark::before(conn)?;
    // The CPU-time call's reply overwrote the slot's first bytes.
    sum.write_body = true;
    let start = clock.now();
    let deadline = start.wrapping_add(ticks(clock, cfg.row_secs * CAP_FACTOR));
    let mut done: u64 = 0;
    let mut windows: u64 = 0;
    while done < target {
        sum.window(conn, window)?;
        done += window as u64;
        windows += 1;
        if windows & mask == 0 {
            if clock.now() >= deadline {
                break;
            }
            check_stop(cfg)?;
        }
    }
    let end = clock.now();
    let cpu1 = CpuMark::after(conn)?;
    let secs = clock.ticks_to_ns(end.wrapping_sub(start)) / 1e9;
    let msgs_per_s = done as f64 / secs.max(1e-9);
    Ok(ThroughputRun {
        window,
        target,
        messages: done,
        time_capped: done < target,
        duration_ns: secs * 1e9,
        msgs_per_s,
        mb_per_s: msgs_per_s * cfg.size as f64 / 1e6,
        cpu: cpu0.per_message(&cpu1, done),
    })
}
