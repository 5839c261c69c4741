//! A libdbus connection owned in Rust: a private connection (ours, or
//! one a `DBusServer` accepted) that never exits the process on
//! disconnect, closed and unreferenced on drop; Hello, and a blocking
//! call.

use std::ffi::CString;
use std::os::raw::c_int;
use std::ptr::NonNull;

use anyhow::{anyhow, bail, Result};

use super::ffi::{Api, DBusConnection};
use super::msg::{Error, Msg};

/// A private connection we hold a reference to: closed and unreferenced
/// on drop.
pub(super) struct Conn {
    api: &'static Api,
    p: NonNull<DBusConnection>,
}

// SAFETY: libdbus connections may be used from any thread once
// dbus_threads_init_default has run (ffi::api runs it at load, before
// any other call); a Conn is used by one thread at a time (it is not
// Sync). `api` is a table of function pointers, shared freely.
unsafe impl Send for Conn {}

impl Conn {
    /// Opens a private connection to `address` (authenticated, no Hello
    /// yet); it never exits the process on disconnect.
    pub(super) fn open(api: &'static Api, address: &str) -> Result<Conn> {
        let a = CString::new(address)?;
        let mut err = Error::new(api);
        // SAFETY: a NUL-terminated address and an initialised error.
        let p = unsafe { api.dbus_connection_open_private(a.as_ptr(), err.as_ptr()) };
        let conn = NonNull::new(p)
            .map(|p| Conn { api, p })
            .ok_or_else(|| anyhow!(err.text(&format!("connecting to {address}"))))?;
        conn.no_exit_on_disconnect();
        Ok(conn)
    }

    /// Takes a new reference to a connection libdbus lends us (a
    /// server's new connection), to hold and close like our own.
    pub(super) fn from_borrowed(api: &'static Api, p: *mut DBusConnection) -> Option<Conn> {
        let p = NonNull::new(p)?;
        // SAFETY: `p` is a live connection lent to us for this callback.
        unsafe { api.dbus_connection_ref(p.as_ptr()) };
        let conn = Conn { api, p };
        conn.no_exit_on_disconnect();
        Some(conn)
    }

    fn no_exit_on_disconnect(&self) {
        // SAFETY: a live connection.
        unsafe {
            self.api
                .dbus_connection_set_exit_on_disconnect(self.as_ptr(), 0)
        };
    }

    /// The raw pointer, for libdbus calls.
    pub(super) fn as_ptr(&self) -> *mut DBusConnection {
        self.p.as_ptr()
    }

    /// The library it belongs to.
    pub(super) fn api(&self) -> &'static Api {
        self.api
    }

    /// Sends Hello: a bus connection's first call.
    pub(super) fn register(&self) -> Result<()> {
        let mut err = Error::new(self.api);
        // SAFETY: a live connection and an initialised error.
        if unsafe { self.api.dbus_bus_register(self.as_ptr(), err.as_ptr()) } == 0 {
            bail!(err.text("Hello"));
        }
        Ok(())
    }

    /// Sends `msg` and blocks for its reply, up to `timeout_ms`; an error
    /// reply, a timeout or a disconnect is an `Err` naming `what`.
    pub(super) fn call(&self, msg: &Msg, timeout_ms: c_int, what: &str) -> Result<Msg> {
        let mut err = Error::new(self.api);
        // SAFETY: a live connection and message, an initialised error.
        let p = unsafe {
            self.api.dbus_connection_send_with_reply_and_block(
                self.as_ptr(),
                msg.as_ptr(),
                timeout_ms,
                err.as_ptr(),
            )
        };
        Msg::own(self.api, p).ok_or_else(|| anyhow!(err.text(what)))
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        // SAFETY: a private connection must be closed before its last
        // reference goes; we hold one reference, given back here.
        unsafe {
            self.api.dbus_connection_close(self.as_ptr());
            self.api.dbus_connection_unref(self.as_ptr());
        }
    }
}
