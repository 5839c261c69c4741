//! Library overhead: msgpass round trips against the machine's floors, side
//! by side in one run.
//!
//! | library   | floor                 | placements | target     |
//! |-----------|-----------------------|------------|------------|
//! | shm-spin  | `pingpong::cacheline`    | 0,1        | <= 1.50x   |
//! | shm-block | `pingpong::futex`        | 0,0 + 0,1  | <= 1.15x   |
//! | uds       | `pingpong::seqpacket`    | 0,0 + 0,1  | <= 1.10x   |
//! | uds-stream| `pingpong::uds_stream`   | 0,0 + 0,1  | <= 1.10x   |
//! | uds-dgram | `pingpong::uds_dgram`    | 0,0 + 0,1  | <= 1.10x   |
//! | pipe      | `pingpong::pipe`         | 0,0 + 0,1  | <= 1.10x   |
//! | fifo      | `pingpong::fifo`         | 0,0 + 0,1  | <= 1.10x   |
//! | posix-mq  | `pingpong::posix_mq`     | 0,0 + 0,1  | <= 1.10x   |
//! | sysv-msg  | `pingpong::sysv_msg`     | 0,0 + 0,1  | <= 1.10x   |
//! | eventfd   | `pingpong::eventfd`      | 0,0 + 0,1  | <= 1.10x   |
//! | tcp       | `pingpong::tcp`          | 0,0 + 0,1  | <= 1.10x   |
//! | udp       | `pingpong::udp`          | 0,0 + 0,1  | <= 1.10x   |
//!
//! (A FIFO is a pipe opened by name, but its writes also update a named
//! inode: `fifo` is held to a bare FIFO ping-pong, `pingpong::fifo`.)
//!
//! For each row, bare and library runs alternate (bare, lib, bare, lib...)
//! with the same number of round trips, and the medians are compared. The
//! library run is a `Channel` served by one pinned thread (CPU `b`) and a
//! `Connection` in another pinned thread (CPU `a`), 4-byte request and
//! reply, every value checked; the floor's side A (requester) runs on `a`,
//! side B (echo) on `b`.
//!
//! Over target is reported (`OVER`), not failed. A wrong value or a setup
//! failure is an error: the row says so and the exit status is 1.
//!
//! Run: `cargo bench -p msgbench --bench overhead [-- [--quick] [--only NAME[,NAME]]]`
//! (`--only` keeps the rows of the named library transports, in both
//! placements, e.g. `--only posix-mq` or `--only pipe,fifo`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use msgbench::measure::placement::{online_cpus, pin_current_thread};
use msgbench::pingpong::{self, PingPong};
use msgpass::{Channel, Connection, Namespace, Options, Transport};

/// Spread (max-min over median, in percent) above which a row is flagged.
const NOISY_PCT: f64 = 25.0;

type Cpus = (Option<usize>, Option<usize>);
type FloorFn = fn(Cpus, u64) -> anyhow::Result<PingPong>;

/// One comparison.
struct Row {
    transport: &'static str,
    floor_name: &'static str,
    floor: FloorFn,
    /// (requester, server) CPUs.
    cpus: (usize, usize),
    target: f64,
}

/// How long the run goes.
struct Plan {
    /// Wall time one bare run aims at.
    per_run: Duration,
    /// Bare/library pairs per row.
    rounds: usize,
    /// Fewest round trips per run (the slow cross-CPU blocking rows hit it).
    min_round_trips: u64,
    /// Print every run's figure.
    verbose: bool,
    /// Keep only the rows of the library transports named here.
    only: Option<Vec<String>>,
}

/// Wall time one bare run aims at in a full run: with 23 rows of 5 bare
/// and 5 library runs, this keeps the whole bench near a minute (under
/// 90 s on a loaded machine).
const PER_RUN_MS: u64 = 150;

/// `a,b , c` as `["a", "b", "c"]`.
fn split_names(v: &str) -> Vec<String> {
    v.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// A row's outcome.
struct Outcome {
    round_trips: u64,
    bare: Vec<f64>,
    lib: Vec<f64>,
}

fn main() {
    let mut quick = false;
    let mut verbose = false;
    let mut only: Option<Vec<String>> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--quick" => quick = true,
            "-v" | "--verbose" => verbose = true,
            "--only" => match args.next() {
                Some(v) => only = Some(split_names(&v)),
                None => {
                    eprintln!("overhead: --only needs a value, e.g. --only pipe,tcp");
                    std::process::exit(2);
                }
            },
            s if s.starts_with("--only=") => only = Some(split_names(&s["--only=".len()..])),
            // cargo bench passes --bench; filters and other flags do not apply.
            "--bench" => {}
            "-h" | "--help" => {
                println!(
                    "usage: overhead [--quick] [--verbose] [--only NAME[,NAME]]\n  \
                     cargo bench -p msgbench --bench overhead -- --quick\n  \
                     --quick    fewer round trips and runs (well under 20 s)\n  \
                     --verbose  print every run's figure under its row\n  \
                     --only     keep the rows of these library transports \
                     (e.g. --only posix-mq,tcp)"
                );
                return;
            }
            other => eprintln!("overhead: ignoring argument {other:?}"),
        }
    }
    let plan = if quick {
        Plan {
            per_run: Duration::from_millis(40),
            rounds: 3,
            min_round_trips: 300,
            verbose,
            only,
        }
    } else {
        Plan {
            per_run: Duration::from_millis(PER_RUN_MS),
            rounds: 5,
            min_round_trips: 1000,
            verbose,
            only,
        }
    };
    match run(&plan) {
        Ok(true) => {}
        Ok(false) => std::process::exit(1),
        Err(e) => {
            eprintln!("overhead: {e:#}");
            std::process::exit(1);
        }
    }
}

/// Runs every row; `Ok(false)` when some row failed (not merely over target).
fn run(plan: &Plan) -> anyhow::Result<bool> {
    let (c0, c1) = two_cpus()?;
    let mut rows = all_rows(c0, c1);
    if let Some(only) = &plan.only {
        keep_only(&mut rows, only)?;
    }

    let dir = std::env::temp_dir().join(format!("msgbench-overhead-{}", std::process::id()));
    let ns = Namespace::open(&dir).with_context(|| format!("namespace {}", dir.display()))?;
    let started = Instant::now();
    print_header(plan, c1.is_none());
    let mut all_ok = true;
    for (k, row) in rows.iter().enumerate() {
        let label = format!("{} / {}", row.transport, row.floor_name);
        let cpus = format!("{},{}", row.cpus.0, row.cpus.1);
        match measure_row(&ns, k, row, plan) {
            Ok(o) => print_outcome(&label, &cpus, row, &o, plan.verbose),
            Err(e) => {
                all_ok = false;
                println!("{label:<24} {cpus:>5} FAILED: {e:#}");
            }
        }
    }
    print_footer(started);
    drop(ns);
    if let Err(e) = std::fs::remove_dir_all(&dir) {
        eprintln!("overhead: cannot remove {}: {e}", dir.display());
    }
    Ok(all_ok)
}

/// The first two online CPUs: the same-CPU rows run on the first, the
/// different-CPU rows on both (`None` when only one CPU is online).
fn two_cpus() -> anyhow::Result<(usize, Option<usize>)> {
    let online = online_cpus();
    Ok(match online[..] {
        [a, b, ..] => (a, Some(b)),
        [a] => (a, None),
        [] => bail!("no online CPU found"),
    })
}

/// Every row, in table order: same-CPU rows on `c0`, different-CPU rows on
/// `c0,c1` (left out when `c1` is `None`).
fn all_rows(c0: usize, c1: Option<usize>) -> Vec<Row> {
    let mut rows = vec![];
    let mut add = |transport, floor_name, floor: FloorFn, target, same: bool| {
        let cpus = if same {
            Some((c0, c0))
        } else {
            c1.map(|c1| (c0, c1))
        };
        if let Some(cpus) = cpus {
            rows.push(Row {
                transport,
                floor_name,
                floor,
                cpus,
                target,
            });
        }
    };
    add("shm-spin", "cacheline", pingpong::cacheline, 1.5, false);
    add("shm-block", "futex", pingpong::futex, 1.15, true);
    add("shm-block", "futex", pingpong::futex, 1.15, false);
    add("uds", "seqpacket", pingpong::seqpacket, 1.10, true);
    add("uds", "seqpacket", pingpong::seqpacket, 1.10, false);
    // The kernel transports, each against the bare ping-pong over the same
    // mechanism, in both placements.
    let kernel: [(&'static str, &'static str, FloorFn); 9] = [
        ("uds-stream", "uds_stream", pingpong::uds_stream),
        ("uds-dgram", "uds_dgram", pingpong::uds_dgram),
        ("pipe", "pipe", pingpong::pipe),
        ("fifo", "fifo", pingpong::fifo),
        ("posix-mq", "posix_mq", pingpong::posix_mq),
        ("sysv-msg", "sysv_msg", pingpong::sysv_msg),
        ("eventfd", "eventfd", pingpong::eventfd),
        ("tcp", "tcp", pingpong::tcp),
        ("udp", "udp", pingpong::udp),
    ];
    for (transport, floor_name, f) in kernel {
        add(transport, floor_name, f, 1.10, true);
        add(transport, floor_name, f, 1.10, false);
    }
    rows
}

/// Keeps the rows of the library transports named in `only` (`--only`); a
/// name no row has is an error that lists the transports there are.
fn keep_only(rows: &mut Vec<Row>, only: &[String]) -> anyhow::Result<()> {
    let known = |n: &str| rows.iter().any(|r| r.transport == n);
    if let Some(bad) = only.iter().find(|n| !known(n)) {
        let mut names: Vec<&str> = rows.iter().map(|r| r.transport).collect();
        names.dedup();
        bail!(
            "--only {bad:?}: no such row; transports: {}",
            names.join(", ")
        );
    }
    rows.retain(|r| only.iter().any(|n| r.transport == n));
    Ok(())
}

/// The lines above the table: what is measured, the load average, a note
/// when the different-CPU rows are skipped, the column titles and a rule.
fn print_header(plan: &Plan, one_cpu: bool) {
    println!(
        "msgbench overhead: library vs bare floor, medians of {} alternating runs (~{} ms each); load average {}",
        plan.rounds,
        plan.per_run.as_millis(),
        loadavg()
    );
    if one_cpu {
        println!("only one CPU online: the different-CPU rows are skipped");
    }
    let header = format!(
        "{:<24} {:>5} {:>9} {:>10} {:>6} {:>10} {:>6} {:>8} {:>7} {:>7}  {}",
        "library / floor",
        "cpus",
        "rt/run",
        "bare ns",
        "+-%",
        "lib ns",
        "+-%",
        "lib/bare",
        "paired",
        "target",
        "verdict"
    );
    println!("{header}");
    println!("{}", "-".repeat(header.len()));
}

/// One measured row of the table (medians, spreads, ratios, verdict) and,
/// when `verbose`, every run's figure under it.
fn print_outcome(label: &str, cpus: &str, row: &Row, o: &Outcome, verbose: bool) {
    let (b, l) = (median(&o.bare), median(&o.lib));
    let ratio = l / b;
    let pairs: Vec<f64> = o.lib.iter().zip(&o.bare).map(|(l, b)| l / b).collect();
    let paired = median(&pairs);
    let (sb, sl) = (spread_pct(&o.bare), spread_pct(&o.lib));
    let verdict = if ratio <= row.target { "ok" } else { "OVER" };
    let noisy = if sb.max(sl) > NOISY_PCT {
        " (noisy)"
    } else {
        ""
    };
    println!(
        "{:<24} {:>5} {:>9} {:>10.1} {:>6.0} {:>10.1} {:>6.0} {:>7.2}x {:>6.2}x {:>6.2}x  {}{}",
        label, cpus, o.round_trips, b, sb, l, sl, ratio, paired, row.target, verdict, noisy
    );
    if verbose {
        println!("    bare runs: {}", runs_list(&o.bare));
        println!("    lib runs:  {}", runs_list(&o.lib));
    }
}

/// Run figures as whole nanoseconds, space-separated.
fn runs_list(v: &[f64]) -> String {
    v.iter()
        .map(|x| format!("{x:.0}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The legend under the table, with the wall time since `started` and the
/// load average now.
fn print_footer(started: Instant) {
    println!(
        "(ns = ns per round trip; +-% = (max-min)/median over the runs, \"noisy\" above {NOISY_PCT}%;\n \
         lib/bare = ratio of the medians, which the verdict uses; paired = median of each round's lib/bare;\n \
         took {:.1} s; load average now {})",
        started.elapsed().as_secs_f64(),
        loadavg()
    );
}

/// Calibrates the round-trip count on the floor, then alternates runs.
fn measure_row(ns: &Namespace, k: usize, row: &Row, plan: &Plan) -> anyhow::Result<Outcome> {
    let cpus = (Some(row.cpus.0), Some(row.cpus.1));
    let probe = (row.floor)(cpus, 2000).context("calibrating on the floor")?;
    let n = (plan.per_run.as_nanos() as f64 / probe.ns_per_round_trip) as u64;
    let n = n.clamp(plan.min_round_trips, 20_000_000);
    let mut o = Outcome {
        round_trips: n,
        bare: vec![],
        lib: vec![],
    };
    for r in 0..plan.rounds {
        let bare = (row.floor)(cpus, n).with_context(|| format!("{} run {r}", row.floor_name))?;
        o.bare.push(bare.ns_per_round_trip);
        let name = format!("overhead/{k}-{}-{r}", row.transport);
        let lib = library(ns, &name, row.transport, row.cpus, n)
            .with_context(|| format!("{} run {r}", row.transport))?;
        o.lib.push(lib);
    }
    Ok(o)
}

/// What the server thread tells the client side once set up: the
/// channel's stop flag, or why it has none.
type Ready = anyhow::Result<Arc<AtomicBool>>;

/// One library run: ns per round trip over `n` timed calls (after the same
/// warm-up the floors use), every request and reply checked.
fn library(
    ns: &Namespace,
    name: &str,
    transport: &str,
    (client_cpu, server_cpu): (usize, usize),
    n: u64,
) -> anyhow::Result<f64> {
    let t = msgpass::transport::by_name(transport)?;
    let warmup = pingpong::warmup_for(n);
    let total = warmup + n;
    let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
    std::thread::scope(|s| {
        let t = &*t;
        let server = s.spawn(move || -> anyhow::Result<u64> {
            let mut chan = open_server(ns, name, t, server_cpu, &ready_tx)?;
            let mut i: u64 = 0;
            let mut first_error = None;
            while let Some(req) = chan.receive()? {
                let want = (2 * i + 1) as u32;
                let got = <[u8; 4]>::try_from(req.data()).ok().map(u32::from_ne_bytes);
                if got == Some(want) {
                    req.reply(&(want + 1).to_ne_bytes())?;
                } else {
                    first_error.get_or_insert(anyhow!(
                        "server: request {i}: expected {want}, got {:?}",
                        req.data()
                    ));
                    req.reply_error(libc::EPROTO)?;
                }
                i += 1;
            }
            match first_error {
                Some(e) => Err(e),
                None => Ok(i),
            }
        });
        let stop = match ready_rx.recv() {
            Ok(Ok(stop)) => stop,
            Ok(Err(_)) | Err(_) => return Err(server_setup_error(server)),
        };
        let client = s.spawn(move || -> anyhow::Result<Duration> {
            let mut conn = open_client(ns, name, t, client_cpu)?;
            let mut reply = [0u8; 4];
            let mut step = |i: u64| -> anyhow::Result<()> {
                let req = (2 * i + 1) as u32;
                let len = conn
                    .call(1, &req.to_ne_bytes(), &mut reply)
                    .with_context(|| format!("call {i}"))?;
                if len != 4 || u32::from_ne_bytes(reply) != req + 1 {
                    bail!("call {i}: expected {}, got {:?}", req + 1, &reply[..len]);
                }
                Ok(())
            };
            for i in 0..warmup {
                step(i)?;
            }
            let t0 = Instant::now();
            for i in warmup..total {
                step(i)?;
            }
            Ok(t0.elapsed())
        });
        let c = joined(client.join());
        stop.store(true, Ordering::SeqCst);
        let served = joined(server.join());
        ns_per_round_trip(c, served, total, n)
    })
}

/// The server thread's setup: pins it to `cpu` and creates the channel,
/// then sends the client side the channel's stop flag, or the setup error
/// (which it also returns).
fn open_server(
    ns: &Namespace,
    name: &str,
    t: &dyn Transport,
    cpu: usize,
    ready_tx: &mpsc::Sender<Ready>,
) -> anyhow::Result<Channel> {
    let setup = || -> anyhow::Result<Channel> {
        pin_current_thread(cpu).context("pinning the server")?;
        Ok(Channel::create(ns, name, t, &Options::default())?)
    };
    let chan = match setup() {
        Ok(c) => c,
        Err(e) => {
            let msg = format!("{e:#}");
            let _ = ready_tx.send(Err(e));
            bail!("server setup: {msg}");
        }
    };
    let _ = ready_tx.send(Ok(chan.stop_flag()));
    Ok(chan)
}

/// Why the server thread did not get to serving: its own error, once it
/// has ended.
fn server_setup_error(server: ScopedJoinHandle<'_, anyhow::Result<u64>>) -> anyhow::Error {
    joined(server.join())
        .err()
        .unwrap_or_else(|| anyhow!("server thread ended before serving"))
}

/// The client thread's setup: pins it to `cpu` and connects to `name`,
/// waiting up to 5 s for the server's endpoint.
fn open_client(
    ns: &Namespace,
    name: &str,
    t: &dyn Transport,
    cpu: usize,
) -> anyhow::Result<Connection> {
    pin_current_thread(cpu).context("pinning the client")?;
    let opts = Options {
        wait: Some(Duration::from_secs(5)),
        ..Options::default()
    };
    Ok(Connection::open(ns, name, t, &opts)?)
}

/// A library run's figure from both threads' results: the client's timed
/// `n` calls over `n`, once the server is known to have answered all
/// `total` requests (warm-up included).
fn ns_per_round_trip(
    client: anyhow::Result<Duration>,
    served: anyhow::Result<u64>,
    total: u64,
    n: u64,
) -> anyhow::Result<f64> {
    let elapsed = client?;
    let served = served?;
    if served != total {
        bail!("server answered {served} requests, expected {total}");
    }
    Ok(elapsed.as_nanos() as f64 / n as f64)
}

fn joined<T>(r: std::thread::Result<anyhow::Result<T>>) -> anyhow::Result<T> {
    r.unwrap_or_else(|_| Err(anyhow!("a benchmark thread panicked")))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let m = s.len() / 2;
    if s.len() % 2 == 1 {
        s[m]
    } else {
        (s[m - 1] + s[m]) / 2.0
    }
}

fn spread_pct(v: &[f64]) -> f64 {
    let (lo, hi) = v.iter().fold((f64::INFINITY, 0.0f64), |(lo, hi), &x| {
        (lo.min(x), hi.max(x))
    });
    100.0 * (hi - lo) / median(v)
}

/// The 1-minute load average, as the kernel prints it.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(str::to_string))
        .unwrap_or_else(|| "unknown".into())
}
