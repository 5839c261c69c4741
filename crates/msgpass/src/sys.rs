//! Thin, safe wrappers over the few system calls the transports share:
//! Unix seqpacket sockets (with descriptor passing), poll, futex, memfd and
//! mmap. Everything here returns `io::Error`; callers add context.

use std::ffi::CString;
use std::io;
use std::mem::{size_of, zeroed, MaybeUninit};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::ptr;
use std::sync::atomic::AtomicU32;
use std::time::Duration;

/// Converts a `-1` return into the current `errno`.
fn check(ret: libc::c_int) -> io::Result<libc::c_int> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret)
    }
}

/// Same as [`check`] for calls returning `ssize_t`.
fn check_size(ret: libc::ssize_t) -> io::Result<usize> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(ret as usize)
    }
}

/// Retries `f` while it fails with `EINTR`.
fn retry<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// Builds a `sockaddr_un` for `path`, failing if the path does not fit.
fn sockaddr(path: &Path) -> io::Result<(libc::sockaddr_un, libc::socklen_t)> {
    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut addr: libc::sockaddr_un = unsafe { zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= addr.sun_path.len() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "path is {} bytes, longer than a Unix socket address allows ({})",
                bytes.len(),
                addr.sun_path.len() - 1
            ),
        ));
    }
    for (dst, src) in addr.sun_path.iter_mut().zip(bytes) {
        *dst = *src as libc::c_char;
    }
    let len = (size_of::<libc::sa_family_t>() + bytes.len() + 1) as libc::socklen_t;
    Ok((addr, len))
}

/// Creates a close-on-exec socket of the given family and type.
pub(crate) fn socket(family: libc::c_int, ty: libc::c_int) -> io::Result<OwnedFd> {
    // SAFETY: socket() has no memory-safety preconditions.
    let fd = check(unsafe { libc::socket(family, ty | libc::SOCK_CLOEXEC, 0) })?;
    // SAFETY: fd was just returned by socket() and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Binds a new Unix socket of type `ty` at `path` (mode 0600) and listens on it.
pub(crate) fn unix_listen(path: &Path, ty: libc::c_int) -> io::Result<OwnedFd> {
    let fd = socket(libc::AF_UNIX, ty)?;
    let (addr, len) = sockaddr(path)?;
    // SAFETY: addr is a valid sockaddr_un of length len.
    check(unsafe {
        libc::bind(
            fd.as_raw_fd(),
            &addr as *const libc::sockaddr_un as *const libc::sockaddr,
            len,
        )
    })?;
    chmod(path, 0o600)?;
    // SAFETY: fd is a bound socket.
    check(unsafe { libc::listen(fd.as_raw_fd(), 128) })?;
    Ok(fd)
}

/// Connects a new Unix socket of type `ty` to `path`.
pub(crate) fn unix_connect(path: &Path, ty: libc::c_int) -> io::Result<OwnedFd> {
    let fd = socket(libc::AF_UNIX, ty)?;
    let (addr, len) = sockaddr(path)?;
    retry(|| {
        // SAFETY: addr is a valid sockaddr_un of length len.
        check(unsafe {
            libc::connect(
                fd.as_raw_fd(),
                &addr as *const libc::sockaddr_un as *const libc::sockaddr,
                len,
            )
        })
    })?;
    Ok(fd)
}

/// Accepts one connection (close-on-exec).
pub(crate) fn accept(listener: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    let fd = retry(|| {
        // SAFETY: null address pointers are allowed by accept4.
        check(unsafe {
            libc::accept4(
                listener.as_raw_fd(),
                ptr::null_mut(),
                ptr::null_mut(),
                libc::SOCK_CLOEXEC,
            )
        })
    })?;
    // SAFETY: fd was just returned by accept4 and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Changes the mode of `path`.
pub(crate) fn chmod(path: &Path, mode: libc::mode_t) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: c is a valid NUL-terminated string.
    check(unsafe { libc::chmod(c.as_ptr(), mode) })?;
    Ok(())
}

/// Sends the concatenation of `parts` as one message (never raises SIGPIPE),
/// optionally with descriptors attached.
pub(crate) fn send_parts(
    fd: BorrowedFd<'_>,
    parts: &[&[u8]],
    fds: &[BorrowedFd<'_>],
) -> io::Result<usize> {
    let mut iov: [libc::iovec; 4] = [libc::iovec {
        iov_base: ptr::null_mut(),
        iov_len: 0,
    }; 4];
    assert!(parts.len() <= iov.len(), "at most 4 parts");
    for (v, p) in iov.iter_mut().zip(parts) {
        v.iov_base = p.as_ptr() as *mut libc::c_void;
        v.iov_len = p.len();
    }
    let mut cmsg_buf = [0u64; 8]; // room for up to 8 descriptors, 8-byte aligned
                                  // SAFETY: msghdr is plain old data; all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = parts.len();
    if !fds.is_empty() {
        assert!(fds.len() <= 8, "at most 8 descriptors");
        let payload = (fds.len() * size_of::<RawFd>()) as u32;
        // SAFETY: CMSG_SPACE is a pure computation.
        let space = unsafe { libc::CMSG_SPACE(payload) } as usize;
        msg.msg_control = cmsg_buf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = space;
        // SAFETY: msg_control points at a buffer of at least `space` bytes, so
        // CMSG_FIRSTHDR returns a valid header inside it and CMSG_DATA has room
        // for `payload` bytes.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_SOCKET;
            (*c).cmsg_type = libc::SCM_RIGHTS;
            (*c).cmsg_len = libc::CMSG_LEN(payload) as usize;
            let data = libc::CMSG_DATA(c) as *mut RawFd;
            for (i, f) in fds.iter().enumerate() {
                data.add(i).write_unaligned(f.as_raw_fd());
            }
        }
    }
    retry(|| {
        // SAFETY: msg points at live iovecs and control data for the whole call.
        check_size(unsafe { libc::sendmsg(fd.as_raw_fd(), &msg, libc::MSG_NOSIGNAL) })
    })
}

/// What [`recv_parts`] received.
pub(crate) struct Received {
    /// Full length of the message (may exceed the buffers when `truncated`).
    pub len: usize,
    /// The message did not fit the buffers.
    pub truncated: bool,
    /// Descriptors that came with the message.
    pub fds: Vec<OwnedFd>,
}

/// Receives one message into `head` then `body`. A zero `len` with no
/// descriptors means the peer closed the connection. Descriptors are only
/// accepted when `want_fds` (data messages skip the control buffer, which
/// costs the kernel work on every message).
pub(crate) fn recv_parts(
    fd: BorrowedFd<'_>,
    head: &mut [u8],
    body: &mut [u8],
    flags: libc::c_int,
    want_fds: bool,
) -> io::Result<Received> {
    let mut iov = [
        libc::iovec {
            iov_base: head.as_mut_ptr() as *mut libc::c_void,
            iov_len: head.len(),
        },
        libc::iovec {
            iov_base: body.as_mut_ptr() as *mut libc::c_void,
            iov_len: body.len(),
        },
    ];
    let mut cmsg_buf = [0u64; 8];
    // SAFETY: msghdr is plain old data; all-zero is a valid value.
    let mut msg: libc::msghdr = unsafe { zeroed() };
    msg.msg_iov = iov.as_mut_ptr();
    msg.msg_iovlen = 2;
    if want_fds {
        msg.msg_control = cmsg_buf.as_mut_ptr() as *mut libc::c_void;
        msg.msg_controllen = size_of::<[u64; 8]>();
    }
    let len = retry(|| {
        // SAFETY: msg points at live buffers for the whole call.
        check_size(unsafe {
            libc::recvmsg(
                fd.as_raw_fd(),
                &mut msg,
                flags | libc::MSG_TRUNC | libc::MSG_CMSG_CLOEXEC,
            )
        })
    })?;
    let mut fds = Vec::new();
    // SAFETY: the kernel filled msg_control with well-formed cmsg headers;
    // CMSG_FIRSTHDR/CMSG_NXTHDR walk them within msg_controllen.
    unsafe {
        let mut c = libc::CMSG_FIRSTHDR(&msg);
        while !c.is_null() {
            if (*c).cmsg_level == libc::SOL_SOCKET && (*c).cmsg_type == libc::SCM_RIGHTS {
                let n = ((*c).cmsg_len - libc::CMSG_LEN(0) as usize) / size_of::<RawFd>();
                let data = libc::CMSG_DATA(c) as *const RawFd;
                for i in 0..n {
                    fds.push(OwnedFd::from_raw_fd(data.add(i).read_unaligned()));
                }
            }
            c = libc::CMSG_NXTHDR(&msg, c);
        }
    }
    let truncated = msg.msg_flags & libc::MSG_TRUNC != 0 || len > head.len() + body.len();
    Ok(Received {
        len,
        truncated,
        fds,
    })
}

/// Sets (or with `None` clears) the receive timeout of a socket.
pub(crate) fn set_recv_timeout(fd: BorrowedFd<'_>, timeout: Option<Duration>) -> io::Result<()> {
    let tv = match timeout {
        Some(d) => libc::timeval {
            tv_sec: d.as_secs() as libc::time_t,
            tv_usec: d.subsec_micros().max(if d.is_zero() { 0 } else { 1 }) as libc::suseconds_t,
        },
        None => libc::timeval {
            tv_sec: 0,
            tv_usec: 0,
        },
    };
    // SAFETY: tv is a valid timeval for the duration of the call.
    check(unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            &tv as *const libc::timeval as *const libc::c_void,
            size_of::<libc::timeval>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Polls `fds`, waiting at most `timeout` (`None` waits forever).
/// Returns how many entries have events; `EINTR` counts as zero.
pub(crate) fn poll(fds: &mut [libc::pollfd], timeout: Option<Duration>) -> io::Result<usize> {
    let ms = match timeout {
        None => -1,
        Some(d) => d.as_millis().min(i32::MAX as u128) as libc::c_int,
    };
    // SAFETY: fds is a valid slice of pollfd for the duration of the call.
    let r = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

/// True when the peer of a connected socket has gone away (hang-up, error,
/// or an orderly shutdown with nothing left to read).
pub(crate) fn peer_gone(fd: BorrowedFd<'_>) -> bool {
    let mut p = [libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    }];
    match poll(&mut p, Some(Duration::ZERO)) {
        Ok(0) => false,
        Ok(_) => {
            if p[0].revents & (libc::POLLHUP | libc::POLLERR | libc::POLLNVAL) != 0 {
                return true;
            }
            // Readable: a seqpacket EOF reads as zero bytes.
            let mut b = [0u8; 1];
            // SAFETY: b is a valid 1-byte buffer.
            let n = unsafe {
                libc::recv(
                    fd.as_raw_fd(),
                    b.as_mut_ptr() as *mut libc::c_void,
                    1,
                    libc::MSG_PEEK | libc::MSG_DONTWAIT,
                )
            };
            n == 0
        }
        Err(_) => true,
    }
}

/// Blocks while `*word == expected`, at most `timeout`. Spurious and
/// timed-out returns are normal: the caller re-checks its condition.
/// `shared` selects a process-shared futex (required for memory shared
/// between processes).
pub(crate) fn futex_wait(word: &AtomicU32, expected: u32, timeout: Option<Duration>, shared: bool) {
    let ts = timeout.map(|d| libc::timespec {
        tv_sec: d.as_secs() as libc::time_t,
        tv_nsec: d.subsec_nanos() as libc::c_long,
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(ptr::null(), |t| t as *const libc::timespec);
    let op = if shared {
        libc::FUTEX_WAIT
    } else {
        libc::FUTEX_WAIT | libc::FUTEX_PRIVATE_FLAG
    };
    // SAFETY: word is a valid, aligned u32 for the duration of the call; the
    // kernel only reads it. The timeout pointer is null or valid.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            op,
            expected,
            ts_ptr,
            0usize,
            0u32,
        );
    }
}

/// Wakes up to `n` waiters blocked on `word`.
pub(crate) fn futex_wake(word: &AtomicU32, n: u32, shared: bool) {
    let op = if shared {
        libc::FUTEX_WAKE
    } else {
        libc::FUTEX_WAKE | libc::FUTEX_PRIVATE_FLAG
    };
    // SAFETY: FUTEX_WAKE does not access memory through the pointer beyond
    // using its address as a key.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), op, n, 0usize, 0usize, 0u32);
    }
}

/// A shared, read-write memory mapping of a file descriptor, unmapped on drop.
pub(crate) struct Mapping {
    ptr: *mut u8,
    len: usize,
}

// SAFETY: the mapping is plain memory; all access through it goes via raw
// pointers and atomics whose synchronisation the users provide.
unsafe impl Send for Mapping {}
// SAFETY: as above; shared references only hand out raw pointers.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Maps `len` bytes of `fd` shared and read-write.
    pub(crate) fn new(fd: BorrowedFd<'_>, len: usize) -> io::Result<Mapping> {
        // SAFETY: mapping a descriptor we hold with a null hint; the result is
        // checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Mapping {
            ptr: p as *mut u8,
            len,
        })
    }

    /// Base address of the mapping.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: ptr/len describe a mapping created by mmap and not yet unmapped.
        unsafe {
            libc::munmap(self.ptr as *mut libc::c_void, self.len);
        }
    }
}

/// Maps `len` bytes of a memory file a peer passed us, after checking it is
/// at least that long and sealed against shrinking: a peer that could
/// shrink it would turn our accesses into SIGBUS. `what` names the memory
/// in the error, which is `InvalidData` when the check fails.
pub(crate) fn map_sealed(fd: BorrowedFd<'_>, len: usize, what: &str) -> io::Result<Mapping> {
    let size = file_size(fd)?;
    if size < len || seals(fd)? & libc::F_SEAL_SHRINK == 0 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{what}: shared memory is {size} bytes (need {len}) or not sealed"),
        ));
    }
    Mapping::new(fd, len)
}

/// Creates an anonymous, sealed-size memory file of `len` bytes: the peer can
/// neither shrink it (which would turn our accesses into SIGBUS) nor grow it.
pub(crate) fn memfd(name: &str, len: usize) -> io::Result<OwnedFd> {
    let c = CString::new(name)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "name contains NUL"))?;
    // SAFETY: c is a valid NUL-terminated string.
    let fd = check(unsafe {
        libc::memfd_create(c.as_ptr(), libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING)
    })?;
    // SAFETY: fd was just created and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: ftruncate/fcntl on a descriptor we own.
    unsafe {
        check(libc::ftruncate(fd.as_raw_fd(), len as libc::off_t))?;
        check(libc::fcntl(
            fd.as_raw_fd(),
            libc::F_ADD_SEALS,
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
        ))?;
    }
    Ok(fd)
}

/// Size of the file behind `fd`.
pub(crate) fn file_size(fd: BorrowedFd<'_>) -> io::Result<usize> {
    let mut st = MaybeUninit::<libc::stat>::uninit();
    // SAFETY: st is valid for writes of a stat structure.
    check(unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat succeeded, so st is initialised.
    Ok(unsafe { st.assume_init() }.st_size as usize)
}

/// Seals present on a memfd.
pub(crate) fn seals(fd: BorrowedFd<'_>) -> io::Result<libc::c_int> {
    // SAFETY: fcntl F_GET_SEALS takes no pointer.
    check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) })
}

/// Effective user id of this process.
pub(crate) fn euid() -> u32 {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() }
}

/// Sends one message from a contiguous buffer (never raises SIGPIPE).
pub(crate) fn send_bytes(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    retry(|| {
        // SAFETY: buf is valid for reads of buf.len() bytes.
        check_size(unsafe {
            libc::send(
                fd.as_raw_fd(),
                buf.as_ptr() as *const libc::c_void,
                buf.len(),
                libc::MSG_NOSIGNAL,
            )
        })
    })
}

/// Receives one message into a contiguous buffer. Returns the message's
/// full length, which exceeds `buf.len()` when it was truncated.
pub(crate) fn recv_bytes(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    flags: libc::c_int,
) -> io::Result<usize> {
    retry(|| {
        // SAFETY: buf is valid for writes of buf.len() bytes.
        check_size(unsafe {
            libc::recv(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
                flags | libc::MSG_TRUNC,
            )
        })
    })
}

/// The CPU this thread runs on, plus one (0 if unknown). Cheap: glibc reads
/// it from the rseq area the kernel keeps up to date.
pub(crate) fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no preconditions.
    let c = unsafe { libc::sched_getcpu() };
    if c < 0 {
        0
    } else {
        c as u32 + 1
    }
}

/// Writes all of `parts` (at most 4), in order, retrying short writes: one
/// `writev` when the descriptor takes everything at once. Allocates
/// nothing (it is on every stream message's path).
pub(crate) fn write_all(fd: BorrowedFd<'_>, parts: &[&[u8]]) -> io::Result<()> {
    const MAX_PARTS: usize = 4;
    assert!(parts.len() <= MAX_PARTS, "at most {MAX_PARTS} parts");
    // What is left to write: parts[first][offset..], then the later parts.
    let (mut first, mut offset) = (0, 0);
    loop {
        let mut iov = [libc::iovec {
            iov_base: ptr::null_mut(),
            iov_len: 0,
        }; MAX_PARTS];
        let mut n = 0;
        for (k, p) in parts[first..].iter().enumerate() {
            let p = if k == 0 { &p[offset..] } else { p };
            if !p.is_empty() {
                iov[n] = libc::iovec {
                    iov_base: p.as_ptr() as *mut libc::c_void,
                    iov_len: p.len(),
                };
                n += 1;
            }
        }
        if n == 0 {
            return Ok(());
        }
        let mut written = retry(|| {
            // SAFETY: the first n iovecs point at live slices for the call.
            check_size(unsafe { libc::writev(fd.as_raw_fd(), iov.as_ptr(), n as libc::c_int) })
        })?;
        while written > 0 {
            let left = parts[first].len() - offset;
            if written >= left {
                written -= left;
                first += 1;
                offset = 0;
            } else {
                offset += written;
                written = 0;
            }
        }
    }
}

/// Fills `buf` from a stream. Returns `false` on EOF before the first byte;
/// EOF in the middle is `UnexpectedEof`.
pub(crate) fn read_exact(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<bool> {
    let mut got = 0;
    while got < buf.len() {
        let n = retry(|| {
            // SAFETY: the range got..len of buf is valid for writes.
            check_size(unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    buf[got..].as_mut_ptr() as *mut libc::c_void,
                    buf.len() - got,
                )
            })
        })?;
        if n == 0 {
            return if got == 0 {
                Ok(false)
            } else {
                Err(io::ErrorKind::UnexpectedEof.into())
            };
        }
        got += n;
    }
    Ok(true)
}

/// A pipe: (read end, write end), close-on-exec.
pub(crate) fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is valid for writes of two ints.
    check(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// A connected pair of Unix sockets of type `ty`, close-on-exec.
pub(crate) fn socketpair(ty: libc::c_int) -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0; 2];
    // SAFETY: fds is valid for writes of two ints.
    check(unsafe {
        libc::socketpair(libc::AF_UNIX, ty | libc::SOCK_CLOEXEC, 0, fds.as_mut_ptr())
    })?;
    // SAFETY: both descriptors were just created and are owned by nobody else.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Sets a socket's send and receive buffer sizes to at least `bytes`.
pub(crate) fn set_buffer_sizes(fd: &OwnedFd, bytes: usize) -> io::Result<()> {
    let v = bytes.min(i32::MAX as usize) as libc::c_int;
    for opt in [libc::SO_SNDBUF, libc::SO_RCVBUF] {
        // SAFETY: v is a valid c_int for the duration of the call.
        check(unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                opt,
                &v as *const libc::c_int as *const libc::c_void,
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        })?;
    }
    Ok(())
}

/// Sets an integer socket option (`setsockopt(fd, level, name, &value)`).
pub(crate) fn set_int_opt(
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
            size_of::<libc::c_int>() as libc::socklen_t,
        )
    })?;
    Ok(())
}

/// Fills `buf` with random bytes from the kernel (getrandom).
pub(crate) fn random_bytes(buf: &mut [u8]) -> io::Result<()> {
    let mut got = 0;
    while got < buf.len() {
        let n = retry(|| {
            // SAFETY: the range got..len of buf is valid for writes.
            check_size(unsafe {
                libc::getrandom(
                    buf[got..].as_mut_ptr() as *mut libc::c_void,
                    buf.len() - got,
                    0,
                )
            })
        })?;
        got += n;
    }
    Ok(())
}

/// Makes a named pipe (FIFO) at `path` with mode `mode` (then chmod'ed to
/// exactly `mode`, whatever the umask). Fails with `EEXIST` if the path is
/// taken.
pub(crate) fn mkfifo(path: &Path, mode: libc::mode_t) -> io::Result<()> {
    let c = CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path contains NUL"))?;
    // SAFETY: c is a valid NUL-terminated string.
    check(unsafe { libc::mkfifo(c.as_ptr(), mode) })?;
    chmod(path, mode)
}

/// Sets or clears `O_NONBLOCK` on `fd`.
pub(crate) fn set_nonblocking(fd: BorrowedFd<'_>, on: bool) -> io::Result<()> {
    // SAFETY: F_GETFL takes no pointer.
    let flags = check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFL) })?;
    let new = if on {
        flags | libc::O_NONBLOCK
    } else {
        flags & !libc::O_NONBLOCK
    };
    if new != flags {
        // SAFETY: F_SETFL takes an int, no pointer.
        check(unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, new) })?;
    }
    Ok(())
}

/// A new blocking, close-on-exec eventfd with counter semantics (a read
/// returns the whole count and resets it to zero), starting at zero.
pub(crate) fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd has no memory-safety preconditions.
    let fd = check(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) })?;
    // SAFETY: fd was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reads an eventfd's counter (blocking while it is zero, unless the
/// descriptor is non-blocking) and resets it.
pub(crate) fn eventfd_read(fd: BorrowedFd<'_>) -> io::Result<u64> {
    let mut v = 0u64;
    let n = retry(|| {
        // SAFETY: v is valid for writes of 8 bytes, the size eventfd reads.
        check_size(unsafe {
            libc::read(
                fd.as_raw_fd(),
                &mut v as *mut u64 as *mut libc::c_void,
                size_of::<u64>(),
            )
        })
    })?;
    if n != size_of::<u64>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "short read from an eventfd",
        ));
    }
    Ok(v)
}

/// Adds `v` to an eventfd's counter, waking its reader.
pub(crate) fn eventfd_write(fd: BorrowedFd<'_>, v: u64) -> io::Result<()> {
    let n = retry(|| {
        // SAFETY: v is valid for reads of 8 bytes, the size eventfd takes.
        check_size(unsafe {
            libc::write(
                fd.as_raw_fd(),
                &v as *const u64 as *const libc::c_void,
                size_of::<u64>(),
            )
        })
    })?;
    if n != size_of::<u64>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "short write to an eventfd",
        ));
    }
    Ok(())
}

/// Opens POSIX message queue `name` (like `/msgbench.1.2.c2s`) with
/// `oflag` (`O_RDONLY`/`O_WRONLY`, `O_NONBLOCK`; close-on-exec is added).
/// With `create`, as `(max messages, message size)`, the queue is created
/// exclusively with mode 0600 (`EEXIST` if the name is taken). On Linux the
/// queue descriptor is an ordinary pollable file descriptor.
pub(crate) fn mq_open(
    name: &std::ffi::CStr,
    oflag: libc::c_int,
    create: Option<(usize, usize)>,
) -> io::Result<OwnedFd> {
    let oflag = oflag | libc::O_CLOEXEC;
    let fd = match create {
        Some((maxmsg, msgsize)) => {
            // SAFETY: mq_attr is plain old data; all-zero is a valid value.
            let mut attr: libc::mq_attr = unsafe { zeroed() };
            attr.mq_maxmsg = maxmsg as libc::c_long;
            attr.mq_msgsize = msgsize as libc::c_long;
            let mode: libc::mode_t = 0o600;
            // SAFETY: name is NUL-terminated; with O_CREAT mq_open reads a
            // mode_t and a pointer to an mq_attr that lives for the call.
            check(unsafe {
                libc::mq_open(
                    name.as_ptr(),
                    oflag | libc::O_CREAT | libc::O_EXCL,
                    mode,
                    &attr as *const libc::mq_attr,
                )
            })?
        }
        // SAFETY: name is NUL-terminated; without O_CREAT no more arguments
        // are read.
        None => check(unsafe { libc::mq_open(name.as_ptr(), oflag) })?,
    };
    // SAFETY: fd was just returned by mq_open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Removes POSIX message queue `name`; the queue itself lives on until its
/// last descriptor is closed.
pub(crate) fn mq_unlink(name: &std::ffi::CStr) -> io::Result<()> {
    // SAFETY: name is NUL-terminated.
    check(unsafe { libc::mq_unlink(name.as_ptr()) })?;
    Ok(())
}

/// Sends `msg` as one message of priority 0 on queue descriptor `fd`.
pub(crate) fn mq_send(fd: BorrowedFd<'_>, msg: &[u8]) -> io::Result<()> {
    retry(|| {
        // SAFETY: msg is valid for reads of msg.len() bytes.
        check(unsafe {
            libc::mq_send(
                fd.as_raw_fd(),
                msg.as_ptr() as *const libc::c_char,
                msg.len(),
                0,
            )
        })
    })?;
    Ok(())
}

/// Receives the oldest message of queue descriptor `fd` into `buf` (which
/// must hold the queue's message size) and returns its length.
pub(crate) fn mq_receive(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    retry(|| {
        // SAFETY: buf is valid for writes of buf.len() bytes; a null
        // priority pointer is allowed.
        check_size(unsafe {
            libc::mq_receive(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_char,
                buf.len(),
                ptr::null_mut(),
            )
        })
    })
}

/// [`mq_receive`], giving up with `ETIMEDOUT` (`ErrorKind::TimedOut`) when
/// no message arrives within `timeout`.
pub(crate) fn mq_timedreceive(
    fd: BorrowedFd<'_>,
    buf: &mut [u8],
    timeout: Duration,
) -> io::Result<usize> {
    // The deadline is absolute, on CLOCK_REALTIME (a vDSO read).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let at = now + timeout;
    let ts = libc::timespec {
        tv_sec: at.as_secs() as libc::time_t,
        tv_nsec: at.subsec_nanos() as libc::c_long,
    };
    retry(|| {
        // SAFETY: buf is valid for writes of buf.len() bytes; ts is a valid
        // timespec; a null priority pointer is allowed.
        check_size(unsafe {
            libc::mq_timedreceive(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_char,
                buf.len(),
                ptr::null_mut(),
                &ts,
            )
        })
    })
}

/// The message size of the queue behind descriptor `fd`.
pub(crate) fn mq_msgsize(fd: BorrowedFd<'_>) -> io::Result<usize> {
    // SAFETY: mq_attr is plain old data; all-zero is a valid value.
    let mut attr: libc::mq_attr = unsafe { zeroed() };
    // SAFETY: attr is valid for writes for the duration of the call.
    check(unsafe { libc::mq_getattr(fd.as_raw_fd(), &mut attr) })?;
    Ok(attr.mq_msgsize.max(0) as usize)
}

/// The soft limit of resource `res` (`None`: unlimited).
pub(crate) fn soft_rlimit(res: libc::__rlimit_resource_t) -> io::Result<Option<u64>> {
    // SAFETY: rlimit is plain old data; all-zero is a valid value.
    let mut r: libc::rlimit = unsafe { zeroed() };
    // SAFETY: r is valid for writes for the duration of the call.
    check(unsafe { libc::getrlimit(res, &mut r) })?;
    Ok((r.rlim_cur != libc::RLIM_INFINITY).then_some(r.rlim_cur))
}

/// A System V message buffer: the `long` message type, then up to
/// `capacity` bytes of text, laid out as `msgsnd`/`msgrcv` expect.
pub(crate) struct MsgBuf {
    /// Word 0 is the type; the text starts at word 1.
    words: Vec<libc::c_long>,
    capacity: usize,
}

impl MsgBuf {
    /// A zeroed buffer for texts of up to `capacity` bytes.
    pub(crate) fn new(capacity: usize) -> MsgBuf {
        let w = size_of::<libc::c_long>();
        MsgBuf {
            words: vec![0; 1 + capacity.div_ceil(w)],
            capacity,
        }
    }

    /// The message type.
    pub(crate) fn mtype(&self) -> libc::c_long {
        self.words[0]
    }

    /// Sets the message type (must be positive to be sent).
    pub(crate) fn set_mtype(&mut self, t: libc::c_long) {
        self.words[0] = t;
    }

    /// The text area (`capacity` bytes).
    pub(crate) fn text(&self) -> &[u8] {
        // SAFETY: words[1..] holds at least `capacity` bytes, any bit
        // pattern is a valid u8, and the borrow of self keeps them alive
        // and unaliased by writers.
        unsafe { std::slice::from_raw_parts(self.words[1..].as_ptr() as *const u8, self.capacity) }
    }

    /// The text area (`capacity` bytes), writable.
    pub(crate) fn text_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `text`, with the unique borrow of self.
        unsafe {
            std::slice::from_raw_parts_mut(self.words[1..].as_mut_ptr() as *mut u8, self.capacity)
        }
    }
}

/// Creates a new private System V message queue (`IPC_PRIVATE`) with
/// mode 0600 and returns its id.
pub(crate) fn msgget_private() -> io::Result<libc::c_int> {
    // SAFETY: msgget takes no pointers.
    check(unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) })
}

/// Sends the first `len` text bytes of `buf`, with its type, on queue
/// `id`. `flags` may hold `IPC_NOWAIT` (a full queue is then `EAGAIN`).
pub(crate) fn msgsnd(
    id: libc::c_int,
    buf: &MsgBuf,
    len: usize,
    flags: libc::c_int,
) -> io::Result<()> {
    assert!(len <= buf.capacity, "message text exceeds its buffer");
    retry(|| {
        // SAFETY: buf.words holds the type word followed by at least len
        // text bytes, as msgsnd reads them.
        check(unsafe { libc::msgsnd(id, buf.words.as_ptr() as *const libc::c_void, len, flags) })
    })?;
    Ok(())
}

/// Receives a message of type `msgtyp` (0: any; see msgrcv(2)) from queue
/// `id` into `buf`; returns its text length. A message longer than the
/// buffer fails with `E2BIG` and stays queued. `flags` may hold
/// `IPC_NOWAIT` (no message is then `ENOMSG`). Not retried on `EINTR`, so
/// that a caller can re-check its conditions.
pub(crate) fn msgrcv(
    id: libc::c_int,
    buf: &mut MsgBuf,
    msgtyp: libc::c_long,
    flags: libc::c_int,
) -> io::Result<usize> {
    let cap = buf.capacity;
    // SAFETY: buf.words holds the type word followed by at least `cap`
    // text bytes, as msgrcv writes them.
    check_size(unsafe {
        libc::msgrcv(
            id,
            buf.words.as_mut_ptr() as *mut libc::c_void,
            cap,
            msgtyp,
            flags,
        )
    })
}

/// Removes System V message queue `id` at once (blocked senders and
/// receivers fail with `EIDRM`).
pub(crate) fn msg_remove(id: libc::c_int) -> io::Result<()> {
    // SAFETY: IPC_RMID ignores the buffer pointer, which may be null.
    check(unsafe { libc::msgctl(id, libc::IPC_RMID, ptr::null_mut()) })?;
    Ok(())
}

/// What identifies a System V message queue beyond its (reusable) id:
/// its creator's uid, its mode bits and its creation time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MsgQueueStamp {
    /// Uid of the creating process.
    pub cuid: u32,
    /// Permission bits (`0o600` for msgpass queues).
    pub mode: u32,
    /// Creation (last change) time, in seconds since the epoch.
    pub ctime: i64,
}

/// The [`MsgQueueStamp`] of queue `id` (`EINVAL`/`EIDRM` once removed).
pub(crate) fn msg_stamp(id: libc::c_int) -> io::Result<MsgQueueStamp> {
    // SAFETY: msqid_ds is plain old data; all-zero is a valid value.
    let mut ds: libc::msqid_ds = unsafe { zeroed() };
    // SAFETY: ds is valid for writes for the duration of the call.
    check(unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) })?;
    Ok(MsgQueueStamp {
        cuid: ds.msg_perm.cuid,
        mode: ds.msg_perm.mode as u32 & 0o777,
        ctime: ds.msg_ctime as i64,
    })
}

/// Number of messages waiting in System V message queue `id`.
pub(crate) fn msg_count(id: libc::c_int) -> io::Result<u64> {
    // SAFETY: msqid_ds is plain old data; all-zero is a valid value.
    let mut ds: libc::msqid_ds = unsafe { zeroed() };
    // SAFETY: ds is valid for writes for the duration of the call.
    check(unsafe { libc::msgctl(id, libc::IPC_STAT, &mut ds) })?;
    Ok(ds.msg_qnum as u64)
}

/// A close-on-exec pidfd for this process (its thread-group leader).
pub(crate) fn pidfd_self() -> io::Result<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor.
    let fd = check_size(unsafe {
        libc::syscall(libc::SYS_pidfd_open, libc::getpid(), 0) as libc::ssize_t
    })?;
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as RawFd) })
}

/// Duplicates descriptor `fd` of the process behind `pidfd` into this one
/// (close-on-exec), like receiving it with SCM_RIGHTS. Needs ptrace access
/// to that process (same user, or `CAP_SYS_PTRACE`; Yama may restrict it):
/// `EPERM` otherwise. Works for descriptors SCM_RIGHTS refuses (io_uring).
pub(crate) fn pidfd_getfd(pidfd: BorrowedFd<'_>, fd: RawFd) -> io::Result<OwnedFd> {
    // SAFETY: pidfd_getfd takes two descriptors' numbers and flags (0) and
    // returns a new descriptor; no memory is passed.
    let got = check_size(unsafe {
        libc::syscall(libc::SYS_pidfd_getfd, pidfd.as_raw_fd(), fd, 0) as libc::ssize_t
    })?;
    // SAFETY: the descriptor was just created and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(got as RawFd) })
}

/// One `read` into `buf`, retried on EINTR; `Ok(0)` is EOF.
pub(crate) fn read_some(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    retry(|| {
        // SAFETY: buf is valid for writes of buf.len() bytes.
        check_size(unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf.as_mut_ptr() as *mut libc::c_void,
                buf.len(),
            )
        })
    })
}
