//! The D-Bus side of the broker suite: `GetInteger(in i numInts, out ai
//! intData)` served and called peer to peer (no daemon), through a private
//! `dbus-daemon` and through a private `dbus-broker`, on each of three
//! libraries ([`library`]): libdbus (the study's), sd-bus and zbus.
//!
//! Why zbus 5.x, with its blocking API and its `p2p` feature, in all three
//! arrangements: it is the maintained Rust D-Bus library that can also serve
//! a daemon-less peer-to-peer connection (the `dbus` crate has no p2p server
//! side), and one library in all three rows keeps "through a daemon minus
//! peer to peer" a clean difference: the daemon's cost, not a library's.
//! zbus 6 dropped the blocking API, hence 5.x. Its runtime is async-io (the
//! default, minimal features: `async-io`, `blocking-api`, `p2p`).
//!
//! The parts, one job each:
//! - [`value`] and [`check`]: the integers every arrangement returns;
//! - [`wire`]: the body's D-Bus encoding, by hand and validated by zvariant;
//! - [`marshal`]: zbus's (de)serialisation cost alone, no I/O;
//! - [`bus`]: a private `dbus-daemon` or `dbus-broker` in a directory;
//! - [`service`] and [`client`]: the method served and called (zbus);
//! - [`library`]: the library axis, `--dbus-lib`; `libdbus` and `sdbus`:
//!   the same service, client and marshalling cost on those libraries,
//!   whose C libraries are loaded at run time ([`dynlib`]: no -dev
//!   package or pkg-config to build msgbench; a machine without one skips
//!   its rows, naming the package).

pub mod address;
pub mod bus;
pub mod client;
pub mod dynlib;
pub mod judge;
pub mod libdbus;
pub mod library;
pub mod marshal;
pub mod sdbus;
pub mod service;
pub mod versions;
pub mod wire;

mod errors;
mod journal;

mod launch;

pub use bus::{DaemonKind, PrivateBus};
pub use client::DbusClient;
pub use errors::{ChildStop, Unavailable, WrongAnswer};
pub use library::DbusLib;
pub use marshal::{marshal_cost, MarshalCost};
pub use service::{serve, Target};
pub use wire::{
    decode_reply, encode_reply, encode_request, validate_reply_body, validate_request_body,
};

/// The well-known bus name of service K is this prefix followed by K,
/// e.g. `org.msgbench.Service0`.
pub const NAME_PREFIX: &str = "org.msgbench.Service";
/// The object path the service is served at.
pub const OBJECT_PATH: &str = "/org/msgbench/Service";
/// The interface the method belongs to.
pub const INTERFACE: &str = "org.msgbench.Service";
/// The method: `GetInteger(in i numInts, out ai intData)`.
pub const METHOD: &str = "GetInteger";
/// The largest `numInts` a service answers; larger (or negative) requests
/// get `org.freedesktop.DBus.Error.InvalidArgs`.
pub const MAX_INTS: u32 = 1_000_000;

/// The well-known bus name of service `index`.
pub fn bus_name(index: u32) -> String {
    format!("{NAME_PREFIX}{index}")
}

/// Integer `i` of the answer to `GetInteger(num_ints)`: deterministic, so
/// a client can check every value it receives.
pub fn value(num_ints: u32, i: u32) -> i32 {
    (num_ints as i32)
        .wrapping_mul(31)
        .wrapping_add((i as i32).wrapping_mul(7))
}

/// The whole answer to `GetInteger(num_ints)`.
pub fn values(num_ints: u32) -> Vec<i32> {
    (0..num_ints).map(|i| value(num_ints, i)).collect()
}

/// Checks an answer to `GetInteger(num_ints)`: its length and every value;
/// the error names the first wrong index.
pub fn check(num_ints: u32, got: &[i32]) -> Result<(), WrongAnswer> {
    if got.len() != num_ints as usize {
        return Err(WrongAnswer::Count {
            num_ints,
            got: got.len(),
        });
    }
    for (i, &v) in got.iter().enumerate() {
        let want = value(num_ints, i as u32);
        if v != want {
            return Err(WrongAnswer::Value {
                num_ints,
                index: i,
                got: v,
                want,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_names_the_first_wrong_index() {
        let mut v = values(5);
        assert_eq!(check(5, &v), Ok(()));
        v[3] += 1;
        assert!(check(5, &v).unwrap_err().to_string().contains("integer 3"));
        assert!(check(4, &v).unwrap_err().to_string().contains("answered 5"));
        assert_eq!(check(0, &[]), Ok(()));
    }
}
