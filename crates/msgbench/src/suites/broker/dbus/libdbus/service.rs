//! The libdbus service: `GetInteger` registered at the object path with a
//! `DBusObjectPathVTable` and served by
//! `dbus_connection_read_write_dispatch`, on a bus under the service's
//! well-known name, or peer to peer: a `DBusServer` listening on the
//! socket path, each accepted peer served on its own thread.

use std::cell::RefCell;
use std::ffi::CString;
use std::os::fd::BorrowedFd;
use std::os::raw::{c_int, c_void};
use std::path::Path;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use oslayer::poll::{self, PollFd};

use super::conn::Conn;
use super::ffi::{
    self, Api, DBusConnection, DBusHandlerResult, DBusMessage, DBusObjectPathVTable, DBusServer,
    DBusWatch, DBUS_NAME_FLAG_DO_NOT_QUEUE, DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER,
    DBUS_WATCH_ERROR, DBUS_WATCH_HANGUP, DBUS_WATCH_READABLE,
};
use super::msg::{Error, Msg};
use super::{INTERFACE, INVALID_ARGS, METHOD, PATH};
use crate::suites::broker::dbus::address::{escaped_bus_address, unix_address};
use crate::suites::broker::dbus::{bus_name, values, Target, MAX_INTS};

/// How long one wait for messages or peers lasts, so `stop` is seen.
const POLL_MS: c_int = 50;

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

/// The vtable: one message function for the path.
static VTABLE: DBusObjectPathVTable = DBusObjectPathVTable {
    unregister_function: None,
    message_function: Some(on_message),
    dbus_internal_pad: [None; 4],
};

/// Registers the vtable at the object path on `conn`.
fn register(conn: &Conn) -> Result<()> {
    let mut err = Error::new(conn.api());
    // SAFETY: a live connection, a NUL-terminated path, a vtable that
    // lives for the program, no user data, an initialised error.
    let ok = unsafe {
        conn.api().dbus_connection_try_register_object_path(
            conn.as_ptr(),
            PATH.as_ptr(),
            &VTABLE,
            ptr::null_mut(),
            err.as_ptr(),
        )
    };
    if ok == 0 {
        bail!(err.text("registering the object path"));
    }
    Ok(())
}

/// libdbus's call for every message to the path: `GetInteger` answered,
/// anything else left to libdbus (which answers UnknownMethod).
extern "C" fn on_message(
    conn: *mut DBusConnection,
    msg: *mut DBusMessage,
    _data: *mut c_void,
) -> DBusHandlerResult {
    // libdbus calls this, so it is loaded: the lookup cannot fail.
    let Ok(api) = ffi::api() else {
        return DBusHandlerResult::NotYetHandled;
    };
    // SAFETY: a live message and NUL-terminated names.
    let ours = unsafe { api.dbus_message_is_method_call(msg, INTERFACE.as_ptr(), METHOD.as_ptr()) };
    if ours == 0 {
        return DBusHandlerResult::NotYetHandled;
    }
    let Some(call) = Msg::from_borrowed(api, msg) else {
        return DBusHandlerResult::NotYetHandled;
    };
    match answer(&call) {
        Ok(reply) => {
            // SAFETY: a live connection and message; libdbus queues it.
            unsafe { api.dbus_connection_send(conn, reply.as_ptr(), ptr::null_mut()) };
            DBusHandlerResult::Handled
        }
        // Out of memory building the reply: libdbus retries the message.
        Err(_) => DBusHandlerResult::NeedMemory,
    }
}

/// The reply to a `GetInteger` call: the integers, or InvalidArgs for a
/// bad `numInts`.
fn answer(call: &Msg) -> Result<Msg> {
    let n = call.read_i32("GetInteger's call");
    match n.as_ref().ok().and_then(|&n| u32::try_from(n).ok()) {
        Some(n) if n <= MAX_INTS => {
            let mut reply = Msg::method_return(call)?;
            reply.append_ints(&values(n))?;
            Ok(reply)
        }
        _ => {
            let why = match n {
                Ok(n) => format!("numInts {n} is not in 0..={MAX_INTS}"),
                Err(e) => e.to_string(),
            };
            Msg::error(call, INVALID_ARGS, &why)
        }
    }
}

/// Serves `conn` until `stop` is set (Ok) or it is disconnected (`Err`
/// with `closed`).
fn dispatch(conn: &Conn, stop: &AtomicBool, closed: impl FnOnce() -> String) -> Result<()> {
    let api = conn.api();
    while !stop.load(Ordering::Relaxed) {
        // SAFETY: a live connection; this thread alone uses it.
        if unsafe { api.dbus_connection_read_write_dispatch(conn.as_ptr(), POLL_MS) } == 0 {
            bail!(closed());
        }
    }
    Ok(())
}

fn serve_bus(api: &'static Api, address: &str, index: u32, stop: &AtomicBool) -> Result<()> {
    let name = bus_name(index);
    let conn = Conn::open(api, &escaped_bus_address(address))?;
    conn.register()?;
    let c_name = CString::new(name.as_str())?;
    let mut err = Error::new(api);
    // SAFETY: a live bus connection, a NUL-terminated name, an
    // initialised error.
    let r = unsafe {
        api.dbus_bus_request_name(
            conn.as_ptr(),
            c_name.as_ptr(),
            DBUS_NAME_FLAG_DO_NOT_QUEUE,
            err.as_ptr(),
        )
    };
    if r != DBUS_REQUEST_NAME_REPLY_PRIMARY_OWNER {
        bail!(
            "{name}: not its owner on the bus at {address} (RequestName said {r}{})",
            if r < 0 {
                format!("; {}", err.text("RequestName"))
            } else {
                String::new()
            }
        );
    }
    register(&conn)?;
    dispatch(&conn, stop, || {
        format!("{name}: the bus at {address} closed the connection")
    })
}

/// What the server's callbacks collect while `dbus_watch_handle` runs:
/// the watches on its listening socket and the connections it accepted.
struct Accepting {
    api: &'static Api,
    watches: Vec<*mut DBusWatch>,
    fresh: Vec<Conn>,
}

/// The data pointer every callback gets: the `RefCell<Accepting>` on
/// [`serve_p2p`]'s stack, which outlives the server.
fn accepting<'a>(data: *mut c_void) -> &'a RefCell<Accepting> {
    // SAFETY: libdbus passes back the pointer given in serve_p2p, to a
    // RefCell that lives until after the server is unreferenced; the
    // callbacks run on that thread only, inside libdbus calls made while
    // no borrow of it is held.
    unsafe { &*(data as *const RefCell<Accepting>) }
}

extern "C" fn add_watch(watch: *mut DBusWatch, data: *mut c_void) -> u32 {
    accepting(data).borrow_mut().watches.push(watch);
    1
}

extern "C" fn remove_watch(watch: *mut DBusWatch, data: *mut c_void) {
    accepting(data).borrow_mut().watches.retain(|&w| w != watch);
}

/// Enabled or not is read at each poll.
extern "C" fn toggle_watch(_watch: *mut DBusWatch, _data: *mut c_void) {}

extern "C" fn new_connection(
    _server: *mut DBusServer,
    conn: *mut DBusConnection,
    data: *mut c_void,
) {
    let api = accepting(data).borrow().api;
    if let Some(c) = Conn::from_borrowed(api, conn) {
        accepting(data).borrow_mut().fresh.push(c);
    }
}

/// A listening `DBusServer`: disconnected (its socket removed) and
/// unreferenced on drop.
struct Server {
    api: &'static Api,
    p: *mut DBusServer,
}

impl Drop for Server {
    fn drop(&mut self) {
        // SAFETY: a live server we hold the one reference to.
        unsafe {
            self.api.dbus_server_disconnect(self.p);
            self.api.dbus_server_unref(self.p);
        }
    }
}

/// Listens at `path` and routes the server's callbacks to `acc`.
fn listen(path: &Path, acc: &RefCell<Accepting>) -> Result<Server> {
    let api = acc.borrow().api;
    let address = CString::new(unix_address(path))?;
    let mut err = Error::new(api);
    // SAFETY: a NUL-terminated address and an initialised error.
    let p = unsafe { api.dbus_server_listen(address.as_ptr(), err.as_ptr()) };
    if p.is_null() {
        bail!(err.text(&format!("listening for D-Bus peers at {}", path.display())));
    }
    let server = Server { api, p };
    let data = acc as *const RefCell<Accepting> as *mut c_void;
    // SAFETY: a live server; the callbacks are extern "C" functions of
    // this module and `data` outlives the server (see `accepting`).
    let ok = unsafe {
        api.dbus_server_set_new_connection_function(server.p, Some(new_connection), data, None);
        api.dbus_server_set_watch_functions(
            server.p,
            Some(add_watch),
            Some(remove_watch),
            Some(toggle_watch),
            data,
            None,
        )
    };
    if ok == 0 {
        bail!("dbus_server_set_watch_functions: out of memory");
    }
    Ok(server)
}

/// Waits up to [`POLL_MS`] on the server's enabled watches and lets
/// libdbus handle what they report (accepting connections).
fn pump(acc: &RefCell<Accepting>) -> Result<()> {
    let (api, watches) = {
        let a = acc.borrow();
        (a.api, a.watches.clone())
    };
    let mut ready: Vec<(*mut DBusWatch, PollFd)> = Vec::new();
    for w in watches {
        // SAFETY: a watch libdbus added and has not removed.
        let (on, flags, fd) = unsafe {
            (
                api.dbus_watch_get_enabled(w),
                api.dbus_watch_get_flags(w),
                api.dbus_watch_get_unix_fd(w),
            )
        };
        if on != 0 && fd >= 0 && flags & DBUS_WATCH_READABLE != 0 {
            // SAFETY: the watch's socket stays open while the watch
            // exists, which is past this poll.
            let bfd = unsafe { BorrowedFd::borrow_raw(fd) };
            ready.push((w, PollFd::readable(bfd)));
        }
    }
    if ready.is_empty() {
        std::thread::sleep(Duration::from_millis(POLL_MS as u64));
        return Ok(());
    }
    let mut fds: Vec<PollFd> = ready.iter().map(|r| r.1).collect();
    poll::poll(&mut fds, Some(Duration::from_millis(POLL_MS as u64)))?;
    for ((w, _), p) in ready.iter().zip(&fds) {
        let mut flags = 0;
        if p.revents & poll::IN != 0 {
            flags |= DBUS_WATCH_READABLE;
        }
        if p.revents & poll::ERR != 0 {
            flags |= DBUS_WATCH_ERROR;
        }
        if p.revents & poll::HUP != 0 {
            flags |= DBUS_WATCH_HANGUP;
        }
        if flags != 0 && acc.borrow().watches.contains(w) {
            // SAFETY: a watch libdbus still has (checked just above); no
            // borrow of `acc` is held while it runs our callbacks.
            unsafe { api.dbus_watch_handle(*w, flags) };
        }
    }
    Ok(())
}

fn serve_p2p(api: &'static Api, path: &Path, stop: &AtomicBool) -> Result<()> {
    let acc = RefCell::new(Accepting {
        api,
        watches: Vec::new(),
        fresh: Vec::new(),
    });
    let server = listen(path, &acc)?;
    let served = std::thread::scope(|scope| -> Result<()> {
        // Peer threads are scoped: all are joined before this returns.
        let mut peers = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            pump(&acc)?;
            for conn in std::mem::take(&mut acc.borrow_mut().fresh) {
                peers.push(scope.spawn(move || serve_peer(conn, stop)));
            }
            peers.retain(|h| !h.is_finished());
        }
        Ok(())
    });
    drop(server);
    // libdbus removes the socket file on disconnect; make sure.
    let _ = std::fs::remove_file(path);
    served.map_err(|e| anyhow!("{e:#}"))
}

/// One peer: its vtable registered, served until it leaves or `stop` is
/// set. A peer that fails is dropped; the service goes on.
fn serve_peer(conn: Conn, stop: &AtomicBool) {
    if register(&conn).is_ok() {
        let _ = dispatch(&conn, stop, String::new);
    }
}
