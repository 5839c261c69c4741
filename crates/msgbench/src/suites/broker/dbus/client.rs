//! The client: one blocking `GetInteger` call at a time.

use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context as _, Result};
use zbus::blocking::connection::Builder;
use zbus::blocking::fdo::DBusProxy;
use zbus::blocking::Connection;
use zbus::names::{BusName, OwnedBusName};

use super::service::Target;
use super::{bus_name, INTERFACE, METHOD, OBJECT_PATH};

/// A call without an answer fails after this long. A service that dies
/// shows up sooner: peer to peer its socket closes at once; on a bus the
/// daemon answers an outstanding call with
/// `org.freedesktop.DBus.Error.NoReply` when the service disconnects, and
/// later calls with `org.freedesktop.DBus.Error.ServiceUnknown` (the name
/// has no owner). The timeout covers a service that hangs.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(1);
/// How long [`DbusClient::connect`] waits for the service to appear.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection to service K, calling `GetInteger`.
pub struct DbusClient {
    conn: Connection,
    /// The service's well-known name on a bus; none peer to peer.
    dest: Option<OwnedBusName>,
}

impl DbusClient {
    /// Connects to service `index` at `target`, waiting up to 5 s for it
    /// (its name to be owned on a bus, its socket to accept peer to peer),
    /// so a client started just after the service works.
    pub fn connect(target: &Target, index: u32) -> Result<DbusClient> {
        match target {
            Target::Bus(address) => {
                let conn = Builder::address(address.as_str())
                    .and_then(|b| b.method_timeout(CALL_TIMEOUT).build())
                    .with_context(|| format!("connecting to the bus at {address}"))?;
                let name = bus_name(index);
                let dest: OwnedBusName = BusName::try_from(name.as_str())
                    .map_err(|e| anyhow!("bus name {name}: {e}"))?
                    .into();
                wait_for_name(&conn, &dest)?;
                Ok(DbusClient {
                    conn,
                    dest: Some(dest),
                })
            }
            Target::P2p(path) => {
                let stream = connect_socket(path)?;
                let conn = Builder::async_io_unix_stream(stream)
                    .p2p()
                    .auth_mechanism(zbus::AuthMechanism::External)
                    .method_timeout(CALL_TIMEOUT)
                    .build()
                    .with_context(|| format!("D-Bus handshake with {}", path.display()))?;
                Ok(DbusClient { conn, dest: None })
            }
        }
    }

    /// Calls `GetInteger(num_ints)` and returns the integers (unchecked:
    /// see [`super::check`]). A `num_ints` over `i32::MAX` is sent as the
    /// negative i32 it wraps to, which the service refuses.
    pub fn get_integer(&mut self, num_ints: u32) -> Result<Vec<i32>> {
        let reply = self
            .conn
            .call_method(
                self.dest.as_ref(),
                OBJECT_PATH,
                Some(INTERFACE),
                METHOD,
                &(num_ints as i32),
            )
            .with_context(|| format!("GetInteger({num_ints})"))?;
        reply
            .body()
            .deserialize::<Vec<i32>>()
            .with_context(|| format!("GetInteger({num_ints}): the reply's body"))
    }
}

/// Polls NameHasOwner until `name` is owned, up to [`CONNECT_TIMEOUT`].
fn wait_for_name(conn: &Connection, name: &OwnedBusName) -> Result<()> {
    let proxy = DBusProxy::new(conn).context("the bus's org.freedesktop.DBus proxy")?;
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    loop {
        if proxy
            .name_has_owner(name.as_ref())
            .context("NameHasOwner")?
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("no service owns {name} after {CONNECT_TIMEOUT:?}");
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
