//! How every transport's server is built: one *core* per channel, shared
//! by the threads that serve it, and one *worker* per thread.
//!
//! A [`Core`] holds what all threads share (the listener, the connection
//! table, the wait sets); a worker is what one thread keeps (its own wait,
//! its buffers, the request it is serving). A [`Channel`](crate::Channel)
//! is a core with one worker ([`Single`], the [`ServerChannel`] every
//! transport returns); a pool ([`Channel::into_pool`](crate::Channel::into_pool))
//! is the same core with one worker per thread ([`PoolHand`]), whose
//! requests are *detached*: taken out of the worker as an owned handle
//! ([`HeldRequest`]) that can be answered from any thread.
//!
//! One implementation per transport serves both: a worker's fast path
//! (receive, read in place, reply to the request it holds) touches only
//! what the worker owns, so a channel served by one thread pays nothing
//! for the pool it could become.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::transport::{HeldRequest, Incoming, PoolWorker, ServerChannel, Status};

/// The shared part of a transport's server (see the module doc).
pub(crate) trait Core: Send + Sync + Sized + 'static {
    /// What one serving thread keeps.
    type Worker: Send + 'static;
    /// A request detached from its worker: owned, answerable from any thread.
    type Held: HeldRequest + 'static;

    /// A worker for one more thread.
    fn worker(self: &Arc<Self>) -> Result<Self::Worker>;

    /// Readies the core for `threads` workers in all (a pool), before the
    /// workers beyond the first are made: from then on workers coordinate.
    fn pool(self: &Arc<Self>, threads: usize) -> Result<()>;

    /// Waits for the next request on behalf of `w`, which then holds it;
    /// `Ok(None)` once `stop` is set (within a tick).
    fn receive(&self, w: &mut Self::Worker, stop: &AtomicBool) -> Result<Option<Incoming>>;

    /// The payload of the request `w` holds (empty if none).
    fn data<'a>(&'a self, w: &'a Self::Worker) -> &'a [u8];

    /// Replies to the request `w` holds (an error without one). A client
    /// gone meanwhile is not an error: its connection is dropped.
    fn reply(&self, w: &mut Self::Worker, status: Status, data: &[u8]) -> Result<()>;

    /// The memory to build the reply to the request `w` holds in place,
    /// starting with the request; `None` where the transport lends none.
    fn reply_buffer<'a>(&'a self, _w: &'a mut Self::Worker) -> Option<&'a mut [u8]> {
        None
    }

    /// Replies with the first `len` bytes of [`Core::reply_buffer`].
    fn reply_in_place(&self, _w: &mut Self::Worker, _len: usize) -> Result<()> {
        Err(Error::Unsupported {
            what: "replies in place",
            transport: "this transport",
        })
    }

    /// Takes the request `w` holds out of it, as an owned handle (its
    /// payload copied where it would not outlive the worker's next
    /// receive).
    fn detach(&self, w: &mut Self::Worker) -> Option<Self::Held>;

    /// Number of connected clients.
    fn connections(&self) -> usize;
}

/// A core served by one thread: the [`ServerChannel`] of a transport.
pub(crate) struct Single<C: Core> {
    core: Arc<C>,
    w: C::Worker,
}

impl<C: Core> Single<C> {
    /// The core, with its first worker.
    pub(crate) fn new(core: Arc<C>) -> Result<Single<C>> {
        let w = core.worker()?;
        Ok(Single { core, w })
    }
}

impl<C: Core> ServerChannel for Single<C> {
    #[inline]
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.core.receive(&mut self.w, stop)
    }

    #[inline]
    fn data(&self) -> &[u8] {
        self.core.data(&self.w)
    }

    #[inline]
    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        self.core.reply(&mut self.w, status, data)
    }

    #[inline]
    fn reply_buffer(&mut self) -> Option<&mut [u8]> {
        self.core.reply_buffer(&mut self.w)
    }

    #[inline]
    fn reply_in_place(&mut self, len: usize) -> Result<()> {
        self.core.reply_in_place(&mut self.w, len)
    }

    fn connections(&self) -> usize {
        self.core.connections()
    }

    fn into_pool(self: Box<Self>, threads: usize) -> Result<Vec<Box<dyn PoolWorker>>> {
        let Single { core, w } = *self;
        core.pool(threads)?;
        let mut out: Vec<Box<dyn PoolWorker>> = Vec::with_capacity(threads);
        out.push(Box::new(PoolHand {
            core: Arc::clone(&core),
            w,
        }));
        for _ in 1..threads {
            let w = core.worker()?;
            out.push(Box::new(PoolHand {
                core: Arc::clone(&core),
                w,
            }));
        }
        Ok(out)
    }
}

/// One thread's worker of a core served by a pool.
pub(crate) struct PoolHand<C: Core> {
    core: Arc<C>,
    w: C::Worker,
}

impl<C: Core> PoolWorker for PoolHand<C> {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<(Incoming, Box<dyn HeldRequest>)>> {
        while let Some(head) = self.core.receive(&mut self.w, stop)? {
            if let Some(held) = self.core.detach(&mut self.w) {
                return Ok(Some((head, Box::new(held))));
            }
        }
        Ok(None)
    }

    fn connections(&self) -> usize {
        self.core.connections()
    }
}
