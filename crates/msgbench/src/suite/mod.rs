//! One module per suite.

pub mod adder;
pub mod ipc;
