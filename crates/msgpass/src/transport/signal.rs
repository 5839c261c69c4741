//! `signal`: requests and replies announced by real-time signals, queued to
//! one thread with `rt_tgsigqueueinfo(2)`; the messages themselves travel in
//! a sealed memfd per connection (passed over the rendezvous, like
//! `eventfd`).
//!
//! **Signals.** Requests are announced with [`req_signal`] (`SIGRTMIN+4`),
//! replies with [`rep_signal`] (`SIGRTMIN+5`). Two numbers, so a thread that
//! both serves a channel and calls another never takes a request's wake-up
//! for a reply's (or the reverse). Signals are always *thread*-directed: a
//! process-directed one could land in any thread that does not block it,
//! whose default action would kill the process.
//!
//! **Signal masks.** A signal queued to a thread that does not block it runs
//! its default action (terminate), and a server can be sent a request at any
//! moment, including between two `receive`s. So the library blocks the
//! request signal in every thread that calls [`ServerChannel::receive`] on a
//! signal channel, and the reply signal in every thread that calls
//! [`ClientConnection::call`] on a signal connection, and **leaves it
//! blocked** (once per thread; threads created afterwards by that thread
//! inherit the mask). Thread ids are reused, so a signal can reach a thread
//! that does not wait for it (a server thread ended, another took its id
//! before a client's request went out): while their disposition is the
//! default (terminate), the library sets both signals to *ignored*, once per
//! process (children inherit that across exec). The kernel never ignores a
//! blocked signal, so waiting threads still get theirs; other threads drop
//! strays. No other signal is touched. An application must not unblock these
//! two signals in such threads, nor use them for itself.
//!
//! **Receiving.** Each side waits with `poll` on a `signalfd` (which reports
//! the signals pending for the *calling* thread) plus sockets: the server
//! polls [signalfd, listener, every session]; a client polls [signalfd, its
//! session], so a dead server is noticed at once (session hang-up), and a
//! signal to a dead process fails with `ESRCH`: both are
//! [`Error::Disconnected`].
//!
//! **Addressing.** The server learns the client's pid from `SO_PEERCRED` on
//! the session socket (so it can only ever signal its own clients'
//! processes) and its thread from the connection's memory, where the client
//! writes its tid before each request (a connection may be used from
//! several threads in turn). The client learns the server's pid from the
//! hello and its thread from the memory too: the thread that calls
//! `receive` publishes its tid in every connection whenever it differs from
//! the last one published (a channel may be created on one thread and
//! served on another).
//!
//! **Routing and wake-ups.** The signal value (8 bytes) carries the
//! connection's number; the server routes by it and checks `si_pid` against
//! the connection's peer. It does not carry payload bytes: a 8-byte header
//! leaves no room beside the routing number, and copying a few bytes from
//! shared memory costs nothing next to a signal's delivery (a few us). RT
//! signals queue (up to `RLIMIT_SIGPENDING`; at most one per connection and
//! direction is ever pending here), so no wake-up is lost; signals are only
//! wake-ups, though, and the truth is in memory: each request bumps a
//! sequence number (`req_seq`) that the server compares with the last one it
//! served, so a duplicate or forged signal is ignored, and when the serving
//! thread changes the server re-scans every connection for a request whose
//! signal went to the old thread (SeqCst on both sides: either the client
//! reads the new tid or the server sees the new sequence). A client returns
//! only once it has read the reply's signal *and* `rep_seq` equals its
//! request's number, so no signal is left pending behind a finished call.
//! `EAGAIN` (the signal queue limit) is retried every millisecond while the
//! peer lives.
//!
//! Memory of a connection: a control page (server tid, client tid,
//! `req_seq`, `rep_seq`), then the client-to-server area, then the
//! server-to-client area, each the 8-byte wire header plus `max_msg` bytes,
//! page-rounded. Lengths read from shared memory are bounded by `max_msg`.
//! The server reads requests where they lie, and the in-place calls
//! (`call_with`, `reply_with`) build their messages in the areas (see
//! `areas.rs`): only the copying calls copy payloads.

use std::cell::Cell;
use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use crate::error::{Error, Result};
use crate::transport::areas::Areas;
use crate::transport::client::fits;
use crate::transport::rendezvous::{self, Family, Listener};
use crate::transport::server::{
    in_place_parts, refuse, reply_parts, starved, Guard, Session, Sessions,
};
use crate::transport::wire::head;
use crate::transport::{ClientConnection, Incoming, Options, ServerChannel, Status, Transport};
use oslayer::signal::{self, SigInfo, SigSet};
use oslayer::thread::gettid;

const PAGE: usize = 4096;
/// Largest `max_msg` a client accepts from a server (the header's length
/// field is 32 bits).
const MAX_AREA_MSG: usize = u32::MAX as usize - 4 * PAGE;
/// How long a sender waits before retrying when the signal queue is full.
const QUEUE_FULL_RETRY: Duration = Duration::from_millis(1);

/// The signal that announces a request to a server thread (`SIGRTMIN+4`).
pub fn req_signal() -> libc::c_int {
    signal::rt(4)
}

/// The signal that announces a reply to a client thread (`SIGRTMIN+5`).
pub fn rep_signal() -> libc::c_int {
    signal::rt(5)
}

/// Real-time signal notification, shared-memory payload.
#[derive(Debug, Clone, Copy, Default)]
pub struct Signal;

// ------------------------------------------------------------ signals

thread_local! {
    /// Signals this thread has blocked for the library (bit 0: request,
    /// bit 1: reply).
    static BLOCKED: Cell<u8> = const { Cell::new(0) };
}

/// Blocks `sig` (bit `bit` of [`BLOCKED`]) in the calling thread, once.
fn block_in_this_thread(sig: libc::c_int, bit: u8) -> io::Result<()> {
    if BLOCKED.with(|b| b.get() & bit != 0) {
        return Ok(());
    }
    signal::block_in_thread(&SigSet::of(sig))?;
    BLOCKED.with(|b| b.set(b.get() | bit));
    Ok(())
}

/// Makes the two signals harmless in threads that do not wait for them:
/// when their disposition is still the default (terminate), sets it to
/// ignore, once per process. A blocked signal is never ignored (the kernel
/// queues it), so waiting threads still receive theirs; a stray one (sent
/// to a thread id that was reused after its thread ended) is discarded
/// instead of killing the process. A handler the application installed is
/// left alone.
fn ignore_when_unblocked() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        for sig in [req_signal(), rep_signal()] {
            let _ = signal::ignore_if_default(sig);
        }
    });
}

/// A non-blocking signalfd for `sig`; reads report the signals pending for
/// the reading thread.
fn signalfd(sig: libc::c_int) -> io::Result<OwnedFd> {
    signal::signalfd(&SigSet::of(sig))
}

// ------------------------------------------------------------ shared memory

/// The control page at the start of a connection's memory (offsets 0, 4,
/// 8 and 16).
struct Control<'a> {
    /// The thread serving the channel (written by the server).
    server_tid: &'a AtomicU32,
    /// The thread of the client's current call (written by the client).
    client_tid: &'a AtomicU32,
    /// Number of the client's latest request.
    req_seq: &'a AtomicU64,
    /// Number of the request the latest reply answers.
    rep_seq: &'a AtomicU64,
}

/// A connection's memory: the control page, then the message areas.
struct Shared {
    areas: Areas,
}

impl Shared {
    fn ctl(&self) -> Control<'_> {
        let m = self.areas.control();
        Control {
            server_tid: m.atomic_u32(0),
            client_tid: m.atomic_u32(4),
            req_seq: m.atomic_u64(8),
            rep_seq: m.atomic_u64(16),
        }
    }
}

// ------------------------------------------------------------ transport

impl Transport for Signal {
    fn name(&self) -> &'static str {
        "signal"
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        ignore_when_unblocked();
        let listener = Listener::bind(path, Family::Signal, opts.max_msg)?;
        let sfd = signalfd(req_signal()).map_err(|e| Error::io("signalfd", e))?;
        Ok(Box::new(SignalServer {
            sfd,
            conns: Sessions::new(listener),
            pending: VecDeque::new(),
            pollfds: Vec::new(),
            tid: 0,
            next_id: 0,
            len: 0,
            guard: Guard::default(),
            opts: opts.clone(),
        }))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        ignore_when_unblocked();
        let (sock, hello, fds) = rendezvous::connect(path, Family::Signal, opts)?;
        let bad = |what: String| Error::Protocol(format!("signal: {what}"));
        let [mem]: [OwnedFd; 1] = fds
            .try_into()
            .map_err(|_| bad("expected one memfd".into()))?;
        if hello.extra.len() != 20 {
            return Err(bad("hello lacks the connection details".into()));
        }
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&hello.extra[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let (max, id) = (u64_at(0), u64_at(8));
        let mut pid = [0u8; 4];
        pid.copy_from_slice(&hello.extra[16..20]);
        let server_pid = i32::from_le_bytes(pid);
        if max > MAX_AREA_MSG as u64 || max as usize != hello.max_msg {
            return Err(bad(format!("message size {max} out of range")));
        }
        let areas = Areas::adopt(mem.as_fd(), "signal", PAGE, max)
            .map_err(|e| Error::io("map memfd", e))?;
        let shared = Shared { areas };
        let max = max as usize;
        let sfd = signalfd(rep_signal()).map_err(|e| Error::io("signalfd", e))?;
        let seq = shared.ctl().req_seq.load(Ordering::SeqCst);
        Ok(Box::new(SignalClient {
            sock,
            sfd,
            shared,
            id,
            server_pid,
            seq,
            max_msg: max,
        }))
    }
}

// ------------------------------------------------------------ server

/// What the server keeps of a client besides its session.
struct Link {
    /// Number unique among this server's connections (the signal value).
    id: u64,
    shared: Shared,
    /// The client's process, from `SO_PEERCRED`.
    pid: i32,
    /// The `req_seq` of the last request taken.
    served: u64,
}

/// The server side of a signal channel.
struct SignalServer {
    /// Request signals pending for the thread that reads it.
    sfd: OwnedFd,
    conns: Sessions<Link>,
    /// Connections whose signal was read and not yet handled, with the
    /// sender's pid (`None`: found by a re-scan, no signal to check).
    pending: VecDeque<(u64, Option<i32>)>,
    /// `[signalfd, listener, each session]`, emptied when stale.
    pollfds: Vec<oslayer::poll::PollFd>,
    /// The tid published in every connection (0: none yet).
    tid: i32,
    next_id: u64,
    /// Length of the request being served, read once and bounded: its
    /// payload is read where it lies.
    len: usize,
    guard: Guard,
    opts: Options,
}

fn pollfd(fd: BorrowedFd<'_>) -> oslayer::poll::PollFd {
    oslayer::poll::PollFd::readable(fd)
}

/// Makes a connection's memory, then greets the client with it; hangs up
/// on the client when the memory cannot be made.
fn greet(
    listener: &Listener,
    next_id: &mut u64,
    tid: i32,
    max: usize,
) -> Result<Option<Session<Link>>> {
    *next_id += 1;
    let id = *next_id;
    let (mem, areas) = match Areas::create("msgpass-signal", PAGE, max) {
        Ok(made) => made,
        Err(e) => return refuse(listener, Error::io("make the shared memory", e)),
    };
    let shared = Shared { areas };
    shared.ctl().server_tid.store(tid as u32, Ordering::SeqCst);
    let mut extra = Vec::with_capacity(20);
    extra.extend_from_slice(&(max as u64).to_le_bytes());
    extra.extend_from_slice(&id.to_le_bytes());
    extra.extend_from_slice(&(std::process::id() as i32).to_le_bytes());
    let sock = match listener.accept_with(&[mem.as_fd()], &extra) {
        Ok(sock) => sock,
        Err(e) if starved(&e) => return Err(e),
        Err(_) => return Ok(None),
    };
    let Ok(cred) = oslayer::socket::peer_cred(sock.as_fd()) else {
        return Ok(None);
    };
    let link = Link {
        id,
        shared,
        pid: cred.pid,
        served: 0,
    };
    Ok(Some(Session { sock, link }))
}

impl SignalServer {
    fn drop_conn(&mut self, i: usize) {
        self.conns.remove(i);
        self.pollfds.clear();
        self.guard.clear();
    }

    /// Publishes the calling thread as the one to signal, and takes back
    /// any request whose signal went to the previous thread.
    fn adopt_thread(&mut self) {
        let tid = gettid();
        if tid == self.tid {
            return;
        }
        self.tid = tid;
        for c in self.conns.list.iter().map(|c| &c.link) {
            c.shared
                .ctl()
                .server_tid
                .store(tid as u32, Ordering::SeqCst);
        }
        for c in self.conns.list.iter().map(|c| &c.link) {
            if c.shared.ctl().req_seq.load(Ordering::SeqCst) != c.served {
                self.pending.push_back((c.id, None));
            }
        }
    }

    /// Accepts the clients waiting.
    fn accept(&mut self) {
        let (next_id, tid, max) = (&mut self.next_id, self.tid, self.opts.max_msg);
        self.conns
            .accept_waiting(Duration::ZERO, self.opts.tick, |l, _| {
                greet(l, next_id, tid, max)
            });
        self.pollfds.clear();
    }

    /// Reads every request signal pending for this thread into `pending`.
    fn drain(&mut self) -> Result<usize> {
        let mut infos = [SigInfo::default(); 16];
        let mut total = 0;
        loop {
            let n = signal::read_siginfo(self.sfd.as_fd(), &mut infos)
                .map_err(|e| Error::io("read signalfd", e))?;
            for si in &infos[..n] {
                if si.is_queued() {
                    // The value names the connection; `take` checks si_pid.
                    self.pending.push_back((si.value(), Some(si.pid())));
                }
            }
            total += n;
            if n < infos.len() {
                return Ok(total);
            }
        }
    }

    /// Takes the request of connection `id` sent by process `pid`, if there
    /// is a new one.
    fn take(&mut self, id: u64, pid: Option<i32>) -> Option<Incoming> {
        let i = self.conns.list.iter().position(|c| c.link.id == id)?;
        let c = &mut self.conns.list[i].link;
        // A signal from another process than the client's is ignored.
        if pid.is_some_and(|p| p != c.pid) {
            return None;
        }
        let seq = c.shared.ctl().req_seq.load(Ordering::SeqCst);
        if seq == c.served {
            return None;
        }
        let Ok((cmd, len)) = c.shared.areas.head() else {
            self.drop_conn(i);
            return None;
        };
        c.served = seq;
        self.len = len;
        self.guard.set(i);
        Some(Incoming {
            cmd,
            len,
            oneway: false,
        })
    }

    fn rebuild_pollfds(&mut self) {
        if !self.pollfds.is_empty() {
            return;
        }
        self.pollfds.push(pollfd(self.sfd.as_fd()));
        self.pollfds.push(pollfd(self.conns.listener().as_fd()));
        for c in &self.conns.list {
            self.pollfds.push(pollfd(c.sock.as_fd()));
        }
    }
}

impl ServerChannel for SignalServer {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.guard.clear();
        block_in_this_thread(req_signal(), 1)
            .map_err(|e| Error::io("block the request signal", e))?;
        self.adopt_thread();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            while let Some((id, pid)) = self.pending.pop_front() {
                if let Some(inc) = self.take(id, pid) {
                    return Ok(Some(inc));
                }
            }
            if self.drain()? > 0 {
                continue;
            }
            self.rebuild_pollfds();
            for p in &mut self.pollfds {
                p.revents = 0;
            }
            if oslayer::poll::poll(&mut self.pollfds, Some(self.opts.tick))
                .map_err(|e| Error::io("poll", e))?
                == 0
            {
                continue;
            }
            if self.pollfds[0].revents != 0 {
                continue;
            }
            if self.pollfds[1].revents != 0 {
                self.accept();
                continue;
            }
            // A client never writes on its session: any event is a hang-up.
            // Requests it sent before dying were drained above.
            if let Some(k) = self.pollfds[2..].iter().position(|p| p.revents != 0) {
                self.drop_conn(k);
            }
        }
    }

    fn data(&self) -> &[u8] {
        match self.guard.get() {
            Some(&i) => self.conns.list[i].link.shared.areas.received(self.len),
            None => &[],
        }
    }

    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        let i = self.guard.take()?;
        let (code, data, verdict) = reply_parts(status, data, self.opts.max_msg);
        let put = self.conns.list[i]
            .link
            .shared
            .areas
            .put(&head(code, data.len()), data);
        self.publish(i, put, verdict)
    }

    /// The server-to-client area of the connection whose request is being
    /// served, starting with the request.
    fn reply_buffer(&mut self) -> Option<&mut [u8]> {
        let i = *self.guard.get()?;
        let max = self.opts.max_msg;
        let areas = &mut self.conns.list[i].link.shared.areas;
        areas.lend(self.len).get_mut(..max)
    }

    fn reply_in_place(&mut self, len: usize) -> Result<()> {
        let i = self.guard.take()?;
        let (code, len, verdict) = in_place_parts(len, self.opts.max_msg);
        let put = self.conns.list[i]
            .link
            .shared
            .areas
            .put_head(&head(code, len));
        self.publish(i, put, verdict)
    }

    fn connections(&self) -> usize {
        self.conns.list.len()
    }
}

impl SignalServer {
    /// Announces the reply to connection `i`'s request, once `put` in its
    /// area (a failed put drops the connection), and returns `verdict`.
    fn publish(&mut self, i: usize, put: io::Result<()>, verdict: Result<()>) -> Result<()> {
        if put.is_err() {
            self.drop_conn(i);
            return verdict;
        }
        let (sock, c) = (&self.conns.list[i].sock, &self.conns.list[i].link);
        let ctl = c.shared.ctl();
        ctl.rep_seq.store(c.served, Ordering::SeqCst);
        let tid = ctl.client_tid.load(Ordering::SeqCst) as i32;
        // A full signal queue is waited out while the client lives, for
        // ten ticks at most: a client that lets its signals pile up must
        // not hold the server.
        let mut waited = Duration::ZERO;
        loop {
            match signal::queue_to_thread(c.pid, tid, rep_signal(), c.id) {
                Ok(()) => return verdict,
                Err(e)
                    if e.raw_os_error() == Some(libc::EAGAIN)
                        && waited < self.opts.tick * 10
                        && !oslayer::socket::peer_gone(sock.as_fd()) =>
                {
                    std::thread::sleep(QUEUE_FULL_RETRY);
                    waited += QUEUE_FULL_RETRY;
                }
                // ESRCH (the client died) or anything else: drop it.
                Err(_) => {
                    self.drop_conn(i);
                    return verdict;
                }
            }
        }
    }
}

// ------------------------------------------------------------ client

/// The client side of a signal connection.
struct SignalClient {
    /// The rendezvous session: its hang-up means the server died.
    sock: OwnedFd,
    /// Reply signals pending for the thread that reads it.
    sfd: OwnedFd,
    shared: Shared,
    /// The connection's number (the signal value both ways).
    id: u64,
    server_pid: i32,
    /// Number of the last request sent.
    seq: u64,
    max_msg: usize,
}

impl SignalClient {
    /// Announces the request to the serving thread.
    fn notify(&self) -> Result<()> {
        let ctl = self.shared.ctl();
        let mut tid = ctl.server_tid.load(Ordering::SeqCst);
        loop {
            match signal::queue_to_thread(self.server_pid, tid as i32, req_signal(), self.id) {
                Ok(()) => return Ok(()),
                Err(e) => match e.raw_os_error() {
                    Some(libc::ESRCH) => {
                        // The thread may have handed the channel on.
                        let now = ctl.server_tid.load(Ordering::SeqCst);
                        if now == tid {
                            return Err(Error::Disconnected);
                        }
                        tid = now;
                    }
                    Some(libc::EAGAIN) => {
                        if oslayer::socket::peer_gone(self.sock.as_fd()) {
                            return Err(Error::Disconnected);
                        }
                        std::thread::sleep(QUEUE_FULL_RETRY);
                    }
                    _ => return Err(Error::io("queue the request signal", e)),
                },
            }
        }
    }

    /// Reads the reply signals pending for this thread; true when one is
    /// this connection's.
    fn drain(&self) -> Result<bool> {
        let mut infos = [SigInfo::default(); 4];
        let mut ours = false;
        loop {
            let n = signal::read_siginfo(self.sfd.as_fd(), &mut infos)
                .map_err(|e| Error::io("read signalfd", e))?;
            ours |= infos[..n]
                .iter()
                .any(|si| si.is_queued() && si.pid() == self.server_pid && si.value() == self.id);
            if n < infos.len() {
                return Ok(ours);
            }
        }
    }

    /// Waits for this request's reply signal, or the server's death.
    fn wait(&self) -> Result<()> {
        let ctl = self.shared.ctl();
        let mut p = [pollfd(self.sfd.as_fd()), pollfd(self.sock.as_fd())];
        let mut signalled = false;
        loop {
            signalled |= self.drain()?;
            if signalled && ctl.rep_seq.load(Ordering::SeqCst) == self.seq {
                return Ok(());
            }
            p[0].revents = 0;
            p[1].revents = 0;
            oslayer::poll::poll(&mut p, None::<Duration>).map_err(|e| Error::io("poll", e))?;
            if p[1].revents != 0 && p[0].revents == 0 {
                // A reply sent just before the server closed is already
                // pending: look once more before giving up.
                signalled |= self.drain()?;
                if signalled && ctl.rep_seq.load(Ordering::SeqCst) == self.seq {
                    return Ok(());
                }
                return Err(Error::Disconnected);
            }
        }
    }

    /// One round trip: `put` writes the request into the area (all of it,
    /// or its header over a payload built in place), then the request is
    /// announced and its reply awaited. Returns the reply's length, read
    /// once and bounded, after its status is checked against a caller's
    /// room of `cap` bytes.
    fn round_trip(
        &mut self,
        put: impl FnOnce(&Areas) -> io::Result<()>,
        cap: usize,
    ) -> Result<usize> {
        block_in_this_thread(rep_signal(), 2)
            .map_err(|e| Error::io("block the reply signal", e))?;
        put(&self.shared.areas).map_err(|e| Error::io("write request", e))?;
        let ctl = self.shared.ctl();
        ctl.client_tid.store(gettid() as u32, Ordering::SeqCst);
        self.seq += 1;
        ctl.req_seq.store(self.seq, Ordering::SeqCst);
        self.notify()?;
        self.wait()?;
        let (status, len) = self
            .shared
            .areas
            .head()
            .map_err(|e| Error::Protocol(format!("reply: {e}")))?;
        Status::check_reply(status, len, cap)?;
        Ok(len)
    }
}

impl ClientConnection for SignalClient {
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        fits(req.len(), self.max_msg)?;
        let len = self.round_trip(|a| a.put(&head(cmd, req.len()), req), reply.len())?;
        self.shared.areas.take_payload(&mut reply[..len]);
        Ok(len)
    }

    fn max_msg(&self) -> usize {
        self.max_msg
    }

    /// The client-to-server area.
    fn request_buffer(&mut self) -> Option<&mut [u8]> {
        let max = self.max_msg;
        self.shared.areas.lend(0).get_mut(..max)
    }

    fn call_in_place(&mut self, cmd: u32, len: usize) -> Result<&[u8]> {
        fits(len, self.max_msg)?;
        let len = self.round_trip(|a| a.put_head(&head(cmd, len)), self.max_msg)?;
        Ok(self.shared.areas.received(len))
    }
}
