//! `shm`, `shm-spin`, `shm-block`, `shm-hybrid`: a shared-memory slot per
//! connection, futex wake-ups for the client, the kernel's ready list for
//! the server.
//!
//! Rendezvous: the server listens on a Unix seqpacket socket at the
//! endpoint path. For each client it passes three descriptors with
//! SCM_RIGHTS: the channel's *doorbell* (a sealed memfd written by the
//! server alone), the connection's *slot* (a sealed memfd) and the
//! connection's *bell* (an eventfd). Nothing is named in /dev/shm, so a
//! crash leaves nothing behind; the socket stays open to detect death.
//!
//! Slot layout (one per connection; the first cache line carries the
//! state, the header and the first 32 payload bytes, so a small round trip
//! moves a single line each way):
//!
//! ```text
//! 0  state  u32  EMPTY, REQUEST, REPLY or CLOSED, | WAITER when the client sleeps,
//!                | SPINS on a request from a client that never sleeps
//! 4  cmd    u32  request command
//! 8  len    u32  payload length (request, then reply)
//! 12 status u32  0 or an errno (reply)
//! 16 cpu    u32  the client's CPU + 1 at its last call
//! 20 seq    u32  the client's request number (one more per request)
//! 24 watch  u32  written by the server: w + 1 while server thread w watches
//!                this slot, 0 when nobody does
//! 28 caller u32  the client's calling thread id, written when it changes,
//!                where the server inherits priority ([`FLAG_INHERIT`])
//! 32 data        payload, up to max_msg bytes
//! ```
//!
//! Doorbell layout (read-only for clients: sealed `F_SEAL_FUTURE_WRITE`
//! once the server has mapped it): `flags` (u32 at 0: [`FLAG_SPINS`] when
//! the server never sleeps, [`FLAG_POOL`] when several threads serve the
//! channel), then a cache line per server thread `w` at `64 (w + 1)`: its
//! state ([`LOOKING`], [`SLEEPING`], [`BUSY`], [`NAPPING`]) and its CPU + 1.
//!
//! **Finding the next request in O(1).** A server thread never looks at
//! every slot. It *watches* a bounded set of slots (at most [`WATCH_MAX`],
//! those whose clients called recently), which it spins over, and learns
//! of every other request from the kernel: a client whose slot nobody
//! watches, or whose watcher sleeps (or, in a pool, is busy), writes its
//! bell after posting, and every bell is registered (edge-triggered) in
//! the server's epoll set, under the connection's token. So a post costs
//! a watched client nothing while its server looks, and any client one
//! `write` otherwise, like the `futex_wake` it replaces; the server's wait
//! is one `epoll_wait` whatever the number of clients. A thread takes a
//! connection it was told of into its watched set (evicting the one idle
//! longest when full), and drops slots idle for a tick.
//!
//! Nothing a client can write reaches another client's request: the only
//! words it can write are in its own slot, and the only bell it can ring
//! is its own, which the kernel names. A client that rings without
//! posting costs the server one look at its slot per ring, and is served
//! in turn with everyone else (a wait reports each ready bell once).
//!
//! Posting (SeqCst CAS on the state, then SeqCst loads of `watch` and of
//! the watcher's state) and going to sleep (SeqCst store of the thread's
//! state, then SeqCst loads of its watched slots' states) form a Dekker
//! pair: either the thread's load sees the request, or the client sees
//! that nobody looks and rings; no wake-up is lost. Unwatching a slot is
//! the same pair (store `watch` = 0, then load the state).
//!
//! **One client.** A thread whose channel has one client, which it
//! watches, naps on that client's state word instead of its epoll set
//! ([`NAPPING`]): the client wakes its own word after posting, as before
//! the bells, and the epoll set's work per message (a callback as the
//! bell rings, the lookup of the connection it names) is not done. The
//! thread looks at its set once a tick, so a newcomer is accepted within
//! a tick.
//!
//! **Single thread.** A channel served by one thread keeps no descriptor
//! of a client's bell: it registers the bell in its epoll set and closes
//! it, the registration living on with the client's copy (see
//! `oslayer::epoll`), so a connection costs the server one descriptor,
//! its session.
//!
//! **A pool** ([`Channel::into_pool`](crate::Channel::into_pool)). Each
//! bell is registered in every thread's set, exclusive, its home thread's
//! first, so the kernel wakes the home thread if it waits and another free
//! thread if not. A thread publishes [`BUSY`] while the application holds
//! its request, so that the clients it watches ring instead of waiting for
//! it; before it goes, it looks at its watched slots once more and rings
//! for any posted meanwhile (the same Dekker pair). A connection's home is
//! the thread on the CPU its client last ran on (pinned threads register
//! their CPU), so a pool pinned one thread per CPU serves each client on
//! its own CPU. A request is taken once: the client's `seq` moves the
//! connection's server-private `served` number forward with a CAS. A pool
//! keeps each bell's descriptor (to register it in every set, and to move
//! its home).
//!
//! A client that never sleeps (`shm-spin`) posts `REQUEST | SPINS`: it will
//! never set WAITER, so the server publishes the reply with a plain release
//! store instead of the atomic swap that reads WAITER (on this VM the swap
//! was most of the server's time outside its spin loop). A channel whose
//! server never sleeps and has one thread ([`FLAG_SPINS`] without
//! [`FLAG_POOL`]) spares its clients the look at `watch`: their posts are
//! plain release stores.
//!
//! In place ([`Connection::call_with`](crate::Connection::call_with),
//! [`Request::reply_with`](crate::Request::reply_with)): each side lends
//! the slot itself, as a [`Window`] (and the reply as a
//! [`View`]), read and written only with the atomic copies
//! of `transport::shared`: the slot is memory the peer can write at any
//! moment, so nobody is handed a reference over it (see that module for
//! the rules). No byte is copied but those the application reads or
//! writes. A request read as a slice ([`Request::data`](crate::Request::data))
//! is copied out of the slot when first asked for, once its length is
//! checked, so what the application reads cannot change under it; every
//! header word is loaded once and checked as loaded.
//! After seeing its peer's post, each side's path to its own post is kept
//! short (no clock, no system call, no locked instruction against a
//! spinning peer): that path is all a spinning round trip adds to the
//! cache-line transfers.
//!
//! Hybrid spinning is adaptive: each side publishes the CPU it last ran on
//! (the client in its slot, each server thread in the doorbell), and a
//! waiter spins only when its peer was last seen on another CPU; on its own
//! CPU, spinning would only delay the peer it waits for (measured: 54 us
//! instead of 6 us per round trip with threads outnumbering CPUs).
//!
//! Pacing ([`Options::pace`], on by default): a waiter that spins holds
//! back for a learnt number of pauses before its first look at the state
//! word, since a look while the peer is between seeing our post and making
//! its own takes the line away from it and doubles the transfer its store
//! pays. The hold is learnt per side from the time batches of calls take
//! (`pace.rs`); on this VM it took a spinning round trip from about 2x the
//! two-process cache-line floor to about 1.5x.
//!
//! Priority inheritance ([`Options::inherit_priority`]): the client names
//! its calling thread in its slot's `caller` word, the server checks it
//! with the kernel and runs the request at that thread's priority; a
//! server holding such a request says [`BUSY`] so that callers ring, and
//! its watcher raises it on their arrival (`server/inherit.rs`).
//!
//! Every client wait is bounded by [`Options::tick`]; after each tick the
//! waiter checks its peer's socket for a hang-up, which is how a dead
//! server is noticed. The server hears of a dead client from its
//! session's hang-up at once, through the same epoll set.

mod client;
mod request_copy;
#[cfg(test)]
mod rewrite;
mod server;

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::AtomicU32;

use crate::error::{Error, Result};
use crate::transport::api::{ClientConnection, Options, ServerChannel, Transport, Typed};
use crate::transport::mem::shared;
use crate::transport::mem::window::{View, Window};
use oslayer::mman::Mapping;

pub use client::ShmClient;
pub use server::ShmServer;

/// How a side waits for the other: the transport table's [`Wait`].
pub use crate::transport::api::Wait;

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
}

const EMPTY: u32 = 0;
const REQUEST: u32 = 1;
const REPLY: u32 = 2;
const CLOSED: u32 = 3;
const WAITER: u32 = 0x100;
/// Set with REQUEST by a client that never sleeps (so never sets WAITER).
const SPINS: u32 = 0x200;
const MASK: u32 = 0xff;
/// Offset of the payload in a slot.
const DATA: usize = 32;
const PAGE: usize = 4096;

/// Most slots one server thread watches (spins over, and sleeps after
/// looking at): a bound on the work of a look, whatever the number of
/// clients.
pub const WATCH_MAX: usize = 32;

/// The doorbell's flags word: the server never sleeps.
pub const FLAG_SPINS: u32 = 1;
/// The doorbell's flags word: several threads serve the channel.
pub const FLAG_POOL: u32 = 2;
/// The doorbell's flags word: the server inherits its callers' priority
/// (a client names its calling thread in its slot's `caller` word).
pub const FLAG_INHERIT: u32 = 4;
/// A server thread's state: looking at the slots it watches (or serving a
/// request, with a single thread): a watched client need not ring.
pub const LOOKING: u32 = 0;
/// A server thread's state: asleep in its epoll set: ring.
pub const SLEEPING: u32 = 1;
/// A server thread's state: the application holds its request (a pool, or
/// a server inheriting priority): ring, so that another thread takes
/// yours, or the watcher raises the busy one to your priority.
pub const BUSY: u32 = 2;
/// A server thread's state: asleep on the state word of the one slot it
/// watches, its channel's only client: wake your word (`futex_wake`).
pub const NAPPING: u32 = 3;

const BELL_FLAGS: usize = 0;
/// Size of the doorbell: the flags' line, then a line per thread, in
/// whole pages.
const BELL_LEN: usize = (64 * (crate::transport::api::MAX_THREADS + 1)).div_ceil(PAGE) * PAGE;

/// Offset of server thread `w`'s state word in the doorbell.
fn bell_state(w: usize) -> usize {
    64 * (w + 1)
}

/// Offset of server thread `w`'s CPU + 1 in the doorbell.
fn bell_cpu(w: usize) -> usize {
    64 * (w + 1) + 4
}

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
        ShmServer::serve(path, self.wait, opts)
    }

    fn connect_typed(&self, path: &Path, opts: &Options) -> Result<ShmClient> {
        ShmClient::connect(path, self.wait, opts)
    }
}

fn slot_size(max_msg: usize) -> usize {
    (DATA + max_msg).div_ceil(PAGE) * PAGE
}

/// A mapped slot. All access goes through atomics and the atomic copies
/// of `transport::shared`, never a reference over its bytes: the other
/// side is another process we do not trust to follow the protocol.
struct Slot {
    map: Mapping,
}

impl Slot {
    fn map(fd: &OwnedFd, len: usize) -> Result<Slot> {
        Ok(Slot {
            map: Mapping::new(fd.as_fd(), len).map_err(|e| Error::io("mmap slot", e))?,
        })
    }

    #[inline]
    fn word(&self, offset: usize) -> &AtomicU32 {
        // SAFETY: offset is one of 0, 4, ... 28: 4-byte aligned and inside
        // the (page-aligned, at least one page long) mapping, which
        // outlives the reference. AtomicU32 tolerates concurrent access
        // from the peer.
        unsafe { &*(self.map.ptr().add(offset) as *const AtomicU32) }
    }

    #[inline]
    fn state(&self) -> &AtomicU32 {
        self.word(0)
    }
    #[inline]
    fn cmd(&self) -> &AtomicU32 {
        self.word(4)
    }
    #[inline]
    fn len(&self) -> &AtomicU32 {
        self.word(8)
    }
    #[inline]
    fn status(&self) -> &AtomicU32 {
        self.word(12)
    }
    /// The client's CPU + 1 when it last called (0: unknown).
    #[inline]
    fn client_cpu(&self) -> &AtomicU32 {
        self.word(16)
    }
    /// The client's request number.
    #[inline]
    fn seq(&self) -> &AtomicU32 {
        self.word(20)
    }
    /// The server thread watching this slot, plus one (0: none).
    #[inline]
    fn watch(&self) -> &AtomicU32 {
        self.word(24)
    }
    /// The client's calling thread, as it claims (priority inheritance).
    #[inline]
    fn caller(&self) -> &AtomicU32 {
        self.word(28)
    }

    /// Copies `src` into the payload area (atomic stores: see
    /// `transport::shared`). The caller checked the size. A slot is
    /// written through a shared reference: the server's slot is shared by
    /// the threads of a pool, which take turns by the request number.
    #[inline]
    fn write(&self, src: &[u8]) {
        shared::store(&self.map, DATA, src);
    }

    /// Copies the first `dst.len()` payload bytes into `dst`, our own
    /// memory (atomic loads: see `transport::shared`), where they cannot
    /// change under whoever reads them next.
    #[inline]
    fn read(&self, dst: &mut [u8]) {
        shared::load(&self.map, DATA, dst);
    }

    /// The first `n` payload bytes, lent in place to build a message in
    /// (through a shared reference: a server's slot is shared by the
    /// threads of a pool, which take turns by the request number).
    ///
    /// # Panics
    /// When `n` is past the slot (a caller's bug: it is at most the
    /// maximum the slot was sized for).
    #[inline]
    fn window(&self, n: usize) -> Window<'_> {
        assert!(DATA + n <= self.map.len(), "{n} bytes past the slot");
        // SAFETY: inside the mapping (asserted), which outlives the
        // borrow of `self`; this process touches a slot's payload only
        // through windows, views and the atomic copies of
        // `transport::shared`, never a reference: the window's contract.
        unsafe { Window::from_raw(self.map.ptr().add(DATA), n) }
    }

    /// The first `n` payload bytes, lent in place to read.
    ///
    /// # Panics
    /// As [`Slot::window`].
    #[inline]
    fn view(&self, n: usize) -> View<'_> {
        assert!(DATA + n <= self.map.len(), "{n} bytes past the slot");
        // SAFETY: as in `window`.
        unsafe { View::from_raw(self.map.ptr().add(DATA), n) }
    }
}

/// Whether a hybrid waiter should spin: not when its peer was last seen on
/// the waiter's own CPU, where spinning only delays the peer it waits for
/// (with threads outnumbering CPUs that turned a 6 us round trip into
/// 54 us). Adaptive spinning, as in adaptive mutexes.
fn worth_spinning(me: u32, peer: u32) -> bool {
    peer == 0 || me == 0 || peer != me
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn every_thread_of_the_largest_pool_has_a_line_of_the_doorbell() {
        let last = crate::transport::api::MAX_THREADS - 1;
        assert!(bell_cpu(last) + 4 <= BELL_LEN);
        assert_eq!(bell_state(0) % 64, 0);
        assert_eq!(BELL_LEN % PAGE, 0, "the doorbell is whole pages");
    }
}
