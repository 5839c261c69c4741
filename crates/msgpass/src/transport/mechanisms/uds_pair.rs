//! `uds-stream` and `uds-dgram`: a Unix socket pair per connection, made by
//! the server and one end passed to the client through the rendezvous.
//! A stream pair frames messages on the byte stream (a dead peer reads as
//! EOF); a datagram pair carries one message per datagram, and since a
//! datagram socket is not told that its peer closed, the session socket
//! watches for a dead peer.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use oslayer::socket::SocketType;

use crate::transport::api::Options;
use crate::transport::serve::mechanism::{ConnCtx, Mechanism};
use crate::transport::wire::framing::{DatagramWire, StreamWire};
use crate::transport::wire::rendezvous::Family;

/// The single socket a client's hello carried.
pub(crate) fn one_fd(fds: Vec<OwnedFd>) -> io::Result<OwnedFd> {
    let [fd]: [OwnedFd; 1] = fds
        .try_into()
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "expected 1 socket"))?;
    Ok(fd)
}

/// A Unix SOCK_STREAM socket pair.
#[derive(Debug, Clone, Copy, Default)]
pub struct UdsStream;

impl Mechanism for UdsStream {
    type W = StreamWire;
    const FAMILY: Family = Family::UdsStream;
    const EOF_ON_DEATH: bool = true;

    fn server_side(
        &self,
        _ctx: ConnCtx<'_>,
        _opts: &Options,
    ) -> io::Result<(StreamWire, Vec<OwnedFd>, Vec<u8>)> {
        let (mine, theirs) = oslayer::socket::socketpair(SocketType::STREAM)?;
        Ok((StreamWire::socket(mine), vec![theirs], Vec::new()))
    }

    fn client_side(
        &self,
        fds: Vec<OwnedFd>,
        _extra: &[u8],
        _opts: &Options,
    ) -> io::Result<StreamWire> {
        Ok(StreamWire::socket(one_fd(fds)?))
    }
}

/// A Unix SOCK_DGRAM socket pair.
#[derive(Debug, Clone, Copy, Default)]
pub struct UdsDgram;

impl Mechanism for UdsDgram {
    type W = DatagramWire;
    const FAMILY: Family = Family::UdsDgram;
    const EOF_ON_DEATH: bool = false;
    // A full peer blocks the sender (unix_wait_for_peer), never drops.

    fn server_side(
        &self,
        _ctx: ConnCtx<'_>,
        opts: &Options,
    ) -> io::Result<(DatagramWire, Vec<OwnedFd>, Vec<u8>)> {
        let (mine, theirs) = oslayer::socket::socketpair(SocketType::DGRAM)?;
        // A datagram must fit the send buffer whole.
        for fd in [&mine, &theirs] {
            oslayer::socket::set_buffer_sizes(fd.as_fd(), 2 * (opts.max_msg + 64))?;
        }
        Ok((DatagramWire::new(mine), vec![theirs], Vec::new()))
    }

    fn client_side(
        &self,
        fds: Vec<OwnedFd>,
        _extra: &[u8],
        _opts: &Options,
    ) -> io::Result<DatagramWire> {
        Ok(DatagramWire::new(one_fd(fds)?))
    }
}
