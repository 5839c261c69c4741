//! `eventfd`: the payload in shared memory, the notification by eventfd.
//!
//! Per connection the server makes the connection's message areas (one
//! sealed memfd, see `areas.rs`) and two eventfds, one per receiver, and
//! passes all three to the client.
//!
//! - `send` copies the message into the peer-bound area, then adds 1 to the
//!   peer's eventfd;
//! - `recv` reads its own eventfd (blocking while it is zero), then copies
//!   the message out (its length read once and bounded by `max_msg`);
//! - in place (`call_with`, `reply_with`, and the server's request), the
//!   payload is built and read in the areas themselves: only the header
//!   moves (`Wire::recv_lent`, `Wire::send_in_place`).
//!
//! The eventfds have counter semantics (no `EFD_SEMAPHORE`): the protocol is
//! request then reply, so at most one message is outstanding per direction
//! and the count's low 32 bits are 0 or 1; a read takes it back to 0. A
//! misbehaving peer that posts twice is read once (the area holds one
//! message anyway). The high bits count *pokes*: a wait with a time-out
//! blocks in a plain `read` and the process's poker thread (`poker.rs`)
//! adds `poker::POKE` once the wait has lasted a tick; a read that finds
//! only pokes is a time-out. No `poll` per message.
//!
//! The syscalls order the copies: the writer's stores happen before its
//! `write(2)` to the eventfd, the reader's loads after its `read(2)`, and
//! the kernel's eventfd lock pairs the two.
//!
//! A server's write never waits on a client: an eventfd write blocks while
//! the counter would overflow, and a client can add nearly 2^64 to the
//! counter it reads. `O_NONBLOCK` is no defence (the flag belongs to the
//! open file description both sides share: it would make the client's
//! waiting reads non-blocking, and the client can clear it), nor is
//! `RWF_NOWAIT` (ignored on eventfd writes). So the server registers its
//! writes with the poker, which interrupts one that has lasted two ticks
//! with a signal (`poker.rs`); the wire then reports the client broken
//! (`BrokenPipe`) and the server drops it. Per message this costs two
//! stores around the write, no system call.
//!
//! Liveness: an eventfd says nothing about who holds it, so `EOF_ON_DEATH`
//! is false: a waiting client looks at the rendezvous session socket each
//! time its wait times out, and the server drops a connection whose session
//! hangs up.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;
use std::time::Duration;

use crate::transport::api::Options;
use crate::transport::serve::mechanism::{ConnCtx, Mechanism};
use crate::transport::wire::areas::Areas;
use crate::transport::wire::doorman::Wake;
use crate::transport::wire::framing::{Wire, HEAD};
use crate::transport::wire::poker::{self, Target};
use crate::transport::wire::rendezvous::Family;

/// Eventfd notification, shared-memory payload.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventFd;

/// One end of an eventfd connection.
pub(crate) struct EventWire {
    areas: Areas,
    /// Our eventfd: the peer adds to it when it sent.
    rx: OwnedFd,
    /// The peer's eventfd.
    tx: OwnedFd,
    /// Our registration with the poker, made at the first timed receive.
    poke: Option<Arc<Target>>,
    /// The server's: its writes' registration with the poker (a client
    /// that fills its counter cannot block them for longer than a tick).
    writes: Option<Arc<Target>>,
}

impl EventWire {
    fn new(areas: Areas, rx: OwnedFd, tx: OwnedFd) -> EventWire {
        EventWire {
            areas,
            rx,
            tx,
            poke: None,
            writes: None,
        }
    }
}

/// The message count in an eventfd counter (the high bits count pokes).
const MESSAGES: u64 = poker::POKE - 1;

impl EventWire {
    /// Announces the message just put in the peer's area: adds 1 to the
    /// peer's eventfd (the server's write bounded by the poker).
    fn announce(&mut self) -> io::Result<()> {
        let Some(w) = self.writes.as_deref() else {
            return oslayer::eventfd::write(self.tx.as_fd(), 1);
        };
        loop {
            w.begin_write();
            let r = oslayer::eventfd::write_once(self.tx.as_fd(), 1);
            if w.end_write() {
                return Err(io::Error::new(
                    io::ErrorKind::BrokenPipe,
                    "the client filled the counter of its eventfd: a write would block",
                ));
            }
            match r {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                r => return r,
            }
        }
    }

    /// Waits for the peer's announcement: without a `timeout`, one read of
    /// our eventfd, made once `poll` saw the counter non-zero; with one, a
    /// read the poker ends after a tick. Pokes alone (one that came after
    /// the wait it was meant for ended) are no message, an
    /// `ErrorKind::TimedOut` error: waiting on, outside any wait the poker
    /// knows of, could block the server for good once the client is gone.
    fn announced(&mut self, timeout: Option<Duration>) -> io::Result<()> {
        let got = match timeout {
            None => oslayer::eventfd::read(self.rx.as_fd()),
            Some(timeout) => {
                if self.poke.is_none() {
                    self.poke = Some(poker::register(&self.rx, timeout)?);
                }
                let poke = self.poke.as_deref().expect("registered above");
                poke.begin();
                let got = oslayer::eventfd::read(self.rx.as_fd());
                poke.end();
                got
            }
        };
        if got? & MESSAGES == 0 {
            return Err(io::ErrorKind::TimedOut.into());
        }
        Ok(())
    }
}

impl Wire for EventWire {
    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        self.areas.put(head, data)?;
        self.announce()
    }

    fn recv(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        self.announced(None)?;
        self.areas.take(frame).map(Some)
    }

    fn recv_timeout(&mut self, frame: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        self.announced(Some(timeout))?;
        self.areas.take(frame).map(Some)
    }

    fn waker(&mut self, tick: Duration) -> Option<Arc<dyn Wake>> {
        if self.poke.is_none() {
            self.poke = poker::register(&self.rx, tick).ok();
        }
        let target = self.poke.as_ref()?;
        Some(Arc::clone(target) as Arc<dyn Wake>)
    }

    fn recv_lent(
        &mut self,
        frame: &mut [u8],
        timeout: Option<Duration>,
    ) -> io::Result<Option<usize>> {
        self.announced(timeout)?;
        self.areas.take_head(frame).map(Some)
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
        self.announce()
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
        let (mem, areas) = Areas::create("msgpass-eventfd", 0, max)?;
        let to_server = oslayer::eventfd::new()?;
        let to_client = oslayer::eventfd::new()?;
        let theirs = vec![mem, to_server.try_clone()?, to_client.try_clone()?];
        let mut wire = EventWire::new(areas, to_server, to_client);
        wire.writes = poker::register_writer(opts.tick)?;
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
        let areas = Areas::adopt(mem.as_fd(), "eventfd", 0, u64::from_le_bytes(max))?;
        Ok(EventWire::new(areas, to_client, to_server))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::api::{Status, Transport};
    use crate::transport::serve::mechanism::WireTransport;

    #[test]
    fn a_late_poke_alone_is_no_message_and_does_not_block() {
        let (_mem, areas) = Areas::create("eventfd-test", 0, 64).expect("areas");
        let rx = oslayer::eventfd::new().expect("eventfd");
        let tx = oslayer::eventfd::new().expect("eventfd");
        // A poke meant for a wait that has ended: the counter reads
        // readable, with no message.
        oslayer::eventfd::write(rx.as_fd(), poker::POKE).expect("poke");
        let mut wire = EventWire::new(areas, rx, tx);
        let (done, got) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut frame = [0u8; HEAD + 64];
            let _ = done.send(wire.recv(&mut frame).map_err(|e| e.kind()));
        });
        let got = got
            .recv_timeout(Duration::from_secs(10))
            .expect("recv blocked on a poke alone");
        assert_eq!(got, Err(io::ErrorKind::TimedOut));
    }

    /// A client fills the counter of the eventfd the server answers it
    /// on, then calls: the server's reply would block for good. It must
    /// drop that client instead, and go on serving the others.
    #[test]
    fn a_client_that_fills_its_counter_cannot_block_the_server() {
        let tmp = tempfile::Builder::new()
            .prefix("msgpass-efd-")
            .tempdir()
            .expect("dir");
        let dir = tmp.path().to_path_buf();
        let path = dir.join("efd");
        let opts = Options {
            tick: Duration::from_millis(20),
            ..Options::default()
        };
        let t = WireTransport {
            mech: EventFd,
            name: "eventfd",
            oneway: false,
        };
        let mut chan = t.serve(&path, &opts).expect("serve");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let server = std::thread::spawn({
            let stop = std::sync::Arc::clone(&stop);
            move || {
                while let Ok(Some(_)) = chan.receive(&stop) {
                    let d = chan.data().to_vec();
                    let _ = chan.reply(Status::Ok, &d);
                }
            }
        });
        // The hostile client: a real client wire, and a copy of the
        // eventfd the server writes to.
        let (_sock, hello, mut fds) =
            crate::transport::wire::rendezvous::connect(&path, Family::Eventfd, &opts)
                .expect("hello");
        assert_eq!(fds.len(), 3);
        let to_client = fds[2].try_clone().expect("dup");
        let mut hostile = EventFd
            .client_side(std::mem::take(&mut fds), &hello.extra, &opts)
            .expect("client side");
        oslayer::eventfd::write(to_client.as_fd(), u64::MAX - 1).expect("fill");
        hostile
            .send(&crate::transport::wire::framing::head(1, 4), b"EVIL")
            .expect("request");
        // An honest client is still served.
        let (done_tx, done) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut c = t.connect(&path, &opts).expect("connect");
            let mut reply = [0u8; 16];
            let got = c.call(1, b"good", &mut reply).map(|n| reply[..n].to_vec());
            let _ = done_tx.send(got.map_err(|e| e.to_string()));
        });
        let got = done
            .recv_timeout(Duration::from_secs(20))
            .expect("the server is blocked writing to a hostile client");
        assert_eq!(got.as_deref(), Ok(&b"good"[..]));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        server.join().expect("server");
    }
}
