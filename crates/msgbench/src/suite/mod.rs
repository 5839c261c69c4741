//! One module per suite.

pub mod adder;
pub mod floor;
pub mod ipc;
