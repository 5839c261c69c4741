//! The one server loop of the descriptor-driven transports: a connection
//! set, one poll set over it, accepting, fairness between connections, the
//! single-client fast path, liveness and the reply guard. A transport says
//! only how a connection is made ([`Acceptor`]) and how one framed message
//! crosses it ([`Wire`]); everything else is here, once.
//!
//! **Connections.** A [`Conn`] is a wire and, where the wire does not
//! report a dead peer by itself, the rendezvous session whose hang-up does.
//! Dropping a `Conn` releases everything it holds (descriptors, names beside
//! the endpoint, queues), so a connection is dropped with one `swap_remove`
//! without disturbing the others.
//!
//! **Waiting.** With several connections (or connections being set up) the
//! server waits in one `poll` over the listener, the acceptor's set-up
//! descriptors and every connection's wire and session, and serves the
//! ready connections round-robin from where the last pass stopped. With a
//! single client it waits in the wire's own timed receive instead (one
//! system call per request where the mechanism has one, as a hand-written
//! loop makes), and looks at everything else when that receive times out,
//! or every [`ACCEPT_EVERY`] requests once a tick has passed, so a busy
//! client cannot lock a newcomer out.
//!
//! **Replies** go through the [`Guard`] every server shares.
//!
//! **In place.** A wire whose messages lie in shared memory lends it (see
//! [`Wire::recv_lent`]): the request is then read where it lies
//! ([`ServerChannel::data`]) and the reply built there
//! ([`ServerChannel::reply_buffer`]), always on the connection whose
//! request the guard holds. Other wires receive into the reactor's buffer.

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use oslayer::poll::{self, PollFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::transport::rendezvous::Listener;
use crate::transport::server::{in_place_parts, reply_parts, starved, Guard, ACCEPT_EVERY};
use crate::transport::wire::{frame_head, head, Wire, HEAD};
use crate::transport::{Incoming, ServerChannel, Status};

/// One client of a server.
pub(crate) struct Conn<W> {
    /// How messages cross.
    pub(crate) wire: W,
    /// The rendezvous session, whose hang-up means the client died; `None`
    /// where the wire is the session (uds, remote tcp).
    pub(crate) session: Option<OwnedFd>,
}

/// How a server makes its connections: the only per-mechanism part of the
/// server loop.
pub(crate) trait Acceptor: Send {
    /// The wire of a connection.
    type W: Wire;

    /// A client waits on the rendezvous listener: makes its objects and
    /// greets it. Returns the connection when it can be served at once;
    /// `None` when making it failed (the client hears a hang-up) or the
    /// mechanism finishes it later through [`Acceptor::setup_ready`]; an
    /// error when the client could not even be taken off the listener
    /// ([`starved`]: the server then leaves its listeners alone a tick).
    fn accept(&mut self, listener: &Listener) -> Result<Option<Conn<Self::W>>>;

    /// Appends the descriptors of connections still being set up by the
    /// mechanism itself (tcp: its listener, sessions awaiting their stream,
    /// streams awaiting their token), polled with everything else.
    fn setup_fds(&self, _out: &mut Vec<PollFd>) {}

    /// The set-up descriptor `k` (an index into what
    /// [`setup_fds`](Acceptor::setup_fds) appended) is ready: one step.
    /// Returns a connection that is now complete; an error as for
    /// [`Acceptor::accept`].
    fn setup_ready(&mut self, _k: usize) -> Result<Option<Conn<Self::W>>> {
        Ok(None)
    }

    /// How many of the leading set-up descriptors are listeners (taking
    /// a client needs a descriptor: they are left alone while accepting
    /// starves, while the others, whose events free descriptors, are not).
    fn listeners(&self) -> usize {
        0
    }

    /// True while connections are being set up (the single-client path
    /// is off: their descriptors must be polled).
    fn setting_up(&self) -> bool {
        false
    }

    /// Drops set-up work that took too long; true when anything went.
    fn expire(&mut self) -> bool {
        false
    }
}

/// The server side of every descriptor-driven transport.
pub(crate) struct Reactor<A: Acceptor> {
    acceptor: A,
    /// The rendezvous listener (`None` for a remote tcp channel).
    listener: Option<Listener>,
    conns: Vec<Conn<A::W>>,
    /// `[listener?, set-up descriptors..., (wire, session?) per
    /// connection]`, rebuilt when the sets change (emptied to mark it
    /// stale). Only real descriptors: `poll` refuses more entries than
    /// the process may have descriptors (`EINVAL`).
    pollfds: Vec<PollFd>,
    /// Where each connection's entries start in `pollfds`.
    conn_at: Vec<usize>,
    /// Entries of `pollfds` before the connections'.
    setup: usize,
    /// The request as received: header, then payload (the header only
    /// when the wire lends its memory).
    buf: Vec<u8>,
    len: usize,
    guard: Guard,
    /// Where the next scan of ready connections starts (fairness).
    next: usize,
    /// Receives so far, to look at the listener now and then when busy.
    calls: u32,
    /// When everything was last polled.
    last_look: Instant,
    /// The last timed receive gave up.
    timed_out: bool,
    /// Until when the listener and set-up descriptors are left alone
    /// (accepting failed for want of descriptors).
    paused: Option<Instant>,
    max_msg: usize,
    tick: Duration,
}

/// How many ticks a peer has to finish a message it began, or to take a
/// reply, before it is dropped.
const PEER_TICKS: u32 = 10;

impl<A: Acceptor> Reactor<A> {
    /// A server taking clients from `listener` (if any) through `acceptor`,
    /// for messages up to `max_msg` bytes, looking around every `tick`.
    pub(crate) fn new(
        acceptor: A,
        listener: Option<Listener>,
        max_msg: usize,
        tick: Duration,
    ) -> Reactor<A> {
        Reactor {
            acceptor,
            listener,
            conns: Vec::new(),
            pollfds: Vec::new(),
            conn_at: Vec::new(),
            setup: 0,
            buf: vec![0; HEAD + max_msg],
            len: 0,
            guard: Guard::default(),
            next: 0,
            calls: 0,
            last_look: Instant::now(),
            timed_out: false,
            paused: None,
            max_msg,
            tick,
        }
    }

    /// The connection set changed: the poll set is stale, and so is any
    /// index of a request being served.
    fn changed(&mut self) {
        self.pollfds.clear();
        self.guard.clear();
    }

    /// After a set-up step: a new connection (bounded: its peer is not
    /// trusted to keep its pace), or accepting starved (pause a tick).
    fn add(&mut self, made: Result<Option<Conn<A::W>>>) {
        match made {
            Ok(Some(mut c)) => {
                if c.wire.bound(self.tick * PEER_TICKS).is_ok() {
                    self.conns.push(c);
                }
            }
            Ok(None) => {}
            Err(e) if starved(&e) => self.paused = Some(Instant::now() + self.tick),
            Err(_) => {}
        }
        self.changed();
    }

    fn drop_conn(&mut self, i: usize) {
        self.conns.swap_remove(i);
        self.changed();
    }

    fn rebuild_pollfds(&mut self) {
        if !self.pollfds.is_empty() {
            return;
        }
        if let Some(l) = &self.listener {
            self.pollfds.push(PollFd::readable(l.as_fd()));
        }
        let listeners = usize::from(self.listener.is_some()) + self.acceptor.listeners();
        self.acceptor.setup_fds(&mut self.pollfds);
        self.setup = self.pollfds.len();
        if self.paused.is_some() {
            // Kept in place (the indices stay), skipped by poll.
            self.pollfds[..listeners].fill(PollFd::unused());
        }
        self.conn_at.clear();
        for c in &self.conns {
            self.conn_at.push(self.pollfds.len());
            self.pollfds.push(PollFd::readable(c.wire.poll_fd()));
            if let Some(s) = &c.session {
                self.pollfds.push(PollFd::readable(s.as_fd()));
            }
        }
    }

    /// Reads the request waiting on connection `i`; `None` when the
    /// connection turned out dead or broken (and was dropped), or when what
    /// was waiting was a handshake step of the mechanism (kept).
    ///
    /// With a `timeout`, waits for the request at most that long (a time
    /// out sets `timed_out`); without, one must be waiting.
    fn read_request(&mut self, i: usize, timeout: Option<Duration>) -> Option<Incoming> {
        self.timed_out = false;
        match self.conns[i].wire.recv_lent(&mut self.buf, timeout) {
            Ok(Some(len)) => {
                let (cmd, hlen) = frame_head(&self.buf);
                if hlen != len {
                    self.drop_conn(i);
                    return None;
                }
                self.guard.set(i);
                self.len = len;
                Some(Incoming::from_wire(cmd, len))
            }
            // A handshake step of the mechanism: no request yet.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                self.timed_out = true;
                None
            }
            Ok(None) | Err(_) => {
                self.drop_conn(i);
                None
            }
        }
    }

    /// One pass over every descriptor, waiting at most `timeout`: one
    /// set-up step (accept, a mechanism's own handshake), or a dead client
    /// dropped, or a waiting request read.
    fn receive_polling(&mut self, timeout: Duration) -> Result<Option<Incoming>> {
        let now = Instant::now();
        self.last_look = now;
        if self.acceptor.expire() {
            self.changed();
        }
        if self.paused.is_some_and(|until| now >= until) {
            self.paused = None;
            self.changed();
        }
        // A peer that began a message and did not finish it in time.
        if let Some(i) = self.conns.iter().position(|c| c.wire.overdue(now)) {
            self.drop_conn(i);
            return Ok(None);
        }
        // A message already buffered by a wire is not seen by poll.
        if let Some(i) = self.conns.iter().position(|c| c.wire.has_buffered()) {
            return Ok(self.read_request(i, None));
        }
        self.rebuild_pollfds();
        for p in &mut self.pollfds {
            p.revents = 0;
        }
        if poll::poll(&mut self.pollfds, Some(timeout)).map_err(|e| Error::io("poll", e))? == 0 {
            return Ok(None);
        }
        // Connection set-up first, one event per pass: half-made
        // connections (whose end frees descriptors) before new clients.
        let listeners = usize::from(self.listener.is_some()) + self.acceptor.listeners();
        let ready = |k: &usize| self.pollfds[*k].revents != 0;
        if let Some(k) = (listeners..self.setup)
            .find(ready)
            .or_else(|| (0..listeners).find(ready))
        {
            let made = match (&self.listener, k) {
                (Some(l), 0) => self.acceptor.accept(l),
                (Some(_), k) => self.acceptor.setup_ready(k - 1),
                (None, k) => self.acceptor.setup_ready(k),
            };
            self.add(made);
            return Ok(None);
        }
        let count = self.conns.len();
        for j in 0..count {
            let i = (self.next + j) % count;
            let at = self.conn_at[i];
            let wire_rev = self.pollfds[at].revents;
            let session_rev = match self.conns[i].session {
                Some(_) => self.pollfds[at + 1].revents,
                None => 0,
            };
            if wire_rev & poll::IN != 0 {
                self.next = i + 1;
                return Ok(self.read_request(i, None));
            }
            if wire_rev != 0 || session_rev != 0 {
                // Hang-up or error without data (a client never writes on
                // its session): the client is gone.
                self.drop_conn(i);
                break;
            }
        }
        Ok(None)
    }

    /// With a single client: waits for its next request in the wire's own
    /// timed receive, with no `poll` per request. Everything else is
    /// looked at when the receive times out (an idle client, or one that
    /// died without its wire telling), and every [`ACCEPT_EVERY`] requests
    /// once a tick has passed.
    fn receive_single(&mut self) -> Result<Option<Incoming>> {
        if self.calls % ACCEPT_EVERY == 0 && self.last_look.elapsed() >= self.tick {
            return self.receive_polling(Duration::ZERO);
        }
        match self.read_request(0, Some(self.tick)) {
            Some(inc) => Ok(Some(inc)),
            None if self.timed_out => self.receive_polling(Duration::ZERO),
            // A message begun and not finished (or a handshake step): look
            // around once a tick, as while waiting.
            None if self.last_look.elapsed() >= self.tick => self.receive_polling(Duration::ZERO),
            None => Ok(None),
        }
    }
}

impl<A: Acceptor> ServerChannel for Reactor<A> {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.guard.clear();
        self.calls = self.calls.wrapping_add(1);
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let got = if self.conns.len() == 1 && !self.acceptor.setting_up() {
                self.receive_single()?
            } else {
                self.receive_polling(self.tick)?
            };
            if got.is_some() {
                return Ok(got);
            }
        }
    }

    fn data(&self) -> &[u8] {
        let Some(&i) = self.guard.get() else {
            return &[];
        };
        match self.conns[i].wire.received(self.len) {
            Some(lent) => lent,
            None => &self.buf[HEAD..HEAD + self.len],
        }
    }

    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        let i = self.guard.take()?;
        let (code, data, verdict) = reply_parts(status, data, self.max_msg);
        if self.conns[i]
            .wire
            .send(&head(code, data.len()), data)
            .is_err()
        {
            self.drop_conn(i);
        }
        verdict
    }

    /// The lent memory of the connection whose request is being served,
    /// starting with the request.
    fn reply_buffer(&mut self) -> Option<&mut [u8]> {
        let i = *self.guard.get()?;
        let max = self.max_msg;
        self.conns[i].wire.send_buffer(self.len)?.get_mut(..max)
    }

    fn reply_in_place(&mut self, len: usize) -> Result<()> {
        let i = self.guard.take()?;
        let (code, len, verdict) = in_place_parts(len, self.max_msg);
        if self.conns[i].wire.send_in_place(&head(code, len)).is_err() {
            self.drop_conn(i);
        }
        verdict
    }

    fn connections(&self) -> usize {
        self.conns.len()
    }
}
