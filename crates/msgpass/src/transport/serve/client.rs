//! The one client of the descriptor-driven transports: sends a framed
//! request on a [`Wire`] and waits for the framed reply, watching the
//! server's liveness where the wire does not report it by itself.
//!
//! **Deadlines.** A call with a timeout waits in `poll` on the wire (one
//! call more than a call without, which waits in the wire's own blocking
//! receive) and gives up at its deadline with [`Error::TimedOut`]. The
//! reply it did not wait for is then *owed*: the server answers every
//! request once, in order on a connection, so the next reply to arrive is
//! that one, and the next call waits for it (within its own deadline) and
//! discards it before it sends. A connection thus never has more than one
//! request at the server, and a late reply is never taken for another's.
//!
//! **Pulses** go on the wire as one-way messages, sent only if the path
//! has room now ([`Wire::send_now`]); where a full path would drop a
//! message silently (udp), at most [`Traits::pulse_credit`] between two
//! replies.

use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::pulse::{PULSE, PULSE_LEN};
use crate::transport::api::{ClientConnection, ONEWAY};
use crate::transport::mem::window::{View, Window};
use crate::transport::serve::owed::Owed;
use crate::transport::wire::framing::{
    check_reply_head, head, unpack_reply, Wire, HEAD, HINT, TID, TID_CALL,
};

/// What a [`WireClient`] knows of its mechanism.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Traits {
    /// The wire's receive reports a dead server (end of file) by itself.
    pub(crate) eof_on_death: bool,
    /// The wire carries one-way messages (see [`ClientConnection::oneway`]).
    pub(crate) oneway: bool,
    /// Pulses allowed between two replies where a full path drops
    /// messages silently (see `Mechanism::PULSE_CREDIT`).
    pub(crate) pulse_credit: Option<u32>,
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
    /// The calling thread last named to the server (0: none yet).
    tid: i32,
    /// Every call's deadline, from its start.
    timeout: Option<Duration>,
    /// A call timed out: the next reply to arrive is its, to discard.
    owed: Owed,
    /// Pulses sent since the last reply (counted where the credit applies).
    pulses: u32,
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

/// The time left before `deadline`, `None` once it has passed.
fn left(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
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
            tid: 0,
            timeout: None,
            owed: Owed::none(),
            pulses: 0,
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

    /// Names the calling thread to the server when it is not the one
    /// last named on this connection, so that a server with priority
    /// inheritance can ask the kernel how it is scheduled: a one-way
    /// [`TID`] message before the request on wires that queue messages;
    /// elsewhere (one message at a time in each direction: eventfd,
    /// posix-mq, io-uring) a [`TID_CALL`] the server answers at once, one
    /// round trip more. The thread id is cached per thread (no system call
    /// a call); a message only when another thread calls.
    #[inline]
    pub(crate) fn name_thread(&mut self, deadline: Option<Instant>) -> Result<()> {
        let tid = oslayer::thread::gettid();
        if tid == self.tid {
            return Ok(());
        }
        self.rename(tid, deadline)
    }

    /// [`WireClient::name_thread`] when another thread calls: the message,
    /// or on a wire without one-way messages a call whose empty reply says
    /// the server has read the claim.
    #[cold]
    fn rename(&mut self, tid: i32, deadline: Option<Instant>) -> Result<()> {
        if self.traits.oneway {
            self.tid = tid;
            return sent(self.wire.send(&head(TID, 4), &tid.to_le_bytes()));
        }
        sent(self.wire.send(&head(TID_CALL, 4), &tid.to_le_bytes()))?;
        let len = self.await_reply(deadline)?;
        check_reply_head(&self.buf, len, 0)?;
        self.tid = tid;
        Ok(())
    }

    /// The deadline of a call starting now.
    #[inline]
    fn deadline(&self) -> Option<Instant> {
        self.timeout.map(|t| Instant::now() + t)
    }

    /// The error of a call past its deadline.
    fn timed_out(&self) -> Error {
        Error::TimedOut {
            timeout: self.timeout.unwrap_or_default(),
        }
    }

    /// Before a call: the reply owed to a call that timed out, waited for
    /// (until `deadline`) and discarded.
    #[inline]
    fn settle(&mut self, deadline: Option<Instant>) -> Result<()> {
        let mut owed = std::mem::take(&mut self.owed);
        let r = owed.settle(|()| {
            self.receive_one(deadline)
                .map(drop)
                .map_err(|e| self.timing_out(e))
        });
        self.owed = owed;
        r
    }

    /// A wait that timed out is the call's [`Error::TimedOut`].
    fn timing_out(&self, e: Error) -> Error {
        match e {
            Error::TimedOut { .. } => self.timed_out(),
            e => e,
        }
    }

    /// Sends one request with wire code `code`, checking its size first.
    fn send_request(&mut self, code: u32, req: &[u8], deadline: Option<Instant>) -> Result<()> {
        fits(req.len(), self.max_msg)?;
        // The thread first: a server's watcher looks only at the first
        // message waiting (see `priority.rs`).
        self.name_thread(deadline)?;
        self.hint_cpu()?;
        for attempt in 0u32.. {
            match self.wire.send(&head(code, req.len()), req) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.await_room(deadline, attempt)?
                }
                r => return sent(r),
            }
        }
        unreachable!("the attempts never run out")
    }

    /// The path to the server holds pulses it has not taken yet: waits
    /// for room (until `deadline`, watching the server's liveness), in
    /// `poll` where the wire has a descriptor for it, else a nap that
    /// doubles with each `attempt` (20 us, up to a tick).
    fn await_room(&mut self, deadline: Option<Instant>, attempt: u32) -> Result<()> {
        let nap = Duration::from_micros(20 << attempt.min(13));
        loop {
            if self.server_gone() {
                return Err(Error::Disconnected);
            }
            let wait = match deadline {
                Some(d) => left(d).ok_or_else(|| self.timed_out())?.min(self.tick),
                None => self.tick,
            };
            match self.wire.room_fd() {
                Some(fd) => {
                    let mut p = [oslayer::poll::PollFd::writable(fd)];
                    let n = oslayer::poll::poll(&mut p, Some(wait))
                        .map_err(|e| Error::io("poll for room", e))?;
                    if n > 0 {
                        return Ok(());
                    }
                }
                // Nothing to wait on: look again after a short while.
                None => {
                    std::thread::sleep(nap.min(wait));
                    return Ok(());
                }
            }
        }
    }

    /// True when the session says the server is gone (where the wire
    /// does not say so itself: elsewhere the server may close the session
    /// once the wire is made, and its end of file on the wire tells).
    fn server_gone(&self) -> bool {
        !self.traits.eof_on_death
            && self
                .session
                .as_ref()
                .is_some_and(|s| oslayer::socket::peer_gone(s.as_fd()))
    }

    /// The payload of the reply last received (`len` bytes): in the wire's
    /// own buffer on a wire that lends one, else in ours after the header.
    fn reply_payload(&self, len: usize) -> &[u8] {
        match self.wire.received(len) {
            Some(lent) => lent,
            None => &self.buf[HEAD..HEAD + len],
        }
    }

    /// Waits for the reply to the call under way: its payload length.
    /// Past `deadline` the reply is owed (the next call discards it) and
    /// this is [`Error::TimedOut`].
    fn await_reply(&mut self, deadline: Option<Instant>) -> Result<usize> {
        let r = self.receive_one(deadline);
        self.owed.after_wait(r, ()).map_err(|e| self.timing_out(e))
    }

    /// Receives one reply (until `deadline`, if any).
    fn receive_one(&mut self, deadline: Option<Instant>) -> Result<usize> {
        let len = match deadline {
            None => self.recv_reply(),
            Some(d) => self.recv_reply_until(d),
        }?;
        self.pulses = 0;
        Ok(len)
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
        received(got)
    }

    /// [`WireClient::recv_reply`] that gives up at `deadline` (a
    /// [`Error::TimedOut`] carrying no timeout: the caller's to fill): it
    /// waits in `poll` on the wire, a tick at a time, watching the session.
    fn recv_reply_until(&mut self, deadline: Instant) -> Result<usize> {
        loop {
            if !self.wire.has_buffered() {
                let wait = left(deadline).ok_or(Error::TimedOut {
                    timeout: Duration::ZERO,
                })?;
                let mut p = [oslayer::poll::PollFd::readable(self.wire.poll_fd())];
                let n = oslayer::poll::poll(&mut p, Some(wait.min(self.tick)))
                    .map_err(|e| Error::io("poll for the reply", e))?;
                if n == 0 {
                    if self.server_gone() {
                        return Err(Error::Disconnected);
                    }
                    continue;
                }
            }
            match self.wire.recv_lent(&mut self.buf, None) {
                // What woke the poll was no message after all (a pipe
                // poke, an eventfd's pokes alone): wait on.
                Err(e) if e.kind() == io::ErrorKind::TimedOut => continue,
                got => return received(got),
            }
        }
    }
}

/// What a receive of a reply came to.
fn received(got: io::Result<Option<usize>>) -> Result<usize> {
    match got {
        Ok(Some(len)) => Ok(len),
        Ok(None) => Err(Error::Disconnected),
        Err(e) if is_gone(&e) => Err(Error::Disconnected),
        Err(e) => Err(Error::io("receive reply", e)),
    }
}

impl<W: Wire> ClientConnection for WireClient<W> {
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        let deadline = self.deadline();
        self.settle(deadline)?;
        self.send_request(cmd, req, deadline)?;
        let len = self.await_reply(deadline)?;
        unpack_reply(&self.buf, self.reply_payload(len), reply)
    }

    fn max_msg(&self) -> usize {
        self.max_msg
    }

    /// The wire's own memory, where it lends it: shorter than the
    /// maximum the server announced (a lying server), it is not lent; nor
    /// while a reply is owed or the memory still holds a pulse the server
    /// has not taken (the copying `call` waits for those first).
    fn request_buffer(&mut self) -> Option<Window<'_>> {
        if self.owed.is_owed() {
            return None;
        }
        // Named before the memory is lent: on a wire without one-way
        // messages the claim travels in that memory. A failure here comes
        // back from the copying call the caller falls back to.
        let tid = oslayer::thread::gettid();
        if tid != self.tid && self.rename(tid, self.deadline()).is_err() {
            return None;
        }
        let max = self.max_msg;
        self.wire.send_buffer(0)?.get_mut(..max).map(Window::from)
    }

    fn call_in_place(&mut self, cmd: u32, len: usize) -> Result<View<'_>> {
        fits(len, self.max_msg)?;
        let deadline = self.deadline();
        self.hint_cpu()?;
        sent(self.wire.send_in_place(&head(cmd, len)))?;
        let len = self.await_reply(deadline)?;
        check_reply_head(&self.buf, len, self.max_msg)?;
        Ok(View::from(self.reply_payload(len)))
    }

    fn send_oneway(&mut self, cmd: u32, req: &[u8]) -> Result<()> {
        if !self.traits.oneway {
            return Err(Error::unsupported("one-way messages"));
        }
        // A dead server's end is closed: a pipe or stream write fails with
        // EPIPE, a datagram pair refuses the send (ECONNREFUSED), also one
        // blocked on a full queue.
        self.send_request(cmd | ONEWAY, req, None)
    }

    fn oneway(&self) -> bool {
        self.traits.oneway
    }

    fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<()> {
        self.timeout = timeout;
        Ok(())
    }

    fn send_pulse(&mut self, payload: &[u8; PULSE_LEN]) -> Result<()> {
        if self.traits.pulse_credit.is_some_and(|c| self.pulses >= c) {
            return Err(Error::PulseQueueFull);
        }
        match self
            .wire
            .send_now(&head(PULSE | ONEWAY, PULSE_LEN), payload)
        {
            Ok(true) => {
                self.pulses += 1;
                Ok(())
            }
            Ok(false) => Err(Error::PulseQueueFull),
            Err(e) if e.kind() == io::ErrorKind::Unsupported => Err(Error::unsupported("pulses")),
            Err(e) => Err(match is_gone(&e) {
                true => Error::Disconnected,
                false => Error::io("send pulse", e),
            }),
        }
    }
}
