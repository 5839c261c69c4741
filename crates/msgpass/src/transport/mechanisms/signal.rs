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
//! **Receiving.** Each side waits on a `signalfd` (which reports the
//! signals pending for the *calling* thread) plus sockets: the server on
//! one epoll set holding its signalfd, the listener and every session,
//! each registered once (`server::Sessions`: a wait costs the same with
//! ten thousand idle clients as with one, and a hang-up names its
//! connection); a client polls [signalfd, its session], so a dead server
//! is noticed at once (session hang-up), and a signal to a dead process
//! fails with `ESRCH`: both are [`Error::Disconnected`].
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
//! connection's token in the server's table (`slab.rs`: a token of a
//! connection dropped since reaches nothing, not even the connection that
//! took its place); the server reaches the connection by it, with no scan,
//! and checks `si_pid` against the connection's peer. It does not carry
//! payload bytes: a 8-byte header leaves no room beside the token, and copying a few bytes from
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
//! **A pool** ([`Channel::into_pool`](crate::Channel::into_pool)). Clients
//! signal one thread, so the pool is a relay (`core::relay_pool`): a
//! dispatcher thread serves the channel as above (it is the thread the
//! clients signal), copies each request out of its connection's area and
//! hands it, with the connection's memory, the client's pid and the
//! request's number, to a bounded queue from which any free pool thread
//! takes it. That thread answers as the serving thread does: the reply in
//! the server-to-client area, `rep_seq`, then the reply signal to the
//! client's thread (read from the control page when the reply goes). A
//! client sends its next request only once answered, so nothing else
//! writes the area meanwhile. A reply to a connection dropped meanwhile
//! goes nowhere; one whose signal cannot be queued marks the connection
//! over, and the dispatcher drops it at its next request (a dead client's
//! session hangs up besides). Pool replies are copied: the area is lent
//! in place ([`Answer::reply_buffer`]) only while no request of the
//! connection is held apart.
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
use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::pulse::{is_pulse, Pulse, PULSE, PULSE_LEN};
use crate::transport::api::{
    Answer, Client, ClientConnection, Creds, Incoming, Options, PoolWorker, ServerChannel, Status,
    Transport, ONEWAY,
};
use crate::transport::mem::window::{View, Window};
use crate::transport::serve::client::fits;
use crate::transport::serve::core::{relay_pool, Detach, Held, ReplyTo, Unanswered};
use crate::transport::serve::owed::Owed;
use crate::transport::serve::server::{
    creds_of, in_place_parts, refuse, reply_parts, starved, Event, Guard, Session, Sessions,
};
use crate::transport::serve::slab::Token;
use crate::transport::wire::areas::Areas;
use crate::transport::wire::framing::head;
use crate::transport::wire::rendezvous::{self, Family, Listener};
use oslayer::poll::PollFd;
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
        let conns = Sessions::new(listener, opts.tick)?;
        conns.watch(sfd.as_fd(), SIGNALS)?;
        let recheck = Arc::new(Recheck {
            tokens: parking_lot::Mutex::new(Vec::new()),
            bell: oslayer::eventfd::new().map_err(|e| Error::io("eventfd", e))?,
        });
        conns.watch(recheck.bell.as_fd(), RECHECK)?;
        Ok(Box::new(SignalServer {
            sfd,
            conns,
            pending: VecDeque::new(),
            tid: 0,
            len: 0,
            buf: vec![0; opts.max_msg],
            pulse: None,
            recheck,
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
            timeout: None,
            owed: Owed::none(),
            tick: opts.tick,
        }))
    }
}

// ------------------------------------------------------------ server

/// A connection as its requests see it: shared by the server's link and
/// the requests detached for a pool, which answer from any thread.
struct Conn {
    /// The connection's memory.
    shared: Shared,
    /// The client's process, from `SO_PEERCRED`.
    pid: i32,
    /// Its process, user and group, from `SO_PEERCRED`.
    creds: Creds,
    /// The signal value both ways: the connection's token.
    id: u64,
    /// The server dropped the connection, or a reply could not be
    /// announced: replies go nowhere, and the server drops the connection
    /// at its next request.
    over: AtomicBool,
    /// [`HELD`] while a request of the connection is held (deferred, or
    /// in a pool): the server takes nothing of it meanwhile; [`MISSED`]
    /// when it left a message of it for that reason, to be looked at again
    /// once the held request is answered.
    hold: AtomicU8,
    /// Where the answer to a held request says that the server must look
    /// at the connection again.
    recheck: Arc<Recheck>,
}

/// Bit of [`Conn::hold`]: a request of the connection is held.
const HELD: u8 = 1;
/// Bit of [`Conn::hold`]: a message of the connection was left because
/// its request was held.
const MISSED: u8 = 2;

/// Connections to look at again (their held request was answered while a
/// message of theirs waited), and the eventfd in the server's session set
/// that says so.
struct Recheck {
    tokens: parking_lot::Mutex<Vec<Token>>,
    bell: OwnedFd,
}

impl Recheck {
    /// Asks the server to look at connection `id` again.
    fn ring(&self, id: u64) {
        if let Some(t) = token_of(id) {
            self.tokens.lock().push(t);
            let _ = oslayer::eventfd::write(self.bell.as_fd(), 1);
        }
    }
}

/// What the server keeps of a client besides its session.
struct Link {
    conn: Arc<Conn>,
    token: Token,
    /// The `req_seq` of the last request taken.
    served: u64,
}

impl Drop for Link {
    fn drop(&mut self) {
        self.conn.over.store(true, Ordering::Release);
    }
}

/// The server's own descriptors in its session set: the signalfd, and
/// the bell of [`Recheck`].
const SIGNALS: u32 = 0;
const RECHECK: u32 = 1;

/// The server side of a signal channel.
struct SignalServer {
    /// Request signals pending for the thread that reads it.
    sfd: OwnedFd,
    /// The clients, and the kernel's ready list over the listener, every
    /// session and the signalfd.
    conns: Sessions<Link>,
    /// Connections whose signal was read and not yet handled, with the
    /// sender's pid (`None`: found by a re-scan, no signal to check).
    pending: VecDeque<(Token, Option<i32>)>,
    /// The tid published in every connection (0: none yet).
    tid: i32,
    /// Length of the request being served, read once and bounded.
    len: usize,
    /// The request being served, copied out of its area once its length
    /// was checked (the client can write the area at any moment), and the
    /// reply built in place: `max_msg` bytes of our own.
    buf: Vec<u8>,
    /// The request being served is a pulse, whose payload is this copy
    /// (taken before its area was handed back to the client).
    pulse: Option<[u8; PULSE_LEN]>,
    /// Connections to look at again, shared with their held requests.
    recheck: Arc<Recheck>,
    guard: Guard<Token>,
    opts: Options,
}

/// Makes a connection's memory, then greets the client, who will have
/// token `token`, with it; hangs up on the client when the memory cannot
/// be made.
fn greet(
    listener: &Listener,
    token: Token,
    tid: i32,
    max: usize,
    recheck: &Arc<Recheck>,
) -> Result<Option<Session<Link>>> {
    let id = token.with_mark(false);
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
    // A peer outside our pid namespace has pid 0, and a signal to pid 0
    // would go to our whole process group: hung up on.
    let Some(creds) = creds_of(sock.as_fd()).filter(|c| c.pid > 0) else {
        return Ok(None);
    };
    let conn = Arc::new(Conn {
        shared,
        pid: creds.pid,
        creds,
        id,
        over: AtomicBool::new(false),
        hold: AtomicU8::new(0),
        recheck: Arc::clone(recheck),
    });
    let link = Link {
        conn,
        token,
        served: 0,
    };
    Ok(Some(Session { sock, link }))
}

/// The connection a signal value names, if it can name one.
fn token_of(value: u64) -> Option<Token> {
    match Token::from_raw(value) {
        (t, false) if Token::is_table(value) => Some(t),
        _ => None,
    }
}

impl SignalServer {
    fn drop_conn(&mut self, t: Token) {
        self.conns.remove(t);
    }

    /// Publishes the calling thread as the one to signal, and takes back
    /// any request whose signal went to the previous thread (the one scan
    /// of every connection, done only when the serving thread changes).
    fn adopt_thread(&mut self) {
        let tid = gettid();
        if tid == self.tid {
            return;
        }
        self.tid = tid;
        for c in self.conns.iter().map(|c| &c.link) {
            c.conn
                .shared
                .ctl()
                .server_tid
                .store(tid as u32, Ordering::SeqCst);
        }
        for c in self.conns.iter().map(|c| &c.link) {
            if c.conn.shared.ctl().req_seq.load(Ordering::SeqCst) != c.served {
                self.pending.push_back((c.token, None));
            }
        }
    }

    /// Accepts the clients waiting.
    fn accept(&mut self) {
        let (tid, max, recheck) = (self.tid, self.opts.max_msg, &self.recheck);
        self.conns.accept(|l, t| greet(l, t, tid, max, recheck));
    }

    /// Reads every request signal pending for this thread into `pending`.
    fn drain(&mut self) -> Result<usize> {
        let mut infos = [SigInfo::default(); 16];
        let mut total = 0;
        loop {
            let n = signal::read_siginfo(self.sfd.as_fd(), &mut infos)
                .map_err(|e| Error::io("read signalfd", e))?;
            for si in &infos[..n] {
                // The value names the connection; `take` checks si_pid. A
                // value that can name none is dropped here.
                if let Some(t) = token_of(si.value()).filter(|_| si.is_queued()) {
                    self.pending.push_back((t, Some(si.pid())));
                }
            }
            total += n;
            if n < infos.len() {
                return Ok(total);
            }
        }
    }

    /// Takes the message of connection `t` sent by process `pid`, if there
    /// is a new one and no request of the connection is held (the message
    /// then waits in its area, see [`left_for_held`]). A pulse is copied
    /// out first; a malformed one drops the connection.
    fn take(&mut self, t: Token, pid: Option<i32>) -> Option<Incoming> {
        let c = &mut self.conns.get_mut(t)?.link;
        // A signal from another process than the client's is ignored.
        if pid.is_some_and(|p| p != c.conn.pid) {
            return None;
        }
        if c.conn.over.load(Ordering::Acquire) {
            // A detached request's reply could not be announced.
            self.drop_conn(t);
            return None;
        }
        let seq = c.conn.shared.ctl().req_seq.load(Ordering::SeqCst);
        if seq == c.served || left_for_held(&c.conn) {
            return None;
        }
        let areas = &c.conn.shared.areas;
        let Ok((code, len)) = areas.head() else {
            self.drop_conn(t);
            return None;
        };
        let pulse = match is_pulse(code) {
            true => match copy_pulse(areas, len) {
                Some(p) => Some(p),
                None => {
                    self.drop_conn(t);
                    return None;
                }
            },
            false => {
                if !crate::transport::mem::shared::grow(&mut self.buf, len) {
                    return None;
                }
                areas.take_payload(&mut self.buf[..len]);
                None
            }
        };
        // The client waits for our reply before it writes again, or may
        // write its next message once a pulse is copied out.
        areas.mark_taken();
        c.served = seq;
        self.pulse = pulse;
        self.len = len;
        self.guard.set(t);
        Some(match pulse {
            Some(_) => Incoming::from_wire(code, len),
            None => Incoming {
                cmd: code,
                len,
                oneway: false,
            },
        })
    }

    /// Queues the connections whose held request was answered while a
    /// message of theirs waited.
    fn rechecked(&mut self) {
        let _ = oslayer::eventfd::read(self.recheck.bell.as_fd());
        let tokens = std::mem::take(&mut *self.recheck.tokens.lock());
        self.pending.extend(tokens.into_iter().map(|t| (t, None)));
    }

    /// Waits up to a tick on the session set and handles what it reports:
    /// newcomers, hang-ups (signals are read next time round).
    fn wait(&mut self) -> Result<()> {
        self.conns.wait(self.opts.tick)?;
        while let Some(ev) = self.conns.next_event() {
            match ev {
                Event::Own(RECHECK) => self.rechecked(),
                Event::Own(_) => {}
                Event::Listener => self.accept(),
                // A client never writes on its session: any event is a
                // hang-up. Requests it sent before dying were drained.
                Event::HungUp(t) => self.drop_conn(t),
            }
        }
        Ok(())
    }
}

impl Answer for SignalServer {
    fn data(&self) -> &[u8] {
        match (
            self.guard.get().and_then(|&t| self.conns.get(t)),
            &self.pulse,
        ) {
            (Some(_), Some(p)) => p,
            (Some(_), None) => &self.buf[..self.len],
            (None, _) => &[],
        }
    }

    fn client(&self) -> Option<Client> {
        let c = &self.conns.get(*self.guard.get()?)?.link.conn;
        Some(Client {
            id: c.id,
            creds: Some(c.creds),
        })
    }

    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        let t = self.guard.take()?;
        let (code, data, verdict) = reply_parts(status, data, self.opts.max_msg);
        let Some(c) = self.conns.get(t) else {
            return verdict;
        };
        let put = c.link.conn.shared.areas.put(&head(code, data.len()), data);
        self.publish(t, put, verdict)
    }

    /// Our private buffer, starting with the request being served; the
    /// reply is copied into the connection's area when it goes.
    fn reply_buffer(&mut self) -> Option<Window<'_>> {
        self.guard.get()?;
        self.buf.get_mut(..self.opts.max_msg).map(Window::from)
    }

    fn reply_in_place(&mut self, len: usize) -> Result<()> {
        let t = self.guard.take()?;
        let (code, len, verdict) = in_place_parts(len, self.opts.max_msg);
        let Some(c) = self.conns.get(t) else {
            return verdict;
        };
        let put = c
            .link
            .conn
            .shared
            .areas
            .put(&head(code, len), &self.buf[..len]);
        self.publish(t, put, verdict)
    }
}

impl ServerChannel for SignalServer {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.guard.clear();
        self.pulse = None;
        block_in_this_thread(req_signal(), 1)
            .map_err(|e| Error::io("block the request signal", e))?;
        self.adopt_thread();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            while let Some((t, pid)) = self.pending.pop_front() {
                if let Some(inc) = self.take(t, pid) {
                    return Ok(Some(inc));
                }
            }
            if self.drain()? > 0 {
                continue;
            }
            self.wait()?;
        }
    }

    fn connections(&self) -> usize {
        self.conns.len()
    }

    /// A call is held by its handle, which answers in the connection's
    /// area; nothing else of the connection is taken until then. A pulse
    /// holds nothing: nobody waits for its answer.
    fn detach(&mut self) -> Option<Box<dyn Answer>> {
        let client = self.client();
        let t = self.guard.take().ok()?;
        if let Some(p) = self.pulse {
            let max = self.opts.max_msg;
            return Some(Held::boxed(p.to_vec(), Unanswered, max, client));
        }
        let link = &self.conns.get(t)?.link;
        let data = self.buf[..self.len].to_vec();
        link.conn.hold.store(HELD, Ordering::Release);
        let to = Announce {
            conn: Arc::clone(&link.conn),
            seq: link.served,
            tick: self.opts.tick,
            answered: false,
        };
        Some(Held::boxed(data, to, self.opts.max_msg, client))
    }

    fn into_pool(self: Box<Self>, threads: usize) -> Result<Vec<Box<dyn PoolWorker>>> {
        let tick = self.opts.tick;
        relay_pool(*self, threads, tick)
    }
}

impl SignalServer {
    /// Announces the reply to connection `t`'s request, once `put` in its
    /// area (a failed put, or an announcement that fails, drops the
    /// connection), and returns `verdict`.
    fn publish(&mut self, t: Token, put: io::Result<()>, verdict: Result<()>) -> Result<()> {
        let Some(c) = self.conns.get(t) else {
            return verdict;
        };
        let tick = self.opts.tick;
        let sent = put.is_ok()
            && announce(&c.link.conn, c.link.served, tick, || {
                oslayer::socket::peer_gone(c.sock.as_fd())
            });
        if !sent {
            self.drop_conn(t);
        }
        verdict
    }
}

/// Announces the reply to request `seq` of `conn` (already in its area):
/// true once the client's thread has its signal. A full signal queue is
/// waited out while the client lives (`gone` says when it does not), for
/// ten ticks at most: a client that lets its signals pile up must not
/// hold its server. ESRCH (the client died) or anything else: false.
fn announce(conn: &Conn, seq: u64, tick: Duration, gone: impl Fn() -> bool) -> bool {
    let ctl = conn.shared.ctl();
    ctl.rep_seq.store(seq, Ordering::SeqCst);
    let tid = ctl.client_tid.load(Ordering::SeqCst) as i32;
    let mut waited = Duration::ZERO;
    loop {
        match signal::queue_to_thread(conn.pid, tid, rep_signal(), conn.id) {
            Ok(()) => return true,
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && waited < tick * 10 && !gone() => {
                std::thread::sleep(QUEUE_FULL_RETRY);
                waited += QUEUE_FULL_RETRY;
            }
            Err(_) => return false,
        }
    }
}

impl Detach for SignalServer {
    fn census(&self) -> Arc<AtomicUsize> {
        self.conns.census()
    }
}

/// True when a message of `conn` must wait because a request of it is
/// held: it is marked [`MISSED`], and the answer to the held request asks
/// the server to look again ([`Announce`]). A hold released meanwhile lets
/// it through (a stray `MISSED` left then is harmless).
fn left_for_held(conn: &Conn) -> bool {
    conn.hold.load(Ordering::Acquire) & HELD != 0
        && conn.hold.fetch_or(MISSED, Ordering::AcqRel) & HELD != 0
}

/// The pulse in an area whose header says `len` bytes, copied out; `None`
/// when it is malformed.
fn copy_pulse(areas: &Areas, len: usize) -> Option<[u8; PULSE_LEN]> {
    if len != PULSE_LEN {
        return None;
    }
    let mut p = [0u8; PULSE_LEN];
    areas.take_payload(&mut p);
    Pulse::decode(&p).map(|_| p)
}

/// Where a detached request's answer goes: the connection's memory and
/// the client's thread (read when the reply goes), for request `seq`.
struct Announce {
    conn: Arc<Conn>,
    seq: u64,
    tick: Duration,
    /// The answer went (or was found to have nowhere to go).
    answered: bool,
}

impl Announce {
    /// The connection is no longer held; the server looks at it again if
    /// it left a message of it meanwhile.
    fn release(&self) {
        let conn = &self.conn;
        if conn.hold.swap(0, Ordering::AcqRel) & MISSED != 0 && !conn.over.load(Ordering::Acquire) {
            conn.recheck.ring(conn.id);
        }
    }
}

impl ReplyTo for Announce {
    /// A reply that cannot be announced marks the connection over, for
    /// the server to drop at its next request (a dead client's session
    /// hangs up besides). The hold ends once the reply is announced: the
    /// connection's area is the reply's until then.
    fn send(&mut self, code: u32, data: &[u8]) -> bool {
        self.answered = true;
        let conn = &self.conn;
        let sent = !conn.over.load(Ordering::Acquire)
            && conn.shared.areas.put(&head(code, data.len()), data).is_ok()
            && announce(conn, self.seq, self.tick, || {
                conn.over.load(Ordering::Acquire)
            });
        if !sent {
            conn.over.store(true, Ordering::Release);
        }
        self.release();
        sent
    }
}

impl Drop for Announce {
    /// Never answered (its handle answers on drop, so only if that failed
    /// to run): the connection is not held any more. After an answer the
    /// hold may be the connection's next request's already.
    fn drop(&mut self) {
        if !self.answered {
            self.release();
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
    /// Number of the last message sent (requests and pulses).
    seq: u64,
    max_msg: usize,
    /// Every call's deadline, from its start.
    timeout: Option<Duration>,
    /// A call timed out: the number of the request whose reply is owed
    /// (the next call waits for it and discards it), and the thread its
    /// reply signal goes to.
    owed: Owed<(u64, i32)>,
    /// How long a wait for a reply whose signal goes to another thread
    /// goes between looks at the memory.
    tick: Duration,
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

    /// The error of a call past its deadline.
    fn timed_out(&self) -> Error {
        Error::TimedOut {
            timeout: self.timeout.unwrap_or_default(),
        }
    }

    /// How long the next wait may last: until `deadline` (past it, the
    /// call's [`Error::TimedOut`]), and a tick at most when no signal is
    /// to come (`signal` false); `None`: for ever.
    fn wait_for(&self, deadline: Option<Instant>, signal: bool) -> Result<Option<Duration>> {
        let most = (!signal).then_some(self.tick);
        match deadline {
            None => Ok(most),
            Some(d) => {
                let left = d
                    .checked_duration_since(Instant::now())
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| self.timed_out())?;
                Ok(Some(most.map_or(left, |m| m.min(left))))
            }
        }
    }

    /// Waits for the reply to request `seq`: its signal (unless `signal`
    /// is false: it went to another thread, and only the memory tells)
    /// and `rep_seq`; or the server's death, or `deadline`.
    fn wait(&self, seq: u64, deadline: Option<Instant>, signal: bool) -> Result<()> {
        let ctl = self.shared.ctl();
        let mut p = [
            PollFd::readable(self.sfd.as_fd()),
            PollFd::readable(self.sock.as_fd()),
        ];
        let mut signalled = !signal;
        loop {
            signalled |= self.drain()?;
            if signalled && ctl.rep_seq.load(Ordering::SeqCst) == seq {
                return Ok(());
            }
            let wait = self.wait_for(deadline, signal)?;
            p[0].revents = 0;
            p[1].revents = 0;
            oslayer::poll::poll(&mut p, wait).map_err(|e| Error::io("poll", e))?;
            if p[1].revents != 0 && p[0].revents == 0 {
                // A reply sent just before the server closed is already
                // pending: look once more before giving up.
                signalled |= self.drain()?;
                if signalled && ctl.rep_seq.load(Ordering::SeqCst) == seq {
                    return Ok(());
                }
                return Err(Error::Disconnected);
            }
        }
    }

    /// Before a call: the reply owed to a call that timed out, waited for
    /// (until `deadline`) and discarded.
    fn settle(&mut self, deadline: Option<Instant>) -> Result<()> {
        let mut owed = std::mem::take(&mut self.owed);
        let r = owed.settle(|(seq, tid)| self.wait(seq, deadline, tid == gettid()));
        self.owed = owed;
        r
    }

    /// Writes the request (`put`) once the area is ours again: a pulse the
    /// server has not taken yet holds it meanwhile (until `deadline`: the
    /// call's [`Error::TimedOut`], nothing sent), a server gone never
    /// takes it (`Disconnected`).
    fn put_request(
        &self,
        put: impl Fn(&Areas) -> io::Result<()>,
        deadline: Option<Instant>,
    ) -> Result<()> {
        for attempt in 0u32.. {
            match put(&self.shared.areas) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if oslayer::socket::peer_gone(self.sock.as_fd()) {
                        return Err(Error::Disconnected);
                    }
                    let nap = Duration::from_micros(20 << attempt.min(13));
                    let most = self.wait_for(deadline, true)?;
                    std::thread::sleep(most.map_or(nap, |m| m.min(nap)));
                }
                r => return r.map_err(|e| Error::io("write request", e)),
            }
        }
        unreachable!("the attempts never run out")
    }

    /// One round trip: `put` writes the request into the area (all of it,
    /// or its header over a payload built in place), then the request is
    /// announced and its reply awaited. Returns the reply's length, read
    /// once and bounded, after its status is checked against a caller's
    /// room of `cap` bytes.
    ///
    /// With a timeout, the call first settles a reply owed to a call that
    /// timed out; past its deadline it returns [`Error::TimedOut`], and
    /// its own reply is owed from then on if its request went out.
    fn round_trip(&mut self, put: impl Fn(&Areas) -> io::Result<()>, cap: usize) -> Result<usize> {
        block_in_this_thread(rep_signal(), 2)
            .map_err(|e| Error::io("block the reply signal", e))?;
        let deadline = self.timeout.map(|t| Instant::now() + t);
        self.settle(deadline)?;
        self.put_request(put, deadline)?;
        let ctl = self.shared.ctl();
        let tid = gettid();
        ctl.client_tid.store(tid as u32, Ordering::SeqCst);
        self.seq += 1;
        ctl.req_seq.store(self.seq, Ordering::SeqCst);
        self.notify()?;
        let r = self.wait(self.seq, deadline, true);
        self.owed.after_wait(r, (self.seq, tid))?;
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

    /// The client-to-server area; not lent while it holds a pulse the
    /// server has not taken, nor while a reply is owed (the copying call
    /// waits for those first).
    fn request_buffer(&mut self) -> Option<Window<'_>> {
        if self.owed.is_owed() || !self.shared.areas.room() {
            return None;
        }
        let max = self.max_msg;
        self.shared.areas.lend()?.get_mut(..max).map(Window::from)
    }

    fn call_in_place(&mut self, cmd: u32, len: usize) -> Result<View<'_>> {
        fits(len, self.max_msg)?;
        let len = self.round_trip(|a| a.put_head(&head(cmd, len)), self.max_msg)?;
        self.shared
            .areas
            .keep_payload(len)
            .map_err(|e| Error::io("copy the reply", e))?;
        Ok(View::from(self.shared.areas.received(len)))
    }

    fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<()> {
        self.timeout = timeout;
        Ok(())
    }

    /// Into the client-to-server area if the server has taken the last
    /// message there (a depth of one pulse not yet taken), announced like
    /// a request; no reply comes.
    fn send_pulse(&mut self, payload: &[u8; PULSE_LEN]) -> Result<()> {
        match self
            .shared
            .areas
            .put(&head(PULSE | ONEWAY, PULSE_LEN), payload)
        {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                return Err(match oslayer::socket::peer_gone(self.sock.as_fd()) {
                    true => Error::Disconnected,
                    false => Error::PulseQueueFull,
                });
            }
            Err(e) => return Err(Error::io("write pulse", e)),
        }
        self.seq += 1;
        self.shared.ctl().req_seq.store(self.seq, Ordering::SeqCst);
        self.notify()
    }
}
