//! libdbus's C interface as this module calls it, declared here from
//! libdbus 1.14's headers (`/usr/include/dbus-1.0/dbus/*.h`; the types
//! as libdbus-sys 0.2.7 declared them, checked against the headers) and
//! loaded at run time ([`api`]): the types and constants the module
//! uses, and the functions it calls, each resolved when libdbus-1.so.3
//! is loaded, once per process.

use std::os::raw::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use libloading::os::unix::Library;

use crate::suites::broker::dbus::dynlib::{c_api, LoadError, SharedLib};

/// libdbus-1, from Debian's libdbus-1-3.
pub(super) const LIBDBUS: SharedLib = SharedLib {
    name: "libdbus",
    soname: "libdbus-1.so.3",
    package: "libdbus-1-3",
    test_env: "MSGBENCH_TEST_LIBDBUS",
};

/// `dbus_bool_t` (`dbus-types.h`: a `dbus_uint32_t`).
pub(super) type DBusBool = u32;

/// An opaque libdbus object, only ever behind a pointer.
macro_rules! opaque {
    ($($(#[$m:meta])* $name:ident;)*) => {
        $($(#[$m])* #[repr(C)] pub(super) struct $name { _private: [u8; 0] })*
    };
}

opaque! {
    /// `DBusConnection`.
    DBusConnection;
    /// `DBusMessage`.
    DBusMessage;
    /// `DBusWatch`.
    DBusWatch;
    /// `DBusServer`.
    DBusServer;
}

/// `DBusError` (`dbus-errors.h`): two public strings, five one-bit
/// fields in one `unsigned int`, and a pointer of padding.
#[repr(C)]
pub(super) struct DBusError {
    /// The error's name, NULL when unset.
    pub(super) name: *const c_char,
    /// Its message.
    pub(super) message: *const c_char,
    /// `dummy1` to `dummy5`, one bit each.
    pub(super) dummy: c_uint,
    /// `padding1`.
    pub(super) padding1: *mut c_void,
}

/// `DBusMessageIter` (`dbus-message.h`, libdbus 1.14: `pad2` is a
/// pointer, as since 1.12): storage libdbus fills in, no public field.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct DBusMessageIter {
    dummy1: *mut c_void,
    dummy2: *mut c_void,
    dummy3: u32,
    dummy4: c_int,
    dummy5: c_int,
    dummy6: c_int,
    dummy7: c_int,
    dummy8: c_int,
    dummy9: c_int,
    dummy10: c_int,
    dummy11: c_int,
    pad1: c_int,
    pad2: *mut c_void,
    pad3: *mut c_void,
}

/// `DBusHandlerResult` (`dbus-shared.h`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DBusHandlerResult {
    /// `DBUS_HANDLER_RESULT_HANDLED`.
    Handled = 0,
    /// `DBUS_HANDLER_RESULT_NOT_YET_HANDLED`.
    NotYetHandled = 1,
    /// `DBUS_HANDLER_RESULT_NEED_MEMORY`.
    NeedMemory = 2,
}

/// `DBusObjectPathMessageFunction`.
pub(super) type DBusObjectPathMessageFunction = Option<
    extern "C" fn(
        conn: *mut DBusConnection,
        msg: *mut DBusMessage,
        user_data: *mut c_void,
    ) -> DBusHandlerResult,
>;

/// `DBusObjectPathVTable` (`dbus-connection.h`).
#[repr(C)]
pub(super) struct DBusObjectPathVTable {
    /// `DBusObjectPathUnregisterFunction`.
    pub(super) unregister_function:
        Option<extern "C" fn(conn: *mut DBusConnection, user_data: *mut c_void)>,
    /// Called for each message to the path.
    pub(super) message_function: DBusObjectPathMessageFunction,
    /// `dbus_internal_pad1` to `4`: reserved, NULL.
    pub(super) dbus_internal_pad: [Option<extern "C" fn(*mut c_void)>; 4],
}

/// `DBusAddWatchFunction`.
pub(super) type DBusAddWatchFunction =
    Option<extern "C" fn(watch: *mut DBusWatch, data: *mut c_void) -> DBusBool>;
/// `DBusRemoveWatchFunction` and `DBusWatchToggledFunction` (the same
/// signature).
pub(super) type DBusWatchFunction = Option<extern "C" fn(watch: *mut DBusWatch, data: *mut c_void)>;
/// `DBusFreeFunction` (`dbus-memory.h`).
pub(super) type DBusFreeFunction = Option<extern "C" fn(memory: *mut c_void)>;
/// `DBusNewConnectionFunction` (`dbus-server.h`): a connection the
/// server accepted.
pub(super) type DBusNewConnectionFunction =
    Option<extern "C" fn(server: *mut DBusServer, conn: *mut DBusConnection, data: *mut c_void)>;

/// `DBUS_TYPE_INVALID` (`dbus-protocol.h`).
pub(super) const DBUS_TYPE_INVALID: c_int = 0;
/// `DBUS_TYPE_BOOLEAN`.
pub(super) const DBUS_TYPE_BOOLEAN: c_int = b'b' as c_int;
/// `DBUS_TYPE_INT32`.
pub(super) const DBUS_TYPE_INT32: c_int = b'i' as c_int;
/// `DBUS_TYPE_STRING`.
pub(super) const DBUS_TYPE_STRING: c_int = b's' as c_int;
/// `DBUS_TYPE_ARRAY`.
pub(super) const DBUS_TYPE_ARRAY: c_int = b'a' as c_int;
/// `DBUS_NAME_FLAG_DO_NOT_QUEUE` (`dbus-shared.h`).
pub(super) const DBUS_NAME_FLAG_DO_NOT_QUEUE: c_uint = 0x4;
/// `DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER` (`dbus-shared.h`).
pub(super) const DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER: c_int = 1;
/// `DBUS_WATCH_READABLE` (`dbus-connection.h`, `DBusWatchFlags`).
pub(super) const DBUS_WATCH_READABLE: c_uint = 1 << 0;
/// `DBUS_WATCH_ERROR`.
pub(super) const DBUS_WATCH_ERROR: c_uint = 1 << 2;
/// `DBUS_WATCH_HANGUP`.
pub(super) const DBUS_WATCH_HANGUP: c_uint = 1 << 3;

c_api! {
    /// The libdbus functions this module calls, resolved at load.
    pub(crate) struct Api {
        /// `dbus-threads.h`.
        fn dbus_threads_init_default() -> DBusBool;
        /// `dbus-errors.h`.
        fn dbus_error_init(error: *mut DBusError);
        /// `dbus-errors.h`.
        fn dbus_error_free(error: *mut DBusError);
        /// `dbus-memory.h`.
        fn dbus_free(memory: *mut c_void);
        /// `dbus-bus.h`: Hello.
        fn dbus_bus_register(conn: *mut DBusConnection, error: *mut DBusError) -> DBusBool;
        /// `dbus-bus.h`.
        fn dbus_bus_request_name(
            conn: *mut DBusConnection,
            name: *const c_char,
            flags: c_uint,
            error: *mut DBusError,
        ) -> c_int;
        /// `dbus-connection.h`.
        fn dbus_connection_open_private(
            address: *const c_char,
            error: *mut DBusError,
        ) -> *mut DBusConnection;
        /// `dbus-connection.h`.
        fn dbus_connection_ref(conn: *mut DBusConnection) -> *mut DBusConnection;
        /// `dbus-connection.h`.
        fn dbus_connection_unref(conn: *mut DBusConnection);
        /// `dbus-connection.h`.
        fn dbus_connection_close(conn: *mut DBusConnection);
        /// `dbus-connection.h`.
        fn dbus_connection_set_exit_on_disconnect(conn: *mut DBusConnection, exit: DBusBool);
        /// `dbus-connection.h`.
        fn dbus_connection_send_with_reply_and_block(
            conn: *mut DBusConnection,
            message: *mut DBusMessage,
            timeout_milliseconds: c_int,
            error: *mut DBusError,
        ) -> *mut DBusMessage;
        /// `dbus-connection.h`.
        fn dbus_connection_send(
            conn: *mut DBusConnection,
            message: *mut DBusMessage,
            client_serial: *mut u32,
        ) -> DBusBool;
        /// `dbus-connection.h`.
        fn dbus_connection_read_write_dispatch(
            conn: *mut DBusConnection,
            timeout_milliseconds: c_int,
        ) -> DBusBool;
        /// `dbus-connection.h`.
        fn dbus_connection_try_register_object_path(
            conn: *mut DBusConnection,
            path: *const c_char,
            vtable: *const DBusObjectPathVTable,
            user_data: *mut c_void,
            error: *mut DBusError,
        ) -> DBusBool;
        /// `dbus-connection.h`.
        fn dbus_watch_get_unix_fd(watch: *mut DBusWatch) -> c_int;
        /// `dbus-connection.h`.
        fn dbus_watch_get_flags(watch: *mut DBusWatch) -> c_uint;
        /// `dbus-connection.h`.
        fn dbus_watch_get_enabled(watch: *mut DBusWatch) -> DBusBool;
        /// `dbus-connection.h`.
        fn dbus_watch_handle(watch: *mut DBusWatch, flags: c_uint) -> DBusBool;
        /// `dbus-server.h`: listens on a D-Bus address (`unix:path=...`).
        fn dbus_server_listen(address: *const c_char, error: *mut DBusError) -> *mut DBusServer;
        /// `dbus-server.h`: stops listening (the socket file is removed).
        fn dbus_server_disconnect(server: *mut DBusServer);
        /// `dbus-server.h`.
        fn dbus_server_unref(server: *mut DBusServer);
        /// `dbus-server.h`: the callback for each accepted connection.
        fn dbus_server_set_new_connection_function(
            server: *mut DBusServer,
            function: DBusNewConnectionFunction,
            data: *mut c_void,
            free_data_function: DBusFreeFunction,
        );
        /// `dbus-server.h`: how the listening socket is watched (the
        /// server has no blocking accept of its own).
        fn dbus_server_set_watch_functions(
            server: *mut DBusServer,
            add_function: DBusAddWatchFunction,
            remove_function: DBusWatchFunction,
            toggled_function: DBusWatchFunction,
            data: *mut c_void,
            free_data_function: DBusFreeFunction,
        ) -> DBusBool;
        /// `dbus-message.h`.
        fn dbus_message_new_method_call(
            bus_name: *const c_char,
            path: *const c_char,
            iface: *const c_char,
            method: *const c_char,
        ) -> *mut DBusMessage;
        /// `dbus-message.h`.
        fn dbus_message_new_method_return(method_call: *mut DBusMessage) -> *mut DBusMessage;
        /// `dbus-message.h`.
        fn dbus_message_new_error(
            reply_to: *mut DBusMessage,
            error_name: *const c_char,
            error_message: *const c_char,
        ) -> *mut DBusMessage;
        /// `dbus-message.h`.
        fn dbus_message_ref(message: *mut DBusMessage) -> *mut DBusMessage;
        /// `dbus-message.h`.
        fn dbus_message_unref(message: *mut DBusMessage);
        /// `dbus-message.h`.
        fn dbus_message_is_method_call(
            message: *mut DBusMessage,
            iface: *const c_char,
            method: *const c_char,
        ) -> DBusBool;
        /// `dbus-message.h`.
        fn dbus_message_get_serial(message: *mut DBusMessage) -> u32;
        /// `dbus-message.h`.
        fn dbus_message_set_serial(message: *mut DBusMessage, serial: u32);
        /// `dbus-message.h`.
        fn dbus_message_get_reply_serial(message: *mut DBusMessage) -> u32;
        /// `dbus-message.h`.
        fn dbus_message_marshal(
            msg: *mut DBusMessage,
            marshalled_data_p: *mut *mut c_char,
            len_p: *mut c_int,
        ) -> DBusBool;
        /// `dbus-message.h`.
        fn dbus_message_demarshal(
            str: *const c_char,
            len: c_int,
            error: *mut DBusError,
        ) -> *mut DBusMessage;
        /// `dbus-message.h`.
        fn dbus_message_iter_init(message: *mut DBusMessage, iter: *mut DBusMessageIter) -> DBusBool;
        /// `dbus-message.h`.
        fn dbus_message_iter_init_append(message: *mut DBusMessage, iter: *mut DBusMessageIter);
        /// `dbus-message.h`.
        fn dbus_message_iter_next(iter: *mut DBusMessageIter) -> DBusBool;
        /// `dbus-message.h`.
        fn dbus_message_iter_get_arg_type(iter: *mut DBusMessageIter) -> c_int;
        /// `dbus-message.h`.
        fn dbus_message_iter_get_element_type(iter: *mut DBusMessageIter) -> c_int;
        /// `dbus-message.h`.
        fn dbus_message_iter_recurse(iter: *mut DBusMessageIter, sub: *mut DBusMessageIter);
        /// `dbus-message.h`.
        fn dbus_message_iter_get_basic(iter: *mut DBusMessageIter, value: *mut c_void);
        /// `dbus-message.h`.
        fn dbus_message_iter_get_fixed_array(
            iter: *mut DBusMessageIter,
            value: *mut c_void,
            n_elements: *mut c_int,
        );
        /// `dbus-message.h`.
        fn dbus_message_iter_append_basic(
            iter: *mut DBusMessageIter,
            ty: c_int,
            value: *const c_void,
        ) -> DBusBool;
        /// `dbus-message.h`.
        fn dbus_message_iter_append_fixed_array(
            iter: *mut DBusMessageIter,
            element_type: c_int,
            value: *const c_void,
            n_elements: c_int,
        ) -> DBusBool;
        /// `dbus-message.h`.
        fn dbus_message_iter_open_container(
            iter: *mut DBusMessageIter,
            ty: c_int,
            contained_signature: *const c_char,
            sub: *mut DBusMessageIter,
        ) -> DBusBool;
        /// `dbus-message.h`.
        fn dbus_message_iter_close_container(
            iter: *mut DBusMessageIter,
            sub: *mut DBusMessageIter,
        ) -> DBusBool;
    }
}

/// The library and its functions, kept for the life of the process.
struct Loaded {
    /// Never closed: the function pointers in `api` point into it.
    _lib: Library,
    api: Api,
}

/// libdbus, loaded on first use and once per process, with every
/// function resolved and `dbus_threads_init_default` run (libdbus asks
/// for it before any other use from several threads: a service serves
/// each peer on its own thread); or why it cannot be, the same error at
/// every call.
pub(super) fn api() -> Result<&'static Api, LoadError> {
    static LOADED: OnceLock<Result<Loaded, LoadError>> = OnceLock::new();
    match LOADED.get_or_init(load) {
        Ok(l) => Ok(&l.api),
        Err(e) => Err(e.clone()),
    }
}

fn load() -> Result<Loaded, LoadError> {
    let lib = LIBDBUS.open()?;
    let api = Api::resolve(&lib).map_err(|e| LIBDBUS.error(e))?;
    // SAFETY: no arguments; the first call into libdbus, made once per
    // process (the OnceLock) before any other (every call goes through
    // `api`).
    if unsafe { api.dbus_threads_init_default() } == 0 {
        return Err(LIBDBUS.error("dbus_threads_init_default failed (out of memory)"));
    }
    Ok(Loaded { _lib: lib, api })
}

#[cfg(test)]
mod tests {
    use std::mem::{align_of, offset_of, size_of};

    use super::*;

    /// The structs libdbus reads and writes have its headers' layout, as
    /// gcc lays them out on x86_64 and every other LP64 target (read with
    /// a C program printing sizeof, _Alignof and offsetof of each, built
    /// against libdbus 1.14.10's dbus-errors.h, dbus-message.h and
    /// dbus-connection.h).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_structs_have_the_c_headers_layout() {
        assert_eq!((size_of::<DBusError>(), align_of::<DBusError>()), (32, 8));
        assert_eq!(offset_of!(DBusError, message), 8);
        assert_eq!(offset_of!(DBusError, dummy), 16);
        assert_eq!(offset_of!(DBusError, padding1), 24);
        let iter = (size_of::<DBusMessageIter>(), align_of::<DBusMessageIter>());
        assert_eq!(iter, (72, 8));
        assert_eq!(offset_of!(DBusMessageIter, dummy3), 16);
        assert_eq!(offset_of!(DBusMessageIter, pad1), 52);
        assert_eq!(offset_of!(DBusMessageIter, pad2), 56);
        assert_eq!(offset_of!(DBusMessageIter, pad3), 64);
        let vt = (
            size_of::<DBusObjectPathVTable>(),
            align_of::<DBusObjectPathVTable>(),
        );
        assert_eq!(vt, (48, 8));
        assert_eq!(offset_of!(DBusObjectPathVTable, message_function), 8);
        assert_eq!(size_of::<DBusHandlerResult>(), size_of::<c_int>());
    }

    #[test]
    fn libdbus_loads_with_every_function() {
        let _ = super::super::loaded_or_skip();
    }
}
