//! The client side: [`Connection`].

use std::net::ToSocketAddrs;
use std::path::PathBuf;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::names::Namespace;
use crate::pulse::{Pulse, RESERVED};
use crate::transport::{self, ClientConnection, Options, Transport, Typed, View, Window};

/// The client side: a connection to a named endpoint.
///
/// `C` is the transport's client: `dyn ClientConnection` (the default) for
/// a transport chosen at run time ([`Connection::open`]), or a concrete
/// type named at compile time ([`Connection::open_typed`]), whose calls are
/// then direct and can be inlined.
pub struct Connection<C: ClientConnection + ?Sized = dyn ClientConnection> {
    inner: Box<C>,
    /// The transport's name, for errors.
    transport: &'static str,
    /// The copying fallback of [`call_with`](Connection::call_with), for
    /// transports without buffers of their own: the request is built in
    /// `request`, the reply lands in `reply` (both empty until first used).
    request: Vec<u8>,
    reply: Vec<u8>,
    /// The deadline every call gets ([`set_timeout`](Connection::set_timeout)).
    timeout: Option<Duration>,
}

/// The endpoint `name` in `ns`, checked against a live endpoint of another
/// transport that does not meet on a socket (a fuse mount refuses every
/// other transport's connect).
fn endpoint(ns: &Namespace, name: &str, transport: &'static str) -> Result<PathBuf> {
    let path = ns.path_of(name)?;
    if let Some(found) = transport::table::served_by_other(&path, transport) {
        return Err(Error::WrongTransport {
            path,
            expected: transport,
            found: found.into(),
        });
    }
    Ok(path)
}

impl Connection {
    /// Connects to endpoint `name` in `ns` over `transport`, waiting up to
    /// [`Options::wait`] for it to appear.
    pub fn open(
        ns: &Namespace,
        name: &str,
        transport: &dyn Transport,
        opts: &Options,
    ) -> Result<Connection> {
        crate::token::refuse_local(transport.name(), opts.token.as_ref())?;
        let path = endpoint(ns, name, transport.name())?;
        Connection::new(transport.connect(&path, opts)?, transport.name(), opts)
    }

    /// Like [`open`](Connection::open), with the transport named at compile
    /// time: the connection holds the transport's own client type, so
    /// calls are direct (no dynamic dispatch) and can be inlined.
    pub fn open_typed<T: Typed>(
        ns: &Namespace,
        name: &str,
        transport: &T,
        opts: &Options,
    ) -> Result<Connection<T::Client>> {
        crate::token::refuse_local(transport.name(), opts.token.as_ref())?;
        let path = endpoint(ns, name, transport.name())?;
        Connection::new(
            Box::new(transport.connect_typed(&path, opts)?),
            transport.name(),
            opts,
        )
    }

    /// Connects over TCP to a channel served by
    /// [`Channel::listen_tcp`](crate::Channel::listen_tcp) at `addr` (like
    /// `10.0.0.1:5000`), on this host or another, waiting up to
    /// [`Options::wait`] for the server to appear. Nobody listening is
    /// [`Error::NotFound`] (its path is `tcp://ADDR:PORT`); something
    /// other than a msgpass server is [`Error::Protocol`]. A server that
    /// asks for a token gets [`Options::token`]; without one, or with
    /// another than the server's, the connection is [`Error::Refused`]. A
    /// token given to a server that asks for none is not sent.
    pub fn connect_tcp(addr: impl ToSocketAddrs, opts: &Options) -> Result<Connection> {
        Connection::new(transport::tcp::connect(addr, opts)?, "tcp", opts)
    }
}

impl<C: ClientConnection + ?Sized> Connection<C> {
    fn new(inner: Box<C>, transport: &'static str, opts: &Options) -> Result<Connection<C>> {
        let mut c = Connection {
            inner,
            transport,
            request: Vec::new(),
            reply: Vec::new(),
            timeout: None,
        };
        c.set_timeout(opts.call_timeout)?;
        Ok(c)
    }

    /// Gives every later call on this connection a deadline, `timeout`
    /// after the call starts (`None`: wait for ever, the default unless
    /// [`Options::call_timeout`] says otherwise). QNX: `TimerTimeout` on
    /// `MsgSend`.
    ///
    /// A call past its deadline returns [`Error::TimedOut`]. The server
    /// may still take the request and answer it: that late reply is never
    /// taken as the answer to a later call. A connection has one call at
    /// the server at a time, so the next call first waits (within its own
    /// deadline) for the late reply and discards it, then sends; if the
    /// late reply does not come in time either, that call times out too,
    /// without sending. (fuse: the timed-out request is withdrawn instead,
    /// and its server's reply discarded by the server.)
    ///
    /// A zero timeout is [`Error::BadTimeout`]; a transport without
    /// timeouts is [`Error::Unsupported`].
    pub fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<()> {
        if timeout == Some(Duration::ZERO) {
            return Err(Error::BadTimeout);
        }
        self.inner.set_timeout(timeout).map_err(|e| match e {
            Error::Unsupported { what, .. } => Error::Unsupported {
                what,
                transport: self.transport,
            },
            e => e,
        })?;
        self.timeout = timeout;
        Ok(())
    }

    /// The deadline every call gets (see [`set_timeout`](Connection::set_timeout)).
    pub fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// [`call`](Connection::call) with a deadline of its own, `timeout`
    /// after it starts, whatever [`set_timeout`](Connection::set_timeout)
    /// says for the others.
    pub fn call_timeout(
        &mut self,
        cmd: u32,
        req: &[u8],
        reply: &mut [u8],
        timeout: Duration,
    ) -> Result<usize> {
        let keep = self.timeout;
        self.set_timeout(Some(timeout))?;
        let got = self.call(cmd, req, reply);
        self.set_timeout(keep)?;
        got
    }

    /// Sends a pulse (QNX `MsgSendPulse`): a code and a value, delivered to
    /// the server in order with this connection's calls, as a
    /// [`Request`](crate::Request) whose [`pulse`](crate::Request::pulse)
    /// is `Some` (a one-way message: nothing is answered). Never waits
    /// for the server: if the path to it has no room now, nothing is sent
    /// and this is [`Error::PulseQueueFull`]. The room per transport: the
    /// kernel's buffer (sockets, pipes, FIFOs), the System V queue
    /// (sysv-msg, shared by the channel's clients), one pulse not yet
    /// taken by the server (the shm family, eventfd, io-uring, signal,
    /// posix-mq: their path holds one message), 16 pulses since the last
    /// reply (udp, whose kernel would drop a datagram silently instead), a
    /// bounded queue at the server (fuse, whose sender waits for the
    /// server's reader thread, never for a handler).
    pub fn send_pulse(&mut self, pulse: Pulse) -> Result<()> {
        self.inner.send_pulse(&pulse.encode()).map_err(|e| match e {
            Error::Unsupported { what, .. } => Error::Unsupported {
                what,
                transport: self.transport,
            },
            e => e,
        })
    }

    /// Sends command `cmd` with payload `req`, blocks until the reply, copies
    /// it into `reply` and returns its length. An error reply is
    /// [`Error::Remote`]. A command with the [`ONEWAY`](crate::ONEWAY) bit set is
    /// [`Error::ReservedCommand`].
    #[inline]
    pub fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        if cmd >= RESERVED {
            return Err(Error::ReservedCommand { cmd });
        }
        self.inner.call(cmd, req, reply)
    }

    /// Calls in place: `fill` writes the request into the memory the
    /// transport lends (a [`Window`] of [`max_msg`](Connection::max_msg)
    /// bytes; what it held before is unspecified) and returns its length;
    /// the call then blocks until the reply, returned as a [`View`] of
    /// the same memory. An error reply is [`Error::Remote`]; a length over
    /// the window is [`Error::TooLarge`] (nothing is sent).
    ///
    /// On the shm transports the window is the connection's slot, shared
    /// with the server: no byte is copied but those `fill` writes and
    /// those you read from the reply, which you copy out
    /// ([`View::read`], [`View::get`]) and check in your own memory, so
    /// the server, another process, cannot change a value under you. Its
    /// length was checked against the window before you see it. On the
    /// other transports the memory is the connection's own, and the call
    /// copies as [`call`](Connection::call) does. The reply borrows the
    /// connection, so it cannot outlive the next call, which reuses the
    /// memory (the compiler checks it):
    ///
    /// ```compile_fail
    /// # fn f(conn: &mut msgpass::Connection) -> msgpass::Result<()> {
    /// let first = conn.call_with(1, |w| { w.write(0, &[1]); 1 })?;
    /// let second = conn.call_with(1, |w| { w.write(0, &[2]); 1 })?;
    /// assert_ne!(first.get::<1>(0), second.get::<1>(0)); // `first` would be overwritten
    /// # Ok(()) }
    /// ```
    #[inline]
    pub fn call_with(
        &mut self,
        cmd: u32,
        fill: impl FnOnce(&mut Window<'_>) -> usize,
    ) -> Result<View<'_>> {
        if cmd >= RESERVED {
            return Err(Error::ReservedCommand { cmd });
        }
        let max = self.inner.max_msg();
        if let Some(buf) = self.inner.request_buffer() {
            let len = fill(&mut buf.prefix(max));
            if len > max {
                return Err(Error::TooLarge { len, max });
            }
            return self.inner.call_in_place(cmd, len);
        }
        self.copying_call(cmd, fill)
    }

    /// [`call_with`](Connection::call_with) over the connection's own
    /// buffers, for transports without memory to lend.
    #[cold]
    fn copying_call(
        &mut self,
        cmd: u32,
        fill: impl FnOnce(&mut Window<'_>) -> usize,
    ) -> Result<View<'_>> {
        let max = self.inner.max_msg();
        self.request.resize(max, 0);
        self.reply.resize(max, 0);
        let len = fill(&mut Window::from(&mut self.request[..]));
        if len > max {
            return Err(Error::TooLarge { len, max });
        }
        let n = self
            .inner
            .call(cmd, &self.request[..len], &mut self.reply)?;
        Ok(View::from(&self.reply[..n]))
    }

    /// Sends command `cmd` with payload `req` as a one-way message (a QNX
    /// pulse, but with a payload): returns once the message is queued,
    /// without waiting for the server, blocking only while the channel is
    /// full.
    ///
    /// One-way messages are delivered whole and in order with the calls on
    /// the same connection, so a later [`call`](Connection::call) is
    /// received after every one-way message sent before it: a call can
    /// acknowledge them. The server receives it as a
    /// [`Request`](crate::Request) whose
    /// [`is_oneway`](crate::Request::is_oneway) is true; its reply (or the
    /// reply a dropped request would send) is silently not sent, and an
    /// error at the server is not reported to the client.
    ///
    /// Errors: [`Error::Unsupported`] on a transport without one-way
    /// messages (see [`supports_oneway`](Connection::supports_oneway));
    /// [`Error::TooLarge`] for a payload over [`max_msg`](Connection::max_msg);
    /// [`Error::ReservedCommand`] for a command with the [`ONEWAY`](crate::ONEWAY) bit
    /// set; [`Error::Disconnected`] when the server is known to be gone (a
    /// server that dies with messages queued may only be noticed by a later
    /// send or call).
    pub fn send_oneway(&mut self, cmd: u32, req: &[u8]) -> Result<()> {
        if !self.inner.oneway() {
            return Err(Error::Unsupported {
                what: "one-way messages",
                transport: self.transport,
            });
        }
        if cmd >= RESERVED {
            return Err(Error::ReservedCommand { cmd });
        }
        if req.len() > self.inner.max_msg() {
            return Err(Error::TooLarge {
                len: req.len(),
                max: self.inner.max_msg(),
            });
        }
        self.inner.send_oneway(cmd, req)
    }

    /// True when this connection's transport carries one-way messages
    /// ([`send_oneway`](Connection::send_oneway)): those whose channel
    /// queues several messages and blocks a sender while full (pipe, fifo,
    /// uds, uds-stream, uds-dgram, sysv-msg, tcp). The one-slot
    /// shared-memory transports, eventfd, io-uring, signal, posix-mq, fuse
    /// and udp (which drops a datagram when the receiver is full) do not.
    pub fn supports_oneway(&self) -> bool {
        self.inner.oneway()
    }

    /// Largest payload the server accepts.
    pub fn max_msg(&self) -> usize {
        self.inner.max_msg()
    }

    /// True when [`call_with`](Connection::call_with) works in place here
    /// (the transport lends its own buffers: the shared-memory transports,
    /// that is the shm family, eventfd, io-uring and signal),
    /// false when it goes through the copying fallback.
    pub fn in_place(&mut self) -> bool {
        self.inner.request_buffer().is_some()
    }
}
