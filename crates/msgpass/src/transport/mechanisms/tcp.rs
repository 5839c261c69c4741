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
//! **Remote** (`listen`, `connect`, behind `Channel::listen_tcp` and
//! `Connection::connect_tcp`): no namespace and no rendezvous; the TCP
//! connection is the session. The server's first bytes on it are the same
//! hello as the rendezvous one, so a version or transport mismatch is a
//! clear error, followed by its *terms* (4 bytes, little-endian: bit 0 set
//! when it asks for a token, every other bit 0; protocol version 3 on).
//! A server with a [`Token`] ([`Options::token`]) asks for it: the client
//! sends its 16 bytes and the server answers a 4-byte verdict (`OKAY`, or
//! `NOPE` and it closes); nothing else is read or served before. The
//! token is read the way a local stream's is (non-blocking, in the
//! reactor's set-up set, dropped after [`HANDSHAKE_TIMEOUT`]), so a client
//! that never sends it costs the server one descriptor for five seconds
//! and no thread, and it is compared in constant time. A client without
//! a token to give fails at once with [`Error::Refused`], telling the
//! server nothing. Keep-alive probes (after 2 s idle, every 1 s, 3 tries)
//! and a 5 s user timeout notice a peer host that vanished without
//! closing.
//!
//! Either way: TCP_NODELAY on every connection, messages are
//! `wire::head` + payload on the stream, and a dead peer reads as EOF.

use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::token::Token;
use crate::transport::api::{ClientConnection, Options, ServerChannel, Transport};
use crate::transport::serve::client::{Traits, WireClient};
use crate::transport::serve::reactor::{self, Acceptor, Conn, Setup};
use crate::transport::serve::server::{greeted, starved};
use crate::transport::wire::framing::StreamWire;
use crate::transport::wire::rendezvous::{self, Family, Listener, HELLO_LEN};

/// Length of a token: the per-connection one of a local client, or a
/// remote channel's [`Options::token`].
const TOKEN: usize = Token::LEN;
/// Hello extra bytes: the port (u16, little-endian), then the token.
const EXTRA: usize = 2 + TOKEN;
/// How long a half-made connection (a session waiting for its stream, a
/// stream that has not sent its token, a remote hello) may take.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);
/// Bytes of a remote server's terms, after its hello.
const TERMS_LEN: usize = 4;
/// The terms' bit that asks the client for the channel's token.
const TERMS_TOKEN: u32 = 1;
/// The verdict on a remote client's token: let in.
const ADMITTED: [u8; 4] = *b"OKAY";
/// The verdict on a remote client's token: refused (the server closes).
const REFUSED: [u8; 4] = *b"NOPE";

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
        server(Some(rendezvous), tcp, opts)
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
        Ok(client(stream, Some(session), hello.max_msg, opts.tick))
    }
}

/// Splits the hello's extra bytes into (port, token).
pub(crate) fn parse_extra(extra: &[u8]) -> Option<(u16, [u8; TOKEN])> {
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
    Ok((server(None, tcp, opts)?, local))
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
    handshake_read(&mut stream, &mut hello, &name, "hello")?;
    let (max_msg, _pid) = rendezvous::check_hello(&hello, &name, Family::Tcp)?;
    let mut terms = [0u8; TERMS_LEN];
    handshake_read(&mut stream, &mut terms, &name, "terms")?;
    meet_terms(
        &mut stream,
        u32::from_le_bytes(terms),
        opts.token.as_ref(),
        &name,
    )?;
    stream
        .set_read_timeout(None)
        .map_err(|e| Error::io("tcp: clear receive timeout", e))?;
    Ok(client(stream, None, max_msg, opts.tick))
}

/// Reads `buf.len()` bytes of the handshake (`what`: hello, terms,
/// verdict) from `name`, within the stream's receive timeout.
fn handshake_read(stream: &mut TcpStream, buf: &mut [u8], name: &Path, what: &str) -> Result<()> {
    stream.read_exact(buf).map_err(|e| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Protocol(format!(
            "{} accepted the connection but sent no {what} within {HANDSHAKE_TIMEOUT:?}",
            name.display()
        )),
        io::ErrorKind::UnexpectedEof if what == "hello" => Error::Protocol(format!(
            "{} closed the connection before its hello: not a msgpass endpoint?",
            name.display()
        )),
        io::ErrorKind::UnexpectedEof => Error::Protocol(format!(
            "{} closed the connection before its {what}",
            name.display()
        )),
        _ => Error::io(format!("receive {what} from {}", name.display()), e),
    })
}

/// Meets a remote server's `terms`: presents `token` when they ask for
/// one and reads the verdict. A client without a token, or refused, gets
/// [`Error::Refused`]; terms this build does not know are a protocol error.
fn meet_terms(
    stream: &mut TcpStream,
    terms: u32,
    token: Option<&Token>,
    name: &Path,
) -> Result<()> {
    if terms & !TERMS_TOKEN != 0 {
        return Err(Error::Protocol(format!(
            "{} asks for terms {terms:#x}, which this build does not know",
            name.display()
        )));
    }
    if terms & TERMS_TOKEN == 0 {
        return Ok(());
    }
    let Some(token) = token else {
        return Err(Error::Refused {
            path: name.to_path_buf(),
            reason: "it requires a token and none was given (Options::token)",
        });
    };
    stream
        .write_all(token.bytes())
        .map_err(|e| Error::io(format!("send the token to {}", name.display()), e))?;
    let mut verdict = [0u8; 4];
    handshake_read(stream, &mut verdict, name, "verdict on the token")?;
    match verdict {
        ADMITTED => Ok(()),
        REFUSED => Err(Error::Refused {
            path: name.to_path_buf(),
            reason: "wrong token",
        }),
        _ => Err(Error::Protocol(format!(
            "{} answered the token with {verdict:02x?}, neither OKAY nor NOPE",
            name.display()
        ))),
    }
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

/// An accepted stream that has not yet sent all of its token: a local
/// one's per-connection token, or a remote channel's.
struct Unpaired {
    stream: TcpStream,
    got: [u8; TOKEN],
    n: usize,
    since: Instant,
}

/// The set-up number of the TCP listener; sessions and streams being set
/// up get the others.
const TCP_LISTENER: u32 = 0;

/// What is truly tcp in a tcp server: accepting streams, and (local mode)
/// pairing each with its rendezvous session by token. The reactor does
/// the rest.
struct TcpAcceptor {
    /// The loopback port passed in every hello (local mode), or `None`
    /// (remote mode: no rendezvous, the stream is the session).
    port: Option<u16>,
    listener: TcpListener,
    /// Sessions awaiting their stream, by set-up number.
    pending: HashMap<u32, Pending>,
    /// Streams awaiting their token, by set-up number.
    unpaired: HashMap<u32, Unpaired>,
    next_id: u32,
    max_msg: usize,
    /// Remote mode: the token a client must present before it is served
    /// (`None`: every client is served at once).
    token: Option<Token>,
}

/// Serves the streams `listener` (made non-blocking: a connection may be
/// gone by the time it is accepted) accepts; in local mode
/// (`rendezvous`), clients meet through it first.
fn server(
    rendezvous: Option<Listener>,
    listener: TcpListener,
    opts: &Options,
) -> Result<Box<dyn ServerChannel>> {
    listener
        .set_nonblocking(true)
        .map_err(|e| Error::io("tcp: make the listener non-blocking", e))?;
    let token = match rendezvous {
        Some(_) => None,
        None => opts.token.clone(),
    };
    let port = match rendezvous {
        Some(_) => Some(
            listener
                .local_addr()
                .map_err(|e| Error::io("tcp: local address", e))?
                .port(),
        ),
        None => None,
    };
    let acceptor = TcpAcceptor {
        port,
        listener,
        pending: HashMap::new(),
        unpaired: HashMap::new(),
        next_id: TCP_LISTENER,
        max_msg: opts.max_msg,
        token,
    };
    Ok(Box::new(reactor::serve(acceptor, rendezvous, opts)?))
}

impl TcpAcceptor {
    /// A set-up number no session or stream being set up has.
    fn new_id(&mut self) -> u32 {
        loop {
            self.next_id = self.next_id.wrapping_add(1).max(1);
            let id = self.next_id;
            if !self.pending.contains_key(&id) && !self.unpaired.contains_key(&id) {
                return id;
            }
        }
    }

    /// Accepts a TCP connection: a remote client is greeted and served at
    /// once; a local one must first present its token.
    fn accept_stream(&mut self, setup: &Setup<'_>) -> Result<Option<Conn<StreamWire>>> {
        let stream = match self.listener.accept() {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Gone before we took it, or (an error to report: see
                // `starved`) no descriptor to take it with.
                let e = Error::io("tcp: accept", e);
                return if starved(&e) { Err(e) } else { Ok(None) };
            }
        };
        if self.port.is_none() {
            return Ok(self.greet_remote(stream, setup));
        }
        self.await_token(stream, setup);
        Ok(None)
    }

    /// Greets a remote client with the hello and the terms; serves it at
    /// once, or (with a token) waits for its token.
    fn greet_remote(&mut self, stream: TcpStream, setup: &Setup<'_>) -> Option<Conn<StreamWire>> {
        let mut hello = [0u8; HELLO_LEN + TERMS_LEN];
        hello[..HELLO_LEN].copy_from_slice(&rendezvous::hello_bytes(Family::Tcp, self.max_msg));
        let terms = match self.token {
            Some(_) => TERMS_TOKEN,
            None => 0,
        };
        hello[HELLO_LEN..].copy_from_slice(&terms.to_le_bytes());
        // A fresh socket's buffer takes the hello at once.
        if remote_socket_options(&stream).is_err() || (&stream).write_all(&hello).is_err() {
            return None;
        }
        if self.token.is_none() {
            return Some(stream_conn(stream));
        }
        self.await_token(stream, setup);
        None
    }

    /// Puts `stream` in the set-up set until its token has come (or its
    /// time is up: see `expire`).
    fn await_token(&mut self, stream: TcpStream, setup: &Setup<'_>) {
        if stream.set_nodelay(true).is_ok() && stream.set_nonblocking(true).is_ok() {
            let id = self.new_id();
            if setup.add(stream.as_fd(), id).is_ok() {
                self.unpaired.insert(
                    id,
                    Unpaired {
                        stream,
                        got: [0; TOKEN],
                        n: 0,
                        since: Instant::now(),
                    },
                );
            }
        }
    }

    /// Reads what unpaired stream `id` has of its token; once complete,
    /// lets it in (remote) or pairs it with its session (local), or drops
    /// it.
    fn read_token(&mut self, id: u32, setup: &Setup<'_>) -> Option<Conn<StreamWire>> {
        let u = self.unpaired.get_mut(&id)?;
        match u.stream.read(&mut u.got[u.n..]) {
            Ok(0) => {}
            Ok(n) => {
                u.n += n;
                if u.n < TOKEN {
                    return None;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return None,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => return None,
            Err(_) => {}
        }
        let u = self.unpaired.remove(&id)?;
        setup.delete(u.stream.as_fd());
        if u.n < TOKEN {
            return None;
        }
        if let Some(token) = &self.token {
            return admit(u, token);
        }
        let (&pid, _) = self
            .pending
            .iter()
            .find(|(_, p)| crate::token::same(&p.token, &u.got))?;
        let p = self.pending.remove(&pid)?;
        setup.delete(p.session.as_fd());
        u.stream.set_nonblocking(false).ok()?;
        // A dead peer reads as end of file on the stream: the session
        // is not needed any more.
        drop(p.session);
        Some(stream_conn(u.stream))
    }
}

/// A remote client whose token has come: told the verdict, and served
/// when it is the channel's (else dropped, which closes it).
fn admit(u: Unpaired, token: &Token) -> Option<Conn<StreamWire>> {
    let right = token.matches(&u.got);
    let verdict = if right { ADMITTED } else { REFUSED };
    // Four bytes after the 20 of the greeting: the buffer takes them at
    // once, and the socket is still non-blocking, so a peer that reads
    // nothing costs no wait.
    let told = (&u.stream).write_all(&verdict).is_ok();
    if !(right && told) {
        return None;
    }
    u.stream.set_nonblocking(false).ok()?;
    Some(stream_conn(u.stream))
}

/// A connection on `stream`, which reports a dead peer itself (end of
/// file): no session to watch.
fn stream_conn(stream: TcpStream) -> Conn<StreamWire> {
    Conn {
        wire: StreamWire::socket(OwnedFd::from(stream)),
        session: None,
        peer: None,
        creds: None,
    }
}

impl Acceptor for TcpAcceptor {
    type W = StreamWire;

    /// Greets a rendezvous client with the port and a fresh token; its
    /// stream comes later.
    fn accept(
        &mut self,
        listener: &Listener,
        setup: &Setup<'_>,
    ) -> Result<Option<Conn<StreamWire>>> {
        let Some(port) = self.port else {
            return Ok(None);
        };
        let mut token = [0u8; TOKEN];
        if oslayer::random::fill(&mut token).is_err() {
            // No token, no pairing: hang up so the client hears at once.
            return listener.accept(&[]).map(|_| None);
        }
        let mut extra = [0u8; EXTRA];
        extra[..2].copy_from_slice(&port.to_le_bytes());
        extra[2..].copy_from_slice(&token);
        let pending = greeted(listener.accept_with(&[], &extra), |session| Pending {
            session,
            token,
            since: Instant::now(),
        })?;
        if let Some(p) = pending {
            let id = self.new_id();
            if setup.add(p.session.as_fd(), id).is_ok() {
                self.pending.insert(id, p);
            }
        }
        Ok(None)
    }

    /// The TCP listener, then sessions awaiting their stream, then streams
    /// awaiting their token.
    fn setup_fds(&self, each: &mut dyn FnMut(BorrowedFd<'_>, u32)) {
        each(self.listener.as_fd(), TCP_LISTENER);
        for (&id, p) in &self.pending {
            each(p.session.as_fd(), id);
        }
        for (&id, u) in &self.unpaired {
            each(u.stream.as_fd(), id);
        }
    }

    fn setup_ready(&mut self, id: u32, setup: &Setup<'_>) -> Result<Option<Conn<StreamWire>>> {
        if id == TCP_LISTENER {
            return self.accept_stream(setup);
        }
        // The client never writes on its session: any event is its
        // hang-up.
        if let Some(p) = self.pending.remove(&id) {
            setup.delete(p.session.as_fd());
            return Ok(None);
        }
        Ok(self.read_token(id, setup))
    }

    fn listeners(&self, each: &mut dyn FnMut(BorrowedFd<'_>, u32)) {
        each(self.listener.as_fd(), TCP_LISTENER);
    }

    fn setting_up(&self) -> bool {
        !self.pending.is_empty() || !self.unpaired.is_empty()
    }

    fn expire(&mut self, setup: &Setup<'_>) -> bool {
        if !self.setting_up() {
            return false;
        }
        let now = Instant::now();
        let before = self.pending.len() + self.unpaired.len();
        self.pending.retain(|_, p| {
            let keep = now.duration_since(p.since) < HANDSHAKE_TIMEOUT;
            if !keep {
                setup.delete(p.session.as_fd());
            }
            keep
        });
        self.unpaired.retain(|_, u| {
            let keep = now.duration_since(u.since) < HANDSHAKE_TIMEOUT;
            if !keep {
                setup.delete(u.stream.as_fd());
            }
            keep
        });
        before != self.pending.len() + self.unpaired.len()
    }
}

/// A client on `stream`: a dead server reads as end of file, and a send
/// blocks while the peer's window and the send buffer are full.
fn client(
    stream: TcpStream,
    session: Option<OwnedFd>,
    max_msg: usize,
    tick: Duration,
) -> Box<dyn ClientConnection> {
    let traits = Traits {
        eof_on_death: true,
        oneway: true,
        pulse_credit: None,
    };
    let wire = StreamWire::socket(OwnedFd::from(stream));
    Box::new(WireClient::new(wire, session, max_msg, tick, traits))
}
