//! msgbench: the suite behind the `msgbench`, `dev-adder` and
//! `client-adder` programs.

#![warn(missing_docs)]

pub mod measure;
