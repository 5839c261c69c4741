//! The one client of the descriptor-driven transports: sends a framed
//! request on a [`Wire`] and waits for the framed reply, watching the
//! server's liveness where the wire does not report it by itself.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::transport::wire::{check_reply_head, head, unpack_reply, Wire, HEAD, HINT};
use crate::transport::{ClientConnection, ONEWAY};

/// What a [`WireClient`] knows of its mechanism.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Traits {
    /// The wire's receive reports a dead server (end of file) by itself.
    pub(crate) eof_on_death: bool,
    /// The wire carries one-way messages (see [`ClientConnection::oneway`]).
    pub(crate) oneway: bool,
}

/// A connection's client side.
pub(crate) struct WireClient<W: Wire> {
    wire: W,
    /// The rendezvous session (`None` where the wire is the session): kept
    /// open for the server to watch, and watched here between ticks when
    /// the wire does not report a dead server.
    session: Option<OwnedFd>,
    buf: Vec<u8>,
    max_msg: usize,
    /// How long a wait for the reply goes between looks at the session.
    tick: Duration,
    traits: Traits,
    /// Our CPU + 1 as last told to the server (0: not yet).
    cpu: u32,
}

/// Errors that mean the server (or the path to it) is gone.
fn is_gone(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(
            libc::EPIPE
                | libc::ECONNRESET
                | libc::ECONNREFUSED
                | libc::ENOTCONN
                | libc::ETIMEDOUT
                | libc::EHOSTUNREACH
                | libc::ENETUNREACH
        )
    ) || e.kind() == io::ErrorKind::UnexpectedEof
}

/// A request of `len` bytes fits a server's `max`, or is
/// [`Error::TooLarge`].
pub(crate) fn fits(len: usize, max: usize) -> Result<()> {
    if len > max {
        return Err(Error::TooLarge { len, max });
    }
    Ok(())
}

/// What a request's send came to, for the caller: a server gone is
/// [`Error::Disconnected`].
fn sent(r: io::Result<()>) -> Result<()> {
    r.map_err(|e| match is_gone(&e) {
        true => Error::Disconnected,
        false => Error::io("send request", e),
    })
}

impl<W: Wire> WireClient<W> {
    /// A client sending on `wire` messages up to `max_msg` bytes.
    pub(crate) fn new(
        wire: W,
        session: Option<OwnedFd>,
        max_msg: usize,
        tick: Duration,
        traits: Traits,
    ) -> WireClient<W> {
        WireClient {
            wire,
            session,
            buf: vec![0; HEAD + max_msg],
            max_msg,
            tick,
            traits,
            cpu: 0,
        }
    }

    /// Tells the server the CPU we run on when it changed (a [`HINT`]
    /// message before the request), on wires that queue messages: a pool
    /// gives the connection to the thread on that CPU. One load of the
    /// CPU number a call (no system call); a message only when we move.
    #[inline]
    fn hint_cpu(&mut self) -> Result<()> {
        if !self.traits.oneway {
            return Ok(());
        }
        let cpu = oslayer::cpu::current_cpu();
        if cpu == self.cpu || cpu == 0 {
            return Ok(());
        }
        self.cpu = cpu;
        sent(self.wire.send(&head(HINT, 4), &cpu.to_le_bytes()))
    }

    /// Sends one request with wire code `code`, checking its size first.
    fn send_request(&mut self, code: u32, req: &[u8]) -> Result<()> {
        fits(req.len(), self.max_msg)?;
        self.hint_cpu()?;
        sent(self.wire.send(&head(code, req.len()), req))
    }

    /// The payload of the reply last received (`len` bytes): where it lies
    /// on a wire that lends its memory, else in our buffer after the header.
    fn reply_payload(&self, len: usize) -> &[u8] {
        match self.wire.received(len) {
            Some(lent) => lent,
            None => &self.buf[HEAD..HEAD + len],
        }
    }

    /// Receives the reply. A wire that reports a dead server by itself
    /// blocks in its receive; any other waits a tick at a time and looks at
    /// the session between ticks, whose hang-up means the server is gone.
    ///
    /// The reply's header lands in our buffer; its payload too, unless the
    /// wire lends its memory ([`WireClient::reply_payload`]).
    fn recv_reply(&mut self) -> Result<usize> {
        let got = match (&self.session, self.traits.eof_on_death) {
            (Some(session), false) => loop {
                match self.wire.recv_lent(&mut self.buf, Some(self.tick)) {
                    Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                        if oslayer::socket::peer_gone(session.as_fd()) {
                            return Err(Error::Disconnected);
                        }
                    }
                    got => break got,
                }
            },
            _ => self.wire.recv_lent(&mut self.buf, None),
        };
        match got {
            Ok(Some(len)) => Ok(len),
            Ok(None) => Err(Error::Disconnected),
            Err(e) if is_gone(&e) => Err(Error::Disconnected),
            Err(e) => Err(Error::io("receive reply", e)),
        }
    }
}

impl<W: Wire> ClientConnection for WireClient<W> {
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        self.send_request(cmd, req)?;
        let len = self.recv_reply()?;
        unpack_reply(&self.buf, self.reply_payload(len), reply)
    }

    fn max_msg(&self) -> usize {
        self.max_msg
    }

    /// The wire's own memory, where it lends it: shorter than the
    /// maximum the server announced (a lying server), it is not lent.
    fn request_buffer(&mut self) -> Option<&mut [u8]> {
        let max = self.max_msg;
        self.wire.send_buffer(0)?.get_mut(..max)
    }

    fn call_in_place(&mut self, cmd: u32, len: usize) -> Result<&[u8]> {
        fits(len, self.max_msg)?;
        self.hint_cpu()?;
        sent(self.wire.send_in_place(&head(cmd, len)))?;
        let len = self.recv_reply()?;
        check_reply_head(&self.buf, len, self.max_msg)?;
        Ok(self.reply_payload(len))
    }

    fn send_oneway(&mut self, cmd: u32, req: &[u8]) -> Result<()> {
        if !self.traits.oneway {
            return Err(Error::Unsupported {
                what: "one-way messages",
                transport: "this transport",
            });
        }
        // A dead server's end is closed: a pipe or stream write fails with
        // EPIPE, a datagram pair refuses the send (ECONNREFUSED), also one
        // blocked on a full queue.
        self.send_request(cmd | ONEWAY, req)
    }

    fn oneway(&self) -> bool {
        self.traits.oneway
    }
}
