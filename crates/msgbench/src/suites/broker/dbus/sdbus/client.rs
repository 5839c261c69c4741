//! The sd-bus client: one `sd_bus_call` at a time, the reply's cookie
//! checked against the call's and every integer read in place.

use std::ffi::CString;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::ptr;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};

use super::{ok, Bus, Message};
use crate::suites::broker::client::Caller;
use crate::suites::broker::dbus::client::{CALL_TIMEOUT, CONNECT_TIMEOUT};
use crate::suites::broker::dbus::{bus_name, check, Target};

/// [`CALL_TIMEOUT`] in sd-bus's microseconds.
const TIMEOUT_US: u64 = CALL_TIMEOUT.as_micros() as u64;

/// An sd-bus connection to service K.
pub struct Client {
    bus: Bus,
    /// The service's well-known name on a bus; none peer to peer.
    dest: Option<CString>,
}

impl Client {
    /// Connects to service `index` at `target`, waiting up to
    /// [`CONNECT_TIMEOUT`] for it (its name owned on a bus, its socket
    /// accepting peer to peer).
    pub fn connect(target: &Target, index: u32) -> Result<Client> {
        let api = super::api()?;
        match target {
            Target::Bus(address) => {
                let bus = Bus::open(api, address)?;
                let name = CString::new(bus_name(index))?;
                wait_for_name(&bus, &name)?;
                Ok(Client {
                    bus,
                    dest: Some(name),
                })
            }
            Target::P2p(path) => {
                let stream = connect_socket(path)?;
                let bus = Bus::on_socket(api, OwnedFd::from(stream), None)
                    .with_context(|| format!("D-Bus handshake with {}", path.display()))?;
                Ok(Client { bus, dest: None })
            }
        }
    }

    /// Calls `GetInteger(num_ints)` and checks the reply: its cookie
    /// answers this call's, and every integer is right.
    fn call(&mut self, num_ints: u32) -> Result<()> {
        let m = Message::get_integer_call(&self.bus, self.dest.as_deref(), num_ints as i32)?;
        let reply = self.bus.call(&m, TIMEOUT_US, "the call")?;
        let (sent, answered) = (m.cookie()?, reply.reply_cookie()?);
        if sent != answered {
            bail!("the reply answers cookie {answered}, the call was cookie {sent}");
        }
        reply
            .with_ints("the reply", |ints| check(num_ints, ints))?
            .map_err(|e| anyhow!("wrong reply: {e}"))
    }
}

impl Caller for Client {
    fn get_integer(&mut self, num_ints: u32) -> Result<()> {
        self.call(num_ints)
            .with_context(|| format!("GetInteger({num_ints})"))
    }
}

/// Asks the bus (`NameHasOwner`) until `name` is owned, up to
/// [`CONNECT_TIMEOUT`].
fn wait_for_name(bus: &Bus, name: &CString) -> Result<()> {
    let (api, sys) = (bus.api, &bus.api.f);
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        let mut m = ptr::null_mut();
        // SAFETY: a live bus, NUL-terminated names, an out pointer.
        let r = unsafe {
            sys.sd_bus_message_new_method_call(
                bus.as_ptr(),
                &mut m,
                c"org.freedesktop.DBus".as_ptr(),
                c"/org/freedesktop/DBus".as_ptr(),
                c"org.freedesktop.DBus".as_ptr(),
                c"NameHasOwner".as_ptr(),
            )
        };
        ok("NameHasOwner", r)?;
        let m = Message::own(api, m).ok_or_else(|| anyhow!("sd-bus made no message"))?;
        // SAFETY: an unsealed message; for `s` sd-bus takes the string
        // pointer itself, NUL-terminated.
        ok("NameHasOwner's argument", unsafe {
            sys.sd_bus_message_append_basic(m.as_ptr(), b's' as _, name.as_ptr().cast())
        })?;
        let reply = bus.call(&m, TIMEOUT_US, "NameHasOwner")?;
        let mut owned: std::os::raw::c_int = 0;
        // SAFETY: a live reply; `b` is read into a C int.
        ok("NameHasOwner's reply", unsafe {
            sys.sd_bus_message_read_basic(
                reply.as_ptr(),
                b'b' as _,
                (&mut owned as *mut i32).cast(),
            )
        })?;
        if owned != 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("no service owns {name:?} after {CONNECT_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Connects to a listening Unix socket, retrying up to [`CONNECT_TIMEOUT`].
fn connect_socket(path: &Path) -> Result<UnixStream> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        match UnixStream::connect(path) {
            Ok(s) => return Ok(s),
            Err(e) if Instant::now() > deadline => {
                return Err(e).with_context(|| {
                    format!(
                        "no D-Bus peer listening at {} after {CONNECT_TIMEOUT:?}",
                        path.display()
                    )
                })
            }
            Err(_) => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}
