//! Raw Ethernet frames: `AF_PACKET` sockets bound to one interface, with
//! fanout groups, qdisc bypass, and batched send (`sendmmsg`) and receive
//! (`recvmmsg`).
//!
//! Hand-written over libc: rustix has the address family and
//! `name_to_index` (used here) but neither `sockaddr_ll` binding, the
//! `SOL_PACKET` options, nor `sendmmsg`/`recvmmsg` over plain buffers. The
//! batch calls build their message headers on the stack (at most
//! [`MAX_BATCH`] of them) and allocate nothing. Opening a socket needs
//! `CAP_NET_RAW`.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::Duration;

use crate::socket::set_int_opt;
use crate::{check, retry};

/// Most frames one [`send_batch`] or [`recv_batch`] moves.
pub const MAX_BATCH: usize = 64;

/// `ETH_P_ALL`: every protocol (a receiver sees every frame).
pub const ETH_P_ALL: u16 = libc::ETH_P_ALL as u16;
/// `ETH_P_IP`: IPv4 frames only.
pub const ETH_P_IP: u16 = libc::ETH_P_IP as u16;

/// How a fanout group spreads frames over its sockets (`PACKET_FANOUT_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fanout {
    /// By flow hash: one flow always reaches the same socket.
    Hash,
    /// Round robin.
    LoadBalance,
    /// By the CPU the frame arrived on.
    Cpu,
}

impl Fanout {
    fn raw(self) -> libc::c_int {
        match self {
            Fanout::Hash => libc::PACKET_FANOUT_HASH as libc::c_int,
            Fanout::LoadBalance => libc::PACKET_FANOUT_LB as libc::c_int,
            Fanout::Cpu => libc::PACKET_FANOUT_CPU as libc::c_int,
        }
    }
}

/// Opens a raw `AF_PACKET` socket (close-on-exec) receiving `protocol`
/// (an `ETH_P_*` value in host order; 0 receives nothing, for a sender).
pub fn packet_socket(protocol: u16) -> io::Result<OwnedFd> {
    // SAFETY: socket() takes plain integers and returns a new descriptor
    // or -1; no memory is shared with the kernel.
    let fd = check(unsafe {
        libc::socket(
            libc::AF_PACKET,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::c_int::from(protocol.to_be()),
        )
    })?;
    // SAFETY: `fd` was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// The index of interface `name` in the socket's network namespace.
pub fn interface_index(fd: BorrowedFd<'_>, name: &str) -> io::Result<u32> {
    rustix::net::netdevice::name_to_index(fd, name).map_err(io::Error::from)
}

/// Binds the socket to interface `ifindex`, receiving `protocol` (host
/// order, as for [`packet_socket`]); frames it sends leave by that
/// interface.
pub fn bind_interface(fd: BorrowedFd<'_>, ifindex: u32, protocol: u16) -> io::Result<()> {
    // SAFETY: sockaddr_ll is plain data; all-zero is a valid value.
    let mut sll: libc::sockaddr_ll = unsafe { std::mem::zeroed() };
    sll.sll_family = libc::AF_PACKET as u16;
    sll.sll_protocol = protocol.to_be();
    sll.sll_ifindex = ifindex as libc::c_int;
    // SAFETY: the address points to a live sockaddr_ll of the length given.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            (&sll as *const libc::sockaddr_ll).cast(),
            std::mem::size_of::<libc::sockaddr_ll>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Joins fanout group `group` (of the socket's namespace) with `mode`:
/// every socket of the group bound to the same interface and protocol gets
/// a share of its frames. The socket must be bound first.
pub fn join_fanout(fd: BorrowedFd<'_>, group: u16, mode: Fanout) -> io::Result<()> {
    let v = libc::c_int::from(group) | (mode.raw() << 16);
    set_int_opt(fd, libc::SOL_PACKET, libc::PACKET_FANOUT, v)
}

/// Sends straight to the driver, past the interface's queueing discipline
/// (`PACKET_QDISC_BYPASS`): a frame the device cannot take is dropped.
pub fn set_qdisc_bypass(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_int_opt(fd, libc::SOL_PACKET, libc::PACKET_QDISC_BYPASS, on.into())
}

/// Stops the socket from seeing frames its host sends
/// (`PACKET_IGNORE_OUTGOING`, Linux 4.20): a receiver then counts arrivals
/// only.
pub fn set_ignore_outgoing(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    set_int_opt(
        fd,
        libc::SOL_PACKET,
        libc::PACKET_IGNORE_OUTGOING,
        on.into(),
    )
}

/// Sets the receive buffer to `bytes` past the `rmem_max` limit
/// (`SO_RCVBUFFORCE`, needs `CAP_NET_ADMIN`).
pub fn force_recv_buffer(fd: BorrowedFd<'_>, bytes: usize) -> io::Result<()> {
    let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    set_int_opt(fd, libc::SOL_SOCKET, libc::SO_RCVBUFFORCE, v)
}

/// Bounds how long [`recv_batch`] waits for its first frame.
pub fn set_recv_timeout(fd: BorrowedFd<'_>, timeout: Duration) -> io::Result<()> {
    rustix::net::sockopt::set_socket_timeout(
        fd,
        rustix::net::sockopt::Timeout::Recv,
        Some(timeout.max(Duration::from_micros(1))),
    )
    .map_err(io::Error::from)
}

/// A receiving socket's counts since the last call (`PACKET_STATISTICS`;
/// reading resets them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Frames that reached the socket, queued or not.
    pub packets: u32,
    /// Of those, frames dropped because the socket's buffer was full.
    pub drops: u32,
}

/// Reads and resets the socket's [`Stats`].
pub fn take_stats(fd: BorrowedFd<'_>) -> io::Result<Stats> {
    // SAFETY: tpacket_stats is plain data; all-zero is valid.
    let mut st: libc::tpacket_stats = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::tpacket_stats>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into the live `st`.
    check(unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_PACKET,
            libc::PACKET_STATISTICS,
            (&mut st as *mut libc::tpacket_stats).cast(),
            &mut len,
        )
    })?;
    Ok(Stats {
        packets: st.tp_packets,
        drops: st.tp_drops,
    })
}

/// Sends up to [`MAX_BATCH`] frames from `frames` out of the bound
/// interface in one `sendmmsg`; returns how many the kernel took (fewer
/// when it refused one: the rest are not sent). Retries `EINTR`.
pub fn send_batch<'a>(
    fd: impl AsFd,
    frames: impl IntoIterator<Item = &'a [u8]>,
) -> io::Result<usize> {
    // SAFETY: iovec and mmsghdr are plain data; all-zero (null pointers,
    // zero lengths) is a valid value.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut hdr: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    let mut n = 0;
    for f in frames.into_iter().take(MAX_BATCH) {
        iov[n].iov_base = f.as_ptr() as *mut libc::c_void;
        iov[n].iov_len = f.len();
        n += 1;
    }
    for (h, v) in hdr.iter_mut().zip(iov.iter_mut()).take(n) {
        h.msg_hdr.msg_iov = v;
        h.msg_hdr.msg_iovlen = 1;
    }
    if n == 0 {
        return Ok(0);
    }
    let raw = fd.as_fd().as_raw_fd();
    retry(|| {
        // SAFETY: `hdr[..n]` are valid headers whose iovecs point into the
        // caller's frames, all alive for the call; the kernel only reads
        // them (and writes msg_len in `hdr`).
        check(unsafe { libc::sendmmsg(raw, hdr.as_mut_ptr(), n as libc::c_uint, 0) })
    })
    .map(|k| k as usize)
}

/// Receives up to `lens.len()` (at most [`MAX_BATCH`]) frames into
/// consecutive `slot`-byte slots of `bufs` with one `recvmmsg`, waiting
/// for the first one at most the socket's receive timeout; returns how
/// many arrived (0 on timeout) and writes each frame's length to `lens`.
/// With `full_len`, a length is the frame's full length even when its
/// slot held only the start of it (`MSG_TRUNC`): a counter then needs
/// small slots only. Retries `EINTR`.
pub fn recv_batch(
    fd: BorrowedFd<'_>,
    bufs: &mut [u8],
    slot: usize,
    lens: &mut [usize],
    full_len: bool,
) -> io::Result<usize> {
    let want = lens.len().min(MAX_BATCH).min(bufs.len() / slot.max(1));
    // SAFETY: plain data; all-zero is a valid value.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    // SAFETY: as above.
    let mut hdr: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for (v, chunk) in iov
        .iter_mut()
        .zip(bufs.chunks_exact_mut(slot.max(1)))
        .take(want)
    {
        v.iov_base = chunk.as_mut_ptr().cast();
        v.iov_len = chunk.len();
    }
    for (h, v) in hdr.iter_mut().zip(iov.iter_mut()).take(want) {
        h.msg_hdr.msg_iov = v;
        h.msg_hdr.msg_iovlen = 1;
    }
    let flags = libc::MSG_WAITFORONE | if full_len { libc::MSG_TRUNC } else { 0 };
    let raw = fd.as_raw_fd();
    let got = retry(|| {
        // SAFETY: `hdr[..want]` are valid headers whose iovecs cover
        // disjoint slots of `bufs`, borrowed mutably for the call; the
        // timeout pointer is null (the socket's own timeout applies).
        check(unsafe {
            libc::recvmmsg(
                raw,
                hdr.as_mut_ptr(),
                want as libc::c_uint,
                flags,
                std::ptr::null_mut(),
            )
        })
    });
    match got {
        Ok(k) => {
            let k = k as usize;
            for (l, h) in lens.iter_mut().zip(hdr.iter()).take(k) {
                *l = h.msg_len as usize;
            }
            Ok(k)
        }
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A frame to ourselves with a local experimental EtherType.
    const EXPERIMENTAL: u16 = 0x88b5;

    fn frame(seq: u8) -> Vec<u8> {
        let mut f = vec![0u8; 60];
        f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
        f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 2]);
        f[12..14].copy_from_slice(&EXPERIMENTAL.to_be_bytes());
        f[14] = seq;
        f
    }

    /// Moves this thread into a fresh network namespace and brings its
    /// loopback up, so frames stay inside the test. Err: not permitted.
    fn private_loopback() -> io::Result<()> {
        // SAFETY: unshare() takes a flag word; CLONE_NEWNET moves only this
        // thread, which is allowed in a multithreaded process.
        check(unsafe { libc::unshare(libc::CLONE_NEWNET) })?;
        let s = packet_socket(0)?;
        // SAFETY: ifreq is plain data; all-zero is valid.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (d, c) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *d = *c as libc::c_char;
        }
        // SAFETY: SIOCGIFFLAGS/SIOCSIFFLAGS read and write the live `req`.
        check(unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) })?;
        // SAFETY: the union's flags member is the one SIOCGIFFLAGS filled.
        unsafe { req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short };
        // SAFETY: as above.
        check(unsafe { libc::ioctl(s.as_raw_fd(), libc::SIOCSIFFLAGS, &req) })?;
        Ok(())
    }

    fn round_trip() -> io::Result<()> {
        private_loopback()?;
        let tx = packet_socket(0)?;
        let rx = packet_socket(EXPERIMENTAL)?;
        let lo = interface_index(tx.as_fd(), "lo")?;
        bind_interface(tx.as_fd(), lo, 0)?;
        bind_interface(rx.as_fd(), lo, EXPERIMENTAL)?;
        set_qdisc_bypass(tx.as_fd(), true)?;
        set_ignore_outgoing(rx.as_fd(), true)?;
        join_fanout(rx.as_fd(), 7, Fanout::Hash)?;
        force_recv_buffer(rx.as_fd(), 1 << 20)?;
        set_recv_timeout(rx.as_fd(), Duration::from_millis(200))?;
        let frames: Vec<Vec<u8>> = (0..10).map(frame).collect();
        assert_eq!(send_batch(&tx, frames.iter().map(Vec::as_slice))?, 10);
        let (mut bufs, mut lens) = (vec![0u8; 16 * MAX_BATCH], [0usize; MAX_BATCH]);
        let mut seen = Vec::new();
        while seen.len() < 10 {
            let n = recv_batch(rx.as_fd(), &mut bufs, 16, &mut lens, true)?;
            assert!(n > 0, "timed out after {} frames", seen.len());
            for i in 0..n {
                assert_eq!(lens[i], 60, "MSG_TRUNC gives the full length");
                seen.push(bufs[i * 16 + 14]);
            }
        }
        assert_eq!(seen, (0..10).collect::<Vec<u8>>());
        let st = take_stats(rx.as_fd())?;
        assert_eq!(
            st,
            Stats {
                packets: 10,
                drops: 0
            }
        );
        assert_eq!(take_stats(rx.as_fd())?, Stats::default(), "reading resets");
        assert_eq!(
            recv_batch(rx.as_fd(), &mut bufs, 16, &mut lens, true)?,
            0,
            "outgoing copies are ignored"
        );
        Ok(())
    }

    #[test]
    fn frames_sent_in_a_batch_arrive_once_each_in_order_on_a_private_loopback() {
        let r = std::thread::spawn(round_trip).join().unwrap();
        match r {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                assert!(
                    !rustix::process::geteuid().is_root(),
                    "root may open packet sockets: {e}"
                );
            }
            Err(e) => panic!("packet round trip: {e}"),
        }
    }

    #[test]
    fn an_empty_batch_sends_nothing() {
        let Ok(s) = packet_socket(0) else { return }; // not permitted: nothing to test
        assert_eq!(send_batch(&s, std::iter::empty()).unwrap(), 0);
    }
}
