//! `uds`: Unix domain SOCK_SEQPACKET sockets. The rendezvous session itself
//! carries the messages, one framed message per seqpacket, boundaries kept
//! by the kernel; a dead peer reads as end of file.
//!
//! A message goes through one plain `send`/`recv` on a contiguous buffer
//! (`DatagramWire`), which costs the kernel less than `sendmsg`/`recvmsg`
//! with an iovec array; with a single client the server blocks in `recv` on
//! it (as a bare ping-pong does) instead of `poll` + `recv`.

use std::path::Path;

use crate::error::Result;
use crate::transport::api::{ClientConnection, Options, ServerChannel, Transport};
use crate::transport::serve::client::{Traits, WireClient};
use crate::transport::serve::reactor::{self, Acceptor, Conn, Setup};
use crate::transport::serve::server::greeted;
use crate::transport::wire::framing::DatagramWire;
use crate::transport::wire::rendezvous::{self, Family, Listener};

/// A seqpacket peer's end reads as end of file, and a send to a full one
/// blocks (never drops).
const TRAITS: Traits = Traits {
    eof_on_death: true,
    oneway: true,
    pulse_credit: None,
};

/// The Unix seqpacket transport.
#[derive(Debug, Clone, Copy, Default)]
pub struct Uds;

impl Transport for Uds {
    fn name(&self) -> &'static str {
        "uds"
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        let listener = Listener::bind(path, Family::Uds, opts.max_msg)?;
        let acceptor = SessionAcceptor {
            inherit: opts.inherit_priority,
        };
        Ok(Box::new(reactor::serve(acceptor, Some(listener), opts)?))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        let (session, hello, _) = rendezvous::connect(path, Family::Uds, opts)?;
        let wire = DatagramWire::new(session);
        Ok(Box::new(WireClient::new(
            wire,
            None,
            hello.max_msg,
            opts.tick,
            TRAITS,
        )))
    }
}

/// Serves each client on its rendezvous session.
struct SessionAcceptor {
    /// Priority inheritance is on: each client's process is taken.
    inherit: bool,
}

impl Acceptor for SessionAcceptor {
    type W = DatagramWire;

    fn accept(
        &mut self,
        listener: &Listener,
        _setup: &Setup<'_>,
    ) -> Result<Option<Conn<DatagramWire>>> {
        greeted(listener.accept(&[]), |session| Conn {
            peer: self.inherit.then(|| reactor::peer_of(&session)).flatten(),
            creds: reactor::creds_of(&session),
            wire: DatagramWire::new(session),
            session: None,
        })
    }
}
