//! The connection table's side of the reactor: registering connections in
//! the workers' sets, accepting and setting them up, dropping them, muting
//! a connection while its request is served, and the tick's look around
//! (overdue partial messages, paused accepting).

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use oslayer::epoll::{Epoll, Interest};
use parking_lot::Mutex;

use crate::error::Result;
use crate::transport::api::Client;
use crate::transport::serve::homes::LastMove;
use crate::transport::serve::server::starved;
use crate::transport::serve::slab::Token;
use crate::transport::wire::framing::Wire;

use super::{
    setup_token, Accepting, Acceptor, Conn, ConnIo, ConnRef, ReactorCore, Setup, Worker, LISTENER,
    PEER_TICKS,
};

impl<A: Acceptor> ReactorCore<A> {
    /// Registers everything the server watches in `set` alone (a new
    /// worker), or in every set when `set` is `None`.
    pub(super) fn register_all(&self, set: &Epoll) -> io::Result<()> {
        let acc = self.accepting.lock();
        if let (Some(l), None) = (&acc.listener, acc.paused) {
            self.sets
                .add_to(set, l.as_fd(), LISTENER, Interest::READABLE)?;
        }
        let mut failed = None;
        acc.acceptor.setup_fds(&mut |fd, id| {
            if let Err(e) = self
                .sets
                .add_to(set, fd, setup_token(id), Interest::READABLE)
            {
                failed = Some(e);
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        drop(acc);
        for c in self.table.read().values() {
            let io = c.lock();
            if let Some(w) = &io.wire {
                self.sets.add_to(
                    set,
                    w.poll_fd(),
                    io.token.with_mark(false),
                    Self::wire_interest(&io),
                )?;
            }
            if let Some(s) = &io.session {
                self.sets
                    .add_to(set, s.as_fd(), io.token.with_mark(true), Interest::READABLE)?;
            }
        }
        Ok(())
    }

    /// Registers connection `io` in every set (its home's first).
    pub(super) fn watch(&self, io: &ConnIo<A::W>) -> io::Result<()> {
        if let Some(w) = &io.wire {
            self.sets.add(
                w.poll_fd(),
                io.token.with_mark(false),
                Self::wire_interest(io),
                io.home,
            )?;
        }
        if let Some(s) = &io.session {
            if let Err(e) = self.sets.add(
                s.as_fd(),
                io.token.with_mark(true),
                Interest::READABLE,
                io.home,
            ) {
                self.unwatch(io);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Unregisters connection `io` from every set.
    pub(super) fn unwatch(&self, io: &ConnIo<A::W>) {
        if let Some(w) = &io.wire {
            self.sets.delete(w.poll_fd());
        }
        if let Some(s) = &io.session {
            self.sets.delete(s.as_fd());
        }
    }

    /// A new connection (bounded: its peer is not trusted to keep its
    /// pace), or accepting starved (the listeners rest a tick).
    pub(super) fn add(&self, acc: &mut Accepting<A>, made: Result<Option<Conn<A::W>>>) {
        match made {
            Ok(Some(mut c)) => {
                if c.wire.bound(self.tick * PEER_TICKS).is_err() {
                    return;
                }
                let home = match self.sets.pool() {
                    true => self.next_home.fetch_add(1, Ordering::Relaxed) % self.sets.len(),
                    false => 0,
                };
                let mut table = self.table.write();
                let token = table.next_token();
                let peer = self.inherit.as_ref().and_then(|i| {
                    i.inherit
                        .join(token.with_mark(false), c.peer, &c.wire.poll_fd(), None)
                });
                let client = Client {
                    id: token.with_mark(false),
                    creds: c.creds,
                };
                let io = ConnIo {
                    client,
                    token,
                    wire: Some(c.wire),
                    session: c.session,
                    serving: false,
                    muted: false,
                    home,
                    moved: LastMove::default(),
                    peer,
                };
                if self.watch(&io).is_ok() {
                    if io.wire.as_ref().is_some_and(Wire::unfinished) {
                        // A handshake of the mechanism's own, bounded in time.
                        self.partial.insert(io.token);
                    }
                    table.insert(Arc::new(Mutex::new(io)));
                    self.count.store(table.len(), Ordering::Relaxed);
                }
            }
            Ok(None) => {}
            Err(e) if starved(&e) => self.pause(acc),
            Err(_) => {}
        }
    }

    /// Leaves the listeners alone for a tick (accepting starved).
    pub(super) fn pause(&self, acc: &mut Accepting<A>) {
        if acc.paused.is_some() {
            return;
        }
        acc.paused = Some(Instant::now() + self.tick);
        if let Some(l) = &acc.listener {
            self.sets.delete(l.as_fd());
        }
        acc.acceptor.listeners(&mut |fd, _| self.sets.delete(fd));
    }

    /// Watches the listeners again once their rest is over.
    pub(super) fn resume(&self, acc: &mut Accepting<A>, now: Instant) {
        if acc.paused.is_none_or(|until| now < until) {
            return;
        }
        acc.paused = None;
        if let Some(l) = &acc.listener {
            let _ = self.sets.add(l.as_fd(), LISTENER, Interest::READABLE, 0);
        }
        acc.acceptor.listeners(&mut |fd, id| {
            let _ = self.sets.add(fd, setup_token(id), Interest::READABLE, 0);
        });
    }

    /// The listener is readable: accepts the clients waiting, a backlog's
    /// worth at most.
    pub(super) fn accept(&self) {
        if let Some(d) = &self.door {
            d.answer();
        }
        let mut acc = self.accepting.lock();
        let acc = &mut *acc;
        for _ in 0..ACCEPT_BURST {
            let Some(l) = &acc.listener else { return };
            if acc.paused.is_some() || !readable_now(l.as_fd()) {
                break;
            }
            let setup = Setup { sets: &self.sets };
            let made = acc.acceptor.accept(l, &setup);
            self.add(acc, made);
        }
        self.setting_up
            .store(acc.acceptor.setting_up(), Ordering::Relaxed);
    }

    /// Set-up step `id` is ready: one step.
    pub(super) fn setup_step(&self, id: u32) {
        let mut acc = self.accepting.lock();
        let setup = Setup { sets: &self.sets };
        let made = acc.acceptor.setup_ready(id, &setup);
        self.add(&mut acc, made);
        self.setting_up
            .store(acc.acceptor.setting_up(), Ordering::Relaxed);
    }

    /// What is due once a tick: set-up work that took too long, listeners
    /// at rest, peers that began a message and did not finish it.
    pub(super) fn look_around(&self, w: &mut Worker<A::W>) {
        let now = Instant::now();
        w.last_look = now;
        {
            let mut acc = self.accepting.lock();
            let setup = Setup { sets: &self.sets };
            acc.acceptor.expire(&setup);
            self.resume(&mut acc, now);
            self.setting_up
                .store(acc.acceptor.setting_up(), Ordering::Relaxed);
        }
        for t in self.partial.take() {
            let Some(c) = self.conn(t) else { continue };
            let mut io = c.lock();
            match &io.wire {
                Some(wire) if wire.overdue(now) => self.close(&mut io),
                Some(wire) if wire.unfinished() => self.partial.insert(t),
                _ => {}
            }
        }
    }

    /// The connection of token `t`, if it is still there.
    #[inline]
    pub(super) fn conn(&self, t: Token) -> Option<ConnRef<A::W>> {
        self.table.read().get(t).cloned()
    }

    /// Drops connection `io`: out of the table and the sets, its
    /// descriptors closed. A handle still holding it finds it closed.
    ///
    /// Lock order: a connection's lock, then the table's. Nothing holds
    /// the table's lock while it takes a connection's, except while a pool
    /// is being formed, when no worker runs.
    pub(super) fn close(&self, io: &mut ConnIo<A::W>) {
        if io.wire.is_none() {
            return;
        }
        self.unwatch(io);
        let mut table = self.table.write();
        table.remove(io.token);
        self.count.store(table.len(), Ordering::Relaxed);
        drop(table);
        io.wire = None;
        io.session = None;
        if let (Some(i), Some(_)) = (&self.inherit, io.peer.take()) {
            i.inherit.leave(io.token.with_mark(false));
        }
    }

    /// Stops reading a connection that sent while its request is held,
    /// until the reply: its wire is watched for a hang-up only, so that a
    /// client that dies meanwhile is dropped at once.
    pub(super) fn mute(&self, io: &mut ConnIo<A::W>) {
        if io.muted {
            return;
        }
        io.muted = true;
        if self.rewatch_wire(io, Interest::HANGUP).is_err() {
            self.close(io);
        }
    }

    /// Registers the wire of `io` again, with `interest`.
    pub(super) fn rewatch_wire(&self, io: &ConnIo<A::W>, interest: Interest) -> io::Result<()> {
        let Some(w) = &io.wire else { return Ok(()) };
        self.sets.delete(w.poll_fd());
        self.sets
            .add(w.poll_fd(), io.token.with_mark(false), interest, io.home)
    }

    /// The interest the wire of `io` is registered with.
    pub(super) fn wire_interest(io: &ConnIo<A::W>) -> Interest {
        match io.muted {
            true => Interest::HANGUP,
            false => Interest::READABLE,
        }
    }
}

/// Most clients accepted in one round (the listen backlog): a burst of
/// connects must not outlast the clients' hello timeout.
const ACCEPT_BURST: usize = 128;

/// True when `fd` polls readable now.
fn readable_now(fd: BorrowedFd<'_>) -> bool {
    let mut p = [oslayer::poll::PollFd::readable(fd)];
    oslayer::poll::poll(&mut p, Some(Duration::ZERO)).unwrap_or(0) > 0
}
