//! The meeting point shared by socket-rendezvous transports: the server
//! listens on a Unix SOCK_SEQPACKET socket at the endpoint path; on each new
//! connection it sends a hello (magic, version, transport family, maximum
//! message size, server pid), optionally with descriptors attached (the
//! shared-memory transport passes its memfds this way). The connection then
//! stays open for the life of the session: its hang-up is how each side
//! learns that the other has died.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use oslayer::socket::{RecvFlags, SocketType};

use crate::error::{Error, Result};
use crate::transport::api::Options;

const MAGIC: u32 = u32::from_le_bytes(*b"MSGP");
/// The protocol version: 2 since the shm transport passes each client a bell
/// (an eventfd) and its slot carries a request number and a watcher; 3
/// since a remote tcp server follows its hello with its terms (whether it
/// asks for a token: see `tcp.rs`).
const VERSION: u16 = 3;
/// Length of the hello, before any extra bytes.
pub(crate) const HELLO_LEN: usize = 16;
/// Largest transport-specific addition to the hello (queue names, ports).
pub(crate) const EXTRA_MAX: usize = 1024;
/// How long a client waits for the hello once connected (and how long a
/// server of a mechanism with a handshake of its own waits for the rest).
pub(crate) const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(5);

/// Transport families that share the rendezvous, numbered as on the wire
/// (a protocol constant, like a port number: never renumbered). A client of
/// one family refuses an endpoint of another with a clear message. Each
/// entry of the transport table names its family; a test there checks
/// that a family's name here is the name of its table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u16)]
pub(crate) enum Family {
    Uds = 1,
    Shm = 2,
    Pipe = 3,
    UdsStream = 4,
    UdsDgram = 5,
    Eventfd = 6,
    PosixMq = 7,
    SysvMsg = 8,
    Udp = 9,
    Tcp = 10,
    Signal = 11,
    IoUring = 12,
    Fifo = 13,
}

impl Family {
    /// Every family.
    pub(crate) const ALL: [Family; 13] = [
        Family::Uds,
        Family::Shm,
        Family::Pipe,
        Family::UdsStream,
        Family::UdsDgram,
        Family::Eventfd,
        Family::PosixMq,
        Family::SysvMsg,
        Family::Udp,
        Family::Tcp,
        Family::Signal,
        Family::IoUring,
        Family::Fifo,
    ];

    /// The name a family is reported by.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Family::Uds => "uds",
            Family::Shm => "shm",
            Family::Pipe => "pipe",
            Family::UdsStream => "uds-stream",
            Family::UdsDgram => "uds-dgram",
            Family::Eventfd => "eventfd",
            Family::PosixMq => "posix-mq",
            Family::SysvMsg => "sysv-msg",
            Family::Udp => "udp",
            Family::Tcp => "tcp",
            Family::Signal => "signal",
            Family::IoUring => "io-uring",
            Family::Fifo => "fifo",
        }
    }

    /// The name of the family numbered `v` on the wire.
    pub(crate) fn name_of(v: u16) -> String {
        Family::ALL
            .iter()
            .find(|f| **f as u16 == v)
            .map_or_else(|| format!("unknown family {v}"), |f| f.name().to_string())
    }
}

/// What the server says first.
#[derive(Debug, Clone)]
pub(crate) struct Hello {
    pub max_msg: usize,
    pub _pid: u32,
    /// Transport-specific bytes (queue names, ports), possibly empty.
    pub extra: Vec<u8>,
}

/// The listening side.
#[derive(Debug)]
pub(crate) struct Listener {
    fd: OwnedFd,
    family: Family,
    max_msg: usize,
}

impl Listener {
    /// Listens at `path`, which the caller has claimed and cleared.
    pub(crate) fn bind(path: &Path, family: Family, max_msg: usize) -> Result<Listener> {
        let fd = oslayer::socket::unix_listen(path, SocketType::SEQPACKET)
            .map_err(|e| Error::io(format!("listen on {}", path.display()), e))?;
        Ok(Listener {
            fd,
            family,
            max_msg,
        })
    }

    /// Accepts one client and greets it, passing `fds` along. A client that
    /// vanished during the greeting is reported as an error the caller may
    /// ignore.
    pub(crate) fn accept(&self, fds: &[BorrowedFd<'_>]) -> Result<OwnedFd> {
        self.accept_with(fds, &[])
    }

    /// Like [`accept`](Listener::accept), with `extra` bytes after the hello
    /// (at most [`EXTRA_MAX`]).
    pub(crate) fn accept_with(&self, fds: &[BorrowedFd<'_>], extra: &[u8]) -> Result<OwnedFd> {
        assert!(extra.len() <= EXTRA_MAX, "hello extra too long");
        let conn = oslayer::socket::accept(self.fd.as_fd()).map_err(|e| Error::io("accept", e))?;
        let hello = hello_bytes(self.family, self.max_msg);
        oslayer::socket::send_parts(conn.as_fd(), &[&hello, extra], fds)
            .map_err(|e| Error::io("send hello", e))?;
        Ok(conn)
    }
}

impl AsFd for Listener {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Connects to `path`, waiting up to `opts.wait` for it to appear, and reads
/// the hello. Returns the session socket, the hello and passed descriptors.
pub(crate) fn connect(
    path: &Path,
    family: Family,
    opts: &Options,
) -> Result<(OwnedFd, Hello, Vec<OwnedFd>)> {
    let deadline = opts.wait.map(|w| Instant::now() + w);
    let sock = loop {
        match oslayer::socket::unix_connect(path, SocketType::SEQPACKET) {
            Ok(s) => break s,
            Err(e) => {
                let absent = matches!(
                    e.raw_os_error(),
                    Some(libc::ENOENT) | Some(libc::ECONNREFUSED)
                );
                if !absent {
                    return Err(Error::io(format!("connect to {}", path.display()), e));
                }
                match deadline {
                    Some(d) if Instant::now() < d => std::thread::sleep(Duration::from_millis(10)),
                    _ => return Err(not_found(path)),
                }
            }
        }
    };
    oslayer::socket::set_recv_timeout(sock.as_fd(), Some(HANDSHAKE_TIMEOUT))
        .map_err(|e| Error::io("set receive timeout", e))?;
    let mut hello = [0u8; HELLO_LEN];
    let mut extra = vec![0u8; EXTRA_MAX];
    let got = oslayer::socket::recv_parts(
        sock.as_fd(),
        &mut hello,
        &mut extra,
        RecvFlags::empty(),
        true,
    )
    .map_err(|e| {
        if e.kind() == io::ErrorKind::WouldBlock {
            Error::Protocol(format!(
                "{} accepted the connection but sent no hello within {:?}",
                path.display(),
                HANDSHAKE_TIMEOUT
            ))
        } else {
            Error::io("receive hello", e)
        }
    })?;
    oslayer::socket::set_recv_timeout(sock.as_fd(), None)
        .map_err(|e| Error::io("clear receive timeout", e))?;
    if got.len == 0 && got.fds.is_empty() {
        return Err(Error::Disconnected);
    }
    if got.len < HELLO_LEN || got.truncated {
        return Err(Error::Protocol(format!(
            "{} is not a msgpass endpoint",
            path.display()
        )));
    }
    let (max_msg, pid) = check_hello(&hello, path, family)?;
    extra.truncate(got.len - HELLO_LEN);
    let hello = Hello {
        max_msg,
        _pid: pid,
        extra,
    };
    Ok((sock, hello, got.fds))
}

/// The hello a server of `family` sends first: magic, protocol version,
/// family, maximum message size, pid (all little-endian).
pub(crate) fn hello_bytes(family: Family, max_msg: usize) -> [u8; HELLO_LEN] {
    let mut hello = [0u8; HELLO_LEN];
    hello[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    hello[4..6].copy_from_slice(&VERSION.to_le_bytes());
    hello[6..8].copy_from_slice(&(family as u16).to_le_bytes());
    hello[8..12].copy_from_slice(&(max_msg as u32).to_le_bytes());
    hello[12..16].copy_from_slice(&std::process::id().to_le_bytes());
    hello
}

/// Checks the hello a client of `family` received from `peer` (named in
/// errors): magic, version and family. Returns (max message size, pid).
pub(crate) fn check_hello(
    hello: &[u8; HELLO_LEN],
    peer: &Path,
    family: Family,
) -> Result<(usize, u32)> {
    let u32_at =
        |i: usize| u32::from_le_bytes([hello[i], hello[i + 1], hello[i + 2], hello[i + 3]]);
    if u32_at(0) != MAGIC {
        return Err(Error::Protocol(format!(
            "{} is not a msgpass endpoint",
            peer.display()
        )));
    }
    let version = u16::from_le_bytes([hello[4], hello[5]]);
    if version != VERSION {
        return Err(Error::Protocol(format!(
            "{} speaks protocol version {version}, this build speaks {VERSION}",
            peer.display()
        )));
    }
    let fam = u16::from_le_bytes([hello[6], hello[7]]);
    if fam != family as u16 {
        return Err(Error::WrongTransport {
            path: peer.to_path_buf(),
            expected: family.name(),
            found: Family::name_of(fam),
        });
    }
    Ok((u32_at(8) as usize, u32_at(12)))
}

fn not_found(path: &Path) -> Error {
    Error::NotFound {
        path: PathBuf::from(path),
    }
}
