//! Sockets: Unix listen/connect/accept, socket pairs, messages with
//! descriptors (`SCM_RIGHTS`), timeouts, buffer sizes, options, peer
//! credentials.
//!
//! Backed by rustix (raw system calls; control buffers on the stack, no
//! allocation), except [`set_int_opt`], hand-written over libc because
//! rustix only exposes options by name and the callers pick theirs, and
//! [`peer_pidfd`], whose option rustix does not have.

use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::path::Path;
use std::time::Duration;

use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, ReturnFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketAddrUnix, SocketFlags,
};

pub use rustix::net::{RecvFlags, SocketType};

use crate::{check, retry_rustix};

/// Most descriptors one message carries.
pub const MAX_FDS: usize = 8;
/// Most parts [`send_parts`] takes.
pub const MAX_PARTS: usize = 4;

/// A Unix socket address for `path`, failing with a clear message when it
/// does not fit.
fn unix_addr(path: &Path) -> io::Result<SocketAddrUnix> {
    const ROOM: usize = 108; // sizeof(sun_path)
    let len = path.as_os_str().len();
    if len >= ROOM {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "path is {len} bytes, longer than a Unix socket address allows ({})",
                ROOM - 1
            ),
        ));
    }
    Ok(SocketAddrUnix::new(path)?)
}

/// A new close-on-exec Unix socket of type `ty`.
fn unix_socket(ty: SocketType) -> io::Result<OwnedFd> {
    Ok(rustix::net::socket_with(
        AddressFamily::UNIX,
        ty,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// Binds a new Unix socket of type `ty` at `path` (mode 0600) and listens
/// on it (backlog 128).
pub fn unix_listen(path: &Path, ty: SocketType) -> io::Result<OwnedFd> {
    let fd = unix_socket(ty)?;
    let addr = unix_addr(path)?;
    rustix::net::bind(&fd, &addr)?;
    crate::fs::chmod(path, 0o600)?;
    rustix::net::listen(&fd, 128)?;
    Ok(fd)
}

/// Connects a new Unix socket of type `ty` to `path` (retried on `EINTR`).
pub fn unix_connect(path: &Path, ty: SocketType) -> io::Result<OwnedFd> {
    let fd = unix_socket(ty)?;
    let addr = unix_addr(path)?;
    retry_rustix(|| rustix::net::connect(&fd, &addr))?;
    Ok(fd)
}

/// Accepts one connection (close-on-exec; retried on `EINTR`).
pub fn accept(listener: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    retry_rustix(|| rustix::net::accept_with(listener, SocketFlags::CLOEXEC))
}

/// A connected pair of Unix sockets of type `ty`, close-on-exec.
pub fn socketpair(ty: SocketType) -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(rustix::net::socketpair(
        AddressFamily::UNIX,
        ty,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// Sends the concatenation of `parts` (at most [`MAX_PARTS`]) as one
/// message, never raising `SIGPIPE`, with `fds` (at most [`MAX_FDS`])
/// attached; retried on `EINTR`. Returns the bytes sent.
///
/// # Panics
/// With more parts or descriptors than allowed (a caller's bug).
#[inline]
pub fn send_parts(
    fd: BorrowedFd<'_>,
    parts: &[&[u8]],
    fds: &[BorrowedFd<'_>],
) -> io::Result<usize> {
    assert!(parts.len() <= MAX_PARTS, "at most {MAX_PARTS} parts");
    assert!(fds.len() <= MAX_FDS, "at most {MAX_FDS} descriptors");
    let mut iov = [IoSlice::new(&[]); MAX_PARTS];
    for (v, p) in iov.iter_mut().zip(parts) {
        *v = IoSlice::new(p);
    }
    let iov = &iov[..parts.len()];
    if fds.is_empty() {
        return retry_rustix(|| {
            rustix::net::sendmsg(
                fd,
                iov,
                &mut SendAncillaryBuffer::default(),
                SendFlags::NOSIGNAL,
            )
        });
    }
    let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    retry_rustix(|| {
        let mut control = SendAncillaryBuffer::new(&mut space);
        // Room for MAX_FDS descriptors was reserved above.
        let pushed = control.push(SendAncillaryMessage::ScmRights(fds));
        debug_assert!(pushed);
        rustix::net::sendmsg(fd, iov, &mut control, SendFlags::NOSIGNAL)
    })
}

/// Sends all of `parts` (at most [`MAX_PARTS`]) waiting at most `limit`
/// in all, never raising `SIGPIPE`: each send is non-blocking
/// (`MSG_DONTWAIT`), and while the socket is full it waits for room in
/// `poll` (the clock is read only then), then gives up with `TimedOut` (on
/// a stream, part of the parts may have gone). On a message socket one
/// send carries all.
pub fn send_all_within(fd: BorrowedFd<'_>, parts: &[&[u8]], limit: Duration) -> io::Result<()> {
    let flags = SendFlags::NOSIGNAL | SendFlags::DONTWAIT;
    let mut by = None;
    crate::fd::all_parts(parts, |iov| loop {
        let r = match iov {
            [one] => retry_rustix(|| rustix::net::send(fd, one, flags)),
            _ => retry_rustix(|| {
                rustix::net::sendmsg(fd, iov, &mut SendAncillaryBuffer::default(), flags)
            }),
        };
        match r {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let by = *by.get_or_insert_with(|| std::time::Instant::now() + limit);
                crate::poll::wait_writable(fd, by)?
            }
            r => return r,
        }
    })
}

/// The first bytes waiting on a socket, left there (`MSG_PEEK |
/// MSG_DONTWAIT`): how many were copied, `WouldBlock` when none wait.
pub fn peek_now(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    retry_rustix(|| {
        rustix::net::recv(fd, &mut *buf, RecvFlags::PEEK | RecvFlags::DONTWAIT).map(|(n, _)| n)
    })
}

/// One `recv` of what is there now (`MSG_DONTWAIT`): `WouldBlock` when
/// nothing is. Returns the bytes received; 0 is the peer's end of stream.
#[inline]
pub fn recv_now(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    retry_rustix(|| rustix::net::recv(fd, &mut *buf, RecvFlags::DONTWAIT).map(|(n, _)| n))
}

/// Sends one message from a contiguous buffer, never raising `SIGPIPE`;
/// retried on `EINTR`. Returns the bytes sent.
#[inline]
pub fn send_bytes(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    retry_rustix(|| rustix::net::send(fd, buf, SendFlags::NOSIGNAL))
}

/// Sends one message from a contiguous buffer without waiting
/// (`MSG_DONTWAIT`), never raising `SIGPIPE`: `Ok(None)` when the socket
/// has no room now, else the bytes sent (a stream socket may take part of
/// it). Retried on `EINTR`.
#[inline]
pub fn send_now(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<Option<usize>> {
    match retry_rustix(|| rustix::net::send(fd, buf, SendFlags::NOSIGNAL | SendFlags::DONTWAIT)) {
        Ok(n) => Ok(Some(n)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
        Err(e) => Err(e),
    }
}

/// Receives one message into a contiguous buffer (with `flags`, plus
/// `MSG_TRUNC`; retried on `EINTR`). Returns the message's full length,
/// which exceeds `buf.len()` when it was truncated.
#[inline]
pub fn recv_bytes(fd: BorrowedFd<'_>, buf: &mut [u8], flags: RecvFlags) -> io::Result<usize> {
    retry_rustix(|| {
        rustix::net::recv(fd, &mut *buf, flags | RecvFlags::TRUNC).map(|(_, full)| full)
    })
}

/// One plain `recv` (no flags: on a stream, as many bytes as are there,
/// up to `buf.len()`; on a datagram socket, one message, cut to
/// `buf.len()`), retried on `EINTR`. Returns the bytes received; 0 is the
/// peer's end of stream.
#[inline]
pub fn recv_some(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    retry_rustix(|| rustix::net::recv(fd, &mut *buf, RecvFlags::empty()).map(|(n, _)| n))
}

/// What [`recv_parts`] received.
#[derive(Debug)]
pub struct Received {
    /// Full length of the message (may exceed the buffers when `truncated`).
    pub len: usize,
    /// The message did not fit the buffers.
    pub truncated: bool,
    /// Descriptors that came with the message (close-on-exec).
    pub fds: Vec<OwnedFd>,
}

/// Receives one message into `head` then `body` (with `flags`, plus
/// `MSG_TRUNC`; retried on `EINTR`). A zero `len` with no descriptors means
/// the peer closed the connection. Descriptors are only accepted when
/// `want_fds` (data messages skip the control buffer, which costs the
/// kernel work on every message); without them nothing is allocated.
#[inline]
pub fn recv_parts(
    fd: BorrowedFd<'_>,
    head: &mut [u8],
    body: &mut [u8],
    flags: RecvFlags,
    want_fds: bool,
) -> io::Result<Received> {
    let room = head.len() + body.len();
    let mut iov = [IoSliceMut::new(head), IoSliceMut::new(body)];
    let flags = flags | RecvFlags::TRUNC | RecvFlags::CMSG_CLOEXEC;
    let mut fds = Vec::new();
    let got = if want_fds {
        let mut space = [MaybeUninit::<u8>::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
        let mut control = RecvAncillaryBuffer::new(&mut space);
        let got = retry_rustix(|| rustix::net::recvmsg(fd, &mut iov, &mut control, flags))?;
        for m in control.drain() {
            if let RecvAncillaryMessage::ScmRights(rights) = m {
                fds.extend(rights);
            }
        }
        got
    } else {
        retry_rustix(|| {
            rustix::net::recvmsg(fd, &mut iov, &mut RecvAncillaryBuffer::default(), flags)
        })?
    };
    Ok(Received {
        len: got.bytes,
        truncated: got.flags.contains(ReturnFlags::TRUNC) || got.bytes > room,
        fds,
    })
}

/// Sets (or with `None` clears) the receive timeout of a socket. A zero
/// duration clears it too (the kernel reads a zero timeout as none);
/// nonzero durations under a microsecond round up to one.
pub fn set_recv_timeout(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<()> {
    let timeout = timeout.filter(|d| !d.is_zero());
    Ok(rustix::net::sockopt::set_socket_timeout(
        fd,
        rustix::net::sockopt::Timeout::Recv,
        timeout,
    )?)
}

/// Sets a socket's send and receive buffer sizes to at least `bytes` (the
/// kernel doubles the value and caps it at its `*mem_max`).
pub fn set_buffer_sizes(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    let v = bytes.min(i32::MAX as usize);
    rustix::net::sockopt::set_socket_send_buffer_size(fd, v)?;
    rustix::net::sockopt::set_socket_recv_buffer_size(fd, v)?;
    Ok(())
}

/// Sets an integer socket option: `setsockopt(fd, level, name, &value)`
/// (`level`/`name` are libc constants such as `IPPROTO_TCP`/`TCP_KEEPIDLE`).
pub fn set_int_opt(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: value is a valid c_int for the duration of the call, and the
    // length passed is its size.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Credentials of the process at the other end of a Unix socket, as they
/// were when it connected (`SO_PEERCRED`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PeerCred {
    /// Process id.
    pub pid: i32,
    /// User id.
    pub uid: u32,
    /// Group id.
    pub gid: u32,
}

/// The [`PeerCred`] of a connected Unix socket's peer. Its pid is 0 when
/// the peer's process has no id in our pid namespace (the kernel says so
/// with 0). Through nix, not rustix: rustix 1.1 reads the pid into a
/// non-zero type, which a 0 from the kernel would make undefined
/// behaviour.
pub fn peer_cred(fd: BorrowedFd<'_>) -> io::Result<PeerCred> {
    let c = nix::sys::socket::getsockopt(&fd, nix::sys::socket::sockopt::PeerCredentials)?;
    Ok(PeerCred {
        pid: c.pid(),
        uid: c.uid(),
        gid: c.gid(),
    })
}

/// `SO_PEERPIDFD` (Linux 6.5; this number on every architecture but
/// alpha, mips, parisc and sparc).
const SO_PEERPIDFD: libc::c_int = 77;

/// A close-on-exec pidfd of the process at the other end of a connected
/// Unix socket: the one that connected (`SO_PEERPIDFD`). Unlike the pid of
/// [`peer_cred`], it names that process and no other, also once it has
/// exited and its pid has gone to another. `Ok(None)` on a kernel older
/// than 6.5, which does not have the option; an error when the kernel
/// cannot give one (the peer is gone, on kernels that refuse a pidfd of
/// a reaped process).
pub fn peer_pidfd(fd: BorrowedFd<'_>) -> io::Result<Option<OwnedFd>> {
    let mut raw: libc::c_int = -1;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: raw and len are valid and writable for the duration of the
    // call, and len says raw's size.
    let r = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_PEERPIDFD,
            &mut raw as *mut libc::c_int as *mut libc::c_void,
            &mut len,
        )
    };
    match check(r) {
        Err(e) if e.raw_os_error() == Some(libc::ENOPROTOOPT) => Ok(None),
        Err(e) => Err(e),
        Ok(_) if raw < 0 => Err(io::Error::from_raw_os_error(libc::EBADF)),
        // SAFETY: the kernel installed a new descriptor, raw, for this call
        // alone: nothing else owns it.
        Ok(_) => Ok(Some(unsafe { OwnedFd::from_raw_fd(raw) })),
    }
}

/// True when the peer of a connected socket has gone away (hang-up, error,
/// or an orderly shutdown with nothing left to read): a poll with zero
/// timeout, then a one-byte `MSG_PEEK` when readable.
pub fn peer_gone(fd: BorrowedFd<'_>) -> bool {
    use crate::poll::{poll, PollFd, ERR, HUP, NVAL};
    let mut p = [PollFd::readable(fd)];
    match poll(&mut p, Some(Duration::ZERO)) {
        Ok(0) => false,
        Ok(_) => {
            if p[0].revents & (HUP | ERR | NVAL) != 0 {
                return true;
            }
            // Readable: a seqpacket end of file reads as zero bytes.
            let mut b = [0u8; 1];
            matches!(
                rustix::net::recv(fd, &mut b[..], RecvFlags::PEEK | RecvFlags::DONTWAIT),
                Ok((_, 0))
            )
        }
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn recv_some_reads_what_a_stream_has_and_cuts_a_datagram() {
        use std::os::fd::AsFd;
        let (a, b) = socketpair(SocketType::STREAM).unwrap();
        send_bytes(a.as_fd(), b"hello").unwrap();
        let mut buf = [0u8; 3];
        assert_eq!(recv_some(b.as_fd(), &mut buf).unwrap(), 3);
        assert_eq!(recv_some(b.as_fd(), &mut buf).unwrap(), 2, "the rest stays");
        let (a, b) = socketpair(SocketType::DGRAM).unwrap();
        send_bytes(a.as_fd(), b"hello").unwrap();
        assert_eq!(recv_some(b.as_fd(), &mut buf).unwrap(), 3);
        drop(a);
    }
    use super::*;
    use std::os::fd::AsFd;

    fn temp(name: &str) -> std::path::PathBuf {
        std::env::temp_dir().join(format!("oslayer-sock-{}-{name}", std::process::id()))
    }

    #[test]
    fn listen_connect_accept_and_send_parts_with_descriptors() {
        let p = temp("seq");
        let _ = std::fs::remove_file(&p);
        let l = unix_listen(&p, SocketType::SEQPACKET).unwrap();
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let c = unix_connect(&p, SocketType::SEQPACKET).unwrap();
        let s = accept(l.as_fd()).unwrap();
        let (r, w) = crate::pipe::pipe().unwrap();
        assert_eq!(
            send_parts(s.as_fd(), &[b"he", b"llo"], &[w.as_fd()]).unwrap(),
            5
        );
        let (mut head, mut body) = ([0u8; 2], [0u8; 8]);
        let got = recv_parts(c.as_fd(), &mut head, &mut body, RecvFlags::empty(), true).unwrap();
        assert_eq!((got.len, got.truncated, got.fds.len()), (5, false, 1));
        assert_eq!((&head, &body[..3]), (b"he", &b"llo"[..]));
        // The descriptor received is the pipe's write end.
        crate::fd::write_all(got.fds[0].as_fd(), &[b"z"]).unwrap();
        let mut b = [0u8; 1];
        assert!(crate::fd::read_exact(r.as_fd(), &mut b).unwrap());
        std::fs::remove_file(&p).unwrap();
    }

    #[test]
    fn too_long_a_path_is_refused_clearly() {
        let p = Path::new("/tmp").join("x".repeat(200));
        let e = unix_listen(&p, SocketType::SEQPACKET).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn recv_bytes_returns_the_full_length_of_a_truncated_message() {
        let (a, b) = socketpair(SocketType::SEQPACKET).unwrap();
        assert_eq!(send_bytes(a.as_fd(), b"0123456789").unwrap(), 10);
        let mut buf = [0u8; 4];
        assert_eq!(
            recv_bytes(b.as_fd(), &mut buf, RecvFlags::empty()).unwrap(),
            10
        );
        assert_eq!(&buf, b"0123");
        let e = recv_bytes(b.as_fd(), &mut buf, RecvFlags::DONTWAIT).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn recv_parts_without_fds_flags_truncation() {
        let (a, b) = socketpair(SocketType::SEQPACKET).unwrap();
        send_parts(a.as_fd(), &[b"abcdef"], &[]).unwrap();
        let (mut h, mut d) = ([0u8; 2], [0u8; 2]);
        let got = recv_parts(b.as_fd(), &mut h, &mut d, RecvFlags::empty(), false).unwrap();
        assert_eq!((got.len, got.truncated), (6, true));
        assert!(got.fds.is_empty());
    }

    #[test]
    fn recv_timeout_turns_a_silent_peer_into_would_block() {
        let (_a, b) = socketpair(SocketType::SEQPACKET).unwrap();
        set_recv_timeout(b.as_fd(), Some(Duration::from_millis(1))).unwrap();
        let e = recv_bytes(b.as_fd(), &mut [0u8; 4], RecvFlags::empty()).unwrap_err();
        assert!(matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ));
        set_recv_timeout(b.as_fd(), None).unwrap();
        set_recv_timeout(b.as_fd(), Some(Duration::ZERO)).unwrap();
    }

    #[test]
    fn buffer_sizes_and_int_options_are_applied() {
        let (a, _b) = socketpair(SocketType::DGRAM).unwrap();
        set_buffer_sizes(a.as_fd(), 1 << 16).unwrap();
        assert!(rustix::net::sockopt::socket_recv_buffer_size(a.as_fd()).unwrap() >= 1 << 16);
        set_int_opt(a.as_fd(), libc::SOL_SOCKET, libc::SO_PASSCRED, 1).unwrap();
        assert!(rustix::net::sockopt::socket_passcred(a.as_fd()).unwrap());
    }

    #[test]
    fn peer_cred_names_this_process_and_peer_gone_sees_the_close() {
        let (a, b) = socketpair(SocketType::SEQPACKET).unwrap();
        let c = peer_cred(a.as_fd()).unwrap();
        assert_eq!(c.pid as u32, std::process::id());
        assert_eq!(c.uid, crate::ids::euid());
        assert!(!peer_gone(a.as_fd()));
        send_bytes(b.as_fd(), b"x").unwrap();
        assert!(!peer_gone(a.as_fd()), "pending data is not a hang-up");
        drop(b);
        assert!(peer_gone(a.as_fd()));
    }

    #[test]
    fn peer_pidfd_names_the_connecting_process_until_it_exits() {
        use crate::process::{fork, reap, Fork};
        let (a, _b) = socketpair(SocketType::SEQPACKET).unwrap();
        let me = peer_pidfd(a.as_fd()).unwrap().expect("Linux 6.5 or later");
        assert!(crate::pidfd::running(me.as_fd()));
        // A child connects and exits: the pidfd says it has, whoever gets
        // its pid next.
        let path = std::env::temp_dir().join(format!("oslayer-peerpidfd-{}", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let l = unix_listen(&path, SocketType::SEQPACKET).unwrap();
        let addr = unix_addr(&path).unwrap();
        let sock = unix_socket(SocketType::SEQPACKET).unwrap();
        // SAFETY: the child makes one raw system call (connect, on memory
        // prepared before the fork) and ends with exit_now.
        let child = match unsafe { fork() }.unwrap() {
            Fork::Child => {
                let ok = rustix::net::connect(&sock, &addr).is_ok();
                crate::process::exit_now(if ok { 0 } else { 1 });
            }
            Fork::Parent(pid) => pid,
        };
        let s = accept(l.as_fd()).unwrap();
        std::fs::remove_file(&path).unwrap();
        let theirs = peer_pidfd(s.as_fd()).unwrap().expect("Linux 6.5 or later");
        assert_eq!(
            peer_cred(s.as_fd()).unwrap().pid,
            child.as_raw_nonzero().get()
        );
        reap(child).unwrap();
        assert!(!crate::pidfd::running(theirs.as_fd()));
    }

    #[test]
    fn a_peer_that_does_not_read_holds_a_sender_only_until_the_deadline() {
        use std::os::fd::AsFd;
        let (a, b) = socketpair(SocketType::STREAM).unwrap();
        let big = vec![7u8; 8 << 20];
        let e = send_all_within(a.as_fd(), &[&big], Duration::from_millis(50)).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let mut buf = [0u8; 16];
        assert_eq!(recv_now(b.as_fd(), &mut buf).unwrap(), 16);
        drop(a);
        let (c, d) = socketpair(SocketType::SEQPACKET).unwrap();
        send_all_within(c.as_fd(), &[b"he", b"llo"], Duration::ZERO).unwrap();
        assert_eq!(recv_now(d.as_fd(), &mut buf).unwrap(), 5);
        assert_eq!(
            recv_now(d.as_fd(), &mut buf).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
    }
}
