//! `fifo`: two named pipes (FIFOs) per connection, made by the server beside
//! the endpoint and opened by name on both sides. Messages are framed on the
//! byte streams as in `pipe`.
//!
//! **Names.** `<endpoint>.<server pid>.<conn>.c2s.lock.lock` and
//! `<endpoint>.<server pid>.<conn>.s2c.lock.lock`, mode 0600. The namespace refuses endpoint names
//! ending in `.lock`, and an endpoint's lock file is `<endpoint>.lock`, so a
//! name ending in `.lock.lock` is neither an endpoint nor a lock file; the
//! decimal pid and connection number make the endpoint recoverable from the
//! name, so two endpoints' FIFOs never collide either.
//!
//! **Opening without ever blocking.** Opening a FIFO blocks until the other
//! end is opened too, so the order matters:
//! 1. the server (in its accept path) makes both FIFOs, opens c2s
//!    `O_RDONLY | O_NONBLOCK` and s2c `O_RDWR` (which never blocks on Linux):
//!    a placeholder writer, so the client never reads a spurious end of file
//!    from s2c before the server opened it properly. The hello carries the
//!    names and the FIFOs' device and inode numbers.
//! 2. the client opens s2c `O_RDONLY | O_NONBLOCK`, then c2s
//!    `O_WRONLY | O_NONBLOCK` (which fails at once with `ENXIO`, rather than
//!    blocking, if the server died meanwhile), checks that both are the
//!    server's FIFOs, clears `O_NONBLOCK` and writes an 8-byte *opened* frame
//!    on c2s.
//! 3. the server, on that frame, opens s2c `O_WRONLY`, closes its `O_RDWR`
//!    placeholder and unlinks both names: from then on the namespace holds
//!    nothing for this connection.
//!
//! A client that dies during the handshake is dropped like any other, and
//! the server unlinks the names then. So is a live client that has not
//! confirmed within the rendezvous handshake timeout (or its wire's limit,
//! if longer): it never opened the FIFOs, or never said so, and would
//! otherwise keep their names in the namespace for as long as it keeps its
//! session. A server killed during a handshake
//! leaves them behind: whoever claims the endpoint next removes them
//! (`clean_stale`, the transport table's hook), as it replaces the stale
//! endpoint.
//!
//! **Liveness.** After the handshake each side holds only its own ends (it
//! reads one FIFO and writes the other), so a dead peer reads as end of file
//! and a write to it fails with `EPIPE` (raising SIGPIPE, which Rust
//! programs ignore, as with `pipe`): `EOF_ON_DEATH` holds. The client
//! writes its requests in packets, as with `pipe`, and a poke's write end
//! is opened through `/proc/self/fd` (the names are gone by then).

use std::ffi::OsStr;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::transport::api::Options;
use crate::transport::serve::mechanism::{ConnCtx, Mechanism};
use crate::transport::wire::doorman::Wake;
use crate::transport::wire::framing::{
    frame_head, head, poll_then_recv, Packets, StreamWire, Wire, HEAD,
};
use crate::transport::wire::rendezvous::{Family, HANDSHAKE_TIMEOUT};

/// Name suffix of the client-to-server FIFO.
const C2S: &str = ".c2s.lock.lock";
/// Name suffix of the server-to-client FIFO.
const S2C: &str = ".s2c.lock.lock";
/// Code of the frame a client sends once it has both FIFOs open.
const OPENED: u32 = u32::from_le_bytes(*b"FIFO");
/// Length of the FIFOs' identities at the start of the hello extra.
const IDS_LEN: usize = 32;

/// Named pipes in the namespace.
#[derive(Debug, Clone, Copy, Default)]
pub struct Fifo;

/// A FIFO's identity: (device, inode).
type Id = (u64, u64);

/// A connection's two FIFO paths.
struct Names {
    c2s: PathBuf,
    s2c: PathBuf,
}

impl Names {
    /// The names of connection `conn` of server `pid` on `endpoint`.
    fn new(endpoint: &Path, pid: u32, conn: u64) -> Names {
        let mut base = endpoint.as_os_str().to_owned();
        base.push(format!(".{pid}.{conn}"));
        Names::from_base(base.as_os_str())
    }

    fn from_base(base: &OsStr) -> Names {
        let with = |suffix: &str| {
            let mut p = base.to_owned();
            p.push(suffix);
            PathBuf::from(p)
        };
        Names {
            c2s: with(C2S),
            s2c: with(S2C),
        }
    }

    /// The common part of both names (what the client is told).
    fn base(&self) -> &[u8] {
        let b = self.c2s.as_os_str().as_bytes();
        &b[..b.len() - C2S.len()]
    }
}

/// The FIFOs a server made for a connection, unlinked when dropped.
struct Made(Names);

impl Drop for Made {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.0.c2s);
        let _ = fs::remove_file(&self.0.s2c);
    }
}

/// True when `name` (a directory entry) is one of the FIFOs a server of the
/// endpoint named `base` (in the same directory) makes.
fn is_fifo_name(base: &[u8], name: &[u8]) -> bool {
    let Some(rest) = name.strip_prefix(base).and_then(|r| r.strip_prefix(b".")) else {
        return false;
    };
    let Some(mid) = rest
        .strip_suffix(C2S.as_bytes())
        .or_else(|| rest.strip_suffix(S2C.as_bytes()))
    else {
        return false;
    };
    let digits = |s: &[u8]| !s.is_empty() && s.iter().all(u8::is_ascii_digit);
    let mut parts = mid.split(|&b| b == b'.');
    matches!(
        (parts.next(), parts.next(), parts.next()),
        (Some(pid), Some(conn), None) if digits(pid) && digits(conn)
    )
}

/// How a FIFO is opened.
#[derive(Debug, Clone, Copy)]
enum Access {
    Read,
    Write,
    /// Read and write: never blocks, never sees end of file.
    Both,
}

/// Opens the FIFO at `path` without blocking, checks that it is a FIFO (and
/// the expected one, when `want` is given), then makes it blocking.
fn open_fifo(path: &Path, access: Access, want: Option<Id>) -> io::Result<(OwnedFd, Id)> {
    let (read, write) = match access {
        Access::Read => (true, false),
        Access::Write => (false, true),
        Access::Both => (true, true),
    };
    let f: File = OpenOptions::new()
        .read(read)
        .write(write)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("open {}: {e}", path.display())))?;
    let md = f.metadata()?;
    let id = (md.dev(), md.ino());
    if !md.file_type().is_fifo() || want.is_some_and(|w| w != id) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{} is not the server's FIFO", path.display()),
        ));
    }
    let fd = OwnedFd::from(f);
    oslayer::fd::set_nonblocking(fd.as_fd(), false)?;
    Ok((fd, id))
}

fn invalid(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.to_string())
}

/// One end of a FIFO connection.
pub(crate) struct FifoWire {
    stream: StreamWire,
    /// Server side until the client's *opened* frame: the names (unlinked
    /// when this is dropped) and the identity of s2c.
    pending: Option<(Made, Id)>,
    /// Server side, while `pending`: when the client must have confirmed
    /// by (set by [`Wire::bound`]).
    confirm_by: Option<Instant>,
}

impl FifoWire {
    /// Server side, step 3: the client has both FIFOs open. Reads its
    /// frame, swaps the placeholder for a write-only end, unlinks the names.
    /// Read as any message (so a client that stops inside it holds
    /// nobody: see [`Wire::bound`]), into `frame`.
    fn finish_handshake(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        if self.stream.recv(frame)?.is_none() {
            return Ok(None);
        }
        if frame_head(frame) != (OPENED, 0) {
            return Err(invalid("expected the client's opened frame"));
        }
        let Some((made, s2c_id)) = &self.pending else {
            return Err(invalid("no handshake pending"));
        };
        // Never blocks: our own placeholder is a reader, so is the client.
        let (tx, _) = open_fifo(&made.0.s2c, Access::Write, Some(*s2c_id))?;
        // Room for a whole reply (see `pipe.rs`); best effort.
        let _ = oslayer::pipe::set_capacity(tx.as_fd(), frame.len());
        self.stream.set_tx(tx)?;
        self.pending = None;
        self.confirm_by = None;
        Err(io::ErrorKind::WouldBlock.into())
    }
}

impl Wire for FifoWire {
    fn send(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<()> {
        self.stream.send(head, data)
    }

    fn send_now(&mut self, head: &[u8; HEAD], data: &[u8]) -> io::Result<bool> {
        self.stream.send_now(head, data)
    }

    fn recv(&mut self, frame: &mut [u8]) -> io::Result<Option<usize>> {
        if self.pending.is_some() {
            return self.finish_handshake(frame);
        }
        self.stream.recv(frame)
    }

    fn recv_timeout(&mut self, frame: &mut [u8], timeout: Duration) -> io::Result<Option<usize>> {
        if self.pending.is_some() {
            // The handshake's "opened" frame: waited for as any wire would.
            return poll_then_recv(self, frame, timeout);
        }
        self.stream.recv_timeout(frame, timeout)
    }

    fn poll_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.stream.poll_fd()
    }

    fn waker(&mut self, tick: Duration) -> Option<std::sync::Arc<dyn Wake>> {
        match self.pending {
            // The handshake's frame is waited for in `poll`, for a moment.
            Some(_) => None,
            None => self.stream.waker(tick),
        }
    }

    fn bound(&mut self, limit: Duration) -> io::Result<()> {
        if self.pending.is_some() {
            self.confirm_by = Some(Instant::now() + limit.max(HANDSHAKE_TIMEOUT));
        }
        self.stream.bound(limit)
    }

    /// A message begun and not finished in time, or a handshake not
    /// confirmed in time (a client that never opens its FIFOs sends
    /// nothing, so nothing else would ever drop it).
    fn overdue(&self, now: Instant) -> bool {
        let unconfirmed = self.pending.is_some() && self.confirm_by.is_some_and(|by| now > by);
        unconfirmed || self.stream.overdue(now)
    }

    fn has_buffered(&self) -> bool {
        self.stream.has_buffered()
    }

    fn unfinished(&self) -> bool {
        self.pending.is_some() || self.stream.unfinished()
    }
}

/// Removes the FIFOs a dead server of `endpoint` left beside it (the
/// caller holds the endpoint's claim); true if there were any.
pub(crate) fn clean_stale(endpoint: &Path) -> bool {
    let (Some(dir), Some(base)) = (endpoint.parent(), endpoint.file_name()) else {
        return false;
    };
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    let mut found = false;
    // We hold the endpoint's claim and have made nothing yet: any FIFO
    // of this endpoint was left by a dead server.
    for e in entries.flatten() {
        if is_fifo_name(base.as_bytes(), e.file_name().as_bytes())
            && e.file_type().is_ok_and(|t| t.is_fifo())
        {
            found |= fs::remove_file(e.path()).is_ok();
        }
    }
    found
}

impl Mechanism for Fifo {
    type W = FifoWire;
    const FAMILY: Family = Family::Fifo;
    const EOF_ON_DEATH: bool = true;
    /// A client that dies before it opened its FIFOs leaves no end to read
    /// end of file from: its session's hang-up tells.
    const KEEP_SESSION: bool = true;

    fn server_side(
        &self,
        ctx: ConnCtx<'_>,
        _opts: &Options,
    ) -> io::Result<(FifoWire, Vec<OwnedFd>, Vec<u8>)> {
        // First, so that any failure below unlinks what was made.
        let made = Made(Names::new(ctx.endpoint, std::process::id(), ctx.conn));
        let names = &made.0;
        oslayer::fifo::mkfifo(&names.c2s, 0o600)?;
        oslayer::fifo::mkfifo(&names.s2c, 0o600)?;
        let (rx, c2s_id) = open_fifo(&names.c2s, Access::Read, None)?;
        let (placeholder, s2c_id) = open_fifo(&names.s2c, Access::Both, None)?;
        let mut extra = Vec::with_capacity(IDS_LEN + names.base().len());
        for v in [c2s_id.0, c2s_id.1, s2c_id.0, s2c_id.1] {
            extra.extend_from_slice(&v.to_le_bytes());
        }
        extra.extend_from_slice(names.base());
        let wire = FifoWire {
            stream: StreamWire::pipes(rx, placeholder, Packets::Receive)?,
            pending: Some((made, s2c_id)),
            confirm_by: None,
        };
        Ok((wire, Vec::new(), extra))
    }

    fn client_side(
        &self,
        _fds: Vec<OwnedFd>,
        extra: &[u8],
        _opts: &Options,
    ) -> io::Result<FifoWire> {
        if extra.len() <= IDS_LEN {
            return Err(invalid("hello lacks the FIFO names"));
        }
        let u64_at = |i: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&extra[i..i + 8]);
            u64::from_le_bytes(b)
        };
        let c2s_id = (u64_at(0), u64_at(8));
        let s2c_id = (u64_at(16), u64_at(24));
        // Not ours to unlink: the server does, once we confirmed.
        let names = Names::from_base(OsStr::from_bytes(&extra[IDS_LEN..]));
        // s2c first: the server's c2s reader exists already, and our s2c
        // reader must exist before the server opens s2c write-only.
        let (rx, _) = open_fifo(&names.s2c, Access::Read, Some(s2c_id))?;
        let (tx, _) = open_fifo(&names.c2s, Access::Write, Some(c2s_id))?;
        let mut stream = StreamWire::pipes(rx, tx, Packets::Send)?;
        stream.send(&head(OPENED, 0), &[])?;
        Ok(FifoWire {
            stream,
            pending: None,
            confirm_by: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::api::{Status, Transport};
    use crate::transport::serve::mechanism::WireTransport;

    #[test]
    fn fifo_names_are_recognised() {
        let n = Names::new(Path::new("/ns/echo/0"), 42, 7);
        let base = n.base().to_vec();
        assert_eq!(base, b"/ns/echo/0.42.7");
        assert_eq!(n.c2s, Path::new("/ns/echo/0.42.7.c2s.lock.lock"));
        assert!(is_fifo_name(b"0", b"0.42.7.c2s.lock.lock"));
        assert!(is_fifo_name(
            b"0",
            b"0.1.18446744073709551615.s2c.lock.lock"
        ));
        for other in [
            "0",
            "0.lock",
            "0.42.c2s.lock.lock",
            "0.42.7.8.c2s.lock.lock",
            "0.x.7.c2s.lock.lock",
            "0.42.7.c2s.lock",
            "00.42.7.c2s.lock.lock",
            "1.42.7.c2s.lock.lock",
        ] {
            assert!(!is_fifo_name(b"0", other.as_bytes()), "{other}");
        }
    }

    /// Entries of `dir` that are FIFOs.
    fn fifos_in(dir: &Path) -> Vec<PathBuf> {
        fs::read_dir(dir)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_type().is_ok_and(|t| t.is_fifo()))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The fifo transport as the table makes it (tests stay below the
    /// channel: they use the transport's own API).
    fn fifo() -> WireTransport<Fifo> {
        WireTransport {
            mech: Fifo,
            name: "fifo",
            oneway: true,
        }
    }

    #[test]
    fn names_unlinked_once_the_client_has_opened() {
        let tmp = tempfile::Builder::new()
            .prefix("msgpass-fifo-u-")
            .tempdir()
            .expect("dir");
        let dir = tmp.path().to_path_buf();
        let path = dir.join("ep");
        let mut server = fifo().serve(&path, &Options::default()).expect("serve");
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let served = std::thread::spawn({
            let stop = std::sync::Arc::clone(&stop);
            move || {
                while let Ok(Some(_)) = server.receive(&stop) {
                    let _ = server.reply(Status::Ok, b"ok");
                }
            }
        });
        // Connected, no call made: the server unlinks on the opened frame.
        let mut conn = fifo().connect(&path, &Options::default()).expect("open");
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !fifos_in(&dir).is_empty() {
            assert!(std::time::Instant::now() < deadline, "{:?}", fifos_in(&dir));
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let mut buf = [0u8; 8];
        assert_eq!(conn.call(1, b"hi", &mut buf).expect("call"), 2);
        drop(conn);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        served.join().expect("server thread");
    }

    /// The hook the transport table runs when a server claims an endpoint
    /// (its lock held: whoever made FIFOs there is dead).
    #[test]
    fn stale_fifos_removed_when_a_server_starts() {
        let tmp = tempfile::Builder::new()
            .prefix("msgpass-fifo-")
            .tempdir()
            .expect("dir");
        let dir = tmp.path().to_path_buf();
        let endpoint = dir.join("stale");
        let stale = Names::new(&endpoint, 1, 1);
        oslayer::fifo::mkfifo(&stale.c2s, 0o600).expect("mkfifo");
        oslayer::fifo::mkfifo(&stale.s2c, 0o600).expect("mkfifo");
        // Not ours: an endpoint that merely looks alike is left alone.
        let bystander = dir.join("stale.1.1.c2s");
        fs::write(&bystander, b"").expect("bystander");
        assert!(clean_stale(&endpoint), "found");
        assert!(
            !stale.c2s.exists() && !stale.s2c.exists(),
            "stale FIFOs left behind"
        );
        assert!(bystander.exists());
        assert!(!clean_stale(&endpoint), "nothing left to find");
    }
}
