//! msgbench: the suite behind the `msgbench`, `dev-adder` and
//! `client-adder` programs.

#![warn(missing_docs)]

pub mod campaign;
pub mod cli;
pub mod devctl;
pub mod history;
pub mod measure;
pub mod pingpong;
pub mod report;
pub mod results;
pub mod serve;
pub mod store;
pub mod suites;
