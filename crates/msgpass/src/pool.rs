//! A channel served by a pool of threads: [`Receiver`] (one per thread)
//! and the [`OwnedRequest`] it yields. See [`Channel::into_pool`](crate::Channel::into_pool).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::answer::Once;
use crate::error::{Error, Result};
use crate::names::EndpointClaim;
use crate::transport::api::PoolWorker;
use crate::transport::api::{Answer, Client, Incoming};
use crate::transport::mem::window::Window;

pub use crate::transport::api::MAX_THREADS;

/// Where a channel is served.
pub(crate) enum Place {
    /// An endpoint in a namespace, claimed for the channel's lifetime.
    Endpoint(EndpointClaim),
    /// A TCP address, with no namespace ([`Channel::listen_tcp`](crate::Channel::listen_tcp)).
    Tcp {
        /// `tcp://ADDR:PORT`, what [`Channel::path`](crate::Channel::path) shows.
        name: PathBuf,
        /// The address listened on.
        addr: SocketAddr,
    },
}

/// What the receivers of one pool share: the endpoint, claimed until the
/// last receiver is dropped, and the stop flag.
pub(crate) struct PoolShared {
    pub(crate) place: Arc<Place>,
    pub(crate) stop: Arc<AtomicBool>,
    pub(crate) max_msg: usize,
    pub(crate) max_held: usize,
    pub(crate) threads: usize,
    pub(crate) spares: Arc<Spares>,
}

/// How many requests one receiving thread (a channel's, or a pool
/// receiver's) has handed out unanswered, against
/// [`Options::max_held`](crate::Options::max_held). Counted on the thread
/// that received them and, mostly, answered them: no line shared between
/// the threads of a pool.
#[derive(Default)]
pub(crate) struct HeldCount(AtomicUsize);

impl HeldCount {
    /// One more handed out; false (and not counted) when `max` are out.
    fn admit(&self, max: usize) -> bool {
        if self.0.load(Ordering::Relaxed) >= max {
            return false;
        }
        self.0.fetch_add(1, Ordering::Relaxed);
        true
    }

    fn release(&self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Reply buffers of the copying fallback of [`OwnedRequest::reply_with`],
/// kept for the next request: a buffer is `max_msg` bytes, and making one
/// (zeroed) per request cost more than the round trip it served (64 KiB
/// cleared each time). At most one per request in service is kept.
#[derive(Default)]
pub(crate) struct Spares(Mutex<Vec<Vec<u8>>>);

impl Spares {
    fn take(&self) -> Vec<u8> {
        self.0.lock().pop().unwrap_or_default()
    }

    fn give(&self, buf: Vec<u8>, most: usize) {
        let mut spares = self.0.lock();
        if buf.capacity() > 0 && spares.len() < most {
            spares.push(buf);
        }
    }
}

/// One thread's share of a channel served by a pool of threads (made by
/// [`Channel::into_pool`](crate::Channel::into_pool)): move it into the
/// thread and loop on [`receive`](Receiver::receive).
///
/// ```no_run
/// use msgpass::{Channel, Namespace, Options};
/// # fn main() -> msgpass::Result<()> {
/// let ns = Namespace::resolve(None)?;
/// let t = msgpass::transport::by_name("shm")?;
/// let channel = Channel::create(&ns, "adder/0", &*t, &Options::default())?;
/// let threads: Vec<_> = channel
///     .into_pool(4)?
///     .into_iter()
///     .map(|mut rx| {
///         std::thread::spawn(move || {
///             while let Ok(Some(req)) = rx.receive() {
///                 // Any thread answers any client; the reply goes to
///                 // the client that sent the request.
///                 let _ = req.reply_with(|buf| buf.len().min(4));
///             }
///         })
///     })
///     .collect();
/// # Ok(()) }
/// ```
pub struct Receiver {
    // Field order matters: the worker (and with the last one, the
    // transport) goes before the endpoint is removed.
    worker: Box<dyn PoolWorker>,
    shared: Arc<PoolShared>,
    held: Arc<HeldCount>,
    index: usize,
}

impl Receiver {
    pub(crate) fn new(worker: Box<dyn PoolWorker>, shared: Arc<PoolShared>, index: usize) -> Self {
        Receiver {
            worker,
            shared,
            held: Arc::default(),
            index,
        }
    }

    /// Waits for the next request of any client; `Ok(None)` once the
    /// pool's stop flag is set (within one [`Options::tick`](crate::Options::tick)).
    /// A request that would make this thread hold more than
    /// [`Options::max_held`](crate::Options::max_held) unanswered is
    /// answered `EAGAIN` at once and not handed out.
    pub fn receive(&mut self) -> Result<Option<OwnedRequest>> {
        loop {
            if self.shared.stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let Some((head, held)) = self.worker.receive(&self.shared.stop)? else {
                return Ok(None);
            };
            let keep = Keep {
                spares: Arc::clone(&self.shared.spares),
                most: 2 * self.shared.threads,
                count: Arc::clone(&self.held),
                counted: false,
            };
            match OwnedRequest::admit(held, head, self.shared.max_msg, self.shared.max_held, keep) {
                Ok(req) => return Ok(Some(req)),
                Err(_) => continue,
            }
        }
    }

    /// This receiver's number in its pool, 0 to [`threads`](Receiver::threads) - 1.
    pub fn index(&self) -> usize {
        self.index
    }

    /// How many threads the pool has.
    pub fn threads(&self) -> usize {
        self.shared.threads
    }

    /// The endpoint's path (see [`Channel::path`](crate::Channel::path)).
    pub fn path(&self) -> &Path {
        self.shared.place.path()
    }

    /// Largest request or reply payload (see [`Channel::max_msg`](crate::Channel::max_msg)).
    pub fn max_msg(&self) -> usize {
        self.shared.max_msg
    }

    /// Number of connected clients of the whole channel.
    pub fn connections(&self) -> usize {
        self.worker.connections()
    }

    /// The flag that, once set, makes every receiver of the pool return
    /// `Ok(None)` (the one [`Channel::set_stop_flag`](crate::Channel::set_stop_flag) gave).
    pub fn stop_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.shared.stop)
    }
}

/// A request received by a pool, owned: it can be kept, sent to another
/// thread and answered there. Answer it with [`reply`](OwnedRequest::reply),
/// [`reply_with`](OwnedRequest::reply_with) or
/// [`reply_error`](OwnedRequest::reply_error); dropped unanswered, it
/// replies `EIO` at once, so no client waits for an answer that will not
/// come. A reply to a client that died meanwhile goes nowhere; where the
/// transport knows the client is gone it says [`Error::Disconnected`]
/// (always for a deferred request), which a server may ignore. A one-way
/// message needs no reply, and a drop sends none.
pub struct OwnedRequest {
    once: Once<Box<dyn Answer>>,
    keep: Keep,
}

/// What an [`OwnedRequest`] keeps of the thread that handed it out.
pub(crate) struct Keep {
    /// Where the copying fallback of `reply_with` takes its buffer from.
    pub(crate) spares: Arc<Spares>,
    /// How many spare buffers are kept at most.
    pub(crate) most: usize,
    /// The count of that thread's requests held.
    pub(crate) count: Arc<HeldCount>,
    /// This request is in that count.
    pub(crate) counted: bool,
}

impl Drop for Keep {
    fn drop(&mut self) {
        if self.counted {
            self.count.release();
        }
    }
}

impl OwnedRequest {
    /// The request `held` (header `head`) handed out by a thread that
    /// keeps `keep`, unless that thread holds `max_held` already: then it
    /// is answered `EAGAIN` at once and the error says so.
    pub(crate) fn admit(
        held: Box<dyn Answer>,
        head: Incoming,
        max_msg: usize,
        max_held: usize,
        keep: Keep,
    ) -> Result<OwnedRequest> {
        let mut once = Once::new(held, head, max_msg);
        let mut keep = keep;
        keep.counted = keep.count.admit(max_held);
        if !keep.counted {
            let _ = once.reply_error(libc::EAGAIN);
            return Err(Error::HeldLimit { max: max_held });
        }
        Ok(OwnedRequest { once, keep })
    }

    /// The command code.
    pub fn cmd(&self) -> u32 {
        self.once.head.cmd
    }

    /// The request payload, in memory of the server's own, as
    /// [`Request::data`](crate::Request::data).
    pub fn data(&self) -> &[u8] {
        self.once.to.data()
    }

    /// The request payload's length, without a copy of it.
    pub fn len(&self) -> usize {
        self.once.head.len
    }

    /// True when the request has no payload.
    pub fn is_empty(&self) -> bool {
        self.once.head.len == 0
    }

    /// True for a one-way message: no reply is expected, and none is sent.
    pub fn is_oneway(&self) -> bool {
        self.once.head.oneway
    }

    /// Who sent it (see [`Request::client`](crate::Request::client)).
    pub fn client(&self) -> Client {
        crate::answer::client_or_unknown(self.once.to.client())
    }

    /// The pulse this is (see [`Request::pulse`](crate::Request::pulse)).
    pub fn pulse(&self) -> Option<crate::pulse::Pulse> {
        crate::pulse::pulse_of(self.once.head, self.data())
    }

    /// Replies with `data`, as [`Request::reply`](crate::Request::reply).
    pub fn reply(mut self, data: &[u8]) -> Result<()> {
        self.once.reply(data)
    }

    /// Replies in place, as [`Request::reply_with`](crate::Request::reply_with):
    /// on the shm transports in the client's slot, where nothing is copied
    /// but what `fill` reads and writes; elsewhere through a buffer of the
    /// request's own.
    pub fn reply_with(mut self, fill: impl FnOnce(&mut Window<'_>) -> usize) -> Result<()> {
        let mut buf = self.keep.spares.take();
        let r = self.once.reply_with(&mut buf, fill);
        self.keep.spares.give(buf, self.keep.most);
        r
    }

    /// Replies with an errno-style error code.
    pub fn reply_error(mut self, code: i32) -> Result<()> {
        self.once.reply_error(code)
    }
}

impl crate::answer::Received for OwnedRequest {
    #[inline]
    fn cmd(&self) -> u32 {
        OwnedRequest::cmd(self)
    }
    #[inline]
    fn data(&self) -> &[u8] {
        OwnedRequest::data(self)
    }
    #[inline]
    fn len(&self) -> usize {
        OwnedRequest::len(self)
    }
    #[inline]
    fn is_oneway(&self) -> bool {
        OwnedRequest::is_oneway(self)
    }
    fn client(&self) -> Client {
        OwnedRequest::client(self)
    }
    #[inline]
    fn reply(self, data: &[u8]) -> Result<()> {
        OwnedRequest::reply(self, data)
    }
    #[inline]
    fn reply_with(self, fill: impl FnOnce(&mut Window<'_>) -> usize) -> Result<()> {
        OwnedRequest::reply_with(self, fill)
    }
    #[inline]
    fn reply_error(self, code: i32) -> Result<()> {
        OwnedRequest::reply_error(self, code)
    }
}
