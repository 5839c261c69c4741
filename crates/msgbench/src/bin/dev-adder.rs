//! `dev-adder`: the adder server of the QNX devctl benchmark.

use std::process::ExitCode;

use msgbench::cli;
use msgbench::devctl::server::{self, ServerArgs};

fn main() -> ExitCode {
    let args: ServerArgs = cli::parse_args("dev-adder");
    cli::finish(
        "dev-adder",
        cli::check_clock_env()
            .and_then(|()| cli::stop_on_signals())
            .and_then(|stop| server::run(&args, stop)),
    )
}
