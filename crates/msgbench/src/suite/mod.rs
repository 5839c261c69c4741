//! One module per suite.

pub mod adder;
