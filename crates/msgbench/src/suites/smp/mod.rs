//! `msgbench smp` (in progress, issue 12): SMP forwarding and lock
//! contention, after the dual-core QNX router study (../shared/spec/smp.md).
//!
//! The parts, each its own module:
//! - `fib`: what a forwarding table is ([`fib::Fib`]) and a slow, obviously
//!   right one ([`fib::Reference`]) every faster table is checked against.
//! - `tables`: the table variants of `--table` (`mutex`, `rwlock`, `rcu`,
//!   `per-cpu`) behind one worker interface, with per-worker lock wait and
//!   hold times, per-route counters, and the route-update thread.
//!
//! The suite itself (plan, run, rows, figures) is not built yet: the
//! modules are tested on their own.

pub mod fib;
pub mod tables;
