//! `tcp`: framed messages on a TCP connection, locally through the
//! namespace or across hosts.
//!
//! **Local** (the [`Tcp`] transport): the endpoint path is the rendezvous
//! socket, as for every transport, so stale and live endpoints, wrong
//! transports and liveness work the same. The server also listens on
//! 127.0.0.1 on an ephemeral port. Greeting a client, it passes that port
//! and a random per-connection token in the hello's extra bytes; the client
//! connects over TCP and sends the token first, which pairs the TCP stream
//! with its rendezvous session. Streams that never present a valid token,
//! and sessions whose stream never comes, are dropped after
//! [`HANDSHAKE_TIMEOUT`].
//!
//! **Remote** ([`listen`], [`connect`], behind `Channel::listen_tcp` and
//! `Connection::connect_tcp`): no namespace and no rendezvous; the TCP
//! connection is the session. The server's first bytes on it are the same
//! hello as the rendezvous one, so a version or transport mismatch is a
//! clear error. Keep-alive probes (after 2 s idle, every 1 s, 3 tries) and
//! a 5 s user timeout notice a peer host that vanished without closing.
//!
//! Either way: TCP_NODELAY on every connection, messages are
//! `wire::head` + payload on the stream, and a dead peer reads as EOF.

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::transport::rendezvous::{self, Family, Listener, HELLO_LEN};
use crate::transport::wire::{
    frame_head, head, unpack_reply, StreamWire, Wire, ACCEPT_EVERY, HEAD,
};
use crate::transport::{
    ClientConnection, Incoming, Options, ServerChannel, Status, Transport, ONEWAY,
};

/// Length of the per-connection token.
const TOKEN: usize = 16;
/// Hello extra bytes: the port (u16, little-endian), then the token.
const EXTRA: usize = 2 + TOKEN;
/// How long a half-made connection (a session waiting for its stream, a
/// stream that has not sent its token, a remote hello) may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// TCP over loopback, met through the rendezvous.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tcp;

impl Transport for Tcp {
    fn name(&self) -> &'static str {
        "tcp"
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        let rendezvous = Listener::bind(path, Family::Tcp, opts.max_msg)?;
        let tcp = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .map_err(|e| Error::io("tcp: listen on 127.0.0.1", e))?;
        let port = tcp
            .local_addr()
            .map_err(|e| Error::io("tcp: local address", e))?
            .port();
        Ok(Box::new(TcpServer::new(
            Some((rendezvous, port)),
            tcp,
            opts,
        )?))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        let (session, hello, _fds) = rendezvous::connect(path, Family::Tcp, opts)?;
        let Some((port, token)) = parse_extra(&hello.extra) else {
            return Err(Error::Protocol(format!(
                "{}: tcp hello carries {} extra bytes, expected {EXTRA}",
                path.display(),
                hello.extra.len()
            )));
        };
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let mut stream = TcpStream::connect_timeout(&addr, HANDSHAKE_TIMEOUT).map_err(|e| {
            if e.kind() == io::ErrorKind::ConnectionRefused {
                // The server closed between the hello and our connect.
                Error::Disconnected
            } else {
                Error::io(format!("tcp: connect to {addr}"), e)
            }
        })?;
        stream
            .set_nodelay(true)
            .map_err(|e| Error::io("tcp: set TCP_NODELAY", e))?;
        stream
            .write_all(&token)
            .map_err(|e| Error::io("tcp: send token", e))?;
        Ok(Box::new(TcpClient::new(
            stream,
            Some(session),
            hello.max_msg,
        )))
    }
}

/// Splits the hello's extra bytes into (port, token).
fn parse_extra(extra: &[u8]) -> Option<(u16, [u8; TOKEN])> {
    if extra.len() != EXTRA {
        return None;
    }
    let port = u16::from_le_bytes([extra[0], extra[1]]);
    let token = extra[2..].try_into().ok()?;
    Some((port, token))
}

/// `tcp://ADDR`, how a remote endpoint is named in errors.
pub(crate) fn remote_name(addr: &SocketAddr) -> PathBuf {
    PathBuf::from(format!("tcp://{addr}"))
}

/// Serves a channel on TCP address `addr`, without namespace or rendezvous.
/// Returns the channel and the address it actually listens on.
pub(crate) fn listen(
    addr: impl ToSocketAddrs,
    opts: &Options,
) -> Result<(Box<dyn ServerChannel>, SocketAddr)> {
    let tcp = TcpListener::bind(addr).map_err(|e| Error::io("tcp: listen", e))?;
    let local = tcp
        .local_addr()
        .map_err(|e| Error::io("tcp: local address", e))?;
    Ok((Box::new(TcpServer::new(None, tcp, opts)?), local))
}

/// Connects to a channel served by [`listen`] at `addr`, waiting up to
/// `opts.wait` for it to appear (a refused connection is retried).
pub(crate) fn connect(
    addr: impl ToSocketAddrs,
    opts: &Options,
) -> Result<Box<dyn ClientConnection>> {
    let addrs: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|e| Error::io("tcp: resolve address", e))?
        .collect();
    let Some(&first) = addrs.first() else {
        return Err(Error::io(
            "tcp: resolve address",
            io::Error::new(io::ErrorKind::NotFound, "no address"),
        ));
    };
    let deadline = opts.wait.map(|w| Instant::now() + w);
    let (mut stream, addr) = loop {
        let left = deadline.map_or(Duration::ZERO, |d| {
            d.saturating_duration_since(Instant::now())
        });
        let (a, e) = match connect_any(&addrs, left.max(HANDSHAKE_TIMEOUT)) {
            Ok(found) => break found,
            Err(failed) => failed,
        };
        if e.kind() != io::ErrorKind::ConnectionRefused {
            return Err(Error::io(
                format!("connect to {}", remote_name(&a).display()),
                e,
            ));
        }
        match deadline {
            Some(d) if Instant::now() < d => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                return Err(Error::NotFound {
                    path: remote_name(&first),
                })
            }
        }
    };
    let name = remote_name(&addr);
    remote_socket_options(&stream).map_err(|e| Error::io("tcp: socket options", e))?;
    stream
        .set_read_timeout(Some(HANDSHAKE_TIMEOUT))
        .map_err(|e| Error::io("tcp: set receive timeout", e))?;
    let mut hello = [0u8; HELLO_LEN];
    stream.read_exact(&mut hello).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Protocol(format!(
            "{} accepted the connection but sent no hello within {HANDSHAKE_TIMEOUT:?}",
            name.display()
        )),
        io::ErrorKind::UnexpectedEof => Error::Protocol(format!(
            "{} closed the connection before its hello: not a msgpass endpoint?",
            name.display()
        )),
        _ => Error::io(format!("receive hello from {}", name.display()), e),
    })?;
    stream
        .set_read_timeout(None)
        .map_err(|e| Error::io("tcp: clear receive timeout", e))?;
    let (max_msg, _pid) = rendezvous::check_hello(&hello, &name, Family::Tcp)?;
    Ok(Box::new(TcpClient::new(stream, None, max_msg)))
}

/// Connects to the first of `addrs` that answers; on failure, the last
/// address tried and its error. `addrs` must not be empty.
fn connect_any(
    addrs: &[SocketAddr],
    timeout: Duration,
) -> std::result::Result<(TcpStream, SocketAddr), (SocketAddr, io::Error)> {
    let mut last = None;
    for &a in addrs {
        match TcpStream::connect_timeout(&a, timeout) {
            Ok(s) => return Ok((s, a)),
            Err(e) => last = Some((a, e)),
        }
    }
    Err(last.unwrap_or_else(|| {
        (
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, 0)),
            io::Error::new(io::ErrorKind::NotFound, "no address"),
        )
    }))
}

/// TCP_NODELAY, plus keep-alive and a user timeout so that a peer host
/// that vanished without closing is noticed within seconds.
fn remote_socket_options(s: &TcpStream) -> io::Result<()> {
    s.set_nodelay(true)?;
    let fd = s.as_fd();
    oslayer::socket::set_int_opt(fd, libc::SOL_SOCKET, libc::SO_KEEPALIVE, 1)?;
    oslayer::socket::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPIDLE, 2)?;
    oslayer::socket::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPINTVL, 1)?;
    oslayer::socket::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_KEEPCNT, 3)?;
    oslayer::socket::set_int_opt(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT, 5000)?;
    Ok(())
}

/// A greeted rendezvous session waiting for its TCP stream.
struct Pending {
    session: OwnedFd,
    token: [u8; TOKEN],
    since: Instant,
}

/// An accepted loopback stream that has not yet sent all of its token.
struct Unpaired {
    stream: TcpStream,
    got: [u8; TOKEN],
    n: usize,
    since: Instant,
}

/// A live connection.
struct Conn {
    wire: StreamWire,
    /// The rendezvous session (local only): its hang-up means the client died.
    session: Option<OwnedFd>,
}

/// What each entry of the poll set watches.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Rendezvous,
    Listener,
    Pending(usize),
    Unpaired(usize),
}

/// The server side, local or remote.
struct TcpServer {
    /// The rendezvous listener and the loopback port (local mode).
    rendezvous: Option<(Listener, u16)>,
    listener: TcpListener,
    pending: Vec<Pending>,
    unpaired: Vec<Unpaired>,
    conns: Vec<Conn>,
    /// Setup entries (see `slots`), then `(wire, session)` per connection
    /// (a session of -1 in remote mode). Emptied when the sets change.
    pollfds: Vec<oslayer::poll::PollFd>,
    slots: Vec<Slot>,
    buf: Vec<u8>,
    len: usize,
    current: Option<usize>,
    next: usize,
    /// Receives so far, to look at the listeners now and then when busy.
    calls: u32,
    /// When every descriptor was last polled.
    last_look: Instant,
    /// The last timed receive gave up.
    timed_out: bool,
    opts: Options,
}

fn pollfd(fd: BorrowedFd<'_>) -> oslayer::poll::PollFd {
    oslayer::poll::PollFd::readable(fd)
}

/// Compares tokens without an early exit.
fn same_token(a: &[u8; TOKEN], b: &[u8; TOKEN]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

impl TcpServer {
    /// A server on `listener` (made non-blocking: poll may report a
    /// connection that is gone by the time it is accepted).
    fn new(
        rendezvous: Option<(Listener, u16)>,
        listener: TcpListener,
        opts: &Options,
    ) -> Result<TcpServer> {
        listener
            .set_nonblocking(true)
            .map_err(|e| Error::io("tcp: make the listener non-blocking", e))?;
        Ok(TcpServer {
            rendezvous,
            listener,
            pending: Vec::new(),
            unpaired: Vec::new(),
            conns: Vec::new(),
            pollfds: Vec::new(),
            slots: Vec::new(),
            buf: vec![0; HEAD + opts.max_msg],
            len: 0,
            current: None,
            next: 0,
            calls: 0,
            last_look: Instant::now(),
            timed_out: false,
            opts: opts.clone(),
        })
    }

    fn changed(&mut self) {
        self.pollfds.clear();
        self.current = None;
    }

    fn rebuild_pollfds(&mut self) {
        if !self.pollfds.is_empty() {
            return;
        }
        self.slots.clear();
        if let Some((l, _)) = &self.rendezvous {
            self.pollfds.push(pollfd(l.as_fd()));
            self.slots.push(Slot::Rendezvous);
        }
        self.pollfds.push(pollfd(self.listener.as_fd()));
        self.slots.push(Slot::Listener);
        for (i, p) in self.pending.iter().enumerate() {
            self.pollfds.push(pollfd(p.session.as_fd()));
            self.slots.push(Slot::Pending(i));
        }
        for (i, u) in self.unpaired.iter().enumerate() {
            self.pollfds.push(pollfd(u.stream.as_fd()));
            self.slots.push(Slot::Unpaired(i));
        }
        for c in &self.conns {
            self.pollfds.push(pollfd(c.wire.poll_fd()));
            self.pollfds.push(
                c.session
                    .as_ref()
                    .map_or(oslayer::poll::PollFd::unused(), |s| pollfd(s.as_fd())),
            );
        }
    }

    /// Drops half-made connections older than the handshake timeout.
    fn expire(&mut self) {
        if self.pending.is_empty() && self.unpaired.is_empty() {
            return;
        }
        let now = Instant::now();
        let (np, nu) = (self.pending.len(), self.unpaired.len());
        self.pending
            .retain(|p| now.duration_since(p.since) < HANDSHAKE_TIMEOUT);
        self.unpaired
            .retain(|u| now.duration_since(u.since) < HANDSHAKE_TIMEOUT);
        if (np, nu) != (self.pending.len(), self.unpaired.len()) {
            self.changed();
        }
    }

    /// Greets a rendezvous client with the port and a fresh token.
    fn accept_session(&mut self) {
        let Some((l, port)) = &self.rendezvous else {
            return;
        };
        let mut token = [0u8; TOKEN];
        if oslayer::random::fill(&mut token).is_err() {
            // No token, no pairing: hang up so the client hears at once.
            drop(l.accept(&[]));
            return;
        }
        let mut extra = [0u8; EXTRA];
        extra[..2].copy_from_slice(&port.to_le_bytes());
        extra[2..].copy_from_slice(&token);
        if let Ok(session) = l.accept_with(&[], &extra) {
            self.pending.push(Pending {
                session,
                token,
                since: Instant::now(),
            });
            self.changed();
        }
    }

    /// Accepts a TCP connection: a remote client is greeted and served at
    /// once; a local one must first present its token.
    fn accept_stream(&mut self) {
        let Ok((stream, _)) = self.listener.accept() else {
            return;
        };
        if self.rendezvous.is_none() {
            let hello = rendezvous::hello_bytes(Family::Tcp, self.opts.max_msg);
            let ok = remote_socket_options(&stream).is_ok() && (&stream).write_all(&hello).is_ok();
            if ok {
                self.conns.push(Conn {
                    wire: StreamWire::new(OwnedFd::from(stream), None),
                    session: None,
                });
                self.changed();
            }
            return;
        }
        if stream.set_nodelay(true).is_ok() && stream.set_nonblocking(true).is_ok() {
            self.unpaired.push(Unpaired {
                stream,
                got: [0; TOKEN],
                n: 0,
                since: Instant::now(),
            });
            self.changed();
        }
    }

    /// Reads what unpaired stream `i` has of its token; pairs it with its
    /// session once complete (or drops it).
    fn read_token(&mut self, i: usize) {
        let u = &mut self.unpaired[i];
        match u.stream.read(&mut u.got[u.n..]) {
            Ok(0) => {}
            Ok(n) => {
                u.n += n;
                if u.n < TOKEN {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return,
            Err(_) => {}
        }
        let u = self.unpaired.swap_remove(i);
        self.changed();
        if u.n < TOKEN {
            return;
        }
        let Some(p) = self
            .pending
            .iter()
            .position(|p| same_token(&p.token, &u.got))
        else {
            return;
        };
        let p = self.pending.swap_remove(p);
        if u.stream.set_nonblocking(false).is_ok() {
            self.conns.push(Conn {
                wire: StreamWire::new(OwnedFd::from(u.stream), None),
                session: Some(p.session),
            });
        }
    }

    fn drop_conn(&mut self, i: usize) {
        self.conns.swap_remove(i);
        self.changed();
    }

    /// Reads the request waiting on connection `i`; `None` when the
    /// connection turned out dead or broken (and was dropped). With a
    /// `timeout`, waits for the request at most that long (a time-out sets
    /// `timed_out` and keeps the connection).
    fn read_request(&mut self, i: usize, timeout: Option<Duration>) -> Option<Incoming> {
        self.timed_out = false;
        let wire = &mut self.conns[i].wire;
        let got = match timeout {
            Some(t) => wire.recv_timeout(&mut self.buf, t),
            None => wire.recv(&mut self.buf),
        };
        match got {
            Ok(Some(len)) => {
                self.current = Some(i);
                self.len = len;
                Some(Incoming::from_wire(frame_head(&self.buf).0, len))
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                self.timed_out = true;
                None
            }
            _ => {
                self.drop_conn(i);
                None
            }
        }
    }
}

impl TcpServer {
    /// One pass over every descriptor, waiting at most `timeout`: one
    /// set-up step (accept, token, hang-up of a half-made connection), or a
    /// dead client dropped, or a waiting request read.
    fn poll_pass(&mut self, timeout: Duration) -> Result<Option<Incoming>> {
        self.last_look = Instant::now();
        self.expire();
        // A message already buffered by a wire is not seen by poll.
        if let Some(i) = self.conns.iter().position(|c| c.wire.has_buffered()) {
            return Ok(self.read_request(i, None));
        }
        self.rebuild_pollfds();
        for p in &mut self.pollfds {
            p.revents = 0;
        }
        if oslayer::poll::poll(&mut self.pollfds, Some(timeout))
            .map_err(|e| Error::io("poll", e))?
            == 0
        {
            return Ok(None);
        }
        // Connection set-up first, one event per round.
        let setup = self.slots.len();
        if let Some(k) = (0..setup).find(|&k| self.pollfds[k].revents != 0) {
            match self.slots[k] {
                Slot::Rendezvous => self.accept_session(),
                Slot::Listener => self.accept_stream(),
                // The client never writes on its session: any event is its
                // hang-up.
                Slot::Pending(i) => {
                    self.pending.swap_remove(i);
                    self.changed();
                }
                Slot::Unpaired(i) => self.read_token(i),
            }
            return Ok(None);
        }
        let count = self.conns.len();
        for k in 0..count {
            let i = (self.next + k) % count;
            let (wire_rev, sock_rev) = (
                self.pollfds[setup + 2 * i].revents,
                self.pollfds[setup + 2 * i + 1].revents,
            );
            if wire_rev & libc::POLLIN != 0 {
                self.next = i + 1;
                return Ok(self.read_request(i, None));
            }
            if wire_rev != 0 || sock_rev != 0 {
                // Hang-up or error without data: the client is gone.
                self.drop_conn(i);
                break;
            }
        }
        Ok(None)
    }

    /// With one client and no connection being set up: waits for its next
    /// request in a timed receive on the stream (no `poll` per request),
    /// as the wire server does; see `wire::WireServer::receive_single`.
    fn receive_single(&mut self) -> Result<Option<Incoming>> {
        if self.calls % ACCEPT_EVERY == 0 && self.last_look.elapsed() >= self.opts.tick {
            return self.poll_pass(Duration::ZERO);
        }
        match self.read_request(0, Some(self.opts.tick)) {
            Some(inc) => Ok(Some(inc)),
            None if self.timed_out => self.poll_pass(Duration::ZERO),
            None => Ok(None),
        }
    }
}

impl ServerChannel for TcpServer {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.current = None;
        self.calls = self.calls.wrapping_add(1);
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let single =
                self.conns.len() == 1 && self.pending.is_empty() && self.unpaired.is_empty();
            let got = if single {
                self.receive_single()?
            } else {
                self.poll_pass(self.opts.tick)?
            };
            if got.is_some() {
                return Ok(got);
            }
        }
    }

    fn data(&self) -> &[u8] {
        &self.buf[HEAD..HEAD + self.len]
    }

    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        let Some(i) = self.current.take() else {
            return Err(Error::Protocol("reply without a request".into()));
        };
        let (code, data) = status.encode(data);
        if data.len() > self.opts.max_msg {
            // Never leave the client waiting: it hears EMSGSIZE.
            let _ = self.conns[i]
                .wire
                .send(&head(libc::EMSGSIZE as u32, 0), &[]);
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

/// The client side, local or remote.
struct TcpClient {
    wire: StreamWire,
    /// Kept open for the session (local mode): the server watches it.
    _session: Option<OwnedFd>,
    buf: Vec<u8>,
    max_msg: usize,
}

impl TcpClient {
    fn new(stream: TcpStream, session: Option<OwnedFd>, max_msg: usize) -> TcpClient {
        TcpClient {
            wire: StreamWire::new(OwnedFd::from(stream), None),
            _session: session,
            buf: vec![0; HEAD + max_msg],
            max_msg,
        }
    }
}

/// Errors that mean the peer (or the path to it) is gone.
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

impl TcpClient {
    /// Sends one request with wire code `code`, checking its size first.
    fn send_request(&mut self, code: u32, req: &[u8]) -> Result<()> {
        if req.len() > self.max_msg {
            return Err(Error::TooLarge {
                len: req.len(),
                max: self.max_msg,
            });
        }
        self.wire.send(&head(code, req.len()), req).map_err(|e| {
            if is_gone(&e) {
                Error::Disconnected
            } else {
                Error::io("send request", e)
            }
        })
    }
}

impl ClientConnection for TcpClient {
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        self.send_request(cmd, req)?;
        let len = match self.wire.recv(&mut self.buf) {
            Ok(Some(len)) => len,
            Ok(None) => return Err(Error::Disconnected),
            Err(e) if is_gone(&e) => return Err(Error::Disconnected),
            Err(e) => return Err(Error::io("receive reply", e)),
        };
        unpack_reply(&self.buf, len, reply)
    }

    fn max_msg(&self) -> usize {
        self.max_msg
    }

    /// A TCP send blocks while the peer's window and the send buffer are
    /// full; a dead peer resets the connection (EPIPE or ECONNRESET).
    fn send_oneway(&mut self, cmd: u32, req: &[u8]) -> Result<()> {
        self.send_request(cmd | ONEWAY, req)
    }

    fn oneway(&self) -> bool {
        true
    }
}
