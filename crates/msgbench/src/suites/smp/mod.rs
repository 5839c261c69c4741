//! `msgbench smp` (in progress, issue 12): SMP forwarding and lock
//! contention, after the dual-core QNX router study (../shared/spec/smp.md).
//!
//! The parts, each its own module:
//! - `fib`: what a forwarding table is ([`fib::Fib`]) and a slow, obviously
//!   right one ([`fib::Reference`]) every faster table is checked against.
//! - `ports`: the simulated NIC ports of the `memory` path: receive rings
//!   filled as time passes at the offered rate, overruns counted as loss
//!   ([`ports::RxPort`]), transmit rings draining at the line rate
//!   ([`ports::TxPort`]), `--line-rate` parsing.
//! - `forwarder`: N pinned workers, each draining its own receive ports
//!   into the transmit ports a forwarding closure chooses, for one trial
//!   ([`forwarder::run`]).
//! - `search`: the RFC 2544 throughput search ([`search::search`]).
//! - `veth`: the real-network path (root): our own namespaces and veth
//!   pairs, AF_PACKET generator, sink and relay, and the kernel's own
//!   forwarding as the reference row.
//! - `lpm`: the fast table, DIR-24-8 ([`lpm::Dir24`]): one or two memory
//!   reads per lookup.
//! - `synth`: a synthetic Internet-sized table ([`synth::generate`]) and
//!   the destinations of its traffic ([`synth::Destinations`]).
//! - `packet`: real Ethernet/IPv4/UDP frames in bytes, and what a router
//!   does to them ([`packet::forward_in_place`]).
//! - `tables`: the table variants of `--table` (`mutex`, `rwlock`, `rcu`,
//!   `per-cpu`) behind one worker interface, with per-worker lock wait and
//!   hold times, per-route counters, and the route-update thread.
//!
//! The suite itself (plan, run, rows, figures) is not built yet: the
//! modules are tested on their own.

pub mod fib;
pub mod forwarder;
pub mod lpm;
pub mod packet;
pub mod ports;
pub mod search;
pub mod synth;
pub mod tables;
pub mod veth;
