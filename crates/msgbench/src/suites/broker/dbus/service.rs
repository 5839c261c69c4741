//! The service: `GetInteger` on a bus under a well-known name, or peer to
//! peer on a Unix socket (no daemon), served by zbus's object server.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::ScopedJoinHandle;
use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use zbus::blocking::connection::Builder;
use zbus::blocking::Connection;
use zbus::fdo;

use super::{bus_name, value, MAX_INTS, OBJECT_PATH};

/// How often `stop` and the connection are checked.
const POLL: Duration = Duration::from_millis(50);

/// Where a service is and how a client reaches it. The same value serves
/// both sides: [`serve`] listens or registers, a client connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Through the bus at this D-Bus address (`unix:path=...`), under the
    /// name `org.msgbench.Service{index}`.
    Bus(String),
    /// Peer to peer, no daemon: the service listens on this Unix socket
    /// path (several clients, a thread each); a client connects to it.
    P2p(PathBuf),
}

/// The D-Bus object.
struct Service;

#[zbus::interface(name = "org.msgbench.Service")]
impl Service {
    /// `GetInteger(in i numInts, out ai intData)`.
    fn get_integer(&self, num_ints: i32) -> fdo::Result<Vec<i32>> {
        let n = u32::try_from(num_ints)
            .ok()
            .filter(|&n| n <= MAX_INTS)
            .ok_or_else(|| {
                fdo::Error::InvalidArgs(format!("numInts {num_ints} is not in 0..={MAX_INTS}"))
            })?;
        Ok((0..n).map(|i| value(n, i)).collect())
    }
}

/// Serves `GetInteger` as service `index` at `target` until `stop` is set
/// (checked every 50 ms). On a bus, requests `org.msgbench.Service{index}`
/// and returns an error if the bus connection dies. Peer to peer, listens
/// at the path (removed again on return) and serves each client on its
/// own thread; a client leaving is not an error.
pub fn serve(target: &Target, index: u32, stop: &AtomicBool) -> Result<()> {
    match target {
        Target::Bus(address) => serve_bus(address, index, stop),
        Target::P2p(path) => serve_p2p(path, stop),
    }
}

fn serve_bus(address: &str, index: u32, stop: &AtomicBool) -> Result<()> {
    let name = bus_name(index);
    let conn = Builder::address(address)
        .and_then(|b| b.name(name.as_str()))
        .and_then(|b| b.serve_at(OBJECT_PATH, Service))
        .and_then(|b| b.build())
        .with_context(|| format!("serving {name} on the bus at {address}"))?;
    while !stop.load(Ordering::Relaxed) {
        if conn.is_closed() {
            bail!("{name}: the bus at {address} closed the connection");
        }
        std::thread::sleep(POLL);
    }
    Ok(())
}

/// Removes the listening socket's path on every return.
struct Unlink(PathBuf);

impl Drop for Unlink {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn serve_p2p(path: &PathBuf, stop: &AtomicBool) -> Result<()> {
    let listener = UnixListener::bind(path)
        .with_context(|| format!("listening for D-Bus peers at {}", path.display()))?;
    let _unlink = Unlink(path.clone());
    listener.set_nonblocking(true)?;
    std::thread::scope(|scope| -> Result<()> {
        // Peer threads are scoped: all are joined before this returns.
        let mut peers: Vec<ScopedJoinHandle<'_, ()>> = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            match listener.accept() {
                Ok((stream, _)) => {
                    peers.push(scope.spawn(move || serve_peer(stream, stop)));
                }
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

/// One peer: a zbus p2p server connection (fresh GUID, EXTERNAL auth),
/// served until it closes or `stop` is set. A peer that fails its
/// handshake is dropped; the service goes on.
fn serve_peer(stream: UnixStream, stop: &AtomicBool) {
    let _ = stream.set_nonblocking(false);
    let conn: zbus::Result<Connection> = Builder::async_io_unix_stream(stream)
        .server(zbus::Guid::generate())
        .map(|b| b.p2p().auth_mechanism(zbus::AuthMechanism::External))
        .and_then(|b| b.serve_at(OBJECT_PATH, Service))
        .and_then(|b| b.build());
    let Ok(conn) = conn else { return };
    while !stop.load(Ordering::Relaxed) && !conn.is_closed() {
        std::thread::sleep(POLL);
    }
}
