//! `uds`: Unix domain SOCK_SEQPACKET sockets. One message per request and per
//! reply, boundaries kept by the kernel: a request is a 4-byte command code
//! followed by the payload; a reply is a 4-byte status (0 or an errno)
//! followed by the payload.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::sys;
use crate::transport::rendezvous::{self, Family, Listener};
use crate::transport::{ClientConnection, Incoming, Options, ServerChannel, Status, Transport};

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
            pollfds: vec![pollfd(listener.as_fd().as_raw_fd())],
            listener,
            conns: Vec::new(),
            buf: vec![0; opts.max_msg],
            len: 0,
            current: None,
            next: 0,
            tick: opts.tick,
        }))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        let (sock, hello, _) = rendezvous::connect(path, Family::Uds, opts)?;
        Ok(Box::new(UdsClient {
            sock,
            max_msg: hello.max_msg,
        }))
    }
}

fn pollfd(fd: i32) -> libc::pollfd {
    libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    }
}

struct UdsServer {
    listener: Listener,
    /// Connected clients; `pollfds[i + 1]` watches `conns[i]`.
    conns: Vec<OwnedFd>,
    pollfds: Vec<libc::pollfd>,
    buf: Vec<u8>,
    len: usize,
    current: Option<usize>,
    /// Where the next scan of ready connections starts (fairness).
    next: usize,
    tick: std::time::Duration,
}

impl UdsServer {
    fn drop_conn(&mut self, i: usize) {
        self.conns.swap_remove(i);
        self.pollfds.swap_remove(i + 1);
        self.current = None;
    }

    /// Reads the request waiting on connection `i`. `Ok(None)` when it was
    /// not a request (the client left, or sent garbage, and was dropped).
    fn read_request(&mut self, i: usize) -> Result<Option<Incoming>> {
        let mut head = [0u8; 4];
        let got = match sys::recv_parts(
            self.conns[i].as_fd(),
            &mut head,
            &mut self.buf,
            libc::MSG_DONTWAIT,
        ) {
            Ok(g) => g,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(None),
            Err(_) => {
                self.drop_conn(i);
                return Ok(None);
            }
        };
        if got.len < head.len() {
            // Zero bytes is an orderly close; 1-3 bytes is not our protocol.
            self.drop_conn(i);
            return Ok(None);
        }
        self.current = Some(i);
        if got.truncated {
            self.len = 0;
            self.reply(Status::Err(libc::EMSGSIZE), &[])?;
            return Ok(None);
        }
        self.len = got.len - head.len();
        Ok(Some(Incoming {
            cmd: u32::from_le_bytes(head),
            len: self.len,
        }))
    }
}

impl ServerChannel for UdsServer {
    fn receive(&mut self, stop: &AtomicBool) -> Result<Option<Incoming>> {
        self.current = None;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            for p in &mut self.pollfds {
                p.revents = 0;
            }
            let n =
                sys::poll(&mut self.pollfds, Some(self.tick)).map_err(|e| Error::io("poll", e))?;
            if n == 0 {
                continue;
            }
            if self.pollfds[0].revents != 0 {
                if let Ok(c) = self.listener.accept(&[]) {
                    self.pollfds.push(pollfd(c.as_raw_fd()));
                    self.conns.push(c);
                }
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
                    if let Some(inc) = self.read_request(i)? {
                        return Ok(Some(inc));
                    }
                } else {
                    self.drop_conn(i);
                }
                // The connection set may have changed: poll again.
                break;
            }
        }
    }

    fn data(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    fn reply(&mut self, status: Status, data: &[u8]) -> Result<()> {
        let Some(i) = self.current.take() else {
            return Err(Error::Protocol("reply without a request".into()));
        };
        let (code, data) = match status {
            Status::Ok => (0i32, data),
            Status::Err(c) => (c, &[][..]),
        };
        if data.len() > self.buf.len() {
            return Err(Error::TooLarge {
                len: data.len(),
                max: self.buf.len(),
            });
        }
        if sys::send_parts(self.conns[i].as_fd(), &[&code.to_le_bytes(), data], &[]).is_err() {
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
}

impl ClientConnection for UdsClient {
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        if req.len() > self.max_msg {
            return Err(Error::TooLarge {
                len: req.len(),
                max: self.max_msg,
            });
        }
        sys::send_parts(self.sock.as_fd(), &[&cmd.to_le_bytes(), req], &[]).map_err(|e| match e
            .raw_os_error()
        {
            Some(libc::EPIPE) | Some(libc::ECONNRESET) => Error::Disconnected,
            _ => Error::io("send request", e),
        })?;
        let mut head = [0u8; 4];
        let got = sys::recv_parts(self.sock.as_fd(), &mut head, reply, 0).map_err(|e| {
            match e.raw_os_error() {
                Some(libc::ECONNRESET) => Error::Disconnected,
                _ => Error::io("receive reply", e),
            }
        })?;
        if got.len == 0 {
            return Err(Error::Disconnected);
        }
        if got.len < head.len() {
            return Err(Error::Protocol(format!("short reply of {} bytes", got.len)));
        }
        let status = i32::from_le_bytes(head);
        if status != 0 {
            return Err(Error::Remote { code: status });
        }
        let len = got.len - head.len();
        if got.truncated {
            return Err(Error::ReplyTooLarge {
                len,
                cap: reply.len(),
            });
        }
        Ok(len)
    }

    fn max_msg(&self) -> usize {
        self.max_msg
    }
}
