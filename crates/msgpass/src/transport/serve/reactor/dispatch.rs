//! From ready to reply: handling what a wait reports, reading one framed
//! message off a ready connection (hints, pulses, the caller's boost), the
//! request a worker holds, and sending its reply.

use std::io;
use std::time::Duration;

use oslayer::epoll::{Interest, Ready};

use crate::error::{Error, Result};
use crate::pulse::{is_pulse, Pulse};
use crate::transport::api::{Incoming, Status};
use crate::transport::serve::slab::Token;
use crate::transport::wire::framing::{frame_head, head, Wire, HEAD, HINT, TID, TID_CALL};

use super::{Acceptor, ConnIo, Current, ReactorCore, Source, Worker};

impl<A: Acceptor> ReactorCore<A> {
    /// The reply to a connection is out: it is no longer serving, and is
    /// read again if it was muted.
    pub(super) fn served(&self, io: &mut ConnIo<A::W>) {
        io.serving = false;
        if io.muted && io.wire.is_some() {
            io.muted = false;
            if self.rewatch_wire(io, Interest::READABLE).is_err() {
                self.close(io);
            }
        }
    }

    /// Sends a reply on connection `io`; a client gone (or not taking it
    /// in time) is dropped, which is not the replier's error.
    pub(super) fn send(&self, io: &mut ConnIo<A::W>, code: u32, data: &[u8]) {
        let Some(wire) = &mut io.wire else { return };
        if wire.send(&head(code, data.len()), data).is_err() {
            self.close(io);
        }
    }

    /// Reads the request waiting on connection `io` into `w`; `None` when
    /// there was none after all (a pool's stale event), when what came was
    /// a handshake step of the mechanism or part of a message, or when the
    /// connection turned out dead or broken (and was dropped).
    ///
    /// With a `timeout`, waits for the request at most that long (a time
    /// out is `Err(())`); without, one must be waiting (a pool first checks
    /// that one is).
    pub(super) fn read(
        &self,
        w: &mut Worker<A::W>,
        io: &mut ConnIo<A::W>,
        timeout: Option<Duration>,
    ) -> std::result::Result<Option<Incoming>, ()> {
        let pool = self.sets.pool();
        let Some(wire) = io.wire.as_mut() else {
            return Ok(None);
        };
        let got = match (timeout, pool) {
            (Some(t), _) => wire.recv_lent(&mut w.buf, Some(t)),
            (None, true) => wire.recv_lent_now(&mut w.buf),
            (None, false) => wire.recv_lent(&mut w.buf, None),
        };
        match got {
            Ok(Some(len)) => {
                let (cmd, hlen) = frame_head(&w.buf);
                if hlen != len {
                    self.close(io);
                    return Ok(None);
                }
                w.len = len;
                if wire.has_buffered() {
                    // Next round, without waiting for the kernel.
                    w.later.push(io.token);
                }
                if cmd == HINT {
                    self.hinted(io, &w.buf[HEAD..HEAD + len]);
                    return Ok(None);
                }
                if cmd == TID || cmd == TID_CALL {
                    let payload = wire.received(len).unwrap_or(&w.buf[HEAD..HEAD + len]);
                    if let Some(p) = &io.peer {
                        p.claimed(payload);
                    }
                    if cmd == TID_CALL {
                        self.send(io, Status::Ok.encode(&[]).0, &[]);
                    }
                    return Ok(None);
                }
                if is_pulse(cmd) {
                    let payload = wire.received(len).unwrap_or(&w.buf[HEAD..HEAD + len]);
                    if Pulse::decode(payload).is_none() {
                        // A malformed pulse breaks the protocol.
                        self.close(io);
                        return Ok(None);
                    }
                }
                let inc = Incoming::from_wire(cmd, len);
                if self.inherit.is_some() {
                    self.boost(w, io, inc);
                }
                Ok(Some(inc))
            }
            // A handshake step of the mechanism, or part of a message.
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                if wire.unfinished() {
                    self.partial.insert(io.token);
                }
                Ok(None)
            }
            Err(e) if e.kind() == io::ErrorKind::TimedOut => Err(()),
            Ok(None) | Err(_) => {
                self.close(io);
                Ok(None)
            }
        }
    }

    /// With priority inheritance, a message of connection `io` was taken:
    /// a request runs the worker at its caller's scheduling until the
    /// reply (see `priority.rs`); any message ends a boost on arrival the
    /// watcher gave for it.
    #[inline(never)]
    pub(super) fn boost(&self, w: &mut Worker<A::W>, io: &ConnIo<A::W>, inc: Incoming) {
        let (Some(_), Some(b)) = (&self.inherit, &w.boosts) else {
            return;
        };
        let key = io.token.with_mark(false);
        let caller = match inc.oneway {
            true => None,
            false => io.peer.as_ref().and_then(|p| p.caller()),
        };
        match caller {
            Some(a) => w.boost = Some(b.begin(key, a)),
            None => b.taken(key),
        }
    }

    /// Connection `io` says its client runs on CPU `payload` - 1 (a
    /// [`HINT`]): a pool moves its home to the thread pinned on that CPU,
    /// at most once a tick (a client must not make us re-register it each
    /// call). A single thread has nothing to move.
    pub(super) fn hinted(&self, io: &mut ConnIo<A::W>, payload: &[u8]) {
        let Ok(cpu) = <[u8; 4]>::try_from(payload).map(u32::from_le_bytes) else {
            return;
        };
        if !self.sets.pool() || cpu == 0 || io.muted {
            return;
        }
        let Some(to) = self.homes.move_to(cpu, io.home) else {
            return;
        };
        if !io.moved.allow(self.tick) {
            return;
        }
        self.unwatch(io);
        io.home = to;
        if self.watch(io).is_err() {
            self.close(io);
        }
    }

    /// A wire event for token `t`: reads its request, if any.
    pub(super) fn wire_ready(&self, w: &mut Worker<A::W>, t: Token) -> Option<Incoming> {
        let c = self.conn(t)?;
        let mut io = match self.sets.pool() {
            true => c.try_lock_arc()?,
            false => c.lock_arc(),
        };
        if io.serving {
            self.mute(&mut io);
            return None;
        }
        let inc = self.read(w, &mut io, None).ok()??;
        w.sole = Some(t);
        w.cur = Some(match self.sets.pool() {
            true => {
                io.serving = !inc.oneway;
                drop(io);
                Current::Serving(c)
            }
            false => Current::Locked(io),
        });
        Some(inc)
    }

    /// Handles one harvested event; a request when it brought one.
    pub(super) fn handle(&self, w: &mut Worker<A::W>, ev: Ready) -> Option<Incoming> {
        match Source::of(ev.token) {
            Source::Listener => self.accept(),
            Source::Setup(id) => self.setup_step(id),
            Source::Wire(t) if ev.readable => return self.wire_ready(w, t),
            // Hang-up or error without data, on the wire or the session
            // (a client never writes on its session): the client is gone.
            Source::Wire(t) | Source::Session(t) => {
                if let Some(c) = self.conn(t) {
                    self.close(&mut c.lock());
                }
            }
        }
        None
    }

    /// Starts a round: waits up to `timeout` on the worker's set (not at
    /// all when connections have messages buffered already) and queues what
    /// it reports, then the connections with buffered messages that it did
    /// not report. Returns how many it queued.
    pub(super) fn harvest(&self, w: &mut Worker<A::W>, timeout: Duration) -> Result<usize> {
        let timeout = match w.later.is_empty() {
            true => timeout,
            false => Duration::ZERO,
        };
        w.set
            .wait(&mut w.events, Some(timeout))
            .map_err(|e| Error::io("epoll_wait", e))?;
        for t in w.later.drain(..) {
            let raw = t.with_mark(false);
            if !w.events.iter().any(|e| e.token == raw) {
                w.events.push(Ready {
                    token: raw,
                    readable: true,
                    hangup: false,
                });
            }
        }
        let n = w.events.len();
        w.queue.extend(w.events.drain(..));
        Ok(n)
    }

    /// With inheritance, `w` answers its request with `send`: before,
    /// the watcher is disarmed (see `Boost::replying`); after, the boost
    /// ends, told whether the reply found its caller gone (see
    /// `Boost::undelivered`). Out of the plain reply's way, which pays
    /// one branch for it.
    #[inline(never)]
    pub(super) fn reply_inheriting(
        &self,
        w: &mut Worker<A::W>,
        send: impl FnOnce(&mut ConnIo<A::W>),
    ) -> Result<()> {
        if let Some(b) = &w.boost {
            b.replying();
        }
        let io = self.current(w)?;
        send(io);
        let gone = io.wire.is_none();
        w.cur = None;
        super::end_boost(&mut w.boost, gone);
        Ok(())
    }

    /// The request `w` holds: the connection it came from.
    pub(super) fn current<'a>(&self, w: &'a mut Worker<A::W>) -> Result<&'a mut ConnIo<A::W>> {
        match w.cur.as_mut() {
            Some(Current::Locked(io)) => Ok(&mut **io),
            _ => Err(Error::no_request()),
        }
    }
}
