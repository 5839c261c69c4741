//! `udp`: per connection, a connected pair of UDP sockets on 127.0.0.1
//! (each bound to an ephemeral port and connected to the other), made by
//! the server, one of them passed to the client through the rendezvous.
//! One message per datagram.
//!
//! UDP on loopback does not drop or reorder in practice when the socket
//! buffers hold a whole message, which they are sized to; but a datagram
//! cannot exceed 65507 bytes, so the channel maximum is lowered to fit
//! payload plus header. A datagram socket is not told that its peer
//! closed, so the rendezvous session socket watches for a dead peer.

use std::io;
use std::net::{Ipv4Addr, UdpSocket};
use std::os::fd::{AsFd, OwnedFd};

use crate::transport::api::Options;
use crate::transport::mechanisms::uds_pair::one_fd;
use crate::transport::serve::mechanism::{ConnCtx, Mechanism};
use crate::transport::wire::framing::{DatagramWire, HEAD};
use crate::transport::wire::rendezvous::Family;

/// Largest UDP payload over IPv4: 65535 - 20 (IP header) - 8 (UDP header).
const DATAGRAM_MAX: usize = 65507;
/// Largest payload: a datagram less the message header.
pub(crate) const MAX_PAYLOAD: usize = DATAGRAM_MAX - HEAD;

/// A connected pair of UDP sockets on loopback.
#[derive(Debug, Clone, Copy, Default)]
pub struct Udp;

/// Discards datagrams queued on `s` before it was connected (a stray
/// sender could have reached its port between bind and connect).
fn drain(s: &UdpSocket) -> io::Result<()> {
    s.set_nonblocking(true)?;
    let mut scratch = [0u8; 1];
    while s.recv(&mut scratch).is_ok() {}
    s.set_nonblocking(false)
}

impl Mechanism for Udp {
    type W = DatagramWire;
    const FAMILY: Family = Family::Udp;
    const EOF_ON_DEATH: bool = false;
    /// 16 pulses of 16 bytes between two replies: far within the receive
    /// buffer, which then never drops a call's datagram behind them.
    const PULSE_CREDIT: Option<u32> = Some(16);

    fn max_msg(&self, requested: usize) -> usize {
        requested.min(MAX_PAYLOAD)
    }

    fn server_side(
        &self,
        _ctx: ConnCtx<'_>,
        opts: &Options,
    ) -> io::Result<(DatagramWire, Vec<OwnedFd>, Vec<u8>)> {
        let mine = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        let theirs = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0))?;
        mine.connect(theirs.local_addr()?)?;
        theirs.connect(mine.local_addr()?)?;
        drain(&mine)?;
        drain(&theirs)?;
        let (mine, theirs) = (OwnedFd::from(mine), OwnedFd::from(theirs));
        // A datagram must fit the send buffer whole, and the receive
        // buffer must hold it (with the kernel's per-packet overhead).
        for fd in [&mine, &theirs] {
            oslayer::socket::set_buffer_sizes(fd.as_fd(), 2 * (opts.max_msg + HEAD + 1024))?;
        }
        Ok((DatagramWire::new(mine), vec![theirs], Vec::new()))
    }

    fn client_side(
        &self,
        fds: Vec<OwnedFd>,
        _extra: &[u8],
        _opts: &Options,
    ) -> io::Result<DatagramWire> {
        // Check it is what the server said: a connected UDP socket.
        let s = UdpSocket::from(one_fd(fds)?);
        s.peer_addr()?;
        Ok(DatagramWire::new(OwnedFd::from(s)))
    }
}
