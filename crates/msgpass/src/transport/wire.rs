//! The machinery shared by "wire" transports: mechanisms whose connection is
//! a two-way message channel (pipes, socket pairs, queues...) set up through
//! the rendezvous. A mechanism only says how to make its objects and how one
//! framed message crosses them ([`Wire`], [`Mechanism`]); multiplexing many
//! clients, liveness, size limits and error replies live here, once.
//!
//! Every message is an 8-byte header, `code: u32` (the command, or the
//! reply's status) and `len: u32` (payload bytes), then the payload.
//!
//! Liveness: a mechanism whose receive reports a dead peer by itself (a pipe
//! or stream socket reads EOF) says so with [`Mechanism::EOF_ON_DEATH`];
//! otherwise both sides also watch the rendezvous session socket, whose
//! hang-up means the peer died.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::sys;
use crate::transport::rendezvous::{self, Family, Listener};
use crate::transport::{ClientConnection, Incoming, Options, ServerChannel, Status, Transport};

/// Header length of every wire message.
pub(crate) const HEAD: usize = 8;

/// Builds a header.
pub(crate) fn head(code: u32, len: usize) -> [u8; HEAD] {
    let mut h = [0u8; HEAD];
    h[..4].copy_from_slice(&code.to_le_bytes());
    h[4..].copy_from_slice(&(len as u32).to_le_bytes());
    h
}

/// Reads a header: (code, len).
pub(crate) fn parse_head(h: &[u8; HEAD]) -> (u32, usize) {
    (
        u32::from_le_bytes([h[0], h[1], h[2], h[3]]),
        u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize,
    )
}

/// One end of a connection, as the mechanism moves messages.
pub(crate) trait Wire: Send {
    /// Sends one message: `head`, then `data`.
    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()>;
    /// Receives one message: its header into `head`, its payload into
    /// `buf` (which holds the channel's maximum). Returns the payload
    /// length, or `None` when the peer closed. A payload longer than `buf`
    /// is an `InvalidData` error. Blocks until a message arrives.
    ///
    /// On the server side, a `WouldBlock` error means the wire consumed a
    /// message of the mechanism's own (a handshake step): there is no
    /// request, and the connection stays.
    fn recv(&mut self, head: &mut [u8; HEAD], buf: &mut [u8]) -> io::Result<Option<usize>>;
    /// A descriptor that polls readable when a message is waiting.
    fn poll_fd(&self) -> BorrowedFd<'_>;
    /// True when a message (or part of one) was already read from the
    /// descriptor into the wire's buffer, where `poll` cannot see it.
    fn has_buffered(&self) -> bool {
        false
    }
}

/// What a mechanism knows about the connection it is making.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnCtx<'a> {
    /// The endpoint's path (for mechanisms that name things beside it).
    pub(crate) endpoint: &'a Path,
    /// A number unique among this server's connections.
    pub(crate) conn: u64,
}

/// A mechanism: how to make a connection's two wires.
pub(crate) trait Mechanism: Send + Sync + Clone + std::fmt::Debug + 'static {
    /// The wire type.
    type W: Wire + 'static;
    /// Rendezvous family (so a client of another mechanism is refused).
    const FAMILY: Family;
    /// True when [`Wire::recv`] returns `None` once the peer has died.
    const EOF_ON_DEATH: bool;
    /// The largest payload this mechanism carries when `requested` is asked
    /// for (a mechanism with a lower limit lowers it; clients learn it from
    /// the hello).
    fn max_msg(&self, requested: usize) -> usize {
        requested
    }
    /// Called once when a server starts on a freshly claimed endpoint,
    /// before it listens: removes what a dead server of this mechanism may
    /// have left beside the endpoint.
    fn clean_stale(&self, _endpoint: &Path) {}
    /// Makes a new connection's objects: the server's wire, the descriptors
    /// and extra hello bytes that let the client make its own.
    fn server_side(
        &self,
        ctx: ConnCtx<'_>,
        opts: &Options,
    ) -> io::Result<(Self::W, Vec<OwnedFd>, Vec<u8>)>;
    /// Makes the client's wire from what the server passed.
    fn client_side(&self, fds: Vec<OwnedFd>, extra: &[u8], opts: &Options) -> io::Result<Self::W>;
}

/// A [`Transport`] made of a [`Mechanism`].
#[derive(Debug, Clone)]
pub(crate) struct WireTransport<M: Mechanism> {
    pub(crate) mech: M,
    pub(crate) name: &'static str,
}

impl<M: Mechanism> Transport for WireTransport<M> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn max_msg(&self, requested: usize) -> usize {
        self.mech.max_msg(requested)
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        let mut opts = opts.clone();
        opts.max_msg = self.mech.max_msg(opts.max_msg);
        self.mech.clean_stale(path);
        let listener = Listener::bind(path, M::FAMILY, opts.max_msg)?;
        Ok(Box::new(WireServer {
            mech: self.mech.clone(),
            endpoint: path.to_path_buf(),
            next_conn: 0,
            pollfds: Vec::new(),
            listener,
            conns: Vec::new(),
            buf: vec![0; opts.max_msg],
            len: 0,
            current: None,
            next: 0,
            opts,
        }))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        let (sock, hello, fds) = rendezvous::connect(path, M::FAMILY, opts)?;
        let wire = self
            .mech
            .client_side(fds, &hello.extra, opts)
            .map_err(|e| Error::io(format!("{}: set up the client side", self.name), e))?;
        Ok(Box::new(WireClient::<M> {
            wire,
            sock,
            buf: vec![0; hello.max_msg],
            max_msg: hello.max_msg,
            _mech: std::marker::PhantomData,
        }))
    }
}

struct Conn<W> {
    /// The rendezvous session: its hang-up means the client died.
    sock: OwnedFd,
    wire: W,
}

struct WireServer<M: Mechanism> {
    mech: M,
    endpoint: std::path::PathBuf,
    next_conn: u64,
    listener: Listener,
    conns: Vec<Conn<M::W>>,
    /// `[listener, (wire, session) for each connection]`, rebuilt when the
    /// connection set changes (emptied to mark it stale).
    pollfds: Vec<libc::pollfd>,
    buf: Vec<u8>,
    len: usize,
    current: Option<usize>,
    next: usize,
    opts: Options,
}

fn pollfd(fd: BorrowedFd<'_>) -> libc::pollfd {
    libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }
}

impl<M: Mechanism> WireServer<M> {
    fn drop_conn(&mut self, i: usize) {
        self.conns.swap_remove(i);
        self.pollfds.clear();
        self.current = None;
    }

    /// Makes a connection's objects, then greets the client with them.
    fn accept(&mut self) {
        self.next_conn += 1;
        let ctx = ConnCtx {
            endpoint: &self.endpoint,
            conn: self.next_conn,
        };
        let Ok((wire, fds, extra)) = self.mech.server_side(ctx, &self.opts) else {
            // Cannot make the objects: take the client and hang up on it,
            // so it hears at once instead of timing out.
            drop(self.listener.accept(&[]));
            return;
        };
        let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
        if let Ok(sock) = self.listener.accept_with(&borrowed, &extra) {
            self.conns.push(Conn { sock, wire });
            self.pollfds.clear();
        }
    }

    fn rebuild_pollfds(&mut self) {
        if !self.pollfds.is_empty() {
            return;
        }
        self.pollfds.push(pollfd(self.listener.as_fd()));
        for c in &self.conns {
            self.pollfds.push(pollfd(c.wire.poll_fd()));
            self.pollfds.push(pollfd(c.sock.as_fd()));
        }
    }

    /// Reads the request waiting on connection `i`; `None` when the
    /// connection turned out dead or broken (and was dropped), or when what
    /// was waiting was a handshake step of the mechanism (kept).
    fn read_request(&mut self, i: usize) -> Option<Incoming> {
        let mut h = [0u8; HEAD];
        match self.conns[i].wire.recv(&mut h, &mut self.buf) {
            Ok(Some(len)) => {
                let (cmd, hlen) = parse_head(&h);
                if hlen != len {
                    self.drop_conn(i);
                    return None;
                }
                self.current = Some(i);
                self.len = len;
                Some(Incoming { cmd, len })
            }
            // A handshake step of the mechanism: no request yet.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            Ok(None) | Err(_) => {
                self.drop_conn(i);
                None
            }
        }
    }
}

impl<M: Mechanism> ServerChannel for WireServer<M> {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.current = None;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            // A message already buffered by a wire is not seen by poll.
            if let Some(i) = self.conns.iter().position(|c| c.wire.has_buffered()) {
                match self.read_request(i) {
                    Some(inc) => return Ok(Some(inc)),
                    None => continue,
                }
            }
            self.rebuild_pollfds();
            for p in &mut self.pollfds {
                p.revents = 0;
            }
            if sys::poll(&mut self.pollfds, Some(self.opts.tick))
                .map_err(|e| Error::io("poll", e))?
                == 0
            {
                continue;
            }
            if self.pollfds[0].revents != 0 {
                self.accept();
                continue;
            }
            let count = self.conns.len();
            for k in 0..count {
                let i = (self.next + k) % count;
                let (wire_rev, sock_rev) = (
                    self.pollfds[1 + 2 * i].revents,
                    self.pollfds[2 + 2 * i].revents,
                );
                if wire_rev & libc::POLLIN != 0 {
                    self.next = i + 1;
                    match self.read_request(i) {
                        Some(inc) => return Ok(Some(inc)),
                        None => break,
                    }
                }
                if wire_rev != 0 || sock_rev != 0 {
                    // Hang-up or error without data: the client is gone.
                    self.drop_conn(i);
                    break;
                }
            }
        }
    }

    fn data(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        let Some(i) = self.current.take() else {
            return Err(Error::Protocol("reply without a request".into()));
        };
        let (code, data) = status.encode(data);
        if data.len() > self.opts.max_msg {
            return Err(Error::TooLarge {
                len: data.len(),
                max: self.opts.max_msg,
            });
        }
        if self.conns[i]
            .wire
            .send(&head(code, data.len()), data)
            .is_err()
        {
            self.drop_conn(i);
        }
        Ok(())
    }

    fn connections(&self) -> usize {
        self.conns.len()
    }
}

struct WireClient<M: Mechanism> {
    wire: M::W,
    sock: OwnedFd,
    buf: Vec<u8>,
    max_msg: usize,
    _mech: std::marker::PhantomData<M>,
}

impl<M: Mechanism> WireClient<M> {
    /// For mechanisms that do not report a dead server by themselves: waits
    /// until the reply is readable or the session hangs up.
    fn wait_readable(&self) -> Result<()> {
        let mut p = [pollfd(self.wire.poll_fd()), pollfd(self.sock.as_fd())];
        loop {
            p[0].revents = 0;
            p[1].revents = 0;
            sys::poll(&mut p, None::<Duration>).map_err(|e| Error::io("poll", e))?;
            if p[0].revents & libc::POLLIN != 0 {
                return Ok(());
            }
            if p[1].revents != 0 || p[0].revents != 0 {
                return Err(Error::Disconnected);
            }
        }
    }
}

impl<M: Mechanism> ClientConnection for WireClient<M> {
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        if req.len() > self.max_msg {
            return Err(Error::TooLarge {
                len: req.len(),
                max: self.max_msg,
            });
        }
        self.wire
            .send(&head(cmd, req.len()), req)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EPIPE | libc::ECONNRESET | libc::ECONNREFUSED | libc::ENOTCONN) => {
                    Error::Disconnected
                }
                _ => Error::io("send request", e),
            })?;
        if !M::EOF_ON_DEATH {
            self.wait_readable()?;
        }
        let mut h = [0u8; HEAD];
        let len = match self.wire.recv(&mut h, &mut self.buf) {
            Ok(Some(len)) => len,
            Ok(None) => return Err(Error::Disconnected),
            Err(e) if e.raw_os_error() == Some(libc::ECONNRESET) => {
                return Err(Error::Disconnected)
            }
            Err(e) => return Err(Error::io("receive reply", e)),
        };
        let (status, hlen) = parse_head(&h);
        if hlen != len {
            return Err(Error::Protocol(format!(
                "reply header says {hlen} bytes, got {len}"
            )));
        }
        if status != 0 {
            return Err(Error::Remote {
                code: status as i32,
            });
        }
        if len > reply.len() {
            return Err(Error::ReplyTooLarge {
                len,
                cap: reply.len(),
            });
        }
        reply[..len].copy_from_slice(&self.buf[..len]);
        Ok(len)
    }

    fn max_msg(&self) -> usize {
        self.max_msg
    }
}

/// A byte stream carrying framed messages: pipes (two descriptors) and
/// stream sockets (one). A peer that dies reads as EOF.
///
/// A small message is sent with one `write` from a staging buffer, and
/// received with one `read` of header and payload together: separate
/// header and payload calls, or `writev`, cost a pipe round trip about
/// 1.2 us on top of 5 us (measured against the bare pipe floor). A large
/// payload is gathered and read straight into the caller's buffer, which
/// saves a copy that would cost more than the calls.
pub(crate) struct StreamWire {
    pub(crate) rx: OwnedFd,
    /// Where to write; `None` writes to `rx` (a socket).
    pub(crate) tx: Option<OwnedFd>,
    /// Staging for small outgoing messages.
    out: Vec<u8>,
    /// Bytes read but not yet consumed: `inb[start..end]`.
    inb: Box<[u8]>,
    start: usize,
    end: usize,
}

/// Largest message (header included) staged or read in one piece.
const STREAM_SMALL: usize = 4096;

impl StreamWire {
    /// A wire reading from `rx` and writing to `tx` (or to `rx` when `None`).
    pub(crate) fn new(rx: OwnedFd, tx: Option<OwnedFd>) -> StreamWire {
        StreamWire {
            rx,
            tx,
            out: Vec::with_capacity(STREAM_SMALL),
            inb: vec![0; STREAM_SMALL].into_boxed_slice(),
            start: 0,
            end: 0,
        }
    }

    /// Reads more into `inb`; `Ok(0)` is EOF.
    fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.inb.len() {
            self.inb.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let n = sys::read_some(self.rx.as_fd(), &mut self.inb[self.end..])?;
        self.end += n;
        Ok(n)
    }
}

impl Wire for StreamWire {
    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        let fd = self.tx.as_ref().unwrap_or(&self.rx).as_fd();
        if HEAD + data.len() <= STREAM_SMALL {
            self.out.clear();
            self.out.extend_from_slice(head);
            self.out.extend_from_slice(data);
            sys::write_all(fd, &[&self.out])
        } else {
            sys::write_all(fd, &[head, data])
        }
    }

    fn recv(&mut self, head: &mut [u8; HEAD], buf: &mut [u8]) -> io::Result<Option<usize>> {
        while self.end - self.start < HEAD {
            if self.fill()? == 0 {
                return if self.start == self.end {
                    Ok(None)
                } else {
                    Err(io::ErrorKind::UnexpectedEof.into())
                };
            }
        }
        head.copy_from_slice(&self.inb[self.start..self.start + HEAD]);
        self.start += HEAD;
        let (_, len) = parse_head(head);
        if len > buf.len() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "message longer than the channel maximum",
            ));
        }
        // Whatever of the payload is already buffered, then the rest
        // straight into `buf`.
        let have = (self.end - self.start).min(len);
        buf[..have].copy_from_slice(&self.inb[self.start..self.start + have]);
        self.start += have;
        if have < len && !sys::read_exact(self.rx.as_fd(), &mut buf[have..len])? {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        Ok(Some(len))
    }

    fn poll_fd(&self) -> BorrowedFd<'_> {
        self.rx.as_fd()
    }

    fn has_buffered(&self) -> bool {
        self.start < self.end
    }
}

/// A message-preserving socket (datagram or seqpacket) carrying one
/// message per datagram.
pub(crate) struct DatagramWire {
    pub(crate) fd: OwnedFd,
}

impl Wire for DatagramWire {
    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        sys::send_parts(self.fd.as_fd(), &[head, data], &[]).map(|_| ())
    }

    fn recv(&mut self, head: &mut [u8; HEAD], buf: &mut [u8]) -> io::Result<Option<usize>> {
        let got = sys::recv_parts(self.fd.as_fd(), head, buf, 0, false)?;
        if got.len == 0 {
            return Ok(None);
        }
        if got.len < HEAD {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "short message"));
        }
        if got.truncated {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "message longer than the channel maximum",
            ));
        }
        Ok(Some(got.len - HEAD))
    }

    fn poll_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}
