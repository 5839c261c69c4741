//! `GetInteger` on systemd's sd-bus (libsystemd), written as its users
//! write it: a client calling with `sd_bus_call`, a service answering
//! from an object vtable driven by `sd_bus_process` and `sd_bus_wait`,
//! peer to peer by `sd_bus_set_server` on a socket we accepted (sd-bus
//! has no listening side of its own).
//!
//! libsystemd.so.0 is loaded at run time, once per process, by `ffi`
//! (the C declarations, from sd-bus's headers); a machine without it
//! skips sd-bus's rows, naming the package (libsystemd0).
//!
//! The parts: `Bus`, `Message` and `BusError` own sd-bus objects
//! (closed, unreferenced, freed on drop); `client`, `service` and
//! `marshal` (the library's marshalling timed alone).

mod client;
mod ffi;
mod marshal;
mod service;

use std::ffi::{CStr, CString};
use std::os::fd::{FromRawFd, IntoRawFd, OwnedFd};
use std::os::raw::c_int;
use std::ptr::{self, NonNull};

use anyhow::{anyhow, bail, Result};

pub use client::Client;
pub use marshal::marshal_cost;
pub use service::serve;

use self::ffi::{Api, SdBus, SdBusError, SdBusMessage, SdId128};
use super::dynlib::LoadError;

/// The object path, interface and method, as C strings (the same as
/// [`super::OBJECT_PATH`], [`super::INTERFACE`], [`super::METHOD`]).
const PATH: &CStr = c"/org/msgbench/Service";
const INTERFACE: &CStr = c"org.msgbench.Service";
const METHOD: &CStr = c"GetInteger";
/// The error a service answers a bad `numInts` with.
const INVALID_ARGS: &CStr = c"org.freedesktop.DBus.Error.InvalidArgs";

/// Ok when libsystemd is loaded here (on first use), with every function
/// the module calls; else the one line naming its package.
pub fn available() -> Result<(), LoadError> {
    ffi::api().map(|_| ())
}

/// The loaded library, for every entry point of this module.
fn api() -> Result<&'static Api> {
    Ok(ffi::api()?)
}

/// The loaded library for a unit test, or None after printing why it is
/// skipped (a failure under CI).
#[cfg(test)]
fn loaded_or_skip() -> Option<&'static Api> {
    match ffi::api() {
        Ok(api) => Some(api),
        Err(e) if std::env::var_os("CI").is_some() => panic!("{e} (CI is set: not skipping)"),
        Err(e) => {
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// A negative errno from sd-bus as an error naming `what`.
fn errno(what: &str, r: c_int) -> anyhow::Error {
    anyhow!("{what}: {}", std::io::Error::from_raw_os_error(-r))
}

/// `r` when it is not an error (sd-bus returns a negative errno).
fn ok(what: &str, r: c_int) -> Result<c_int> {
    if r < 0 {
        Err(errno(what, r))
    } else {
        Ok(r)
    }
}

/// An `sd_bus_error`, freed on drop.
struct BusError {
    api: &'static Api,
    e: SdBusError,
}

impl BusError {
    /// `SD_BUS_ERROR_NULL`.
    fn new(api: &'static Api) -> BusError {
        BusError {
            api,
            e: SdBusError {
                name: ptr::null(),
                message: ptr::null(),
                need_free: 0,
            },
        }
    }

    /// `name: message` when set, else the errno `r`, naming `what`.
    fn text(&self, what: &str, r: c_int) -> String {
        if self.e.name.is_null() {
            return errno(what, r).to_string();
        }
        let s = |p: *const std::os::raw::c_char| {
            if p.is_null() {
                String::new()
            } else {
                // SAFETY: a set sd_bus_error's strings are NUL-terminated
                // and live until it is freed.
                unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
            }
        };
        format!("{what}: {}: {}", s(self.e.name), s(self.e.message))
    }
}

impl Drop for BusError {
    fn drop(&mut self) {
        // SAFETY: initialised as SD_BUS_ERROR_NULL or set by sd-bus;
        // freeing either is allowed.
        unsafe { self.api.f.sd_bus_error_free(&mut self.e) };
    }
}

/// A message we hold a reference to.
struct Message {
    api: &'static Api,
    p: NonNull<SdBusMessage>,
}

impl Message {
    /// Takes over a reference sd-bus gave us (None for NULL).
    fn own(api: &'static Api, p: *mut SdBusMessage) -> Option<Message> {
        NonNull::new(p).map(|p| Message { api, p })
    }

    fn as_ptr(&self) -> *mut SdBusMessage {
        self.p.as_ptr()
    }

    /// A `GetInteger(n)` call on `bus` to `dest` (None peer to peer).
    fn get_integer_call(bus: &Bus, dest: Option<&CStr>, n: i32) -> Result<Message> {
        let mut m = ptr::null_mut();
        // SAFETY: a live bus, NUL-terminated names (or NULL destination)
        // and an out pointer for the new message.
        let r = unsafe {
            bus.api.f.sd_bus_message_new_method_call(
                bus.as_ptr(),
                &mut m,
                dest.map_or(ptr::null(), CStr::as_ptr),
                PATH.as_ptr(),
                INTERFACE.as_ptr(),
                METHOD.as_ptr(),
            )
        };
        ok("sd_bus_message_new_method_call", r)?;
        let m = Message::own(bus.api, m).ok_or_else(|| anyhow!("sd-bus made no message"))?;
        // SAFETY: an unsealed message and a pointer to an i32 for `i`.
        let r = unsafe {
            bus.api
                .f
                .sd_bus_message_append_basic(m.as_ptr(), b'i' as _, (&n as *const i32).cast())
        };
        ok("appending numInts", r)?;
        Ok(m)
    }

    /// The method return to `call` carrying `values` as its `ai`.
    fn get_integer_return(
        api: &'static Api,
        call: *mut SdBusMessage,
        values: &[i32],
    ) -> Result<Message> {
        let mut m = ptr::null_mut();
        // SAFETY: `call` is a live, sealed method call; `m` an out pointer.
        let r = unsafe { api.f.sd_bus_message_new_method_return(call, &mut m) };
        ok("sd_bus_message_new_method_return", r)?;
        let m = Message::own(api, m).ok_or_else(|| anyhow!("sd-bus made no message"))?;
        // SAFETY: an unsealed message; `values` is readable for its byte
        // length, which sd-bus copies.
        let r = unsafe {
            api.f.sd_bus_message_append_array(
                m.as_ptr(),
                b'i' as _,
                values.as_ptr().cast(),
                std::mem::size_of_val(values),
            )
        };
        ok("appending the integers", r)?;
        Ok(m)
    }

    /// Calls `f` with its single `ai` argument, read in place (no copy):
    /// an error when its signature is anything else.
    fn with_ints<R>(&self, what: &str, f: impl FnOnce(&[i32]) -> R) -> Result<R> {
        let sys = &self.api.f;
        // SAFETY: a live message and a NUL-terminated signature.
        if unsafe { sys.sd_bus_message_has_signature(self.as_ptr(), c"ai".as_ptr()) } <= 0 {
            bail!("{what}: its signature is not `ai`");
        }
        let mut data: *const std::os::raw::c_void = ptr::null();
        let mut size = 0usize;
        // SAFETY: a live message of signature `ai` (checked); sd-bus points
        // `data` at the array's `size` bytes inside the message, valid
        // while the message lives (longer than `f`'s call).
        let r = unsafe {
            sys.sd_bus_message_read_array(self.as_ptr(), b'i' as _, &mut data, &mut size)
        };
        ok(what, r)?;
        if size % 4 != 0 {
            bail!("{what}: an `ai` of {size} bytes");
        }
        let n = size / 4;
        if n == 0 {
            return Ok(f(&[]));
        }
        let data = data.cast::<i32>();
        if data.is_null() || !data.is_aligned() {
            bail!("{what}: sd-bus gave an unaligned array");
        }
        // SAFETY: non-null, aligned for i32 (checked), `n` i32 in the
        // message, which outlives the slice.
        Ok(f(unsafe { std::slice::from_raw_parts(data, n) }))
    }

    /// Its cookie (serial), when sealed.
    fn cookie(&self) -> Result<u64> {
        let mut c = 0u64;
        // SAFETY: a live message and an out pointer.
        ok("its cookie", unsafe {
            self.api.f.sd_bus_message_get_cookie(self.as_ptr(), &mut c)
        })?;
        Ok(c)
    }

    /// The cookie of the call it answers.
    fn reply_cookie(&self) -> Result<u64> {
        let mut c = 0u64;
        // SAFETY: a live message and an out pointer.
        let r = unsafe {
            self.api
                .f
                .sd_bus_message_get_reply_cookie(self.as_ptr(), &mut c)
        };
        ok("its reply cookie", r)?;
        Ok(c)
    }
}

impl Drop for Message {
    fn drop(&mut self) {
        // SAFETY: we hold one reference, given back here.
        unsafe { self.api.f.sd_bus_message_unref(self.as_ptr()) };
    }
}

/// A bus connection (a real bus or a peer): closed and unreferenced on
/// drop.
struct Bus {
    api: &'static Api,
    p: NonNull<SdBus>,
}

// SAFETY: an sd_bus is not thread-safe, but may be moved to another
// thread; a Bus is used by one thread at a time (it is not Sync). `api`
// is a table of function pointers, shared freely.
unsafe impl Send for Bus {}

impl Bus {
    /// A new, unstarted bus object.
    fn new(api: &'static Api) -> Result<Bus> {
        let mut b = ptr::null_mut();
        // SAFETY: an out pointer for the new bus.
        ok("sd_bus_new", unsafe { api.f.sd_bus_new(&mut b) })?;
        NonNull::new(b)
            .map(|p| Bus { api, p })
            .ok_or_else(|| anyhow!("sd_bus_new made no bus"))
    }

    /// A client connection to the bus at `address` (Hello sent).
    fn open(api: &'static Api, address: &str) -> Result<Bus> {
        let bus = Bus::new(api)?;
        let a = CString::new(super::address::escaped_bus_address(address))?;
        let sys = &api.f;
        // SAFETY: a live, unstarted bus and a NUL-terminated address.
        unsafe {
            ok(
                "sd_bus_set_address",
                sys.sd_bus_set_address(bus.as_ptr(), a.as_ptr()),
            )?;
            ok(
                "sd_bus_set_bus_client",
                sys.sd_bus_set_bus_client(bus.as_ptr(), 1),
            )?;
            ok(
                &format!("connecting to {address}"),
                sys.sd_bus_start(bus.as_ptr()),
            )?;
        }
        Ok(bus)
    }

    /// A peer-to-peer connection over `fd` (ours to give): the server
    /// side with `server_id` (sd_bus_set_server), else the client side.
    fn on_socket(api: &'static Api, fd: OwnedFd, server_id: Option<SdId128>) -> Result<Bus> {
        let bus = Bus::new(api)?;
        let sys = &api.f;
        let raw = fd.into_raw_fd();
        // SAFETY: a live, unstarted bus; the bus owns `raw` from here
        // (closed with it), given for input and output alike.
        let r = unsafe { sys.sd_bus_set_fd(bus.as_ptr(), raw, raw) };
        if r < 0 {
            // SAFETY: sd-bus did not take it: still ours, closed once.
            drop(unsafe { OwnedFd::from_raw_fd(raw) });
            return Err(errno("sd_bus_set_fd", r));
        }
        if let Some(id) = server_id {
            // SAFETY: a live, unstarted bus.
            ok("sd_bus_set_server", unsafe {
                sys.sd_bus_set_server(bus.as_ptr(), 1, id)
            })?;
        }
        // SAFETY: a live bus with its socket set.
        ok("sd_bus_start", unsafe { sys.sd_bus_start(bus.as_ptr()) })?;
        Ok(bus)
    }

    fn as_ptr(&self) -> *mut SdBus {
        self.p.as_ptr()
    }

    /// Sends `m` and waits up to `timeout_us` for its reply: an error
    /// reply, timeout or disconnect is an `Err` naming `what`.
    fn call(&self, m: &Message, timeout_us: u64, what: &str) -> Result<Message> {
        let mut err = BusError::new(self.api);
        let mut reply = ptr::null_mut();
        // SAFETY: a live bus and message, an error and an out pointer.
        let r = unsafe {
            self.api.f.sd_bus_call(
                self.as_ptr(),
                m.as_ptr(),
                timeout_us,
                &mut err.e,
                &mut reply,
            )
        };
        if r < 0 {
            bail!(err.text(what, r));
        }
        Message::own(self.api, reply).ok_or_else(|| anyhow!("{what}: no reply"))
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        // SAFETY: we hold one reference; the bus is closed, then given
        // back.
        unsafe {
            self.api.f.sd_bus_close(self.as_ptr());
            self.api.f.sd_bus_unref(self.as_ptr());
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
