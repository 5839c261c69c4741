//! msgbench: the suite behind the `msgbench`, `dev-adder` and
//! `client-adder` programs.

#![warn(missing_docs)]

pub mod adder;
pub mod cli;
pub mod floor;
pub mod measure;
pub mod report;
pub mod rtos;
pub mod suite;
pub mod validate;
