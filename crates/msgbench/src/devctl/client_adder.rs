//! The `client-adder` program: its command line, and a run printed as the
//! seed's results block (and written as JSON with `--json`).

use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{bail, Result};
use clap::Parser;
use msgpass::Namespace;
use serde::Serialize;

use super::client::{idle_baseline, run_to, ClientRun, RunConfig};
use super::options::{self, Common};
use crate::measure::clock::Clock;
use crate::measure::cpu::CpuUsage;

/// Command line of `client-adder`.
#[derive(Debug, Parser)]
#[command(
    name = "client-adder",
    version,
    about = "The adder client of the QNX devctl benchmark: N threads, each doing S synchronous round trips",
    long_about = "The adder client of the QNX devctl benchmark.\n\nStarts N threads; thread j connects to adder/<K+j>, waits on a start barrier, then runs value = 0; while value < S { value = devctl(INCREMENT, value) }, checking every reply. Prints the seed's results block plus per-thread latency percentiles.\n\nStart the server first, e.g.: dev-adder -n 2 & client-adder -n 2\n\nAcross hosts: dev-adder -t tcp --listen ADDR:PORT on one, client-adder -t tcp --connect ADDR:PORT on the other (instance k on port PORT+k).",
    after_long_help = crate::measure::clock::ENV_HELP
)]
pub struct ClientArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: Common,
    /// Round trips per thread (at least 100).
    #[arg(short = 'S', value_name = "SAMPLES", default_value_t = 2_000_000)]
    pub samples: u64,
    /// Before the run, sleep 5 s and measure how busy the machine is idle.
    #[arg(short = 'I')]
    pub idle: bool,
    /// Wait up to SECS (at most a day) for the endpoints to appear (like
    /// QNX waitfor).
    #[arg(long = "wait", value_name = "SECS", allow_negative_numbers = true)]
    pub wait: Option<f64>,
    /// Write all figures and the environment to FILE as JSON.
    #[arg(long = "json", value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Time whole runs only (no per-request timestamps, no percentiles).
    #[arg(long = "no-timestamps")]
    pub no_timestamps: bool,
    /// Connect thread j over TCP to instance K+j at ADDR:PORT+K+j (a
    /// `dev-adder -t tcp --listen ADDR:PORT`, maybe on another host)
    /// instead of through the namespace (needs -t tcp).
    #[arg(long = "connect", value_name = "ADDR:PORT")]
    pub connect: Option<String>,
    /// Every thread calls the one path adder/K, served by a pool of
    /// threads (`dev-adder --pool N`), instead of thread j calling adder/K+j.
    #[arg(long = "one-path")]
    pub one_path: bool,
}

/// What `client-adder --json` writes.
#[derive(Serialize)]
struct ClientReport<'a> {
    #[serde(flatten)]
    header: crate::results::Header,
    first_instance: u32,
    idle: Option<CpuUsage>,
    run: &'a ClientRun,
}

/// The longest `--wait`, seconds: a day.
pub const MAX_WAIT_SECS: f64 = 86_400.0;

/// The `client-adder` program.
pub fn main(args: &ClientArgs) -> Result<()> {
    let cpus = args.common.validate()?;
    super::options::check_samples(args.samples)?;
    let tcp = match &args.connect {
        Some(v) => Some(options::tcp_base("--connect", v, &args.common)?),
        None => None,
    };
    let wait = match args.wait {
        Some(w) if !(w.is_finite() && (0.0..=MAX_WAIT_SECS).contains(&w)) => bail!(
            "--wait {}: must be a number of seconds from 0 to {MAX_WAIT_SECS} (a day)",
            crate::cli::show_num(w)
        ),
        w => w.map(Duration::from_secs_f64),
    };
    let ns = Namespace::resolve(args.common.ns.as_deref())?;
    let clock = Clock::best();
    let idle = if args.idle {
        Some(idle_baseline(5.0)?)
    } else {
        None
    };
    let abort = AtomicBool::new(false);
    let run = run_to(
        &RunConfig {
            ns: &ns,
            transport: &args.common.transport,
            opts: msgpass::Options {
                wait,
                ..args.common.msgpass_options()
            },
            n: args.common.n,
            first: args.common.i,
            one_path: args.one_path,
            samples: args.samples,
            cpus: &cpus,
            timestamps: !args.no_timestamps,
            clock: &clock,
            abort: &abort,
            time_limit: None,
            api: args.common.api(),
        },
        tcp,
    )?;
    print!(
        "{}",
        super::output::results_block(&run, idle.as_ref(), &clock)
    );
    print!("{}", super::output::seed_line(args.common.n, args.one_path));
    if let Some(path) = &args.json {
        let report = ClientReport {
            header: crate::results::Header::capture(&clock),
            first_instance: args.common.i,
            idle,
            run: &run,
        };
        crate::results::envelope::write(path, &report)?;
    }
    Ok(())
}
