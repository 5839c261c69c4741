//! `GetInteger` on libdbus, the reference C library the D-Bus study ran,
//! written as its users write it: a client calling with
//! `dbus_connection_send_with_reply_and_block`, a service answering from
//! an object path vtable driven by `dbus_connection_read_write_dispatch`,
//! peer to peer through a `DBusServer`.
//!
//! libdbus-1.so.3 is loaded at run time, once per process, by `ffi` (the
//! C declarations, from libdbus's headers); a machine without it skips
//! libdbus's rows, naming the package (libdbus-1-3).
//!
//! The parts: `msg` owns messages and errors (unref and free on drop)
//! and reads and writes the two bodies; `conn` owns connections (closed
//! on drop); `client`,
//! `service` and `marshal` (the library's marshalling timed alone).

mod client;
mod conn;
mod ffi;
mod marshal;
mod msg;
mod service;

use std::ffi::CStr;

pub use client::Client;
pub use marshal::marshal_cost;
pub use service::serve;

use super::dynlib::LoadError;

/// The object path, interface and method, as C strings (the same as
/// [`super::OBJECT_PATH`], [`super::INTERFACE`], [`super::METHOD`]).
const PATH: &CStr = c"/org/msgbench/Service";
const INTERFACE: &CStr = c"org.msgbench.Service";
const METHOD: &CStr = c"GetInteger";
/// The error a service answers a bad `numInts` with.
const INVALID_ARGS: &CStr = c"org.freedesktop.DBus.Error.InvalidArgs";

/// Ok when libdbus is loaded here (on first use), with every function
/// the module calls; else the one line naming its package.
pub fn available() -> Result<(), LoadError> {
    ffi::api().map(|_| ())
}

/// The loaded library, for every entry point of this module.
fn api() -> anyhow::Result<&'static ffi::Api> {
    Ok(ffi::api()?)
}

/// The loaded library for a unit test, or None after printing why it is
/// skipped (a failure under CI).
#[cfg(test)]
fn loaded_or_skip() -> Option<&'static ffi::Api> {
    match ffi::api() {
        Ok(api) => Some(api),
        Err(e) if std::env::var_os("CI").is_some() => panic!("{e} (CI is set: not skipping)"),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_names_are_the_suites() {
        assert_eq!(PATH.to_str().unwrap(), super::super::OBJECT_PATH);
        assert_eq!(INTERFACE.to_str().unwrap(), super::super::INTERFACE);
        assert_eq!(METHOD.to_str().unwrap(), super::super::METHOD);
    }
}
