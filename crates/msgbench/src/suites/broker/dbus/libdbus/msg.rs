//! libdbus messages and errors owned in Rust (a message unreferenced, an
//! error freed, on drop), and the two bodies read and written with
//! libdbus's message iterators: `i` for the call, `ai` for the reply.
//!
//! libdbus aborts the process when a call's preconditions fail (a wrong
//! iterator type, a locked message changed): every such precondition is
//! checked here before the call, so bad input from a peer is an `Err`.

use std::ffi::{CStr, CString};
use std::mem::MaybeUninit;
use std::os::raw::{c_char, c_int, c_void};
use std::ptr::{self, NonNull};

use anyhow::{anyhow, bail, Result};

use super::ffi::{
    Api, DBusError, DBusMessage, DBusMessageIter, DBUS_TYPE_ARRAY, DBUS_TYPE_BOOLEAN,
    DBUS_TYPE_INT32, DBUS_TYPE_INVALID, DBUS_TYPE_STRING,
};
use super::{INTERFACE, METHOD, PATH};

/// A `DBusError`, initialised, freed on drop.
pub(super) struct Error {
    api: &'static Api,
    e: DBusError,
}

impl Error {
    /// An unset error.
    pub(super) fn new(api: &'static Api) -> Error {
        let mut e = DBusError {
            name: ptr::null(),
            message: ptr::null(),
            dummy: 0,
            padding1: ptr::null_mut(),
        };
        // SAFETY: `e` is a valid DBusError to initialise; libdbus keeps no
        // pointer to it, so moving it afterwards is fine.
        unsafe { api.dbus_error_init(&mut e) };
        Error { api, e }
    }

    /// For a libdbus call to fill in.
    pub(super) fn as_ptr(&mut self) -> *mut DBusError {
        &mut self.e
    }

    /// `name: message`, or `what` failing for want of memory when libdbus
    /// set no error.
    pub(super) fn text(&self, what: &str) -> String {
        let s = |p: *const c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: a set DBusError's name and message are
                // NUL-terminated strings owned by it until freed.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        if self.e.name.is_null() {
            format!("{what}: libdbus failed (out of memory)")
        } else {
            format!("{what}: {}: {}", s(self.e.name), s(self.e.message))
        }
    }
}

impl Drop for Error {
    fn drop(&mut self) {
        // SAFETY: initialised in `new`; freeing an unset error is allowed.
        unsafe { self.api.dbus_error_free(&mut self.e) };
    }
}

/// A message we hold a reference to.
pub(super) struct Msg {
    api: &'static Api,
    p: NonNull<DBusMessage>,
}

impl Msg {
    /// Takes over a reference libdbus returned (None for NULL).
    pub(super) fn own(api: &'static Api, p: *mut DBusMessage) -> Option<Msg> {
        NonNull::new(p).map(|p| Msg { api, p })
    }

    /// Takes a new reference to a message libdbus lends us (a handler's
    /// argument), so it can be held like an owned one.
    pub(super) fn from_borrowed(api: &'static Api, p: *mut DBusMessage) -> Option<Msg> {
        let p = NonNull::new(p)?;
        // SAFETY: `p` is a live message lent to us for this call.
        unsafe { api.dbus_message_ref(p.as_ptr()) };
        Some(Msg { api, p })
    }

    /// The raw pointer, for libdbus calls.
    pub(super) fn as_ptr(&self) -> *mut DBusMessage {
        self.p.as_ptr()
    }

    /// A `GetInteger` call to `dest` (a bus name; None peer to peer).
    pub(super) fn get_integer_call(api: &'static Api, dest: Option<&CStr>) -> Result<Msg> {
        Msg::call(api, dest, PATH, INTERFACE, METHOD)
    }

    /// A method call.
    pub(super) fn call(
        api: &'static Api,
        dest: Option<&CStr>,
        path: &CStr,
        iface: &CStr,
        member: &CStr,
    ) -> Result<Msg> {
        // SAFETY: every pointer is a NUL-terminated string that outlives
        // the call (libdbus copies them) or NULL for no destination.
        let p = unsafe {
            api.dbus_message_new_method_call(
                dest.map_or(ptr::null(), CStr::as_ptr),
                path.as_ptr(),
                iface.as_ptr(),
                member.as_ptr(),
            )
        };
        Msg::own(api, p).ok_or_else(|| anyhow!("dbus_message_new_method_call failed"))
    }

    /// The method return for `call` (which must have a serial: libdbus
    /// aborts on a reply to serial 0).
    pub(super) fn method_return(call: &Msg) -> Result<Msg> {
        if call.serial() == 0 {
            bail!("a reply to a call without a serial");
        }
        // SAFETY: `call` is a live message.
        let p = unsafe { call.api.dbus_message_new_method_return(call.as_ptr()) };
        Msg::own(call.api, p).ok_or_else(|| anyhow!("dbus_message_new_method_return failed"))
    }

    /// An error reply `name` to `call` (with a serial, as above).
    pub(super) fn error(call: &Msg, name: &CStr, text: &str) -> Result<Msg> {
        if call.serial() == 0 {
            bail!("a reply to a call without a serial");
        }
        let text = CString::new(text.replace('\0', " "))?;
        // SAFETY: `call` is live; the strings are NUL-terminated and
        // copied by libdbus.
        let p = unsafe {
            call.api
                .dbus_message_new_error(call.as_ptr(), name.as_ptr(), text.as_ptr())
        };
        Msg::own(call.api, p).ok_or_else(|| anyhow!("dbus_message_new_error failed"))
    }

    /// Its serial (0 until sent or set).
    pub(super) fn serial(&self) -> u32 {
        // SAFETY: a live message.
        unsafe { self.api.dbus_message_get_serial(self.as_ptr()) }
    }

    /// The serial of the call it answers (0 for a call).
    pub(super) fn reply_serial(&self) -> u32 {
        // SAFETY: a live message.
        unsafe { self.api.dbus_message_get_reply_serial(self.as_ptr()) }
    }

    /// Appends one basic argument of D-Bus type `ty` whose value is at
    /// `value` (for a string: a pointer to the `char *`).
    fn append_basic(&mut self, ty: c_int, value: *const c_void) -> Result<()> {
        let mut it = MaybeUninit::<DBusMessageIter>::zeroed();
        // SAFETY: `it` is storage for an iterator that init_append fills
        // in; `value` points to a value of type `ty` for the call's length.
        let ok = unsafe {
            self.api
                .dbus_message_iter_init_append(self.as_ptr(), it.as_mut_ptr());
            self.api
                .dbus_message_iter_append_basic(it.as_mut_ptr(), ty, value)
        };
        if ok == 0 {
            bail!("dbus_message_iter_append_basic: out of memory");
        }
        Ok(())
    }

    /// Appends an `i`.
    pub(super) fn append_i32(&mut self, v: i32) -> Result<()> {
        self.append_basic(DBUS_TYPE_INT32, (&v as *const i32).cast())
    }

    /// Appends an `s`.
    pub(super) fn append_str(&mut self, s: &CStr) -> Result<()> {
        let p: *const c_char = s.as_ptr();
        self.append_basic(DBUS_TYPE_STRING, (&p as *const *const c_char).cast())
    }

    /// Appends an `ai`, as one fixed array (libdbus copies the block).
    pub(super) fn append_ints(&mut self, v: &[i32]) -> Result<()> {
        let n =
            c_int::try_from(v.len()).map_err(|_| anyhow!("{} integers are too many", v.len()))?;
        let mut it = MaybeUninit::<DBusMessageIter>::zeroed();
        let mut sub = MaybeUninit::<DBusMessageIter>::zeroed();
        let data: *const i32 = v.as_ptr();
        // SAFETY: the iterators are storage libdbus fills in (init_append,
        // open_container) before use; the array's address is passed as
        // libdbus asks (a pointer to the pointer), `n` elements long.
        let ok = unsafe {
            self.api
                .dbus_message_iter_init_append(self.as_ptr(), it.as_mut_ptr());
            self.api.dbus_message_iter_open_container(
                it.as_mut_ptr(),
                DBUS_TYPE_ARRAY,
                c"i".as_ptr(),
                sub.as_mut_ptr(),
            ) != 0
                && self.api.dbus_message_iter_append_fixed_array(
                    sub.as_mut_ptr(),
                    DBUS_TYPE_INT32,
                    (&data as *const *const i32).cast(),
                    n,
                ) != 0
                && self
                    .api
                    .dbus_message_iter_close_container(it.as_mut_ptr(), sub.as_mut_ptr())
                    != 0
        };
        if !ok {
            bail!("appending {n} integers: out of memory");
        }
        Ok(())
    }

    /// An iterator at its first argument, or an error naming `what` when
    /// it has none.
    fn first_arg(&self, what: &str) -> Result<DBusMessageIter> {
        let mut it = MaybeUninit::<DBusMessageIter>::zeroed();
        // SAFETY: init fills in the iterator for this live message; it
        // returns 0 (and leaves it unusable) only without arguments.
        if unsafe {
            self.api
                .dbus_message_iter_init(self.as_ptr(), it.as_mut_ptr())
        } == 0
        {
            bail!("{what} has no arguments");
        }
        // SAFETY: initialised by dbus_message_iter_init just above.
        Ok(unsafe { it.assume_init() })
    }

    /// Errors when the iterator has another argument after this one.
    fn no_more(&self, it: &mut DBusMessageIter, what: &str) -> Result<()> {
        // SAFETY: a valid iterator of a live message.
        if unsafe { self.api.dbus_message_iter_next(it) } != 0 {
            bail!("{what} has more than one argument");
        }
        Ok(())
    }

    /// Its single argument of the basic type `ty` (4 bytes: `i`, `b`).
    fn read_basic32(&self, ty: c_int, what: &str) -> Result<u32> {
        let mut it = self.first_arg(what)?;
        // SAFETY: a valid iterator of a live message.
        let got = unsafe { self.api.dbus_message_iter_get_arg_type(&mut it) };
        if got != ty {
            bail!(
                "{what}: argument of type `{}`, expected `{}`",
                type_char(got),
                type_char(ty)
            );
        }
        let mut v: u32 = 0;
        // SAFETY: the argument is of a 4-byte basic type (checked), which
        // get_basic copies into `v`.
        unsafe {
            self.api
                .dbus_message_iter_get_basic(&mut it, (&mut v as *mut u32).cast())
        };
        self.no_more(&mut it, what)?;
        Ok(v)
    }

    /// Its single `i` argument.
    pub(super) fn read_i32(&self, what: &str) -> Result<i32> {
        self.read_basic32(DBUS_TYPE_INT32, what).map(|v| v as i32)
    }

    /// Its single `b` argument.
    pub(super) fn read_bool(&self, what: &str) -> Result<bool> {
        self.read_basic32(DBUS_TYPE_BOOLEAN, what).map(|v| v != 0)
    }

    /// Calls `f` with its single `ai` argument, read in place (no copy).
    pub(super) fn with_ints<R>(&self, what: &str, f: impl FnOnce(&[i32]) -> R) -> Result<R> {
        let mut it = self.first_arg(what)?;
        // SAFETY: a valid iterator of a live message. libdbus aborts when
        // asked an element type of anything but an array: asked only then.
        let ty = unsafe { self.api.dbus_message_iter_get_arg_type(&mut it) };
        let elem = if ty == DBUS_TYPE_ARRAY {
            // SAFETY: as above, on an array.
            unsafe { self.api.dbus_message_iter_get_element_type(&mut it) }
        } else {
            DBUS_TYPE_INVALID
        };
        if ty != DBUS_TYPE_ARRAY || elem != DBUS_TYPE_INT32 {
            bail!(
                "{what}: argument of type `{}{}`, expected `ai`",
                type_char(ty),
                if ty == DBUS_TYPE_ARRAY {
                    type_char(elem)
                } else {
                    String::new()
                }
            );
        }
        let mut sub = MaybeUninit::<DBusMessageIter>::zeroed();
        let mut data: *const i32 = ptr::null();
        let mut n: c_int = 0;
        // SAFETY: recursing into an array (checked) fills in `sub`;
        // get_fixed_array then points `data` at its `n` elements inside the
        // message, valid while the message lives (longer than `f`'s call).
        unsafe {
            self.api
                .dbus_message_iter_recurse(&mut it, sub.as_mut_ptr());
            self.api.dbus_message_iter_get_fixed_array(
                sub.as_mut_ptr(),
                (&mut data as *mut *const i32).cast(),
                &mut n,
            );
        }
        self.no_more(&mut it, what)?;
        let n = usize::try_from(n).map_err(|_| anyhow!("{what}: array of {n} elements"))?;
        if n == 0 {
            return Ok(f(&[]));
        }
        if data.is_null() || !data.is_aligned() {
            bail!("{what}: libdbus gave an unaligned array");
        }
        // SAFETY: `data` is non-null, aligned for i32 (checked) and points
        // to `n` initialised i32 in the message, which outlives the slice.
        Ok(f(unsafe { std::slice::from_raw_parts(data, n) }))
    }
}

impl Drop for Msg {
    fn drop(&mut self) {
        // SAFETY: we hold one reference, given back here.
        unsafe { self.api.dbus_message_unref(self.as_ptr()) };
    }
}

/// A D-Bus type code as a signature character.
fn type_char(t: c_int) -> String {
    u8::try_from(t)
        .ok()
        .filter(|b| b.is_ascii_graphic())
        .map_or_else(|| format!("\\{t}"), |b| (b as char).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::broker::dbus::values;

    #[test]
    fn bodies_round_trip_and_bad_ones_are_named() {
        let Some(api) = super::super::loaded_or_skip() else {
            return;
        };
        let mut call = Msg::get_integer_call(api, None).unwrap();
        call.append_i32(7).unwrap();
        assert!(Msg::method_return(&call).is_err(), "no serial yet");
        // SAFETY: a live, unsent (unlocked) message.
        unsafe { call.api.dbus_message_set_serial(call.as_ptr(), 9) };
        assert_eq!(call.read_i32("the call").unwrap(), 7);
        assert!(call
            .with_ints("the call", |_| ())
            .unwrap_err()
            .to_string()
            .contains("`i`, expected `ai`"));
        let mut ret = Msg::method_return(&call).unwrap();
        ret.append_ints(&values(300)).unwrap();
        assert_eq!(
            ret.with_ints("the reply", <[i32]>::to_vec).unwrap(),
            values(300)
        );
        assert!(ret
            .read_i32("the reply")
            .unwrap_err()
            .to_string()
            .contains("type `a`"));
        let mut two = Msg::method_return(&call).unwrap();
        two.append_ints(&[]).unwrap();
        assert_eq!(two.with_ints("empty", <[i32]>::len).unwrap(), 0);
        two.append_i32(1).unwrap();
        assert!(two
            .with_ints("two", |_| ())
            .unwrap_err()
            .to_string()
            .contains("more than one"));
        let none = Msg::method_return(&call).unwrap();
        assert!(none
            .read_i32("none")
            .unwrap_err()
            .to_string()
            .contains("no arguments"));
    }
}
