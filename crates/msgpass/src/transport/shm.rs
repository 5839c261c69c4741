//! `shm`, `shm-spin`, `shm-block`, `shm-hybrid`: a shared-memory slot per
//! connection, with futex wake-ups.
//!
//! Rendezvous: the server listens on a Unix seqpacket socket at the
//! endpoint path. For each client it creates two sealed memfds and passes
//! them with SCM_RIGHTS: the channel's *doorbell* (shared by all clients of
//! the channel, written by the server alone) and the connection's *slot*. Nothing is named in /dev/shm,
//! so a crash leaves nothing behind; the socket stays open to detect death.
//!
//! Slot layout (one per connection; the first cache line carries the state,
//! the header and the first 40 payload bytes, so a small round trip moves a
//! single line each way):
//!
//! ```text
//! 0  state  u32  futex word: EMPTY, REQUEST, REPLY or CLOSED, | WAITER when the client sleeps,
//!                | SPINS on a request from a client that never sleeps
//! 4  cmd    u32  request command
//! 8  len    u32  payload length (request, then reply)
//! 12 status i32  0 or an errno (reply)
//! 16 cpu    u32  the client's CPU + 1 at its last call (hybrid waiting)
//! 24 data        payload, up to max_msg bytes
//! ```
//!
//! Doorbell layout: `spins` (u32 at 0: 1 when the server never sleeps, so
//! a client need not look at `sleeping`), `sleeping` (u32 at 4) and the
//! server's CPU + 1 (u32 at 64, on a line of its own). Only the server writes it: its memfd is
//! sealed with `F_SEAL_FUTURE_WRITE` once the server has mapped it, so
//! clients can map it only for reading.
//!
//! Waking the server. The server sets `sleeping`, loads every slot's state
//! and, if none holds a request, waits on all those state words at once
//! (`futex_waitv`), each expected to hold the value it just loaded. A
//! client posts a request into its own slot's state and, if it sees
//! `sleeping`, wakes that same word. Posting (SeqCst CAS on the state,
//! then a SeqCst load of `sleeping`) and going to sleep (SeqCst store of
//! `sleeping`, then SeqCst loads of the states) form a Dekker pair: either
//! the server's load sees the request, or the client sees `sleeping` and
//! wakes; a wake that comes before the server is queued is not lost, as
//! the kernel then finds the word changed from the value the server
//! expects and returns at once.
//!
//! No client can stall the server for the others: the only words a client
//! can write are in its own slot. Garbage there costs the server spurious
//! wake-ups (and the client its own answers), never a missed wake-up of
//! an honest client, whose word nobody else can write. (Before, the
//! doorbell held a shared `seq` futex word and `sleeping` flag that every
//! client could write: one client clearing `sleeping`, or putting `seq`
//! back, silenced everyone's wake-ups until the server's next tick.)
//! `futex_waitv` watches at most 128 words: with more connections the
//! server watches 128 of them in turn and sleeps at most [`OVERFLOW_NAP`]
//! at a time. The cost per message is unchanged: the client's wake is one
//! `futex_wake`, the server's sleep one `futex_waitv`.
//!
//! A client that never sleeps (`shm-spin`) posts `REQUEST | SPINS`: it will
//! never set WAITER, so the server publishes the reply with a plain release
//! store instead of the atomic swap that reads WAITER (on this VM the swap
//! was most of the server's time outside its spin loop).
//!
//! In place ([`Connection::call_with`](crate::Connection::call_with),
//! [`Request::reply_with`](crate::Request::reply_with)): the payload is
//! read and written in the slot itself, by both sides, so a round trip
//! copies nothing; the copying calls copy in and out of the slot. The
//! request is read in place in both cases ([`Request::data`](crate::Request::data)).
//! After seeing its peer's post, each side's path to its own post is kept
//! short (no clock, no system call, no locked instruction against a
//! spinning peer): that path is all a spinning round trip adds to the
//! cache-line transfers.
//!
//! Pacing ([`Options::pace`], on by default): a waiter that spins holds
//! back for a learnt number of pauses before its first look at the state
//! word, since a look while the peer is between seeing our post and making
//! its own takes the line away from it and doubles the transfer its store
//! pays. The hold is learnt per side from the time batches of calls take
//! (`pace.rs`); on this VM it took a spinning round trip from about 2x the
//! two-process cache-line floor to about 1.5x.
//!
//! Every wait is bounded by [`Options::tick`]; after each tick the waiter
//! checks its peer's socket for a hang-up, which is how a dead server or a
//! dead client is noticed.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering::*};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::transport::pace::Pacer;
use crate::transport::rendezvous::{self, Family, Listener};
use crate::transport::server::{greeted, in_place_parts, refuse, Guard, Session, Sessions};
use crate::transport::{
    ClientConnection, Incoming, Options, ServerChannel, Status, Transport, Typed,
};
use oslayer::mman::Mapping;

/// How a side waits for the other: the transport table's [`Wait`].
pub use crate::transport::Wait;

/// The shared-memory transport with a given wait strategy.
#[derive(Debug, Clone, Copy)]
pub struct Shm {
    wait: Wait,
}

impl Shm {
    /// The transport, waiting with `wait` on both sides.
    pub fn new(wait: Wait) -> Shm {
        Shm { wait }
    }

    /// The typed transport a name or alias of the transport table stands
    /// for when it is one of the shared-memory family (`shm`, `shm-spin`,
    /// `shm-block`, `shm-hybrid`), for programs that pick the transport at
    /// run time but want the typed channels for shm; `None` for any other
    /// transport (or an unknown name).
    pub fn by_name(name: &str) -> Option<Shm> {
        let info = crate::transport::info(name).ok()?;
        (info.family == Some(Family::Shm)).then(|| Shm::new(info.wait))
    }
}

const EMPTY: u32 = 0;
const REQUEST: u32 = 1;
const REPLY: u32 = 2;
const CLOSED: u32 = 3;
const WAITER: u32 = 0x100;
/// Set with REQUEST by a client that never sleeps (so never sets WAITER).
const SPINS: u32 = 0x200;
const MASK: u32 = 0xff;
const DATA: usize = 24;
const PAGE: usize = 4096;
/// Receives between two looks at the clock for housekeeping while busy.
const HOUSEKEEP_EVERY: u32 = 1024;
/// The longest sleep of a server with more connections than one
/// `futex_waitv` can watch (those it does not watch are looked at after).
const OVERFLOW_NAP: Duration = Duration::from_millis(1);
/// Attempts the closing server makes to mark a slot CLOSED while its
/// client keeps changing the state word.
const CLOSE_ATTEMPTS: u32 = 16;

impl Transport for Shm {
    fn name(&self) -> &'static str {
        match self.wait {
            Wait::Spin => "shm-spin",
            Wait::Block => "shm-block",
            Wait::Hybrid => "shm-hybrid",
        }
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        Ok(Box::new(self.serve_typed(path, opts)?))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        Ok(Box::new(self.connect_typed(path, opts)?))
    }
}

impl Typed for Shm {
    type Server = ShmServer;
    type Client = ShmClient;

    fn serve_typed(&self, path: &Path, opts: &Options) -> Result<ShmServer> {
        let listener = Listener::bind(path, Family::Shm, opts.max_msg)?;
        let (bell_fd, bell) = oslayer::mman::memfd_owned("msgpass-doorbell", PAGE)
            .map_err(|e| Error::io("memfd_create doorbell", e))?;
        bell.atomic_u32(BELL_SPINS)
            .store((self.wait == Wait::Spin) as u32, SeqCst);
        Ok(ShmServer {
            bell_fd,
            bell,
            conns: Sessions::new(listener),
            wait: self.wait,
            opts: opts.clone(),
            len: 0,
            guard: Guard::default(),
            next: 0,
            calls: 0,
            last_housekeeping: Instant::now(),
            pace: Pacer::new(opts.pace),
        })
    }

    fn connect_typed(&self, path: &Path, opts: &Options) -> Result<ShmClient> {
        let (sock, hello, mut fds) = rendezvous::connect(path, Family::Shm, opts)?;
        if fds.len() != 2 {
            return Err(Error::Protocol(format!(
                "expected 2 memfds, got {}",
                fds.len()
            )));
        }
        let slot_fd = fds.pop().expect("length checked");
        let bell_fd = fds.pop().expect("length checked");
        let slot_len = slot_size(hello.max_msg);
        let map = |fd: &OwnedFd, len, what| {
            oslayer::mman::map_sealed(fd.as_fd(), len, what).map_err(|e| match e.kind() {
                std::io::ErrorKind::InvalidData => Error::Protocol(e.to_string()),
                _ => Error::io(format!("map {what}"), e),
            })
        };
        let bell = oslayer::mman::map_sealed_read_only(bell_fd.as_fd(), PAGE, "doorbell").map_err(
            |e| match e.kind() {
                std::io::ErrorKind::InvalidData => Error::Protocol(e.to_string()),
                _ => Error::io("map doorbell", e),
            },
        )?;
        Ok(ShmClient {
            slot: Slot {
                map: map(&slot_fd, slot_len, "slot")?,
            },
            server_spins: bell.load_u32(BELL_SPINS, SeqCst) == 1,
            bell,
            sock,
            wait: self.wait,
            max_msg: hello.max_msg,
            spin: opts.spin,
            tick: opts.tick,
            cpu: 0,
            pace: Pacer::new(opts.pace),
        })
    }
}

fn slot_size(max_msg: usize) -> usize {
    (DATA + max_msg).div_ceil(PAGE) * PAGE
}

/// A mapped slot. All access goes through atomics and raw copies: the
/// other side is another process we do not trust to follow the protocol.
struct Slot {
    map: Mapping,
}

impl Slot {
    fn map(fd: &OwnedFd, len: usize) -> Result<Slot> {
        Ok(Slot {
            map: Mapping::new(fd.as_fd(), len).map_err(|e| Error::io("mmap slot", e))?,
        })
    }

    fn word(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: offset is one of 0, 4, 8, 12, 16: 4-byte aligned and inside the
        // (page-aligned, at least one page long) mapping, which outlives the
        // reference. AtomicU32 tolerates concurrent access from the peer.
        unsafe { &*(self.map.ptr().add(offset) as *const AtomicU32) }
    }

    fn state(&self) -> &AtomicU32 {
        self.word(0)
    }
    fn cmd(&self) -> &AtomicU32 {
        self.word(4)
    }
    fn len(&self) -> &AtomicU32 {
        self.word(8)
    }
    fn status(&self) -> &AtomicU32 {
        self.word(12)
    }
    /// The client's CPU + 1 when it last called (0: unknown).
    fn client_cpu(&self) -> &AtomicU32 {
        self.word(16)
    }

    /// Copies `src` into the payload area. The caller checked the size.
    #[inline]
    fn write(&mut self, src: &[u8]) {
        assert!(DATA + src.len() <= self.map.len());
        // SAFETY: the destination range lies inside the mapping (asserted);
        // the peer does not touch the payload while we own the slot, and if
        // it misbehaves it only corrupts its own message.
        unsafe { copy(src.as_ptr(), self.map.ptr().add(DATA), src.len()) }
    }

    /// Copies the first `dst.len()` payload bytes into `dst`.
    #[inline]
    fn read(&self, dst: &mut [u8]) {
        assert!(DATA + dst.len() <= self.map.len());
        // SAFETY: as in `write`; `dst` is our own memory.
        unsafe { copy(self.map.ptr().add(DATA), dst.as_mut_ptr(), dst.len()) }
    }

    /// The first `len` payload bytes, in place.
    #[inline]
    fn payload(&self, len: usize) -> &[u8] {
        assert!(DATA + len <= self.map.len());
        // SAFETY: the range lies inside the mapping (asserted), which
        // outlives the borrow of `self`; bytes have no invalid values. The
        // peer may write them meanwhile only by breaking the protocol (it
        // owns the slot only between its post and ours), which can change
        // what we read, never where we read: the length was read once and
        // bounded. This is the shared-memory contract of every zero-copy
        // IPC library, documented at `Request::data` and `call_with`.
        unsafe { std::slice::from_raw_parts(self.map.ptr().add(DATA), len) }
    }

    /// The first `len` payload bytes, in place, to write.
    #[inline]
    fn payload_mut(&mut self, len: usize) -> &mut [u8] {
        assert!(DATA + len <= self.map.len());
        // SAFETY: as in `payload`; `&mut self` makes it the only view of
        // the slot this process hands out until it ends.
        unsafe { std::slice::from_raw_parts_mut(self.map.ptr().add(DATA), len) }
    }
}

/// Copies `len` bytes; payloads that fit the slot's first cache line are
/// copied inline rather than through a call to memcpy, which costs more
/// than the copy itself at these sizes.
///
/// # Safety
/// `src` and `dst` must be valid for `len` bytes and not overlap.
#[inline(always)]
unsafe fn copy(src: *const u8, dst: *mut u8, len: usize) {
    if len <= 64 - DATA {
        for i in 0..len {
            // SAFETY: i < len, and the caller guarantees both ranges.
            unsafe { dst.add(i).write(src.add(i).read()) }
        }
    } else {
        // SAFETY: the caller guarantees both ranges and no overlap.
        unsafe { std::ptr::copy_nonoverlapping(src, dst, len) }
    }
}

/// The doorbell words (server side; clients load them at the same offsets
/// from their read-only mapping): whether the server sleeps (or is about
/// to), and its CPU + 1 when it last waited for requests (0: unknown), on
/// a line of its own: written only when the server moves.
const BELL_SPINS: usize = 0;
const BELL_SLEEPING: usize = 4;
const BELL_SERVER_CPU: usize = 64;

/// Whether a hybrid waiter should spin: not when its peer was last seen on
/// the waiter's own CPU, where spinning only delays the peer it waits for
/// (with threads outnumbering CPUs that turned a 6 us round trip into
/// 54 us). Adaptive spinning, as in adaptive mutexes.
fn worth_spinning(me: u32, peer: u32) -> bool {
    peer == 0 || me == 0 || peer != me
}

/// The server side of an [`Shm`] channel (for
/// [`Channel::create_typed`](crate::Channel::create_typed)): the doorbell,
/// the listener and one slot per client. Requests are read and answered in
/// place in the client's slot.
pub struct ShmServer {
    bell_fd: OwnedFd,
    bell: Mapping,
    conns: Sessions<Slot>,
    wait: Wait,
    opts: Options,
    /// Length of the request being served (read once, bounded).
    len: usize,
    guard: Guard,
    next: usize,
    calls: u32,
    last_housekeeping: Instant,
    /// How long to hold back before the first look for the next request.
    pace: Pacer,
}

/// Greets a new client with the doorbell and a fresh slot (both memfds
/// passed along); hangs up on it when the slot cannot be made.
fn greet(
    listener: &Listener,
    bell_fd: BorrowedFd<'_>,
    max_msg: usize,
) -> Result<Option<Session<Slot>>> {
    let slot_len = slot_size(max_msg);
    let made = oslayer::mman::memfd("msgpass-slot", slot_len)
        .map_err(|e| Error::io("memfd_create", e))
        .and_then(|fd| Ok((Slot::map(&fd, slot_len)?, fd)));
    let (slot, slot_fd) = match made {
        Ok(made) => made,
        Err(e) => return refuse(listener, e),
    };
    slot.state().store(EMPTY, SeqCst);
    let accepted = listener.accept(&[bell_fd, slot_fd.as_fd()]);
    greeted(accepted, |sock| Session { sock, link: slot })
}

impl ShmServer {
    /// Index of a connection with a posted request, round-robin.
    fn scan(&mut self) -> Option<usize> {
        let conns = &self.conns.list;
        let n = conns.len();
        if n == 1 {
            // The benchmark's case: no division, no loop.
            return (conns[0].link.state().load(SeqCst) & MASK == REQUEST).then_some(0);
        }
        for k in 0..n {
            let i = (self.next + k) % n;
            if conns[i].link.state().load(SeqCst) & MASK == REQUEST {
                self.next = i + 1;
                return Some(i);
            }
        }
        None
    }

    /// Accepts waiting clients and drops dead ones, waiting at most `timeout`.
    fn housekeep(&mut self, timeout: Duration) {
        self.last_housekeeping = Instant::now();
        let (bell_fd, max_msg) = (&self.bell_fd, self.opts.max_msg);
        let joined = self.conns.accept_waiting(timeout, self.opts.tick, |l, _| {
            greet(l, bell_fd.as_fd(), max_msg)
        });
        if self.conns.drop_hung_up() || joined {
            self.guard.clear();
        }
    }

    /// Takes the request in connection `i`, to be read in place: its
    /// length is read once and bounded. A request whose length field lies
    /// is answered with EMSGSIZE and skipped.
    #[inline]
    fn take(&mut self, i: usize) -> Result<Option<Incoming>> {
        let slot = &self.conns.list[i].link;
        let len = slot.len().load(Relaxed) as usize;
        let cmd = slot.cmd().load(Relaxed);
        self.guard.set(i);
        if len > self.opts.max_msg {
            self.reply(Status::Err(libc::EMSGSIZE), &[])?;
            return Ok(None);
        }
        self.len = len;
        Ok(Some(Incoming {
            cmd,
            len,
            oneway: false,
        }))
    }

    /// Publishes the reply now in connection `i`'s slot (`len` bytes, wire
    /// status `code`) and wakes its client if it sleeps.
    #[inline]
    fn publish(&self, i: usize, code: u32, len: usize) {
        let slot = &self.conns.list[i].link;
        slot.len().store(len as u32, Relaxed);
        slot.status().store(code, Relaxed);
        let st = slot.state();
        if st.load(Relaxed) & SPINS != 0 {
            // The client spins and never sets WAITER: publish only.
            st.store(REPLY, Release);
        } else if st.swap(REPLY, SeqCst) & WAITER != 0 {
            oslayer::futex::wake(st, 1, true);
        }
    }

    /// Publishes our CPU and says whether any client was last seen on
    /// another CPU (so that spinning for its next request can pay off).
    fn peers_elsewhere(&self) -> bool {
        let me = oslayer::cpu::current_cpu();
        let published = self.bell.atomic_u32(BELL_SERVER_CPU);
        if published.load(Relaxed) != me {
            published.store(me, Relaxed);
        }
        self.conns
            .list
            .iter()
            .any(|c| worth_spinning(me, c.link.client_cpu().load(Relaxed)))
    }

    /// Sleeps on the slots' state words until a client posts (or wakes
    /// its word), or `timeout` passes. See the module doc for why no
    /// wake-up is lost and why no client can silence another's.
    fn sleep(&mut self, stop: &AtomicBool, timeout: Duration) {
        const MAX: usize = oslayer::futex::WAIT_ANY_MAX;
        let sleeping = self.bell.atomic_u32(BELL_SLEEPING);
        sleeping.store(1, SeqCst);
        let conns = &self.conns.list;
        let n = conns.len();
        let (first, watched, timeout) = if n <= MAX {
            (0, n, timeout)
        } else {
            (self.next % n, MAX, timeout.min(OVERFLOW_NAP))
        };
        // The values loaded here are the very ones the kernel is to find
        // unchanged: a request posted after these loads changes its word.
        let mut seen = [0u32; MAX];
        let mut posted = false;
        for (k, v) in seen.iter_mut().enumerate().take(watched) {
            *v = conns[(first + k) % n].link.state().load(SeqCst);
            posted |= *v & MASK == REQUEST;
        }
        // Those not watched (beyond 128 connections) are looked at now, so
        // a request already posted there is not left for a whole nap.
        posted |= (watched..n)
            .any(|k| conns[(first + k) % n].link.state().load(SeqCst) & MASK == REQUEST);
        if !posted && !stop.load(Relaxed) {
            if watched == 1 {
                // One client (the benchmark's case): a plain futex wait,
                // with no list to build and no deadline to compute.
                oslayer::futex::wait(conns[first].link.state(), seen[0], Some(timeout), true);
            } else {
                let words = (0..watched).map(|k| (conns[(first + k) % n].link.state(), seen[k]));
                oslayer::futex::wait_any(words, Some(timeout), true);
            }
        }
        sleeping.store(0, Relaxed);
    }
}

impl ServerChannel for ShmServer {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.guard.clear();
        self.calls = self.calls.wrapping_add(1);
        if self.calls % HOUSEKEEP_EVERY == 0 && self.last_housekeeping.elapsed() >= self.opts.tick {
            self.housekeep(Duration::ZERO);
        }
        let mut spins: u32 = 0;
        let mut spin_until: Option<Instant> = None;
        let mut spin_ok: Option<bool> = None;
        if self.wait != Wait::Block {
            self.pace.hold();
        }
        loop {
            if let Some(i) = self.scan() {
                match self.take(i)? {
                    Some(inc) => {
                        self.pace.done();
                        return Ok(Some(inc));
                    }
                    None => continue,
                }
            }
            if stop.load(Relaxed) {
                return Ok(None);
            }
            if self.conns.list.is_empty() {
                // Nothing to poll or sleep on but the listening socket.
                self.housekeep(self.opts.tick);
                continue;
            }
            spins = spins.wrapping_add(1);
            let spinning = match self.wait {
                Wait::Spin => true,
                Wait::Block => false,
                Wait::Hybrid if !*spin_ok.get_or_insert_with(|| self.peers_elsewhere()) => false,
                Wait::Hybrid => {
                    if spins % 64 == 1 {
                        let now = Instant::now();
                        let until = *spin_until.get_or_insert(now + self.opts.spin);
                        now < until
                    } else {
                        true
                    }
                }
            };
            if spinning {
                std::hint::spin_loop();
                if spins % 4096 == 0 && self.last_housekeeping.elapsed() >= self.opts.tick {
                    self.housekeep(Duration::ZERO);
                }
                continue;
            }
            let since = self.last_housekeeping.elapsed();
            if since >= self.opts.tick {
                self.housekeep(Duration::ZERO);
                continue;
            }
            self.sleep(stop, self.opts.tick - since);
        }
    }

    #[inline]
    fn data(&self) -> &[u8] {
        match self.guard.get() {
            Some(&i) => self.conns.list[i].link.payload(self.len),
            None => &[],
        }
    }

    #[inline]
    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        let i = self.guard.take()?;
        let (code, data) = status.encode(data);
        let (code, data) = if data.len() > self.opts.max_msg {
            (libc::EMSGSIZE as u32, &[][..])
        } else {
            (code, data)
        };
        self.conns.list[i].link.write(data);
        self.publish(i, code, data.len());
        Ok(())
    }

    #[inline]
    fn reply_buffer(&mut self) -> Option<&mut [u8]> {
        let i = *self.guard.get()?;
        let max = self.opts.max_msg;
        Some(self.conns.list[i].link.payload_mut(max))
    }

    #[inline]
    fn reply_in_place(&mut self, len: usize) -> Result<()> {
        let i = self.guard.take()?;
        let (code, len, verdict) = in_place_parts(len, self.opts.max_msg);
        self.publish(i, code, len);
        verdict
    }

    fn connections(&self) -> usize {
        self.conns.list.len()
    }
}

impl Drop for ShmServer {
    fn drop(&mut self) {
        // Tell every client at once, rather than after its next tick; but
        // never over a reply it has not read yet (it learns of the close on
        // its next call, from the hang-up, within a tick).
        for c in &self.conns.list {
            let st = c.link.state();
            let mut s = st.load(SeqCst);
            // Bounded: a hostile client could keep changing its word.
            for _ in 0..CLOSE_ATTEMPTS {
                if s & MASK == REPLY {
                    break;
                }
                match st.compare_exchange(s, CLOSED, SeqCst, SeqCst) {
                    Ok(_) => {
                        if s & WAITER != 0 {
                            oslayer::futex::wake(st, 1, true);
                        }
                        break;
                    }
                    Err(now) => s = now,
                }
            }
        }
    }
}

/// The client side of an [`Shm`] connection (for
/// [`Connection::open_typed`](crate::Connection::open_typed)): its slot,
/// the server's doorbell (read only) and the rendezvous session.
pub struct ShmClient {
    slot: Slot,
    bell: oslayer::mman::ReadOnlyMapping,
    sock: OwnedFd,
    wait: Wait,
    max_msg: usize,
    spin: Duration,
    tick: Duration,
    /// The server never sleeps (its doorbell says so): posting needs no
    /// look at `sleeping`, so no locked instruction.
    server_spins: bool,
    /// Our CPU + 1 as last written to the slot (hybrid waiting).
    cpu: u32,
    /// How long to hold back before the first look at the reply.
    pace: Pacer,
}

impl ShmClient {
    /// Posts the request now in the slot (`len` bytes, command `cmd`),
    /// waking the server if it sleeps. Returns our CPU + 1 (hybrid; else 0).
    #[inline]
    fn post(&mut self, cmd: u32, len: usize) -> Result<u32> {
        let st = self.slot.state();
        let cur = st.load(Acquire);
        if cur & MASK == CLOSED {
            return Err(Error::Disconnected);
        }
        let me = match self.wait {
            Wait::Hybrid => oslayer::cpu::current_cpu(),
            _ => 0,
        };
        if me != self.cpu {
            // Written only when we move: a store to the line the server
            // spins on is a transfer.
            self.slot.client_cpu().store(me, Relaxed);
            self.cpu = me;
        }
        self.slot.cmd().store(cmd, Relaxed);
        self.slot.len().store(len as u32, Relaxed);
        let post = match self.wait {
            Wait::Spin => REQUEST | SPINS,
            _ => REQUEST,
        };
        if self.server_spins {
            // Nobody to wake: a plain release store publishes. Over a close
            // by the server (CLOSED) it leaves us waiting for the hang-up,
            // which the wait notices within a tick.
            st.store(post, Release);
            return Ok(me);
        }
        // Post with a CAS so that a close by the server is never overwritten.
        // SeqCst CAS, then SeqCst load of `sleeping`: the client's half of
        // the Dekker pair described at the top; no separate fence needed.
        if st.compare_exchange(cur, post, SeqCst, Acquire).is_err() {
            return Err(Error::Disconnected);
        }
        if self.bell.load_u32(BELL_SLEEPING, SeqCst) != 0 {
            // Our own word, the one the sleeping server watches for us.
            oslayer::futex::wake(st, 1, true);
        }
        Ok(me)
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

    /// Waits until the server replies; `Disconnected` if it closes or dies.
    #[inline]
    fn wait_reply(&mut self, me: u32) -> Result<()> {
        let st = self.slot.state();
        let mut watch = Liveness::new(self.tick);
        // (spin at all, for how long: None is for ever; the clock starts at
        // the first look at it, so a reply within 256 spins costs no read)
        let (spin, limit) = match self.wait {
            Wait::Block => (false, None),
            Wait::Hybrid => (
                worth_spinning(me, self.bell.load_u32(BELL_SERVER_CPU, Relaxed)),
                Some(self.spin),
            ),
            Wait::Spin => (true, None),
        };
        if spin {
            let mut until = None;
            let mut spins: u32 = 0;
            self.pace.hold();
            loop {
                match st.load(Acquire) & MASK {
                    REPLY => {
                        self.pace.done();
                        return Ok(());
                    }
                    CLOSED => return Err(Error::Disconnected),
                    _ => {}
                }
                std::hint::spin_loop();
                spins = spins.wrapping_add(1);
                if spins % 256 == 0 {
                    let now = Instant::now();
                    if watch.due(now) && oslayer::socket::peer_gone(self.sock.as_fd()) {
                        return Err(Error::Disconnected);
                    }
                    if let Some(limit) = limit {
                        if now >= *until.get_or_insert(now + limit) {
                            break;
                        }
                    }
                }
            }
        }
        // Judge liveness from the start of the blocking phase, so the first
        // tick already checks the peer.
        watch.start(Instant::now());
        loop {
            let s = st.load(Acquire);
            match s & MASK {
                REPLY => return Ok(()),
                CLOSED => return Err(Error::Disconnected),
                _ => {}
            }
            if s & WAITER == 0 && st.compare_exchange(s, s | WAITER, SeqCst, Relaxed).is_err() {
                continue;
            }
            oslayer::futex::wait(st, s | WAITER, Some(self.tick), true);
            if st.load(Acquire) & MASK != REPLY
                && watch.due(Instant::now())
                && oslayer::socket::peer_gone(self.sock.as_fd())
            {
                return Err(Error::Disconnected);
            }
        }
    }
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
        self.slot.write(req);
        let me = self.post(cmd, req.len())?;
        self.wait_reply(me)?;
        let len = self.reply_len()?;
        Status::check_reply(0, len, reply.len())?;
        self.slot.read(&mut reply[..len]);
        Ok(len)
    }

    #[inline]
    fn max_msg(&self) -> usize {
        self.max_msg
    }

    #[inline]
    fn request_buffer(&mut self) -> Option<&mut [u8]> {
        let max = self.max_msg;
        Some(self.slot.payload_mut(max))
    }

    #[inline]
    fn call_in_place(&mut self, cmd: u32, len: usize) -> Result<&[u8]> {
        if len > self.max_msg {
            return Err(Error::TooLarge {
                len,
                max: self.max_msg,
            });
        }
        let me = self.post(cmd, len)?;
        self.wait_reply(me)?;
        let len = self.reply_len()?;
        Ok(self.slot.payload(len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn by_name_is_the_shm_family_of_the_table() {
        let wait = |n: &str| Shm::by_name(n).map(|s| s.wait);
        assert_eq!(wait("shm"), Some(Wait::Hybrid));
        assert_eq!(wait("shm-hybrid"), Some(Wait::Hybrid));
        assert_eq!(wait("shm-spin"), Some(Wait::Spin));
        assert_eq!(wait("shm-block"), Some(Wait::Block));
        for t in ["uds", "tcp", "pipe", "eventfd", "bogus", "shmx"] {
            assert_eq!(wait(t), None, "{t}");
        }
    }

    #[test]
    fn spins_only_when_the_peer_is_elsewhere_or_unknown() {
        assert!(!worth_spinning(1, 1), "peer on my CPU: sleep at once");
        assert!(worth_spinning(1, 2));
        assert!(worth_spinning(1, 0), "peer's CPU unknown");
        assert!(worth_spinning(0, 3), "my CPU unknown");
    }

    /// A client that maps what it was given and scribbles on every word it
    /// can write, in a loop, until `stop`; while `quiet`, it leaves its
    /// garbage in place and waits (so that the server sleeps, and a missed
    /// wake-up would show). Checks on the way that the doorbell cannot be
    /// written.
    fn hostile(
        path: &Path,
        opts: &Options,
        [stop, quiet]: [&AtomicBool; 2],
        ready: std::sync::mpsc::Sender<()>,
    ) {
        let (_sock, hello, fds) = rendezvous::connect(path, Family::Shm, opts).unwrap();
        let (bell_fd, slot_fd) = (&fds[0], &fds[1]);
        assert!(
            Mapping::new(bell_fd.as_fd(), PAGE).is_err(),
            "doorbell writable"
        );
        assert!(oslayer::mman::map_sealed_read_only(bell_fd.as_fd(), PAGE, "bell").is_ok());
        let slot_len = slot_size(hello.max_msg);
        let slot = Mapping::new(slot_fd.as_fd(), slot_len).unwrap();
        ready.send(()).unwrap();
        let mut x: u32 = 0x9e37_79b9;
        let mut round: u32 = 0;
        while !stop.load(Relaxed) {
            if quiet.load(Relaxed) {
                std::thread::sleep(Duration::from_millis(1));
                continue;
            }
            for off in (0..64).step_by(4).chain([slot_len - 4]) {
                // xorshift: garbage, now and then a plausible request.
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                let v = match x % 4 {
                    0 => REQUEST | (x & (WAITER | SPINS)),
                    1 => x & MASK,
                    _ => x,
                };
                slot.atomic_u32(off).store(v, SeqCst);
            }
            oslayer::futex::wake(slot.atomic_u32(0), u32::MAX, true);
            round = round.wrapping_add(1);
            if round % 64 == 0 {
                std::thread::yield_now();
            }
        }
    }

    #[test]
    fn a_hostile_client_cannot_stall_the_server_for_an_honest_one() {
        let dir = std::env::temp_dir().join(format!("msgpass-shm-hostile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("ch");
        // A tick longer than the bound: a missed wake-up would only end
        // with the server's next tick, so it shows as a late answer.
        let opts = Options {
            tick: Duration::from_secs(3),
            max_msg: 256,
            ..Options::default()
        };
        let transport = Shm::new(Wait::Block);
        let mut server = transport.serve(&path, &opts).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let quiet = Arc::new(AtomicBool::new(false));
        let server_thread = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while let Ok(Some(inc)) = server.receive(&stop) {
                    let mut out = server.data().to_vec();
                    out.extend_from_slice(&inc.cmd.to_le_bytes());
                    if server.reply(Status::Ok, &out).is_err() {
                        break;
                    }
                }
            })
        };
        let hostile_thread = {
            let (stop, quiet) = (Arc::clone(&stop), Arc::clone(&quiet));
            let (path, opts) = (path.clone(), opts.clone());
            let (ready, mapped) = std::sync::mpsc::channel();
            let t = std::thread::spawn(move || hostile(&path, &opts, [&stop, &quiet], ready));
            mapped.recv().unwrap();
            t
        };
        let mut honest = transport.connect(&path, &opts).unwrap();
        let mut reply = [0u8; 256];
        for i in 0..100u32 {
            // Ten calls while it scribbles, ten while it lies low.
            quiet.store(i / 10 % 2 == 1, Relaxed);
            let req = [i as u8; 13];
            let asked = Instant::now();
            let n = honest.call(i, &req, &mut reply).unwrap();
            let took = asked.elapsed();
            assert!(
                took < Duration::from_secs(2),
                "call {i} answered after {took:?}"
            );
            assert_eq!(&reply[..13], &req);
            assert_eq!(&reply[13..n], &i.to_le_bytes());
        }
        stop.store(true, SeqCst);
        hostile_thread.join().unwrap();
        drop(honest);
        server_thread.join().unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }
}
