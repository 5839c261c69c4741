//! `client-adder`: the adder client of the QNX devctl benchmark.

use std::process::ExitCode;

use msgbench::cli;
use msgbench::devctl::client_adder::{self, ClientArgs};

fn main() -> ExitCode {
    let args: ClientArgs = cli::parse_args("client-adder");
    cli::finish(
        "client-adder",
        cli::check_clock_env().and_then(|()| client_adder::main(&args)),
    )
}
