//! `client-adder`: the adder client of the QNX devctl benchmark.

use std::process::ExitCode;

use clap::Parser;
use msgbench::adder::client::{self, ClientArgs};
use msgbench::cli;

fn main() -> ExitCode {
    let args = ClientArgs::parse();
    cli::finish("client-adder", client::main(&args))
}
