//! The shared memory of a connection whose messages are copied through
//! memory and announced through a kernel object (an eventfd, an io_uring
//! `MSG_RING` completion, a real-time signal).
//!
//! One sealed memfd per connection, made by the server and passed to the
//! client: an optional control part (a whole number of pages, for the
//! mechanism's own words), then one message area per direction, client to
//! server first, each starting on its own page. An area is the 8-byte wire
//! header (code, length) followed by room for `max` payload bytes.
//!
//! The peer can write its area at any time, so nothing read from it is
//! trusted, and it is only ever touched through the atomic copies of
//! `transport::shared`, never through a reference (see that module for
//! the rules): the header is copied once into private memory and checked
//! there (the length bounded by `max`), so a peer can send garbage,
//! never make us read or write outside the mapping. At most one
//! message is outstanding per direction (request, then reply), and the
//! announcing system call orders the copies: our stores happen before our
//! announcement, the peer's loads after it sees it (the fences say so to
//! the compiler as well).
//!
//! In place ([`Areas::lend`], [`Areas::put_head`], [`Areas::received`]):
//! the in-place calls lend a private buffer, one per side of a
//! connection. A message received for them is copied into it once its
//! header is checked, so what the application reads cannot change under
//! it; a message built in it is copied into the area the peer receives
//! in when it is sent. A server's reply buffer is the same buffer, so it
//! starts with the request, as the API promises.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{fence, Ordering};

use crate::transport::mem::shared;
use crate::transport::wire::framing::{parse_head, too_long, HEAD};
use oslayer::mman::{self, Mapping};

const PAGE: usize = 4096;

/// Largest `max` a client accepts from a server (the header's length field
/// is 32 bits).
pub(crate) const MAX_AREA_MSG: usize = u32::MAX as usize - PAGE;

/// Bytes of one direction's area for `max` payload bytes.
fn area_len(max: usize) -> usize {
    (HEAD + max).div_ceil(PAGE) * PAGE
}

/// Bytes of a connection's memory: `control` bytes, then both areas.
fn mem_len(control: usize, max: usize) -> usize {
    control + 2 * area_len(max)
}

/// The code word of the client-to-server area's header once the server
/// has taken the message there (and in a new connection's memory): the
/// client may write the next one. No message has this code (0xffff_ffff
/// is the wire's one-way CPU hint, which these transports never send).
const TAKEN: u32 = u32::MAX;

/// One side's view of a connection's memory.
pub(crate) struct Areas {
    map: Mapping,
    /// Offset of the area we receive in.
    rx: usize,
    /// Offset of the area we send in.
    tx: usize,
    /// Largest payload an area holds.
    max: usize,
    /// The server's view (we receive in the client-to-server area).
    server: bool,
    /// The message last taken was a pulse, copied out (the client may
    /// write the next one at once): not to be read in place.
    copied: bool,
    /// Private memory the in-place calls lend: the payload of the message
    /// last taken by [`Areas::take_head`], and the next message built.
    /// Grown on demand, up to `max`.
    buf: Vec<u8>,
}

impl Areas {
    /// Server side: makes the memory (`control` bytes, a multiple of the
    /// page, then the areas for `max`), returning the memfd to pass to the
    /// client and our view, receiving client-to-server.
    pub(crate) fn create(name: &str, control: usize, max: usize) -> io::Result<(OwnedFd, Areas)> {
        let len = mem_len(control, max);
        let mem = mman::memfd(name, len)?;
        let map = Mapping::new(mem.as_fd(), len)?;
        let areas = Areas::new(map, control, max, true);
        areas
            .map
            .atomic_u32(areas.rx)
            .store(TAKEN, Ordering::Release);
        Ok((mem, areas))
    }

    /// Client side: maps the memfd the server passed (checked: sealed and
    /// large enough for `max`, which is bounded), receiving
    /// server-to-client.
    pub(crate) fn adopt(
        mem: BorrowedFd<'_>,
        what: &str,
        control: usize,
        max: u64,
    ) -> io::Result<Areas> {
        if max > MAX_AREA_MSG as u64 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("message size {max} out of range"),
            ));
        }
        let max = max as usize;
        let map = mman::map_sealed(mem, mem_len(control, max), what)?;
        Ok(Areas::new(map, control, max, false))
    }

    fn new(map: Mapping, control: usize, max: usize, c2s_is_rx: bool) -> Areas {
        let (c2s, s2c) = (control, control + area_len(max));
        let (rx, tx) = if c2s_is_rx { (c2s, s2c) } else { (s2c, c2s) };
        Areas {
            map,
            rx,
            tx,
            max,
            server: c2s_is_rx,
            copied: false,
            buf: Vec::new(),
        }
    }

    /// Client side: true when the server has taken the last message we
    /// sent, so that the area is ours to write again. After a request it
    /// always has (it answered); after a pulse, once it took it.
    pub(crate) fn room(&self) -> bool {
        self.server || self.map.atomic_u32(self.tx).load(Ordering::Acquire) == TAKEN
    }

    /// Server side: the message in our area is taken (its payload read, or
    /// the client waiting for our reply): the client may write the next.
    pub(crate) fn mark_taken(&self) {
        if self.server {
            self.map.atomic_u32(self.rx).store(TAKEN, Ordering::Release);
        }
    }

    /// True when the message last taken was copied out (a pulse): read it
    /// from the frame, not in place.
    pub(crate) fn copied(&self) -> bool {
        self.copied
    }

    /// The mapping, whose first `control` bytes (given when the memory was
    /// made) are the mechanism's own.
    pub(crate) fn control(&self) -> &Mapping {
        &self.map
    }

    /// Copies a message into the area the peer receives in, before it is
    /// announced.
    pub(crate) fn put(&self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        if data.len() > self.max {
            return Err(over_max());
        }
        if !self.room() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        // The peer reads the area only after our announcement; if it
        // misbehaves it only corrupts the message it receives.
        shared::store(&self.map, self.tx + HEAD, data);
        self.publish(head);
        Ok(())
    }

    /// Copies the message built in [`Areas::lend`]'s buffer into the area
    /// the peer receives in, under `head`, before it is announced. A
    /// length over the maximum (or over what was lent) is refused.
    pub(crate) fn put_head(&self, head: &[u8; HEAD]) -> io::Result<()> {
        let len = parse_head(head).1;
        if len > self.max || len > self.buf.len() {
            return Err(over_max());
        }
        if !self.room() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        shared::store(&self.map, self.tx + HEAD, &self.buf[..len]);
        self.publish(head);
        Ok(())
    }

    /// Writes `head` over the area the peer receives in, whose payload is
    /// in place: the message is ready to announce.
    fn publish(&self, head: &[u8; HEAD]) {
        shared::store(&self.map, self.tx, head);
        fence(Ordering::Release);
    }

    /// A private buffer of `max` bytes to build the next message in
    /// (then [`Areas::put_head`]), starting with the payload of the
    /// message last taken by [`Areas::take_head`]: a server builds its
    /// reply over its request. `None` when the memory cannot be had.
    pub(crate) fn lend(&mut self) -> Option<&mut [u8]> {
        if !shared::grow(&mut self.buf, self.max) {
            return None;
        }
        Some(&mut self.buf[..self.max])
    }

    /// The first `len` payload bytes of the message last taken by
    /// [`Areas::take_head`], which copied them into private memory once
    /// their length was checked.
    ///
    /// # Panics
    /// When `len` is more than was taken (a caller's bug).
    pub(crate) fn received(&self, len: usize) -> &[u8] {
        &self.buf[..len]
    }

    /// The header of the message announced in our area: (code, length),
    /// the length read once and bounded by the maximum.
    pub(crate) fn head(&self) -> io::Result<(u32, usize)> {
        fence(Ordering::Acquire);
        let mut head = [0u8; HEAD];
        shared::load(&self.map, self.rx, &mut head);
        let (code, len) = parse_head(&head);
        if len > self.max {
            return Err(too_long());
        }
        Ok((code, len))
    }

    /// Copies the first `out.len()` payload bytes (at most the maximum) of
    /// the message in our area to `out`.
    pub(crate) fn take_payload(&self, out: &mut [u8]) {
        let n = out.len().min(self.max);
        shared::load(&self.map, self.rx + HEAD, &mut out[..n]);
    }

    /// Copies the message announced in our area, header and payload, to
    /// `frame`, as a wire receives it; returns the payload length.
    pub(crate) fn take(&mut self, frame: &mut [u8]) -> io::Result<usize> {
        self.take_into(frame, false)
    }

    /// Copies the header of the message announced in our area, as checked
    /// by [`Areas::head`], to `frame[..HEAD]`, and its payload to our
    /// private buffer ([`Areas::received`]; a pulse's to the frame);
    /// returns the payload length.
    pub(crate) fn take_head(&mut self, frame: &mut [u8]) -> io::Result<usize> {
        self.take_into(frame, true)
    }

    /// [`Areas::take`] (`lent` false) or [`Areas::take_head`] (true): the
    /// header as checked goes to the frame, not as the peer may have
    /// rewritten it since; the payload is copied once, before a server
    /// marks the message taken (a client may write its next one then).
    fn take_into(&mut self, frame: &mut [u8], lent: bool) -> io::Result<usize> {
        let (code, len) = self.head()?;
        frame[..HEAD].copy_from_slice(&crate::transport::wire::framing::head(code, len));
        self.copied = self.server && crate::pulse::is_pulse(code);
        let payload = if self.copied {
            let n = len.min(frame.len() - HEAD);
            self.take_payload(&mut frame[HEAD..HEAD + n]);
            Ok(())
        } else if lent {
            self.keep_payload(len)
        } else if HEAD + len > frame.len() {
            Err(too_long())
        } else {
            self.take_payload(&mut frame[HEAD..HEAD + len]);
            Ok(())
        };
        self.mark_taken();
        payload.map(|()| len)
    }

    /// Copies the first `len` payload bytes (`len` as checked by
    /// [`Areas::head`]) of the message announced in our area into our
    /// private buffer, for [`Areas::received`].
    pub(crate) fn keep_payload(&mut self, len: usize) -> io::Result<()> {
        if len > self.max || !shared::grow(&mut self.buf, len) {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        shared::load(&self.map, self.rx + HEAD, &mut self.buf[..len]);
        Ok(())
    }
}

/// The error for a message longer than the areas hold.
fn over_max() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "message longer than the channel maximum",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_crosses_from_one_side_to_the_other() {
        let (mem, mut server) = Areas::create("areas-test", PAGE, 100).expect("create");
        let client = Areas::adopt(mem.as_fd(), "areas-test", PAGE, 100).expect("adopt");
        client
            .put(&crate::transport::wire::framing::head(7, 5), b"hello")
            .expect("put");
        let mut frame = [0u8; HEAD + 100];
        assert_eq!(server.take(&mut frame).expect("take"), 5);
        assert_eq!(&frame[HEAD..HEAD + 5], b"hello");
        assert_eq!(parse_head(frame[..HEAD].try_into().expect("8")), (7, 5));
        server
            .put(&crate::transport::wire::framing::head(0, 2), b"ok")
            .expect("put");
        assert_eq!(client.head().expect("head"), (0, 2));
        let mut out = [0u8; 2];
        client.take_payload(&mut out);
        assert_eq!(&out, b"ok");
    }

    #[test]
    fn a_peer_cannot_claim_more_than_the_maximum() {
        let (mem, server) = Areas::create("areas-test", 0, 16).expect("create");
        let client = Areas::adopt(mem.as_fd(), "areas-test", 0, 16).expect("adopt");
        assert!(client
            .put(&crate::transport::wire::framing::head(1, 17), &[0; 17])
            .is_err());
        // A lying header: 16 bytes written, a length of 4096 claimed.
        client
            .put(&crate::transport::wire::framing::head(1, 4096), &[0; 16])
            .expect("put");
        assert!(server.head().is_err());
        assert!(Areas::adopt(mem.as_fd(), "x", 0, u64::MAX).is_err());
    }

    #[test]
    fn a_message_is_built_and_read_in_place() {
        let (mem, mut server) = Areas::create("areas-test", PAGE, 100).expect("create");
        let mut client = Areas::adopt(mem.as_fd(), "areas-test", PAGE, 100).expect("adopt");
        let buf = client.lend().expect("lent");
        assert_eq!(buf.len(), 100);
        buf[..5].copy_from_slice(b"hello");
        assert!(client
            .put_head(&crate::transport::wire::framing::head(7, 101))
            .is_err());
        client
            .put_head(&crate::transport::wire::framing::head(7, 5))
            .expect("put head");
        let mut frame = [0u8; HEAD];
        assert_eq!(server.take_head(&mut frame).expect("take head"), 5);
        assert_eq!(parse_head(&frame), (7, 5));
        assert_eq!(server.received(5), b"hello");
        // The request was copied out: rewriting the area no longer changes it.
        shared::store(&client.map, client.tx + HEAD, b"HELLO");
        assert_eq!(server.received(5), b"hello");
        // The reply is built over the request, in the same private buffer.
        let reply = server.lend().expect("lent");
        assert_eq!(&reply[..5], b"hello");
        reply[5] = b'!';
        server
            .put_head(&crate::transport::wire::framing::head(0, 6))
            .expect("put head");
        assert_eq!(client.take_head(&mut frame).expect("take head"), 6);
        assert_eq!(parse_head(&frame), (0, 6));
        assert_eq!(client.received(6), b"hello!");
    }
}
