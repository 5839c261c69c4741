//! `fuse`: the Linux analogue of a QNX resource manager answering devctl.
//!
//! The server mounts a FUSE filesystem whose single file, mounted over the
//! endpoint path, *is* the endpoint. A client opens the file (each open is
//! one connection: the kernel gives it its own file handle) and calls
//! `ioctl()`; the server answers the FUSE `IOCTL` operation. The FUSE
//! protocol is spoken directly on `/dev/fuse` (no libfuse, no fusermount):
//! the server must be root, since it mounts with the mount system call.
//!
//! **Sizes.** On a regular file the kernel only does *restricted* ioctls:
//! the command number encodes the argument size (14 bits, at most 16383
//! bytes) and direction, and the kernel copies exactly that many bytes in
//! and at most that many out. So there are a few `_IOWR('Q', n, size)`
//! commands, one per buffer size class ([`CLASSES`]: 64, 512, 4096, 16383
//! bytes); the buffer starts with an 8-byte header (command or status,
//! length) and the client picks the smallest class that holds its request
//! and its reply buffer. The largest class caps payloads at
//! [`MAX_PAYLOAD`] = 16375 bytes ([`Transport::max_msg`] lowers the channel
//! maximum to it). The server sends back only the header and the reply's
//! bytes; a reply longer than the class the client chose (so longer than
//! its buffer) comes back as its header alone, which the client reports as
//! `ReplyTooLarge`. Error replies travel in the header too, so an errno
//! from the ioctl itself always means the transport failed.
//! `_IOR('Q', 0, 16)` is the hello: magic, version, maximum payload, pid.
//!
//! **Threads.** A reader thread per channel reads `/dev/fuse`, answers the
//! file-system operations itself (init, getattr, open, release, the
//! hello...) and queues request ioctls for `receive`. It also answers
//! `INTERRUPT`, sent by the kernel when a caller blocked in its ioctl gets
//! a signal (or has io_uring task work pending, which counts as one):
//! - a request the application has not taken yet is answered `EAGAIN` and
//!   dropped: it was never performed, and a live client sends it again, so
//!   the call does not fail;
//! - a request being handled for a caller that is being killed (SIGKILL
//!   pending in /proc) is answered `EINTR` at once, so the caller can die
//!   (the kernel would hold it until our reply), and the application's
//!   reply is discarded;
//! - a request being handled for a caller that lives is left alone: the
//!   application's reply completes the call.
//!
//! **Deferred replies.** A request held by the application
//! (`Request::defer`, or in a pool) is answered from any thread by a write
//! to `/dev/fuse`. At most one call per connection is in service: the
//! reader keeps a queue per connection (`fuse_queue`), and hands out
//! nothing more of a connection until its call is answered; one more call
//! waits there, and a further one (only a client with several threads on
//! one file can send it) is answered `EAGAIN` at once. A call let go by
//! the `INTERRUPT` rules above (its caller was dying) makes the held
//! handle's reply [`Error::Disconnected`]; a write the kernel refuses
//! (`ENOENT`: the request is gone) is `Disconnected` too.
//!
//! **Call timeouts.** The client's ioctl has no timeout of its own. At a
//! call's deadline the process's alarm thread (`alarm`) sends a second
//! ioctl on the same file, the *withdrawal*, naming the calling thread; the
//! reader answers that thread's call `ETIMEDOUT` at once (the client's
//! [`Error::TimedOut`]): a call not taken yet is withdrawn (never handed
//! out), one in service is *let go*: the application's answer, when it
//! comes, is discarded (its reply returns `Ok`, as on the transports whose
//! client discards a late reply), and the connection's next call waits in
//! its queue until then (one in service per connection). Each step is
//! decided under the reader's lock, so a call is answered once: by the
//! application or by the withdrawal, never both. The client disarms the
//! alarm before its call returns, waiting for a withdrawal under way, so
//! a withdrawal never reaches the next call; one that finds nothing (the
//! answer came first) does nothing. The alarm thread waits for the
//! server's reader thread (never for a handler); a frozen server holds it,
//! and every other connection's deadline in the process behind it.
//!
//! **Pulses.** A pulse has its own ioctl (`_IOWR('Q', 8, 16)`: header and
//! pulse), which the reader answers at once: queued at the end of its
//! connection's queue (so in order with its calls), or refused `EAGAIN`
//! ([`Error::PulseQueueFull`]) when the connection has
//! `fuse_queue::PULSE_DEPTH` (32) pulses not yet taken. A malformed pulse
//! (or a call with the one-way bit) drops the connection: that ioctl and
//! every later one of the file are answered `ENOTCONN` (`Disconnected`),
//! and it no longer counts among the connections.
//!
//! **A pool** ([`Channel::into_pool`](crate::Channel::into_pool)). The
//! threads of a pool take requests from the reader thread's one queue:
//! any free thread takes the next. Every request in service is known by
//! its FUSE `unique`, with its caller's thread, whichever thread serves
//! it, so the `INTERRUPT` rules above hold for each of them; a request
//! answered from another thread than the one that took it is answered
//! the same way (a write to `/dev/fuse`, which takes a reply whole, from
//! any thread). The mount and the reader thread live until the last
//! thread of the pool is gone. Taking a request, answering it and an
//! `INTERRUPT` are each a few hash and queue steps, whatever the number of
//! connections or requests.
//!
//! **Liveness.** When the server closes `/dev/fuse` (on drop, or by dying)
//! the kernel aborts the connection: a client blocked in `ioctl` gets
//! `ECONNABORTED`/`ENOTCONN` at once, which is [`Error::Disconnected`].
//! On drop the server detaches the mount (`umount2(MNT_DETACH)`: clients
//! may still hold the file open). A killed server leaves a dead mount
//! (`stat` fails with `ENOTCONN`); the next claim of the endpoint, holding
//! the endpoint lock and so sure the owner is dead, detaches it
//! (`clear_dead_mount`) before replacing the file: a live mount is never
//! touched, since its owner holds the lock.

use std::ffi::CString;
use std::fs::{self, OpenOptions};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::pulse::{Pulse, PULSE, PULSE_LEN};
use crate::transport::api::{
    Client, ClientConnection, Creds, Incoming, Options, ServerChannel, Status, Transport, ONEWAY,
};
use crate::transport::clock::alarm::Alarm;
use crate::transport::mechanisms::fuse_queue::{Kind, LetGo, Pending, Refused, State};
use crate::transport::serve::core::{Core, Held, ReplyTo, Single};
use crate::transport::serve::server::{reply_parts, Guard};
use crate::transport::wire::rendezvous::{self, Family};

/// Header at the start of every ioctl buffer: command (request) or status
/// (reply), then payload length, both u32 little-endian.
const HDR: usize = 8;
/// Buffer sizes of the request ioctls, smallest first; ioctl number `i + 1`
/// carries `CLASSES[i]` bytes. 16383 is the largest size an ioctl number
/// can encode.
pub const CLASSES: [usize; 4] = [64, 512, 4096, 16383];
/// Largest payload the fuse transport carries.
pub const MAX_PAYLOAD: usize = CLASSES[CLASSES.len() - 1] - HDR;
/// The ioctl "type" byte of msgpass commands.
const IOC_TYPE: u32 = b'Q' as u32;
/// Length of the hello the `_IOR('Q', 0, 16)` ioctl returns.
const HELLO_LEN: usize = 16;
/// Magic at the start of the hello.
const MAGIC: u32 = u32::from_le_bytes(*b"MSGP");
/// Version of this ioctl protocol.
const VERSION: u16 = 1;
/// Second half-word of the hello: says "fuse".
const TAG: u16 = u16::from_le_bytes(*b"FU");
/// `statfs` type of FUSE filesystems.
const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;
/// Size of the buffer the reader reads `/dev/fuse` into (the kernel wants
/// room for the largest request: a 16 KiB ioctl plus headers).
const READ_BUF: usize = 256 * 1024;

/// `_IOWR(IOC_TYPE, nr, size)`.
const fn iowr(nr: u32, size: usize) -> u32 {
    (3 << 30) | ((size as u32) << 16) | (IOC_TYPE << 8) | nr
}

/// The hello ioctl: `_IOR(IOC_TYPE, 0, HELLO_LEN)`.
const HELLO_CMD: u32 = (2 << 30) | ((HELLO_LEN as u32) << 16) | (IOC_TYPE << 8);
/// Bytes of the pulse and withdrawal ioctls' argument: a header, 8 bytes.
const SMALL: usize = HDR + PULSE_LEN;
/// The pulse ioctl, `_IOWR(IOC_TYPE, 8, SMALL)`: header (`PULSE | ONEWAY`,
/// 8) and the pulse; answered at once with a header (`EAGAIN`: full).
const PULSE_CMD: u32 = iowr(8, SMALL);
/// The withdrawal ioctl, `_IOWR(IOC_TYPE, 9, SMALL)`: the id of a thread
/// whose call on this connection is past its deadline.
const WITHDRAW_CMD: u32 = iowr(9, SMALL);

// FUSE opcodes and structure sizes (linux/fuse.h).
const FUSE_LOOKUP: u32 = 1;
const FUSE_FORGET: u32 = 2;
const FUSE_GETATTR: u32 = 3;
const FUSE_OPEN: u32 = 14;
const FUSE_STATFS: u32 = 17;
const FUSE_RELEASE: u32 = 18;
const FUSE_FLUSH: u32 = 25;
const FUSE_INIT: u32 = 26;
const FUSE_ACCESS: u32 = 34;
const FUSE_INTERRUPT: u32 = 36;
const FUSE_DESTROY: u32 = 38;
const FUSE_IOCTL: u32 = 39;
const FUSE_BATCH_FORGET: u32 = 42;
/// `struct fuse_in_header`.
const IN_HEADER: usize = 40;
/// `struct fuse_ioctl_in`.
const IOCTL_IN: usize = 32;

/// The fuse transport.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fuse;

/// Why a fuse channel cannot be served here, or `None` when it can
/// (`/dev/fuse` exists and we are root).
pub fn unavailable() -> Option<String> {
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse does not exist (load the fuse module: modprobe fuse)".into());
    }
    if oslayer::ids::euid() != 0 {
        return Some(format!(
            "serving over fuse mounts a filesystem, which needs root (euid is {})",
            oslayer::ids::euid()
        ));
    }
    None
}

impl Transport for Fuse {
    fn name(&self) -> &'static str {
        "fuse"
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        if let Some(why) = unavailable() {
            return Err(Error::io(
                format!("fuse: cannot serve {}", path.display()),
                io::Error::new(io::ErrorKind::PermissionDenied, why),
            ));
        }
        let core = FuseCore::start(path, self.max_msg(opts.max_msg), opts.tick)?;
        Ok(Box::new(Single::new(Arc::new(core))?))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        Ok(Box::new(FuseClient::connect(path, opts)?))
    }

    fn max_msg(&self, requested: usize) -> usize {
        requested.min(MAX_PAYLOAD)
    }
}

// ------------------------------------------------------------ syscalls

use oslayer::mount::{detach, MountFlags};

/// True when `path` is a FUSE mount whose server is gone.
fn is_dead_mount(path: &Path) -> bool {
    let fs_type = match oslayer::mount::fs_type(path) {
        Ok(t) => t,
        // A dead FUSE connection refuses statfs with ENOTCONN.
        Err(e) => return e.raw_os_error() == Some(libc::ENOTCONN),
    };
    fs_type == FUSE_SUPER_MAGIC
        && fs::symlink_metadata(path)
            .err()
            .and_then(|e| e.raw_os_error())
            == Some(libc::ENOTCONN)
}

/// Clears a dead FUSE mount left at `path` by a killed fuse server, and
/// returns true if there was one. The caller holds the endpoint's lock, so
/// the mount's owner is dead; a path that answers `stat` is left alone.
pub(crate) fn clear_dead_mount(path: &Path) -> bool {
    let mut cleared = false;
    // Mounts may be stacked (several killed servers): detach them all.
    for _ in 0..16 {
        match fs::symlink_metadata(path) {
            Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) && is_dead_mount(path) => {
                if detach(path).is_err() {
                    break;
                }
                cleared = true;
            }
            _ => break,
        }
    }
    cleared
}

/// True when `path` is served by a live fuse server (used by socket
/// transports to tell a client it picked the wrong transport).
pub(crate) fn serves(path: &Path) -> bool {
    match fs::metadata(path) {
        Ok(md) if md.is_file() => {}
        _ => return false,
    }
    match open_endpoint(path) {
        Ok(fd) => hello(&fd).is_ok(),
        Err(_) => false,
    }
}

/// Opens the endpoint file for a connection.
fn open_endpoint(path: &Path) -> io::Result<OwnedFd> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .custom_flags(libc::O_CLOEXEC | libc::O_NOCTTY | libc::O_NONBLOCK)
        .open(path)
        .map(OwnedFd::from)
}

/// `ioctl(fd, cmd, buf)`; the kernel reads and writes at most the size
/// encoded in `cmd`, which the caller makes no larger than `buf`.
fn ioctl(fd: &OwnedFd, cmd: u32, buf: &mut [u8]) -> io::Result<()> {
    oslayer::ioctl::read_write(fd.as_fd(), cmd, buf)
}

/// Sends the hello ioctl; returns (max payload, server pid).
fn hello(fd: &OwnedFd) -> io::Result<(usize, u32)> {
    let mut h = [0u8; HELLO_LEN];
    ioctl(fd, HELLO_CMD, &mut h)?;
    let u32_at = |i: usize| u32::from_le_bytes([h[i], h[i + 1], h[i + 2], h[i + 3]]);
    if u32_at(0) != MAGIC
        || u16::from_le_bytes([h[4], h[5]]) != VERSION
        || u16::from_le_bytes([h[6], h[7]]) != TAG
    {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "not a msgpass fuse endpoint (or another protocol version)",
        ));
    }
    Ok((u32_at(8) as usize, u32_at(12)))
}

/// Errors of a FUSE ioctl that mean the server is gone.
fn is_gone(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOTCONN | libc::ECONNABORTED | libc::ENODEV | libc::EIO)
    )
}

/// Writes one reply (`parts` concatenated) to `/dev/fuse`, which takes a
/// reply whole or not at all.
fn write_reply(dev: BorrowedFd<'_>, parts: &[&[u8]]) -> io::Result<()> {
    oslayer::fd::write_vectored(dev, parts).map(|_| ())
}

/// The `fuse_out_header` of a reply to `unique` with `error` (0 or a
/// negative errno) and `body` bytes after the header.
fn out_header(unique: u64, error: i32, body: usize) -> [u8; 16] {
    let mut h = [0u8; 16];
    h[0..4].copy_from_slice(&((16 + body) as u32).to_le_bytes());
    h[4..8].copy_from_slice(&error.to_le_bytes());
    h[8..16].copy_from_slice(&unique.to_le_bytes());
    h
}

/// Replies an error (positive errno) to request `unique`.
fn reply_err(dev: BorrowedFd<'_>, unique: u64, errno: i32) {
    // The request may be gone (interrupted): nothing to do then.
    let _ = write_reply(dev, &[&out_header(unique, -errno, 0)]);
}

/// Replies `body` to request `unique`.
fn reply_ok(dev: BorrowedFd<'_>, unique: u64, body: &[u8]) {
    let _ = write_reply(dev, &[&out_header(unique, 0, body.len()), body]);
}

// ------------------------------------------------------------ server

/// The reader thread's and the channel's common part.
struct Shared {
    state: Mutex<State>,
    ready: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The server side: one mount, one reader thread, shared by the threads
/// that serve the channel (see the module doc); the mount is detached
/// when the last of them goes.
struct FuseCore {
    /// `/dev/fuse` (taken on drop, to close it before unmounting).
    dev: Option<Arc<OwnedFd>>,
    /// Eventfd that tells the reader thread to stop.
    wake: Arc<OwnedFd>,
    shared: Arc<Shared>,
    reader: Option<JoinHandle<()>>,
    path: PathBuf,
    mounted: bool,
    tick: Duration,
    max_msg: usize,
}

/// What one serving thread keeps: the request it holds.
struct FuseWorker {
    cur: Guard<Pending>,
}

impl FuseCore {
    /// Creates the endpoint file at `path`, mounts a FUSE filesystem on it
    /// and starts the reader thread.
    fn start(path: &Path, max_msg: usize, tick: Duration) -> Result<FuseCore> {
        OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_CLOEXEC | libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| Error::io(format!("fuse: create {}", path.display()), e))?;
        let dev = Arc::new(
            oslayer::fuse::open_device().map_err(|e| Error::io("fuse: open /dev/fuse", e))?,
        );
        let fd = dev.as_raw_fd();
        let wake = Arc::new(oslayer::eventfd::new().map_err(|e| Error::io("fuse: eventfd", e))?);
        let data = CString::new(format!(
            "fd={fd},rootmode=100600,user_id={uid},group_id={gid},allow_other,default_permissions",
            uid = oslayer::ids::euid(),
            gid = oslayer::ids::egid(),
        ))
        .map_err(|_| Error::Protocol("fuse: mount options contain NUL".into()))?;
        if let Err(e) = oslayer::mount::mount(
            c"msgbench",
            path,
            c"fuse.msgbench",
            MountFlags::NOSUID | MountFlags::NODEV,
            &data,
        ) {
            return Err(Error::io(
                format!(
                    "fuse: mount on {} (needs root or CAP_SYS_ADMIN)",
                    path.display()
                ),
                e,
            ));
        }
        let shared = Arc::new(Shared {
            state: Mutex::new(State::default()),
            ready: Condvar::new(),
        });
        let mut server = FuseCore {
            dev: Some(Arc::clone(&dev)),
            wake: Arc::clone(&wake),
            shared: Arc::clone(&shared),
            reader: None,
            path: path.to_path_buf(),
            mounted: true,
            tick,
            max_msg,
        };
        let reader = std::thread::Builder::new()
            .name("msgpass-fuse".into())
            .spawn(move || read_loop(&dev, &wake, &shared, max_msg))
            .map_err(|e| Error::io("fuse: spawn the reader thread", e))?;
        server.reader = Some(reader);
        Ok(server)
    }
}

impl Drop for FuseCore {
    fn drop(&mut self) {
        // Stop the reader, then close /dev/fuse (which aborts the
        // connection: blocked clients hear at once), then detach the mount.
        let _ = oslayer::eventfd::write(std::os::fd::AsFd::as_fd(&*self.wake), 1);
        if let Some(h) = self.reader.take() {
            let _ = h.join();
        }
        // The reader's clone of the descriptor is gone with its thread; ours
        // is the last one: closing it aborts the FUSE connection.
        drop(self.dev.take());
        if self.mounted {
            let _ = detach(&self.path);
            self.mounted = false;
        }
    }
}

/// The reader thread: reads `/dev/fuse` until told to stop or the
/// connection ends.
fn read_loop(dev: &OwnedFd, wake: &OwnedFd, shared: &Shared, max_msg: usize) {
    let mut buf = vec![0u8; READ_BUF];
    let mut next_fh: u64 = 1;
    let why = loop {
        let mut fds = [
            oslayer::poll::PollFd::readable(dev.as_fd()),
            oslayer::poll::PollFd::readable(wake.as_fd()),
        ];
        match oslayer::poll::poll(&mut fds, None) {
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => break format!("poll /dev/fuse: {e}"),
        }
        if fds[1].revents != 0 {
            break "the channel was closed".to_string();
        }
        if fds[0].revents == 0 {
            continue;
        }
        let n = match oslayer::fd::read_some(dev.as_fd(), &mut buf) {
            Ok(n) => n,
            // Interrupted before we read it, or nothing there after all.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT | libc::EAGAIN)) => continue,
            Err(e) => break format!("read /dev/fuse: {e}"),
        };
        if n < IN_HEADER {
            continue;
        }
        handle(dev.as_fd(), &buf[..n], shared, &mut next_fh, max_msg);
    };
    let mut st = shared.lock();
    st.dead = Some(why);
    drop(st);
    shared.ready.notify_all();
}

/// Little-endian u32 at `i` of `b` (0 when out of range).
fn u32_at(b: &[u8], i: usize) -> u32 {
    b.get(i..i + 4)
        .map_or(0, |s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// Little-endian u64 at `i` of `b` (0 when out of range).
fn u64_at(b: &[u8], i: usize) -> u64 {
    b.get(i..i + 8).map_or(0, |s| {
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        u64::from_le_bytes(a)
    })
}

/// The `fuse_attr_out` of the endpoint file.
fn attr_out() -> [u8; 104] {
    let mut a = [0u8; 104];
    // attr_valid = 0: the kernel asks every time (a dead server shows).
    let attr = &mut a[16..];
    attr[0..8].copy_from_slice(&1u64.to_le_bytes()); // ino
    attr[60..64].copy_from_slice(&(libc::S_IFREG | 0o600).to_le_bytes()); // mode
    attr[64..68].copy_from_slice(&1u32.to_le_bytes()); // nlink
    attr[68..72].copy_from_slice(&oslayer::ids::euid().to_le_bytes()); // uid
    attr[72..76].copy_from_slice(&oslayer::ids::egid().to_le_bytes()); // gid
    attr[80..84].copy_from_slice(&4096u32.to_le_bytes()); // blksize
    a
}

/// Handles one FUSE request.
fn handle(dev: BorrowedFd<'_>, req: &[u8], shared: &Shared, next_fh: &mut u64, max_msg: usize) {
    let opcode = u32_at(req, 4);
    let unique = u64_at(req, 8);
    let body = &req[IN_HEADER..];
    match opcode {
        FUSE_INIT => {
            let mut out = [0u8; 64];
            out[0..4].copy_from_slice(&7u32.to_le_bytes());
            out[4..8].copy_from_slice(&31u32.min(u32_at(body, 4)).to_le_bytes());
            out[8..12].copy_from_slice(&0u32.to_le_bytes()); // max_readahead
            out[16..18].copy_from_slice(&16u16.to_le_bytes()); // max_background
            out[18..20].copy_from_slice(&12u16.to_le_bytes()); // congestion_threshold
            out[20..24].copy_from_slice(&4096u32.to_le_bytes()); // max_write
            out[24..28].copy_from_slice(&1u32.to_le_bytes()); // time_gran
            out[28..30].copy_from_slice(&32u16.to_le_bytes()); // max_pages
            reply_ok(dev, unique, &out);
        }
        FUSE_GETATTR => reply_ok(dev, unique, &attr_out()),
        FUSE_OPEN => {
            let fh = *next_fh;
            *next_fh += 1;
            shared.lock().open(fh);
            let mut out = [0u8; 16];
            out[0..8].copy_from_slice(&fh.to_le_bytes());
            // FOPEN_NOFLUSH: close never waits for the server. A process
            // forked while a connection is open closes it at exec; waiting
            // there on a server whose connection the fork also keeps alive
            // would deadlock.
            out[8..12].copy_from_slice(&(1u32 << 5).to_le_bytes());
            reply_ok(dev, unique, &out);
        }
        FUSE_RELEASE => {
            shared.lock().release(u64_at(body, 0));
            reply_ok(dev, unique, &[]);
        }
        // ENOSYS: the kernel stops sending FLUSH (see FUSE_OPEN).
        FUSE_FLUSH => reply_err(dev, unique, libc::ENOSYS),
        FUSE_ACCESS | FUSE_DESTROY => reply_ok(dev, unique, &[]),
        FUSE_STATFS => {
            let mut out = [0u8; 80];
            out[40..44].copy_from_slice(&4096u32.to_le_bytes()); // bsize
            out[44..48].copy_from_slice(&255u32.to_le_bytes()); // namelen
            out[48..52].copy_from_slice(&4096u32.to_le_bytes()); // frsize
            reply_ok(dev, unique, &out);
        }
        FUSE_FORGET | FUSE_BATCH_FORGET => {}
        FUSE_INTERRUPT => {
            let target = u64_at(body, 0);
            if let Some(errno) = interrupt(shared, target) {
                reply_err(dev, target, errno);
            }
        }
        FUSE_IOCTL => {
            let caller = Caller {
                pid: u32_at(req, 32),
                uid: u32_at(req, 24),
                gid: u32_at(req, 28),
            };
            handle_ioctl(dev, unique, caller, body, shared, max_msg)
        }
        FUSE_LOOKUP => reply_err(dev, unique, libc::ENOENT),
        _ => reply_err(dev, unique, libc::ENOSYS),
    }
}

/// What request `target`, interrupted, is answered at once (see the module
/// doc), whichever thread serves it: `EAGAIN` when it was not taken yet
/// (it never will be, and the client may safely send it again); `EINTR`
/// when it is in service for a caller that is being killed (the kernel
/// would hold the caller until our reply; the application's reply will be
/// discarded); nothing when it is in service for a caller that lives (a
/// handled signal, io_uring task work): the application's reply completes
/// the call as if nothing had happened.
fn interrupt(shared: &Shared, target: u64) -> Option<i32> {
    let mut st = shared.lock();
    if st.withdraw_waiting(target) {
        return Some(libc::EAGAIN);
    }
    let caller = st.caller(target)?;
    // /proc is read without the lock: the serving threads go on.
    drop(st);
    (dying(caller) && shared.lock().let_go(target, LetGo::Gone)).then_some(libc::EINTR)
}

/// Who made a FUSE request, as the kernel wrote it in the request's
/// header.
#[derive(Clone, Copy)]
struct Caller {
    /// The calling thread.
    pid: u32,
    uid: u32,
    gid: u32,
}

/// The parts of a `FUSE_IOCTL` request the server looks at.
struct IoctlIn<'a> {
    unique: u64,
    /// The calling thread.
    pid: u32,
    uid: u32,
    gid: u32,
    /// The connection's file handle.
    fh: u64,
    cmd: u32,
    in_size: usize,
    out_size: usize,
    /// The argument the kernel copied in.
    data: &'a [u8],
}

/// Handles a FUSE ioctl: answers the hello, a pulse and a withdrawal at
/// once, queues a call.
fn handle_ioctl(
    dev: BorrowedFd<'_>,
    unique: u64,
    caller: Caller,
    body: &[u8],
    shared: &Shared,
    max_msg: usize,
) {
    if body.len() < IOCTL_IN {
        return reply_err(dev, unique, libc::EINVAL);
    }
    let io = IoctlIn {
        unique,
        pid: caller.pid,
        uid: caller.uid,
        gid: caller.gid,
        fh: u64_at(body, 0),
        cmd: u32_at(body, 12),
        in_size: u32_at(body, 24) as usize,
        out_size: u32_at(body, 28) as usize,
        data: &body[IOCTL_IN..],
    };
    match io.cmd {
        HELLO_CMD => return hello_reply(dev, unique, max_msg),
        PULSE_CMD | WITHDRAW_CMD if io.in_size != SMALL || io.data.len() < SMALL => {
            return reply_err(dev, unique, libc::EINVAL)
        }
        _ => {}
    }
    if shared.lock().is_dropped(io.fh) {
        return reply_err(dev, unique, libc::ENOTCONN);
    }
    match io.cmd {
        PULSE_CMD => pulse(dev, &io, shared),
        WITHDRAW_CMD => withdraw(dev, &io, shared),
        _ => call(dev, &io, shared),
    }
}

/// Answers the hello ioctl.
fn hello_reply(dev: BorrowedFd<'_>, unique: u64, max_msg: usize) {
    let mut h = [0u8; HELLO_LEN];
    h[0..4].copy_from_slice(&MAGIC.to_le_bytes());
    h[4..6].copy_from_slice(&VERSION.to_le_bytes());
    h[6..8].copy_from_slice(&TAG.to_le_bytes());
    h[8..12].copy_from_slice(&(max_msg as u32).to_le_bytes());
    h[12..16].copy_from_slice(&std::process::id().to_le_bytes());
    let out = [0u8; 16];
    let _ = write_reply(
        dev,
        &[&out_header(unique, 0, out.len() + h.len()), &out, &h],
    );
}

/// Answers ioctl `unique` with a header alone: wire `code`, no payload.
fn reply_code(dev: BorrowedFd<'_>, unique: u64, code: u32) {
    let mut h = [0u8; HDR];
    h[0..4].copy_from_slice(&code.to_le_bytes());
    // fuse_ioctl_out: result, flags, in_iovs, out_iovs (all zero: success).
    let out = [0u8; 16];
    let _ = write_reply(dev, &[&out_header(unique, 0, out.len() + HDR), &out, &h]);
}

/// Queues a call ioctl for the serving threads.
fn call(dev: BorrowedFd<'_>, io: &IoctlIn<'_>, shared: &Shared) {
    let Some(class) = CLASSES.iter().position(|&s| iowr(class_nr(s), s) == io.cmd) else {
        return reply_err(dev, io.unique, libc::ENOTTY);
    };
    let size = CLASSES[class];
    if io.in_size != size || io.out_size != size || io.data.len() < size {
        return reply_err(dev, io.unique, libc::EINVAL);
    }
    let (cmd, len) = (u32_at(io.data, 0), u32_at(io.data, 4) as usize);
    if len > size - HDR || cmd & ONEWAY != 0 {
        // Not what a client sends: a call has no one-way bit (a pulse
        // goes by its own ioctl).
        return drop_conn(dev, io, shared);
    }
    let p = Pending {
        unique: io.unique,
        fh: io.fh,
        pid: io.pid,
        uid: io.uid,
        gid: io.gid,
        cmd,
        kind: Kind::Call,
        out_size: io.out_size,
        data: io.data[HDR..HDR + len].to_vec(),
    };
    let pushed = shared.lock().push(p);
    match pushed {
        Ok(true) => shared.ready.notify_one(),
        Ok(false) => {}
        Err(Refused::Full) => reply_code(dev, io.unique, libc::EAGAIN as u32),
        Err(Refused::Dropped) => reply_err(dev, io.unique, libc::ENOTCONN),
    }
}

/// Queues a pulse and answers its ioctl at once: `Ok`, `EAGAIN` when its
/// connection's pulses fill their depth; a malformed one drops the
/// connection.
fn pulse(dev: BorrowedFd<'_>, io: &IoctlIn<'_>, shared: &Shared) {
    let payload = &io.data[HDR..SMALL];
    if u32_at(io.data, 0) != PULSE | ONEWAY
        || u32_at(io.data, 4) as usize != PULSE_LEN
        || Pulse::decode(payload).is_none()
    {
        return drop_conn(dev, io, shared);
    }
    let p = Pending {
        unique: io.unique,
        fh: io.fh,
        pid: io.pid,
        uid: io.uid,
        gid: io.gid,
        cmd: PULSE,
        kind: Kind::Pulse,
        out_size: 0,
        data: payload.to_vec(),
    };
    let pushed = shared.lock().push(p);
    match pushed {
        Ok(woke) => {
            reply_code(dev, io.unique, 0);
            if woke {
                shared.ready.notify_one();
            }
        }
        Err(Refused::Full) => reply_code(dev, io.unique, libc::EAGAIN as u32),
        Err(Refused::Dropped) => reply_err(dev, io.unique, libc::ENOTCONN),
    }
}

/// A call's deadline passed (the client's alarm thread asks, naming the
/// calling thread): its call is answered `ETIMEDOUT` at once, withdrawn
/// if not taken yet, else let go (the application's answer will be
/// discarded). Then the withdrawal itself is answered. Nothing to
/// withdraw (the answer went first) is no error.
fn withdraw(dev: BorrowedFd<'_>, io: &IoctlIn<'_>, shared: &Shared) {
    let tid = u32_at(io.data, 0);
    let target = {
        let mut st = shared.lock();
        st.call_of(io.fh, tid)
            .filter(|&u| st.withdraw_waiting(u) || st.let_go(u, LetGo::TimedOut))
    };
    if let Some(u) = target {
        reply_err(dev, u, libc::ETIMEDOUT);
    }
    reply_code(dev, io.unique, 0);
}

/// Drops the connection of `io`, which sent something malformed: this
/// ioctl and the call it had waiting are answered `ENOTCONN` (the client
/// sees `Disconnected`), and so is every later one.
fn drop_conn(dev: BorrowedFd<'_>, io: &IoctlIn<'_>, shared: &Shared) {
    let calls = shared.lock().drop_conn(io.fh);
    for u in calls.into_iter().chain([io.unique]) {
        reply_err(dev, u, libc::ENOTCONN);
    }
}

/// True when thread `tid` is gone or has SIGKILL pending (a fatal signal
/// of any kind is turned into a pending SIGKILL by the kernel).
fn dying(tid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{tid}/status")) else {
        return true;
    };
    const SIGKILL_BIT: u64 = 1 << (libc::SIGKILL - 1);
    status
        .lines()
        .filter_map(|l| {
            l.strip_prefix("SigPnd:")
                .or_else(|| l.strip_prefix("ShdPnd:"))
        })
        .filter_map(|v| u64::from_str_radix(v.trim(), 16).ok())
        .any(|mask| mask & SIGKILL_BIT != 0)
}

/// The ioctl number of the class of `size` bytes.
fn class_nr(size: usize) -> u32 {
    CLASSES
        .iter()
        .position(|&s| s == size)
        .map_or(0, |i| i as u32 + 1)
}

impl Core for FuseCore {
    type Worker = FuseWorker;
    type Held = Held<FuseReply>;

    fn worker(self: &Arc<Self>) -> Result<FuseWorker> {
        Ok(FuseWorker {
            cur: Guard::default(),
        })
    }

    /// Nothing to ready: every worker waits on the one queue.
    fn pool(self: &Arc<Self>, _threads: usize) -> Result<()> {
        Ok(())
    }

    fn receive(&self, w: &mut FuseWorker, stop: &AtomicBool) -> Result<Option<Incoming>> {
        if w.cur.get().is_some() {
            // Answer a request the caller forgot about.
            self.reply(w, Status::Err(libc::EIO), &[])?;
        }
        let mut st = self.shared.lock();
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if let Some(p) = st.pop() {
                drop(st);
                let inc = Incoming {
                    cmd: p.cmd,
                    len: p.data.len(),
                    oneway: p.kind == Kind::Pulse,
                };
                w.cur.set(p);
                return Ok(Some(inc));
            }
            if let Some(why) = &st.dead {
                return Err(Error::io(
                    format!("fuse: serving {}", self.path.display()),
                    io::Error::new(io::ErrorKind::BrokenPipe, why.clone()),
                ));
            }
            st = self
                .shared
                .ready
                .wait_timeout(st, self.tick)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    fn data<'a>(&'a self, w: &'a FuseWorker) -> &'a [u8] {
        w.cur.get().map_or(&[], |p| &p.data)
    }

    fn client(&self, w: &FuseWorker) -> Option<Client> {
        w.cur.get().map(client_of)
    }

    fn reply(&self, w: &mut FuseWorker, status: Status, data: &[u8]) -> Result<()> {
        let p = w.cur.take()?;
        let Some(dev) = &self.dev else { return Ok(()) };
        // A client gone is no error here (only a held request says so).
        match answer(dev.as_fd(), &self.shared, &p, status, data, self.max_msg) {
            Err(Error::Disconnected) => Ok(()),
            got => got,
        }
    }

    fn detach(&self, w: &mut FuseWorker) -> Option<Held<FuseReply>> {
        let mut p = w.cur.take().ok()?;
        let client = client_of(&p);
        let data = std::mem::take(&mut p.data);
        let to = FuseReply {
            dev: Arc::downgrade(self.dev.as_ref()?),
            shared: Arc::clone(&self.shared),
            p,
        };
        Some(Held::new(data, to, self.max_msg, Some(client)))
    }

    fn connections(&self) -> usize {
        self.shared.lock().connections()
    }
}

/// Who sent request `p`: its connection (the file handle the kernel gave
/// the client's open), and the user, group and process of the calling
/// thread as the kernel wrote them in the request's header (the process
/// read from the thread's `/proc` entry; while the call waits, its thread
/// is there).
fn client_of(p: &Pending) -> Client {
    let tid = p.pid as i32;
    Client {
        id: p.fh,
        creds: Some(Creds {
            pid: oslayer::ids::process_of(tid).unwrap_or(tid),
            uid: p.uid,
            gid: p.gid,
        }),
    }
}

/// Answers request `p` on `dev` with `status` and `data` (up to
/// `max_msg`), unless it was let go meanwhile: its caller timed out (the
/// answer is discarded) or died (`Disconnected`). A pulse needs no answer.
fn answer(
    dev: BorrowedFd<'_>,
    shared: &Shared,
    p: &Pending,
    status: Status,
    data: &[u8],
    max_msg: usize,
) -> Result<()> {
    let (code, data, verdict) = reply_parts(status, data, max_msg);
    match deliver(dev, shared, p, code, data) {
        true => verdict,
        false => Err(Error::Disconnected),
    }
}

/// Writes the reply (wire `code`, then `data`, within the size rule) to
/// the request `p` on `/dev/fuse` and lets the connection's next request
/// go. False when its caller is gone (before, or the write found it so);
/// a request that timed out meanwhile is no failure: nobody waits.
fn deliver(dev: BorrowedFd<'_>, shared: &Shared, p: &Pending, code: u32, data: &[u8]) -> bool {
    if p.kind == Kind::Pulse {
        return true;
    }
    let finished = shared.lock().finish(p.unique);
    // The connection's next request may be handed out now.
    shared.ready.notify_one();
    match finished {
        Some(None) => {}
        None | Some(Some(LetGo::TimedOut)) => return true,
        Some(Some(LetGo::Gone)) => return false,
    }
    let mut h = [0u8; HDR];
    h[0..4].copy_from_slice(&code.to_le_bytes());
    h[4..8].copy_from_slice(&(data.len() as u32).to_le_bytes());
    // A reply longer than the client's class goes back as its header
    // alone: the client reports ReplyTooLarge.
    let body: &[u8] = if HDR + data.len() <= p.out_size {
        data
    } else {
        &[]
    };
    let ioctl_out = [0u8; 16];
    let total = ioctl_out.len() + HDR + body.len();
    let wrote = write_reply(
        dev,
        &[&out_header(p.unique, 0, total), &ioctl_out, &h, body],
    );
    // ENOENT: the request is gone, its caller killed meanwhile.
    !matches!(wrote, Err(e) if e.raw_os_error() == Some(libc::ENOENT))
}

/// Where a held request is answered: `/dev/fuse`, while the channel has
/// it open (after, the kernel has aborted the connection: nobody waits).
pub(crate) struct FuseReply {
    dev: Weak<OwnedFd>,
    shared: Arc<Shared>,
    /// The request (its payload moved to the held request).
    p: Pending,
}

impl ReplyTo for FuseReply {
    fn send(&mut self, code: u32, data: &[u8]) -> bool {
        match self.dev.upgrade() {
            Some(dev) => deliver(dev.as_fd(), &self.shared, &self.p, code, data),
            None => true,
        }
    }
}

// ------------------------------------------------------------ client

/// The client side: the endpoint file, open.
struct FuseClient {
    /// Shared with the alarm's withdrawal.
    fd: Arc<OwnedFd>,
    buf: Vec<u8>,
    max_msg: usize,
    /// Every call's deadline, from its start.
    timeout: Option<Duration>,
    /// Withdraws the call under way at its deadline (made with the first
    /// timeout).
    alarm: Option<Alarm>,
    /// The thread making the call under way, which the withdrawal names.
    tid: Arc<AtomicU32>,
}

impl FuseClient {
    /// Opens the endpoint at `path`, waiting up to `opts.wait` for it.
    fn connect(path: &Path, opts: &Options) -> Result<FuseClient> {
        let deadline = opts.wait.map(|w| Instant::now() + w);
        loop {
            match open_endpoint(path) {
                Ok(fd) => match hello(&fd) {
                    Ok((max_msg, _pid)) => {
                        return Ok(FuseClient {
                            fd: Arc::new(fd),
                            buf: vec![0; CLASSES[CLASSES.len() - 1]],
                            max_msg: max_msg.min(MAX_PAYLOAD),
                            timeout: None,
                            alarm: None,
                            tid: Arc::new(AtomicU32::new(0)),
                        })
                    }
                    // A plain file (not mounted yet, or left behind) or a
                    // dead mount: nobody serves it (yet).
                    Err(e)
                        if is_gone(&e)
                            || matches!(e.raw_os_error(), Some(libc::ENOTTY | libc::EINVAL)) => {}
                    Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                        return Err(Error::Protocol(format!("{}: {e}", path.display())))
                    }
                    Err(e) => {
                        return Err(Error::io(format!("fuse: hello to {}", path.display()), e))
                    }
                },
                Err(e) if matches!(e.raw_os_error(), Some(libc::ENOENT)) || is_gone(&e) => {}
                Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                    return Err(wrong_transport(path, opts));
                }
                Err(e) => return Err(Error::io(format!("fuse: open {}", path.display()), e)),
            }
            match deadline {
                Some(d) if Instant::now() < d => std::thread::sleep(Duration::from_millis(10)),
                _ => {
                    return Err(Error::NotFound {
                        path: path.to_path_buf(),
                    })
                }
            }
        }
    }
}

/// The error for a fuse client at a socket endpoint: asks the socket's
/// server which transport it speaks.
fn wrong_transport(path: &Path, opts: &Options) -> Error {
    let opts = Options {
        wait: None,
        ..opts.clone()
    };
    match rendezvous::connect(path, Family::Uds, &opts) {
        Err(Error::WrongTransport { path, found, .. }) => Error::WrongTransport {
            path,
            expected: "fuse",
            found,
        },
        Ok(_) => Error::WrongTransport {
            path: path.to_path_buf(),
            expected: "fuse",
            found: "uds".into(),
        },
        Err(e) => e,
    }
}

impl FuseClient {
    /// The error of a call past its deadline.
    fn timed_out(&self) -> Error {
        Error::TimedOut {
            timeout: self.timeout.unwrap_or_default(),
        }
    }

    /// Arms the alarm for a call by this thread with `deadline`.
    fn arm(&mut self, deadline: Instant) -> Result<()> {
        let tid = oslayer::thread::gettid() as u32;
        self.tid.store(tid, Ordering::Release);
        let (fd, tid) = (Arc::clone(&self.fd), Arc::clone(&self.tid));
        let alarm = self.alarm.get_or_insert_with(|| {
            Alarm::new(move || {
                let mut b = [0u8; SMALL];
                b[0..4].copy_from_slice(&tid.load(Ordering::Acquire).to_le_bytes());
                // The server gone: the call ends by itself then.
                let _ = ioctl(&fd, WITHDRAW_CMD, &mut b);
            })
        });
        alarm
            .arm(deadline)
            .map_err(|e| Error::io("fuse: start the alarm thread", e))
    }

    /// Sends the request already in the first `size` bytes of our buffer
    /// and waits for its answer there.
    fn exchange(&mut self, size: usize, deadline: Option<Instant>) -> Result<()> {
        let cmd = u32_at(&self.buf, 0);
        let len = u32_at(&self.buf, 4);
        let buf = &mut self.buf[..size];
        let got = loop {
            match ioctl(&self.fd, iowr(class_nr(size), size), buf) {
                // Interrupted before the server took it (a handled signal,
                // or io_uring task work pending on this thread): it was
                // never performed, send it again (within the deadline).
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        break Err(io::Error::from_raw_os_error(libc::ETIMEDOUT));
                    }
                    buf[0..4].copy_from_slice(&cmd.to_le_bytes());
                    buf[4..8].copy_from_slice(&len.to_le_bytes());
                }
                got => break got,
            }
        };
        got.map_err(|e| match e.raw_os_error() {
            _ if is_gone(&e) => Error::Disconnected,
            Some(libc::ETIMEDOUT) => self.timed_out(),
            Some(libc::EINTR) => Error::io(
                "fuse: call interrupted by a signal (its outcome is unknown)",
                e,
            ),
            _ => Error::io("fuse: ioctl", e),
        })
    }
}

/// How a fuse call's deadline works (see the module doc): the call's
/// ioctl blocks in the kernel until the server answers; at the deadline
/// the process's alarm thread sends a *withdrawal* ioctl on the same file,
/// naming the calling thread, and the server's reader thread answers the
/// call `ETIMEDOUT` at once (withdrawn if not taken yet, let go if in
/// service: the application's late answer is then discarded). The alarm
/// is disarmed before the call returns, waiting for a withdrawal under
/// way, so a withdrawal never reaches the next call.
impl ClientConnection for FuseClient {
    fn call(&mut self, cmd: u32, req: &[u8], reply: &mut [u8]) -> Result<usize> {
        if req.len() > self.max_msg {
            return Err(Error::TooLarge {
                len: req.len(),
                max: self.max_msg,
            });
        }
        let need = HDR + req.len().max(reply.len().min(self.max_msg));
        let size = CLASSES
            .iter()
            .copied()
            .find(|&s| s >= need)
            .unwrap_or(CLASSES[CLASSES.len() - 1]);
        let buf = &mut self.buf[..size];
        buf[0..4].copy_from_slice(&cmd.to_le_bytes());
        buf[4..8].copy_from_slice(&(req.len() as u32).to_le_bytes());
        buf[HDR..HDR + req.len()].copy_from_slice(req);
        match self.timeout {
            None => self.exchange(size, None)?,
            Some(timeout) => {
                let deadline = Instant::now() + timeout;
                self.arm(deadline)?;
                let got = self.exchange(size, Some(deadline));
                if let Some(a) = &self.alarm {
                    a.disarm();
                }
                got?
            }
        }
        let buf = &self.buf[..size];
        let status = u32_at(buf, 0);
        let len = u32_at(buf, 4) as usize;
        Status::check_reply(status, len, reply.len())?;
        if HDR + len > size {
            return Err(Error::Protocol(format!(
                "fuse reply of {len} bytes in a {size}-byte buffer"
            )));
        }
        reply[..len].copy_from_slice(&buf[HDR..HDR + len]);
        Ok(len)
    }

    fn max_msg(&self) -> usize {
        self.max_msg
    }

    fn set_timeout(&mut self, timeout: Option<Duration>) -> Result<()> {
        self.timeout = timeout;
        Ok(())
    }

    /// By its own ioctl, which the server's reader thread answers at once
    /// (it may wait for that thread, never for a handler): queued if the
    /// connection has fewer than `PULSE_DEPTH` (32) pulses not yet taken,
    /// else refused.
    fn send_pulse(&mut self, payload: &[u8; PULSE_LEN]) -> Result<()> {
        let mut b = [0u8; SMALL];
        b[0..4].copy_from_slice(&(PULSE | ONEWAY).to_le_bytes());
        b[4..8].copy_from_slice(&(PULSE_LEN as u32).to_le_bytes());
        b[HDR..].copy_from_slice(payload);
        ioctl(&self.fd, PULSE_CMD, &mut b).map_err(|e| match is_gone(&e) {
            true => Error::Disconnected,
            false => Error::io("fuse: pulse ioctl", e),
        })?;
        match u32_at(&b, 0) {
            0 => Ok(()),
            c if c == libc::EAGAIN as u32 => Err(Error::PulseQueueFull),
            code => Err(Error::Remote { code: code as i32 }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Call `unique` from thread `pid` on a connection of its own.
    fn pending(unique: u64, pid: u32) -> Pending {
        Pending {
            unique,
            fh: unique,
            pid,
            uid: 0,
            gid: 0,
            cmd: 1,
            kind: Kind::Call,
            out_size: CLASSES[0],
            data: unique.to_le_bytes().to_vec(),
        }
    }

    /// The INTERRUPT rules hold for every request in service, whichever
    /// thread took it: a caller alive keeps its request, a dying one is
    /// let go (and the late answer is Disconnected), a request not taken
    /// yet is withdrawn and never handed out.
    #[test]
    fn interrupts_reach_every_request_in_service_and_the_queue() {
        let shared = Shared {
            state: Mutex::new(State::default()),
            ready: Condvar::new(),
        };
        let alive = oslayer::thread::gettid() as u32;
        // No thread has this id (pid_max is at most 2^22): "gone".
        let gone = u32::MAX - 1;
        for (unique, pid) in [(10, alive), (11, gone), (12, alive), (13, gone)] {
            shared.lock().open(unique);
            shared.lock().push(pending(unique, pid)).expect("queued");
        }
        // Two requests in service (two pool threads), two waiting.
        let a = shared.lock().pop().expect("first");
        let b = shared.lock().pop().expect("second");
        assert_eq!((a.unique, b.unique), (10, 11));
        assert_eq!(interrupt(&shared, 10), None, "a live caller's request");
        assert_eq!(
            interrupt(&shared, 11),
            Some(libc::EINTR),
            "a dying caller's"
        );
        assert_eq!(interrupt(&shared, 11), None, "let go once");
        assert_eq!(interrupt(&shared, 12), Some(libc::EAGAIN), "not taken yet");
        assert_eq!(interrupt(&shared, 99), None, "unknown");
        // The answer to the request let go says so; the other goes.
        assert_eq!(shared.lock().finish(11), Some(Some(LetGo::Gone)));
        assert_eq!(shared.lock().finish(10), Some(None));
        assert_eq!(shared.lock().finish(10), None, "answered once");
        // The withdrawn request is skipped: the next one is 13.
        assert_eq!(shared.lock().pop().map(|p| p.unique), Some(13));
        assert!(shared.lock().pop().is_none());
    }
}
