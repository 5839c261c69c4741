//! The server of one row: a thread of this process, pinned and verified,
//! serving one channel with the [`protocol`](super::protocol) until asked to
//! stop ([`CMD_STOP`]) or until its stop flag is set.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use msgpass::transport::shm::Shm;
use msgpass::transport::ServerChannel;
use msgpass::{Channel, Namespace, Options, Window};

use super::protocol::{
    ack_fold, all_stamps, checksum, echo_ends, echo_transform, Ends, CMD_ACK, CMD_CPU, CMD_ECHO,
    CMD_PING, CMD_STOP, CMD_SUM, PING_MAX, STAMP,
};
use super::row::Api;
use super::server_error::ServerError;
use crate::measure::cpu::thread_cpu_ns;
use crate::measure::placement::pin_current_thread;

/// Longest the server may take to pin itself and create its channel.
const START_LIMIT: Duration = Duration::from_secs(10);

/// A reply the server breaks on purpose (the `--inject-fault` test hook),
/// always at the same point of every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Flip the last byte of the [`FAULT_AT`]-th echo reply (in place: a
    /// byte of its end stamp).
    Corrupt,
    /// Flip the middle byte (`len / 2`) of the [`FAULT_AT`]-th echo reply:
    /// in place, beyond 16 bytes, a body byte the stamps do not cover, so
    /// only the client's whole-body check can see it.
    CorruptBody,
    /// Answer the [`FAULT_AT`]-th echo request with the previous reply (in
    /// place: the previous reply's stamps over the transformed ones).
    Stale,
    /// Return a wrong checksum to the [`FAULT_AT`]-th checksum request.
    Checksum,
    /// Take the [`FAULT_AT`]-th one-way checksum message as corrupted (a
    /// byte flipped before it is summed); only windowed rows send them.
    Oneway,
    /// Sleep [`STALL`] before answering the [`FAULT_AT`]-th echo request
    /// (the reply itself is right).
    Stall,
}

impl Fault {
    /// The `--inject-fault` value.
    pub fn name(self) -> &'static str {
        match self {
            Fault::Corrupt => "corrupt",
            Fault::CorruptBody => "corrupt-body",
            Fault::Stale => "stale",
            Fault::Checksum => "checksum",
            Fault::Oneway => "oneway",
            Fault::Stall => "stall",
        }
    }
}

/// How long [`Fault::Stall`] stalls the server, once.
pub const STALL: Duration = Duration::from_millis(50);

/// Which request of its kind a [`Fault`] breaks (counting from 0): past
/// the warm-up's minimum, inside the first measured run.
pub const FAULT_AT: u64 = 100;

/// A running server thread.
pub struct ServerThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<(), ServerError>>>,
}

impl ServerThread {
    /// Starts a server for `endpoint` on `cpu`, replying to messages of up
    /// to `size` bytes with `api`. A shared-memory transport is served
    /// through a typed channel ([`Channel::create_typed`]), any other by
    /// name. The error is a one-line reason (the row is skipped).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        ns: &Namespace,
        endpoint: &str,
        transport: &str,
        opts: &Options,
        cpu: usize,
        size: usize,
        fault: Option<Fault>,
        api: Api,
    ) -> Result<ServerThread, ServerError> {
        let (ns, endpoint, transport, opts) = (
            ns.clone(),
            endpoint.to_string(),
            transport.to_string(),
            opts.clone(),
        );
        let cfg = Serve { size, fault, api };
        ServerThread::spawn(cpu, move |tx| {
            if let Some(shm) = Shm::by_name(&transport) {
                let chan = Channel::create_typed(&ns, &endpoint, &shm, &opts);
                return started(chan, tx, cfg);
            }
            match msgpass::transport::by_name(&transport) {
                Ok(t) => started(Channel::create(&ns, &endpoint, &*t, &opts), tx, cfg),
                Err(e) => {
                    let _ = tx.send(Err(ServerError::Transport(e)));
                    Ok(())
                }
            }
        })
    }

    /// Like [`start`](ServerThread::start), serving a remote tcp channel
    /// at `addr` ([`Channel::listen_tcp`]: `msgbench serve ipc`'s rows),
    /// with no fault.
    pub fn listen_tcp(
        addr: std::net::SocketAddr,
        opts: &Options,
        cpu: usize,
        size: usize,
        api: Api,
    ) -> Result<ServerThread, ServerError> {
        let opts = opts.clone();
        let cfg = Serve {
            size,
            fault: None,
            api,
        };
        ServerThread::spawn(cpu, move |tx| {
            started(Channel::listen_tcp(addr, &opts), tx, cfg)
        })
    }

    /// Starts the server thread: pinned to `cpu`, it runs `open`, which
    /// makes the channel, reports it on the sender and serves it
    /// ([`started`]). Waits for the report.
    fn spawn(
        cpu: usize,
        open: impl FnOnce(&Started) -> Result<(), ServerError> + Send + 'static,
    ) -> Result<ServerThread, ServerError> {
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("ipc-server".into())
            .spawn(move || {
                if let Err(e) = pin_current_thread(cpu) {
                    let _ = tx.send(Err(ServerError::Pin(e)));
                    return Ok(());
                }
                open(&tx)
            })
            .map_err(ServerError::Spawn)?;
        match rx.recv_timeout(START_LIMIT) {
            Ok(Ok(stop)) => Ok(ServerThread {
                stop,
                handle: Some(handle),
            }),
            Ok(Err(reason)) => {
                let _ = handle.join();
                Err(reason)
            }
            // The thread is left behind; it holds nothing we wait for.
            Err(_) => Err(ServerError::StartTimeout(START_LIMIT)),
        }
    }

    /// Stops the server (if the client's [`CMD_STOP`] did not already) and
    /// waits up to `limit` for it; the error says what went wrong in it.
    pub fn stop(mut self, limit: Duration) -> Result<(), ServerError> {
        self.stop.store(true, Ordering::Relaxed);
        let Some(h) = self.handle.take() else {
            return Ok(());
        };
        let deadline = Instant::now() + limit;
        while !h.is_finished() {
            if Instant::now() >= deadline {
                // Left behind: the run directory is removed at the end anyway.
                return Err(ServerError::StopTimeout(limit));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        h.join().unwrap_or(Err(ServerError::Panicked))
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// What the server loop serves: the row's size, fault and API.
#[derive(Debug, Clone, Copy)]
struct Serve {
    size: usize,
    fault: Option<Fault>,
    api: Api,
}

/// How a server thread reports its channel's stop flag, or why it has
/// no channel.
type Started = mpsc::Sender<Result<Arc<AtomicBool>, ServerError>>;

/// Reports the channel (its stop flag, or why there is none) to
/// [`ServerThread::start`] and serves it.
fn started<S: ServerChannel + ?Sized>(
    chan: msgpass::Result<Channel<S>>,
    tx: &Started,
    cfg: Serve,
) -> Result<(), ServerError> {
    match chan {
        Ok(mut chan) => {
            let _ = tx.send(Ok(chan.stop_flag()));
            serve(&mut chan, cfg)
        }
        Err(e) => {
            let _ = tx.send(Err(ServerError::Serve(e)));
            Ok(())
        }
    }
}

/// The stamped bytes of the last in-place echo reply, as [`Ends`]
/// gathers them (at most `2 * STAMP`), kept so that [`Fault::Stale`] can
/// put them back.
#[derive(Debug, Clone, Copy, Default)]
struct Stamps([u8; 2 * STAMP]);

impl Stamps {
    fn save(&mut self, gathered: &[u8]) {
        self.0[..gathered.len()].copy_from_slice(gathered);
    }

    fn restore(&self, gathered: &mut [u8]) {
        let n = gathered.len();
        gathered.copy_from_slice(&self.0[..n]);
    }
}

/// Breaks a finished echo reply `m` as `fault` says (Corrupt,
/// CorruptBody; the others act elsewhere).
fn break_reply(m: &mut [u8], fault: Option<Fault>) {
    let n = m.len();
    match fault {
        Some(Fault::Corrupt) if n > 0 => m[n - 1] ^= 0x01,
        Some(Fault::CorruptBody) if n > 0 => m[n / 2] ^= 0x01,
        _ => {}
    }
}

/// [`break_reply`] for an echo reply of `n` bytes built in place: its
/// stamped bytes gathered in `ends`, the body in `w`.
fn break_in_place(w: &mut Window<'_>, ends: &mut Ends, n: usize, fault: Option<Fault>) {
    match fault {
        Some(Fault::Corrupt) if n > 0 => {
            if let Some(b) = ends.bytes_mut().last_mut() {
                *b ^= 0x01;
            }
        }
        Some(Fault::CorruptBody) if all_stamps(n) && n > 0 => ends.bytes_mut()[n / 2] ^= 0x01,
        Some(Fault::CorruptBody) if n > 0 => {
            let b = w.get::<1>(n / 2)[0] ^ 0x01;
            w.write(n / 2, &[b]);
        }
        _ => {}
    }
}

/// Replies to a request with `bytes`: in place with [`Api::InPlace`],
/// copied with [`Api::Copy`].
#[inline(always)]
fn reply_small<S: ServerChannel + ?Sized>(
    req: msgpass::Request<'_, S>,
    api: Api,
    bytes: &[u8],
) -> msgpass::Result<()> {
    match api {
        Api::Copy => req.reply(bytes),
        Api::InPlace => req.reply_with(|buf| {
            buf.write(0, bytes);
            bytes.len()
        }),
    }
}

/// The server loop. Returns when told to stop; a failed receive or reply
/// is the error.
fn serve<S: ServerChannel + ?Sized>(chan: &mut Channel<S>, cfg: Serve) -> Result<(), ServerError> {
    let mut state = Served::new(cfg);
    loop {
        let Some(req) = chan.receive().map_err(ServerError::Receive)? else {
            return Ok(());
        };
        let (cmd, len) = (req.cmd(), req.data().len());
        let sent = match cmd {
            CMD_ECHO if len <= cfg.size => state.echo(req),
            CMD_ECHO => req.reply_error(libc::EMSGSIZE),
            CMD_SUM | CMD_ACK => state.sum(req),
            CMD_PING if len <= PING_MAX => {
                let mut pong = [0u8; PING_MAX];
                echo_transform(req.data(), &mut pong[..len]);
                req.reply(&pong[..len])
            }
            CMD_CPU => req.reply(&thread_cpu_ns().to_le_bytes()),
            CMD_STOP => return req.reply(&[]).map_err(ServerError::ReplyStop),
            _ => req.reply_error(libc::ENOTTY),
        };
        sent.map_err(|source| ServerError::Reply { cmd, len, source })?;
    }
}

/// What the server loop keeps from one request to the next.
struct Served {
    /// The row's size, fault and API.
    cfg: Serve,
    /// The copying API's reply buffer (empty in place).
    out: Vec<u8>,
    /// The previous in-place echo reply's stamps ([`Fault::Stale`]).
    prev: Stamps,
    /// Echo requests so far (a fault strikes the [`FAULT_AT`]-th).
    echoes: u64,
    /// Checksum requests so far, one-way or not.
    sums: u64,
    /// One-way checksum messages so far.
    oneways: u64,
    /// Messages of the window since the last [`CMD_ACK`].
    count: u32,
    /// The running check of that window.
    check: u64,
}

impl Served {
    fn new(cfg: Serve) -> Served {
        Served {
            cfg,
            out: vec![0u8; if cfg.api == Api::Copy { cfg.size } else { 0 }],
            prev: Stamps::default(),
            echoes: 0,
            sums: 0,
            oneways: 0,
            count: 0,
            check: 0,
        }
    }

    /// Answers an echo request of at most the row's size, breaking it as
    /// the fault says when it is the [`FAULT_AT`]-th.
    #[inline(always)]
    fn echo<S: ServerChannel + ?Sized>(
        &mut self,
        req: msgpass::Request<'_, S>,
    ) -> msgpass::Result<()> {
        let broken = (self.echoes == FAULT_AT)
            .then_some(self.cfg.fault)
            .flatten();
        self.echoes += 1;
        let len = req.len();
        if self.cfg.api == Api::Copy {
            // Stale: `out` still holds the previous reply.
            if broken != Some(Fault::Stale) {
                echo_transform(req.data(), &mut self.out[..len]);
            }
            if broken == Some(Fault::Stall) {
                std::thread::sleep(STALL);
            }
            break_reply(&mut self.out[..len], broken);
            return req.reply(&self.out[..len]);
        }
        if broken == Some(Fault::Stall) {
            std::thread::sleep(STALL);
        }
        let prev = &mut self.prev;
        // The window starts with the request: only its stamps change,
        // read and written where they lie.
        req.reply_with(|buf| {
            let mut ends = Ends::read(buf, len);
            if broken == Some(Fault::Stale) {
                prev.restore(ends.bytes_mut());
            } else {
                echo_ends(ends.bytes_mut());
            }
            break_in_place(buf, &mut ends, len, broken);
            ends.write(buf);
            prev.save(ends.bytes());
            len
        })
    }

    /// Answers a checksum request ([`CMD_SUM`] with its checksum), takes
    /// a one-way one into the window, or closes the window ([`CMD_ACK`]:
    /// its count and running check).
    #[inline(always)]
    fn sum<S: ServerChannel + ?Sized>(
        &mut self,
        req: msgpass::Request<'_, S>,
    ) -> msgpass::Result<()> {
        let sum = self.checksum(&req);
        let api = self.cfg.api;
        if req.cmd() == CMD_SUM && !req.is_oneway() {
            return reply_small(req, api, &sum.to_le_bytes());
        }
        self.count = self.count.wrapping_add(1);
        self.check = ack_fold(self.check, sum);
        if req.cmd() != CMD_ACK {
            // One-way: nothing goes back.
            return Ok(());
        }
        let mut out = [0u8; 12];
        out[..4].copy_from_slice(&self.count.to_le_bytes());
        out[4..].copy_from_slice(&self.check.to_le_bytes());
        (self.count, self.check) = (0, 0);
        reply_small(req, api, &out)
    }

    /// The checksum of a checksum request, broken as the fault says
    /// ([`Fault::Oneway`], [`Fault::Checksum`]) at the [`FAULT_AT`]-th.
    #[inline(always)]
    fn checksum<S: ServerChannel + ?Sized>(&mut self, req: &msgpass::Request<'_, S>) -> u32 {
        let fault = self.cfg.fault;
        let mut sum = checksum(req.data());
        if req.is_oneway() {
            if self.oneways == FAULT_AT && fault == Some(Fault::Oneway) {
                let mut bad = req.data().to_vec();
                if let Some(b) = bad.last_mut() {
                    *b ^= 0x01;
                }
                sum = checksum(&bad);
            }
            self.oneways += 1;
        }
        if self.sums == FAULT_AT && fault == Some(Fault::Checksum) {
            sum ^= 0x8000_0000;
        }
        self.sums += 1;
        sum
    }
}
