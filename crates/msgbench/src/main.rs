//! `msgbench`: the suite. With no arguments it runs a short tour.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use clap::{Parser, Subcommand};
use msgbench::cli;
use msgbench::devctl::server::{self, ServerArgs};
use msgbench::report::html::{self as report, ReportArgs};
use msgbench::suites;
use msgbench::suites::adder::{self, AdderArgs};
use msgbench::suites::floor::{Floor, FloorArgs};
use msgbench::suites::ipc::{self, IpcArgs};
use msgbench::suites::rtos::{self, RtosArgs};
use msgbench::suites::validate::{self, ValidateArgs};

#[derive(Parser)]
#[command(
    name = "msgbench",
    version,
    about = "Message-passing and IPC benchmarks for Linux",
    long_about = "Message-passing and IPC benchmarks for Linux.\n\nRun with no arguments for a short tour (about a minute): the QNX devctl adder benchmark over shared memory and Unix sockets, with embedded servers."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// The QNX devctl adder benchmark: threads vs processes, per transport.
    Adder(AdderArgs),
    /// Every transport side by side: latency, throughput and CPU per message, by size and placement.
    Ipc(IpcArgs),
    /// The machine's limits: cache-line and futex ping-pongs, clock and system-call costs.
    Floor(FloorArgs),
    /// The reference tools (perf, rt-tests) next to msgbench's equivalent measurements.
    Validate(ValidateArgs),
    /// The RTOS evaluation catalogue (THR, SEM, MUT, CLK, IRQ, MEM tests) with the QNX 6.5 figures.
    Rtos(RtosArgs),
    /// One self-contained HTML page (inline SVG charts) from results files; several are overlaid.
    Report(ReportArgs),
    /// Serve adder instances (what `dev-adder` does; used by `msgbench adder`).
    #[command(hide = true)]
    ServeAdder(ServerArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = cli::stop_on_signals().and_then(|stop| match cli.cmd {
        None => tour(stop),
        Some(Cmd::Adder(a)) => adder::run(&a, stop).map(|_| ()),
        Some(Cmd::Ipc(a)) => ipc::run(&a, stop).map(|_| ()),
        Some(Cmd::Floor(a)) => suites::execute::<Floor>(&a, &a.output, stop).map(|_| ()),
        Some(Cmd::Validate(a)) => validate::run(&a, stop).map(|_| ()),
        Some(Cmd::Rtos(a)) => rtos::run(&a, stop).map(|_| ()),
        Some(Cmd::Report(a)) => report::run(&a),
        Some(Cmd::ServeAdder(s)) => server::run(&s, stop),
    });
    cli::finish("msgbench", result)
}

/// The tour: the adder table over shm and uds, JSON kept for later.
fn tour(stop: Arc<AtomicBool>) -> Result<()> {
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace(':', "");
    let json = PathBuf::from("msgbench-results").join(format!("tour-{stamp}.json"));
    println!("msgbench tour: the QNX devctl adder benchmark on this machine (msgbench --help for more)\n");
    let args = AdderArgs {
        transports: vec!["shm".into(), "uds".into()],
        json: Some(json.clone()),
        ..AdderArgs::default()
    };
    adder::run(&args, stop)?;
    println!(
        "\nAll figures, percentiles and the environment: {}",
        json.display()
    );
    println!(
        "Next: msgbench adder --help, or dev-adder / client-adder for the seed's two programs."
    );
    Ok(())
}
