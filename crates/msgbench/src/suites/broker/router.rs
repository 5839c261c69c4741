//! The msgbench broker: one thread, many calls in flight. Clients call it;
//! services attach to it, as a D-Bus service connects to its bus. Nothing
//! in it ever waits for a service.
//!
//! **Deferred replies both ways.** A client's request is deferred
//! (`Request::defer`) the moment it is read: it waits in its service's
//! queue, bounded, until that service is free. A service calls the broker
//! too, with the result of its last work, and that call is deferred in
//! turn: it is the service's "ready". Handing a service work is replying
//! to its held call (the client's request, behind a token); the service's
//! next call brings the result, which answers the client's held request,
//! and is held as its next "ready". So every leg is one send and one
//! receive, a service's result and its next work travel in one call, and
//! the broker thread moves from whatever is ready to whatever is ready.
//!
//! **Deadlines.** With a call timeout, a client's request not answered in
//! time is answered `ETIMEDOUT`, wherever it is (queued, or at a service
//! that stopped answering); the service's late result, if it ever comes, is
//! counted and dropped. A timer thread sends the broker a pulse a few times
//! per timeout (QNX style: timers deliver pulses to a channel), and each
//! pulse makes it look at the deadlines. A service whose process died is
//! seen at the next pulse (it attached with its pid, which the broker
//! watches through a pidfd; a service that gave another pid only delays
//! its own callers' errors to their timeout), and its callers get
//! `EHOSTUNREACH`; one whose held call fails when work is handed to it
//! likewise.
//!
//! Tokens are unguessable (a keyed hash of a count), so a connection that
//! sends a result for work it was not handed is refused. Attaching is not
//! checked: any connection may attach as a service index nobody holds, as
//! a name on a D-Bus bus without a policy goes to whoever asks first.
//!
//! **What one connection can hold** (every connection is named by the
//! kernel, `Request::client`, never by what it sends). A one-way message
//! is refused, never held: nobody waits for its answer, and holding it
//! would let one connection keep thousands of calls in flight. So a
//! connection holds at most its one call (msgpass takes no other request
//! of a connection whose request is held). It serves one service index
//! at most, and only it may bring that service's results. A service's
//! queue holds [`QUEUE`] calls, past which its callers hear `EBUSY`, and
//! the broker may hold every service's queue, work and ready call at once
//! ([`Options::max_held`] is raised to that), so services that never
//! answer fill their own queues, never the others' share. Only the
//! broker's own timer makes it look at deadlines: the timer proves it is
//! that with a secret the broker made (`TIMER`), and `TICK` pulses from any
//! other connection are counted and ignored.
//!
//! It reads only the fixed header ([`RequestHeader`]): the destination, to
//! pick the service. With `validate` it also decodes every request and
//! reply body in the D-Bus wire format with the D-Bus library, as a daemon
//! that validates would.
//!
//! It times itself: from a message in hand to the send it makes of it,
//! for the client's request and for the service's result. That sum per
//! call is the broker's own routing time ([`RouterStats`]).

use std::collections::{HashMap, VecDeque};
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use msgpass::{Channel, Connection, Namespace, Options, OwnedRequest, Pulse, Request, Transport};
use serde::{Deserialize, Serialize};

use super::dbus;
use super::proto::{
    read_reply, read_result, write_work_header, RequestHeader, ATTACH, RESULT, TICK, TIMER,
    WORK_HEADER,
};
use crate::measure::clock::Clock;

/// The broker's endpoint name in a run's namespace.
pub const ENDPOINT: &str = "bus";
/// Requests a service's queue holds; one more is refused `EBUSY`.
pub const QUEUE: usize = 256;
/// How often the timer pulses the broker without a call timeout (to see
/// dead services).
const TICK_EVERY: Duration = Duration::from_millis(20);

/// What the broker measured of itself, printed as one JSON line when it
/// stops.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouterStats {
    /// Calls routed to a service and answered.
    pub routed: u64,
    /// Requests refused or failed (no such service, service gone, bad
    /// header, invalid body, queue full).
    pub refused: u64,
    /// Calls answered `ETIMEDOUT` (the call timeout passed).
    pub timed_out: u64,
    /// Results that came after their call timed out, dropped.
    pub late: u64,
    /// Most calls in flight at once (queued or at a service).
    pub most_in_flight: u64,
    /// Messages ignored: one-way messages (nobody waits for them, so
    /// none is held), and timer pulses from any connection but the
    /// broker's own timer.
    #[serde(default)]
    pub ignored: u64,
    /// The broker's own time over all routed calls, ns: a client's request
    /// in hand to its send onward, plus the service's result in hand to
    /// the reply sent (validation included, the sends not).
    pub routing_ns: f64,
    /// Of that, the time spent validating bodies, ns.
    pub validate_ns: f64,
}

/// A service as the broker knows it.
#[derive(Default)]
struct Service {
    /// Its call, held: it waits for work.
    ready: Option<OwnedRequest>,
    /// The token of the work it has (its call answered with it).
    busy: Option<u64>,
    /// Tokens of the calls waiting for it, in arrival order.
    queue: VecDeque<u64>,
    /// Its process, as it said when it attached.
    pidfd: Option<OwnedFd>,
    /// The connection it attached on (`Request::client`): the only one
    /// whose results it takes.
    conn: Option<u64>,
    /// It attached once and is gone since.
    gone: bool,
}

/// A client's call in flight.
struct Call {
    request: OwnedRequest,
    service: u32,
    deadline: Option<Instant>,
}

/// The routing broker.
pub struct Router {
    ns: Namespace,
    transport: Box<dyn Transport>,
    opts: Options,
    services: Vec<Service>,
    calls: HashMap<u64, Call>,
    /// Which service has which token's work (kept after its call timed
    /// out, until its result comes).
    at: HashMap<u64, u32>,
    /// Calls taken so far: a token is this count hashed with `key`.
    taken: u64,
    /// The secret that makes tokens unguessable: a service learns only
    /// the tokens of the work it was handed, and any other connection
    /// that sends a `RESULT` with a token it guessed is refused (`EPROTO`)
    /// instead of answering another client's call.
    key: std::collections::hash_map::RandomState,
    validate: bool,
    call_timeout: Option<Duration>,
    clock: Clock,
    stats: RouterStats,
    /// The service index each connection serves (one at most).
    attached: HashMap<u64, u32>,
    /// The secret the broker's timer proves itself with.
    timer_secret: u64,
    /// The timer's connection, once it proved itself.
    timer: Option<u64>,
}

impl Router {
    /// A broker for services `0..services`, answering `ETIMEDOUT` past
    /// `call_timeout`.
    pub fn new(
        ns: &Namespace,
        transport: &str,
        services: u32,
        validate: bool,
        call_timeout: Option<Duration>,
        opts: &Options,
    ) -> Result<Router> {
        let mut secret = [0u8; 8];
        oslayer::random::fill(&mut secret).context("make the timer's secret")?;
        Ok(Router {
            ns: ns.clone(),
            transport: msgpass::transport::by_name(transport)?,
            opts: Options {
                wait: None,
                max_held: opts.max_held.max(most_held(services)),
                ..opts.clone()
            },
            attached: HashMap::new(),
            timer_secret: u64::from_le_bytes(secret),
            timer: None,
            services: (0..services).map(|_| Service::default()).collect(),
            calls: HashMap::new(),
            at: HashMap::new(),
            taken: 0,
            key: std::collections::hash_map::RandomState::new(),
            validate,
            call_timeout,
            clock: Clock::best(),
            stats: RouterStats::default(),
        })
    }

    /// Serves the broker endpoint until `stop` is set; returns what it
    /// measured.
    pub fn serve(mut self, stop: Arc<AtomicBool>) -> Result<RouterStats> {
        let mut ch = Channel::create(&self.ns, ENDPOINT, &*self.transport, &self.opts)
            .context("cannot serve the broker endpoint")?;
        ch.set_stop_flag(Arc::clone(&stop));
        let every = match self.call_timeout {
            Some(t) => (t / 4).clamp(Duration::from_millis(1), TICK_EVERY),
            None => TICK_EVERY,
        };
        let timer = Timer::start(
            &self.ns,
            self.transport.name(),
            every,
            self.timer_secret,
            &self.opts,
        )?;
        while let Some(req) = ch.receive()? {
            self.handle(req);
        }
        drop(timer);
        self.close();
        Ok(self.stats)
    }

    /// One message: a timer pulse, a service attaching or bringing a
    /// result, or a client's call.
    fn handle(&mut self, req: Request<'_>) {
        if let Some(p) = req.pulse() {
            match p.code == TICK && self.timer == Some(req.client().id) {
                true => self.expire(Instant::now()),
                false => self.stats.ignored += 1,
            }
            return;
        }
        if req.is_oneway() {
            // Nobody waits for its answer: nothing of it is held.
            self.stats.ignored += 1;
            return;
        }
        match req.cmd() {
            TIMER => self.on_timer(req),
            ATTACH => self.on_attach(req),
            RESULT => self.on_result(req),
            _ => self.on_call(req),
        }
    }

    /// The broker's timer proves itself: `[secret]`. Its connection's
    /// pulses count from now on; nobody else's ever do.
    fn on_timer(&mut self, req: Request<'_>) {
        let proven = <[u8; 8]>::try_from(req.data())
            .is_ok_and(|b| u64::from_le_bytes(b) == self.timer_secret);
        if !proven || self.timer.is_some() {
            return self.refuse(req, libc::EPERM);
        }
        self.timer = Some(req.client().id);
        let _ = req.reply(&[]);
    }

    /// A service attaches: `[index][pid]`; its call is held as its ready.
    /// A connection serves one index at most.
    fn on_attach(&mut self, req: Request<'_>) {
        let Some((index, pid)) = attach_of(req.data()) else {
            return self.refuse(req, libc::EBADMSG);
        };
        let conn = req.client().id;
        if self.attached.contains_key(&conn) {
            return self.refuse(req, libc::EALREADY);
        }
        let Some(s) = self.services.get_mut(index as usize) else {
            return self.refuse(req, libc::ENOENT);
        };
        if s.ready.is_some() || s.busy.is_some() {
            return self.refuse(req, libc::EEXIST);
        }
        let Ok(held) = req.defer() else { return };
        s.ready = Some(held);
        s.pidfd = oslayer::pidfd::open(pid).ok();
        s.gone = false;
        s.conn = Some(conn);
        self.attached.insert(conn, index);
        self.dispatch(index);
    }

    /// A client's call: checked, held, queued for its service.
    fn on_call(&mut self, req: Request<'_>) {
        let t0 = self.clock.now();
        let Some((head, body)) = RequestHeader::read(req.data()) else {
            return self.refuse(req, libc::EBADMSG);
        };
        let mut checked = 0;
        if self.validate {
            let v0 = self.clock.now();
            let ok = dbus::validate_request_body(body).is_ok();
            checked = self.clock.now() - v0;
            if !ok {
                return self.refuse(req, libc::EBADMSG);
            }
        }
        let index = head.destination;
        let errno = match self.services.get(index as usize) {
            None => Some(libc::ENOENT),
            Some(s) if s.gone => Some(libc::EHOSTUNREACH),
            Some(s) if s.queue.len() >= QUEUE => Some(libc::EBUSY),
            Some(_) => None,
        };
        if let Some(errno) = errno {
            return self.refuse(req, errno);
        }
        let Ok(request) = req.defer() else {
            // Past Options::max_held: the client was answered EAGAIN.
            self.stats.refused += 1;
            return;
        };
        let token = self.token();
        let deadline = self.call_timeout.map(|t| Instant::now() + t);
        self.calls.insert(
            token,
            Call {
                request,
                service: index,
                deadline,
            },
        );
        self.stats.most_in_flight = self.stats.most_in_flight.max(self.calls.len() as u64);
        self.services[index as usize].queue.push_back(token);
        self.stats.routing_ns += self.clock.ticks_to_ns(self.clock.now() - t0);
        self.stats.validate_ns += self.clock.ticks_to_ns(checked);
        self.dispatch(index);
    }

    /// Hands service `index` its next queued call if it is ready (its held
    /// call answered with the work). A service whose held call finds it
    /// gone takes its calls with it (`EHOSTUNREACH`).
    fn dispatch(&mut self, index: u32) {
        loop {
            let s = &mut self.services[index as usize];
            if s.busy.is_some() || s.ready.is_none() {
                return;
            }
            let Some(token) = s.queue.pop_front() else {
                return;
            };
            let Some(call) = self.calls.get(&token) else {
                continue; // timed out while queued
            };
            let ready = self.services[index as usize].ready.take();
            let (cmd, data) = (call.request.cmd(), call.request.data());
            let sent = ready.map(|r| {
                r.reply_with(|buf| {
                    let mut head = [0u8; WORK_HEADER];
                    write_work_header(&mut head, token, cmd);
                    buf.write(0, &head);
                    buf.write(WORK_HEADER, data);
                    WORK_HEADER + data.len()
                })
            });
            let s = &mut self.services[index as usize];
            match sent {
                Some(Ok(())) => {
                    s.busy = Some(token);
                    self.at.insert(token, index);
                }
                _ => {
                    s.queue.push_front(token);
                    self.lose(index);
                }
            }
            return;
        }
    }

    /// A service's result: `[token][status]` and the reply. It answers the
    /// call (unless that timed out), and the service's call is held as
    /// its next ready.
    fn on_result(&mut self, req: Request<'_>) {
        let t0 = self.clock.now();
        let Some((token, status, reply)) = read_result(req.data()) else {
            return self.refuse(req, libc::EBADMSG);
        };
        // A service tells its results only for work it was handed, on
        // the connection it attached on.
        let conn = req.client().id;
        let Some(&index) = self.at.get(&token) else {
            return self.refuse(req, libc::EPROTO);
        };
        if self.services[index as usize].conn != Some(conn) {
            return self.refuse(req, libc::EPROTO);
        }
        self.at.remove(&token);
        match self.calls.remove(&token) {
            Some(call) => {
                let mut checked = 0;
                let mut status = status;
                if self.validate && status == 0 {
                    let v0 = self.clock.now();
                    let ok = read_reply(reply)
                        .is_some_and(|(_, b)| dbus::validate_reply_body(b).is_ok());
                    checked = self.clock.now() - v0;
                    if !ok {
                        status = libc::EBADMSG as u32;
                    }
                }
                self.stats.routing_ns += self.clock.ticks_to_ns(self.clock.now() - t0);
                self.stats.validate_ns += self.clock.ticks_to_ns(checked);
                // A client gone meanwhile only loses its reply.
                let _ = match status {
                    0 => call.request.reply(reply),
                    e => call.request.reply_error(e as i32),
                };
                self.stats.routed += 1;
            }
            None => self.stats.late += 1,
        }
        let s = &mut self.services[index as usize];
        s.busy = None;
        if let Ok(held) = req.defer() {
            s.ready = Some(held);
        }
        self.dispatch(index);
    }

    /// The timer's pulse: calls past their deadline are answered
    /// `ETIMEDOUT`; services whose process died lose their calls.
    fn expire(&mut self, now: Instant) {
        let late: Vec<u64> = self
            .calls
            .iter()
            .filter(|(_, c)| c.deadline.is_some_and(|d| d <= now))
            .map(|(&t, _)| t)
            .collect();
        for token in late {
            if let Some(call) = self.calls.remove(&token) {
                self.services[call.service as usize]
                    .queue
                    .retain(|&t| t != token);
                let _ = call.request.reply_error(libc::ETIMEDOUT);
                self.stats.timed_out += 1;
            }
        }
        for index in 0..self.services.len() as u32 {
            let s = &self.services[index as usize];
            let dead = s
                .pidfd
                .as_ref()
                .is_some_and(|p| oslayer::pidfd::exited(p.as_fd()));
            if dead && !s.gone {
                self.lose(index);
            }
        }
    }

    /// Service `index` is gone: its work and its queue are answered
    /// `EHOSTUNREACH`, and its index refuses calls until it attaches again.
    fn lose(&mut self, index: u32) {
        let s = &mut self.services[index as usize];
        s.gone = true;
        s.ready = None;
        s.pidfd = None;
        if let Some(conn) = s.conn.take() {
            self.attached.remove(&conn);
        }
        let s = &mut self.services[index as usize];
        let tokens: Vec<u64> = s.busy.take().into_iter().chain(s.queue.drain(..)).collect();
        for token in tokens {
            self.at.remove(&token);
            if let Some(call) = self.calls.remove(&token) {
                let _ = call.request.reply_error(libc::EHOSTUNREACH);
                self.stats.refused += 1;
            }
        }
    }

    /// At the end: every call still in flight is answered (`ESHUTDOWN`),
    /// every service's held call too (its end of the run).
    fn close(&mut self) {
        for (_, call) in self.calls.drain() {
            let _ = call.request.reply_error(libc::ESHUTDOWN);
        }
        for s in &mut self.services {
            if let Some(r) = s.ready.take() {
                let _ = r.reply_error(libc::ESHUTDOWN);
            }
        }
    }

    /// A fresh token: the count of calls taken, hashed with the secret key
    /// (SipHash), so that knowing one's own tokens says nothing of the
    /// others'; one already in flight (a 2^-64 chance) is skipped.
    fn token(&mut self) -> u64 {
        use std::hash::BuildHasher;
        loop {
            self.taken += 1;
            let t = self.key.hash_one(self.taken);
            if !self.calls.contains_key(&t) && !self.at.contains_key(&t) {
                return t;
            }
        }
    }

    fn refuse(&mut self, req: Request<'_>, errno: i32) {
        self.stats.refused += 1;
        let _ = req.reply_error(errno);
    }
}

/// Most requests the broker may hold for `services` services: each one's
/// queue, the work it has and its ready call, and room for the timer's
/// and a few calls being refused.
fn most_held(services: u32) -> usize {
    (services as usize)
        .saturating_mul(QUEUE + 2)
        .saturating_add(16)
}

/// An attach message: (index, pid).
fn attach_of(data: &[u8]) -> Option<(u32, u32)> {
    let b: [u8; 8] = data.try_into().ok()?;
    Some((
        u32::from_le_bytes(b[..4].try_into().ok()?),
        u32::from_le_bytes(b[4..].try_into().ok()?),
    ))
}

/// The broker's timer: a thread that sends it a [`TICK`] pulse every
/// period until dropped.
struct Timer {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Timer {
    /// Starts the timer thread. It connects from its own thread: the
    /// broker answers the connection's hello only once it receives.
    fn start(
        ns: &Namespace,
        t: &str,
        every: Duration,
        secret: u64,
        opts: &Options,
    ) -> Result<Timer> {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = Arc::clone(&stop);
            let (ns, t, opts) = (ns.clone(), t.to_string(), opts.clone());
            std::thread::Builder::new()
                .name("broker-timer".into())
                .spawn(move || tick(&ns, &t, every, secret, &opts, &stop))
                .context("start the broker's timer")?
        };
        Ok(Timer {
            stop,
            thread: Some(thread),
        })
    }
}

/// The timer thread: proves itself with `secret`, then a [`TICK`] pulse
/// every `every` until `stop`. Should it fail to connect, the broker
/// still routes; only its deadlines and liveness checks go unlooked at,
/// and it says so.
fn tick(ns: &Namespace, t: &str, every: Duration, secret: u64, opts: &Options, stop: &AtomicBool) {
    let conn = msgpass::transport::by_name(t)
        .map_err(anyhow::Error::from)
        .and_then(|t| Ok(Connection::open(ns, ENDPOINT, &*t, opts)?))
        .and_then(|mut c| {
            c.call(TIMER, &secret.to_le_bytes(), &mut [])?;
            Ok(c)
        });
    let mut conn = match conn {
        Ok(c) => c,
        Err(e) => {
            eprintln!("msgbench broker: no timer, so no call timeouts: {e:#}");
            return;
        }
    };
    let tick = Pulse {
        code: TICK,
        value: 0,
    };
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(every);
        // A full queue already holds a tick: one is enough.
        match conn.send_pulse(tick) {
            Ok(()) | Err(msgpass::Error::PulseQueueFull) => {}
            Err(_) => return,
        }
    }
}

impl Drop for Timer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
