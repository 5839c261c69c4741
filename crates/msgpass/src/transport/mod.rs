//! The [`Transport`] trait and the transport table.
//!
//! Every transport is described once, in [`TRANSPORTS`] (name and aliases,
//! description, [`Wait`], one-way support, [`SizeLimit`], requirements,
//! constructor); [`by_name`], [`info`] and [`NAMES`] are derived from it.
//! `shm` (an alias of `shm-hybrid`) is the recommended default.
//!
//! A transport turns an endpoint path into a server side ([`ServerChannel`])
//! and a client side ([`ClientConnection`]). Every transport honours the same
//! contract, which `tests/conformance.rs` checks for each of them:
//!
//! - requests and replies arrive whole and unmodified, from 0 bytes up to
//!   [`Options::max_msg`] (lowered by a transport that cannot carry that
//!   much, see [`Transport::max_msg`]); a larger message is
//!   [`Error::TooLarge`](crate::Error::TooLarge), never truncated;
//! - an error reply reaches the caller as [`Error::Remote`](crate::Error::Remote);
//! - if the server dies, a client blocked in `call` returns
//!   [`Error::Disconnected`](crate::Error::Disconnected) within one [`Options::tick`] or so (well under 1 s);
//! - if a client dies, the server drops that connection and keeps serving;
//! - `receive` returns `Ok(None)` within one tick of the shutdown flag being set.

use crate::error::Result;

pub(crate) mod api;
pub(crate) mod clock;
pub(crate) mod mechanisms;
pub(crate) mod mem;
#[cfg(test)]
mod proptests;
pub(crate) mod serve;
pub(crate) mod table;
pub(crate) mod wire;

pub use mechanisms::{
    eventfd, fifo, fuse, io_uring, pipe, posix_mq, shm, signal, sysv_msg, tcp, udp, uds, uds_pair,
};
pub use serve::priority;

pub use api::{
    Answer, Client, ClientConnection, Creds, Incoming, Options, PoolWorker, ServerChannel, Status,
    Transport, Typed, Wait, ONEWAY,
};
pub use mem::window::{View, Window};
pub use table::{info, SizeLimit, TransportInfo, TRANSPORTS};

/// Every name a transport is selected by (aliases included), in table
/// order: derived from [`TRANSPORTS`].
pub const NAMES: &[&str] = &table::NAME_LIST;

/// Looks a transport up by name or alias in [`TRANSPORTS`]; an unknown name
/// is [`Error::UnknownTransport`](crate::Error::UnknownTransport), listing the known ones.
pub fn by_name(name: &str) -> Result<Box<dyn Transport>> {
    info(name).map(TransportInfo::transport)
}
