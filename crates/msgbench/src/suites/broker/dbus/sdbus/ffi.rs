//! sd-bus's C interface as this module calls it, declared here from
//! systemd 252's headers (`/usr/include/systemd/sd-bus.h`,
//! `sd-bus-vtable.h`, `sd-id128.h`; compared with libsystemd-sys 0.10's
//! bindings) and loaded at run time ([`api`]): the types the module uses
//! and the functions it calls, each resolved when libsystemd.so.0 is
//! loaded, once per process.

use std::os::raw::{c_char, c_int, c_uint, c_void};
use std::sync::OnceLock;

use libloading::os::unix::Library;

use crate::suites::broker::dbus::dynlib::{c_api, symbol, LoadError, SharedLib};

/// libsystemd, from Debian's libsystemd0.
pub(super) const LIBSYSTEMD: SharedLib = SharedLib {
    name: "sd-bus",
    soname: "libsystemd.so.0",
    package: "libsystemd0",
    test_env: "MSGBENCH_TEST_LIBSYSTEMD",
};

/// `sd_bus`: opaque, only ever behind a pointer.
#[repr(C)]
pub(super) struct SdBus {
    _private: [u8; 0],
}

/// `sd_bus_message`: opaque.
#[repr(C)]
pub(super) struct SdBusMessage {
    _private: [u8; 0],
}

/// `sd_bus_slot`: opaque.
#[repr(C)]
pub(super) struct SdBusSlot {
    _private: [u8; 0],
}

/// `sd_bus_error` (`sd-bus.h`).
#[repr(C)]
pub(super) struct SdBusError {
    /// The error's name, NULL when unset.
    pub(super) name: *const c_char,
    /// Its message.
    pub(super) message: *const c_char,
    /// `_need_free`.
    pub(super) need_free: c_int,
}

/// `sd_id128_t` (`sd-id128.h`): a union of 16 bytes and two 64-bit words.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) union SdId128 {
    /// The bytes.
    pub(super) bytes: [u8; 16],
    /// The same, as words (the union's alignment).
    pub(super) qwords: [u64; 2],
}

/// `sd_bus_message_handler_t`.
pub(super) type SdBusMessageHandler = Option<
    unsafe extern "C" fn(
        m: *mut SdBusMessage,
        userdata: *mut c_void,
        ret_error: *mut SdBusError,
    ) -> c_int,
>;

/// The `start` member of `sd_bus_vtable`'s union.
#[repr(C)]
#[derive(Clone, Copy)]
struct VtableStart {
    element_size: usize,
    features: u64,
    vtable_format_reference: *const c_uint,
}

/// The `method` member of `sd_bus_vtable`'s union.
#[repr(C)]
#[derive(Clone, Copy)]
struct VtableMethod {
    member: *const c_char,
    signature: *const c_char,
    result: *const c_char,
    handler: SdBusMessageHandler,
    offset: usize,
    names: *const c_char,
}

/// `sd_bus_vtable`'s union `x`, of which this module writes `start`,
/// `method` and `end` (`_reserved`, zero: here all of it zero).
#[repr(C)]
#[derive(Clone, Copy)]
union VtableX {
    start: VtableStart,
    method: VtableMethod,
    zero: [usize; 6],
}

/// `sd_bus_vtable` (`sd-bus-vtable.h`, the layout since systemd 242):
/// `uint8_t type:8` and `uint64_t flags:56` in one 64-bit word, then the
/// union. Entries are made as the header's macros make them.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct SdBusVtable {
    type_and_flags: u64,
    x: VtableX,
}

/// `_SD_BUS_VTABLE_START`, `_SD_BUS_VTABLE_END`, `_SD_BUS_VTABLE_METHOD`.
const VTABLE_START: u8 = b'<';
const VTABLE_END: u8 = b'>';
const VTABLE_METHOD: u8 = b'M';
/// `_SD_BUS_VTABLE_PARAM_NAMES`: the method entries have `names`.
const VTABLE_PARAM_NAMES: u64 = 1;

impl SdBusVtable {
    /// An entry of type `ty` with no flags and the union `x` (the
    /// bitfields as gcc packs them: `type` the low byte on little-endian,
    /// the high byte on big-endian).
    fn entry(ty: u8, x: VtableX) -> SdBusVtable {
        let type_and_flags = if cfg!(target_endian = "little") {
            u64::from(ty)
        } else {
            u64::from(ty) << 56
        };
        SdBusVtable { type_and_flags, x }
    }

    /// `SD_BUS_VTABLE_START(0)`: `format` is the library's
    /// `sd_bus_object_vtable_format` ([`Api::vtable_format`]).
    pub(super) fn start(format: &'static c_uint) -> SdBusVtable {
        // The rest of the union zero, as in a C initialiser of static data.
        let mut x = VtableX { zero: [0; 6] };
        x.start = VtableStart {
            element_size: std::mem::size_of::<SdBusVtable>(),
            features: VTABLE_PARAM_NAMES,
            vtable_format_reference: format,
        };
        SdBusVtable::entry(VTABLE_START, x)
    }

    /// `SD_BUS_METHOD(member, signature, result, handler, 0)`: no
    /// parameter names, no offset, no flags.
    pub(super) fn method(
        member: &'static std::ffi::CStr,
        signature: &'static std::ffi::CStr,
        result: &'static std::ffi::CStr,
        handler: SdBusMessageHandler,
    ) -> SdBusVtable {
        SdBusVtable::entry(
            VTABLE_METHOD,
            VtableX {
                method: VtableMethod {
                    member: member.as_ptr(),
                    signature: signature.as_ptr(),
                    result: result.as_ptr(),
                    handler,
                    offset: 0,
                    names: c"".as_ptr(),
                },
            },
        )
    }

    /// `SD_BUS_VTABLE_END`.
    pub(super) fn end() -> SdBusVtable {
        SdBusVtable::entry(VTABLE_END, VtableX { zero: [0; 6] })
    }
}

c_api! {
    /// The sd-bus functions this module calls, resolved at load.
    pub(crate) struct Functions {
        /// `sd-id128.h`.
        fn sd_id128_randomize(ret: *mut SdId128) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_new(ret: *mut *mut SdBus) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_set_address(bus: *mut SdBus, address: *const c_char) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_set_bus_client(bus: *mut SdBus, b: c_int) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_set_fd(bus: *mut SdBus, input_fd: c_int, output_fd: c_int) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_set_server(bus: *mut SdBus, b: c_int, bus_id: SdId128) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_start(bus: *mut SdBus) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_close(bus: *mut SdBus);
        /// `sd-bus.h`.
        fn sd_bus_unref(bus: *mut SdBus) -> *mut SdBus;
        /// `sd-bus.h`.
        fn sd_bus_call(
            bus: *mut SdBus,
            m: *mut SdBusMessage,
            usec: u64,
            ret_error: *mut SdBusError,
            reply: *mut *mut SdBusMessage,
        ) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_send(bus: *mut SdBus, m: *mut SdBusMessage, cookie: *mut u64) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_process(bus: *mut SdBus, r: *mut *mut SdBusMessage) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_wait(bus: *mut SdBus, timeout_usec: u64) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_request_name(bus: *mut SdBus, name: *const c_char, flags: u64) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_add_object_vtable(
            bus: *mut SdBus,
            slot: *mut *mut SdBusSlot,
            path: *const c_char,
            interface: *const c_char,
            vtable: *const SdBusVtable,
            userdata: *mut c_void,
        ) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_new_method_call(
            bus: *mut SdBus,
            m: *mut *mut SdBusMessage,
            destination: *const c_char,
            path: *const c_char,
            interface: *const c_char,
            member: *const c_char,
        ) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_new_method_return(
            call: *mut SdBusMessage,
            m: *mut *mut SdBusMessage,
        ) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_unref(m: *mut SdBusMessage) -> *mut SdBusMessage;
        /// `sd-bus.h`.
        fn sd_bus_message_seal(m: *mut SdBusMessage, cookie: u64, timeout_usec: u64) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_rewind(m: *mut SdBusMessage, complete: c_int) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_get_cookie(m: *mut SdBusMessage, cookie: *mut u64) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_get_reply_cookie(m: *mut SdBusMessage, cookie: *mut u64) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_has_signature(m: *mut SdBusMessage, signature: *const c_char) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_append_basic(m: *mut SdBusMessage, ty: c_char, p: *const c_void) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_append_array(
            m: *mut SdBusMessage,
            ty: c_char,
            ptr: *const c_void,
            size: usize,
        ) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_read_basic(m: *mut SdBusMessage, ty: c_char, p: *mut c_void) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_message_read_array(
            m: *mut SdBusMessage,
            ty: c_char,
            ptr: *mut *const c_void,
            size: *mut usize,
        ) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_error_set_const(
            e: *mut SdBusError,
            name: *const c_char,
            message: *const c_char,
        ) -> c_int;
        /// `sd-bus.h`.
        fn sd_bus_error_free(e: *mut SdBusError);
    }
}

/// libsystemd's sd-bus: its functions, and the one datum the suite needs,
/// `sd_bus_object_vtable_format` (`sd-bus-vtable.h`: every vtable's start
/// entry points at it).
pub(crate) struct Api {
    /// The functions.
    pub(super) f: Functions,
    /// `sd_bus_object_vtable_format`.
    pub(super) vtable_format: &'static c_uint,
}

/// The library and what was resolved in it, kept for the life of the
/// process.
struct Loaded {
    /// Never closed: everything in `api` points into it.
    _lib: Library,
    api: Api,
}

/// libsystemd, loaded on first use and once per process with every
/// function resolved; or why it cannot be, the same error at every call.
pub(super) fn api() -> Result<&'static Api, LoadError> {
    static LOADED: OnceLock<Result<Loaded, LoadError>> = OnceLock::new();
    match LOADED.get_or_init(load) {
        Ok(l) => Ok(&l.api),
        Err(e) => Err(e.clone()),
    }
}

fn load() -> Result<Loaded, LoadError> {
    let lib = LIBSYSTEMD.open()?;
    let f = Functions::resolve(&lib).map_err(|e| LIBSYSTEMD.error(e))?;
    // SAFETY: the symbol is a `const unsigned` (sd-bus-vtable.h), so its
    // address is a `*const c_uint`.
    let format: *const c_uint = unsafe { symbol(&lib, "sd_bus_object_vtable_format\0") }
        .map_err(|e| LIBSYSTEMD.error(e))?;
    // SAFETY: a non-null address of a constant in the library, which is
    // never closed: valid, and never written, for the life of the process.
    let vtable_format = unsafe { format.as_ref() }
        .ok_or_else(|| LIBSYSTEMD.error("sd_bus_object_vtable_format is NULL"))?;
    Ok(Loaded {
        _lib: lib,
        api: Api { f, vtable_format },
    })
}

#[cfg(test)]
mod tests {
    use std::mem::{align_of, offset_of, size_of};

    use super::*;

    /// The structs sd-bus reads and writes have its headers' layout, as
    /// gcc lays them out on x86_64 and every other LP64 target (read with
    /// a C program printing sizeof, _Alignof and offsetof of each, built
    /// against systemd 252's sd-bus.h, sd-bus-vtable.h and sd-id128.h).
    #[test]
    #[cfg(target_pointer_width = "64")]
    fn the_structs_have_the_c_headers_layout() {
        assert_eq!((size_of::<SdBusError>(), align_of::<SdBusError>()), (24, 8));
        assert_eq!(offset_of!(SdBusError, message), 8);
        assert_eq!(offset_of!(SdBusError, need_free), 16);
        assert_eq!((size_of::<SdId128>(), align_of::<SdId128>()), (16, 8));
        assert_eq!(
            (size_of::<SdBusVtable>(), align_of::<SdBusVtable>()),
            (56, 8)
        );
        assert_eq!(offset_of!(SdBusVtable, x), 8);
        assert_eq!(offset_of!(VtableStart, features), 16 - 8);
        assert_eq!(offset_of!(VtableStart, vtable_format_reference), 24 - 8);
        assert_eq!(offset_of!(VtableMethod, handler), 32 - 8);
        assert_eq!(offset_of!(VtableMethod, offset), 40 - 8);
        assert_eq!(offset_of!(VtableMethod, names), 48 - 8);
    }

    /// The bitfields as gcc packs them: `SD_BUS_METHOD(...)`'s first
    /// eight bytes are `4d 00 00 00 00 00 00 00` on x86_64 (the same C
    /// program, printing them).
    #[test]
    #[cfg(target_endian = "little")]
    fn a_method_entry_begins_as_the_c_macro_makes_it() {
        let m = SdBusVtable::method(c"M", c"i", c"ai", None);
        assert_eq!(m.type_and_flags.to_ne_bytes(), [b'M', 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(SdBusVtable::end().type_and_flags, u64::from(b'>'));
    }

    /// The runtime library is on nearly every Linux machine; without it
    /// this skips, but not under CI.
    #[test]
    fn libsystemd_loads_with_every_function() {
        match api() {
            Ok(a) => assert!(*a.vtable_format > 0),
            Err(e) if std::env::var_os("CI").is_some() => panic!("{e} (CI is set: not skipping)"),
            Err(e) => eprintln!("skipped: {e}"),
        }
    }
}
