//! The command line of `msgbench smp` and its checked form, the plan:
//! every bad option fails here in one line naming it, before anything is
//! built or measured (a value its clap value parser refuses with exit
//! status 2, what two options decide together with 1).

use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use serde::Serialize;

use super::packet::{MAX_FRAME, MIN_FRAME, RFC2544_SIZES};
use super::ports::parse_line_rate;
use super::synth::{Flows, DEFAULT_ROUTES};
use super::tables::Variant;
use crate::measure::placement::{format_list, online_cpus, CpuSet, RangeError};
use crate::measure::sched::SchedArgs;
use crate::suites::args::{Cpus, CpusSpec, Repeats, RepeatsSpec};
use crate::suites::parse::{self, ValueError};
use crate::suites::OutputArgs;

/// Frame sizes of a default run: the smallest, where the CPU and the
/// lock are the limit, and the largest, where the wire is.
pub const SIZES: [usize; 2] = [64, 1518];
/// Routes of a `--quick` run.
pub const QUICK_ROUTES: usize = 100_000;
/// Most routes `--routes` takes (the synthetic generator draws distinct
/// prefixes from unicast space; beyond this it would take long to find
/// them, and the Internet's table is about 1 M).
pub const MAX_ROUTES: usize = 4_000_000;
/// Route changes per second of a default run.
pub const UPDATES: f64 = 300.0;
/// Most changes per second `--updates` takes.
pub const MAX_UPDATES: f64 = 100_000.0;
/// Trial length of a default run and of a `--quick` one.
pub const TRIAL: Duration = Duration::from_secs(1);
/// Trial length of a `--quick` run.
pub const QUICK_TRIAL: Duration = Duration::from_millis(100);
/// Longest `--trial` (RFC 2544 asks for 60 s).
pub const MAX_TRIAL_SECS: f64 = 300.0;
/// Search resolution (fraction of the rate) of a default and a quick run.
pub const RESOLUTION: f64 = 0.02;
/// Search resolution of a `--quick` run.
pub const QUICK_RESOLUTION: f64 = 0.05;
/// Ring per port, frames: the largest ring of common 10G NICs (Intel
/// 82599/X710 take 4096 descriptors).
pub const RING: usize = 4096;
/// Largest `--ring`.
pub const MAX_RING: usize = 1 << 20;

/// How packets reach the forwarder (`--ports`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum PortsMode {
    /// Simulated NIC rings in memory: no privileges, no generator thread.
    Memory,
    /// Real frames over veth pairs between network namespaces (root).
    Veth,
}

impl PortsMode {
    /// The `--ports` name.
    pub fn name(self) -> &'static str {
        match self {
            PortsMode::Memory => "memory",
            PortsMode::Veth => "veth",
        }
    }
}

/// Options of `msgbench smp`.
#[derive(Debug, Clone, Args)]
pub struct SmpArgs {
    /// A short run (under 30 s): 100,000 routes, 100 ms trials, 5% search
    /// resolution.
    #[arg(long = "quick")]
    pub quick: bool,
    /// The packet path: memory (simulated NIC rings, no privileges) or
    /// veth (real frames between network namespaces of our own; root).
    #[arg(long = "ports", value_enum, default_value_t = PortsMode::Memory)]
    pub ports: PortsMode,
    /// How the workers share the forwarding table: a list of mutex,
    /// rwlock, rcu, per-cpu, or all [default: all].
    #[arg(long = "table", value_name = "LIST", value_parser = parse_tables)]
    pub table: Option<std::vec::Vec<Variant>>,
    /// Worker counts to sweep, e.g. 1,2 or 1-4 [default: 1 to the number
    /// of --cpus].
    #[arg(
        long = "workers",
        value_name = "LIST",
        allow_hyphen_values = true,
        value_parser = parse_workers
    )]
    pub workers: Option<std::vec::Vec<usize>>,
    /// Frame sizes in bytes (FCS included, 64 to 1518), or all for the
    /// seven RFC 2544 sizes [default: 64,1518].
    #[arg(long = "sizes", value_name = "LIST", value_parser = parse_sizes)]
    pub sizes: Option<std::vec::Vec<usize>>,
    /// Prefixes in the synthetic forwarding table (with today's Internet
    /// prefix-length mix) [default: 1000000; --quick: 100000].
    #[arg(
        long = "routes",
        value_name = "N",
        allow_hyphen_values = true,
        value_parser = parse_routes
    )]
    pub routes: Option<usize>,
    /// Destinations of the traffic: zipf (skewed like real traffic,
    /// exponent 1), zipf:S (exponent S), or uniform (over the routed
    /// address space).
    #[arg(
        long = "flows",
        value_name = "KIND",
        default_value = "zipf",
        value_parser = parse_flows
    )]
    pub flows: Flows,
    /// Route changes per second applied by the route-update thread while
    /// every trial runs (0: none).
    #[arg(
        long = "updates",
        value_name = "R",
        default_value = "300",
        allow_hyphen_values = true,
        value_parser = parse_updates
    )]
    pub updates: f64,
    /// Seconds per RFC 2544 trial (the RFC asks for 60) [default: 1;
    /// --quick: 0.1].
    #[arg(
        long = "trial",
        value_name = "SECS",
        allow_hyphen_values = true,
        value_parser = parse_trial
    )]
    pub trial: Option<f64>,
    /// Resolution of the throughput search, percent of the rate
    /// [default: 2; --quick: 5].
    #[arg(
        long = "resolution",
        value_name = "PCT",
        allow_hyphen_values = true,
        value_parser = parse_resolution
    )]
    pub resolution: Option<f64>,
    /// Frames a trial may lose and still pass, percent of those offered:
    /// 0 is RFC 2544's zero loss (the no-drop rate); e.g. 0.5 gives FD.io
    /// CSIT's partial drop rate, which a VM's rare multi-millisecond
    /// stalls do not decide.
    #[arg(
        long = "loss-tolerance",
        value_name = "PCT",
        default_value = "0",
        allow_hyphen_values = true,
        value_parser = parse_loss_tolerance
    )]
    pub loss_tolerance: f64,
    /// Emulated port speed in bits/s (100m, 1g, 10g) capping every port,
    /// or none (the default on both paths: a veth pair has no speed of its
    /// own, the CPUs are its limit). The study's ports were 1 Gbit/s
    /// (--line-rate 1g).
    #[arg(
        long = "line-rate",
        value_name = "RATE",
        default_value = "none",
        allow_hyphen_values = true,
        value_parser = parse_line_rate
    )]
    // Spelt out so that clap takes `none` as a value (unlimited), not as
    // the option being absent.
    pub line_rate: std::option::Option<u64>,
    /// Receive and transmit ring per port in frames (memory mode); a
    /// packet that finds one full is lost.
    #[arg(
        long = "ring",
        value_name = "FRAMES",
        default_value = "4096",
        allow_hyphen_values = true,
        value_parser = parse_ring
    )]
    pub ring: usize,
    /// --cpus: the workers' CPUs.
    #[command(flatten)]
    pub cpus: Cpus<SmpSpec>,
    /// -r/--repeats: runs of the whole sweep.
    #[command(flatten)]
    pub repeats: Repeats<SmpSpec>,
    /// Scheduling controls: --fifo (rows whose spinning workers would take
    /// every CPU are then skipped), --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: SchedArgs,
    /// --format, --json.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// What smp's shared options mean: `--cpus` (a set) and `-r/--repeats`.
#[derive(Debug, Clone)]
pub struct SmpSpec;

impl CpusSpec for SmpSpec {
    type Cpus = CpuSet;
    const HELP: &'static str =
        "CPUs the workers are pinned to, worker k on the k-th [default: every online CPU]";
    fn parse(list: &str) -> Result<CpuSet, ValueError> {
        parse::cpu_set(list)
    }
}

impl RepeatsSpec for SmpSpec {
    const HELP: &'static str = "Runs of the whole sweep, interleaved; each figure is the median";
    const DEFAULT: Option<&'static str> = Some("1");
    const MAX: usize = 100;
}

/// The checked settings of `msgbench smp`.
#[derive(Debug, Clone, Serialize)]
pub struct SmpPlan {
    /// `--quick`.
    pub quick: bool,
    /// The packet path.
    pub ports: PortsMode,
    /// Table variants, in the order given.
    pub variants: Vec<Variant>,
    /// Worker counts, ascending.
    pub workers: Vec<usize>,
    /// Frame sizes, ascending.
    pub sizes: Vec<usize>,
    /// Prefixes in the table.
    pub routes: usize,
    /// Traffic destinations.
    #[serde(serialize_with = "flows_name")]
    pub flows: Flows,
    /// Route changes per second.
    pub updates: f64,
    /// Seconds per trial.
    pub trial_secs: f64,
    /// Search resolution, fraction of the rate.
    pub resolution: f64,
    /// Loss a trial may have and pass, fraction of the frames offered.
    pub loss_tolerance: f64,
    /// Port speed, bits/s (`None`: unlimited).
    pub line_rate_bps: Option<u64>,
    /// Receive and transmit ring per port, frames.
    pub ring: usize,
    /// CPUs the workers are pinned to, in order.
    pub cpus: Vec<usize>,
    /// Runs of the sweep.
    pub repeats: usize,
    /// SCHED_FIFO priority of the run, if any.
    pub fifo: Option<u8>,
}

fn flows_name<S: serde::Serializer>(f: &Flows, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&describe_flows(*f))
}

/// `zipf:1`, `uniform`.
pub fn describe_flows(f: Flows) -> String {
    match f {
        Flows::Uniform => "uniform".into(),
        Flows::Zipf(s) => format!("zipf:{s}"),
    }
}

impl SmpPlan {
    /// One trial's length.
    pub fn trial(&self) -> Duration {
        Duration::from_secs_f64(self.trial_secs)
    }

    /// Ports of the memory path: two, as in the study (each worker drains
    /// one and forwards to either), or one per worker when there are more.
    pub fn memory_ports(&self) -> usize {
        self.workers.iter().copied().max().unwrap_or(1).max(2)
    }

    /// Why a cell is not run, if it is not: with --fifo, spinning workers
    /// on every CPU would starve the machine (the route-update thread
    /// included).
    pub fn skip_reason(&self, workers: usize) -> Option<String> {
        let spinning = self.ports == PortsMode::Memory;
        (self.fifo.is_some() && spinning && workers >= online_cpus().len()).then(|| {
            format!(
                "--fifo: {workers} spinning real-time workers would take every CPU (the route updates too)"
            )
        })
    }

    /// One line: what is swept.
    pub fn describe(&self) -> String {
        let variants: Vec<&str> = self.variants.iter().map(|v| v.name()).collect();
        format!(
            "ports {}, tables {}, workers {}, sizes {} B, {} routes, flows {}, {} updates/s, trial {} s, resolution {}%, loss tolerance {}%, line rate {}, workers on CPUs {}",
            self.ports.name(),
            variants.join(","),
            format_list(&self.workers),
            list(&self.sizes),
            self.routes,
            describe_flows(self.flows),
            self.updates,
            self.trial_secs,
            self.resolution * 100.0,
            self.loss_tolerance * 100.0,
            self.line_rate_bps
                .map_or("none".into(), |b| format!("{} Mbit/s", b as f64 / 1e6)),
            format_list(&self.cpus),
        )
    }
}

fn list(v: &[usize]) -> String {
    v.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
}

/// Checks the options, every one, before anything runs.
pub fn plan(args: &SmpArgs) -> Result<SmpPlan> {
    let controls = args.sched.parse();
    let cpus = CpuSet::or_online(args.cpus.given());
    let workers = workers(args.workers.as_deref(), cpus.len())?;
    let q = args.quick;
    Ok(SmpPlan {
        quick: q,
        ports: args.ports,
        variants: args.table.clone().unwrap_or_else(|| Variant::ALL.to_vec()),
        workers,
        sizes: args.sizes.clone().unwrap_or_else(|| SIZES.to_vec()),
        routes: args
            .routes
            .unwrap_or(if q { QUICK_ROUTES } else { DEFAULT_ROUTES }),
        flows: args.flows,
        updates: args.updates,
        trial_secs: args
            .trial
            .unwrap_or(if q { QUICK_TRIAL } else { TRIAL }.as_secs_f64()),
        resolution: args
            .resolution
            .unwrap_or(if q { QUICK_RESOLUTION } else { RESOLUTION }),
        loss_tolerance: args.loss_tolerance,
        line_rate_bps: args.line_rate,
        ring: args.ring,
        cpus,
        repeats: args.repeats.or(1),
        fifo: controls.fifo_priority,
    })
}

/// Why a value of an smp option was refused (clap prints it after
/// `--option value: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadValue {
    /// A `--table` entry that names no variant.
    #[error("unknown table `{0}` (mutex, rwlock, rcu, per-cpu, all)")]
    Table(String),
    /// `--workers`: not a list of numbers and ranges.
    #[error(transparent)]
    Workers(#[from] RangeError),
    /// A `--sizes` entry that is not a frame size.
    #[error("`{0}` is not a frame size in bytes from {MIN_FRAME} to {MAX_FRAME} (or all)")]
    Size(String),
    /// `--routes` out of range.
    #[error("must be a whole number of prefixes, 1 to {MAX_ROUTES}")]
    Routes,
    /// `--flows`: not uniform, zipf or zipf:S.
    #[error("expected uniform, zipf or zipf:S with S from 0.1 to 5")]
    Flows,
    /// `--updates` out of range.
    #[error("must be route changes per second, 0 to {MAX_UPDATES}")]
    Updates,
    /// `--trial` out of range.
    #[error("must be a number of seconds, 0.01 to {MAX_TRIAL_SECS}")]
    Trial,
    /// `--resolution` out of range.
    #[error("must be a percentage of the rate, 0.1 to 50")]
    Resolution,
    /// `--loss-tolerance` out of range.
    #[error("must be a percentage of the frames offered, 0 to 10")]
    LossTolerance,
    /// `--ring` out of range.
    #[error("must be a whole number of frames, 1 to {MAX_RING}")]
    Ring,
}

/// Value parser of `--table`: variants in the order given, each once
/// (`all`: every one).
fn parse_tables(list: &str) -> Result<Vec<Variant>, BadValue> {
    if list.trim() == "all" {
        return Ok(Variant::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim) {
        let v = Variant::parse(name).ok_or_else(|| BadValue::Table(name.to_string()))?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// Value parser of `--workers`: counts and ranges, as given (the plan
/// checks them against the CPUs).
fn parse_workers(list: &str) -> Result<Vec<usize>, BadValue> {
    Ok(crate::measure::placement::parse_ranges(list, usize::MAX)?)
}

/// `--workers`: counts from 1 to the number of CPUs given, ascending.
fn workers(given: Option<&[usize]>, cpus: usize) -> Result<Vec<usize>> {
    let Some(given) = given else {
        return Ok((1..=cpus).collect());
    };
    let list = format_list(given);
    if let Some(&n) = given.iter().find(|&&n| n == 0 || n > cpus) {
        bail!("--workers {list}: {n} workers, but each needs a CPU of its own and there are {cpus} (see --cpus)");
    }
    let mut out = given.to_vec();
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        bail!("--workers {list}: no worker count given");
    }
    Ok(out)
}

/// Value parser of `--sizes`: frame sizes, ascending, each once (`all`:
/// RFC 2544's seven).
fn parse_sizes(list: &str) -> Result<Vec<usize>, BadValue> {
    if list.trim() == "all" {
        return Ok(RFC2544_SIZES.to_vec());
    }
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim) {
        match s.parse::<usize>() {
            Ok(n) if (MIN_FRAME..=MAX_FRAME).contains(&n) => out.push(n),
            _ => return Err(BadValue::Size(s.to_string())),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Value parser of `--routes` (`_` separators allowed).
fn parse_routes(s: &str) -> Result<usize, BadValue> {
    match s.trim().replace('_', "").parse::<usize>() {
        Ok(n) if (1..=MAX_ROUTES).contains(&n) => Ok(n),
        _ => Err(BadValue::Routes),
    }
}

/// Value parser of `--flows`.
fn parse_flows(s: &str) -> Result<Flows, BadValue> {
    match s.trim() {
        "uniform" => Ok(Flows::Uniform),
        "zipf" => Ok(Flows::Zipf(1.0)),
        t => {
            let exp = t.strip_prefix("zipf:").ok_or(BadValue::Flows)?;
            match exp.parse::<f64>() {
                Ok(e) if (0.1..=5.0).contains(&e) => Ok(Flows::Zipf(e)),
                _ => Err(BadValue::Flows),
            }
        }
    }
}

/// Value parser of `--updates`.
fn parse_updates(s: &str) -> Result<f64, BadValue> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && (0.0..=MAX_UPDATES).contains(&r) => Ok(r),
        _ => Err(BadValue::Updates),
    }
}

/// Value parser of `--trial`.
fn parse_trial(s: &str) -> Result<f64, BadValue> {
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.01..=MAX_TRIAL_SECS).contains(&v) => Ok(v),
        _ => Err(BadValue::Trial),
    }
}

/// Value parser of `--resolution`: percent (a trailing `%` allowed),
/// as a fraction.
fn parse_resolution(s: &str) -> Result<f64, BadValue> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && (0.1..=50.0).contains(&v) => Ok(v / 100.0),
        _ => Err(BadValue::Resolution),
    }
}

/// Value parser of `--loss-tolerance`: percent (a trailing `%` allowed),
/// as a fraction.
fn parse_loss_tolerance(s: &str) -> Result<f64, BadValue> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=10.0).contains(&v) => Ok(v / 100.0),
        _ => Err(BadValue::LossTolerance),
    }
}

/// Value parser of `--ring`.
fn parse_ring(s: &str) -> Result<usize, BadValue> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_RING).contains(&n) => Ok(n),
        _ => Err(BadValue::Ring),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        smp: SmpArgs,
    }

    fn args(extra: &[&str]) -> SmpArgs {
        let mut v = vec!["smp"];
        v.extend_from_slice(extra);
        Cli::try_parse_from(v).expect("parses").smp
    }

    #[test]
    fn defaults_sweep_every_table_and_worker_count_at_two_sizes() {
        let p = plan(&args(&[])).unwrap();
        assert_eq!(p.variants, Variant::ALL.to_vec());
        assert_eq!(p.workers, (1..=online_cpus().len()).collect::<Vec<_>>());
        assert_eq!(p.sizes, SIZES.to_vec());
        assert_eq!(p.routes, DEFAULT_ROUTES);
        assert_eq!(p.trial(), TRIAL);
        assert_eq!(p.line_rate_bps, None);
        assert_eq!(p.ring, RING);
        let q = plan(&args(&["--quick"])).unwrap();
        assert_eq!((q.routes, q.trial()), (QUICK_ROUTES, QUICK_TRIAL));
    }

    #[test]
    fn lists_parse_and_sort() {
        let p = plan(&args(&[
            "--table",
            "per-cpu,mutex,per-cpu",
            "--sizes",
            "1518,64",
            "--workers",
            "1",
            "--flows",
            "zipf:1.2",
            "--line-rate",
            "1g",
            "--trial",
            "60",
        ]))
        .unwrap();
        assert_eq!(p.variants, vec![Variant::PerCpu, Variant::Mutex]);
        assert_eq!(
            (p.sizes.clone(), p.workers.clone()),
            (vec![64, 1518], vec![1])
        );
        assert_eq!(p.flows, Flows::Zipf(1.2));
        assert_eq!(p.line_rate_bps, Some(1_000_000_000));
        assert_eq!(p.trial_secs, 60.0);
        let all = plan(&args(&["--sizes", "all"])).unwrap();
        assert_eq!(all.sizes, RFC2544_SIZES.to_vec());
        assert_eq!(super::super::run::cells(&p).len(), 4);
    }

    /// The one line `msgbench smp ARGS` fails with: clap's usage error,
    /// or the plan's.
    fn refusal(extra: &[&str]) -> String {
        match Cli::try_parse_from(std::iter::once("smp").chain(extra.iter().copied())) {
            Err(e) => crate::cli::one_line(&e),
            Ok(cli) => plan(&cli.smp).expect_err("refused").to_string(),
        }
    }

    #[test]
    fn bad_values_fail_in_one_line_naming_the_option() {
        let too_many = (online_cpus().len() + 1).to_string();
        let too_many_why = format!("{too_many} workers, but each needs a CPU of its own");
        for (opt, bad, why) in [
            (
                "--table",
                "spinlock",
                "unknown table `spinlock` (mutex, rwlock, rcu, per-cpu, all)",
            ),
            (
                "--sizes",
                "63",
                "`63` is not a frame size in bytes from 64 to 1518 (or all)",
            ),
            (
                "--sizes",
                "64,1519",
                "`1519` is not a frame size in bytes from 64 to 1518 (or all)",
            ),
            ("--sizes", "x", "`x` is not a frame size"),
            (
                "--routes",
                "0",
                "must be a whole number of prefixes, 1 to 4000000",
            ),
            (
                "--routes",
                "99999999999999999999999",
                "must be a whole number of prefixes",
            ),
            (
                "--flows",
                "zipf:0",
                "expected uniform, zipf or zipf:S with S from 0.1 to 5",
            ),
            ("--flows", "pareto", "expected uniform, zipf or zipf:S"),
            (
                "--updates",
                "-1",
                "must be route changes per second, 0 to 100000",
            ),
            ("--updates", "nan", "must be route changes per second"),
            ("--trial", "0", "must be a number of seconds, 0.01 to 300"),
            ("--trial", "1e9", "must be a number of seconds"),
            ("--trial", "-1", "must be a number of seconds"),
            (
                "--resolution",
                "0",
                "must be a percentage of the rate, 0.1 to 50",
            ),
            (
                "--line-rate",
                "fast",
                "line rate \"fast\": expected none or e.g. 100m, 1g, 10g",
            ),
            ("--line-rate", "foo", "line rate \"foo\": expected none"),
            (
                "--ring",
                "0",
                "must be a whole number of frames, 1 to 1048576",
            ),
            (
                "--loss-tolerance",
                "11",
                "must be a percentage of the frames offered, 0 to 10",
            ),
            ("--workers", "x", "\"x\" is not a number"),
            (
                "--workers",
                "0",
                "0 workers, but each needs a CPU of its own",
            ),
            ("--workers", too_many.as_str(), too_many_why.as_str()),
        ] {
            let e = refusal(&[opt, bad]);
            let want = format!("{opt} {bad}: {why}");
            assert!(e.starts_with(&want), "want {want:?}: {e}");
            assert!(!e.contains('\n'), "{opt} {bad}: {e}");
        }
    }

    #[test]
    fn typed_values_keep_their_syntax() {
        let a = args(&[
            "--routes",
            "2_000",
            "--updates",
            "0",
            "--resolution",
            "5%",
            "--loss-tolerance",
            "0.5",
            "--line-rate",
            "100m",
            "--ring",
            "8",
            "--flows",
            "uniform",
            "--workers",
            "1-1",
        ]);
        assert_eq!((a.routes, a.updates, a.ring), (Some(2000), 0.0, 8));
        assert_eq!((a.resolution, a.loss_tolerance), (Some(0.05), 0.005));
        assert_eq!((a.line_rate, a.flows), (Some(100_000_000), Flows::Uniform));
        assert_eq!(plan(&a).unwrap().workers, [1]);
        let d = args(&[]);
        assert_eq!(
            (d.line_rate, d.flows, d.updates),
            (None, Flows::Zipf(1.0), UPDATES)
        );
    }

    #[test]
    fn typed_options_are_refused_by_the_parser_naming_them() {
        for (opt, bad) in [("--cpus", "99999"), ("--repeats", "0"), ("-r", "x")] {
            let e = Cli::try_parse_from(["smp", opt, bad])
                .err()
                .expect("refused");
            let e = crate::cli::one_line(&e);
            let long = if opt == "-r" { "--repeats" } else { opt };
            assert!(
                e.starts_with(&format!("{long} {bad}: ")),
                "{opt} {bad}: {e}"
            );
        }
    }
}
