//! `sysv-msg`: System V message queues.
//!
//! **Queues.** One request queue per channel, one reply queue per
//! connection, all `IPC_PRIVATE`, mode 0600. A client sends its request
//! (8-byte wire header, then payload) to the request queue with its
//! connection's number as the message type; the server blocks in one
//! `msgrcv` for any type, so requests from all clients are served in
//! arrival order without polling, and it replies on that connection's
//! reply queue, where the client blocks in `msgrcv`. A round trip is two
//! `msgsnd` and two `msgrcv`, as in a hand-written System V server. The
//! queue ids and the connection's type reach the client in the hello's
//! extra bytes.
//!
//! **Message types are secrets.** The request queue is shared, and a
//! client sets the message type of what it sends, so the type is the only
//! thing telling the server which connection a request comes from (and so
//! which reply queue gets the answer). Types used to be handed out in
//! order (2, 3, ...): a client could send a request under its neighbour's
//! type and have the answer land in the neighbour's reply queue, where the
//! neighbour's next call reads it as its own. Each connection's type is now
//! 62 random bits (`getrandom`, never 1, unique among the live
//! connections), told only to that client over its private session socket;
//! the server finds a request's connection by its type in a hash map (in
//! time independent of the number of connections), and a request whose
//! type is no live connection's is discarded. Rejected
//! alternatives: the sender's pid cannot be checked (`msgrcv` does not
//! report it, and `IPC_STAT`'s `msg_lspid` is only the *last* sender, and
//! one more system call per message); one request queue per connection
//! would cost the one blocking `msgrcv` for all clients (a queue cannot be
//! polled). Limit: System V permissions cannot tell two processes of one
//! user apart, and every client must be able to write the request queue,
//! so a client of the same user that *reads* the request queue (`msgrcv`)
//! can still steal or observe others' requests; random types stop a client
//! that only writes from posing as another, which is the hole there was.
//!
//! **Sizes.** A message's text is at most `kernel.msgmax` (8192 bytes by
//! default), and must fit a queue (`kernel.msgmnb`, 16384): the payload
//! maximum is the smaller of the two, less the header (8184 by default).
//! (`msgmax` binds everybody; only `msgmnb` could be exceeded, with
//! CAP_SYS_RESOURCE, and is honoured anyway.)
//! Clients learn the maximum from the hello. A request queue holds
//! `msgmnb` bytes for all clients together: when it is full a client
//! retries its send with a short sleep (50 us, doubling up to 1 ms), which
//! only happens when several large requests are queued at once.
//!
//! **No descriptor to poll.** A queue cannot be polled, so each side has a
//! helper thread:
//! - the server's *ticker* polls the server's session set (an epoll
//!   descriptor over the listener and every client's session, which polls
//!   readable while a client waits or a session hung up, see
//!   `server::Sessions`) with a timeout of one [`Options::tick`], and wakes
//!   the server blocked in `msgrcv` with an empty message of type 1 in the
//!   request queue; the server then takes what the set reports (accepts
//!   the newcomers, drops the connections whose session hung up, removing
//!   their queues) and checks its stop flag. Nothing looks at every
//!   client. Cost: one thread per channel, woken at most once per tick
//!   while idle, plus one wake-up per burst of new connections or
//!   hang-ups; nothing per request.
//! - each client's *watchdog* blocks in poll on the rendezvous session
//!   socket; on hang-up (the server died or dropped the connection) it
//!   marks the connection dead and removes its reply queue, which makes a
//!   `msgrcv` blocked on it return `EIDRM` at once. Cost: one mostly
//!   sleeping thread per connection, nothing per call.
//!
//! **A pool** ([`Channel::into_pool`](crate::Channel::into_pool)). Every
//! request arrives in the one request queue, which one blocking `msgrcv`
//! drains, so the pool is a relay (`core::relay_pool`): a dispatcher
//! thread serves the channel as above, copies each request out with its
//! connection's reply queue id, and hands it to a bounded queue from which
//! any free pool thread takes it; the reply goes from that thread straight
//! to the client's reply queue (a `msgsnd`, which any thread may make).
//! While every pool thread is busy the dispatcher stops receiving, and the
//! requests wait in the request queue (bounded by `msgmnb`: clients then
//! retry their sends, see Sizes). A reply to a connection dropped
//! meanwhile goes nowhere (its queue is gone); one its queue refuses marks
//! the connection over, and the dispatcher drops it at its next request.
//!
//! **No leaks.** No queue outlives both its server and its client, unless
//! the server is killed (see After a crash below). The
//! server removes a connection's queue when it drops the connection (its
//! session hung up: the client died, or broke the protocol), and its
//! request queue when the channel is dropped; a client removes its reply
//! queue when it is dropped or sees the server die. A channel being
//! dropped removes every client's reply queue too, at once: a client
//! frozen (SIGSTOP) while the server stops, then killed, never runs its
//! watchdog, and its queue would outlive everybody. A reply still
//! waiting in a queue then (its client is frozen, or not yet back in
//! `msgrcv`) is first moved to the client's session socket, one
//! `SOCK_SEQPACKET` message that the kernel keeps for the client and
//! frees with it. A client whose reply queue is gone (`EIDRM`, `EINVAL`)
//! reads its session, without waiting, before it reports
//! [`Error::Disconnected`]: a frozen client that thaws gets the answer to
//! its call, as on the transports whose replies wait in a socket or a
//! mapping, and `Disconnected` for its next call. The server moves the
//! reply before it removes the queue, so the client never reads too
//! early; a reply a pool thread sends while the channel is being dropped
//! may still find its queue gone (its client hears `Disconnected`, as for
//! any call the stopping server did not answer). Rejected: removing the
//! queue with the reply in it (a frozen client would lose an answer that
//! a socket transport delivers, and report a served call `Disconnected`);
//! leaving the queue to the next server of the endpoint (what was done:
//! it outlived both ends until then, for ever if the endpoint was not
//! served again); a reaper process outliving the server (one more
//! process per channel, and killable too).
//!
//! **After a crash.** The server keeps a record of its live queues (id
//! and creation time) beside its endpoint, in `<endpoint>.msq.lock.lock`
//! (a name no endpoint, lock file or directory can take, since names
//! ending in `.lock` are reserved), removed when the channel is dropped.
//! A killed server (SIGKILL) runs no code: its request queue stays, and
//! so does a client's reply queue if the client cannot remove it either
//! (frozen, then killed too: a System V queue is not tied to any process,
//! so nothing the kernel does on their deaths removes it). A server
//! claiming the endpoint after a crash removes the recorded queues that
//! still exist with the same creator, mode and creation time, then the
//! record; until then (for ever, if the endpoint is not served again)
//! they stay, as `ipcs -q` shows. Only a crash between `msgget` and the
//! record's update (microseconds) leaves a queue that no record names.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::pulse::{is_pulse, Pulse, PULSE, PULSE_LEN};
use crate::transport::api::{
    Answer, Client, ClientConnection, Creds, Incoming, Options, PoolWorker, ServerChannel, Status,
    Transport, ONEWAY,
};
use crate::transport::clock::alarm::Alarm;
use crate::transport::serve::core::{relay_pool, Detach, Held, ReplyTo, Unanswered};
use crate::transport::serve::owed::Owed;
use crate::transport::serve::server::{
    creds_of, greeted, refuse, reply_parts, Event, Guard, Session, Sessions,
};
use crate::transport::serve::slab::Token;
use crate::transport::wire::framing::{head, parse_head, HEAD};
use crate::transport::wire::rendezvous::{self, Family, Listener};
use oslayer::socket::RecvFlags;
use oslayer::sysv_msg::{MsgBuf, MsgFlags, MsgQueueId, MsgQueueStamp, MsgType};

/// Type of the ticker's wake-up messages in a request queue (connections
/// use 2 and up).
const MTYPE_WAKE: MsgType = 1;
/// Type of replies in a reply queue.
const MTYPE_REPLY: MsgType = 1;
/// Type of the wake-up message the alarm thread puts in a reply queue
/// when a call's deadline passes (see the module documentation).
const MTYPE_DEADLINE: MsgType = 2;
/// Length of the hello's extra bytes: request queue id (i32), reply queue
/// id (i32), the connection's message type (a `long`), little-endian.
const EXTRA_LEN: usize = 16;
// The hello carries a message type in 8 bytes.
const _: () = assert!(std::mem::size_of::<libc::c_long>() == 8);
/// First line of a queue record.
const RECORD_HEADER: &str = "msgpass sysv-msg queues: id ctime";

/// Reads an integer from a `/proc/sys` file.
fn proc_usize(path: &str) -> Option<usize> {
    fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Largest message text a queue takes here: `min(msgmax, msgmnb)`.
fn text_limit() -> usize {
    let msgmax = proc_usize("/proc/sys/kernel/msgmax").unwrap_or(8192);
    let msgmnb = proc_usize("/proc/sys/kernel/msgmnb").unwrap_or(16384);
    msgmax.min(msgmnb)
}

/// System V message queues.
#[derive(Debug, Clone, Copy, Default)]
pub struct SysvMsg;

impl Transport for SysvMsg {
    fn name(&self) -> &'static str {
        "sysv-msg"
    }

    fn max_msg(&self, requested: usize) -> usize {
        requested.min(text_limit().saturating_sub(HEAD))
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        let max_msg = self.max_msg(opts.max_msg);
        let (req_q, req_stamp) =
            new_queue().map_err(|e| Error::io("sysv-msg: create the request queue", e))?;
        let record = match Record::create(path).and_then(|r| {
            r.write(&[(req_q, req_stamp)])?;
            Ok(r)
        }) {
            Ok(r) => r,
            Err(e) => {
                let _ = oslayer::sysv_msg::remove(req_q);
                return Err(Error::io("sysv-msg: write the queue record", e));
            }
        };
        let conns = match Listener::bind(path, Family::SysvMsg, max_msg)
            .and_then(|l| Sessions::new(l, opts.tick))
        {
            Ok(c) => c,
            Err(e) => {
                let _ = oslayer::sysv_msg::remove(req_q);
                return Err(e);
            }
        };
        let mut server = SysvServer {
            req_q,
            req_stamp,
            record,
            conns,
            by_type: HashMap::new(),
            dirty: false,
            buf: MsgBuf::new(HEAD + max_msg),
            len: 0,
            oneway: false,
            small: MsgBuf::new(HEAD),
            guard: Guard::default(),
            max_msg,
            shared: Arc::new(Shared::default()),
            kick: None,
            ticker: None,
            tick: opts.tick,
        };
        // From here on, dropping `server` removes the queues.
        let kick =
            Arc::new(oslayer::eventfd::new().map_err(|e| Error::io("sysv-msg: eventfd", e))?);
        let sessions = server
            .conns
            .poll_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::io("sysv-msg: dup the session set", e))?;
        let ticker = Ticker {
            sessions,
            kick: Arc::clone(&kick),
            shared: Arc::clone(&server.shared),
            req_q,
            tick: opts.tick,
        };
        server.ticker = Some(
            std::thread::Builder::new()
                .name("msgpass-sysv-tick".into())
                .spawn(move || ticker.run())
                .map_err(|e| Error::io("sysv-msg: start the ticker thread", e))?,
        );
        server.kick = Some(kick);
        Ok(Box::new(server))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        Ok(Box::new(connect(path, opts)?))
    }
}

/// Connects to the endpoint at `path`.
fn connect(path: &Path, opts: &Options) -> Result<SysvClient> {
    let (sock, hello, _fds) = rendezvous::connect(path, Family::SysvMsg, opts)?;
    let extra: [u8; EXTRA_LEN] = hello.extra.as_slice().try_into().map_err(|_| {
        Error::Protocol(format!(
            "{}: the server could not create this connection's queue",
            path.display()
        ))
    })?;
    let i32_at =
        |i: usize| i32::from_le_bytes([extra[i], extra[i + 1], extra[i + 2], extra[i + 3]]);
    let req_q = MsgQueueId(i32_at(0));
    let reply_q = MsgQueueId(i32_at(4));
    let mtype = MsgType::from_le_bytes(extra[8..16].try_into().expect("8 bytes"));
    let dead = Arc::new(AtomicBool::new(false));
    let (stop_r, stop_w) = oslayer::pipe::pipe().map_err(|e| Error::io("sysv-msg: pipe", e))?;
    let session = Arc::new(sock);
    let watchdog = Watchdog {
        sock: Arc::clone(&session),
        stop: stop_r,
        dead: Arc::clone(&dead),
        reply_q,
    };
    let handle = match std::thread::Builder::new()
        .name("msgpass-sysv-watch".into())
        .spawn(move || watchdog.run())
    {
        Ok(h) => h,
        Err(e) => {
            let _ = oslayer::sysv_msg::remove(reply_q);
            return Err(Error::io("sysv-msg: start the watchdog thread", e));
        }
    };
    Ok(SysvClient {
        req_q,
        reply_q,
        mtype,
        buf: MsgBuf::new(HEAD + hello.max_msg),
        max_msg: hello.max_msg,
        dead,
        session,
        stop: Some(stop_w),
        watchdog: Some(handle),
        timeout: None,
        alarm: None,
        woken: false,
        owed: Owed::none(),
    })
}

/// Creates a private queue and reads its stamp.
fn new_queue() -> io::Result<(MsgQueueId, MsgQueueStamp)> {
    let id = oslayer::sysv_msg::create_private()?;
    match oslayer::sysv_msg::stamp(id) {
        Ok(st) => Ok((id, st)),
        Err(e) => {
            let _ = oslayer::sysv_msg::remove(id);
            Err(e)
        }
    }
}

/// The record of a server's live queues, beside its endpoint; removed on
/// drop.
struct Record {
    file: File,
    path: PathBuf,
}

fn record_path(endpoint: &Path) -> PathBuf {
    let mut p = endpoint.as_os_str().to_owned();
    p.push(".msq.lock.lock");
    PathBuf::from(p)
}

impl Record {
    fn create(endpoint: &Path) -> io::Result<Record> {
        let path = record_path(endpoint);
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(&path)?;
        Ok(Record { file, path })
    }

    /// Replaces the record's content with `queues`.
    fn write(&self, queues: &[(MsgQueueId, MsgQueueStamp)]) -> io::Result<()> {
        let mut s = format!("{RECORD_HEADER}\n");
        for &q in queues {
            s.push_str(&record_line(q));
        }
        // Overwrite, then cut: a crash in between leaves old lines after
        // the new ones, which the cleanup validates like any other.
        self.file.write_all_at(s.as_bytes(), 0)?;
        self.file.set_len(s.len() as u64)
    }
}

impl Record {
    /// Adds `queue` at the end of the record: a new connection's queue is
    /// recorded before anything else can fail, in time independent of the
    /// connections there are (the record is rewritten whole, dropping the
    /// lines of queues removed meanwhile, once per round of housekeeping).
    fn append(&self, queue: (MsgQueueId, MsgQueueStamp)) -> io::Result<()> {
        let end = self.file.metadata()?.len();
        self.file.write_all_at(record_line(queue).as_bytes(), end)
    }
}

/// One queue's line in a record.
fn record_line((id, st): (MsgQueueId, MsgQueueStamp)) -> String {
    format!("{} {}\n", id.0, st.ctime)
}

impl Drop for Record {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.path);
    }
}

/// Removes the queues that a dead server of `endpoint` recorded and that
/// still exist with the recorded creation time, created by us with mode
/// 0600; then the record. The caller holds the endpoint's claim, so no
/// live server owns the record.
pub(crate) fn clean_stale(endpoint: &Path) {
    let path = record_path(endpoint);
    let Ok(mut f) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(&path)
    else {
        return;
    };
    let mut text = String::new();
    if f.read_to_string(&mut text).is_ok() && text.starts_with(RECORD_HEADER) {
        let me = oslayer::ids::euid();
        for line in text.lines().skip(1) {
            let mut w = line.split_whitespace();
            let (Some(Ok(id)), Some(Ok(ctime))) = (
                w.next().map(|s| s.parse::<i32>().map(MsgQueueId)),
                w.next().map(str::parse::<i64>),
            ) else {
                continue;
            };
            match oslayer::sysv_msg::stamp(id) {
                Ok(st) if st.cuid == me && st.mode == 0o600 && st.ctime == ctime => {
                    let _ = oslayer::sysv_msg::remove(id);
                }
                _ => {}
            }
        }
    }
    let _ = fs::remove_file(&path);
}

/// Flags the ticker and the server share.
#[derive(Default)]
struct Shared {
    /// The ticker asks the server to accept and check its clients.
    attention: AtomicBool,
    /// A wake-up message is in the request queue.
    wake_sent: AtomicBool,
    /// The channel is being dropped.
    shutdown: AtomicBool,
}

fn pollfd(fd: BorrowedFd<'_>) -> oslayer::poll::PollFd {
    oslayer::poll::PollFd::readable(fd)
}

/// The server's helper thread (see the module documentation).
struct Ticker {
    /// A duplicate of the server's session set (an epoll descriptor, which
    /// polls readable while a client waits on the listener or a session
    /// hung up).
    sessions: OwnedFd,
    /// Written by the server after it handled a wake-up, and on drop.
    kick: Arc<OwnedFd>,
    shared: Arc<Shared>,
    req_q: MsgQueueId,
    tick: Duration,
}

impl Ticker {
    fn run(self) {
        let mut wake = MsgBuf::new(0);
        wake.set_mtype(MTYPE_WAKE);
        loop {
            // While a request for attention is pending, the session set
            // stays readable: watch only for the server's answer, or a tick.
            let watch_sessions = !self.shared.attention.load(Ordering::Acquire);
            let mut p = [pollfd(self.kick.as_fd()), pollfd(self.sessions.as_fd())];
            let n = if watch_sessions { 2 } else { 1 };
            let ready = match oslayer::poll::poll(&mut p[..n], Some(self.tick)) {
                Ok(r) => r,
                Err(_) => {
                    std::thread::sleep(self.tick);
                    0
                }
            };
            if p[0].revents != 0 {
                let _ = oslayer::eventfd::read(self.kick.as_fd());
            }
            if self.shared.shutdown.load(Ordering::Acquire) {
                return;
            }
            let news = watch_sessions && p[1].revents != 0;
            if news || ready == 0 {
                self.shared.attention.store(true, Ordering::Release);
                if !self.shared.wake_sent.swap(true, Ordering::AcqRel)
                    && oslayer::sysv_msg::send(self.req_q, &wake, 0, MsgFlags::NOWAIT).is_err()
                {
                    // Full: the server has requests to read and sees the
                    // attention flag on its next receive anyway.
                    self.shared.wake_sent.store(false, Ordering::Release);
                }
            }
        }
    }
}

/// What a connection's held request shares with the server.
#[derive(Default)]
struct Flags {
    /// Set once the connection is over (dropped by the server, or its
    /// queue found broken by a held request's reply): a held request's
    /// reply then goes nowhere, and the server drops the connection at
    /// its next request.
    over: AtomicBool,
    /// A request of the connection is held (deferred, or in a pool): the
    /// server answers its next call `EAGAIN` at once until it is answered.
    held: AtomicBool,
}

/// What the server keeps of a client besides its session. Dropping it
/// removes the client's reply queue.
struct Link {
    /// The message type of this connection's requests.
    mtype: MsgType,
    reply_q: MsgQueueId,
    stamp: MsgQueueStamp,
    flags: Arc<Flags>,
    /// Its client's process, user and group, from `SO_PEERCRED` of its
    /// session.
    creds: Option<Creds>,
}

impl Link {
    fn new(mtype: MsgType, (reply_q, stamp): (MsgQueueId, MsgQueueStamp)) -> Link {
        Link {
            mtype,
            reply_q,
            stamp,
            flags: Arc::default(),
            creds: None,
        }
    }
}

impl Drop for Link {
    fn drop(&mut self) {
        self.flags.over.store(true, Ordering::Release);
        let _ = oslayer::sysv_msg::remove(self.reply_q);
    }
}

struct SysvServer {
    req_q: MsgQueueId,
    req_stamp: MsgQueueStamp,
    record: Record,
    conns: Sessions<Link>,
    /// Each live connection's message type, and its token.
    by_type: HashMap<MsgType, Token>,
    /// Connections were dropped since the record was last written.
    dirty: bool,
    /// The request last received (and the reply being sent).
    buf: MsgBuf,
    len: usize,
    /// The request last received is a one-way message (a pulse).
    oneway: bool,
    /// Room for a reply without payload (an `EAGAIN`).
    small: MsgBuf,
    guard: Guard<Token>,
    max_msg: usize,
    shared: Arc<Shared>,
    kick: Option<Arc<OwnedFd>>,
    ticker: Option<JoinHandle<()>>,
    /// How long the listener rests when accepting starves; how soon a
    /// pool's dispatcher stops.
    tick: Duration,
}

impl SysvServer {
    /// Rewrites the queue record; a failure only weakens crash cleanup.
    fn save_record(&self) {
        let mut q = vec![(self.req_q, self.req_stamp)];
        q.extend(self.conns.iter().map(|c| (c.link.reply_q, c.link.stamp)));
        let _ = self.record.write(&q);
    }

    /// Drops connection `t` (its queue goes with it; the record follows
    /// at the next housekeeping).
    fn drop_conn(&mut self, t: Token) {
        if let Some(c) = self.conns.remove(t) {
            self.by_type.remove(&c.link.mtype);
            self.dirty = true;
        }
    }

    /// The live connection whose requests come under message type `t`; a
    /// type no live connection has is forgotten, one whose connection is
    /// over drops it.
    fn route(&mut self, t: MsgType) -> Option<Token> {
        let tok = *self.by_type.get(&t)?;
        match self.conns.get(tok) {
            Some(c) if !c.link.flags.over.load(Ordering::Acquire) => Some(tok),
            Some(_) => {
                self.drop_conn(tok);
                None
            }
            None => {
                self.by_type.remove(&t);
                None
            }
        }
    }

    /// Checks the message just received (`n` bytes of text in our buffer)
    /// from connection `i`, and returns its header when it is to be
    /// served. A malformed one (a header that disagrees with the size, a
    /// message cut by `MSG_NOERROR` for being over the maximum, a pulse
    /// whose payload is not one) drops the connection. A call from a
    /// connection whose request is held is answered `EAGAIN` at once (its
    /// client breaks the protocol: a client waits for its answer before it
    /// calls again, and a reply owed to a call that timed out first), so
    /// nothing of it is kept; one-way messages and pulses hold nothing and
    /// are served in their order.
    fn admit(&mut self, i: Token, n: usize) -> Option<Incoming> {
        if n < HEAD {
            self.drop_conn(i);
            return None;
        }
        let h: [u8; HEAD] = self.buf.text()[..HEAD].try_into().expect("header");
        let (cmd, len) = parse_head(&h);
        if len != n - HEAD || (is_pulse(cmd) && Pulse::decode(&self.buf.text()[HEAD..n]).is_none())
        {
            self.drop_conn(i);
            return None;
        }
        let head = Incoming::from_wire(cmd, len);
        let held = self
            .conns
            .get(i)
            .is_some_and(|c| c.link.flags.held.load(Ordering::Acquire));
        if held && !head.oneway {
            self.refuse_call(i);
            return None;
        }
        Some(head)
    }

    /// Answers `EAGAIN` to a call of connection `i` that is not taken; a
    /// reply queue that takes no more (its client does not read its
    /// replies) drops the connection.
    fn refuse_call(&mut self, i: Token) {
        let Some(reply_q) = self.conns.get(i).map(|c| c.link.reply_q) else {
            return;
        };
        if send_reply(&mut self.small, reply_q, libc::EAGAIN as u32, &[]).is_err() {
            self.drop_conn(i);
        }
    }

    /// Accepts the waiting clients and drops those whose session hung up,
    /// as the session set reports them (nothing looks at the others).
    fn housekeeping(&mut self) {
        if self.conns.wait(Duration::ZERO).is_ok() {
            while let Some(ev) = self.conns.next_event() {
                match ev {
                    Event::Listener => self.accept(),
                    Event::HungUp(t) => self.drop_conn(t),
                    Event::Own(_) => {}
                }
            }
        }
        if std::mem::take(&mut self.dirty) {
            self.save_record();
        }
    }

    /// Accepts the clients waiting (a backlog's worth at most): a client
    /// whose queue or session cannot be made is hung up on.
    fn accept(&mut self) {
        let (by_type, record, req_q) = (&mut self.by_type, &self.record, self.req_q);
        self.conns
            .accept(|l, t| greet(l, t, req_q, by_type, record));
    }
}

/// A fresh secret message type for a connection: 62 random bits, never
/// the ticker's, none of a live connection's (see the module
/// documentation).
fn new_mtype(by_type: &HashMap<MsgType, Token>) -> io::Result<MsgType> {
    loop {
        let mut r = [0u8; 8];
        oslayer::random::fill(&mut r)?;
        let t = (u64::from_ne_bytes(r) >> 2) as MsgType;
        if t > MTYPE_WAKE && !by_type.contains_key(&t) {
            return Ok(t);
        }
    }
}

/// Greets one client, who will have token `token`: makes its reply queue
/// (recorded before anything else can fail) and passes the queues and its
/// secret message type along. Out of descriptors, the client stays queued
/// and the error goes up ([`refuse`], [`greeted`]).
fn greet(
    listener: &Listener,
    token: Token,
    req_q: MsgQueueId,
    by_type: &mut HashMap<MsgType, Token>,
    record: &Record,
) -> Result<Option<Session<Link>>> {
    let (mtype, queue) = match new_mtype(by_type).and_then(|t| Ok((t, new_queue()?))) {
        Ok(made) => made,
        Err(e) => {
            return refuse(
                listener,
                Error::io("sysv-msg: make a connection's queue", e),
            )
        }
    };
    // From here on, dropping the link removes the queue.
    let link = Link::new(mtype, queue);
    let _ = record.append(queue);
    let mut extra = [0u8; EXTRA_LEN];
    extra[0..4].copy_from_slice(&req_q.0.to_le_bytes());
    extra[4..8].copy_from_slice(&link.reply_q.0.to_le_bytes());
    extra[8..16].copy_from_slice(&mtype.to_le_bytes());
    let made = greeted(listener.accept_with(&[], &extra), |sock| {
        let creds = creds_of(sock.as_fd());
        let mut link = link;
        link.creds = creds;
        Session { sock, link }
    })?;
    if made.is_some() {
        by_type.insert(mtype, token);
    }
    Ok(made)
}

impl Answer for SysvServer {
    fn data(&self) -> &[u8] {
        &self.buf.text()[HEAD..HEAD + self.len]
    }

    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        let i = self.guard.take()?;
        let (code, data, verdict) = reply_parts(status, data, self.max_msg);
        let Some(reply_q) = self.conns.get(i).map(|c| c.link.reply_q) else {
            return verdict;
        };
        if send_reply(&mut self.buf, reply_q, code, data).is_err() {
            self.drop_conn(i);
        }
        verdict
    }

    /// A call is held by its handle, whose reply goes straight to the
    /// connection's reply queue; the connection's next call is answered
    /// `EAGAIN` until then (see [`SysvServer::admit`]). A one-way message
    /// (a pulse) holds nothing: nobody waits for its answer.
    fn client(&self) -> Option<Client> {
        let t = *self.guard.get()?;
        Some(Client {
            id: t.with_mark(false),
            creds: self.conns.get(t)?.link.creds,
        })
    }
}

impl ServerChannel for SysvServer {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.guard.clear();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if self.shared.attention.swap(false, Ordering::AcqRel) {
                self.housekeeping();
                if let Some(k) = &self.kick {
                    let _ = oslayer::eventfd::write(k.as_fd(), 1);
                }
            }
            let n =
                match oslayer::sysv_msg::receive(self.req_q, &mut self.buf, 0, MsgFlags::NOERROR) {
                    Ok(n) => n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::io("sysv-msg: receive a request", e)),
                };
            let t = self.buf.mtype();
            if t == MTYPE_WAKE {
                self.shared.wake_sent.store(false, Ordering::Release);
                continue;
            }
            // A request under no live connection's type (from a connection
            // already dropped, or a guess) is discarded.
            let Some(i) = self.route(t) else {
                continue;
            };
            if let Some(head) = self.admit(i, n) {
                self.guard.set(i);
                self.len = head.len;
                self.oneway = head.oneway;
                return Ok(Some(head));
            }
        }
    }

    fn connections(&self) -> usize {
        self.conns.len()
    }

    fn detach(&mut self) -> Option<Box<dyn Answer>> {
        let client = self.client();
        let i = self.guard.take().ok()?;
        let data = self.data().to_vec();
        if self.oneway {
            return Some(Held::boxed(data, Unanswered, self.max_msg, client));
        }
        let link = &self.conns.get(i)?.link;
        link.flags.held.store(true, Ordering::Release);
        let to = ReplyQueue {
            reply_q: link.reply_q,
            flags: Arc::clone(&link.flags),
            sent: false,
        };
        Some(Held::boxed(data, to, self.max_msg, client))
    }

    fn into_pool(self: Box<Self>, threads: usize) -> Result<Vec<Box<dyn PoolWorker>>> {
        let tick = self.tick;
        relay_pool(*self, threads, tick)
    }
}

/// Sends a reply (`code`, then `data`) through `buf` on `reply_q`, without
/// waiting. The queue is empty (the client sent its request after taking
/// its last reply): a failure means the client is gone, or breaks the
/// protocol.
fn send_reply(buf: &mut MsgBuf, reply_q: MsgQueueId, code: u32, data: &[u8]) -> io::Result<()> {
    buf.set_mtype(MTYPE_REPLY);
    let text = buf.text_mut();
    text[..HEAD].copy_from_slice(&head(code, data.len()));
    text[HEAD..HEAD + data.len()].copy_from_slice(data);
    oslayer::sysv_msg::send(reply_q, buf, HEAD + data.len(), MsgFlags::NOWAIT)
}

impl Detach for SysvServer {
    fn census(&self) -> Arc<AtomicUsize> {
        self.conns.census()
    }
}

/// Where a detached request's answer goes: its connection's reply queue.
struct ReplyQueue {
    reply_q: MsgQueueId,
    /// The connection's flags: over (the reply goes nowhere), and held
    /// (this request), cleared once answered.
    flags: Arc<Flags>,
    /// The answer went (or was found to have nowhere to go).
    sent: bool,
}

impl ReplyTo for ReplyQueue {
    /// A reply its queue refuses marks the connection over, for the server
    /// to drop at its next request. The connection is no longer held from
    /// just before the reply goes: its client sends its next call once it
    /// has read it, and that call must find the connection free.
    fn send(&mut self, code: u32, data: &[u8]) -> bool {
        self.sent = true;
        self.flags.held.store(false, Ordering::Release);
        if self.flags.over.load(Ordering::Acquire) {
            return false;
        }
        let mut buf = MsgBuf::new(HEAD + data.len());
        let sent = send_reply(&mut buf, self.reply_q, code, data).is_ok();
        if !sent {
            self.flags.over.store(true, Ordering::Release);
        }
        sent
    }
}

impl Drop for ReplyQueue {
    /// Never answered (its handle answers on drop, so only if that failed
    /// to run): the connection is not held any more. After an answer the
    /// flag may be the connection's next request's already.
    fn drop(&mut self) {
        if !self.sent {
            self.flags.held.store(false, Ordering::Release);
        }
    }
}

impl Drop for SysvServer {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        if let Some(k) = &self.kick {
            let _ = oslayer::eventfd::write(k.as_fd(), 1);
        }
        if let Some(t) = self.ticker.take() {
            let _ = t.join();
        }
        let _ = oslayer::sysv_msg::remove(self.req_q);
        // A reply its client has not taken yet (frozen, or not back in
        // `msgrcv`) moves to the client's session before its queue goes
        // (see the module documentation).
        for c in self.conns.iter() {
            salvage(&mut self.buf, c.link.reply_q, c.sock.as_fd());
        }
        // The reply queues go with their links, the record file with
        // `self.record`.
    }
}

/// Moves the reply waiting in `reply_q`, if any, to the client's session
/// `sock` (one message, without waiting: the session carries nothing
/// else, so it has room), through `buf`. A client that is gone, or took
/// its reply meanwhile, gets nothing.
fn salvage(buf: &mut MsgBuf, reply_q: MsgQueueId, sock: BorrowedFd<'_>) {
    let flags = MsgFlags::NOWAIT | MsgFlags::NOERROR;
    if let Ok(n) = oslayer::sysv_msg::receive(reply_q, buf, MTYPE_REPLY, flags) {
        let _ = oslayer::socket::send_now(sock, &buf.text()[..n]);
    }
}

/// A client's helper thread (see the module documentation).
struct Watchdog {
    /// The rendezvous session, shared with the client (which may have to
    /// read a reply its server moved there).
    sock: Arc<OwnedFd>,
    /// Hangs up when the client is dropped.
    stop: OwnedFd,
    dead: Arc<AtomicBool>,
    reply_q: MsgQueueId,
}

impl Watchdog {
    fn run(self) {
        loop {
            let mut p = [pollfd(self.sock.as_fd()), pollfd(self.stop.as_fd())];
            if oslayer::poll::poll(&mut p, None).is_err() {
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
            if p[1].revents != 0 {
                return;
            }
            if p[0].revents != 0 {
                // Mark first: a call that sees the queue gone finds the flag.
                self.dead.store(true, Ordering::Release);
                // A server sends its last reply before it hangs up: if that
                // reply is waiting, leave it for the client to read (its
                // next call sees the flag); otherwise remove the queue,
                // which ends a blocked receive at once.
                if !oslayer::sysv_msg::count(self.reply_q).is_ok_and(|n| n > 0) {
                    let _ = oslayer::sysv_msg::remove(self.reply_q);
                }
                return;
            }
        }
    }
}

struct SysvClient {
    req_q: MsgQueueId,
    reply_q: MsgQueueId,
    mtype: MsgType,
    buf: MsgBuf,
    max_msg: usize,
    dead: Arc<AtomicBool>,
    /// The rendezvous session: where a stopping server moves a reply we
    /// had not taken (see the module documentation).
    session: Arc<OwnedFd>,
    /// Dropping it stops the watchdog.
    stop: Option<OwnedFd>,
    watchdog: Option<JoinHandle<()>>,
    /// Every call's deadline, from its start.
    timeout: Option<Duration>,
    /// Puts an [`MTYPE_DEADLINE`] message in our reply queue when a call's
    /// deadline passes (made with the first timeout).
    alarm: Option<Alarm>,
    /// The call under way took the alarm's message.
    woken: bool,
    /// A call timed out: the next reply to arrive is its, to discard.
    owed: Owed,
}

/// True for the errors a removed queue gives.
fn queue_gone(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EIDRM | libc::EINVAL))
}

impl SysvClient {
    /// Sends one request with wire code `code`, checking its size first. A
    /// full request queue is retried (with a growing pause) until there is
    /// room, the server is known to be gone, or `deadline` passes (the
    /// call's [`Error::TimedOut`]: nothing was sent).
    fn send_request(&mut self, code: u32, req: &[u8], deadline: Option<Instant>) -> Result<()> {
        if self.dead.load(Ordering::Acquire) {
            return Err(Error::Disconnected);
        }
        if req.len() > self.max_msg {
            return Err(Error::TooLarge {
                len: req.len(),
                max: self.max_msg,
            });
        }
        self.buf.set_mtype(self.mtype);
        let text = self.buf.text_mut();
        text[..HEAD].copy_from_slice(&head(code, req.len()));
        text[HEAD..HEAD + req.len()].copy_from_slice(req);
        let mut backoff = Duration::from_micros(50);
        loop {
            match oslayer::sysv_msg::send(self.req_q, &self.buf, HEAD + req.len(), MsgFlags::NOWAIT)
            {
                Ok(()) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    if self.dead.load(Ordering::Acquire) {
                        return Err(Error::Disconnected);
                    }
                    let nap = match deadline {
                        None => backoff,
                        Some(d) => left(d).ok_or_else(|| self.timed_out())?.min(backoff),
                    };
                    std::thread::sleep(nap);
                    backoff = (backoff * 2).min(Duration::from_millis(1));
                }
                Err(e) if queue_gone(&e) => return Err(Error::Disconnected),
                Err(e) => return Err(Error::io("sysv-msg: send request", e)),
            }
        }
    }
}

impl SysvClient {
    /// The error of a call past its deadline.
    fn timed_out(&self) -> Error {
        Error::TimedOut {
            timeout: self.timeout.unwrap_or_default(),
        }
    }

    /// Receives the next message of our reply queue: a reply (its text
    /// length), or the alarm's message once `deadline` has passed (the
    /// call's [`Error::TimedOut`]).
    fn receive_reply(&mut self, deadline: Option<Instant>) -> Result<usize> {
        loop {
            match oslayer::sysv_msg::receive(self.reply_q, &mut self.buf, 0, MsgFlags::NOERROR) {
                Ok(_) if self.buf.mtype() == MTYPE_DEADLINE => {
                    self.woken = true;
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Err(self.timed_out());
                    }
                }
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    if self.dead.load(Ordering::Acquire) {
                        return self.salvaged();
                    }
                }
                Err(e) if queue_gone(&e) => return self.salvaged(),
                Err(e) => return Err(Error::io("sysv-msg: receive reply", e)),
            }
        }
    }

    /// Once our reply queue is gone: the reply a stopping server moved to
    /// our session because we had not taken it, copied to our buffer (its
    /// text length); [`Error::Disconnected`] when there is none. The
    /// server moves it before it removes the queue, so it is there by now
    /// if it ever comes.
    fn salvaged(&mut self) -> Result<usize> {
        let text = self.buf.text_mut();
        let flags = RecvFlags::DONTWAIT;
        match oslayer::socket::recv_bytes(self.session.as_fd(), text, flags) {
            Ok(n) if n > 0 && n <= text.len() => {
                self.buf.set_mtype(MTYPE_REPLY);
                Ok(n)
            }
            _ => Err(Error::Disconnected),
        }
    }

    /// One call, with its deadline (if any) armed: first the reply owed to
    /// a call that timed out, waited for and discarded; then the request,
    /// and its reply (past the deadline, owed from then on).
    fn round_trip(
        &mut self,
        cmd: u32,
        req: &[u8],
        reply: &mut [u8],
        deadline: Option<Instant>,
    ) -> Result<usize> {
        let mut owed = std::mem::take(&mut self.owed);
        let settled = owed.settle(|()| self.receive_reply(deadline).map(drop));
        self.owed = owed;
        settled?;
        self.send_request(cmd, req, deadline)?;
        let r = self.receive_reply(deadline);
        let n = self.owed.after_wait(r, ())?;
        self.unpack(n, reply)
    }

    /// Arms the alarm for a call with `deadline`.
    fn arm(&mut self, deadline: Instant) -> Result<()> {
        let reply_q = self.reply_q;
        let alarm = self.alarm.get_or_insert_with(|| {
            Alarm::new(move || {
                let mut wake = MsgBuf::new(0);
                wake.set_mtype(MTYPE_DEADLINE);
                // A queue gone or full: the call ends by itself then.
                let _ = oslayer::sysv_msg::send(reply_q, &wake, 0, MsgFlags::NOWAIT);
            })
        });
        self.woken = false;
        alarm
            .arm(deadline)
            .map_err(|e| Error::io("sysv-msg: start the alarm thread", e))
    }

    /// Disarms the alarm after a call; its message, if it went and the
    /// call did not take it, is taken now, so that none is left behind.
    fn disarm(&mut self) {
        let fired = self.alarm.as_ref().is_some_and(Alarm::disarm);
        if fired && !self.woken {
            let _ = oslayer::sysv_msg::receive(
                self.reply_q,
                &mut self.buf,
                MTYPE_DEADLINE,
                MsgFlags::NOWAIT | MsgFlags::NOERROR,
            );
        }
    }

    /// Copies the reply of `n` bytes of text in our buffer to `reply`,
    /// checked.
    fn unpack(&self, n: usize, reply: &mut [u8]) -> Result<usize> {
        if n < HEAD {
            return Err(Error::Protocol(format!("reply of {n} bytes, no header")));
        }
        let h: [u8; HEAD] = self.buf.text()[..HEAD].try_into().expect("header");
        let (status, len) = parse_head(&h);
        if len != n - HEAD {
            return Err(Error::Protocol(format!(
                "reply header says {len} bytes, got {}",
                n - HEAD
            )));
        }
        Status::check_reply(status, len, reply.len())?;
        reply[..len].copy_from_slice(&self.buf.text()[HEAD..n]);
        Ok(len)
    }
}

/// The time left before `deadline`, `None` once it has passed.
fn left(deadline: Instant) -> Option<Duration> {
    deadline
        .checked_duration_since(Instant::now())
        .filter(|d| !d.is_zero())
}

impl ClientConnection for SysvClient {
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        let Some(timeout) = self.timeout else {
            return self.round_trip(cmd, req, reply, None);
        };
        let deadline = Instant::now() + timeout;
        self.arm(deadline)?;
        let got = self.round_trip(cmd, req, reply, Some(deadline));
        self.disarm();
        got
    }

    fn max_msg(&self) -> usize {
        self.max_msg
    }

    /// A full request queue is retried until there is room (never
    /// dropped); a dead server is noticed by the watchdog.
    fn send_oneway(&mut self, cmd: u32, req: &[u8]) -> Result<()> {
        self.send_request(cmd | ONEWAY, req, None)
    }

    fn oneway(&self) -> bool {
        true
    }

    fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<()> {
        self.timeout = timeout;
        Ok(())
    }

    /// Into the request queue if it has room now (`IPC_NOWAIT`): the
    /// queue's `msgmnb` bytes, shared by every client, bound what waits.
    fn send_pulse(&mut self, payload: &[u8; PULSE_LEN]) -> Result<()> {
        if self.dead.load(Ordering::Acquire) {
            return Err(Error::Disconnected);
        }
        let mut msg = MsgBuf::new(HEAD + PULSE_LEN);
        msg.set_mtype(self.mtype);
        msg.text_mut()[..HEAD].copy_from_slice(&head(PULSE | ONEWAY, PULSE_LEN));
        msg.text_mut()[HEAD..].copy_from_slice(payload);
        match oslayer::sysv_msg::send(self.req_q, &msg, HEAD + PULSE_LEN, MsgFlags::NOWAIT) {
            Ok(()) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => Err(Error::PulseQueueFull),
            Err(e) if queue_gone(&e) => Err(Error::Disconnected),
            Err(e) => Err(Error::io("sysv-msg: send pulse", e)),
        }
    }
}

impl Drop for SysvClient {
    fn drop(&mut self) {
        self.stop.take();
        if let Some(w) = self.watchdog.take() {
            let _ = w.join();
        }
        let _ = oslayer::sysv_msg::remove(self.reply_q);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that sends a request under another connection's message
    /// type (the one it would have had with types handed out in order)
    /// must not get an answer into that connection's reply queue.
    #[test]
    fn a_forged_message_type_does_not_reach_another_connection() {
        let tmp = tempfile::Builder::new()
            .prefix("msgpass-sysv-")
            .tempdir()
            .expect("dir");
        let dir = tmp.path().to_path_buf();
        let path = dir.join("ep");
        let opts = Options::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let server = {
            let (path, opts, stop) = (path.clone(), opts.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut s = SysvMsg.serve(&path, &opts).expect("serve");
                ready_tx.send(()).expect("ready");
                // An echo server.
                while let Ok(Some(_)) = s.receive(&stop) {
                    let data = s.data().to_vec();
                    let _ = s.reply(Status::Ok, &data);
                }
            })
        };
        ready.recv().expect("server up");
        let mut victim = SysvMsg.connect(&path, &opts).expect("victim connects");
        let mut reply = [0u8; 64];
        assert_eq!(victim.call(1, b"first", &mut reply).expect("call"), 5);
        // The hostile client speaks the protocol by hand.
        let (_sock, hello, _) =
            rendezvous::connect(&path, Family::SysvMsg, &opts).expect("hostile connects");
        let extra = hello.extra;
        let id = |i: usize| MsgQueueId(i32::from_le_bytes(extra[i..i + 4].try_into().unwrap()));
        let (req_q, own_q) = (id(0), id(4));
        let own = MsgType::from_le_bytes(extra[8..16].try_into().unwrap());
        let mut buf = MsgBuf::new(HEAD + 64);
        let mut send = |mtype: MsgType, data: &[u8]| {
            buf.set_mtype(mtype);
            buf.text_mut()[..HEAD].copy_from_slice(&head(1, data.len()));
            buf.text_mut()[HEAD..HEAD + data.len()].copy_from_slice(data);
            oslayer::sysv_msg::send(req_q, &buf, HEAD + data.len(), MsgFlags::EMPTY).expect("send");
        };
        send(own - 1, b"EVIL");
        // Our own request, served after the forged one: once its answer is
        // in, the forged one has been handled.
        send(own, b"mine");
        let mut got = MsgBuf::new(HEAD + 64);
        let n = oslayer::sysv_msg::receive(own_q, &mut got, 0, MsgFlags::EMPTY).expect("reply");
        assert_eq!(&got.text()[HEAD..n], b"mine");
        let n = victim.call(1, b"good", &mut reply).expect("victim's call");
        let answer = reply[..n].to_vec();
        stop.store(true, Ordering::Relaxed);
        drop(victim);
        server.join().expect("server thread");
        assert_eq!(
            String::from_utf8_lossy(&answer),
            "good",
            "the victim read the answer to a forged request"
        );
    }

    /// A reply its client has not taken (the client is frozen, say) when
    /// the server stops does not keep its queue past the server: it moves
    /// to the client's session, the queue goes, and no record is left.
    #[test]
    fn an_untaken_reply_moves_to_the_session() {
        let tmp = tempfile::Builder::new()
            .prefix("msgpass-sysv-u-")
            .tempdir()
            .expect("dir");
        let dir = tmp.path().to_path_buf();
        let path = dir.join("ep");
        let opts = Options {
            tick: Duration::from_millis(20),
            ..Options::default()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (served_tx, served) = std::sync::mpsc::channel();
        let server = {
            let (path, opts, stop) = (path.clone(), opts.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut s = SysvMsg.serve(&path, &opts).expect("serve");
                ready_tx.send(()).expect("ready");
                while let Ok(Some(_)) = s.receive(&stop) {
                    let _ = s.reply(Status::Ok, b"yours");
                    let _ = served_tx.send(());
                }
            })
        };
        ready.recv().expect("server up");
        let (sock, hello, _) = rendezvous::connect(&path, Family::SysvMsg, &opts).expect("connect");
        let extra = hello.extra;
        let id = |i: usize| MsgQueueId(i32::from_le_bytes(extra[i..i + 4].try_into().unwrap()));
        let (req_q, own_q) = (id(0), id(4));
        let own = MsgType::from_le_bytes(extra[8..16].try_into().unwrap());
        let mut buf = MsgBuf::new(HEAD + 8);
        buf.set_mtype(own);
        buf.text_mut()[..HEAD].copy_from_slice(&head(1, 0));
        oslayer::sysv_msg::send(req_q, &buf, HEAD, MsgFlags::EMPTY).expect("request");
        served.recv().expect("served");
        let waiting = oslayer::sysv_msg::count(own_q).ok();
        stop.store(true, Ordering::Relaxed);
        server.join().expect("server thread");
        let queue_left = oslayer::sysv_msg::count(own_q).is_ok();
        let record_left = record_path(&path).exists();
        let mut got = [0u8; 64];
        let moved = oslayer::socket::recv_bytes(sock.as_fd(), &mut got, RecvFlags::DONTWAIT);
        let _ = oslayer::sysv_msg::remove(own_q);
        assert_eq!(waiting, Some(1), "the reply was not waiting in its queue");
        assert!(!queue_left, "the reply queue outlived the server");
        assert!(!record_left, "a record was left beside the endpoint");
        let n = moved.expect("the reply in the session");
        assert_eq!(n, HEAD + 5, "{:?}", &got[..n.min(got.len())]);
        assert_eq!(&got[HEAD..n], b"yours");
    }

    /// A call's deadline ends its wait at about its time, not at a tick
    /// (ten seconds here): the alarm thread wakes the `msgrcv`. The late
    /// reply is discarded by the next call, which gets its own; and no
    /// alarm message is left in the reply queue.
    #[test]
    fn a_deadline_ends_the_wait_before_any_tick() {
        let tmp = tempfile::Builder::new()
            .prefix("msgpass-sysv-d-")
            .tempdir()
            .expect("dir");
        let dir = tmp.path().to_path_buf();
        let path = dir.join("ep");
        let opts = Options {
            tick: Duration::from_secs(10),
            ..Options::default()
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (ready_tx, ready) = std::sync::mpsc::channel();
        let (late_tx, late) = std::sync::mpsc::channel::<()>();
        let server = {
            let (path, opts, stop) = (path.clone(), opts.clone(), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut s = SysvMsg.serve(&path, &opts).expect("serve");
                ready_tx.send(()).expect("ready");
                s.receive(&stop).expect("receive").expect("the slow call");
                let mut held = s.detach().expect("held");
                late.recv().expect("told to answer");
                held.reply(Status::Ok, b"late").expect("late reply");
                // An echo server.
                while let Ok(Some(_)) = s.receive(&stop) {
                    let data = s.data().to_vec();
                    let _ = s.reply(Status::Ok, &data);
                }
            })
        };
        ready.recv().expect("server up");
        let mut c = connect(&path, &opts).expect("connect");
        let timeout = Duration::from_millis(50);
        c.set_timeout(Some(timeout)).expect("timeout");
        let mut reply = [0u8; 64];
        let start = Instant::now();
        let slow = c.call(1, b"slow", &mut reply);
        let took = start.elapsed();
        late_tx.send(()).expect("answer late");
        let next = c.call(1, b"next", &mut reply).map(|n| reply[..n].to_vec());
        let on_time = (0..100).all(|_| c.call(1, b"x", &mut reply).is_ok());
        let left_in_queue = oslayer::sysv_msg::count(c.reply_q).ok();
        stop.store(true, Ordering::Relaxed);
        drop(c);
        server.join().expect("server thread");
        assert!(
            matches!(slow, Err(Error::TimedOut { timeout: t }) if t == timeout),
            "{slow:?}"
        );
        assert!(took >= timeout, "ended early: {took:?}");
        assert!(took < Duration::from_secs(5), "ended at a tick: {took:?}");
        assert_eq!(next.expect("the next call"), b"next", "got the late reply");
        assert!(on_time, "calls answered in time failed");
        assert_eq!(
            left_in_queue,
            Some(0),
            "a message was left in the reply queue"
        );
    }
}
