//! The libdbus functions libdbus-sys does not declare, and only those:
//! the server side of a peer-to-peer connection (`DBusServer`, from
//! `dbus/dbus-server.h`) and `dbus_connection_ref` (a new connection
//! handed to the server's callback must be referenced to be kept).
//! Declared as in libdbus 1.14's headers; the library itself is linked
//! by libdbus-sys (pkg-config `dbus-1`).

use std::os::raw::{c_char, c_void};

use libdbus_sys::{
    DBusAddWatchFunction, DBusConnection, DBusError, DBusFreeFunction, DBusRemoveWatchFunction,
    DBusWatchToggledFunction,
};

/// libdbus's opaque `DBusServer`.
#[repr(C)]
pub(super) struct DBusServer {
    _private: [u8; 0],
}

/// `DBusNewConnectionFunction`: a connection the server accepted.
pub(super) type DBusNewConnectionFunction =
    Option<extern "C" fn(server: *mut DBusServer, conn: *mut DBusConnection, data: *mut c_void)>;

extern "C" {
    /// Listens on a D-Bus address (`unix:path=...`); NULL and `error`
    /// set on failure.
    pub(super) fn dbus_server_listen(
        address: *const c_char,
        error: *mut DBusError,
    ) -> *mut DBusServer;
    /// Stops listening (the socket file is removed).
    pub(super) fn dbus_server_disconnect(server: *mut DBusServer);
    /// Drops a reference.
    pub(super) fn dbus_server_unref(server: *mut DBusServer);
    /// Sets the callback for each accepted connection.
    pub(super) fn dbus_server_set_new_connection_function(
        server: *mut DBusServer,
        function: DBusNewConnectionFunction,
        data: *mut c_void,
        free_data_function: DBusFreeFunction,
    );
    /// Sets the functions through which the server's listening socket is
    /// watched (it has no blocking accept of its own).
    pub(super) fn dbus_server_set_watch_functions(
        server: *mut DBusServer,
        add_function: DBusAddWatchFunction,
        remove_function: DBusRemoveWatchFunction,
        toggled_function: DBusWatchToggledFunction,
        data: *mut c_void,
        free_data_function: DBusFreeFunction,
    ) -> u32;
    /// Adds a reference to a connection.
    pub(super) fn dbus_connection_ref(conn: *mut DBusConnection) -> *mut DBusConnection;
}
