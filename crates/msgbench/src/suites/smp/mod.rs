//! `msgbench smp` (in progress, issue 12): SMP forwarding and lock
//! contention, after the dual-core QNX router study (../shared/spec/smp.md).
//!
//! The parts, each its own module:
//! - `fib`: what a forwarding table is ([`fib::Fib`]) and a slow, obviously
//!   right one ([`fib::Reference`]) every faster table is checked against.
//! - `veth`: the real-network path (root): our own namespaces and veth
//!   pairs, AF_PACKET generator, sink and relay, and the kernel's own
//!   forwarding as the reference row.
//!
//! The suite itself (plan, run, rows, figures) is not built yet: the
//! modules are tested on their own.

pub mod fib;
pub mod veth;
