//! The sd-bus service: `GetInteger` in an object vtable
//! (`sd_bus_add_object_vtable`), served by `sd_bus_process` and
//! `sd_bus_wait`, on a bus under the service's well-known name, or peer to
//! peer: we listen on the socket path, and each accepted peer is an
//! sd-bus server connection (`sd_bus_set_server`) on its own thread.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::raw::{c_int, c_void};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context as _, Result};

use super::ffi::{self, Api, SdBusError, SdBusMessage, SdBusVtable, SdId128};
use super::{ok, Bus, Message, INTERFACE, INVALID_ARGS, METHOD, PATH};
use crate::suites::broker::dbus::{bus_name, values, Target, MAX_INTS};

/// How long one wait for messages lasts, so `stop` is seen, µs.
const POLL_US: u64 = 50_000;

/// Serves `GetInteger` as service `index` at `target` until `stop` is
/// set, as the zbus service does: on a bus, owns
/// `org.msgbench.Service{index}` and returns an error if the bus closes
/// the connection; peer to peer, listens at the path (removed on return)
/// and serves each peer on its own thread, a peer leaving not an error.
pub fn serve(target: &Target, index: u32, stop: &AtomicBool) -> Result<()> {
    let api = super::api()?;
    match target {
        Target::Bus(address) => serve_bus(api, address, index, stop),
        Target::P2p(path) => serve_p2p(api, path, stop),
    }
}

/// sd-bus's call for `GetInteger` (the vtable checked its signature, `i`):
/// the integers, or InvalidArgs for a bad `numInts`.
unsafe extern "C" fn on_call(
    m: *mut SdBusMessage,
    _data: *mut c_void,
    ret_error: *mut SdBusError,
) -> c_int {
    // sd-bus calls this, so it is loaded: the lookup cannot fail.
    let Ok(api) = ffi::api() else {
        return -libc::ELIBACC;
    };
    let sys = &api.f;
    let mut n: i32 = 0;
    // SAFETY: sd-bus hands us a live call whose signature is `i`.
    let r = unsafe { sys.sd_bus_message_read_basic(m, b'i' as _, (&mut n as *mut i32).cast()) };
    if r < 0 {
        return r;
    }
    let Some(n) = u32::try_from(n).ok().filter(|&n| n <= MAX_INTS) else {
        // SAFETY: sd-bus's error out-parameter, set to static strings.
        return unsafe {
            sys.sd_bus_error_set_const(
                ret_error,
                INVALID_ARGS.as_ptr(),
                c"numInts is not in 0..=1000000".as_ptr(),
            )
        };
    };
    let Ok(reply) = Message::get_integer_return(api, m, &values(n)) else {
        return -libc::ENOMEM;
    };
    // SAFETY: a sealed-on-send reply on the call's bus (NULL: the
    // message's own).
    unsafe { sys.sd_bus_send(ptr::null_mut(), reply.as_ptr(), ptr::null_mut()) }
}

/// A bus with the vtable registered. The vtable must outlive the
/// registration: the bus (field first) is dropped before it.
struct Served {
    bus: Bus,
    _vtable: Box<[SdBusVtable; 3]>,
}

/// Registers `GetInteger` at the object path on `bus`.
fn register(bus: Bus) -> Result<Served> {
    let vtable = Box::new([
        SdBusVtable::start(bus.api.vtable_format),
        SdBusVtable::method(METHOD, c"i", c"ai", Some(on_call)),
        SdBusVtable::end(),
    ]);
    // SAFETY: a live bus; static NUL-terminated names; a vtable ended by
    // `end()` whose strings are static and which lives in `Served` as
    // long as the bus; no user data; the slot floats with the bus.
    let r = unsafe {
        bus.api.f.sd_bus_add_object_vtable(
            bus.as_ptr(),
            ptr::null_mut(),
            PATH.as_ptr(),
            INTERFACE.as_ptr(),
            vtable.as_ptr(),
            ptr::null_mut(),
        )
    };
    ok("sd_bus_add_object_vtable", r)?;
    Ok(Served {
        bus,
        _vtable: vtable,
    })
}

/// Serves until `stop` is set (Ok) or the connection fails or closes
/// (`Err`).
fn dispatch(bus: &Bus, stop: &AtomicBool) -> Result<()> {
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: a live bus; this thread alone uses it.
        let r = unsafe { bus.api.f.sd_bus_process(bus.as_ptr(), ptr::null_mut()) };
        ok("sd_bus_process", r)?;
        if r > 0 {
            continue;
        }
        // SAFETY: as above.
        let r = unsafe { bus.api.f.sd_bus_wait(bus.as_ptr(), POLL_US) };
        if r < 0 && r != -libc::EINTR {
            ok("sd_bus_wait", r)?;
        }
    }
    Ok(())
}

fn serve_bus(api: &'static Api, address: &str, index: u32, stop: &AtomicBool) -> Result<()> {
    let name = bus_name(index);
    let served = register(Bus::open(api, address)?)?;
    let c_name = CString::new(name.as_str())?;
    // SAFETY: a live bus connection and a NUL-terminated name.
    let r = unsafe {
        api.f
            .sd_bus_request_name(served.bus.as_ptr(), c_name.as_ptr(), 0)
    };
    ok(&format!("{name}: RequestName on the bus at {address}"), r)?;
    dispatch(&served.bus, stop)
        .with_context(|| format!("{name}: the bus at {address} closed the connection"))
}

/// Removes the listening socket's path on every return.
struct Unlink(PathBuf);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn serve_p2p(api: &'static Api, path: &Path, stop: &AtomicBool) -> Result<()> {
    let listener = UnixListener::bind(path)
        .with_context(|| format!("listening for D-Bus peers at {}", path.display()))?;
    let _unlink = Unlink(path.to_path_buf());
    listener.set_nonblocking(true)?;
    std::thread::scope(|scope| -> Result<()> {
        // Peer threads are scoped: all are joined before this returns.
        let mut peers = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => peers.push(scope.spawn(move || serve_peer(api, stream, stop))),
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e).context(format!("accepting at {}", path.display())),
            }
            peers.retain(|h| !h.is_finished());
        }
        Ok(())
    })
}

/// One peer: an sd-bus server connection on the accepted socket, with a
/// fresh server id, served until it leaves or `stop` is set. A peer that
/// fails its handshake is dropped; the service goes on.
fn serve_peer(api: &'static Api, stream: UnixStream, stop: &AtomicBool) {
    let mut id = SdId128 { bytes: [0; 16] };
    // SAFETY: an out pointer for 16 random bytes.
    if unsafe { api.f.sd_id128_randomize(&mut id) } < 0 {
        return;
    }
    let Ok(bus) = Bus::on_socket(api, OwnedFd::from(stream), Some(id)) else {
        return;
    };
    if let Ok(served) = register(bus) {
        let _ = dispatch(&served.bus, stop);
    }
}
