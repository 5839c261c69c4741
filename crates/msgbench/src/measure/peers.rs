//! Starting, talking to and stopping the processes of one measurement:
//! this executable re-run as a hidden subcommand (`msgbench broker-peer
//! ...`, `msgbench ipc-peer ...`), and reading their CPU clocks. Each runs
//! in its own process group, so a Ctrl-C at the terminal reaches only
//! the suite, which stops them in order; each is told the suite's pid
//! (`--die-with-parent PID`) so that it dies with the suite
//! (PR_SET_PDEATHSIG). Every one is reaped, also on drop.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use clap::{Args, Subcommand};
use oslayer::clock::process_cpu_ns_of;
use oslayer::process::{self, Pid, Signal};

/// The command line of a peer's hidden subcommand: its role, and the
/// suite's pid so that it dies with the suite.
#[derive(Debug, Args)]
pub struct PeerArgs<R: Subcommand> {
    /// Which process this is.
    #[command(subcommand)]
    pub role: R,
    /// End with SIGTERM when process PID (the suite) dies.
    #[arg(long = "die-with-parent", value_name = "PID", global = true)]
    pub die_with_parent: Option<i32>,
}

impl<R: Subcommand> PeerArgs<R> {
    /// Asks for SIGTERM when the suite dies (PR_SET_PDEATHSIG), and fails
    /// if it is already gone; nothing without `--die-with-parent`.
    pub fn die_with_parent(&self) -> Result<()> {
        if let Some(ppid) = self.die_with_parent {
            process::die_with(ppid, Signal::TERM).context("--die-with-parent")?;
        }
        Ok(())
    }
}

/// How often [`Peer::line_unless`] looks at its stop flag.
pub const STOP_POLL: Duration = Duration::from_millis(100);

/// Most of a peer's standard error kept for error messages.
const STDERR_KEPT: usize = 2000;

/// One running peer process.
pub struct Peer {
    what: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    stderr: Arc<Mutex<String>>,
}

impl Peer {
    /// Starts `msgbench COMMAND --die-with-parent PID ARGS` (this
    /// executable); `what` names it in errors.
    pub fn start(command: &str, what: impl Into<String>, args: &[String]) -> Result<Peer> {
        let exe = std::env::current_exe().context("cannot find my own executable")?;
        Peer::start_with(&exe, command, what, args)
    }

    /// Starts `EXE COMMAND --die-with-parent PID ARGS`, for a caller that
    /// is not msgbench itself (a test).
    pub fn start_with(
        exe: &Path,
        command: &str,
        what: impl Into<String>,
        args: &[String],
    ) -> Result<Peer> {
        let what = what.into();
        let mut child = Command::new(exe)
            .arg(command)
            .arg("--die-with-parent")
            .arg(std::process::id().to_string())
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .spawn()
            .with_context(|| format!("cannot start {what}"))?;
        let (tx, lines) = mpsc::channel();
        let out = child.stdout.take().expect("piped");
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(std::io::Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().expect("piped");
        let kept = Arc::clone(&stderr);
        std::thread::spawn(move || {
            let mut buf = [0u8; 512];
            while let Ok(n @ 1..) = err.read(&mut buf) {
                let mut k = kept.lock().unwrap_or_else(|p| p.into_inner());
                if k.len() < STDERR_KEPT {
                    k.push_str(&String::from_utf8_lossy(&buf[..n]));
                }
            }
        });
        Ok(Peer {
            what,
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
        })
    }

    /// Its process id.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Its CPU time so far, ns.
    pub fn cpu_ns(&self) -> Result<u64> {
        process_cpu_ns_of(self.pid()).with_context(|| format!("CPU clock of {}", self.what))
    }

    /// Its next line of output, waiting at most `timeout`.
    pub fn line(&mut self, timeout: Duration) -> Result<String> {
        match self.lines.recv_timeout(timeout) {
            Ok(l) => Ok(l),
            Err(RecvTimeoutError::Timeout) => Err(self.silent(timeout)),
            Err(RecvTimeoutError::Disconnected) => {
                // Ended: give its error time to arrive through the pipe.
                let status = self.wait_exit(Duration::from_millis(500));
                bail!("{} ended ({status}){}", self.what, self.said())
            }
        }
    }

    /// Its next line of output within `timeout`, looking at `stop` every
    /// [`STOP_POLL`] meanwhile: `None` once `stop` is set (a Ctrl-C is not
    /// kept waiting); an error when the time runs out or it ended.
    pub fn line_unless(&mut self, timeout: Duration, stop: &AtomicBool) -> Result<Option<String>> {
        let deadline = Instant::now() + timeout;
        loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left.min(STOP_POLL)) {
                Ok(l) => return Ok(Some(l)),
                Err(RecvTimeoutError::Timeout) if !left.is_zero() => {}
                Err(RecvTimeoutError::Timeout) => return Err(self.silent(timeout)),
                Err(RecvTimeoutError::Disconnected) => return self.line(Duration::ZERO).map(Some),
            }
        }
    }

    /// The error of a peer that said nothing for `waited`.
    fn silent(&self, waited: Duration) -> anyhow::Error {
        anyhow!(
            "{} said nothing for {:.1} s",
            self.what,
            waited.as_secs_f64()
        )
    }

    /// Waits for the line `want`.
    pub fn expect(&mut self, want: &str, timeout: Duration) -> Result<()> {
        let got = self.line(timeout)?;
        if got != want {
            bail!("{} said {got:?}, expected {want:?}", self.what);
        }
        Ok(())
    }

    /// Writes one line to its standard input.
    pub fn send(&mut self, line: &str) -> Result<()> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or_else(|| anyhow!("{}: stdin closed", self.what))?;
        // One write: a peer may act on the line and exit before a
        // second write of its newline (then EPIPE).
        if let Err(e) = stdin.write_all(format!("{line}\n").as_bytes()) {
            // Most often it ended: say how, with its last word (read by
            // another thread: give it a moment to arrive).
            if let Ok(Some(status)) = self.child.try_wait() {
                std::thread::sleep(Duration::from_millis(50));
                bail!("{} had ended ({status}){}", self.what, self.said());
            }
            return Err(e).with_context(|| format!("cannot write to {}", self.what));
        }
        Ok(())
    }

    /// Asks it to stop (SIGTERM) and waits up to `grace` before killing
    /// it; an error when it did not exit cleanly.
    pub fn stop(&mut self, grace: Duration) -> Result<()> {
        self.stdin = None;
        if let Ok(Some(_)) = self.child.try_wait() {
        } else if let Some(pid) = Pid::from_raw(self.pid()) {
            let _ = process::kill(pid, Signal::TERM);
        }
        match self.wait_exit(grace) {
            Exit::Clean => Ok(()),
            other => bail!("{} {other}{}", self.what, self.said()),
        }
    }

    /// Waits for it to end by itself (closing its standard input first).
    pub fn finish(&mut self, grace: Duration) -> Result<()> {
        self.stdin = None;
        match self.wait_exit(grace) {
            Exit::Clean => Ok(()),
            other => bail!("{} {other}{}", self.what, self.said()),
        }
    }

    fn wait_exit(&mut self, grace: Duration) -> Exit {
        let deadline = Instant::now() + grace;
        loop {
            match self.child.try_wait() {
                Ok(Some(s)) if s.success() => return Exit::Clean,
                Ok(Some(s)) => return Exit::Failed(s.to_string()),
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(2))
                }
                _ => {
                    let _ = self.child.kill();
                    let _ = self.child.wait();
                    return Exit::Killed;
                }
            }
        }
    }

    /// What it wrote to standard error, as `: ...`, or nothing.
    fn said(&self) -> String {
        let s = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        let s = s.trim();
        if s.is_empty() {
            String::new()
        } else {
            format!(": {}", s.lines().last().unwrap_or(s))
        }
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.stop(Duration::from_secs(1));
        }
    }
}

/// How a peer ended.
enum Exit {
    Clean,
    Failed(String),
    Killed,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Clean => write!(f, "exited cleanly"),
            Exit::Failed(s) => write!(f, "failed with {s}"),
            Exit::Killed => write!(f, "did not end in time and was killed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `sh FILE` as a peer, FILE holding `script` (`--die-with-parent
    /// PID` become its `$1` and `$2`).
    fn shell(script: &str) -> Peer {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(script.as_bytes()).unwrap();
        let path = file.into_temp_path();
        let p = Peer::start_with(
            Path::new("/bin/sh"),
            &path.to_string_lossy(),
            "the shell",
            &[],
        );
        // Gone once the shell has read it: wait for its first word.
        let mut p = p.unwrap();
        assert_eq!(p.line(Duration::from_secs(5)).unwrap(), "started");
        drop(path);
        p
    }

    #[test]
    fn writing_to_an_ended_peer_says_how_it_ended() {
        let mut p = shell("echo started; echo bye >&2; exit 3");
        let deadline = Instant::now() + Duration::from_secs(5);
        while p.child.try_wait().unwrap().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let e = p.send("stop").unwrap_err();
        let e = format!("{e:#}");
        assert!(
            e.contains("the shell had ended (exit status: 3): bye"),
            "{e}"
        );
    }
}
