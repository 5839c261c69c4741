//! The QNX devctl adder benchmark: the protocol, the server (`dev-adder`),
//! the client (`client-adder`) and the options they share.

pub mod client;
pub mod client_adder;
pub mod options;
pub mod output;
pub mod seed;
pub mod server;

/// The one command an adder instance serves: the request carries a `u32`
/// (little-endian), the reply carries that value plus one. Anything else is
/// answered with `ENOTTY`, like an unsupported devctl.
pub const ADDER_INCREMENT: u32 = 0x4144_0001;

/// Endpoint name of adder instance `k` (the seed's `/dev/adder/<k>`).
pub fn endpoint(k: u32) -> String {
    format!("adder/{k}")
}

/// Largest instance count, as in the seed.
pub const MAX_INSTANCES: u32 = 128;

/// Smallest sample count the client accepts.
pub const MIN_SAMPLES: u64 = 100;
