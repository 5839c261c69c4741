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
//! ([`Answer`]) that can be answered from any thread.
//!
//! One implementation per transport serves both: a worker's fast path
//! (receive, read in place, reply to the request it holds) touches only
//! what the worker owns, so a channel served by one thread pays nothing
//! for the pool it could become.
//!
//! **A relay pool** ([`relay_pool`]) serves a pool for a server that only
//! one thread can drive (sysv-msg blocks in one `msgrcv`, signal's
//! signals go to one thread): a *dispatcher* thread runs the
//! single-threaded server, [detaches](Detach) each request it receives and
//! hands it to a bounded queue, from which any free worker of the pool
//! takes the next. The queue holds a few requests per thread; when it is
//! full the dispatcher stops receiving, so a flood backs up into the
//! kernel (the transport's own queue, bounded there), never into our
//! memory, and a worker stuck in its handler stops nobody while another
//! is free. A worker that sees the pool's stop flag pauses the dispatcher
//! (it leaves its receive within a tick) until a worker receives again;
//! the dispatcher ends, and is joined, when the last worker is dropped,
//! answering `EIO` to the requests still queued; an error of the
//! dispatcher's server ends it too, and every worker's receive reports it
//! from then on.

use std::cell::OnceCell;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crossbeam_channel::{Receiver, RecvTimeoutError, SendTimeoutError, Sender};
use parking_lot::Mutex;

use crate::error::{Error, Result};
use crate::transport::api::{Answer, Client, Incoming, PoolWorker, ServerChannel, Status};
use crate::transport::mem::window::{View, Window};
use crate::transport::serve::server::{in_place_parts, reply_parts};

/// The shared part of a transport's server (see the module doc).
pub(crate) trait Core: Send + Sync + Sized + 'static {
    /// What one serving thread keeps.
    type Worker: Send + 'static;
    /// A request detached from its worker: owned, answerable from any thread.
    type Held: Answer + 'static;

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

    /// The same payload where it lies, to read in place.
    fn view<'a>(&'a self, w: &'a Self::Worker) -> View<'a> {
        View::from(self.data(w))
    }

    /// Who sent the request `w` holds.
    fn client(&self, w: &Self::Worker) -> Option<Client>;

    /// Replies to the request `w` holds (an error without one). A client
    /// gone meanwhile is not an error: its connection is dropped.
    fn reply(&self, w: &mut Self::Worker, status: Status, data: &[u8]) -> Result<()>;

    /// The memory to build the reply to the request `w` holds in place,
    /// starting with the request; `None` where the transport lends none.
    fn reply_buffer<'a>(&'a self, _w: &'a mut Self::Worker) -> Option<Window<'a>> {
        None
    }

    /// Replies with the first `len` bytes of [`Core::reply_buffer`].
    fn reply_in_place(&self, _w: &mut Self::Worker, _len: usize) -> Result<()> {
        Err(Error::unsupported("replies in place"))
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

impl<C: Core> Answer for Single<C> {
    #[inline]
    fn data(&self) -> &[u8] {
        self.core.data(&self.w)
    }

    #[inline]
    fn view(&self) -> View<'_> {
        self.core.view(&self.w)
    }

    fn client(&self) -> Option<Client> {
        self.core.client(&self.w)
    }

    #[inline]
    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        self.core.reply(&mut self.w, status, data)
    }

    #[inline]
    fn reply_buffer(&mut self) -> Option<Window<'_>> {
        self.core.reply_buffer(&mut self.w)
    }

    #[inline]
    fn reply_in_place(&mut self, len: usize) -> Result<()> {
        self.core.reply_in_place(&mut self.w, len)
    }
}

impl<C: Core> ServerChannel for Single<C> {
    #[inline]
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.core.receive(&mut self.w, stop)
    }

    fn connections(&self) -> usize {
        self.core.connections()
    }

    fn detach(&mut self) -> Option<Box<dyn Answer>> {
        let held = self.core.detach(&mut self.w)?;
        Some(Box::new(held))
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
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<(Incoming, Box<dyn Answer>)>> {
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

// ------------------------------------------------------------ relay pool

/// A server that one thread drives and whose request can be taken out of
/// it ([`ServerChannel::detach`], its payload copied), to be answered from
/// another thread: what a [`relay_pool`] needs.
pub(crate) trait Detach: ServerChannel {
    /// The number of connected clients, kept up to date by the server as
    /// clients come and go (read by the pool's workers).
    fn census(&self) -> Arc<AtomicUsize>;
}

/// The part of a held request that is its transport's: where its answer
/// goes, and, on a transport that lends its memory (shm), where the
/// request still lies.
pub(crate) trait ReplyTo: Send + 'static {
    /// Sends a reply (wire `code`, then `data`, already within the size
    /// rule). False when the client is known to be gone (before, or the
    /// send found it so): the reply went nowhere, and the server learns,
    /// to drop the connection.
    fn send(&mut self, code: u32, data: &[u8]) -> bool;

    /// The request's `len` payload bytes, copied out of where they lie,
    /// for a request held without a copy ([`Held::lazy`]): asked once, at
    /// the first [`Answer::data`]. The default (every transport that
    /// copies when it detaches) has nothing to give.
    fn fetch(&self, len: usize) -> Vec<u8> {
        vec![0; len]
    }

    /// The memory to build the reply in, in place (`max` bytes), until
    /// the reply: `None` (the default) where the transport lends none.
    fn window(&mut self, _max: usize) -> Option<Window<'_>> {
        None
    }

    /// Publishes the reply built in [`window`](ReplyTo::window): wire
    /// `code`, `len` bytes (within the size rule). False when the client
    /// is known to be gone, as for [`send`](ReplyTo::send); called only
    /// where `window` lent memory.
    fn publish(&mut self, _code: u32, _len: usize) -> bool {
        false
    }
}

/// A request held apart from the thread that received it: answered once,
/// from any thread, through its transport's [`ReplyTo`], by copy or in
/// place where the transport lends memory. Its payload is a private copy,
/// made when it was detached or (shm, [`Held::lazy`]) when first asked
/// for. The one held request of every server family.
pub(crate) struct Held<A: ReplyTo> {
    data: OnceCell<Vec<u8>>,
    len: usize,
    to: A,
    max_msg: usize,
    answered: bool,
    client: Option<Client>,
}

impl<A: ReplyTo> Held<A> {
    /// A request of `client` with payload `data`, answered through `to`,
    /// on a channel carrying at most `max_msg` bytes.
    pub(crate) fn new(data: Vec<u8>, to: A, max_msg: usize, client: Option<Client>) -> Held<A> {
        Held::lazy(data.len(), Some(data), to, max_msg, client)
    }

    /// A request of `len` payload bytes that still lie where `to` can
    /// fetch them, copied when first asked for (or `copy`, when its thread
    /// copied them already).
    pub(crate) fn lazy(
        len: usize,
        copy: Option<Vec<u8>>,
        to: A,
        max_msg: usize,
        client: Option<Client>,
    ) -> Held<A> {
        Held {
            len,
            data: copy.map_or_else(OnceCell::new, OnceCell::from),
            to,
            max_msg,
            answered: false,
            client,
        }
    }

    /// The same as [`new`](Held::new), boxed as an [`Answer`].
    pub(crate) fn boxed(
        data: Vec<u8>,
        to: A,
        max_msg: usize,
        client: Option<Client>,
    ) -> Box<dyn Answer> {
        Box::new(Held::new(data, to, max_msg, client))
    }

    /// Marks the request answered; an error if it was already.
    fn answer(&mut self) -> Result<()> {
        match std::mem::replace(&mut self.answered, true) {
            true => Err(Error::no_request()),
            false => Ok(()),
        }
    }
}

impl<A: ReplyTo> Answer for Held<A> {
    fn data(&self) -> &[u8] {
        self.data.get_or_init(|| self.to.fetch(self.len))
    }

    fn client(&self) -> Option<Client> {
        self.client
    }

    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        self.answer()?;
        let (code, data, verdict) = reply_parts(status, data, self.max_msg);
        match self.to.send(code, data) {
            true => verdict,
            false => Err(Error::Disconnected),
        }
    }

    fn reply_buffer(&mut self) -> Option<Window<'_>> {
        match self.answered {
            true => None,
            false => self.to.window(self.max_msg),
        }
    }

    fn reply_in_place(&mut self, len: usize) -> Result<()> {
        self.answer()?;
        let (code, len, verdict) = in_place_parts(len, self.max_msg);
        match self.to.publish(code, len) {
            true => verdict,
            false => Err(Error::Disconnected),
        }
    }
}

/// Where the answer to a one-way message goes: nowhere (nobody waits).
pub(crate) struct Unanswered;

impl ReplyTo for Unanswered {
    fn send(&mut self, _code: u32, _data: &[u8]) -> bool {
        true
    }
}

/// Requests the queue of a relay pool holds per thread.
const RELAY_PER_THREAD: usize = 2;

/// A request on its way from the dispatcher to a worker.
type Relayed = (Incoming, Box<dyn Answer>);

/// What the dispatcher and the workers of a relay pool share.
struct Relay {
    /// The dispatcher's stop flag: a worker saw the pool's stop (the
    /// dispatcher pauses until a worker receives again), or the pool closed.
    pause: AtomicBool,
    /// The last worker is gone: the dispatcher ends.
    closed: AtomicBool,
    /// Why the dispatcher ended, if its server failed.
    failure: Mutex<Option<Error>>,
    tick: Duration,
}

impl Relay {
    /// The error a worker reports once the dispatcher ended: a copy of
    /// its server's, for every worker.
    fn failure(&self) -> Error {
        match &*self.failure.lock() {
            Some(e) => copy_of(e),
            None => Error::io(
                "msgpass pool",
                io::Error::other("the dispatcher thread ended (it panicked)"),
            ),
        }
    }
}

/// The same error again (an [`Error`] is not `Clone`: an I/O error keeps
/// its code, or its kind and message).
fn copy_of(e: &Error) -> Error {
    match e {
        Error::Io { op, source } => Error::io(
            op.clone(),
            match source.raw_os_error() {
                Some(code) => io::Error::from_raw_os_error(code),
                None => io::Error::new(source.kind(), source.to_string()),
            },
        ),
        Error::Disconnected => Error::Disconnected,
        other => Error::Protocol(other.to_string()),
    }
}

/// The workers' side of a relay pool: the queue, and the dispatcher,
/// stopped and joined when the last worker goes.
struct Hub {
    relay: Arc<Relay>,
    queue: Receiver<Relayed>,
    /// Connected clients, as the server counts them.
    census: Arc<AtomicUsize>,
    dispatcher: Option<JoinHandle<()>>,
}

impl Hub {
    /// Lets a paused dispatcher receive again.
    fn resume(&self) {
        if self.relay.pause.load(Ordering::Acquire)
            && self.relay.pause.swap(false, Ordering::AcqRel)
        {
            if let Some(d) = &self.dispatcher {
                d.thread().unpark();
            }
        }
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        self.relay.closed.store(true, Ordering::Release);
        self.relay.pause.store(true, Ordering::Release);
        // Room in the queue for a dispatcher waiting on a full one, which
        // then sees the pool closed.
        self.queue.try_iter().for_each(refuse);
        if let Some(d) = self.dispatcher.take() {
            d.thread().unpark();
            let _ = d.join();
        }
        self.queue.try_iter().for_each(refuse);
    }
}

/// Answers a request nobody will take `EIO` (a one-way message, nothing).
fn refuse((head, mut held): Relayed) {
    if !head.oneway {
        let _ = held.reply(Status::Err(libc::EIO), &[]);
    }
}

/// One thread's worker of a relay pool.
struct RelayWorker {
    hub: Arc<Hub>,
}

impl PoolWorker for RelayWorker {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Relayed>> {
        let hub = &*self.hub;
        loop {
            if stop.load(Ordering::Relaxed) {
                hub.relay.pause.store(true, Ordering::Release);
                return Ok(None);
            }
            hub.resume();
            match hub.queue.recv_timeout(hub.relay.tick) {
                Ok(relayed) => return Ok(Some(relayed)),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err(hub.relay.failure()),
            }
        }
    }

    fn connections(&self) -> usize {
        self.hub.census.load(Ordering::Relaxed)
    }
}

/// Serves `server` from a pool of `threads` threads through a dispatcher
/// thread (see the module doc); `tick` bounds how long the dispatcher and
/// the workers take to notice a stop.
pub(crate) fn relay_pool<S: Detach + 'static>(
    server: S,
    threads: usize,
    tick: Duration,
) -> Result<Vec<Box<dyn PoolWorker>>> {
    let relay = Arc::new(Relay {
        pause: AtomicBool::new(false),
        closed: AtomicBool::new(false),
        failure: Mutex::new(None),
        tick,
    });
    let census = server.census();
    let (tx, rx) = crossbeam_channel::bounded(RELAY_PER_THREAD * threads.max(1));
    let dispatcher = {
        let relay = Arc::clone(&relay);
        std::thread::Builder::new()
            .name("msgpass-relay".into())
            .spawn(move || dispatch(server, &relay, &tx))
            .map_err(|e| Error::io("start the pool's dispatcher thread", e))?
    };
    let hub = Arc::new(Hub {
        relay,
        queue: rx,
        census,
        dispatcher: Some(dispatcher),
    });
    Ok((0..threads)
        .map(|_| {
            Box::new(RelayWorker {
                hub: Arc::clone(&hub),
            }) as Box<dyn PoolWorker>
        })
        .collect())
}

/// The dispatcher thread: receives on `server` and hands each request to
/// the queue, until the pool closes or the server fails.
fn dispatch<S: Detach>(mut server: S, relay: &Relay, queue: &Sender<Relayed>) {
    while !relay.closed.load(Ordering::Acquire) {
        if relay.pause.load(Ordering::Acquire) {
            std::thread::park_timeout(relay.tick);
            continue;
        }
        let head = match server.receive(&relay.pause) {
            Ok(Some(head)) => head,
            Ok(None) => continue,
            Err(e) => {
                *relay.failure.lock() = Some(e);
                return;
            }
        };
        if let Some(held) = server.detach() {
            if !hand_over(relay, queue, (head, held)) {
                return;
            }
        }
    }
}

/// Puts a request in the queue, waiting for room while the pool lives
/// (the kernel holds the requests behind it meanwhile); false when the
/// pool closed first (the request is refused).
fn hand_over(relay: &Relay, queue: &Sender<Relayed>, mut relayed: Relayed) -> bool {
    loop {
        match queue.send_timeout(relayed, relay.tick) {
            Ok(()) => return true,
            Err(SendTimeoutError::Timeout(back)) if !relay.closed.load(Ordering::Acquire) => {
                relayed = back;
            }
            Err(SendTimeoutError::Timeout(back) | SendTimeoutError::Disconnected(back)) => {
                refuse(back);
                return false;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Instant;

    const TICK: Duration = Duration::from_millis(10);

    /// What a test sees of its fake server.
    #[derive(Default)]
    struct Seen {
        /// Requests the fake may still make.
        tickets: AtomicUsize,
        /// Requests it made.
        made: AtomicUsize,
        /// A receive is under way.
        inside: AtomicBool,
        /// Its receives fail from now on.
        fail: AtomicBool,
        /// It was dropped.
        dropped: AtomicBool,
        /// Replies to its requests: (request number, status).
        replies: Mutex<Vec<(usize, Status)>>,
    }

    /// A server making numbered requests while it has tickets, and
    /// waiting (until stopped) while it has none.
    struct Fake(Arc<Seen>, Option<usize>);

    impl Answer for Fake {
        fn data(&self) -> &[u8] {
            &[]
        }
        fn reply(&mut self, _: Status, _: &[u8]) -> Result<()> {
            Ok(())
        }
    }

    impl ServerChannel for Fake {
        fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
            self.0.inside.store(true, Ordering::Release);
            let got = self.wait(stop);
            self.0.inside.store(false, Ordering::Release);
            got
        }
        fn connections(&self) -> usize {
            0
        }
        fn detach(&mut self) -> Option<Box<dyn Answer>> {
            let n = self.1.take()?;
            Some(Box::new(FakeHeld(Arc::clone(&self.0), n, false)))
        }
    }

    impl Fake {
        fn wait(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
            loop {
                if stop.load(Ordering::Relaxed) {
                    return Ok(None);
                }
                if self.0.fail.load(Ordering::Relaxed) {
                    let e = io::Error::from_raw_os_error(libc::EBADF);
                    return Err(Error::io("fake receive", e));
                }
                let t = &self.0.tickets;
                if t.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                    .is_ok()
                {
                    self.1 = Some(self.0.made.fetch_add(1, Ordering::AcqRel));
                    return Ok(Some(Incoming {
                        cmd: 1,
                        len: 8,
                        oneway: false,
                    }));
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }

    impl Detach for Fake {
        fn census(&self) -> Arc<AtomicUsize> {
            Arc::new(AtomicUsize::new(3))
        }
    }

    impl Drop for Fake {
        fn drop(&mut self) {
            self.0.dropped.store(true, Ordering::Release);
        }
    }

    struct FakeHeld(Arc<Seen>, usize, bool);

    impl Answer for FakeHeld {
        fn data(&self) -> &[u8] {
            &[]
        }
        fn reply(&mut self, status: Status, _: &[u8]) -> Result<()> {
            if std::mem::replace(&mut self.2, true) {
                return Err(Error::no_request());
            }
            self.0.replies.lock().push((self.1, status));
            Ok(())
        }
    }

    fn pool(threads: usize) -> (Arc<Seen>, Vec<Box<dyn PoolWorker>>) {
        let seen = Arc::new(Seen::default());
        let workers = relay_pool(Fake(Arc::clone(&seen), None), threads, TICK).expect("pool");
        assert_eq!(workers.len(), threads);
        (seen, workers)
    }

    /// Waits (bounded) until `cond` holds.
    fn until(what: &str, cond: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !cond() {
            assert!(Instant::now() < deadline, "never: {what}");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    fn request_number(w: &mut Box<dyn PoolWorker>, stop: &AtomicBool) -> Box<dyn Answer> {
        let (head, held) = w.receive(stop).expect("receive").expect("a request");
        assert_eq!(head.cmd, 1);
        held
    }

    #[test]
    fn a_flood_past_stuck_workers_waits_in_the_server_not_in_the_queue() {
        let (seen, mut workers) = pool(2);
        let stop = AtomicBool::new(false);
        seen.tickets.store(usize::MAX, Ordering::Release);
        // Both workers take a request and get stuck in their handlers.
        let stuck: Vec<_> = workers
            .iter_mut()
            .map(|w| request_number(w, &stop))
            .collect();
        // The dispatcher fills the queue and then holds one request in
        // its hand: it receives no more.
        let most = 2 + RELAY_PER_THREAD * 2 + 1;
        until("the queue is full", || {
            seen.made.load(Ordering::Acquire) >= most
        });
        std::thread::sleep(TICK * 20);
        assert_eq!(seen.made.load(Ordering::Acquire), most, "the queue grew");
        assert_eq!(workers[0].connections(), 3, "the server's count");
        // The last worker gone, the dispatcher is stopped and joined (its
        // server dropped), and what was queued is answered EIO.
        drop(workers);
        assert!(
            seen.dropped.load(Ordering::Acquire),
            "dispatcher not joined"
        );
        let refused = seen.replies.lock().clone();
        assert_eq!(refused.len(), most - 2);
        assert!(refused
            .iter()
            .all(|&(n, s)| n >= 2 && s == Status::Err(libc::EIO)));
        // The stuck requests are still theirs to answer, once.
        for mut held in stuck {
            held.reply(Status::Ok, b"late").expect("late reply");
            assert!(matches!(
                held.reply(Status::Ok, b"again"),
                Err(Error::Protocol(_))
            ));
        }
    }

    #[test]
    fn a_worker_stuck_in_its_handler_stops_nobody() {
        let (seen, mut workers) = pool(2);
        let stop = AtomicBool::new(false);
        seen.tickets.store(20, Ordering::Release);
        let _stuck = request_number(&mut workers[0], &stop);
        for _ in 1..20 {
            let mut held = request_number(&mut workers[1], &stop);
            held.reply(Status::Ok, &[]).expect("reply");
        }
        assert_eq!(seen.replies.lock().len(), 19);
    }

    #[test]
    fn a_stop_pauses_the_dispatcher_until_a_worker_receives_again() {
        let (seen, mut workers) = pool(2);
        let stop = AtomicBool::new(true);
        assert!(workers[0].receive(&stop).expect("receive").is_none());
        // The dispatcher's receive is told to stop too, within a tick.
        until("the dispatcher stopped", || {
            !seen.inside.load(Ordering::Acquire)
        });
        seen.tickets.store(1, Ordering::Release);
        std::thread::sleep(TICK * 10);
        assert_eq!(
            seen.made.load(Ordering::Acquire),
            0,
            "received while paused"
        );
        stop.store(false, Ordering::Relaxed);
        let mut held = request_number(&mut workers[1], &stop);
        held.reply(Status::Ok, &[]).expect("reply");
        assert_eq!(*seen.replies.lock(), [(0, Status::Ok)]);
    }

    #[test]
    fn a_failed_dispatcher_is_reported_to_every_worker() {
        let (seen, mut workers) = pool(3);
        let stop = AtomicBool::new(false);
        seen.fail.store(true, Ordering::Release);
        for w in &mut workers {
            match w.receive(&stop) {
                Err(Error::Io { op, source }) => {
                    assert_eq!(op, "fake receive");
                    assert_eq!(source.raw_os_error(), Some(libc::EBADF));
                }
                other => panic!("{:?}", other.map(|r| r.map(|(h, _)| h))),
            }
        }
        drop(workers);
        assert!(seen.dropped.load(Ordering::Acquire));
    }

    /// The replies a [`Spy`] was given: wire code and payload.
    type Sent = Arc<Mutex<Vec<(u32, Vec<u8>)>>>;

    /// Where a test's held request goes: what it was sent, how often its
    /// payload was fetched, and whether its client is still there.
    struct Spy {
        fetched: Arc<AtomicUsize>,
        sent: Sent,
        lent: Vec<u8>,
        alive: bool,
    }

    impl ReplyTo for Spy {
        fn send(&mut self, code: u32, data: &[u8]) -> bool {
            self.sent.lock().push((code, data.to_vec()));
            self.alive
        }
        fn fetch(&self, len: usize) -> Vec<u8> {
            self.fetched.fetch_add(1, Ordering::Relaxed);
            vec![7; len]
        }
        fn window(&mut self, max: usize) -> Option<Window<'_>> {
            Some(Window::from(&mut self.lent[..max]))
        }
        fn publish(&mut self, code: u32, len: usize) -> bool {
            let data = self.lent[..len].to_vec();
            self.send(code, &data)
        }
    }

    fn spy(alive: bool) -> (Spy, Arc<AtomicUsize>, Sent) {
        let (fetched, sent) = (Arc::default(), Arc::default());
        let s = Spy {
            fetched: Arc::clone(&fetched),
            sent: Arc::clone(&sent),
            lent: vec![0; 16],
            alive,
        };
        (s, fetched, sent)
    }

    #[test]
    fn a_lazy_held_request_fetches_its_payload_once_and_only_when_asked() {
        let (to, fetched, _) = spy(true);
        let held = Held::lazy(3, None, to, 16, None);
        assert_eq!(fetched.load(Ordering::Relaxed), 0, "not before asked");
        assert_eq!(held.data(), &[7, 7, 7]);
        assert_eq!(held.data(), &[7, 7, 7]);
        assert_eq!(fetched.load(Ordering::Relaxed), 1);
        let (to, fetched, _) = spy(true);
        let held = Held::lazy(2, Some(vec![1, 2]), to, 16, None);
        assert_eq!(held.data(), &[1, 2], "the thread's copy");
        assert_eq!(fetched.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_held_request_is_answered_once_in_place_or_by_copy() {
        let (to, _, sent) = spy(true);
        let mut held = Held::lazy(0, None, to, 16, None);
        let mut w = held.reply_buffer().expect("lent");
        w.write(0, b"hi");
        held.reply_in_place(2).expect("first answer");
        assert!(held.reply_buffer().is_none(), "nothing lent once answered");
        assert!(held.reply(Status::Ok, b"again").is_err());
        assert!(held.reply_in_place(1).is_err());
        assert_eq!(*sent.lock(), vec![(0, b"hi".to_vec())]);
    }

    #[test]
    fn a_held_request_whose_client_is_gone_says_so() {
        let (to, _, _) = spy(false);
        let mut held = Held::new(vec![1], to, 16, None);
        assert!(matches!(
            held.reply(Status::Ok, b"x"),
            Err(Error::Disconnected)
        ));
        let (to, _, sent) = spy(false);
        let mut held = Held::lazy(0, None, to, 16, None);
        assert!(matches!(held.reply_in_place(20), Err(Error::Disconnected)));
        assert_eq!(
            sent.lock()[0].0,
            libc::EMSGSIZE as u32,
            "over max: EMSGSIZE"
        );
    }
}
