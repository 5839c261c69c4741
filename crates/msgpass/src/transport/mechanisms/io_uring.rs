//! `io-uring`: the payload in shared memory, the notification by
//! `IORING_OP_MSG_RING` from one io_uring to another.
//!
//! Each side of a connection owns (creates and maps) one small ring
//! (`RING_ENTRIES` submission entries) and receives on it; it holds the
//! peer's ring only as a descriptor, the target of its `MSG_RING`
//! submissions. Nobody maps a ring another process made, so a peer can
//! never make us index outside our own ring.
//!
//! Ring descriptors cannot travel with SCM_RIGHTS: since Linux 6.7 (and in
//! the stable kernels it was backported to) `sendmsg` refuses io_uring
//! files with `EINVAL`. Each side therefore passes a pidfd of itself and
//! the number of its ring descriptor, and the peer copies the descriptor
//! with `pidfd_getfd(2)`. That needs ptrace access to the peer: the same
//! user (Yama's `kernel.yama.ptrace_scope` above 0 restricts it) or
//! `CAP_SYS_PTRACE`; without it, connecting fails with a clear error.
//!
//! Per connection the server makes its ring, the connection's message areas
//! (one sealed memfd, see `areas.rs`) and a seqpacket socket pair, and
//! passes the memfd, its pidfd and one end of the pair over the rendezvous,
//! with its ring's number in the hello's extra bytes. The client takes the
//! server's ring, makes its own, and sends its pidfd and ring number back
//! over the pair before its first request; the server takes the client's
//! ring when that request arrives.
//!
//! - `send` copies the message into the peer-bound area, then submits one
//!   `MSG_RING` entry on its own ring that posts a completion into the
//!   peer's ring: `user_data` is the 8-byte wire header (code, length),
//!   `res` the length again. The entry is flagged `IOSQE_CQE_SKIP_SUCCESS`,
//!   so a successful post leaves nothing on the sender's ring; a failed one
//!   leaves an error completion tagged `OWN_TAG` that the next `recv`
//!   reports.
//! - `recv` takes the next completion from its ring (waiting in
//!   `io_uring_enter` with `IORING_ENTER_GETEVENTS`, `min_complete` 1, when
//!   there is none) and copies the message out of the area (its length
//!   bounded by `max_msg`), which must match the completion's header.
//!   In place (`call_with`, `reply_with`, and the server's request) the
//!   payload stays in the area and only the header is taken
//!   (`Wire::recv_lent`); `Wire::send_in_place` announces a payload built
//!   there.
//!
//! The syscalls order the copies: the writer's stores happen before its
//! `io_uring_enter`, which publishes the completion with a release store of
//! the peer's completion tail; the reader loads that tail with acquire
//! before reading the area.
//!
//! Waiting: a ring descriptor polls readable while its completion queue
//! holds entries, so the wire framework's poll loop serves many rings, and a
//! waiting client polls its ring together with the rendezvous session
//! socket: a ring says nothing about who holds it (`EOF_ON_DEATH` is
//! false), the session's hang-up tells a dead peer at once.
//!
//! A kernel without io_uring, with io_uring disabled, or without
//! `IORING_OP_MSG_RING` (before 5.18) makes `Channel::create` and
//! `Connection::open` fail with a clear error (probed once per process).

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use ::io_uring::{cqueue, opcode, squeue, types, IoUring as Ring, Probe};

use oslayer::socket::{RecvFlags, SocketType};

use crate::error::{Error, Result};
use crate::transport::api::{ClientConnection, Options, ServerChannel, Transport};
use crate::transport::serve::mechanism::WireTransport;
use crate::transport::serve::mechanism::{ConnCtx, Mechanism};
use crate::transport::wire::areas::Areas;
use crate::transport::wire::framing::{parse_head, Wire, HEAD};
use crate::transport::wire::rendezvous::Family;

const PAGE: usize = 4096;
/// Submission entries of each ring (the completion queue has twice as
/// many). One message is outstanding per direction at most: small rings
/// keep 64 connections cheap.
const RING_ENTRIES: u32 = 8;
/// Largest payload: the length travels in a completion's `res`, an `i32`.
pub(crate) const MAX_AREA_MSG: usize = i32::MAX as usize - PAGE;
/// `user_data` of our own `MSG_RING` submissions: only a failed one leaves
/// a completion (with a negative `res`) on our ring.
const OWN_TAG: u64 = u64::MAX;
/// What a kernel without `IORING_OP_MSG_RING` makes us say.
const UNSUPPORTED: &str = "io-uring: IORING_OP_MSG_RING not supported by this kernel";

/// `MSG_RING` notification between two io_urings, shared-memory payload.
#[derive(Debug, Clone, Copy, Default)]
pub struct IoUring;

/// Makes one of our rings.
fn new_ring() -> io::Result<Ring> {
    Ring::builder().dontfork().build(RING_ENTRIES)
}

/// Checks once per process that this kernel lets us make rings and has
/// `IORING_OP_MSG_RING`; the error says which is missing.
fn check_support() -> Result<()> {
    /// The outcome of the probe: what is missing and the errno.
    type Probed = std::result::Result<(), (&'static str, i32)>;
    static SUPPORT: OnceLock<Probed> = OnceLock::new();
    let probed = SUPPORT.get_or_init(|| {
        let errno = |e: io::Error| e.raw_os_error().unwrap_or(libc::EINVAL);
        let ring = new_ring().map_err(|e| {
            (
                "io-uring: cannot create an io_uring (see /proc/sys/kernel/io_uring_disabled)",
                errno(e),
            )
        })?;
        let mut probe = Probe::new();
        ring.submitter()
            .register_probe(&mut probe)
            .map_err(|e| (UNSUPPORTED, errno(e)))?;
        if probe.is_supported(opcode::MsgRingData::CODE) {
            Ok(())
        } else {
            Err((UNSUPPORTED, libc::EOPNOTSUPP))
        }
    });
    probed
        .as_ref()
        .map_err(|&(what, code)| Error::io(what, io::Error::from_raw_os_error(code)))
        .copied()
}

/// An `InvalidData` error saying `what`.
fn bad(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// Copies ring descriptor `num` of the process behind `pidfd` (the `peer`,
/// named in errors) into this process.
fn take_ring(pidfd: BorrowedFd<'_>, num: i32, peer: &str) -> io::Result<OwnedFd> {
    oslayer::pidfd::getfd(pidfd, num).map_err(|e| {
        let why = match e.raw_os_error() {
            Some(libc::EPERM) => {
                " (needs ptrace access to it: the same user with \
                 kernel.yama.ptrace_scope 0, or CAP_SYS_PTRACE)"
            }
            _ => "",
        };
        io::Error::new(
            e.kind(),
            format!("take the {peer}'s io_uring with pidfd_getfd: {e}{why}"),
        )
    })
}

/// One end of an io-uring connection.
pub(crate) struct RingWire {
    /// Our ring: the peer's messages arrive on it as completions.
    ring: Ring,
    /// The peer's ring, the target of our `MSG_RING`s (the server takes it
    /// with the first request, see `back`).
    peer: Option<OwnedFd>,
    /// Server only, until the client's ring is taken: the socket the client
    /// sends its pidfd and ring number on.
    back: Option<OwnedFd>,
    areas: Areas,
}

impl RingWire {
    fn new(ring: Ring, peer: Option<OwnedFd>, back: Option<OwnedFd>, areas: Areas) -> RingWire {
        RingWire {
            ring,
            peer,
            back,
            areas,
        }
    }

    /// Server side: takes the client's ring, named by the pidfd and ring
    /// number the client sent over the socket pair before its first
    /// request (so they are there already: their absence is a broken
    /// client, not a reason to wait).
    fn take_peer_ring(&mut self) -> io::Result<OwnedFd> {
        let back = self.back.take().ok_or_else(|| bad("no client ring"))?;
        let mut num = [0u8; 4];
        let got =
            oslayer::socket::recv_parts(back.as_fd(), &mut num, &mut [], RecvFlags::DONTWAIT, true)
                .map_err(|e| bad(format!("client ring descriptor: {e}")))?;
        let [pidfd]: [OwnedFd; 1] = got
            .fds
            .try_into()
            .map_err(|_| bad("expected the client's pidfd"))?;
        if got.len != num.len() {
            return Err(bad("expected the client's ring number"));
        }
        take_ring(pidfd.as_fd(), i32::from_le_bytes(num), "client")
    }

    /// The next completion on our ring, waiting for one if needed, at
    /// most `timeout` (one `io_uring_enter` with a timeout argument; its
    /// expiry is an `ErrorKind::TimedOut` error).
    fn next_completion(&mut self, timeout: Option<Duration>) -> io::Result<cqueue::Entry> {
        let ts = timeout.map(types::Timespec::from);
        loop {
            if let Some(cqe) = self.ring.completion().next() {
                return Ok(cqe);
            }
            let got = match &ts {
                None => self.ring.submit_and_wait(1),
                Some(ts) => self
                    .ring
                    .submitter()
                    .submit_with_args(1, &types::SubmitArgs::new().timespec(ts)),
            };
            match got {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.raw_os_error() == Some(libc::ETIME) => {
                    // Expired, unless a completion raced in.
                    if let Some(cqe) = self.ring.completion().next() {
                        return Ok(cqe);
                    }
                    return Err(io::ErrorKind::TimedOut.into());
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl RingWire {
    /// Announces the message (header `head`) just put in the peer's area:
    /// one `MSG_RING` to the peer's ring.
    fn announce(&mut self, head: &[u8; HEAD]) -> io::Result<()> {
        let peer = self
            .peer
            .as_ref()
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotConnected, "peer ring unknown"))?;
        // The length was bounded by the area (at most MAX_AREA_MSG).
        let len = parse_head(head).1 as i32;
        let sqe = opcode::MsgRingData::new(
            types::Fd(peer.as_raw_fd()),
            len,
            u64::from_le_bytes(*head),
            None,
        )
        .build()
        .flags(squeue::Flags::SKIP_SUCCESS)
        .user_data(OWN_TAG);
        // SAFETY: a MSG_RING data entry carries values only (no buffer the
        // kernel could touch later), and the target descriptor stays open
        // in `self.peer` while the entry is submitted.
        unsafe { self.ring.submission().push(&sqe) }
            .map_err(|_| io::Error::other("io_uring submission queue full"))?;
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits at most `timeout` for the peer's next announcement (taking
    /// the client's ring with its first request, on the server side);
    /// returns it, to be checked against the message ([`matches`]).
    fn announced(&mut self, timeout: Option<Duration>) -> io::Result<cqueue::Entry> {
        let cqe = loop {
            let cqe = self.next_completion(timeout)?;
            if cqe.user_data() != OWN_TAG {
                break cqe;
            }
            if cqe.result() < 0 {
                // Our last MSG_RING failed: the peer never got that message.
                return Err(io::Error::from_raw_os_error(-cqe.result()));
            }
        };
        if self.peer.is_none() {
            self.peer = Some(self.take_peer_ring()?);
        }
        Ok(cqe)
    }

    /// Receives one message, waiting at most `timeout` for it: the header
    /// into `frame`, and the payload too unless `lent` (then it stays in
    /// the area).
    fn recv_within(
        &mut self,
        frame: &mut [u8],
        timeout: Option<Duration>,
        lent: bool,
    ) -> io::Result<Option<usize>> {
        let cqe = self.announced(timeout)?;
        let len = match lent {
            true => self.areas.take_head(frame)?,
            false => self.areas.take(frame)?,
        };
        matches(&cqe, frame, len)?;
        Ok(Some(len))
    }
}

/// The completion repeats the header: a peer whose two disagree (the
/// checked header at the start of `frame`, `len` payload bytes) is broken
/// (or lying).
fn matches(cqe: &cqueue::Entry, frame: &[u8], len: usize) -> io::Result<()> {
    if cqe.user_data().to_le_bytes() != frame[..HEAD] || cqe.result() != len as i32 {
        return Err(bad("completion does not match the message"));
    }
    Ok(())
}

impl Wire for RingWire {
    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        self.areas.put(head, data)?;
        self.announce(head)
    }

    fn recv(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        self.recv_within(frame, None, false)
    }

    fn recv_timeout(&mut self, frame: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        self.recv_within(frame, Some(timeout), false)
    }

    fn poll_fd(&self) -> BorrowedFd<'_> {
        self.ring.as_fd()
    }

    fn recv_lent(
        &mut self,
        frame: &mut [u8],
        timeout: Option<Duration>,
    ) -> io::Result<Option<usize>> {
        self.recv_within(frame, timeout, true)
    }

    /// In place, unless the message was a pulse, copied out at once.
    fn received(&self, len: usize) -> Option<&[u8]> {
        (!self.areas.copied()).then(|| self.areas.received(len))
    }

    /// Not lent while the area holds a pulse the server has not taken.
    fn send_buffer(&mut self, keep: usize) -> Option<&mut [u8]> {
        if !self.areas.room() {
            return None;
        }
        // The lent buffer starts with the message last taken, whose
        // length is `keep`.
        let _ = keep;
        self.areas.lend()
    }

    /// A pulse goes into the area once the server took the last message.
    fn send_now(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<bool> {
        if !self.areas.room() {
            return Ok(false);
        }
        self.send(head, data).map(|()| true)
    }

    fn send_in_place(&mut self, head: &[u8; HEAD]) -> io::Result<()> {
        self.areas.put_head(head)?;
        self.announce(head)
    }
}

impl Mechanism for IoUring {
    type W = RingWire;
    const FAMILY: Family = Family::IoUring;
    const EOF_ON_DEATH: bool = false;

    fn max_msg(&self, requested: usize) -> usize {
        requested.min(MAX_AREA_MSG)
    }

    fn server_side(
        &self,
        _ctx: ConnCtx<'_>,
        opts: &Options,
    ) -> io::Result<(RingWire, Vec<OwnedFd>, Vec<u8>)> {
        let max = opts.max_msg;
        let (mem, areas) = Areas::create("msgpass-io-uring", 0, max)?;
        let ring = new_ring()?;
        let mut extra = (max as u64).to_le_bytes().to_vec();
        extra.extend_from_slice(&ring.as_raw_fd().to_le_bytes());
        let (back, theirs_back) = oslayer::socket::socketpair(SocketType::SEQPACKET)?;
        let wire = RingWire::new(ring, None, Some(back), areas);
        let theirs = vec![mem, oslayer::pidfd::pidfd_self()?, theirs_back];
        Ok((wire, theirs, extra))
    }

    fn client_side(
        &self,
        fds: Vec<OwnedFd>,
        extra: &[u8],
        _opts: &Options,
    ) -> io::Result<RingWire> {
        let [mem, server_pid, back]: [OwnedFd; 3] = fds
            .try_into()
            .map_err(|_| bad("expected a memfd, a pidfd and a socket"))?;
        if extra.len() != 12 {
            return Err(bad("hello lacks the message size and ring number"));
        }
        let (max, num) = extra.split_at(8);
        let max = u64::from_le_bytes(max.try_into().map_err(|_| bad("message size"))?);
        let num = i32::from_le_bytes(num.try_into().map_err(|_| bad("ring number"))?);
        if max > MAX_AREA_MSG as u64 {
            return Err(bad(format!("message size {max} out of range")));
        }
        let areas = Areas::adopt(mem.as_fd(), "io-uring", 0, max)?;
        let server_ring = take_ring(server_pid.as_fd(), num, "server")?;
        let ring = new_ring()?;
        // The server takes our ring with this, before our first request.
        let me = oslayer::pidfd::pidfd_self()?;
        oslayer::socket::send_parts(
            back.as_fd(),
            &[&ring.as_raw_fd().to_le_bytes()],
            &[me.as_fd()],
        )?;
        Ok(RingWire::new(ring, Some(server_ring), None, areas))
    }
}

/// The `io-uring` transport: the wire framework over [`IoUring`], after a
/// check that the kernel supports it.
#[derive(Debug, Clone)]
pub(crate) struct IoUringTransport(WireTransport<IoUring>);

impl IoUringTransport {
    /// The transport the table's `io-uring` entry describes: its `name`
    /// and one-way support.
    pub(crate) fn new(name: &'static str, oneway: bool) -> IoUringTransport {
        IoUringTransport(WireTransport {
            mech: IoUring,
            name,
            oneway,
        })
    }
}

impl Transport for IoUringTransport {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        check_support()?;
        self.0.serve(path, opts)
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        check_support()?;
        self.0.connect(path, opts)
    }

    fn max_msg(&self, requested: usize) -> usize {
        self.0.max_msg(requested)
    }
}
