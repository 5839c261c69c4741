//! The options of `msgbench adder` ([`AdderArgs`], with its [`Mode`] and
//! [`Placement`] values) and their checked settings ([`AdderPlan`]): every
//! option is checked here, before a server starts or a directory is made.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use serde::Serialize;

use crate::devctl::options::{check_samples, transport_name, Api};
use crate::devctl::MAX_INSTANCES;
use crate::measure::placement::{self, CpuList};
use crate::measure::sched::SchedArgs;
use crate::serve::remote::{RemoteArgs, RemoteServer};
use crate::suites::OutputArgs;

/// How the X server threads are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// One server process with X threads, each serving its own path
    /// (adder/0..adder/X-1), client thread k calling adder/k (the seed's).
    One,
    /// X server processes, one path each; client thread k calls adder/k
    /// (the seed's).
    Multi,
    /// One server process serving the one path adder/0 from a pool of X
    /// threads (1 to 64), every client thread calling that path (QNX's
    /// multithreaded resource manager). A client's connection has a home
    /// pool thread (pinned: the one on the CPU the client last ran on),
    /// which takes its requests while free; the next free thread, maybe
    /// on another CPU, while it is busy.
    Pool,
}

impl Mode {
    /// The table's label (the seed's for `one` and `multi`).
    pub fn label(self) -> &'static str {
        match self {
            Mode::One => "One process",
            Mode::Multi => "Multi-process",
            Mode::Pool => "Thread pool (one path)",
        }
    }

    /// The seed's layout of the same mode; `None` for a pool, which the
    /// seed did not run.
    pub fn seed_layout(self) -> Option<crate::devctl::seed::Layout> {
        use crate::devctl::seed::Layout;
        match self {
            Mode::One => Some(Layout::OneProcess),
            Mode::Multi => Some(Layout::Processes),
            Mode::Pool => None,
        }
    }

    /// The figures' key value: `one`, `multi` or `pool`.
    pub fn key(self) -> &'static str {
        match self {
            Mode::One => "one",
            Mode::Multi => "multi",
            Mode::Pool => "pool",
        }
    }

    /// What it means, for the legend under the tables.
    pub fn describe(self) -> &'static str {
        match self {
            Mode::One => "one server process, X threads, each serving its own path",
            Mode::Multi => "X server processes, one path each",
            Mode::Pool => {
                "one server process serving the one path adder/0 from a pool of X threads, \
                 every client thread calling that path; each client's connection has a home \
                 pool thread (pinned: the one on the CPU the client last ran on, moved at most \
                 once a tick), which takes its requests while free, the next free thread \
                 (maybe on another CPU) while it is busy"
            }
        }
    }

    /// True when every client thread calls the one path adder/0.
    pub fn one_path(self) -> bool {
        self == Mode::Pool
    }
}

/// Where clients and servers run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Placement {
    /// Client thread k and server instance (or pool thread) k pinned: to
    /// the k-th CPU of --client-cpus / --server-cpus, or both to the k-th
    /// online CPU (one client/server pair per CPU) when those are not
    /// given.
    Pinned,
    /// Every thread left to the scheduler.
    Unpinned,
}

impl Placement {
    /// The figures' key value: `pinned` or `unpinned`.
    pub fn key(self) -> &'static str {
        match self {
            Placement::Pinned => "pinned",
            Placement::Unpinned => "unpinned",
        }
    }
}

/// Options of `msgbench adder`.
#[derive(Debug, Clone, Args)]
pub struct AdderArgs {
    /// Thread counts X to run, e.g. 1,2,4 or 1-6 (1 to 128; 1 to 64 with
    /// pool mode) [default: 1 to CPUs+2, within those bounds].
    #[arg(long = "threads", value_name = "LIST", value_parser = parse_threads)]
    pub threads: Option<std::vec::Vec<u32>>,
    /// Transports, comma-separated; one table each [default: shm; tcp
    /// with --server].
    #[arg(
        short = 't',
        long = "transport",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "shm",
        default_value_if("server", clap::builder::ArgPredicate::IsPresent, "tcp"),
        hide_default_value = true,
        value_parser = transport_name
    )]
    pub transports: Vec<String>,
    /// Round trips per thread for every row [default: picked so a row takes about --row-secs].
    #[arg(short = 'S', value_name = "SAMPLES")]
    pub samples: Option<u64>,
    /// Target duration of one row when -S is not given.
    #[arg(
        long = "row-secs",
        value_name = "SECS",
        default_value_t = 1.0,
        allow_negative_numbers = true
    )]
    pub row_secs: f64,
    /// Length of the idle baseline measured once before the runs (0: skip;
    /// else 0.1 to 600).
    #[arg(
        long = "idle-secs",
        value_name = "SECS",
        default_value_t = 2.0,
        allow_negative_numbers = true
    )]
    pub idle_secs: f64,
    /// Server models to run at every X, comma-separated, each once: one,
    /// multi, pool (the tables' Mode column) [default: one,multi,pool;
    /// one with --server].
    #[arg(
        long = "modes",
        value_name = "LIST",
        value_delimiter = ',',
        default_value = "one,multi,pool",
        default_value_if("server", clap::builder::ArgPredicate::IsPresent, "one"),
        hide_default_value = true
    )]
    pub modes: Vec<Mode>,
    /// Placements to run, in order: pinned (--client-cpus/--server-cpus,
    /// else one client/server pair per CPU), unpinned [default: pinned
    /// when --client-cpus or --server-cpus is given, else unpinned].
    #[arg(long = "placement", value_name = "LIST", value_delimiter = ',')]
    pub placements: Vec<Placement>,
    /// Pin client thread k to the k-th CPU of LIST (pinned rows).
    #[arg(
        long = "client-cpus",
        value_name = "LIST",
        value_parser = placement::parse_cpus_arg
    )]
    pub client_cpus: Option<CpuList>,
    /// Pin server instance (or pool thread) k to the k-th CPU of LIST
    /// (pinned rows).
    #[arg(
        long = "server-cpus",
        value_name = "LIST",
        value_parser = placement::parse_cpus_arg
    )]
    pub server_cpus: Option<CpuList>,
    /// Namespace under which a private run directory is made.
    #[arg(long = "ns", value_name = "DIR")]
    pub ns: Option<PathBuf>,
    /// Hybrid waiting: spin budget in microseconds.
    #[arg(long = "spin-us", value_name = "US", default_value_t = 20)]
    pub spin_us: u64,
    /// Time whole runs only (no per-request timestamps).
    #[arg(long = "no-timestamps")]
    pub no_timestamps: bool,
    /// Also run every row with the copying API (Connection::call /
    /// Request::reply with buffers of our own), each right after its
    /// in-place twin, side by side in the tables [default: in place only].
    #[arg(long = "copy")]
    pub copy: bool,
    /// --server, --token-file: measure against `msgbench serve adder` on
    /// another host.
    #[command(flatten)]
    pub remote: RemoteArgs,
    /// Scheduling controls: --fifo, --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: SchedArgs,
    /// --format, --json.
    #[command(flatten)]
    pub output: OutputArgs,
}

impl Default for AdderArgs {
    fn default() -> AdderArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: AdderArgs,
        }
        Wrap::parse_from(["msgbench"]).a
    }
}

/// The checked settings (the envelope's `settings`).
#[derive(Debug, Clone, Serialize)]
pub struct AdderPlan {
    /// The thread counts X, in order.
    pub threads: Vec<u32>,
    /// The transports, in order.
    pub transports: Vec<String>,
    /// The modes, in order.
    pub modes: Vec<Mode>,
    /// The placements, in order.
    pub placements: Vec<Placement>,
    /// The APIs each row runs with, in order: `["in-place"]`, or with
    /// `--copy` `["in-place", "copy"]` (each copying row right after its
    /// in-place twin).
    pub apis: Vec<Api>,
    /// `-S`: round trips per thread, or `None` to size rows by time.
    pub samples: Option<u64>,
    /// Target length of a row, s.
    pub row_secs: f64,
    /// Length of the idle baseline, s (0: none).
    pub idle_secs: f64,
    /// Spin budget of hybrid waits, µs.
    pub spin_us: u64,
    /// Per-request timestamps taken (latency percentiles).
    pub timestamps: bool,
    /// CPUs of client thread k in pinned rows (k-th entry, cycling);
    /// empty when no row is pinned.
    pub client_cpus: Vec<usize>,
    /// CPUs of server instance (or pool thread) k in pinned rows (k-th
    /// entry, cycling).
    pub server_cpus: Vec<usize>,
    /// `--ns`, as given.
    pub ns: Option<PathBuf>,
    /// `--server`: the remote `msgbench serve adder` every row measures
    /// against (absent: the suite starts its own servers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<RemoteServer>,
}

/// One row to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Spec<'a> {
    pub placement: Placement,
    pub transport: &'a str,
    pub mode: Mode,
    pub threads: u32,
    pub api: Api,
}

impl Spec<'_> {
    /// "uds, pinned, One process, 2 threads", with ", copy API" for a
    /// copying row.
    pub fn label(&self) -> String {
        format!(
            "{}, {}, {}, {} thread{}{}",
            self.transport,
            self.placement.key(),
            self.mode.label(),
            self.threads,
            if self.threads == 1 { "" } else { "s" },
            if self.api == Api::Copy {
                ", copy API"
            } else {
                ""
            }
        )
    }
}

impl AdderPlan {
    /// Every row, in run order: placement, transport, mode, X, API (so
    /// a copying row runs right after its in-place twin, under the same
    /// conditions).
    pub(super) fn specs(&self) -> Vec<Spec<'_>> {
        let mut out = Vec::new();
        for &placement in &self.placements {
            for transport in &self.transports {
                for &mode in &self.modes {
                    for &threads in &self.threads {
                        for &api in &self.apis {
                            out.push(Spec {
                                placement,
                                transport,
                                mode,
                                threads,
                                api,
                            });
                        }
                    }
                }
            }
        }
        out
    }

    /// How many rows the plan runs.
    pub fn row_count(&self) -> usize {
        self.placements.len()
            * self.transports.len()
            * self.modes.len()
            * self.threads.len()
            * self.apis.len()
    }

    /// About how long one row takes: the row, its probes, the servers'
    /// start.
    pub fn row_estimate(&self) -> Duration {
        Duration::from_secs_f64(self.row_secs * 1.2 + 0.1)
    }

    /// Client and server CPU lists for rows in `placement`.
    pub(super) fn cpus(&self, placement: Placement) -> (CpuList, CpuList) {
        match placement {
            Placement::Pinned => (
                CpuList(self.client_cpus.clone()),
                CpuList(self.server_cpus.clone()),
            ),
            Placement::Unpinned => (CpuList::default(), CpuList::default()),
        }
    }
}

/// Checks the command line.
pub(super) fn plan(args: &AdderArgs) -> Result<AdderPlan> {
    check_transports(args)?;
    if let Some(s) = args.samples {
        check_samples(s)?;
    }
    check_secs(args)?;
    crate::cli::check_spin_us(args.spin_us)?;
    let modes = modes(&args.modes)?;
    let (placements, client_cpus, server_cpus) = placements(args)?;
    let server = match args.remote.server {
        Some(_) => {
            check_remote(args, &modes)?;
            RemoteServer::reach(&args.remote, "adder")?
        }
        None => None,
    };
    Ok(AdderPlan {
        threads: match &server {
            Some(s) => remote_threads(args.threads.as_deref(), s)?,
            None => threads(args.threads.as_deref(), &modes)?,
        },
        transports: args.transports.clone(),
        modes,
        placements,
        apis: if args.copy {
            vec![Api::InPlace, Api::Copy]
        } else {
            vec![Api::InPlace]
        },
        samples: args.samples,
        row_secs: args.row_secs,
        idle_secs: args.idle_secs,
        spin_us: args.spin_us,
        timestamps: !args.no_timestamps,
        client_cpus,
        server_cpus: if server.is_some() {
            Vec::new()
        } else {
            server_cpus
        },
        ns: args.ns.clone(),
        server,
    })
}

/// With `--server`: what a remote server can be measured with. Its one
/// process of N instances is "One process" over tcp; it pins its own
/// threads and answers in place.
fn check_remote(args: &AdderArgs, modes: &[Mode]) -> Result<()> {
    if let Some(t) = args.transports.iter().find(|t| *t != "tcp") {
        bail!("--server: the remote server is reached over tcp; -t {t} cannot cross hosts");
    }
    if let Some(m) = modes.iter().find(|m| **m != Mode::One) {
        bail!(
            "--server: --modes {}: the remote server is one process of N instances \
             (msgbench serve adder -n N), so only --modes one",
            m.key()
        );
    }
    if args.server_cpus.is_some() {
        bail!(
            "--server-cpus: the remote server pins its own threads \
             (msgbench serve adder --cpus LIST)"
        );
    }
    if args.copy {
        bail!("--copy: the remote server answers in place only");
    }
    Ok(())
}

/// With `--server`: `--threads`, or 1 to the server's instances; never
/// more threads than it has instances.
fn remote_threads(given: Option<&[u32]>, server: &RemoteServer) -> Result<Vec<u32>> {
    let n = server.instances.unwrap_or(0);
    let threads: Vec<u32> = match given {
        Some(l) => l.to_vec(),
        None => (1..=n).collect(),
    };
    if let Some(x) = threads.iter().find(|x| **x > n || **x == 0) {
        bail!(
            "--threads {x}: the server at {} serves {n} instance{} (msgbench serve adder -n N): \
             at most {n} threads",
            server.address,
            if n == 1 { "" } else { "s" }
        );
    }
    Ok(threads)
}

/// `--modes`: at least one, each once.
fn modes(given: &[Mode]) -> Result<Vec<Mode>> {
    if given.is_empty() {
        bail!("--modes: give at least one of one, multi, pool");
    }
    for (i, m) in given.iter().enumerate() {
        if given[..i].contains(m) {
            bail!("--modes: {} is given twice; name each mode once", m.key());
        }
    }
    Ok(given.to_vec())
}

/// The largest pool `dev-adder --pool` serves from.
const MAX_POOL: u32 = msgpass::pool::MAX_THREADS as u32;

/// Why a `--threads` list was refused (clap prints it after
/// `--threads LIST: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ThreadsError {
    /// Not a list of numbers and ranges up to [`MAX_INSTANCES`].
    #[error(transparent)]
    List(#[from] placement::RangeError),
    /// A count of 0.
    #[error("thread counts must be between 1 and {MAX_INSTANCES}")]
    Zero,
}

/// Value parser of `--threads`: counts from 1 to [`MAX_INSTANCES`],
/// ranges allowed, in the order given.
fn parse_threads(list: &str) -> Result<Vec<u32>, ThreadsError> {
    let threads = placement::parse_ranges(list, MAX_INSTANCES as usize)?;
    if threads.contains(&0) {
        return Err(ThreadsError::Zero);
    }
    Ok(threads.into_iter().map(|x| x as u32).collect())
}

/// `--threads`, by default 1 to CPUs+2 within [`MAX_INSTANCES`], and
/// within [`MAX_POOL`] when `modes` has a pool.
fn threads(given: Option<&[u32]>, modes: &[Mode]) -> Result<Vec<u32>> {
    let pool = modes.contains(&Mode::Pool);
    let threads: Vec<u32> = match given {
        Some(l) => l.to_vec(),
        None => {
            let max = if pool { MAX_POOL } else { MAX_INSTANCES };
            (1..=(placement::cpu_count() as u32 + 2).min(max)).collect()
        }
    };
    // Again for options built in code (the tour's), which clap has not seen.
    if let Some(x) = threads.iter().find(|x| !(1..=MAX_INSTANCES).contains(*x)) {
        bail!("--threads {x}: thread counts must be between 1 and {MAX_INSTANCES}");
    }
    if pool {
        check_pool_threads(&threads)?;
    }
    Ok(threads)
}

/// Pool mode: every X within the largest pool.
fn check_pool_threads(threads: &[u32]) -> Result<()> {
    if let Some(x) = threads.iter().find(|x| **x > MAX_POOL) {
        bail!(
            "--threads {x}: a pool has 1 to {MAX_POOL} threads; keep X at {MAX_POOL} or below, \
             or leave pool out of --modes"
        );
    }
    Ok(())
}

/// `--transport`: known names; none that spins under `--fifo`.
fn check_transports(args: &AdderArgs) -> Result<()> {
    if args.transports.is_empty() {
        bail!("--transport: give at least one transport");
    }
    if args.sched.parse().fifo_priority.is_some() {
        if let Some(t) = args.transports.iter().find(|t| spins(t)) {
            bail!(
                "--fifo: transport {t} spins, and a spinning real-time thread never yields \
                 its CPU; choose a blocking or hybrid transport"
            );
        }
    }
    Ok(())
}

/// True for a transport whose waits spin without bound.
fn spins(transport: &str) -> bool {
    msgpass::transport::info(transport).is_ok_and(|t| t.wait == msgpass::transport::Wait::Spin)
}

/// `--row-secs` and `--idle-secs`.
fn check_secs(args: &AdderArgs) -> Result<()> {
    if !(args.row_secs.is_finite() && args.row_secs > 0.0 && args.row_secs <= 3600.0) {
        bail!(
            "--row-secs {}: must be more than 0 and at most 3600 seconds",
            crate::cli::show_num(args.row_secs)
        );
    }
    if !(args.idle_secs == 0.0 || (0.1..=600.0).contains(&args.idle_secs)) {
        bail!(
            "--idle-secs {}: must be 0 (no baseline) or from 0.1 to 600 seconds \
             (a shorter baseline is below /proc/stat's resolution)",
            crate::cli::show_num(args.idle_secs)
        );
    }
    Ok(())
}

/// `--placement`, `--client-cpus`, `--server-cpus`: the placements and
/// the pinned rows' client and server CPUs (one pair per online CPU when
/// neither list is given).
fn placements(args: &AdderArgs) -> Result<(Vec<Placement>, Vec<usize>, Vec<usize>)> {
    let client = args.client_cpus.clone();
    let server = args.server_cpus.clone();
    let given = client.is_some() || server.is_some();
    let placements = match (&args.placements[..], given) {
        ([], true) => vec![Placement::Pinned],
        ([], false) => vec![Placement::Unpinned],
        (p, _) => p.to_vec(),
    };
    if given && !placements.contains(&Placement::Pinned) {
        bail!("--placement: --client-cpus and --server-cpus place pinned rows only; add pinned");
    }
    let pinned = placements.contains(&Placement::Pinned);
    let list = |l: Option<CpuList>| match (l, given) {
        (Some(l), _) => l.0,
        (None, false) if pinned => placement::online_cpus(),
        (None, _) => Vec::new(),
    };
    Ok((placements, list(client), list(server)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> AdderArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: AdderArgs,
        }
        let mut a = vec!["msgbench"];
        a.extend_from_slice(extra);
        Wrap::parse_from(a).a
    }

    #[test]
    fn placement_follows_the_cpu_lists_unless_given() {
        let p = plan(&args(&[])).expect("plan");
        assert_eq!(p.placements, [Placement::Unpinned]);
        assert!(p.client_cpus.is_empty() && p.server_cpus.is_empty());
        let p = plan(&args(&["--client-cpus", "0"])).expect("plan");
        assert_eq!(p.placements, [Placement::Pinned]);
        assert_eq!((p.client_cpus, p.server_cpus), (vec![0], vec![]));
        let p = plan(&args(&["--placement", "pinned,unpinned"])).expect("plan");
        assert_eq!(p.placements, [Placement::Pinned, Placement::Unpinned]);
        assert_eq!(p.client_cpus, placement::online_cpus(), "one pair per CPU");
        assert_eq!(p.server_cpus, p.client_cpus);
        let e = plan(&args(&["--placement", "unpinned", "--server-cpus", "0"]))
            .expect_err("refused")
            .to_string();
        assert!(e.starts_with("--placement"), "{e}");
    }

    #[test]
    fn rows_run_placement_first_then_transport_mode_threads() {
        let p = plan(&args(&[
            "--placement",
            "pinned,unpinned",
            "-t",
            "shm,uds",
            "--threads",
            "1,2",
        ]))
        .expect("plan");
        let s = p.specs();
        assert_eq!(s.len(), p.row_count());
        assert_eq!(s.len(), 24, "three modes by default");
        assert_eq!(s[0].label(), "shm, pinned, One process, 1 thread");
        assert_eq!(s[3].label(), "shm, pinned, Multi-process, 2 threads");
        assert_eq!(
            s[5].label(),
            "shm, pinned, Thread pool (one path), 2 threads"
        );
        assert_eq!(s[6].transport, "uds");
        assert_eq!(s[12].placement, Placement::Unpinned);
        assert!(s.iter().all(|s| s.api == Api::InPlace));
    }

    #[test]
    fn copy_runs_each_row_twice_in_place_first() {
        let p = plan(&args(&["-t", "shm,uds", "--threads", "1,2", "--copy"])).expect("plan");
        assert_eq!(p.apis, [Api::InPlace, Api::Copy]);
        let s = p.specs();
        assert_eq!(s.len(), p.row_count());
        assert_eq!(s.len(), 24);
        assert_eq!(s[0].label(), "shm, unpinned, One process, 1 thread");
        assert_eq!(
            s[1].label(),
            "shm, unpinned, One process, 1 thread, copy API"
        );
        for pair in s.chunks(2) {
            assert_eq!((pair[0].api, pair[1].api), (Api::InPlace, Api::Copy));
            assert_eq!(
                (pair[0].transport, pair[0].mode, pair[0].threads),
                (pair[1].transport, pair[1].mode, pair[1].threads)
            );
        }
    }

    #[test]
    fn modes_are_named_once_each() {
        let p = plan(&args(&[])).expect("plan");
        assert_eq!(p.modes, [Mode::One, Mode::Multi, Mode::Pool], "all three");
        let p = plan(&args(&["--modes", "pool,one"])).expect("plan");
        assert_eq!(p.modes, [Mode::Pool, Mode::One], "in the order given");
        let e = plan(&args(&["--modes", "one,pool,one"]))
            .expect_err("refused")
            .to_string();
        assert!(e.starts_with("--modes: one is given twice"), "{e}");
        let e = plan(&AdderArgs {
            modes: Vec::new(),
            ..AdderArgs::default()
        })
        .expect_err("refused")
        .to_string();
        assert!(e.starts_with("--modes: give at least one"), "{e}");
    }

    #[test]
    fn the_parser_refuses_bad_threads_transports_and_cpus_naming_them() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: AdderArgs,
        }
        let refused = |a: &[&str]| {
            let e = Wrap::try_parse_from(std::iter::once("adder").chain(a.iter().copied()))
                .err()
                .unwrap_or_else(|| panic!("{a:?} accepted"));
            crate::cli::one_line(&e)
        };
        for (a, want) in [
            (
                &["--threads", "0"][..],
                "--threads 0: thread counts must be between 1 and 128",
            ),
            (
                &["--threads", "2,0"],
                "--threads 2,0: thread counts must be between 1 and 128",
            ),
            (
                &["--threads", "1-129"],
                "--threads 1-129: 129 is above the maximum, 128",
            ),
            (&["--threads", "x"], "--threads x: \"x\" is not a number"),
            (
                &["-t", "uds,nope"],
                "--transport nope: unknown transport \"nope\"",
            ),
            (
                &["--client-cpus", "4294967295"],
                "--client-cpus 4294967295: invalid CPU list",
            ),
            (&["--server-cpus", "x"], "--server-cpus x: invalid CPU list"),
        ] {
            let e = refused(a);
            assert!(e.starts_with(want), "{a:?}: {e}");
        }
        assert_eq!(
            args(&["--threads", "3,1-2"]).threads.as_deref(),
            Some(&[3, 1, 2][..])
        );
    }

    #[test]
    fn a_pool_has_at_most_64_threads() {
        let p = plan(&args(&["--modes", "pool", "--threads", "1,64"])).expect("plan");
        assert_eq!(p.threads, [1, 64]);
        for modes in ["pool", "one,multi,pool"] {
            let e = plan(&args(&["--modes", modes, "--threads", "2,65"]))
                .expect_err("refused")
                .to_string();
            assert!(
                e.starts_with("--threads 65: a pool has 1 to 64 threads"),
                "{e}"
            );
        }
        let p = plan(&args(&["--modes", "one,multi", "--threads", "65"])).expect("plan");
        assert_eq!(p.threads, [65], "no pool, no pool bound");
        let p = plan(&args(&[])).expect("plan");
        assert!(p.threads.iter().all(|x| *x <= MAX_POOL), "{:?}", p.threads);
    }
}
