//! The `veth` packet path (root): real Ethernet frames between network
//! namespaces of our own.
//!
//! - `topology`: the namespaces, veth pairs, addresses and routes, and
//!   their cleanup (on drop, and a sweep of a dead run's leftovers).
//! - `afpacket`: AF_PACKET senders and receivers inside a namespace, the
//!   paced generator, the counting sink and a forwarding worker's relay
//!   loop.
//! - `kernel`: the reference row, the kernel's own IP forwarding between
//!   the same namespaces.

pub mod afpacket;
pub mod kernel;
pub mod topology;
