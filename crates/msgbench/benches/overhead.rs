//! Library overhead: msgpass round trips against the machine's floors, side
//! by side in one run.
//!
//! | library   | floor                 | placements | target     |
//! |-----------|-----------------------|------------|------------|
//! | shm-spin  | `pingpong::cacheline_processes` | 0,1 | <= 1.50x (in place, 8 and 64 B) |
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
//! `Connection` in another pinned thread (CPU `a`); the floor's side A
//! (requester) runs on `a`, side B (echo) on `b`.
//!
//! Each shared-memory row runs twice, once per API: `in place`
//! (`Connection::call_with` / `Request::reply_with`, over the typed
//! channel: no dynamic dispatch) and `copy` (`Connection::call` /
//! `Request::reply`, chosen by name as before). A message of SIZE bytes
//! each way carries a sequence stamp in its first 8 bytes (or all of it
//! when smaller), which the server checks and answers with the stamp plus
//! one; the rest of the body is left as it is. In place, nothing else is
//! touched, so the round trip should not depend on the size; the copying
//! API copies the whole message each way. Every stamp is checked, and the
//! whole body of the last reply. The kernel transports' rows use the
//! copying API with 4-byte messages. A last section gives the size curve
//! of shm-spin across CPUs, both APIs, 8 B to 64 KiB.
//!
//! The judged shm-spin rows are each followed by an `unpaced` twin, with
//! `Options::pace` off: its waiters look at the peer's word at once instead
//! of holding back for the time they learnt, which shows in the same run
//! what the pacing buys.
//!
//! Over target is reported (`OVER`), not failed. A wrong value or a setup
//! failure is an error: the row says so and the exit status is 1.
//!
//! Run: `cargo bench -p msgbench --bench overhead [-- [--quick] [--only NAME[,NAME]]]`
//! (`--only` keeps the rows of the named library transports, in both
//! placements, e.g. `--only posix-mq` or `--only pipe,fifo`).
//!
//! Before and after: `--ab OTHER [--ab-rounds N]` runs this build and
//! another build's bench binary `OTHER` interleaved, N rounds (default 5),
//! and prints each row's library figure for both with its spread
//! (`overhead/ab.rs`); `scripts/ab-overhead REV` builds REV's and runs it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::ScopedJoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use msgbench::measure::placement::{online_cpus, pin_current_thread};
use msgbench::pingpong::{self, PingPong};
use msgpass::transport::shm::Shm;
use msgpass::transport::{ClientConnection, ServerChannel};
use msgpass::{Channel, Connection, Namespace, Options, View};

#[path = "overhead/ab.rs"]
mod ab;
#[path = "overhead/ab_parse.rs"]
mod ab_parse;

/// Spread (max-min over median, in percent) above which a row is flagged.
const NOISY_PCT: f64 = 25.0;

type Cpus = (Option<usize>, Option<usize>);
type FloorFn = fn(Cpus, u64) -> anyhow::Result<PingPong>;

/// Which msgpass API a library run uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Api {
    /// `call_with` / `reply_with`, typed channel for the shm transports.
    InPlace,
    /// `call` / `reply`, transport by name.
    Copy,
}

impl Api {
    fn label(self) -> &'static str {
        match self {
            Api::InPlace => "in place",
            Api::Copy => "copy",
        }
    }
}

/// One comparison.
#[derive(Clone)]
struct Row {
    transport: &'static str,
    floor_name: &'static str,
    floor: FloorFn,
    /// (requester, server) CPUs.
    cpus: (usize, usize),
    /// Payload bytes each way.
    size: usize,
    api: Api,
    /// Whether the shm waiters learn their hold before the first look
    /// (`Options::pace`); the unpaced twins show what that buys.
    paced: bool,
    /// `None`: shown, not judged (the copying API's sizes, the curve).
    target: Option<f64>,
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

/// The command line.
#[derive(Default)]
struct Args {
    quick: bool,
    verbose: bool,
    only: Option<Vec<String>>,
    /// `--ab OTHER`: the other build's bench binary.
    other: Option<std::path::PathBuf>,
    ab_rounds: usize,
    /// What the other build of an A/B run is given: --quick and --only.
    pass: Vec<String>,
}

/// Exits 2 with `msg` (a usage error).
fn usage_error(msg: &str) -> ! {
    eprintln!("overhead: {msg}");
    std::process::exit(2);
}

/// Reads the command line; `None` when it asked for the help.
fn parse_args() -> Option<Args> {
    let mut a = Args {
        ab_rounds: 5,
        ..Args::default()
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--ab" | "--ab-rounds" => {
                let Some(v) = args.next() else {
                    usage_error(&format!("{arg} needs a value"))
                };
                if arg == "--ab" {
                    a.other = Some(v.into());
                } else {
                    a.ab_rounds = match v.parse::<usize>() {
                        Ok(n) if (1..=100).contains(&n) => n,
                        _ => usage_error(&format!("--ab-rounds {v:?}: a number from 1 to 100")),
                    };
                }
            }
            "--quick" => a.quick = true,
            "-v" | "--verbose" => a.verbose = true,
            "--only" => match args.next() {
                Some(v) => {
                    a.pass.extend(["--only".to_string(), v.clone()]);
                    a.only = Some(split_names(&v))
                }
                None => usage_error("--only needs a value, e.g. --only pipe,tcp"),
            },
            s if s.starts_with("--only=") => {
                a.pass.push(s.to_string());
                a.only = Some(split_names(&s["--only=".len()..]))
            }
            // cargo bench passes --bench; filters and other flags do not apply.
            "--bench" => {}
            "-h" | "--help" => {
                print_help();
                return None;
            }
            other => eprintln!("overhead: ignoring argument {other:?}"),
        }
    }
    if a.quick {
        a.pass.push("--quick".to_string());
    }
    Some(a)
}

fn print_help() {
    println!(
        "usage: overhead [--quick] [--verbose] [--only NAME[,NAME]] [--ab OTHER [--ab-rounds N]]\n  \
         cargo bench -p msgbench --bench overhead -- --quick\n  \
         --quick    fewer round trips and runs (well under 20 s)\n  \
         --verbose  print every run's figure under its row\n  \
         --only     keep the rows of these library transports \
         (e.g. --only posix-mq,tcp)\n  \
         --ab       this build against OTHER (another build's bench binary), \
         interleaved, --ab-rounds rounds (5)"
    );
}

fn main() {
    let Some(Args {
        quick,
        verbose,
        only,
        other,
        ab_rounds,
        pass,
    }) = parse_args()
    else {
        return;
    };
    if let Some(other) = other {
        if let Err(e) = ab::run(&other, &pass, ab_rounds) {
            eprintln!("overhead: {e:#}");
            std::process::exit(1);
        }
        return;
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
    let mut curve = curve_rows(c0, c1);
    if let Some(only) = &plan.only {
        keep_only(&mut rows, only)?;
        curve.retain(|r| only.iter().any(|n| r.transport == n));
    }

    let dir = std::env::temp_dir().join(format!("msgbench-overhead-{}", std::process::id()));
    let ns = Namespace::open(&dir).with_context(|| format!("namespace {}", dir.display()))?;
    let started = Instant::now();
    print_header(plan, c1.is_none());
    let mut all_ok = measure_rows(&ns, 0, &rows, plan);
    if !curve.is_empty() {
        println!("\nsize curve: shm-spin across CPUs, in place against copy");
        all_ok &= measure_rows(&ns, rows.len(), &curve, plan);
    }
    print_footer(started);
    drop(ns);
    if let Err(e) = std::fs::remove_dir_all(&dir) {
        eprintln!("overhead: cannot remove {}: {e}", dir.display());
    }
    Ok(all_ok)
}

/// Measures and prints `rows` (numbered from `first` for their endpoint
/// names); false when one failed.
fn measure_rows(ns: &Namespace, first: usize, rows: &[Row], plan: &Plan) -> bool {
    let mut all_ok = true;
    for (k, row) in rows.iter().enumerate() {
        let label = format!(
            "{} {}B {}{} / {}",
            row.transport,
            row.size,
            row.api.label(),
            if row.paced { "" } else { " unpaced" },
            row.floor_name
        );
        let cpus = format!("{},{}", row.cpus.0, row.cpus.1);
        match measure_row(ns, first + k, row, plan) {
            Ok(o) => print_outcome(&label, &cpus, row, &o, plan.verbose),
            Err(e) => {
                all_ok = false;
                println!("{label:<48} {cpus:>5} FAILED: {e:#}");
            }
        }
    }
    all_ok
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
    let mut rows = RowsOn {
        c0,
        c1,
        rows: vec![],
    };
    shm_rows(&mut rows);
    kernel_rows(&mut rows);
    with_unpaced_twins(rows.rows)
}

/// A transport, the name of its floor, and the floor.
type Pair = (&'static str, &'static str, FloorFn);

/// The rows being built, on CPU `c0` (same-CPU rows) and `c0,c1`.
struct RowsOn {
    c0: usize,
    c1: Option<usize>,
    rows: Vec<Row>,
}

impl RowsOn {
    /// Adds a paced row of `size` bytes on `api`, same-CPU or not (left out
    /// when there is no second CPU).
    fn sized(
        &mut self,
        (transport, floor_name, floor): Pair,
        target: Option<f64>,
        same: bool,
        size: usize,
        api: Api,
    ) {
        let cpus = if same {
            Some((self.c0, self.c0))
        } else {
            self.c1.map(|c1| (self.c0, c1))
        };
        if let Some(cpus) = cpus {
            self.rows.push(Row {
                transport,
                floor_name,
                floor,
                cpus,
                size,
                api,
                paced: true,
                target,
            });
        }
    }

    /// Adds a judged 4-byte row of the copying API.
    fn copying(&mut self, pair: Pair, target: f64, same: bool) {
        self.sized(pair, Some(target), same, 4, Api::Copy);
    }
}

/// The shared-memory rows: shm-spin between processes at 8 and 64 bytes
/// (in place judged, copying shown), shm-block against the futex in both
/// placements and both APIs.
fn shm_rows(r: &mut RowsOn) {
    let procs: Pair = ("shm-spin", "cacheline_procs", pingpong::cacheline_processes);
    for size in [8, 64] {
        r.sized(procs, Some(1.5), false, size, Api::InPlace);
        r.sized(procs, None, false, size, Api::Copy);
    }
    for same in [true, false] {
        for api in [Api::InPlace, Api::Copy] {
            r.sized(
                ("shm-block", "futex", pingpong::futex),
                Some(1.15),
                same,
                8,
                api,
            );
        }
    }
}

/// uds, then the kernel transports, each against the bare ping-pong over
/// the same mechanism, in both placements.
fn kernel_rows(r: &mut RowsOn) {
    r.copying(("uds", "seqpacket", pingpong::seqpacket), 1.10, true);
    r.copying(("uds", "seqpacket", pingpong::seqpacket), 1.10, false);
    let kernel: [Pair; 9] = [
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
    for pair in kernel {
        r.copying(pair, 1.10, true);
        r.copying(pair, 1.10, false);
    }
}

/// Follows each judged shm-spin row with its unpaced twin (shown, not
/// judged), so that what the pacing buys is measured in the same run.
fn with_unpaced_twins(rows: Vec<Row>) -> Vec<Row> {
    let mut out = Vec::with_capacity(rows.len() + 2);
    for row in rows {
        let twin = (row.transport == "shm-spin" && row.target.is_some()).then(|| Row {
            paced: false,
            target: None,
            ..row.clone()
        });
        out.push(row);
        out.extend(twin);
    }
    out
}

/// The size curve: shm-spin across CPUs, both APIs, against the same floor.
fn curve_rows(c0: usize, c1: Option<usize>) -> Vec<Row> {
    let Some(c1) = c1 else { return vec![] };
    let mut rows = vec![];
    for size in [8, 64, 1024, 4096, 65536] {
        for api in [Api::InPlace, Api::Copy] {
            rows.push(Row {
                transport: "shm-spin",
                floor_name: "cacheline_procs",
                floor: pingpong::cacheline_processes,
                cpus: (c0, c1),
                size,
                api,
                paced: true,
                target: None,
            });
        }
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
        "{:<48} {:>5} {:>9} {:>10} {:>6} {:>10} {:>6} {:>8} {:>7} {:>7}  {}",
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
    let verdict = match row.target {
        Some(t) if ratio <= t => "ok",
        Some(_) => "OVER",
        None => "-",
    };
    let target = row.target.map_or("-".to_string(), |t| format!("{t:.2}x"));
    let noisy = if sb.max(sl) > NOISY_PCT {
        " (noisy)"
    } else {
        ""
    };
    println!(
        "{:<48} {:>5} {:>9} {:>10.1} {:>6.0} {:>10.1} {:>6.0} {:>7.2}x {:>6.2}x {:>7}  {}{}",
        label, cpus, o.round_trips, b, sb, l, sl, ratio, paired, target, verdict, noisy
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
        let lib =
            library(ns, &name, row, n).with_context(|| format!("{} run {r}", row.transport))?;
        o.lib.push(lib);
    }
    Ok(o)
}

/// What the server thread tells the client side once set up: the
/// channel's stop flag, or why it has none.
type Ready = anyhow::Result<Arc<AtomicBool>>;

/// One library run of `row`: ns per round trip over `n` timed calls (after
/// the same warm-up the floors use), every stamp checked. In place over
/// an shm transport goes through the typed channel.
fn library(ns: &Namespace, name: &str, row: &Row, n: u64) -> anyhow::Result<f64> {
    let opts = Options {
        pace: row.paced,
        ..Options::default()
    };
    let client_opts = Options {
        wait: Some(Duration::from_secs(5)),
        ..opts.clone()
    };
    if let (Api::InPlace, Some(t)) = (row.api, Shm::by_name(row.transport)) {
        return pair(
            row,
            n,
            || Channel::create_typed(ns, name, &t, &opts),
            || Connection::open_typed(ns, name, &t, &client_opts),
        );
    }
    let t = msgpass::transport::by_name(row.transport)?;
    let t = &*t;
    pair(
        row,
        n,
        || Channel::create(ns, name, t, &opts),
        || Connection::open(ns, name, t, &client_opts),
    )
}

/// The request stamp of call `i` (the reply's is one more).
fn stamp_of(i: u64) -> u64 {
    2 * i + 1
}

/// Byte `k` of every message body (after the stamp).
fn body_byte(k: usize) -> u8 {
    (k as u8).wrapping_mul(7).wrapping_add(3)
}

/// The stamp in the first bytes of `data` (up to 8), copied out of it.
fn stamp_in(data: &View<'_>) -> u64 {
    let mut b = [0u8; 8];
    let k = data.len().min(8);
    data.read(0, &mut b[..k]);
    u64::from_le_bytes(b)
}

/// Writes stamp `v` into the first bytes of `buf` (up to 8).
fn put_stamp(buf: &mut [u8], v: u64) {
    let k = buf.len().min(8);
    buf[..k].copy_from_slice(&v.to_le_bytes()[..k]);
}

/// The largest stamp a message of `size` bytes can carry.
fn stamp_mask(size: usize) -> u64 {
    match size {
        0 => 0,
        1..=7 => (1u64 << (8 * size)) - 1,
        _ => u64::MAX,
    }
}

/// The server and client threads of one run, pinned, the channel made by
/// `create` on the server's thread and the connection by `open` on the
/// client's.
fn pair<S, C>(
    row: &Row,
    n: u64,
    create: impl FnOnce() -> msgpass::Result<Channel<S>> + Send,
    open: impl FnOnce() -> msgpass::Result<Connection<C>> + Send,
) -> anyhow::Result<f64>
where
    S: ServerChannel + ?Sized,
    C: ClientConnection + ?Sized,
{
    let warmup = pingpong::warmup_for(n);
    let total = warmup + n;
    let (client_cpu, server_cpu) = row.cpus;
    let (size, api) = (row.size, row.api);
    let (ready_tx, ready_rx) = mpsc::channel::<Ready>();
    std::thread::scope(|s| {
        let server = s.spawn(move || -> anyhow::Result<u64> {
            let mut chan = open_server(create, server_cpu, &ready_tx)?;
            serve(&mut chan, size, api)
        });
        let stop = match ready_rx.recv() {
            Ok(Ok(stop)) => stop,
            Ok(Err(_)) | Err(_) => return Err(server_setup_error(server)),
        };
        let client = s.spawn(move || -> anyhow::Result<Duration> {
            pin_current_thread(client_cpu).context("pinning the client")?;
            let mut conn = open()?;
            match api {
                Api::InPlace => client_in_place(&mut conn, size, warmup, total),
                Api::Copy => client_copy(&mut conn, size, warmup, total),
            }
        });
        let c = joined(client.join());
        stop.store(true, Ordering::SeqCst);
        let served = joined(server.join());
        ns_per_round_trip(c, served, total, n)
    })
}

/// The server loop: checks each request's stamp and answers it plus one,
/// in place or from a buffer of its own. Returns the requests answered.
fn serve<S: ServerChannel + ?Sized>(
    chan: &mut Channel<S>,
    size: usize,
    api: Api,
) -> anyhow::Result<u64> {
    let mask = stamp_mask(size);
    let mut out = vec![0u8; size];
    let mut i: u64 = 0;
    let mut first_error = None;
    let k = size.min(8);
    while let Some(req) = chan.receive()? {
        let want = stamp_of(i) & mask;
        // The stamp read where the request lies: in place, nothing else
        // of it is copied.
        let (len, got) = (req.len(), stamp_in(&req.view()));
        if len != size || got != want {
            first_error.get_or_insert(anyhow!(
                "server: request {i}: expected {size} bytes stamped {want}, got {len} stamped {got}"
            ));
            req.reply_error(libc::EPROTO)?;
        } else if api == Api::InPlace {
            req.reply_with(|buf| {
                buf.write(0, &(want + 1).to_le_bytes()[..k]);
                size
            })?;
        } else {
            let data = req.data();
            out.copy_from_slice(data);
            put_stamp(&mut out, want + 1);
            req.reply(&out)?;
        }
        i += 1;
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(i),
    }
}

/// Checks a reply: its length, its stamp, and (when `whole`) its body,
/// copied out first.
fn check_reply(reply: View<'_>, size: usize, want: u64, whole: bool, i: u64) -> anyhow::Result<()> {
    if reply.len() != size || stamp_in(&reply) != want {
        bail!(
            "call {i}: expected {size} bytes stamped {want}, got {} stamped {}",
            reply.len(),
            stamp_in(&reply)
        );
    }
    if whole {
        let got = reply.to_vec();
        if let Some(k) = (8..size).find(|&k| got[k] != body_byte(k)) {
            bail!("call {i}: body byte {k} is {:#04x}", got[k]);
        }
    }
    Ok(())
}

/// The in-place client: the body is written once, then each call writes
/// only the stamp into the request buffer and reads the reply where it
/// lies. Returns the time of the calls after the warm-up.
fn client_in_place<C: ClientConnection + ?Sized>(
    conn: &mut Connection<C>,
    size: usize,
    warmup: u64,
    total: u64,
) -> anyhow::Result<Duration> {
    let mask = stamp_mask(size);
    let (whole, k): (Vec<u8>, usize) = ((0..size).map(body_byte).collect(), size.min(8));
    let step = |i: u64, body: bool| -> anyhow::Result<()> {
        let want = stamp_of(i) & mask;
        let reply = conn
            .call_with(1, |buf| {
                if body {
                    buf.write(0, &whole);
                }
                buf.write(0, &want.to_le_bytes()[..k]);
                size
            })
            .with_context(|| format!("call {i}"))?;
        check_reply(reply, size, want + 1, body, i)
    };
    drive(warmup, total, step)
}

/// The copying client: a request buffer of its own with the body, the
/// stamp written per call, the reply copied into another buffer.
fn client_copy<C: ClientConnection + ?Sized>(
    conn: &mut Connection<C>,
    size: usize,
    warmup: u64,
    total: u64,
) -> anyhow::Result<Duration> {
    let mask = stamp_mask(size);
    let mut req: Vec<u8> = (0..size).map(body_byte).collect();
    let mut reply = vec![0u8; size];
    let step = |i: u64, whole: bool| -> anyhow::Result<()> {
        let want = stamp_of(i) & mask;
        put_stamp(&mut req, want);
        let n = conn
            .call(1, &req, &mut reply)
            .with_context(|| format!("call {i}"))?;
        check_reply(View::from(&reply[..n]), size, want + 1, whole, i)
    };
    drive(warmup, total, step)
}

/// Runs calls `0..total` through `step(i, whole)`, timing those from
/// `warmup` on. `whole` is set for the first call (the in-place client
/// then writes the body) and the last (which checks that the body
/// survived); the others check the stamp only.
fn drive(
    warmup: u64,
    total: u64,
    mut step: impl FnMut(u64, bool) -> anyhow::Result<()>,
) -> anyhow::Result<Duration> {
    for i in 0..warmup {
        step(i, i == 0)?;
    }
    let t0 = Instant::now();
    for i in warmup..total {
        step(i, i + 1 == total)?;
    }
    Ok(t0.elapsed())
}

/// The server thread's setup: pins it to `cpu` and creates the channel,
/// then sends the client side the channel's stop flag, or the setup error
/// (which it also returns).
fn open_server<S: ServerChannel + ?Sized>(
    create: impl FnOnce() -> msgpass::Result<Channel<S>>,
    cpu: usize,
    ready_tx: &mpsc::Sender<Ready>,
) -> anyhow::Result<Channel<S>> {
    let setup = || -> anyhow::Result<Channel<S>> {
        pin_current_thread(cpu).context("pinning the server")?;
        Ok(create()?)
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
