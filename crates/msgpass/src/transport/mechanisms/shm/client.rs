//! The client side of an [`Shm`](super::Shm) connection: post a request in
//! the slot, ring the bell when nobody looks, wait for the reply.

use std::cell::Cell;
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::Ordering::*;
use std::time::{Duration, Instant};

use super::{
    bell_cpu, bell_state, slot_size, worth_spinning, Slot, Wait, BELL_FLAGS, BELL_LEN, CLOSED,
    FLAG_INHERIT, FLAG_POOL, FLAG_SPINS, LOOKING, MASK, NAPPING, REPLY, REQUEST, SPINS, WAITER,
};
use crate::error::{Error, Result};
use crate::pulse::{PULSE, PULSE_LEN};
use crate::transport::api::MAX_THREADS as MAX_WORKERS;
use crate::transport::api::{ClientConnection, Options, Status, ONEWAY};
use crate::transport::clock::pace::Pacer;
use crate::transport::mem::window::{View, Window};
use crate::transport::wire::rendezvous::{self, Family};

/// The client side of an [`Shm`](super::Shm) connection (for
/// [`Connection::open_typed`](crate::Connection::open_typed)): its slot,
/// its bell, the server's doorbell (read only) and the rendezvous session.
pub struct ShmClient {
    slot: Slot,
    bell: oslayer::mman::ReadOnlyMapping,
    /// Ours to ring: the server is told of our request.
    ring: OwnedFd,
    sock: OwnedFd,
    wait: Wait,
    max_msg: usize,
    spin: Duration,
    tick: Duration,
    /// The server never sleeps and has one thread (its doorbell says so):
    /// posting needs no look at who watches, so no locked instruction.
    server_spins: bool,
    /// The server inherits its callers' priority (its doorbell says so):
    /// each request names its calling thread in the slot.
    inherit: bool,
    /// The calling thread last named in the slot (0: none yet).
    tid: i32,
    /// Our CPU + 1 as last written to the slot.
    cpu: u32,
    /// Our request number.
    seq: u32,
    /// The last request was posted with a plain store, without a look at
    /// who watches (a spinning server): while it waits, the client looks
    /// now and then, and rings if nobody watches after all.
    unrung: Cell<bool>,
    /// How long to hold back before the first look at the reply.
    pace: Pacer,
    /// Every call's deadline, from its start.
    timeout: Option<Duration>,
}

impl ShmClient {
    /// Connects to the endpoint at `path`, waiting with `wait`.
    pub(super) fn connect(path: &Path, wait: Wait, opts: &Options) -> Result<ShmClient> {
        let (sock, hello, fds) = rendezvous::connect(path, Family::Shm, opts)?;
        let [bell_fd, slot_fd, ring]: [OwnedFd; 3] = fds.try_into().map_err(|fds: Vec<_>| {
            Error::Protocol(format!(
                "expected a doorbell, a slot and a bell, got {} descriptors",
                fds.len()
            ))
        })?;
        let protocol = |what: &str, e: std::io::Error| match e.kind() {
            std::io::ErrorKind::InvalidData => Error::Protocol(e.to_string()),
            _ => Error::io(format!("map {what}"), e),
        };
        let slot = oslayer::mman::map_sealed(slot_fd.as_fd(), slot_size(hello.max_msg), "slot")
            .map_err(|e| protocol("slot", e))?;
        let bell = oslayer::mman::map_sealed_read_only(bell_fd.as_fd(), BELL_LEN, "doorbell")
            .map_err(|e| protocol("doorbell", e))?;
        let flags = bell.load_u32(BELL_FLAGS, SeqCst);
        Ok(ShmClient {
            slot: Slot { map: slot },
            server_spins: flags & FLAG_SPINS != 0 && flags & FLAG_POOL == 0,
            inherit: flags & FLAG_INHERIT != 0,
            tid: 0,
            bell,
            ring,
            sock,
            wait,
            max_msg: hello.max_msg,
            spin: opts.spin,
            tick: opts.tick,
            cpu: 0,
            seq: 0,
            unrung: Cell::new(false),
            pace: Pacer::new(opts.pace),
            timeout: None,
        })
    }

    /// The server thread that watches our slot, if one does (what the
    /// server wrote; a lie of ours would only cost us our wake-ups).
    #[inline]
    fn watcher(&self) -> Option<usize> {
        match self.slot.watch().load(SeqCst) as usize {
            0 => None,
            w if w <= MAX_WORKERS => Some(w - 1),
            _ => None,
        }
    }

    /// Posts the request now in the slot (`len` bytes, command `cmd`),
    /// ringing the bell unless a server thread looks at our slot. Returns
    /// our CPU + 1.
    #[inline]
    fn post(&mut self, cmd: u32, len: usize) -> Result<u32> {
        if self.inherit {
            self.name_thread();
        }
        let st = self.slot.state();
        let cur = st.load(Acquire);
        if cur & MASK == CLOSED {
            return Err(Error::Disconnected);
        }
        // Our CPU matters to a hybrid waiter (spin only when the peer is
        // elsewhere) and to a pool (a connection's home is the thread on
        // its client's CPU); reading it costs a `sched_getcpu` per call,
        // about 10% of a spinning round trip here, so nobody else pays.
        let me = match self.wait == Wait::Hybrid
            || self.bell.load_u32(BELL_FLAGS, Relaxed) & FLAG_POOL != 0
        {
            true => oslayer::cpu::current_cpu(),
            false => 0,
        };
        if me != self.cpu {
            // Written only when we move: a store to the line the server
            // spins on is a transfer.
            self.slot.client_cpu().store(me, Relaxed);
            self.cpu = me;
        }
        self.seq = self.seq.wrapping_add(1);
        self.slot.seq().store(self.seq, Relaxed);
        self.slot.cmd().store(cmd, Relaxed);
        self.slot.len().store(len as u32, Relaxed);
        let post = match self.wait {
            Wait::Spin => REQUEST | SPINS,
            _ => REQUEST,
        };
        if self.server_spins && self.wait == Wait::Spin && self.watcher().is_some() {
            // A server thread spins over our slot: a plain release store
            // publishes. It may stop watching between our look and our
            // store (it unwatches slots idle for a tick): the wait looks
            // again now and then (`unrung`). Over a close by the server
            // (CLOSED) it leaves us waiting for the hang-up, which the wait
            // notices within a tick.
            st.store(post, Release);
            self.unrung.set(true);
            return Ok(me);
        }
        self.unrung.set(false);
        // Post with a CAS so that a close by the server is never overwritten.
        // SeqCst CAS, then SeqCst loads of `watch` and the watcher's state:
        // the client's half of the Dekker pair described in the module doc.
        if st.compare_exchange(cur, post, SeqCst, Acquire).is_err() {
            return Err(Error::Disconnected);
        }
        match self
            .watcher()
            .map(|w| self.bell.load_u32(bell_state(w), SeqCst))
        {
            Some(LOOKING) => {}
            // Our watcher naps on our own word.
            Some(NAPPING) => {
                oslayer::futex::wake(st, 1, true);
            }
            // The kernel tells the server which connection rang. A full
            // counter (2^64 rings) would mean one is pending already.
            _ => {
                let _ = oslayer::eventfd::write(self.ring.as_fd(), 1);
            }
        }
        Ok(me)
    }

    /// Names the calling thread in the slot when it is not the one named
    /// last (the server checks the claim with the kernel; the post that
    /// follows publishes it). The thread id is cached per thread.
    #[inline]
    fn name_thread(&mut self) {
        let tid = oslayer::thread::gettid();
        if tid != self.tid {
            self.slot.caller().store(tid as u32, Relaxed);
            self.tid = tid;
        }
    }

    /// After a post by plain store: rings if the server stopped watching
    /// our slot meanwhile and the request is still there.
    #[inline]
    fn ring_if_unwatched(&self) {
        if self.unrung.get()
            && self.watcher().is_none()
            && self.slot.state().load(SeqCst) & MASK == REQUEST
        {
            self.unrung.set(false);
            let _ = oslayer::eventfd::write(self.ring.as_fd(), 1);
        }
    }

    /// The reply's length once it is in: the server's error, or a length
    /// over the slot (a lying server), are errors.
    #[inline]
    fn reply_len(&self) -> Result<usize> {
        let status = self.slot.status().load(Relaxed);
        let len = self.slot.len().load(Relaxed) as usize;
        if status == 0 && len > self.max_msg {
            return Err(Error::Protocol(format!(
                "reply length {len} exceeds {}",
                self.max_msg
            )));
        }
        Status::check_reply(status, len, self.max_msg)?;
        Ok(len)
    }

    /// The CPU + 1 the server thread we wait for was last seen on.
    #[inline]
    fn server_cpu(&self) -> u32 {
        self.bell
            .load_u32(bell_cpu(self.watcher().unwrap_or(0)), Relaxed)
    }

    /// Waits until the server replies (`Wanted::Reply`) or hands the slot
    /// back (`Wanted::Free`: a reply, or a pulse taken); `Disconnected` if
    /// it closes or dies, `TimedOut` past `deadline`.
    #[inline]
    fn wait_reply(&mut self, me: u32, deadline: Option<Instant>, wanted: Wanted) -> Result<()> {
        let done = |s: u32| match wanted {
            Wanted::Reply => s & MASK == REPLY,
            Wanted::Free => s & MASK != REQUEST,
        };
        let mut watch = Liveness::new(self.tick);
        // (spin at all, for how long: None is for ever; the clock starts at
        // the first look at it, so a reply within 256 spins costs no read)
        let (spin, limit) = match self.wait {
            Wait::Block => (false, None),
            // (a spin of zero is no spin at all, not the 256 rounds before
            // the first look at the clock)
            Wait::Hybrid => (
                !self.spin.is_zero() && worth_spinning(me, self.server_cpu()),
                Some(self.spin),
            ),
            Wait::Spin => (true, None),
        };
        if spin {
            if let Some(r) = self.spin_for(&done, &mut watch, deadline, limit) {
                return r;
            }
        }
        // Judge liveness from the start of the blocking phase, so the first
        // tick already checks the peer.
        watch.start(Instant::now());
        let st = self.slot.state();
        loop {
            let s = st.load(Acquire);
            if s & MASK == CLOSED {
                return Err(Error::Disconnected);
            }
            if done(s) {
                return Ok(());
            }
            let wait = match deadline {
                None => self.tick,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left.min(self.tick),
                    _ => return Err(self.timed_out()),
                },
            };
            if s & WAITER == 0 && st.compare_exchange(s, s | WAITER, SeqCst, Relaxed).is_err() {
                continue;
            }
            oslayer::futex::wait(st, s | WAITER, Some(wait), true);
            if !done(st.load(Acquire))
                && watch.due(Instant::now())
                && oslayer::socket::peer_gone(self.sock.as_fd())
            {
                return Err(Error::Disconnected);
            }
        }
    }

    /// The spinning phase of [`ShmClient::wait_reply`]: looks at the
    /// slot until `done` says so (`Some(Ok)`), the server closes or dies
    /// or `deadline` passes (`Some(Err)`), or `limit` is spent (`None`:
    /// the caller blocks next). One look here; the rest in
    /// [`spin_more`](Self::spin_more).
    #[inline]
    fn spin_for(
        &mut self,
        done: &impl Fn(u32) -> bool,
        watch: &mut Liveness,
        deadline: Option<Instant>,
        limit: Option<Duration>,
    ) -> Option<Result<()>> {
        self.pace.hold();
        let s = self.slot.state().load(Acquire);
        let got = match done(s) && s & MASK != CLOSED {
            true => Some(Ok(())),
            false => self.spin_more(done, watch, deadline, limit),
        };
        if matches!(got, Some(Ok(()))) {
            self.pace.done();
        }
        got
    }

    /// The spin itself: looks at the slot until [`spin_for`](Self::spin_for)
    /// can answer, and at the clock once per 256 spins. Out of line, so
    /// that an instruction count can leave the spin out (tests/instructions.rs
    /// takes its inclusive cost off): how long it runs depends on the peer,
    /// not on our code.
    #[inline(never)]
    fn spin_more(
        &mut self,
        done: &impl Fn(u32) -> bool,
        watch: &mut Liveness,
        deadline: Option<Instant>,
        limit: Option<Duration>,
    ) -> Option<Result<()>> {
        let st = self.slot.state();
        let mut until = None;
        let mut spins: u32 = 0;
        loop {
            let s = st.load(Acquire);
            if done(s) && s & MASK != CLOSED {
                return Some(Ok(()));
            }
            if s & MASK == CLOSED {
                return Some(Err(Error::Disconnected));
            }
            std::hint::spin_loop();
            spins = spins.wrapping_add(1);
            if spins % 256 == 0 {
                self.ring_if_unwatched();
                let now = Instant::now();
                if watch.due(now) && oslayer::socket::peer_gone(self.sock.as_fd()) {
                    return Some(Err(Error::Disconnected));
                }
                if deadline.is_some_and(|d| now >= d) {
                    return Some(Err(self.timed_out()));
                }
                if let Some(limit) = limit {
                    if now >= *until.get_or_insert(now + limit) {
                        return None;
                    }
                }
            }
        }
    }

    /// The error of a call past its deadline.
    fn timed_out(&self) -> Error {
        Error::TimedOut {
            timeout: self.timeout.unwrap_or_default(),
        }
    }

    /// The deadline of a call starting now.
    #[inline]
    fn deadline(&self) -> Option<Instant> {
        self.timeout.map(|t| Instant::now() + t)
    }

    /// True when the slot is ours to write: not holding a request (or a
    /// pulse) the server has not answered (or taken) yet.
    #[inline]
    fn free(&self) -> bool {
        self.slot.state().load(Acquire) & MASK != REQUEST
    }

    /// Before a call: the slot back from the server (the late reply to a
    /// call that timed out, discarded, or a pulse taken), within `deadline`.
    #[inline]
    fn settle(&mut self, deadline: Option<Instant>) -> Result<()> {
        if self.free() {
            return Ok(());
        }
        let me = self.cpu;
        self.wait_reply(me, deadline, Wanted::Free)
    }
}

/// What a client waits for.
#[derive(Clone, Copy)]
enum Wanted {
    /// The reply to its request.
    Reply,
    /// The slot back, whatever the server did with it.
    Free,
}

/// When a waiter should next look at its peer: once per tick, counted from
/// the first time it asked (or from [`Liveness::start`]).
struct Liveness {
    tick: Duration,
    last: Option<Instant>,
}

impl Liveness {
    fn new(tick: Duration) -> Liveness {
        Liveness { tick, last: None }
    }

    /// Starts the count at `now` unless it has started already.
    fn start(&mut self, now: Instant) {
        self.last.get_or_insert(now);
    }

    /// True (and restarts the count) when a tick has passed.
    fn due(&mut self, now: Instant) -> bool {
        let last = *self.last.get_or_insert(now);
        if now.duration_since(last) < self.tick {
            return false;
        }
        self.last = Some(now);
        true
    }
}

impl ClientConnection for ShmClient {
    #[inline]
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        if req.len() > self.max_msg {
            return Err(Error::TooLarge {
                len: req.len(),
                max: self.max_msg,
            });
        }
        let deadline = self.deadline();
        self.settle(deadline)?;
        self.slot.write(req);
        let me = self.post(cmd, req.len())?;
        self.wait_reply(me, deadline, Wanted::Reply)?;
        let len = self.reply_len()?;
        Status::check_reply(0, len, reply.len())?;
        self.slot.read(&mut reply[..len]);
        Ok(len)
    }

    #[inline]
    fn max_msg(&self) -> usize {
        self.max_msg
    }

    /// The slot, unless the server has it (a reply owed to a call that
    /// timed out, a pulse not taken: the copying `call` waits for those).
    #[inline]
    fn request_buffer(&mut self) -> Option<Window<'_>> {
        if !self.free() {
            return None;
        }
        Some(self.slot.window(self.max_msg))
    }

    #[inline]
    fn call_in_place(&mut self, cmd: u32, len: usize) -> Result<View<'_>> {
        if len > self.max_msg {
            return Err(Error::TooLarge {
                len,
                max: self.max_msg,
            });
        }
        let deadline = self.deadline();
        let me = self.post(cmd, len)?;
        self.wait_reply(me, deadline, Wanted::Reply)?;
        // Loaded once and checked: the view is no longer than the slot,
        // whatever the server writes after.
        let len = self.reply_len()?;
        Ok(self.slot.view(len))
    }

    fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<()> {
        self.timeout = timeout;
        Ok(())
    }

    /// Into the slot, if it is ours now (one pulse at a time: the next
    /// waits until the server took this one).
    fn send_pulse(&mut self, payload: &[u8; PULSE_LEN]) -> Result<()> {
        if !self.free() {
            return Err(Error::PulseQueueFull);
        }
        self.slot.write(payload);
        self.post(PULSE | ONEWAY, PULSE_LEN)?;
        Ok(())
    }
}
