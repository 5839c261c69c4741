//! The suites, one folder each, none importing another.

pub mod adder;
pub mod floor;
pub mod ipc;
pub mod rtos;
pub mod validate;
