//! `uds`: Unix domain SOCK_SEQPACKET sockets. One message per request and per
//! reply, boundaries kept by the kernel: a request is a 4-byte command code
//! followed by the payload; a reply is a 4-byte status (0 or an errno)
//! followed by the payload.
//!
//! Messages up to [`SMALL`] bytes go through plain `send`/`recv` on one
//! contiguous buffer, which costs the kernel less than `sendmsg`/`recvmsg`
//! with an iovec array; larger ones are gathered and scattered with iovecs,
//! which saves copying the payload. With a single client the server blocks
//! in `recv` on it (as a bare ping-pong does) instead of `poll` + `recv`.

use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use oslayer::socket::RecvFlags;

use crate::error::{Error, Result};
use crate::transport::rendezvous::{self, Family, Listener};
use crate::transport::wire::ACCEPT_EVERY;
use crate::transport::{
    ClientConnection, Incoming, Options, ServerChannel, Status, Transport, ONEWAY,
};

/// Largest message (header included) sent or received through a
/// contiguous copy.
const SMALL: usize = 4096;

/// The Unix seqpacket transport.
#[derive(Debug, Clone, Copy, Default)]
pub struct Uds;

impl Transport for Uds {
    fn name(&self) -> &'static str {
        "uds"
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        let listener = Listener::bind(path, Family::Uds, opts.max_msg)?;
        Ok(Box::new(UdsServer {
            pollfds: vec![pollfd(listener.as_fd())],
            listener,
            conns: Vec::new(),
            buf: vec![0; 4 + opts.max_msg],
            out: Vec::with_capacity(SMALL),
            len: 0,
            current: None,
            next: 0,
            tick: opts.tick,
            calls: 0,
            last_accept: Instant::now(),
        }))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        let (sock, hello, _) = rendezvous::connect(path, Family::Uds, opts)?;
        Ok(Box::new(UdsClient {
            sock,
            max_msg: hello.max_msg,
            out: Vec::with_capacity(SMALL),
            inb: vec![0; SMALL],
        }))
    }
}

fn pollfd(fd: BorrowedFd<'_>) -> oslayer::poll::PollFd {
    oslayer::poll::PollFd::readable(fd)
}

/// Sends a 4-byte header and a payload as one message: copied into `out`
/// when small, gathered with iovecs otherwise.
fn send(
    fd: BorrowedFd<'_>,
    out: &mut Vec<u8>,
    head: [u8; 4],
    data: &[u8],
) -> std::io::Result<usize> {
    if head.len() + data.len() <= SMALL {
        out.clear();
        out.extend_from_slice(&head);
        out.extend_from_slice(data);
        oslayer::socket::send_bytes(fd, out)
    } else {
        oslayer::socket::send_parts(fd, &[&head, data], &[])
    }
}

fn u32_at(b: &[u8]) -> u32 {
    u32::from_le_bytes([b[0], b[1], b[2], b[3]])
}

struct UdsServer {
    listener: Listener,
    /// Connected clients; `pollfds[i + 1]` watches `conns[i]`.
    conns: Vec<OwnedFd>,
    pollfds: Vec<oslayer::poll::PollFd>,
    /// The last request as received: 4-byte command, then the payload.
    buf: Vec<u8>,
    /// Staging for small replies.
    out: Vec<u8>,
    len: usize,
    current: Option<usize>,
    /// Where the next scan of ready connections starts (fairness).
    next: usize,
    tick: Duration,
    /// Receives so far, to look at the listener now and then when busy.
    calls: u32,
    last_accept: Instant,
}

impl UdsServer {
    fn drop_conn(&mut self, i: usize) {
        self.conns.swap_remove(i);
        self.pollfds.swap_remove(i + 1);
        self.current = None;
    }

    /// Accepts one client. Its receive timeout is one tick, so the
    /// single-client path blocks at most that long.
    fn accept(&mut self) {
        if let Ok(c) = self.listener.accept(&[]) {
            if oslayer::socket::set_recv_timeout(c.as_fd(), Some(self.tick)).is_ok() {
                self.pollfds.push(pollfd(c.as_fd()));
                self.conns.push(c);
            }
        }
    }

    /// Accepts every client already waiting, without blocking.
    fn accept_waiting(&mut self) {
        self.last_accept = Instant::now();
        let mut p = [pollfd(self.listener.as_fd())];
        while oslayer::poll::poll(&mut p, Some(Duration::ZERO)).unwrap_or(0) > 0 {
            self.accept();
            p[0].revents = 0;
        }
    }

    /// Reads the request waiting on connection `i` (`flags` 0 blocks up to
    /// a tick). `Ok(None)` when there was none, or it was not a request
    /// (the client left, or sent garbage, and was dropped).
    fn read_request(&mut self, i: usize, flags: RecvFlags) -> Result<Option<Incoming>> {
        let n = match oslayer::socket::recv_bytes(self.conns[i].as_fd(), &mut self.buf, flags) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
            Err(_) => {
                self.drop_conn(i);
                return Ok(None);
            }
        };
        if n < 4 {
            // Zero bytes is an orderly close; 1-3 bytes is not our protocol.
            self.drop_conn(i);
            return Ok(None);
        }
        let inc = Incoming::from_wire(u32_at(&self.buf), n - 4);
        self.current = Some(i);
        if n > self.buf.len() {
            self.len = 0;
            // Nobody waits for an answer to a one-way message.
            if inc.oneway {
                self.current = None;
            } else {
                self.reply(Status::Err(libc::EMSGSIZE), &[])?;
            }
            return Ok(None);
        }
        self.len = n - 4;
        Ok(Some(inc))
    }

    /// Waits for any connection (or the listener) with poll.
    fn receive_polling(&mut self) -> Result<Option<Incoming>> {
        for p in &mut self.pollfds {
            p.revents = 0;
        }
        if oslayer::poll::poll(&mut self.pollfds, Some(self.tick))
            .map_err(|e| Error::io("poll", e))?
            == 0
        {
            return Ok(None);
        }
        if self.pollfds[0].revents != 0 {
            self.accept();
        }
        let count = self.conns.len();
        for k in 0..count {
            let i = (self.next + k) % count;
            let rev = self.pollfds[i + 1].revents;
            if rev == 0 {
                continue;
            }
            self.next = i + 1;
            if rev & libc::POLLIN != 0 {
                return self.read_request(i, RecvFlags::DONTWAIT);
            }
            self.drop_conn(i);
            // The connection set changed: poll again.
            break;
        }
        Ok(None)
    }
}

impl ServerChannel for UdsServer {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.current = None;
        self.calls = self.calls.wrapping_add(1);
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let got = if self.conns.len() == 1 {
                if self.calls % ACCEPT_EVERY == 0 && self.last_accept.elapsed() >= self.tick {
                    self.accept_waiting();
                    continue;
                }
                let got = self.read_request(0, RecvFlags::empty())?;
                if got.is_none() {
                    // Timed out, or the client left: look for new ones.
                    self.accept_waiting();
                }
                got
            } else {
                self.receive_polling()?
            };
            if got.is_some() {
                return Ok(got);
            }
        }
    }

    fn data(&self) -> &[u8] {
        &self.buf[4..4 + self.len]
    }

    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        let Some(i) = self.current.take() else {
            return Err(Error::Protocol("reply without a request".into()));
        };
        let (code, data) = status.encode(data);
        let max = self.buf.len() - 4;
        if data.len() > max {
            return Err(Error::TooLarge {
                len: data.len(),
                max,
            });
        }
        if send(
            self.conns[i].as_fd(),
            &mut self.out,
            code.to_le_bytes(),
            data,
        )
        .is_err()
        {
            self.drop_conn(i);
        }
        Ok(())
    }

    fn connections(&self) -> usize {
        self.conns.len()
    }
}

struct UdsClient {
    sock: OwnedFd,
    max_msg: usize,
    /// Staging for small requests.
    out: Vec<u8>,
    /// Landing place for replies to small reply buffers.
    inb: Vec<u8>,
}

impl UdsClient {
    /// Receives one reply. Returns (message length including the status,
    /// status, whether the payload did not fit `reply`).
    fn recv_reply(&mut self, reply: &mut [u8]) -> std::io::Result<(usize, i32, bool)> {
        if 4 + reply.len() <= SMALL {
            let n =
                oslayer::socket::recv_bytes(self.sock.as_fd(), &mut self.inb, RecvFlags::empty())?;
            if n < 4 {
                return Ok((n, 0, false));
            }
            let status = u32_at(&self.inb) as i32;
            let len = n - 4;
            if len > reply.len() {
                return Ok((n, status, true));
            }
            reply[..len].copy_from_slice(&self.inb[4..n]);
            Ok((n, status, false))
        } else {
            let mut head = [0u8; 4];
            let got = oslayer::socket::recv_parts(
                self.sock.as_fd(),
                &mut head,
                reply,
                RecvFlags::empty(),
                false,
            )?;
            Ok((got.len, i32::from_le_bytes(head), got.truncated))
        }
    }
}

impl UdsClient {
    /// Sends one request with wire code `code`, checking its size first.
    fn send_request(&mut self, code: u32, req: &[u8]) -> Result<()> {
        if req.len() > self.max_msg {
            return Err(Error::TooLarge {
                len: req.len(),
                max: self.max_msg,
            });
        }
        send(self.sock.as_fd(), &mut self.out, code.to_le_bytes(), req)
            .map(|_| ())
            .map_err(|e| match e.raw_os_error() {
                Some(libc::EPIPE) | Some(libc::ECONNRESET) => Error::Disconnected,
                _ => Error::io("send request", e),
            })
    }
}

impl ClientConnection for UdsClient {
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        self.send_request(cmd, req)?;
        let (n, status, truncated) =
            self.recv_reply(reply).map_err(|e| match e.raw_os_error() {
                Some(libc::ECONNRESET) => Error::Disconnected,
                _ => Error::io("receive reply", e),
            })?;
        if n == 0 {
            return Err(Error::Disconnected);
        }
        if n < 4 {
            return Err(Error::Protocol(format!("short reply of {n} bytes")));
        }
        if status != 0 {
            return Err(Error::Remote { code: status });
        }
        if truncated {
            return Err(Error::ReplyTooLarge {
                len: n - 4,
                cap: reply.len(),
            });
        }
        Ok(n - 4)
    }

    fn max_msg(&self) -> usize {
        self.max_msg
    }

    /// A seqpacket send blocks while the server's receive queue is full.
    fn send_oneway(&mut self, cmd: u32, req: &[u8]) -> Result<()> {
        self.send_request(cmd | ONEWAY, req)
    }

    fn oneway(&self) -> bool {
        true
    }
}
