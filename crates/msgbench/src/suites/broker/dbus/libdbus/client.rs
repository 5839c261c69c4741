//! The libdbus client: one blocking `GetInteger` call at a time with
//! `dbus_connection_send_with_reply_and_block`, the reply's serial
//! checked against the call's and every integer read in place.

use std::ffi::CString;
use std::os::raw::c_int;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};

use super::conn::Conn;
use super::msg::Msg;
use crate::suites::broker::client::Caller;
use crate::suites::broker::dbus::address::{escaped_bus_address, unix_address};
use crate::suites::broker::dbus::client::{CALL_TIMEOUT, CONNECT_TIMEOUT};
use crate::suites::broker::dbus::{bus_name, check, Target};

/// [`CALL_TIMEOUT`] in libdbus's milliseconds.
const TIMEOUT_MS: c_int = CALL_TIMEOUT.as_millis() as c_int;

/// A libdbus connection to service K.
pub struct Client {
    conn: Conn,
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
                let conn = Conn::open(api, &escaped_bus_address(address))?;
                conn.register()?;
                let name = CString::new(bus_name(index))?;
                wait_for_name(&conn, &name)?;
                Ok(Client {
                    conn,
                    dest: Some(name),
                })
            }
            Target::P2p(path) => {
                let address = unix_address(path);
                let deadline = Instant::now() + CONNECT_TIMEOUT;
                loop {
                    match Conn::open(api, &address) {
                        Ok(conn) => return Ok(Client { conn, dest: None }),
                        Err(e) if Instant::now() > deadline => {
                            return Err(e).context(format!(
                                "no D-Bus peer listening at {} after {CONNECT_TIMEOUT:?}",
                                path.display()
                            ))
                        }
                        Err(_) => std::thread::sleep(Duration::from_millis(10)),
                    }
                }
            }
        }
    }

    /// Calls `GetInteger(num_ints)` and checks the reply: its serial
    /// answers this call's, and every integer is right.
    fn call(&mut self, num_ints: u32) -> Result<()> {
        let mut m = Msg::get_integer_call(self.conn.api(), self.dest.as_deref())?;
        m.append_i32(num_ints as i32)?;
        let reply = self.conn.call(&m, TIMEOUT_MS, "the call")?;
        let (sent, answered) = (m.serial(), reply.reply_serial());
        if sent != answered {
            bail!("the reply answers serial {answered}, the call was serial {sent}");
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
fn wait_for_name(conn: &Conn, name: &CString) -> Result<()> {
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        let mut m = Msg::call(
            conn.api(),
            Some(c"org.freedesktop.DBus"),
            c"/org/freedesktop/DBus",
            c"org.freedesktop.DBus",
            c"NameHasOwner",
        )?;
        m.append_str(name)?;
        let owned = conn
            .call(&m, TIMEOUT_MS, "NameHasOwner")?
            .read_bool("NameHasOwner's reply")?;
        if owned {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("no service owns {name:?} after {CONNECT_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}
