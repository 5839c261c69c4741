//! Framed messages: how one message crosses a connection ([`Wire`]), and
//! the two wires most mechanisms share, a byte stream ([`StreamWire`]) and
//! a message-preserving socket ([`DatagramWire`]).
//!
//! Every message is an 8-byte header, `code: u32` (the command, or the
//! reply's status) and `len: u32` (payload bytes), then the payload.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::transport::api::Status;
use crate::transport::wire::doorman::Wake;
use crate::transport::wire::poker::{self, Target};

/// Header length of every wire message.
pub(crate) const HEAD: usize = 8;

/// The wire code of a client's CPU hint: its CPU + 1 as a little-endian
/// `u32`, sent before a request when the client moved (see
/// `WireClient::hint_cpu`); the server keeps it and answers nothing. A
/// one-way code no application can send (`call` and `send_oneway` refuse
/// the one-way bit).
pub(crate) const HINT: u32 = crate::transport::api::ONEWAY | 0x7fff_ffff;

/// The wire code of a client's calling thread: its thread id as a
/// little-endian `i32`, sent before a request when the calling thread is
/// not the one last named on the connection (see `WireClient::name_thread`);
/// a server with priority inheritance believes it only if the kernel lists
/// that thread in the peer's process (see `priority.rs`), and answers
/// nothing. Reserved like [`HINT`]: no application can send it.
pub(crate) const TID: u32 = crate::transport::api::ONEWAY | crate::pulse::CALLER;

/// [`TID`] as a call, on wires that carry no one-way message (one message
/// at a time each way: eventfd, posix-mq, io-uring): the server reads the
/// claim as it reads a [`TID`] and answers it at once with an empty reply.
/// Reserved too (a code from [`crate::pulse::RESERVED`] up).
pub(crate) const TID_CALL: u32 = crate::pulse::CALLER;

/// Builds a header.
pub(crate) fn head(code: u32, len: usize) -> [u8; HEAD] {
    let mut h = [0u8; HEAD];
    h[..4].copy_from_slice(&code.to_le_bytes());
    h[4..].copy_from_slice(&(len as u32).to_le_bytes());
    h
}

/// Reads a header: (code, len).
pub(crate) fn parse_head(h: &[u8; HEAD]) -> (u32, usize) {
    (
        u32::from_le_bytes([h[0], h[1], h[2], h[3]]),
        u32::from_le_bytes([h[4], h[5], h[6], h[7]]) as usize,
    )
}

/// One end of a connection, as the mechanism moves messages.
pub(crate) trait Wire: Send {
    /// Sends one message: `head`, then `data`.
    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()>;
    /// Receives one message into `frame`, contiguous as on the wire: the
    /// header in `frame[..HEAD]`, the payload after it (`frame` holds the
    /// header and the channel's maximum). Returns the payload length, or
    /// `None` when the peer closed. A payload that does not fit is an
    /// `InvalidData` error. Blocks until a message arrives.
    ///
    /// One contiguous frame lets a message-preserving mechanism receive
    /// with one plain `recv` (or `mq_receive`) and no copy.
    ///
    /// On the server side, a `WouldBlock` error means the wire consumed a
    /// message of the mechanism's own (a handshake step), and a `TimedOut`
    /// error that it consumed only a late poke (see `poker.rs`): there is
    /// no request, and the connection stays.
    fn recv(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>>;
    /// Like [`Wire::recv`], but gives up with an `ErrorKind::TimedOut`
    /// error when no message starts arriving within `timeout`.
    ///
    /// The default waits in `poll` on [`Wire::poll_fd`], then receives:
    /// two calls. A mechanism with a timed receive of its own (a socket's
    /// `SO_RCVTIMEO`, `mq_timedreceive`) overrides it with one, which is
    /// what lets a server with a single client, and a client waiting for
    /// its reply, make no more calls than a hand-written loop.
    fn recv_timeout(&mut self, frame: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        poll_then_recv(self, frame, timeout)
    }
    /// True when [`Wire::recv_timeout`] is one system call that returns
    /// within about its timeout, however short (a socket's `SO_RCVTIMEO`,
    /// `mq_timedreceive`): a server may then wait on this wire alone for a
    /// few milliseconds while other clients are connected (see
    /// `serve/reactor/`, one active client among idle ones). False (the
    /// default) where a wait takes two calls (`poll`, then a read) or ends
    /// only on the poker's tick (pipes, eventfd).
    fn quick_timeout(&self) -> bool {
        false
    }
    /// Server side: what ends a [`Wire::recv_timeout`] on this wire from
    /// outside, before its time (the poker's poke, registered now with
    /// `tick` if it is not yet), for the doorman to end the wait when a
    /// newcomer connects (`doorman.rs`); `None` (the default) where
    /// nothing can, and the wait must be kept short instead.
    fn waker(&mut self, _tick: Duration) -> Option<Arc<dyn Wake>> {
        None
    }
    /// Sends one small message (a pulse) only if the path has room for it
    /// now: `Ok(false)` when it has not, and nothing was sent. Never waits.
    /// The default: `Unsupported`.
    fn send_now(&mut self, _head: &[u8; HEAD], _data: &[u8]) -> io::Result<bool> {
        Err(io::ErrorKind::Unsupported.into())
    }
    /// Client side: a descriptor that polls writable when a [`Wire::send`]
    /// that failed with `WouldBlock` (the path full of pulses the server
    /// has not taken yet) can go; `None` (the default) where a send never
    /// reports `WouldBlock`, or where the caller must look again after a
    /// while instead.
    fn room_fd(&self) -> Option<BorrowedFd<'_>> {
        None
    }
    /// A descriptor that polls readable when a message is waiting.
    fn poll_fd(&self) -> BorrowedFd<'_>;
    /// Server side: the peer is not trusted to keep its pace. A message it
    /// began must be finished within `limit` (until then [`Wire::recv`]
    /// keeps what came and reports `WouldBlock`, never waiting for more),
    /// and a reply must be taken within `limit` (else the send fails).
    /// The default, for wires whose messages arrive whole and whose sends
    /// never wait, does nothing.
    fn bound(&mut self, _limit: Duration) -> io::Result<()> {
        Ok(())
    }
    /// True when the peer began a message longer than its limit ago and
    /// has not finished it (see [`Wire::bound`]).
    fn overdue(&self, _now: Instant) -> bool {
        false
    }
    /// True when a message (or part of one) was already read from the
    /// descriptor into the wire's buffer, where `poll` cannot see it.
    fn has_buffered(&self) -> bool {
        false
    }
    /// Server side: true while the peer has begun something it must finish
    /// in time (a message, a handshake of the mechanism's own), so that
    /// the server looks at [`Wire::overdue`] once a tick.
    fn unfinished(&self) -> bool {
        false
    }
    /// Like [`Wire::recv_lent`] without a timeout, but only when a message
    /// is there now (`TimedOut` otherwise): a pool's worker may be told of
    /// a message another worker has taken meanwhile. The default looks
    /// with a zero-timeout `poll` first.
    fn recv_lent_now(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        if !self.has_buffered() {
            let mut p = [oslayer::poll::PollFd::readable(self.poll_fd())];
            oslayer::poll::poll(&mut p, Some(Duration::ZERO))?;
            if p[0].revents == 0 {
                return Err(io::ErrorKind::TimedOut.into());
            }
        }
        self.recv_lent(frame, None)
    }

    // In place: wires whose messages lie in shared memory (`areas.rs`)
    // lend a private buffer, which each message is copied into or out of
    // once (never the shared memory itself: see `shared.rs`), so the
    // in-place API copies no payload through the frame. The defaults copy.

    /// Receives one message like [`Wire::recv`] (`timeout` `None`) or
    /// [`Wire::recv_timeout`]; a wire whose messages lie in shared memory
    /// writes only the checked header to `frame[..HEAD]` and copies the
    /// payload into its own buffer, for [`Wire::received`]. The default
    /// receives the whole message into `frame`.
    fn recv_lent(
        &mut self,
        frame: &mut [u8],
        timeout: Option<Duration>,
    ) -> io::Result<Option<usize>> {
        match timeout {
            Some(t) => self.recv_timeout(frame, t),
            None => self.recv(frame),
        }
    }
    /// The first `len` payload bytes (`len` as [`Wire::recv_lent`] returned
    /// it) of the message it last received, in the wire's own buffer;
    /// `None` (the default) when they were received into the frame.
    fn received(&self, _len: usize) -> Option<&[u8]> {
        None
    }
    /// The wire's own buffer (at least the channel maximum) to build the
    /// next message in, starting with the first `keep` payload bytes of the
    /// message last received (a server builds its reply over its request);
    /// copied into the memory the peer receives in and sent by
    /// [`Wire::send_in_place`]. `None` (the default) on wires that copy.
    fn send_buffer(&mut self, _keep: usize) -> Option<&mut [u8]> {
        None
    }
    /// Sends the message built in [`Wire::send_buffer`] with header
    /// `head` (a length over the maximum is an error); called only when
    /// it is `Some` (the default refuses).
    fn send_in_place(&mut self, _head: &[u8; HEAD]) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this wire sends no message in place",
        ))
    }
}

/// [`Wire::recv_timeout`] for a wire without a timed receive of its own:
/// waits in `poll` on [`Wire::poll_fd`], then receives.
pub(crate) fn poll_then_recv<W: Wire + ?Sized>(
    wire: &mut W,
    frame: &mut [u8],
    timeout: Duration,
) -> io::Result<Option<usize>> {
    if !wire.has_buffered() {
        let mut p = [oslayer::poll::PollFd::readable(wire.poll_fd())];
        oslayer::poll::poll(&mut p, Some(timeout))?;
        if p[0].revents == 0 {
            return Err(io::ErrorKind::TimedOut.into());
        }
    }
    wire.recv(frame)
}

/// The header at the start of a received frame: (code, len).
pub(crate) fn frame_head(frame: &[u8]) -> (u32, usize) {
    let mut h = [0u8; HEAD];
    h.copy_from_slice(&frame[..HEAD]);
    parse_head(&h)
}

/// A received reply, for the caller: its `payload` (in the frame after
/// the header at the start of `frame`, or where it lies, see
/// [`Wire::received`]) copied to `reply`, or the error its status carries.
pub(crate) fn unpack_reply(frame: &[u8], payload: &[u8], reply: &mut [u8]) -> Result<usize> {
    let len = payload.len();
    check_reply_head(frame, len, reply.len())?;
    reply[..len].copy_from_slice(payload);
    Ok(len)
}

/// What a client makes of the header at the start of `frame`, for a reply
/// of `len` payload bytes received and a caller's room of `cap`: a header
/// that disagrees with what came, the server's error, a buffer too small
/// (see [`Status::check_reply`]), or fine.
pub(crate) fn check_reply_head(frame: &[u8], len: usize, cap: usize) -> Result<()> {
    let (status, hlen) = frame_head(frame);
    if hlen != len {
        return Err(Error::Protocol(format!(
            "reply header says {hlen} bytes, got {len}"
        )));
    }
    Status::check_reply(status, len, cap)
}

/// The error for a message longer than the receiver's frame.
pub(crate) fn too_long() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        "message longer than the channel maximum",
    )
}

/// A byte stream carrying framed messages: pipes (two descriptors) and
/// stream sockets (one). A peer that dies reads as EOF.
///
/// A message of up to [`STAGED_MAX`] bytes is sent with one `write` from
/// a staging buffer, and received with one `read` of header and payload
/// together (once the read buffer has grown to its size): separate header
/// and payload calls, or `writev`, cost a pipe round trip about 1.2 us on
/// top of 5 us (measured against the bare pipe floor). A larger payload
/// is gathered and read straight into the caller's buffer, which saves a
/// copy that would cost more than the calls. A pipe's client still writes
/// its requests in packets of [`oslayer::pipe::PIPE_BUF`] (see
/// [`Packets`]).
pub(crate) struct StreamWire {
    pub(crate) rx: OwnedFd,
    /// Where to write; `None` writes to `rx` (a socket).
    pub(crate) tx: Option<OwnedFd>,
    /// Staging for small outgoing messages.
    out: Vec<u8>,
    /// Bytes read but not yet consumed: `inb[start..end]`.
    inb: Box<[u8]>,
    start: usize,
    end: usize,
    /// The receive timeout set on a socket `rx` (`SO_RCVTIMEO`); a socket
    /// with one set may report `WouldBlock` in the middle of a message,
    /// which only means "keep reading".
    armed: Option<Duration>,
    /// How a pipe's messages are cut into packets (sockets: not at all).
    packets: Packets,
    /// Server side: how long the peer may take to finish a message or to
    /// take a reply ([`Wire::bound`]); `None` on the client side.
    limit: Option<Duration>,
    /// A message begun and not finished, header included (server side),
    /// once its header is in; before that its bytes are in `inb`.
    partial: Vec<u8>,
    /// Since when a message has been begun and not finished.
    since: Option<Instant>,
    /// A pipe's registration with the poker (a pipe has no receive
    /// timeout), made at its first timed receive; `Err` when the poker
    /// cannot serve it and timed receives use `poll`.
    poke: Option<Result<Arc<Target>, ()>>,
    /// True while a receive runs inside a wait the poker ends (the server's
    /// single client, [`StreamWire::recv_poked`]): the rest of a message
    /// begun may then be waited for in blocking reads, since a one-byte
    /// poke ends them within two ticks.
    poked: bool,
}

/// A pipe's part in the packet protocol that lets the poker end a wait in
/// `read` (see `poker.rs`): the client writes its messages to the server in
/// packets (`O_DIRECT`) of two bytes or more, so the server tells a
/// one-byte poke from a message and a poke never lands inside one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Packets {
    /// A socket, or a direction nobody pokes.
    No,
    /// Writes go out in packets (the client's end of its requests).
    Send,
    /// Reads come in packets, and one-byte packets are pokes (the
    /// server's end of the requests).
    Receive,
}

/// Reads what is there now on `rx` (a socket, or a pipe), without waiting:
/// `WouldBlock` when nothing.
fn read_now(rx: BorrowedFd<'_>, socket: bool, buf: &mut [u8]) -> io::Result<usize> {
    match socket {
        true => oslayer::socket::recv_now(rx, buf),
        false => oslayer::fd::read_now(rx, buf),
    }
}

/// How [`read_rest`] may wait for the rest of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wait {
    /// Never: only what is there.
    No,
    /// In the first read only (the caller saw the descriptor readable or
    /// bounded the wait), then only what is there.
    First,
    /// In every read, until a poke (a one-byte packet) says the wait has
    /// lasted its tick; then only what is there. Only inside a wait the
    /// poker ends ([`StreamWire::recv_poked`]).
    UntilPoked,
}

/// Reads the rest of a message into `msg`, of which `got` bytes are there,
/// from `rx` (a socket, or a pipe taking `packets` part), waiting as
/// `wait` allows. Returns how far it got.
fn read_rest(
    rx: BorrowedFd<'_>,
    socket: bool,
    packets: Packets,
    msg: &mut [u8],
    mut got: usize,
    mut wait: Wait,
) -> io::Result<usize> {
    while got < msg.len() {
        let r = match wait {
            Wait::No => read_now(rx, socket, &mut msg[got..]),
            _ => oslayer::fd::read_some(rx, &mut msg[got..]),
        };
        if wait == Wait::First {
            wait = Wait::No;
        }
        match r {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            // A poke between two packets of the message: skipped, and the
            // wait has lasted its tick, so wait no more.
            Ok(1) if packets == Packets::Receive && msg.len() - got > 1 => wait = Wait::No,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(got),
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// Size of a wire's staging buffers when it starts (header included):
/// what a datagram wire stages, and what a stream wire reads in one piece
/// until a larger message comes ([`StreamWire::room_for`]).
const SMALL: usize = 4096;

/// Largest message (header included) a stream wire stages to send with
/// one `write`, and grows its read buffer to take in one `read`. Past it,
/// the copies through the buffers cost more than the second call saves
/// (ipc process rows on one CPU, p50 against a limit of 4 KiB: a 4 KiB
/// payload's round trip 0.64x on pipes, 0.84x on FIFOs, 0.80x on Unix
/// stream sockets, 0.91x on TCP, 16 KiB ones unchanged; staging 16 KiB
/// payloads as well made pipes and FIFOs 1.2x slower).
const STAGED_MAX: usize = 8 * 1024 + HEAD;

/// What one send writes, and how many of the parts: a message of up to
/// [`STAGED_MAX`] bytes staged in `out` with its header (one `write`),
/// a larger one as header and payload (one `writev`, no copy).
fn staged<'a>(
    out: &'a mut Vec<u8>,
    head: &'a [u8; HEAD],
    data: &'a [u8],
) -> ([&'a [u8]; 2], usize) {
    if HEAD + data.len() <= STAGED_MAX {
        out.clear();
        out.extend_from_slice(head);
        out.extend_from_slice(data);
        ([out.as_slice(), &[]], 1)
    } else {
        ([head, data], 2)
    }
}

impl StreamWire {
    /// A wire on a stream socket `fd`.
    pub(crate) fn socket(fd: OwnedFd) -> StreamWire {
        StreamWire::new(fd, None, Packets::No)
    }

    /// A wire on two pipes (or FIFOs): reading `rx`, writing `tx`, taking
    /// `packets` part in the packet protocol. The client's `tx` is put in
    /// packet mode here.
    pub(crate) fn pipes(rx: OwnedFd, tx: OwnedFd, packets: Packets) -> io::Result<StreamWire> {
        if packets == Packets::Send {
            oslayer::pipe::set_packet_mode(tx.as_fd())?;
        }
        Ok(StreamWire::new(rx, Some(tx), packets))
    }

    fn new(rx: OwnedFd, tx: Option<OwnedFd>, packets: Packets) -> StreamWire {
        StreamWire {
            rx,
            tx,
            out: Vec::with_capacity(SMALL),
            inb: vec![0; SMALL].into_boxed_slice(),
            start: 0,
            end: 0,
            armed: None,
            packets,
            poke: None,
            poked: false,
            limit: None,
            partial: Vec::new(),
            since: None,
        }
    }

    /// Replaces the pipe written to (a FIFO's server end, once its client
    /// opened it), keeping it non-blocking when the wire is bounded.
    pub(crate) fn set_tx(&mut self, tx: OwnedFd) -> io::Result<()> {
        if self.limit.is_some() {
            oslayer::fd::set_nonblocking(tx.as_fd(), true)?;
        }
        self.tx = Some(tx);
        Ok(())
    }

    /// Like [`StreamWire::fill`], without waiting: `WouldBlock` when
    /// nothing is there.
    fn fill_now(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        let n = read_now(self.rx.as_fd(), self.is_socket(), &mut self.inb[self.end..])?;
        self.end += n;
        Ok(n)
    }

    /// The peer stopped in the middle of a message: no request yet, the
    /// connection stays, and the clock of its limit runs.
    fn unfinished(&mut self) -> io::Result<Option<usize>> {
        self.since.get_or_insert_with(Instant::now);
        Err(io::ErrorKind::WouldBlock.into())
    }

    /// Reads the rest of a message into `msg`, of which `got` bytes are
    /// there, waiting as `wait` allows. Returns how far it got.
    fn read_rest(&self, msg: &mut [u8], got: usize, wait: Wait) -> io::Result<usize> {
        read_rest(
            self.rx.as_fd(),
            self.is_socket(),
            self.packets,
            msg,
            got,
            wait,
        )
    }

    /// [`Wire::recv`] on the server side (bounded): never waits for the
    /// rest of a message once its first read is done. A message that
    /// stops short is kept (in `inb`, then in `partial`, where it is
    /// finished as its bytes come, to be copied out once whole).
    fn recv_bounded(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        // The first read may block: the caller saw the descriptor readable
        // or bounded the wait (a receive timeout, the poker).
        self.recv_bounded_from(frame, true)
    }

    /// [`StreamWire::recv_bounded`], its first read blocking or not.
    fn recv_bounded_from(
        &mut self,
        frame: &mut [u8],
        may_block: bool,
    ) -> io::Result<Option<usize>> {
        if !self.partial.is_empty() {
            return self.resume(frame);
        }
        let mut may_block = may_block;
        while self.end - self.start < HEAD {
            let got = match may_block {
                true => self.fill(),
                false => self.fill_now(),
            };
            may_block = false;
            match got {
                Ok(0) if self.start == self.end => return Ok(None),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return self.unfinished(),
                Err(e) => return Err(e),
            }
        }
        // What is buffered of the message, then the rest straight into
        // `frame` while it is there.
        let (len, have) = self.start_message(frame)?;
        let wait = if self.poked && have < HEAD + len {
            // The single client's message, not all in yet (a pipe holds
            // less than a large one: the client is still writing it). Its
            // clock runs from here, and the rest is waited for right here
            // in plain reads until the poker ends the wait (within two
            // ticks). Reading what is there without waiting instead, and
            // keeping the part when the pipe runs dry, cost a failed read,
            // a trip through the reactor and two copies of the message (a
            // 64 KiB pipe round trip a tenth slower).
            self.since.get_or_insert_with(Instant::now);
            Wait::UntilPoked
        } else if may_block {
            Wait::First
        } else {
            Wait::No
        };
        let got = self.read_rest(&mut frame[..HEAD + len], have, wait)?;
        if got < HEAD + len {
            self.partial.extend_from_slice(&frame[..got]);
            return self.unfinished();
        }
        self.since = None;
        Ok(Some(len))
    }

    /// The message whose header is in `inb`: checks its length against
    /// `frame` and moves what is buffered of it there. Returns (payload
    /// length, bytes moved).
    fn start_message(&mut self, frame: &mut [u8]) -> io::Result<(usize, usize)> {
        let (_, len) = frame_head(&self.inb[self.start..]);
        if HEAD + len > frame.len() {
            return Err(too_long());
        }
        let have = (self.end - self.start).min(HEAD + len);
        frame[..have].copy_from_slice(&self.inb[self.start..self.start + have]);
        self.start += have;
        self.room_for(HEAD + len);
        Ok((len, have))
    }

    /// Grows the read buffer so that the next message of `msg` bytes
    /// (header included) comes in one read, when it is at most
    /// [`STAGED_MAX`] (a larger one is read straight into its frame): a
    /// connection pays for the buffer only once it carries such messages
    /// (ten thousand idle ones keep [`SMALL`] each).
    fn room_for(&mut self, msg: usize) {
        if msg <= self.inb.len() || msg > STAGED_MAX {
            return;
        }
        let size = msg.next_power_of_two().min(STAGED_MAX);
        let mut inb = vec![0; size].into_boxed_slice();
        let kept = self.end - self.start;
        inb[..kept].copy_from_slice(&self.inb[self.start..self.end]);
        (self.inb, self.start, self.end) = (inb, 0, kept);
    }

    /// Goes on with the message kept in `partial` (its header is in):
    /// reads what is there of the rest into it, and copies it to `frame`
    /// once whole.
    fn resume(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        let (_, len) = frame_head(&self.partial);
        if HEAD + len > frame.len() {
            return Err(too_long());
        }
        let have = self.partial.len();
        self.partial.resize(HEAD + len, 0);
        let got = read_rest(
            self.rx.as_fd(),
            self.is_socket(),
            self.packets,
            &mut self.partial,
            have,
            match self.poked {
                true => Wait::UntilPoked,
                false => Wait::First,
            },
        )?;
        if got < HEAD + len {
            self.partial.truncate(got);
            return self.unfinished();
        }
        frame[..HEAD + len].copy_from_slice(&self.partial);
        self.partial.clear();
        self.since = None;
        Ok(Some(len))
    }

    /// [`Wire::send`] on the server side: the peer has `limit` to take it.
    fn send_within(&mut self, head: &[u8; HEAD], data: &[u8], limit: Duration) -> io::Result<()> {
        let (parts, n) = staged(&mut self.out, head, data);
        match &self.tx {
            None => oslayer::socket::send_all_within(self.rx.as_fd(), &parts[..n], limit),
            Some(tx) => oslayer::fd::write_all_within(tx.as_fd(), &parts[..n], limit),
        }
    }

    /// True when `rx` is a socket (one descriptor both ways), which has a
    /// receive timeout of its own; a pipe has none.
    fn is_socket(&self) -> bool {
        self.tx.is_none()
    }

    /// Reads more into `inb`; `Ok(0)` is EOF.
    fn fill(&mut self) -> io::Result<usize> {
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.end == self.inb.len() {
            self.inb.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let n = oslayer::fd::read_some(self.rx.as_fd(), &mut self.inb[self.end..])?;
        if self.packets == Packets::Receive {
            // A whole packet, read into the whole (empty) buffer: a poke,
            // or the start of a message with its header.
            if n == 1 {
                return Err(io::ErrorKind::TimedOut.into());
            }
            if n != 0 && (self.end != 0 || n < HEAD) {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    "a message packet without its header",
                ));
            }
        }
        self.end += n;
        Ok(n)
    }

    /// Writes one message in packets of at most a pipe's atomic write and
    /// at least two bytes (a one-byte packet is a poke).
    fn send_packets(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        let fd = self.tx.as_ref().unwrap_or(&self.rx).as_fd();
        let total = HEAD + data.len();
        let mut at = 0;
        while at < total {
            let mut n = (total - at).min(oslayer::pipe::PIPE_BUF);
            if total - at - n == 1 {
                n -= 1;
            }
            let part = |from: usize, to: usize| -> [&[u8]; 2] {
                let h = &head[from.min(HEAD)..to.min(HEAD)];
                let d = &data[from.max(HEAD) - HEAD..to.max(HEAD) - HEAD];
                [h, d]
            };
            // One write of at most PIPE_BUF bytes is atomic: one packet.
            oslayer::fd::write_all(fd, &part(at, at + n))?;
            at += n;
        }
        Ok(())
    }

    /// [`Wire::recv_timeout`] on a pipe: blocks in `read` until the poker
    /// ends the wait (see `poker.rs`), or waits in `poll` where it cannot.
    fn recv_poked(&mut self, frame: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        if self.has_buffered() {
            return self.recv(frame);
        }
        // Taken out while `recv` has the wire, put back after.
        let poke = match self.poke.take() {
            Some(p) => p,
            None => poker::register_pipe(&self.rx, timeout).map_err(|_| ()),
        };
        let got = match &poke {
            Ok(target) => {
                target.begin();
                self.poked = true;
                let got = self.recv(frame);
                self.poked = false;
                target.end();
                got
            }
            Err(()) => poll_then_recv(self, frame, timeout),
        };
        self.poke = Some(poke);
        got
    }
}

impl StreamWire {
    /// [`Wire::send_now`]: one write that does not wait (`MSG_DONTWAIT` on
    /// a socket, `RWF_NOWAIT` on a pipe, which takes a small write whole
    /// or not at all). A stream socket that takes part of it (never seen:
    /// Unix stream sockets take a small send whole, TCP could split it at
    /// the edge of its buffer) gets the rest at once, so that the server
    /// never holds half a message.
    fn send_small_now(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<bool> {
        if HEAD + data.len() > oslayer::pipe::PIPE_BUF {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        self.out.clear();
        self.out.extend_from_slice(head);
        self.out.extend_from_slice(data);
        let sent = match &self.tx {
            None => oslayer::socket::send_now(self.rx.as_fd(), &self.out)?,
            Some(tx) => match oslayer::fd::write_now(tx.as_fd(), &self.out) {
                // A FIFO opened by name takes no RWF_NOWAIT: O_NONBLOCK for
                // this one write (the open file is this client's own).
                Err(e) if e.kind() == io::ErrorKind::Unsupported => {
                    oslayer::fd::set_nonblocking(tx.as_fd(), true)?;
                    let sent = oslayer::fd::write_some(tx.as_fd(), &self.out);
                    oslayer::fd::set_nonblocking(tx.as_fd(), false)?;
                    match sent {
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => None,
                        sent => Some(sent?),
                    }
                }
                sent => sent?,
            },
        };
        match sent {
            None | Some(0) => Ok(false),
            Some(n) if n == self.out.len() => Ok(true),
            Some(n) => {
                let fd = self.tx.as_ref().unwrap_or(&self.rx).as_fd();
                oslayer::fd::write_all(fd, &[&self.out[n..]])?;
                Ok(true)
            }
        }
    }
}

impl Wire for StreamWire {
    fn send_now(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<bool> {
        self.send_small_now(head, data)
    }

    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        if let Some(limit) = self.limit {
            return self.send_within(head, data, limit);
        }
        if self.packets == Packets::Send && HEAD + data.len() > oslayer::pipe::PIPE_BUF {
            return self.send_packets(head, data);
        }
        let fd = self.tx.as_ref().unwrap_or(&self.rx).as_fd();
        let (parts, n) = staged(&mut self.out, head, data);
        oslayer::fd::write_all(fd, &parts[..n])
    }

    fn recv(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        if self.limit.is_some() {
            return self.recv_bounded(frame);
        }
        while self.end - self.start < HEAD {
            match self.fill() {
                Ok(0) if self.start == self.end => return Ok(None),
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                Ok(_) => {}
                // A receive timeout in the middle of a header.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        // Whatever of the message is already buffered, then the rest
        // straight into `frame`.
        let (len, have) = self.start_message(frame)?;
        let mut got = have;
        while got < HEAD + len {
            match oslayer::fd::read_some(self.rx.as_fd(), &mut frame[got..HEAD + len]) {
                Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
                // A poke between two packets of the message.
                Ok(1) if self.packets == Packets::Receive && HEAD + len - got > 1 => {}
                Ok(n) => got += n,
                // A receive timeout in the middle of a payload.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
        }
        Ok(Some(len))
    }

    fn recv_timeout(&mut self, frame: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        if !self.is_socket() {
            return match self.packets {
                Packets::Receive => self.recv_poked(frame, timeout),
                _ => poll_then_recv(self, frame, timeout),
            };
        }
        // Armed before any read here may block (a message begun in the
        // poll path is finished here with blocking reads too).
        if self.armed != Some(timeout) {
            oslayer::socket::set_recv_timeout(self.rx.as_fd(), Some(timeout))?;
            self.armed = Some(timeout);
        }
        if self.start == self.end && self.partial.is_empty() {
            match self.fill() {
                Ok(0) => return Ok(None),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::ErrorKind::TimedOut.into())
                }
                Err(e) => return Err(e),
            }
        }
        self.recv(frame)
    }

    fn quick_timeout(&self) -> bool {
        self.is_socket()
    }

    fn waker(&mut self, tick: Duration) -> Option<Arc<dyn Wake>> {
        if self.packets != Packets::Receive {
            return None;
        }
        let rx = &self.rx;
        let poke = self
            .poke
            .get_or_insert_with(|| poker::register_pipe(rx, tick).map_err(|_| ()));
        let target = poke.as_ref().ok()?;
        Some(Arc::clone(target) as Arc<dyn Wake>)
    }

    fn poll_fd(&self) -> BorrowedFd<'_> {
        self.rx.as_fd()
    }

    /// A whole message is in the buffer, where `poll` cannot see it (a
    /// part of one is not: the rest must come through the descriptor).
    fn has_buffered(&self) -> bool {
        let n = self.end - self.start;
        n >= HEAD && HEAD + frame_head(&self.inb[self.start..]).1 <= n
    }

    fn bound(&mut self, limit: Duration) -> io::Result<()> {
        if let Some(tx) = &self.tx {
            oslayer::fd::set_nonblocking(tx.as_fd(), true)?;
        }
        self.limit = Some(limit);
        Ok(())
    }

    fn overdue(&self, now: Instant) -> bool {
        match (self.since, self.limit) {
            (Some(since), Some(limit)) => now.saturating_duration_since(since) > limit,
            _ => false,
        }
    }

    fn unfinished(&self) -> bool {
        self.since.is_some()
    }

    /// On a socket, one `recv` with `MSG_DONTWAIT`, not a `poll` and a
    /// read. (A pipe's reads must tell pokes from messages, which `fill`
    /// does: it keeps the default.)
    fn recv_lent_now(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        let plain = self.limit.is_some() && self.is_socket() && self.partial.is_empty();
        if !plain || self.has_buffered() {
            return crate::transport::wire::framing::poll_then_recv(self, frame, Duration::ZERO);
        }
        if self.start == self.end {
            match self.fill_now() {
                Ok(0) => return Ok(None),
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::ErrorKind::TimedOut.into())
                }
                Err(e) => return Err(e),
            }
        }
        self.recv_bounded_from(frame, false)
    }
}

/// A message-preserving socket (datagram or seqpacket) carrying one
/// message per datagram.
///
/// A small message is sent with one plain `send` from a staging buffer, and
/// every message is received with one plain `recv` straight into the
/// frame: `sendmsg`/`recvmsg` with separate header and payload iovecs are
/// measurably slower than the bare floor's `send`/`recv` on the same CPU.
pub(crate) struct DatagramWire {
    fd: OwnedFd,
    /// The receive timeout set on `fd` (`SO_RCVTIMEO`).
    armed: Option<Duration>,
    /// Staging for small messages, both ways.
    small: Box<[u8]>,
    /// Server side: how long the peer may take to make room for a reply
    /// ([`Wire::bound`]; a datagram arrives whole, so reads need none).
    limit: Option<Duration>,
}

impl DatagramWire {
    /// A wire over the connected socket `fd`.
    pub(crate) fn new(fd: OwnedFd) -> DatagramWire {
        DatagramWire {
            fd,
            armed: None,
            small: vec![0; SMALL].into_boxed_slice(),
            limit: None,
        }
    }
}

impl Wire for DatagramWire {
    fn send_now(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<bool> {
        let n = HEAD + data.len();
        if n > self.small.len() {
            return Err(io::ErrorKind::InvalidInput.into());
        }
        self.small[..HEAD].copy_from_slice(head);
        self.small[HEAD..n].copy_from_slice(data);
        Ok(oslayer::socket::send_now(self.fd.as_fd(), &self.small[..n])?.is_some())
    }

    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        let n = HEAD + data.len();
        if n <= self.small.len() {
            self.small[..HEAD].copy_from_slice(head);
            self.small[HEAD..n].copy_from_slice(data);
            match self.limit {
                Some(limit) => {
                    oslayer::socket::send_all_within(self.fd.as_fd(), &[&self.small[..n]], limit)
                }
                None => oslayer::socket::send_bytes(self.fd.as_fd(), &self.small[..n]).map(|_| ()),
            }
        } else {
            match self.limit {
                Some(limit) => {
                    oslayer::socket::send_all_within(self.fd.as_fd(), &[head, data], limit)
                }
                None => {
                    oslayer::socket::send_parts(self.fd.as_fd(), &[head, data], &[]).map(|_| ())
                }
            }
        }
    }

    fn bound(&mut self, limit: Duration) -> io::Result<()> {
        self.limit = Some(limit);
        Ok(())
    }

    fn recv(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        // The full length comes back even when truncated (MSG_TRUNC).
        match oslayer::socket::recv_bytes(
            self.fd.as_fd(),
            frame,
            oslayer::socket::RecvFlags::empty(),
        )? {
            0 => Ok(None),
            n if n < HEAD => Err(io::Error::new(io::ErrorKind::InvalidData, "short message")),
            n if n > frame.len() => Err(too_long()),
            n => Ok(Some(n - HEAD)),
        }
    }

    fn recv_timeout(&mut self, frame: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        if self.armed != Some(timeout) {
            oslayer::socket::set_recv_timeout(self.fd.as_fd(), Some(timeout))?;
            self.armed = Some(timeout);
        }
        match self.recv(frame) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::ErrorKind::TimedOut.into()),
            got => got,
        }
    }

    fn quick_timeout(&self) -> bool {
        true
    }

    fn poll_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }

    /// One `recv` with `MSG_DONTWAIT`, not a `poll` and a `recv`.
    fn recv_lent_now(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        match oslayer::socket::recv_bytes(
            self.fd.as_fd(),
            frame,
            oslayer::socket::RecvFlags::DONTWAIT,
        ) {
            Ok(0) => Ok(None),
            Ok(n) if n < HEAD => Err(io::Error::new(io::ErrorKind::InvalidData, "short message")),
            Ok(n) if n > frame.len() => Err(too_long()),
            Ok(n) => Ok(Some(n - HEAD)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Err(io::ErrorKind::TimedOut.into()),
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client's end and a server's end of a pipe pair's request
    /// direction (the reply direction is a pipe nobody writes).
    fn pipe_pair() -> (StreamWire, StreamWire) {
        let (c2s_r, c2s_w) = oslayer::pipe::pipe().expect("pipe");
        let (s2c_r, s2c_w) = oslayer::pipe::pipe().expect("pipe");
        let client = StreamWire::pipes(s2c_r, c2s_w, Packets::Send).expect("client");
        let server = StreamWire::pipes(c2s_r, s2c_w, Packets::Receive).expect("server");
        (client, server)
    }

    fn poke(server: &StreamWire) {
        let tx = oslayer::pipe::open_writer(server.rx.as_fd()).expect("writer");
        oslayer::pipe::set_packet_mode(tx.as_fd()).expect("packets");
        oslayer::fd::write_all(tx.as_fd(), &[&[0]]).expect("poke");
    }

    #[test]
    fn a_poke_between_messages_is_a_time_out_and_inside_one_is_skipped() {
        let (mut client, mut server) = pipe_pair();
        let mut frame = vec![0u8; HEAD + 3 * 4096];
        poke(&server);
        let got = server.recv_timeout(&mut frame, Duration::from_secs(5));
        assert_eq!(got.map_err(|e| e.kind()), Err(io::ErrorKind::TimedOut));
        // A message whose last packet would be one byte: none is.
        let data: Vec<u8> = (0..2 * 4096 + 1 - HEAD).map(|i| i as u8).collect();
        assert_eq!((HEAD + data.len()) % 4096, 1);
        let mut bytes = head(7, data.len()).to_vec();
        bytes.extend_from_slice(&data);
        // The packets the client sends, each followed by a poke.
        let mut sizes = Vec::new();
        let mut at = 0;
        client.send(&head(7, data.len()), &data).expect("send");
        let mut probe = vec![0u8; 4096];
        while at < bytes.len() {
            let n = oslayer::fd::read_some(server.rx.as_fd(), &mut probe).expect("read");
            sizes.push(n);
            at += n;
        }
        assert_eq!(sizes, [4096, 4095, 2]);
        // Again, the same packets with pokes between them.
        let tx = client.tx.as_ref().expect("tx").as_fd();
        let mut at = 0;
        for n in sizes {
            oslayer::fd::write_all(tx, &[&bytes[at..at + n]]).expect("packet");
            poke(&server);
            at += n;
        }
        let len = server
            .recv(&mut frame)
            .expect("receive")
            .expect("a message");
        assert_eq!(frame_head(&frame), (7, data.len()));
        assert_eq!(&frame[HEAD..HEAD + len], &data[..]);
    }

    #[test]
    fn a_bounded_pipe_keeps_a_message_begun_and_never_waits_for_its_rest() {
        let (client, mut server) = pipe_pair();
        server.bound(Duration::from_millis(30)).expect("bound");
        let mut frame = vec![0u8; HEAD + 3 * 4096];
        let data: Vec<u8> = (0..6000u32).map(|i| i as u8).collect();
        let mut bytes = head(9, data.len()).to_vec();
        bytes.extend_from_slice(&data);
        let tx = client.tx.as_ref().expect("tx").as_fd();
        // The first packet only: the server takes it and returns.
        oslayer::fd::write_all(tx, &[&bytes[..4096]]).expect("packet");
        let got = server.recv(&mut frame).map_err(|e| e.kind());
        assert_eq!(got, Err(io::ErrorKind::WouldBlock));
        assert!(!server.overdue(Instant::now()));
        assert!(server.overdue(Instant::now() + Duration::from_millis(31)));
        // The rest comes: the message is whole.
        oslayer::fd::write_all(tx, &[&bytes[4096..]]).expect("packet");
        let len = server.recv(&mut frame).expect("receive").expect("message");
        assert_eq!(frame_head(&frame), (9, data.len()));
        assert_eq!(&frame[HEAD..HEAD + len], &data[..]);
        assert!(!server.overdue(Instant::now() + Duration::from_secs(1)));
    }

    #[test]
    fn a_single_clients_message_is_waited_for_only_until_the_poker_ends_the_wait() {
        let (client, mut server) = pipe_pair();
        // Long enough that a loaded machine (CI, two CPUs) does not delay
        // the writer's 5 ms past it: at 50 ms it did, about once in 30.
        let tick = Duration::from_millis(200);
        server.bound(tick * 10).expect("bound");
        let mut frame = vec![0u8; HEAD + 3 * 4096];
        let data: Vec<u8> = (0..6000u32).map(|i| i as u8).collect();
        let mut bytes = head(9, data.len()).to_vec();
        bytes.extend_from_slice(&data);
        let tx = client.tx.as_ref().expect("tx").try_clone().expect("dup");
        // The rest comes while the server waits: one receive, the message
        // whole, no clock left running.
        oslayer::fd::write_all(tx.as_fd(), &[&bytes[..4096]]).expect("packet");
        let rest = bytes[4096..].to_vec();
        let writer = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(5));
            oslayer::fd::write_all(tx.as_fd(), &[&rest]).expect("packet");
            tx
        });
        let len = server.recv_timeout(&mut frame, tick).expect("receive");
        assert_eq!(len, Some(data.len()));
        assert_eq!(&frame[HEAD..HEAD + data.len()], &data[..]);
        assert!(!server.overdue(Instant::now() + Duration::from_secs(1)));
        let tx = writer.join().expect("writer");
        // A peer gone silent inside a message: the poker ends the wait
        // (within two ticks, and well within the peer's limit), the part
        // is kept, and its clock runs.
        oslayer::fd::write_all(tx.as_fd(), &[&bytes[..4096]]).expect("packet");
        let t0 = Instant::now();
        let got = server.recv_timeout(&mut frame, tick).map_err(|e| e.kind());
        assert_eq!(got, Err(io::ErrorKind::WouldBlock));
        assert!(t0.elapsed() < tick * 8, "held {:?}", t0.elapsed());
        assert!(server.overdue(Instant::now() + tick * 10));
        // The rest comes: the message is whole.
        oslayer::fd::write_all(tx.as_fd(), &[&bytes[4096..]]).expect("packet");
        let len = server.recv_timeout(&mut frame, tick).expect("receive");
        assert_eq!(len, Some(data.len()));
        assert_eq!(&frame[HEAD..HEAD + data.len()], &data[..]);
    }

    #[test]
    fn the_read_buffer_grows_to_a_staged_message_and_keeps_what_follows() {
        let (a, b) = oslayer::socket::socketpair(oslayer::socket::SocketType::STREAM).unwrap();
        let (mut tx, mut rx) = (StreamWire::socket(a), StreamWire::socket(b));
        assert_eq!(rx.inb.len(), SMALL, "a new connection pays for SMALL only");
        let mut frame = vec![0u8; HEAD + 64 * 1024];
        let sizes = [4096usize, 3, 4096, 64 * 1024, 5];
        // All sent before any is read: the grown buffer must keep the
        // bytes of the messages after the one that made it grow.
        let sent: Vec<Vec<u8>> = sizes
            .iter()
            .enumerate()
            .map(|(k, &n)| (0..n).map(|i| (i * 7 + k) as u8).collect())
            .collect();
        let writer = std::thread::spawn(move || {
            for (k, d) in sent.iter().enumerate() {
                tx.send(&head(k as u32, d.len()), d).expect("send");
            }
            sent
        });
        let mut got = Vec::new();
        for _ in sizes {
            let len = rx.recv(&mut frame).expect("recv").expect("a message");
            got.push((frame_head(&frame).0, frame[HEAD..HEAD + len].to_vec()));
            assert!(rx.inb.len() <= STAGED_MAX);
        }
        let sent = writer.join().expect("writer");
        for (k, (code, data)) in got.into_iter().enumerate() {
            assert_eq!((code, &data), (k as u32, &sent[k]), "message {k}");
        }
        // Grown for 4 KiB messages (to read each whole), not past the
        // limit for 64 KiB ones.
        assert_eq!(
            rx.inb.len(),
            (HEAD + 4096).next_power_of_two().min(STAGED_MAX)
        );
    }
}
