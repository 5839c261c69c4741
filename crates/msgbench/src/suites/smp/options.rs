//! The command line of `msgbench smp` and its checked form, the plan:
//! every bad option fails here in one line naming it, before anything is
//! built or measured.

use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use serde::Serialize;

use super::packet::{MAX_FRAME, MIN_FRAME, RFC2544_SIZES};
use super::ports::parse_line_rate;
use super::synth::{Flows, DEFAULT_ROUTES};
use super::tables::Variant;
use crate::measure::placement::{format_list, online_cpus, CpuSet};
use crate::measure::sched::SchedArgs;
use crate::suites::parse;
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
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
    #[arg(long = "table", value_name = "LIST")]
    pub table: Option<String>,
    /// Worker counts to sweep, e.g. 1,2 or 1-4 [default: 1 to the number
    /// of --cpus].
    #[arg(long = "workers", value_name = "LIST", allow_hyphen_values = true)]
    pub workers: Option<String>,
    /// Frame sizes in bytes (FCS included, 64 to 1518), or all for the
    /// seven RFC 2544 sizes [default: 64,1518].
    #[arg(long = "sizes", value_name = "LIST")]
    pub sizes: Option<String>,
    /// Prefixes in the synthetic forwarding table (with today's Internet
    /// prefix-length mix) [default: 1000000; --quick: 100000].
    #[arg(long = "routes", value_name = "N", allow_hyphen_values = true)]
    pub routes: Option<String>,
    /// Destinations of the traffic: zipf (skewed like real traffic,
    /// exponent 1), zipf:S (exponent S), or uniform (over the routed
    /// address space).
    #[arg(long = "flows", value_name = "KIND", default_value = "zipf")]
    pub flows: String,
    /// Route changes per second applied by the route-update thread while
    /// every trial runs (0: none).
    #[arg(
        long = "updates",
        value_name = "R",
        default_value = "300",
        allow_hyphen_values = true
    )]
    pub updates: String,
    /// Seconds per RFC 2544 trial (the RFC asks for 60) [default: 1;
    /// --quick: 0.1].
    #[arg(long = "trial", value_name = "SECS", allow_hyphen_values = true)]
    pub trial: Option<String>,
    /// Resolution of the throughput search, percent of the rate
    /// [default: 2; --quick: 5].
    #[arg(long = "resolution", value_name = "PCT", allow_hyphen_values = true)]
    pub resolution: Option<String>,
    /// Frames a trial may lose and still pass, percent of those offered:
    /// 0 is RFC 2544's zero loss (the no-drop rate); e.g. 0.5 gives FD.io
    /// CSIT's partial drop rate, which a VM's rare multi-millisecond
    /// stalls do not decide.
    #[arg(
        long = "loss-tolerance",
        value_name = "PCT",
        default_value = "0",
        allow_hyphen_values = true
    )]
    pub loss_tolerance: String,
    /// Emulated port speed in bits/s (100m, 1g, 10g) capping every port,
    /// or none (the default on both paths: a veth pair has no speed of its
    /// own, the CPUs are its limit). The study's ports were 1 Gbit/s
    /// (--line-rate 1g).
    #[arg(
        long = "line-rate",
        value_name = "RATE",
        default_value = "none",
        allow_hyphen_values = true
    )]
    pub line_rate: String,
    /// Receive and transmit ring per port in frames (memory mode); a
    /// packet that finds one full is lost.
    #[arg(
        long = "ring",
        value_name = "FRAMES",
        default_value = "4096",
        allow_hyphen_values = true
    )]
    pub ring: String,
    /// CPUs the workers are pinned to, worker k on the k-th [default:
    /// every online CPU].
    #[arg(
        long = "cpus",
        value_name = "LIST",
        allow_hyphen_values = true,
        value_parser = parse::cpu_set
    )]
    pub cpus: Option<CpuSet>,
    /// Runs of the whole sweep, interleaved; each figure is the median.
    #[arg(
        short = 'r',
        long = "repeats",
        value_name = "N",
        default_value = "1",
        allow_hyphen_values = true,
        value_parser = parse::repeats_to_100
    )]
    pub repeats: usize,
    /// Scheduling controls: --fifo (rows whose spinning workers would take
    /// every CPU are then skipped), --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: SchedArgs,
    /// --format, --json.
    #[command(flatten)]
    pub output: OutputArgs,
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
    let cpus = CpuSet::or_online(args.cpus.as_ref());
    let workers = workers(args.workers.as_deref(), cpus.len())?;
    let q = args.quick;
    Ok(SmpPlan {
        quick: q,
        ports: args.ports,
        variants: variants(args.table.as_deref())?,
        workers,
        sizes: sizes(args.sizes.as_deref())?,
        routes: routes(args.routes.as_deref(), q)?,
        flows: flows(&args.flows)?,
        updates: updates(&args.updates)?,
        trial_secs: trial(args.trial.as_deref(), q)?,
        resolution: resolution(args.resolution.as_deref(), q)?,
        loss_tolerance: loss_tolerance(&args.loss_tolerance)?,
        line_rate_bps: parse_line_rate(&args.line_rate)
            .map_err(|e| anyhow!("--line-rate {}: {e}", args.line_rate))?,
        ring: ring(&args.ring)?,
        cpus,
        repeats: args.repeats,
        fifo: controls.fifo_priority,
    })
}

fn variants(list: Option<&str>) -> Result<Vec<Variant>> {
    let Some(list) = list else {
        return Ok(Variant::ALL.to_vec());
    };
    if list.trim() == "all" {
        return Ok(Variant::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim) {
        let v = Variant::parse(name).ok_or_else(|| {
            anyhow!("--table {list}: unknown table `{name}` (mutex, rwlock, rcu, per-cpu, all)")
        })?;
        if !out.contains(&v) {
            out.push(v);
        }
    }
    Ok(out)
}

/// `--workers`: counts from 1 to the number of CPUs given, ascending.
fn workers(list: Option<&str>, cpus: usize) -> Result<Vec<usize>> {
    let Some(list) = list else {
        return Ok((1..=cpus).collect());
    };
    let mut out = crate::measure::placement::parse_ranges(list, usize::MAX)
        .map_err(|e| anyhow!("--workers {list}: {e}"))?;
    if let Some(&n) = out.iter().find(|&&n| n == 0 || n > cpus) {
        bail!("--workers {list}: {n} workers, but each needs a CPU of its own and there are {cpus} (see --cpus)");
    }
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        bail!("--workers {list}: no worker count given");
    }
    Ok(out)
}

fn sizes(list: Option<&str>) -> Result<Vec<usize>> {
    let Some(list) = list else {
        return Ok(SIZES.to_vec());
    };
    if list.trim() == "all" {
        return Ok(RFC2544_SIZES.to_vec());
    }
    let mut out = Vec::new();
    for s in list.split(',').map(str::trim) {
        match s.parse::<usize>() {
            Ok(n) if (MIN_FRAME..=MAX_FRAME).contains(&n) => out.push(n),
            _ => bail!(
                "--sizes {list}: `{s}` is not a frame size in bytes from {MIN_FRAME} to {MAX_FRAME} (or all)"
            ),
        }
    }
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

fn routes(s: Option<&str>, quick: bool) -> Result<usize> {
    let Some(s) = s else {
        return Ok(if quick { QUICK_ROUTES } else { DEFAULT_ROUTES });
    };
    match s.trim().replace('_', "").parse::<usize>() {
        Ok(n) if (1..=MAX_ROUTES).contains(&n) => Ok(n),
        _ => bail!("--routes {s}: must be a whole number of prefixes, 1 to {MAX_ROUTES}"),
    }
}

fn flows(s: &str) -> Result<Flows> {
    let bad = || anyhow!("--flows {s}: expected uniform, zipf or zipf:S with S from 0.1 to 5");
    match s.trim() {
        "uniform" => Ok(Flows::Uniform),
        "zipf" => Ok(Flows::Zipf(1.0)),
        t => {
            let exp = t.strip_prefix("zipf:").ok_or_else(bad)?;
            match exp.parse::<f64>() {
                Ok(e) if (0.1..=5.0).contains(&e) => Ok(Flows::Zipf(e)),
                _ => Err(bad()),
            }
        }
    }
}

fn updates(s: &str) -> Result<f64> {
    match s.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && (0.0..=MAX_UPDATES).contains(&r) => Ok(r),
        _ => bail!("--updates {s}: must be route changes per second, 0 to {MAX_UPDATES}"),
    }
}

fn trial(s: Option<&str>, quick: bool) -> Result<f64> {
    let Some(s) = s else {
        return Ok(if quick { QUICK_TRIAL } else { TRIAL }.as_secs_f64());
    };
    match s.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && (0.01..=MAX_TRIAL_SECS).contains(&v) => Ok(v),
        _ => bail!("--trial {s}: must be a number of seconds, 0.01 to {MAX_TRIAL_SECS}"),
    }
}

fn resolution(s: Option<&str>, quick: bool) -> Result<f64> {
    let Some(s) = s else {
        return Ok(if quick { QUICK_RESOLUTION } else { RESOLUTION });
    };
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && (0.1..=50.0).contains(&v) => Ok(v / 100.0),
        _ => bail!("--resolution {s}: must be a percentage of the rate, 0.1 to 50"),
    }
}

fn loss_tolerance(s: &str) -> Result<f64> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v.is_finite() && (0.0..=10.0).contains(&v) => Ok(v / 100.0),
        _ => bail!("--loss-tolerance {s}: must be a percentage of the frames offered, 0 to 10"),
    }
}

fn ring(s: &str) -> Result<usize> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_RING).contains(&n) => Ok(n),
        _ => bail!("--ring {s}: must be a whole number of frames, 1 to {MAX_RING}"),
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

    #[test]
    fn bad_values_fail_in_one_line_naming_the_option() {
        let too_many = (online_cpus().len() + 1).to_string();
        for (opt, bad) in [
            ("--table", "spinlock"),
            ("--sizes", "63"),
            ("--sizes", "1519"),
            ("--sizes", "x"),
            ("--routes", "0"),
            ("--routes", "99999999999999999999999"),
            ("--flows", "zipf:0"),
            ("--flows", "pareto"),
            ("--updates", "-1"),
            ("--updates", "nan"),
            ("--trial", "0"),
            ("--trial", "1e9"),
            ("--resolution", "0"),
            ("--line-rate", "fast"),
            ("--ring", "0"),
            ("--loss-tolerance", "11"),
            ("--trial", "-1"),
            ("--workers", "0"),
            ("--workers", too_many.as_str()),
        ] {
            let e = plan(&args(&[opt, bad])).unwrap_err().to_string();
            assert!(e.starts_with(opt), "{opt} {bad}: {e}");
            assert!(!e.contains('\n'), "{opt} {bad}: {e}");
        }
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
