//! `GetInteger` on libdbus, the reference C library the D-Bus study ran,
//! written as its users write it (through libdbus-sys): a client calling
//! with `dbus_connection_send_with_reply_and_block`, a service answering
//! from an object path vtable driven by
//! `dbus_connection_read_write_dispatch`, peer to peer through a
//! `DBusServer` (the one part libdbus-sys does not declare: `ffi`).
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
use std::sync::Once;

pub use client::Client;
pub use marshal::marshal_cost;
pub use service::serve;

/// The object path, interface and method, as C strings (the same as
/// [`super::OBJECT_PATH`], [`super::INTERFACE`], [`super::METHOD`]).
const PATH: &CStr = c"/org/msgbench/Service";
const INTERFACE: &CStr = c"org.msgbench.Service";
const METHOD: &CStr = c"GetInteger";
/// The error a service answers a bad `numInts` with.
const INVALID_ARGS: &CStr = c"org.freedesktop.DBus.Error.InvalidArgs";

/// Makes libdbus safe to use from several threads (a service serves each
/// peer on its own thread), once per process, before any other call.
fn init_threads() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        // SAFETY: no arguments; libdbus asks for it before any other use
        // from several threads, which the Once guarantees here (every
        // entry point of this module calls it first).
        unsafe { libdbus_sys::dbus_threads_init_default() };
    });
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
