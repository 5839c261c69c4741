//! A stand-in for journald's socket, for `dbus-broker-launch`, which opens
//! `/run/systemd/journal/socket` at start and fails without it. We bind a
//! datagram socket in the bus's directory, drain it on a thread (so the
//! daemon never blocks on a full socket) and keep the text for errors.

use std::io;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context as _, Result};

/// The journald directory the launcher looks in.
const JOURNAL_DIR: &str = "/run/systemd/journal";
/// At most this much of the log is kept.
const KEEP: usize = 16 * 1024;

/// A drained private journald socket.
pub(super) struct JournalSink {
    stop: Arc<AtomicBool>,
    text: Arc<Mutex<Vec<u8>>>,
    thread: Option<JoinHandle<()>>,
}

/// Where to mount what, for a daemon to see `root`'s socket as journald's.
pub(super) struct Placement {
    /// Our directory to bind-mount.
    pub source: PathBuf,
    /// The host's directory it covers, in the daemon's namespace only.
    pub target: PathBuf,
}

/// The host's journald socket, if it has one (then no namespace is needed).
pub(super) fn host_has_journal() -> bool {
    Path::new(JOURNAL_DIR).join("socket").exists()
}

/// Chooses the deepest existing directory of `/run/systemd/journal`,
/// `/run/systemd`, `/run` to cover with `root`, and makes the rest of the
/// path inside `root`: the socket is then `<root>/<rest>/socket`.
pub(super) fn placement(root: &Path) -> Result<(Placement, PathBuf)> {
    let full = Path::new(JOURNAL_DIR);
    let target = full
        .ancestors()
        .find(|p| p.is_dir() && *p != Path::new("/"))
        .context("no /run directory to mount a journald socket on")?;
    let rest = full.strip_prefix(target).unwrap_or(Path::new(""));
    let dir = root.join(rest);
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok((
        Placement {
            source: root.to_path_buf(),
            target: target.to_path_buf(),
        },
        dir.join("socket"),
    ))
}

impl JournalSink {
    /// Binds the socket at `path` and starts draining it.
    pub(super) fn bind(path: &Path) -> Result<JournalSink> {
        let sock = UnixDatagram::bind(path)
            .with_context(|| format!("binding a journald socket at {}", path.display()))?;
        sock.set_read_timeout(Some(Duration::from_millis(100)))?;
        let stop = Arc::new(AtomicBool::new(false));
        let text = Arc::new(Mutex::new(Vec::new()));
        let (s, t) = (stop.clone(), text.clone());
        let thread = std::thread::Builder::new()
            .name("dbus-journal".into())
            .spawn(move || drain(&sock, &s, &t))
            .context("starting the journald drain thread")?;
        Ok(JournalSink {
            stop,
            text,
            thread: Some(thread),
        })
    }

    /// The log so far, as text.
    pub(super) fn text(&self) -> String {
        let t = self.text.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&t).into_owned()
    }
}

fn drain(sock: &UnixDatagram, stop: &AtomicBool, text: &Mutex<Vec<u8>>) {
    let mut buf = vec![0u8; 64 * 1024];
    while !stop.load(Ordering::Relaxed) {
        match sock.recv(&mut buf) {
            Ok(n) => {
                let mut t = text.lock().unwrap_or_else(|e| e.into_inner());
                if t.len() < KEEP {
                    // Journal fields are KEY=value lines; keep the messages.
                    for line in buf[..n].split(|&b| b == b'\n') {
                        if let Some(m) = line.strip_prefix(b"MESSAGE=") {
                            t.extend_from_slice(m);
                            t.push(b'\n');
                        }
                    }
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}

impl Drop for JournalSink {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
