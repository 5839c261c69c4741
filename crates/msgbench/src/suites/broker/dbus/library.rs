//! The D-Bus library axis (`--dbus-lib`): which library serves and calls
//! `GetInteger` in the D-Bus arrangements. The same method, the same
//! checks (every reply's serial and integers) and the same timeouts on
//! each, written through each library's ordinary public API:
//!
//! - `libdbus`, the reference C library the D-Bus study ran
//!   (libdbus-1.so.3): a blocking
//!   `dbus_connection_send_with_reply_and_block` client, an object path
//!   vtable served by `dbus_connection_read_write_dispatch`, peer to peer
//!   through a `DBusServer`;
//! - `sd-bus`, systemd's (libsystemd.so.0): `sd_bus_call`, an object
//!   vtable served by `sd_bus_process`/`sd_bus_wait`, peer to peer by
//!   `sd_bus_set_server` on an accepted socket;
//! - `zbus`, the Rust library, with its blocking API (the suite's first
//!   D-Bus library; its own modules are `client`, `service`, `marshal`).
//!
//! libdbus and sd-bus are always built in, and their C libraries loaded
//! at run time (`dynlib`): nothing but Rust and a C compiler is needed to
//! build msgbench, and where one of them is missing at run time its rows
//! are skipped with one line naming the Debian package that provides it
//! (libdbus-1-3, libsystemd0).

use std::sync::atomic::AtomicBool;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use super::errors::Unavailable;
use super::marshal::MarshalCost;
use super::service::Target;
use crate::suites::broker::client::{Caller, DbusCaller};

/// A D-Bus library.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DbusLib {
    /// libdbus (libdbus-1), the reference implementation.
    Libdbus,
    /// systemd's sd-bus (libsystemd).
    SdBus,
    /// zbus 5, blocking API.
    Zbus,
}

impl DbusLib {
    /// Every library, in report order: the study's own first.
    pub const ALL: [DbusLib; 3] = [DbusLib::Libdbus, DbusLib::SdBus, DbusLib::Zbus];

    /// Its `--dbus-lib` name.
    pub fn name(self) -> &'static str {
        match self {
            DbusLib::Libdbus => "libdbus",
            DbusLib::SdBus => "sd-bus",
            DbusLib::Zbus => "zbus",
        }
    }

    /// The library of a `--dbus-lib` name.
    pub fn parse(s: &str) -> Option<DbusLib> {
        DbusLib::ALL.into_iter().find(|l| l.name() == s)
    }

    /// Ok when it can run here (its C library loaded, on first use,
    /// with every function the suite calls); else one line saying why
    /// not and which package to install.
    pub fn available(self) -> Result<(), Unavailable> {
        match self {
            DbusLib::Libdbus => super::libdbus::available()?,
            DbusLib::SdBus => super::sdbus::available()?,
            DbusLib::Zbus => {}
        }
        Ok(())
    }

    /// What its marshalling figure times, for the legend.
    pub fn marshal_method(self) -> &'static str {
        match self {
            DbusLib::Libdbus => {
                "dbus_message_new_method_call/_return and appending, dbus_message_marshal, dbus_message_demarshal (header and body validated) and reading back"
            }
            DbusLib::SdBus => {
                "sd_bus_message_new_method_call/_return, appending and sd_bus_message_seal, then sd_bus_message_rewind and reading back (sd-bus has no public call to parse a message from bytes, so the header's parse on receipt is not in it)"
            }
            DbusLib::Zbus => {
                "building the message and Message::from_bytes (header and body) with the body deserialised"
            }
        }
    }

    /// Serves `GetInteger` as service `index` at `target` until `stop` is
    /// set (see [`super::serve`] for the zbus service's contract, which
    /// every library keeps).
    pub fn serve(self, target: &Target, index: u32, stop: &AtomicBool) -> Result<()> {
        match self {
            DbusLib::Zbus => super::serve(target, index, stop),
            DbusLib::Libdbus => super::libdbus::serve(target, index, stop),
            DbusLib::SdBus => super::sdbus::serve(target, index, stop),
        }
    }

    /// Connects a client to service `index` at `target`, waiting up to
    /// [`super::client::CONNECT_TIMEOUT`] for it. Its calls check the
    /// reply's serial against the call's and every integer.
    pub fn connect(self, target: &Target, index: u32) -> Result<Box<dyn Caller + Send>> {
        match self {
            DbusLib::Zbus => Ok(Box::new(DbusCaller(super::DbusClient::connect(
                target, index,
            )?))),
            DbusLib::Libdbus => Ok(Box::new(super::libdbus::Client::connect(target, index)?)),
            DbusLib::SdBus => Ok(Box::new(super::sdbus::Client::connect(target, index)?)),
        }
    }

    /// The library's own marshal and parse of the call and its reply,
    /// timed alone (no I/O), `iterations` times each.
    pub fn marshal_cost(self, num_ints: u32, iterations: u32) -> Result<MarshalCost> {
        match self {
            DbusLib::Zbus => super::marshal_cost(num_ints, iterations),
            DbusLib::Libdbus => super::libdbus::marshal_cost(num_ints, iterations),
            DbusLib::SdBus => super::sdbus::marshal_cost(num_ints, iterations),
        }
    }
}

/// A `--dbus-lib` entry that names no D-Bus library (clap prints it
/// after `--dbus-lib LIST: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown D-Bus library `{0}` (libdbus, sd-bus, zbus, all)")]
pub struct UnknownLib(pub String);

/// Value parser of `--dbus-lib`: a list (`all`, or names separated by
/// commas) into libraries in report order, each once. Without the option
/// the plan takes all of them ([`DbusLib::ALL`]): those whose C library
/// loads here are measured, the others are skipped rows naming the
/// package to install.
pub fn parse_list(list: &str) -> Result<Vec<DbusLib>, UnknownLib> {
    if list.trim() == "all" {
        return Ok(DbusLib::ALL.to_vec());
    }
    let mut out = Vec::new();
    for name in list.split(',').map(str::trim) {
        let lib = DbusLib::parse(name).ok_or_else(|| UnknownLib(name.to_string()))?;
        if !out.contains(&lib) {
            out.push(lib);
        }
    }
    out.sort();
    Ok(out)
}

/// The peer arguments naming `lib` (`--dbus-lib NAME`), none for a cell
/// without a D-Bus library.
pub fn peer_args(lib: Option<DbusLib>) -> Vec<String> {
    lib.map_or_else(Vec::new, |l| vec!["--dbus-lib".into(), l.name().into()])
}

/// A peer's `--dbus-lib` that names no D-Bus library (clap prints it
/// after `--dbus-lib NAME: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown D-Bus library (libdbus, sd-bus, zbus)")]
pub struct UnknownPeerLib;

/// Value parser of a peer's `--dbus-lib NAME` (a peer without one uses
/// zbus).
pub fn of_peer(name: &str) -> Result<DbusLib, UnknownPeerLib> {
    DbusLib::parse(name).ok_or(UnknownPeerLib)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_in_report_order() {
        for l in DbusLib::ALL {
            assert_eq!(DbusLib::parse(l.name()), Some(l));
        }
        assert_eq!(
            parse_list("zbus, libdbus,zbus").unwrap(),
            [DbusLib::Libdbus, DbusLib::Zbus]
        );
        assert_eq!(parse_list(" all").unwrap(), DbusLib::ALL);
        let e = parse_list("libdbus,gdbus").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unknown D-Bus library `gdbus` (libdbus, sd-bus, zbus, all)"
        );
        assert_eq!(of_peer("sd-bus"), Ok(DbusLib::SdBus));
        assert_eq!(
            of_peer("all").unwrap_err().to_string(),
            "unknown D-Bus library (libdbus, sd-bus, zbus)"
        );
    }

    #[test]
    fn a_library_that_cannot_load_says_which_package_to_install() {
        assert_eq!(DbusLib::Zbus.available(), Ok(()));
        for (l, package) in [
            (DbusLib::Libdbus, "libdbus-1-3"),
            (DbusLib::SdBus, "libsystemd0"),
        ] {
            if let Err(e) = l.available() {
                let e = e.to_string();
                assert!(e.starts_with(l.name()), "{e}");
                assert!(
                    e.ends_with(&format!("(install: apt-get install {package})")),
                    "{e}"
                );
            }
        }
    }
}
