//! `msgbench`: the suite. With no arguments it runs a short tour.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Result;
use clap::{Parser, Subcommand};
use msgbench::cli;
use msgbench::devctl::server::{self, ServerArgs};
use msgbench::history::{self, HistoryArgs};
use msgbench::measure::placement::cpu_count;
use msgbench::report::compare::{self, CompareArgs};
use msgbench::report::html::{self as report, ReportArgs};
use msgbench::store::RecordArgs;
use msgbench::suites::adder::{Adder, AdderArgs, Mode, Placement};
use msgbench::suites::broker::{self as broker, Broker, BrokerArgs};
use msgbench::suites::floor::{Floor, FloorArgs};
use msgbench::suites::ipc::{self as ipc, Ipc, IpcArgs};
use msgbench::suites::rtos::{self as rtos, Rtos, RtosArgs};
use msgbench::suites::smp::{Smp, SmpArgs};
use msgbench::suites::validate::{Validate, ValidateArgs};
use msgbench::suites::{self, OutputArgs};

#[derive(Parser)]
#[command(
    name = "msgbench",
    version,
    about = "Message-passing and IPC benchmarks for Linux",
    long_about = "Message-passing and IPC benchmarks for Linux.\n\nRun with no arguments for a short tour (about a minute): the QNX devctl adder benchmark over shared memory, a pipe and Unix sockets, with embedded servers in three models (one process with a thread and a path per client thread, a process per client thread, a thread pool on one path), one client/server pair pinned per CPU and then unpinned for contrast.",
    after_long_help = msgbench::measure::clock::ENV_HELP
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
}

#[derive(Subcommand)]
enum Cmd {
    /// The QNX devctl adder benchmark: threads vs processes vs a thread pool on one path, per transport.
    Adder(AdderArgs),
    /// Every transport side by side: latency, throughput and CPU per message, by size and placement.
    Ipc(IpcArgs),
    /// The machine's limits: cache-line and futex ping-pongs, clock and system-call costs.
    Floor(FloorArgs),
    /// The reference tools (perf, rt-tests) next to msgbench's equivalent measurements.
    Validate(ValidateArgs),
    /// The RTOS evaluation catalogue (THR, SEM, MUT, CLK, IRQ, MEM, MSG tests) with the QNX figures.
    Rtos(RtosArgs),
    /// SMP packet forwarding: RFC 2544 zero-loss throughput per table variant (mutex, rwlock, rcu, per-cpu) and worker count, in memory or over veth.
    Smp(SmpArgs),
    /// What a message broker costs: GetInteger direct, through a header-routing broker, and over real D-Bus (peer to peer, dbus-daemon, dbus-broker), with the split of each call's time.
    Broker(BrokerArgs),
    /// Two runs of one suite side by side (files, or @last, @prev, @ID from the store): each figure's change and whether it is beyond the noise.
    #[command(long_about = compare::LONG_ABOUT)]
    Compare(CompareArgs),
    /// One self-contained HTML page (inline SVG charts) from runs (files, or @last, @prev, @ID from the store; --host: the latest of each machine; --trend: a figure over time); several are overlaid.
    Report(ReportArgs),
    /// Suite runs listed in a campaign file (TOML), run and recorded one after the other, tagged with the campaign and this machine; resumed where it stopped.
    #[command(long_about = msgbench::campaign::LONG_ABOUT)]
    Campaign(msgbench::campaign::CampaignArgs),
    /// The runs kept in the results store: list, show, export, import, and a figure's trend.
    #[command(long_about = history::LONG_ABOUT)]
    History(HistoryArgs),
    /// The server side of adder or ipc for a client on another host (`msgbench adder|ipc --server`): one ready line, then serve until SIGTERM.
    Serve(msgbench::serve::ServeArgs),
    /// Serve adder instances (what `dev-adder` does; used by `msgbench adder`).
    #[command(hide = true)]
    ServeAdder(ServerArgs),
    /// One process of a `msgbench broker` run (service, broker or client).
    #[command(hide = true)]
    BrokerPeer(broker::PeerArgs),
    /// One process of a `msgbench ipc` row's clients (--idle-clients, --clients).
    #[command(hide = true)]
    IpcPeer(ipc::PeerArgs),
    /// The server process of the `msgbench rtos` MSG tests.
    #[command(hide = true)]
    RtosPeer(rtos::msgpeer::PeerArgs),
}

fn main() -> ExitCode {
    let cli: Cli = cli::parse_args("msgbench");
    if let Some(Cmd::Compare(a)) = &cli.cmd {
        return compare::main(a);
    }
    let started = cli::check_clock_env().and_then(|()| cli::stop_on_signals());
    let result = started.and_then(|stop| match cli.cmd {
        None => tour(stop),
        Some(Cmd::Adder(a)) => suites::execute::<Adder>(&a, &a.output, stop).map(|_| ()),
        Some(Cmd::Ipc(a)) => suites::execute::<Ipc>(&a, &a.output, stop).map(|_| ()),
        Some(Cmd::Floor(a)) => suites::execute::<Floor>(&a, &a.output, stop).map(|_| ()),
        Some(Cmd::Validate(a)) => suites::execute::<Validate>(&a, &a.output, stop).map(|_| ()),
        Some(Cmd::Rtos(a)) => suites::execute::<Rtos>(&a, &a.output, stop).map(|_| ()),
        Some(Cmd::Smp(a)) => suites::execute::<Smp>(&a, &a.output, stop).map(|_| ()),
        Some(Cmd::Broker(a)) => suites::execute::<Broker>(&a, &a.output, stop).map(|_| ()),
        Some(Cmd::BrokerPeer(a)) => broker::role::run(&a, stop),
        Some(Cmd::IpcPeer(a)) => ipc::peer::run(&a, stop),
        Some(Cmd::RtosPeer(a)) => rtos::msgpeer::run(&a, stop),
        Some(Cmd::Report(a)) => report::run(&a),
        Some(Cmd::History(a)) => history::run(&a),
        Some(Cmd::Campaign(a)) => msgbench::campaign::run::<Cli>(&a, stop),
        Some(Cmd::ServeAdder(s)) => server::run(&s, stop),
        Some(Cmd::Serve(a)) => msgbench::serve::run(&a, stop),
        Some(Cmd::Compare(_)) => Ok(()), // returned above, with its own exit status
    });
    cli::finish("msgbench", result)
}

/// Transports of the tour: one that blocks on shared memory, one pipe,
/// one socket (all blocking, so pinned pairs sharing a CPU hand over at
/// once rather than spin).
const TOUR_TRANSPORTS: [&str; 3] = ["shm-block", "pipe", "uds"];

/// The tour: the adder's questions (does message passing scale with
/// threads, do threads of one process scale like processes, and which
/// server model scales best: a path per thread in one process, a process
/// per thread, or a thread pool on one path?) answered with one
/// client/server pair pinned per CPU, the unpinned rows as a contrast,
/// the verdict sentences under the tables, the envelope kept in
/// msgbench-results/ and drawn as an HTML report beside it.
fn tour(stop: Arc<AtomicBool>) -> Result<()> {
    let stamp = humantime::format_rfc3339_seconds(std::time::SystemTime::now())
        .to_string()
        .replace(':', "");
    let json = PathBuf::from("msgbench-results").join(format!("tour-{stamp}.json"));
    println!(
        "msgbench tour: does message passing scale with threads, and which server model scales\n\
         best: a path per thread in one process, a process per thread, or a thread pool on one path?\n\
         The QNX devctl adder benchmark, first with one client/server pair pinned per CPU, then\n\
         unpinned for contrast (msgbench --help for more)\n"
    );
    let args = tour_args(json.clone());
    suites::execute::<Adder>(&args, &args.output, stop)?;
    println!(
        "\nAll figures, percentiles and the environment: {}",
        json.display()
    );
    let html = json.with_extension("html");
    report::run(&ReportArgs {
        files: vec![json.display().to_string()],
        output: html,
        ..ReportArgs::default()
    })?;
    println!(
        "Next: msgbench adder --help, or dev-adder / client-adder for the seed's two programs."
    );
    println!("{}", tour_history());
    Ok(())
}

/// The tour's last lines: where its run is kept, and how to see the runs.
fn tour_history() -> String {
    let how = [
        "  msgbench history                   lists the runs: id, date, suite, host, kernel, headline figure",
        "  msgbench history show @last        prints this run again",
        "  msgbench compare @prev @last       after the next tour: that run against this one, figure by figure",
    ]
    .join("\n");
    match RecordArgs::default().choice() {
        None => format!(
            "This run was not recorded (MSGBENCH_NO_STORE is set); without it every run is kept:\n{how}"
        ),
        Some(Err(_)) => format!("Every run is kept in the results store when it can be written:\n{how}"),
        Some(Ok(at)) => {
            format!("Every run is kept in the results store {at} (MSGBENCH_STORE picks another):\n{how}")
        }
    }
}

/// The tour's adder run: 1, 2 and every CPU's worth of threads, in the
/// three server models, pinned then unpinned, the envelope written to
/// `json`.
fn tour_args(json: PathBuf) -> AdderArgs {
    let cpus = cpu_count().max(1) as u32;
    let mut threads = vec![1, 2.min(cpus), cpus];
    threads.dedup();
    AdderArgs {
        threads: Some(threads),
        transports: TOUR_TRANSPORTS.map(String::from).to_vec(),
        modes: vec![Mode::One, Mode::Multi, Mode::Pool],
        placements: vec![Placement::Pinned, Placement::Unpinned],
        idle_secs: 1.0,
        output: OutputArgs {
            json: Some(json),
            ..OutputArgs::default()
        },
        ..AdderArgs::default()
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_tours_last_lines_name_the_store_and_the_commands_indented() {
        let text = super::tour_history();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].contains("recorded") || lines[0].contains("results store"));
        for l in &lines[1..] {
            assert!(l.starts_with("  msgbench "), "not indented: {l:?}");
        }
    }
}
