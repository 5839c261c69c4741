//! `eventfd`: the payload in shared memory, the notification by eventfd.
//!
//! Per connection the server makes one sealed memfd holding a message area
//! per direction (client to server first, then server to client; each starts
//! on its own page) and two eventfds, one per receiver, and passes all three
//! to the client. An area is the 8-byte wire header (code, length) followed
//! by room for `max_msg` payload bytes.
//!
//! - `send` copies the header and payload into the peer-bound area, then
//!   adds 1 to the peer's eventfd;
//! - `recv` reads its own eventfd (blocking while it is zero), then copies
//!   the message out. The length comes from memory the peer can write at
//!   any time, so it is read once and bounded by `max_msg`: a peer can send
//!   garbage, never make us read outside the area.
//!
//! The eventfds have counter semantics (no `EFD_SEMAPHORE`): the protocol is
//! request then reply, so at most one message is outstanding per direction
//! and the count's low 32 bits are 0 or 1; a read takes it back to 0. A
//! misbehaving peer that posts twice is read once (the area holds one
//! message anyway). The high bits count *pokes*: a wait with a time-out
//! blocks in a plain `read` and the process's poker thread (`poker.rs`)
//! adds [`poker::POKE`] once the wait has lasted a tick; a read that finds
//! only pokes is a time-out. No `poll` per message.
//!
//! The syscalls order the copies: the writer's stores happen before its
//! `write(2)` to the eventfd, the reader's loads after its `read(2)`, and
//! the kernel's eventfd lock pairs the two (the fences below say so to the
//! compiler as well).
//!
//! Liveness: an eventfd says nothing about who holds it, so `EOF_ON_DEATH`
//! is false: a waiting client looks at the rendezvous session socket each
//! time its wait times out, and the server drops a connection whose session
//! hangs up.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::transport::poker::{self, Target};
use crate::transport::rendezvous::Family;
use crate::transport::wire::{parse_head, too_long, ConnCtx, Mechanism, Wire, HEAD};
use crate::transport::Options;
use oslayer::mman::Mapping;

const PAGE: usize = 4096;
/// Largest `max_msg` a client accepts from a server (the header's length
/// field is 32 bits).
const MAX_AREA_MSG: usize = u32::MAX as usize - PAGE;

/// Eventfd notification, shared-memory payload.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventFd;

/// Bytes of one direction's area for `max_msg`.
fn area_len(max_msg: usize) -> usize {
    (HEAD + max_msg).div_ceil(PAGE) * PAGE
}

/// One end of an eventfd connection.
pub(crate) struct EventWire {
    map: Mapping,
    /// Offset of the area we receive in.
    rx_off: usize,
    /// Offset of the area we send in.
    tx_off: usize,
    /// Our eventfd: the peer adds to it when it sent.
    rx: OwnedFd,
    /// The peer's eventfd.
    tx: OwnedFd,
    /// Largest payload an area holds.
    max: usize,
    /// Our registration with the poker, made at the first timed receive.
    poke: Option<Arc<Target>>,
}

impl EventWire {
    /// Checks that both areas for `max` fit the mapping.
    fn new(
        map: Mapping,
        c2s_is_rx: bool,
        rx: OwnedFd,
        tx: OwnedFd,
        max: usize,
    ) -> io::Result<EventWire> {
        let area = area_len(max);
        if map.len() < 2 * area {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("shared memory is {} bytes, {} needed", map.len(), 2 * area),
            ));
        }
        let (rx_off, tx_off) = if c2s_is_rx { (0, area) } else { (area, 0) };
        Ok(EventWire {
            map,
            rx_off,
            tx_off,
            rx,
            tx,
            max,
            poke: None,
        })
    }
}

/// The message count in an eventfd counter (the high bits count pokes).
const MESSAGES: u64 = poker::POKE - 1;

impl EventWire {
    /// Copies the message in our area to `frame`, once its eventfd said it
    /// is there.
    fn take(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        fence(Ordering::Acquire);
        // The area at rx_off holds HEAD + max bytes inside the mapping
        // (checked in `new`).
        let mut head = [0u8; HEAD];
        self.map.read_at(self.rx_off, &mut head);
        let (_, len) = parse_head(&head);
        if len > self.max || HEAD + len > frame.len() {
            return Err(too_long());
        }
        // len <= max, so HEAD + len bytes lie inside the area.
        self.map.read_at(self.rx_off, &mut frame[..HEAD + len]);
        Ok(Some(len))
    }
}

impl Wire for EventWire {
    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        if data.len() > self.max {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "message longer than the channel maximum",
            ));
        }
        // The area at tx_off spans HEAD + max bytes inside the mapping
        // (checked in `new`) and data.len() <= max. The peer reads the area
        // only after our eventfd write; if it misbehaves it only corrupts
        // the message it receives.
        self.map.write_at(self.tx_off, head);
        self.map.write_at(self.tx_off + HEAD, data);
        fence(Ordering::Release);
        oslayer::eventfd::write(self.tx.as_fd(), 1)
    }

    fn recv(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        // Pokes alone are not a message: wait on.
        while oslayer::eventfd::read(self.rx.as_fd())? & MESSAGES == 0 {}
        self.take(frame)
    }

    fn recv_timeout(&mut self, frame: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        if self.poke.is_none() {
            self.poke = Some(poker::register(&self.rx, timeout)?);
        }
        let poke = self.poke.as_deref().expect("registered above");
        poke.begin();
        let got = oslayer::eventfd::read(self.rx.as_fd());
        poke.end();
        if got? & MESSAGES == 0 {
            return Err(io::ErrorKind::TimedOut.into());
        }
        self.take(frame)
    }

    fn poll_fd(&self) -> BorrowedFd<'_> {
        self.rx.as_fd()
    }
}

impl Mechanism for EventFd {
    type W = EventWire;
    const FAMILY: Family = Family::Eventfd;
    const EOF_ON_DEATH: bool = false;

    fn server_side(
        &self,
        _ctx: ConnCtx<'_>,
        opts: &Options,
    ) -> io::Result<(EventWire, Vec<OwnedFd>, Vec<u8>)> {
        let max = opts.max_msg;
        let len = 2 * area_len(max);
        let mem = oslayer::mman::memfd("msgpass-eventfd", len)?;
        let map = Mapping::new(mem.as_fd(), len)?;
        let to_server = oslayer::eventfd::new()?;
        let to_client = oslayer::eventfd::new()?;
        let theirs = vec![mem, to_server.try_clone()?, to_client.try_clone()?];
        let wire = EventWire::new(map, true, to_server, to_client, max)?;
        Ok((wire, theirs, (max as u64).to_le_bytes().to_vec()))
    }

    fn client_side(
        &self,
        fds: Vec<OwnedFd>,
        extra: &[u8],
        _opts: &Options,
    ) -> io::Result<EventWire> {
        let bad = |what: String| io::Error::new(io::ErrorKind::InvalidData, what);
        let [mem, to_server, to_client]: [OwnedFd; 3] = fds
            .try_into()
            .map_err(|_| bad("expected a memfd and 2 eventfds".into()))?;
        let max: [u8; 8] = extra
            .try_into()
            .map_err(|_| bad("hello lacks the message size".into()))?;
        let max = u64::from_le_bytes(max);
        if max > MAX_AREA_MSG as u64 {
            return Err(bad(format!("message size {max} out of range")));
        }
        let max = max as usize;
        let len = 2 * area_len(max);
        let map = oslayer::mman::map_sealed(mem.as_fd(), len, "eventfd")?;
        EventWire::new(map, false, to_client, to_server, max)
    }
}
