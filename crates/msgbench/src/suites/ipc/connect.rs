//! Opening a client connection typed where the transport allows it, for
//! the row's client thread and the peer processes alike.

use msgpass::transport::shm::Shm;
use msgpass::transport::ClientConnection;
use msgpass::{Connection, Namespace, Options};

/// What is done over a connection, whichever type it has.
pub trait OverConnection {
    /// What comes of it.
    type Out;
    /// Does it over `conn`.
    fn over<C: ClientConnection + ?Sized>(self, conn: Connection<C>) -> Self::Out;
}

/// Opens a connection to `endpoint` over `transport` and hands it to
/// `user`: a typed connection ([`Connection::open_typed`]) for a
/// shared-memory transport, so that the calls inline into its loop, else
/// one opened by name.
pub fn open_then<U: OverConnection>(
    ns: &Namespace,
    endpoint: &str,
    transport: &str,
    opts: &Options,
    user: U,
) -> msgpass::Result<U::Out> {
    if let Some(shm) = Shm::by_name(transport) {
        return Ok(user.over(Connection::open_typed(ns, endpoint, &shm, opts)?));
    }
    let t = msgpass::transport::by_name(transport)?;
    Ok(user.over(Connection::open(ns, endpoint, &*t, opts)?))
}
