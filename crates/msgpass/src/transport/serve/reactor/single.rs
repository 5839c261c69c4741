//! The single-client path: when one connection is the server's only
//! client, or the only active one among idle clients, a worker serves it
//! in its wire's own timed receive, out of the sets, and goes back to them
//! when anything else needs looking at (see the module doc of the reactor).

use std::sync::atomic::Ordering;
use std::time::Duration;

use crate::error::Result;
use crate::transport::api::Incoming;
use crate::transport::serve::slab::Token;
use crate::transport::wire::framing::Wire;

use super::{Acceptor, Current, Lone, ReactorCore, Worker, SOLO_LOOK, SOLO_QUIET, SOLO_STREAK};

impl<A: Acceptor> ReactorCore<A> {
    /// The connection the single-client path serves, if it applies: one
    /// worker, nothing being set up or finished, and either one client
    /// (the one it last served: a client that left may have been replaced
    /// by a new one the path knows nothing of; `Lone::Sole`) or one active
    /// client among idle ones (`Lone::Busy`, see [`SOLO_STREAK`]).
    pub(super) fn single(&self, w: &Worker<A::W>) -> Option<(Token, Lone)> {
        let t = w.sole?;
        let quiet = !self.sets.pool()
            && w.queue.is_empty()
            && w.later.is_empty()
            && !self.setting_up.load(Ordering::Relaxed)
            && self.partial.is_empty();
        if !quiet {
            return None;
        }
        if self.is_sole() {
            return Some((t, Lone::Sole));
        }
        (w.streak >= SOLO_STREAK).then_some((t, Lone::Busy))
    }

    /// Counts the waits in a row that reported only the connection last
    /// served (read from a wait's events, now in the queue). Once they
    /// are [`SOLO_STREAK`], the connection is served alone if its wire
    /// can (see the module doc); if it cannot, the count starts over.
    pub(super) fn count_streak(&self, w: &mut Worker<A::W>) {
        let lone = match (w.queue.front(), w.sole) {
            (Some(ev), Some(t)) if w.queue.len() == 1 && ev.readable => {
                ev.token == t.with_mark(false)
            }
            _ => false,
        };
        if !lone {
            w.streak = 0;
            return;
        }
        w.streak += 1;
        if w.streak == SOLO_STREAK {
            let quick = w
                .sole
                .and_then(|t| self.conn(t))
                .is_some_and(|c| c.lock().wire.as_ref().is_some_and(Wire::quick_timeout));
            if !quick {
                w.streak = 0;
            }
        }
    }

    /// True when the table holds one connection (the single-client path
    /// then finds out whether it is still `t`: a connection that left
    /// has no wire).
    #[inline]
    pub(super) fn is_sole(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 1
    }

    /// With a single client: waits for its next request in the wire's own
    /// timed receive, with no wait on the set per request. Everything else
    /// is looked at as soon as the doorman says a client connected, when
    /// the client is quiet for [`SOLO_QUIET`] (the worker then waits on
    /// the set, which holds the listener, until the client sends again),
    /// and, where no door could be watched, every [`ACCEPT_EVERY`]
    /// requests once a tick has passed.
    pub(super) fn receive_single(
        &self,
        w: &mut Worker<A::W>,
        t: Token,
        lone: Lone,
    ) -> Result<Option<Incoming>> {
        if self.knocked()
            || (lone == Lone::Busy && w.calls % SOLO_LOOK == 0 && self.others_ready(w)?)
        {
            return Ok(self.leave_single(w));
        }
        self.set_alone(w, Some(t));
        let Some((_, c)) = &w.alone else {
            w.sole = None;
            return Ok(None);
        };
        let mut io = c.lock_arc();
        if io.serving {
            // Its request is held (deferred): it is muted until answered,
            // which only the set does.
            drop(io);
            return Ok(self.leave_single(w));
        }
        // A wait the doorman can end may last a tick; one it cannot, only
        // a moment (a newcomer waits for its end).
        let wait = match w.woken {
            true => self.tick,
            false => SOLO_QUIET,
        };
        match self.read(w, &mut io, Some(wait)) {
            Ok(Some(inc)) => {
                w.cur = Some(Current::Locked(io));
                Ok(Some(inc))
            }
            // The client went quiet: back to the set until it sends again.
            Err(()) => {
                drop(io);
                if w.last_look.elapsed() >= self.tick {
                    self.look_around(w);
                }
                Ok(self.leave_single(w))
            }
            // The client left (its wire closed): the path ends here.
            Ok(None) if io.wire.is_none() => {
                drop(io);
                self.set_alone(w, None);
                w.sole = None;
                Ok(None)
            }
            // A handshake step or part of a message: look around once a
            // tick, as while waiting.
            Ok(None) if w.last_look.elapsed() < self.tick => Ok(None),
            Ok(None) => {
                drop(io);
                self.harvest(w, Duration::ZERO)?;
                self.look_around(w);
                Ok(None)
            }
        }
    }

    /// True (once) when the doorman says a client connected: the worker
    /// then looks at its set, which holds the listener.
    #[inline]
    pub(super) fn knocked(&self) -> bool {
        match &self.door {
            Some(d) if d.knocked() => {
                d.answer();
                true
            }
            _ => false,
        }
    }

    /// Ends the single-client path: the worker waits on its set next,
    /// until a wait reports the client alone again.
    pub(super) fn leave_single(&self, w: &mut Worker<A::W>) -> Option<Incoming> {
        w.sole = None;
        w.streak = 0;
        None
    }

    /// While one client is served alone among idle ones: looks at the set
    /// without waiting; true (and the worker back on the set, with what
    /// it reported queued) when anything there is ready.
    pub(super) fn others_ready(&self, w: &mut Worker<A::W>) -> Result<bool> {
        if self.harvest(w, Duration::ZERO)? == 0 {
            return Ok(false);
        }
        w.streak = 0;
        Ok(true)
    }

    /// Makes `want` the connection taken out of the sets for the
    /// single-client path (`None`: none), putting the previous one back,
    /// and leaves on the door what ends a wait on its wire, if anything
    /// can (`w.woken`).
    pub(super) fn set_alone(&self, w: &mut Worker<A::W>, want: Option<Token>) {
        if w.alone.as_ref().map(|(t, _)| *t) == want {
            return;
        }
        if let Some((_, c)) = w.alone.take() {
            let mut io = c.lock();
            if let Some(wire) = &io.wire {
                let added = self.sets.add(
                    wire.poll_fd(),
                    io.token.with_mark(false),
                    Self::wire_interest(&io),
                    io.home,
                );
                if added.is_err() {
                    self.close(&mut io);
                }
            }
        }
        let waker = want.and_then(|t| self.conn(t)).and_then(|c| {
            let mut io = c.lock();
            // The wire only: the session (whose hang-up tells of a client
            // whose wire does not) stays, and is silent while it lives.
            let wire = io.wire.as_mut()?;
            self.sets.delete(wire.poll_fd());
            let waker = wire.waker(self.tick);
            drop(io);
            w.alone = Some((want?, c));
            waker
        });
        w.woken = waker.is_some();
        if let Some(d) = &self.door {
            d.wake_with(waker);
        }
    }
}
