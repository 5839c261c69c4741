//! Helpers shared by the integration tests that run the real binaries.
//!
//! - [`TestDir`]: a private temporary directory per test (its `ns/` is the
//!   endpoint namespace passed with `--ns`), removed on drop.
//! - [`Proc`]: a spawned program with captured stdout/stderr, a watchdog
//!   that kills it (and fails the test) after [`WATCHDOG`], and a `Drop`
//!   that always kills and reaps it, so a failed assertion leaves nothing
//!   running.
//!
//! Nothing here asserts speed: waits are bounded only so that a hang turns
//! into a failure.

#![allow(dead_code)] // each test binary uses a different subset

pub mod netns;

use std::ffi::OsStr;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Longest any spawned program may run before the watchdog kills it.
pub const WATCHDOG: Duration = Duration::from_secs(30);

/// How long a program's pipes may stay open after it exited (only a leaked
/// descendant holding them would keep them open).
const PIPE_GRACE: Duration = Duration::from_secs(10);

/// The programs under test.
#[derive(Debug, Clone, Copy)]
pub enum Bin {
    /// The server.
    DevAdder,
    /// The client.
    ClientAdder,
    /// The suite.
    Msgbench,
}

impl Bin {
    /// Path of the built executable.
    pub fn path(self) -> &'static str {
        match self {
            Bin::DevAdder => env!("CARGO_BIN_EXE_dev-adder"),
            Bin::ClientAdder => env!("CARGO_BIN_EXE_client-adder"),
            Bin::Msgbench => env!("CARGO_BIN_EXE_msgbench"),
        }
    }

    /// Program name.
    pub fn name(self) -> &'static str {
        match self {
            Bin::DevAdder => "dev-adder",
            Bin::ClientAdder => "client-adder",
            Bin::Msgbench => "msgbench",
        }
    }

    /// A command for this program with a clean environment for the
    /// namespace (no inherited `MSGBENCH_NS`) and no results store
    /// (`MSGBENCH_NO_STORE=1`, no inherited `MSGBENCH_STORE`): a test's
    /// suite run never writes to the developer's store. The store's tests
    /// name a store of their own ([`Bin::cmd_with_store`]).
    pub fn cmd<I, S>(self, args: I) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = Command::new(self.path());
        c.args(args)
            .env_remove("MSGBENCH_NS")
            .env_remove("MSGBENCH_STORE")
            .env("MSGBENCH_NO_STORE", "1");
        c
    }

    /// A command for this program that records in (and reads) `store`
    /// (`MSGBENCH_STORE`: a SQLite file or a postgres:// URL).
    pub fn cmd_with_store<I, S>(self, args: I, store: &str) -> Command
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        let mut c = self.cmd(args);
        c.env_remove("MSGBENCH_NO_STORE")
            .env("MSGBENCH_STORE", store);
        c
    }
}

/// Serialises the tests of one binary that must not share the CPUs with each
/// other (the ones that wait for a reaction to a kill or a signal).
pub fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// `msgbench ipc` arguments for one quick row: uds, 64 bytes, one CPU.
pub const IPC_QUICK_UDS: [&str; 7] = [
    "--quick",
    "-t",
    "uds",
    "--sizes",
    "64",
    "--placement",
    "same",
];

// ---------------------------------------------------------------- TestDir

/// A private temporary directory, removed (with everything in it) on drop.
pub struct TestDir {
    path: PathBuf,
}

impl TestDir {
    /// Creates a fresh directory (mode 0700) whose name contains `tag`.
    pub fn new(tag: &str) -> TestDir {
        static COUNTER: AtomicUsize = AtomicUsize::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "msgbench-it-{}-{n}-{nanos}-{tag}",
            std::process::id()
        ));
        fs::DirBuilder::new()
            .mode(0o700)
            .create(&path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        TestDir { path }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The endpoint namespace of this test (not created: the programs do).
    pub fn ns(&self) -> PathBuf {
        self.path.join("ns")
    }

    /// `--ns <ns>` as arguments.
    pub fn ns_args(&self) -> [String; 2] {
        ["--ns".into(), self.ns().display().to_string()]
    }

    /// Path of a file in the directory (outside the namespace).
    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Asserts the namespace is absent or empty: no endpoint, no `.lock`
    /// file, no `adder/` directory, no run directory left behind.
    pub fn assert_ns_clean(&self) {
        let ns = self.ns();
        let left = list_tree(&ns);
        assert!(
            left.is_empty(),
            "namespace {} is not clean: {left:?}",
            ns.display()
        );
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// Every path under `dir` (recursively), relative to it; empty when `dir`
/// is missing.
pub fn list_tree(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let p = e.path();
            out.push(p.strip_prefix(dir).unwrap_or(&p).display().to_string());
            if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                stack.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Creates directory `path` with exactly `mode` (ignoring the umask).
pub fn mkdir_mode(path: &Path, mode: u32) {
    fs::create_dir(path).unwrap_or_else(|e| panic!("mkdir {}: {e}", path.display()));
    fs::set_permissions(path, fs::Permissions::from_mode(mode))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", path.display()));
}

// ---------------------------------------------------------------- Proc

/// One captured output stream.
#[derive(Default)]
struct Pipe {
    state: Mutex<(Vec<u8>, bool)>,
    cv: Condvar,
}

impl Pipe {
    fn start(mut r: impl Read + Send + 'static) -> Arc<Pipe> {
        let pipe = Arc::new(Pipe::default());
        let p = Arc::clone(&pipe);
        // Detached: a descendant that keeps the pipe open must not block
        // the test; `Proc::wait` reports that case instead.
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            loop {
                let n = match r.read(&mut buf) {
                    Ok(0) | Err(_) => 0,
                    Ok(n) => n,
                };
                let mut st = p.state.lock().unwrap_or_else(|e| e.into_inner());
                if n == 0 {
                    st.1 = true;
                    p.cv.notify_all();
                    return;
                }
                st.0.extend_from_slice(&buf[..n]);
                p.cv.notify_all();
            }
        });
        pipe
    }

    fn text(&self) -> String {
        let st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        String::from_utf8_lossy(&st.0).into_owned()
    }

    /// Waits until EOF or `deadline`; true on EOF.
    fn wait_eof(&self, deadline: Instant) -> bool {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        while !st.1 {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            st = self
                .cv
                .wait_timeout(st, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        true
    }
}

/// Kills its process after [`WATCHDOG`] unless disarmed first.
struct Watchdog {
    disarmed: Arc<(Mutex<bool>, Condvar)>,
    fired: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Watchdog {
    fn start(child: Arc<Mutex<Child>>, limit: Duration) -> Watchdog {
        let disarmed = Arc::new((Mutex::new(false), Condvar::new()));
        let fired = Arc::new(AtomicBool::new(false));
        let (d, f) = (Arc::clone(&disarmed), Arc::clone(&fired));
        let thread = std::thread::spawn(move || {
            let deadline = Instant::now() + limit;
            let (lock, cv) = &*d;
            let mut off = lock.lock().unwrap_or_else(|e| e.into_inner());
            while !*off {
                let now = Instant::now();
                if now >= deadline {
                    f.store(true, Ordering::SeqCst);
                    // Child::kill does nothing once the child is reaped, so
                    // this can never hit a recycled pid.
                    let _ = child.lock().unwrap_or_else(|e| e.into_inner()).kill();
                    return;
                }
                off = cv
                    .wait_timeout(off, deadline - now)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        });
        Watchdog {
            disarmed,
            fired,
            thread: Some(thread),
        }
    }

    fn disarm(&mut self) {
        let (lock, cv) = &*self.disarmed;
        *lock.lock().unwrap_or_else(|e| e.into_inner()) = true;
        cv.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a finished program did.
#[derive(Debug)]
pub struct Output {
    /// Exit status.
    pub status: ExitStatus,
    /// Everything it wrote to stdout.
    pub stdout: String,
    /// Everything it wrote to stderr.
    pub stderr: String,
}

impl Output {
    /// The exit code (panics, with the output, if killed by a signal).
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .unwrap_or_else(|| panic!("killed by a signal: {self}"))
    }

    /// Asserts exit status 0.
    pub fn assert_ok(&self) -> &Output {
        assert!(self.status.success(), "expected success: {self}");
        self
    }

    /// Asserts the exit code and returns stderr's single line (fails if
    /// stderr is not exactly one line).
    pub fn assert_one_line_error(&self, code: i32) -> String {
        assert_eq!(self.code(), code, "exit code: {self}");
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "stderr must be one line: {self}");
        lines[0].to_string()
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "status {:?}\n--- stdout ---\n{}--- stderr ---\n{}",
            self.status, self.stdout, self.stderr
        )
    }
}

/// A running program; killed and reaped on drop, whatever happened.
pub struct Proc {
    name: String,
    pid: u32,
    child: Arc<Mutex<Child>>,
    status: Option<ExitStatus>,
    out: Arc<Pipe>,
    err: Arc<Pipe>,
    dog: Watchdog,
    /// How long the watchdog lets it run.
    limit: Duration,
}

impl Proc {
    /// Spawns `cmd` (named `name` in messages) with stdin closed and
    /// stdout/stderr captured. It is sent SIGKILL if the test process dies.
    pub fn spawn(name: &str, cmd: Command) -> Proc {
        Proc::spawn_for(name, cmd, WATCHDOG)
    }

    /// As [`Proc::spawn`], the watchdog killing it after `limit` (for a
    /// program that must give up on its own after a documented wait
    /// longer than [`WATCHDOG`]).
    pub fn spawn_for(name: &str, mut cmd: Command, limit: Duration) -> Proc {
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: prctl is async-signal-safe and touches no memory of the
        // parent; it only asks for SIGKILL when our (spawning) thread dies,
        // so nothing outlives a test process that is itself killed.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                Ok(())
            });
        }
        let mut child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot spawn {name}: {e}"));
        let out = Pipe::start(child.stdout.take().expect("stdout is piped"));
        let err = Pipe::start(child.stderr.take().expect("stderr is piped"));
        let pid = child.id();
        let child = Arc::new(Mutex::new(child));
        let dog = Watchdog::start(Arc::clone(&child), limit);
        Proc {
            name: name.to_string(),
            pid,
            child,
            status: None,
            out,
            err,
            dog,
            limit,
        }
    }

    /// Spawns `bin` with `args`.
    pub fn start<I, S>(bin: Bin, args: I) -> Proc
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        Proc::spawn(bin.name(), bin.cmd(args))
    }

    /// Process id.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// What it has written to stdout so far.
    pub fn stdout(&self) -> String {
        self.out.text()
    }

    /// What it has written to stderr so far.
    pub fn stderr(&self) -> String {
        self.err.text()
    }

    fn lock(&self) -> MutexGuard<'_, Child> {
        self.child.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn check_watchdog(&self) {
        if self.dog.fired.load(Ordering::SeqCst) {
            panic!(
                "watchdog: {} (pid {}) ran for more than {:?} and was killed\n--- stdout ---\n{}--- stderr ---\n{}",
                self.name,
                self.pid,
                self.limit,
                self.stdout(),
                self.stderr()
            );
        }
    }

    /// Reaps it if it has exited.
    pub fn try_status(&mut self) -> Option<ExitStatus> {
        if self.status.is_none() {
            let s = self
                .lock()
                .try_wait()
                .unwrap_or_else(|e| panic!("waitpid {}: {e}", self.name));
            self.status = s;
        }
        self.status
    }

    /// Whether it is still running.
    pub fn is_running(&mut self) -> bool {
        self.try_status().is_none()
    }

    /// Sends `sig`; panics if it has already exited.
    pub fn signal(&mut self, sig: i32) {
        // The lock keeps anyone from reaping it (and its pid from being
        // recycled) between the check and the kill.
        let mut c = self.child.lock().unwrap_or_else(|e| e.into_inner());
        match c.try_wait() {
            Ok(None) => {
                // SAFETY: kill() on our own unreaped child; no memory involved.
                let r = unsafe { libc::kill(self.pid as libc::pid_t, sig) };
                assert_eq!(r, 0, "kill({}, {sig}) failed", self.pid);
            }
            Ok(Some(s)) => {
                drop(c);
                self.status = Some(s);
                panic!(
                    "{} exited ({s}) before it could be sent signal {sig}\n--- stdout ---\n{}--- stderr ---\n{}",
                    self.name,
                    self.stdout(),
                    self.stderr()
                );
            }
            Err(e) => panic!("waitpid {}: {e}", self.name),
        }
    }

    /// Polls every millisecond until it exits or `limit` passes; returns
    /// the status and when the exit was seen.
    pub fn wait_exit_within(&mut self, limit: Duration) -> Option<(ExitStatus, Instant)> {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(s) = self.try_status() {
                return Some((s, Instant::now()));
            }
            self.check_watchdog();
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Waits for it to exit (bounded by the watchdog) and collects output.
    pub fn wait(&mut self) -> Output {
        let status = loop {
            if let Some(s) = self.try_status() {
                break s;
            }
            self.check_watchdog();
            std::thread::sleep(Duration::from_millis(2));
        };
        self.check_watchdog();
        self.output(status)
    }

    /// Waits up to `limit` for it to exit; panics (and kills it) if not.
    pub fn wait_within(&mut self, limit: Duration, what: &str) -> Output {
        match self.wait_exit_within(limit) {
            Some((s, _)) => self.output(s),
            None => {
                let _ = self.lock().kill();
                panic!(
                    "{} (pid {}) did not exit within {limit:?} after {what}\n--- stdout ---\n{}--- stderr ---\n{}",
                    self.name,
                    self.pid,
                    self.stdout(),
                    self.stderr()
                )
            }
        }
    }

    /// Output after exit: waits for EOF on both pipes.
    fn output(&self, status: ExitStatus) -> Output {
        let deadline = Instant::now() + PIPE_GRACE;
        let eof = self.out.wait_eof(deadline) && self.err.wait_eof(deadline);
        assert!(
            eof,
            "{} (pid {}) exited but its stdout/stderr stayed open for {PIPE_GRACE:?}: \
             a process it started is still alive\n--- stdout ---\n{}--- stderr ---\n{}",
            self.name,
            self.pid,
            self.stdout(),
            self.stderr()
        );
        Output {
            status,
            stdout: self.stdout(),
            stderr: self.stderr(),
        }
    }

    /// Waits until stdout contains `needle` (panics if it exits first or
    /// the watchdog fires); returns stdout so far.
    pub fn wait_stdout(&mut self, needle: &str) -> String {
        self.wait_text(needle, true)
    }

    /// Like [`Proc::wait_stdout`] for stderr.
    pub fn wait_stderr(&mut self, needle: &str) -> String {
        self.wait_text(needle, false)
    }

    fn wait_text(&mut self, needle: &str, stdout: bool) -> String {
        loop {
            let text = if stdout { self.stdout() } else { self.stderr() };
            if has_whole_line(&text, needle) {
                return text;
            }
            if let Some(s) = self.try_status() {
                let o = self.output(s);
                let text = if stdout { &o.stdout } else { &o.stderr };
                if text.contains(needle) {
                    return text.clone();
                }
                panic!("{} exited before printing {needle:?}: {o}", self.name);
            }
            self.check_watchdog();
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Polls (bounded by the watchdog) until `cond` holds while it runs.
    pub fn wait_until(&mut self, what: &str, mut cond: impl FnMut(&Proc) -> bool) {
        loop {
            if cond(self) {
                return;
            }
            if let Some(s) = self.try_status() {
                let o = self.output(s);
                panic!("{} exited while waiting for {what}: {o}", self.name);
            }
            self.check_watchdog();
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    /// Number of threads it has (from /proc; 0 once gone).
    pub fn threads(&self) -> usize {
        fs::read_dir(format!("/proc/{}/task", self.pid))
            .map(|d| d.count())
            .unwrap_or(0)
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if self.status.is_none() {
            let mut c = self.lock();
            let _ = c.kill();
            let _ = c.wait();
        }
        self.dog.disarm();
        if self.dog.fired.load(Ordering::SeqCst) && !std::thread::panicking() {
            panic!(
                "watchdog: {} (pid {}) ran for more than {:?} and was killed",
                self.name, self.pid, self.limit
            );
        }
    }
}

/// Runs `bin args` to completion (bounded by the watchdog).
pub fn run<I, S>(bin: Bin, args: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Proc::start(bin, args).wait()
}

/// Runs `cmd` to completion (bounded by the watchdog).
pub fn run_cmd(name: &str, cmd: Command) -> Output {
    Proc::spawn(name, cmd).wait()
}

/// Whether an exit status is a plain exit with `code`.
pub fn exited_with(s: &ExitStatus, code: i32) -> bool {
    s.code() == Some(code) && s.signal().is_none()
}

// ---------------------------------------------------------------- servers

/// A `dev-adder` that has announced it is serving.
pub struct Server {
    /// The process.
    pub proc: Proc,
    /// Its "serving" line.
    pub banner: String,
}

impl Server {
    /// Starts `dev-adder <args> --ns <dir.ns()>` and waits for its banner.
    pub fn start(dir: &TestDir, args: &[&str]) -> Server {
        let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        a.extend(dir.ns_args());
        let mut proc = Proc::start(Bin::DevAdder, a);
        let out = proc.wait_stdout("dev-adder: serving");
        let banner = out
            .lines()
            .find(|l| l.starts_with("dev-adder: serving"))
            .unwrap_or_default()
            .to_string();
        Server { proc, banner }
    }

    /// Sends SIGINT and asserts a clean exit (status 0) within `limit`.
    pub fn stop(mut self, sig: i32, limit: Duration) -> Output {
        self.proc.signal(sig);
        let o = self.proc.wait_within(limit, &format!("signal {sig}"));
        assert_eq!(o.code(), 0, "dev-adder must exit 0 on signal {sig}: {o}");
        o
    }
}

/// Runs `client-adder <args> --ns <dir.ns()>` to completion.
pub fn client(dir: &TestDir, args: &[&str]) -> Output {
    let mut a: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    a.extend(dir.ns_args());
    run(Bin::ClientAdder, a)
}

// ---------------------------------------------------------------- parsing

/// Number of online CPUs (the "cpuN" lines of /proc/stat).
pub fn cpu_count() -> usize {
    let stat = fs::read_to_string("/proc/stat").expect("read /proc/stat");
    stat.lines()
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count()
}

/// Parses "12.34%" (panics with `what` otherwise).
pub fn parse_pct(s: &str, what: &str) -> f64 {
    s.trim()
        .strip_suffix('%')
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{what}: not a percentage: {s:?}"))
}

/// Asserts a busy percentage is within 0..=100 x CPUs (+1 point for rounding).
pub fn assert_busy_range(pct: f64, what: &str) {
    let max = 100.0 * cpu_count() as f64 + 1.0;
    assert!(
        pct.is_finite() && (0.0..=max).contains(&pct),
        "{what}: {pct}% is outside 0..={max}%"
    );
}

/// Parses a busy figure as printed: `None` for `n/a` (a run too short for
/// /proc/stat's tick, or /proc/stat unreadable), else a percentage within
/// [`assert_busy_range`].
pub fn parse_busy(s: &str, what: &str) -> Option<f64> {
    if s.trim() == "n/a" {
        return None;
    }
    let pct = parse_pct(s, what);
    assert_busy_range(pct, what);
    Some(pct)
}

/// Checks a busy figure in JSON: `null` (not measured) or a percentage
/// within [`assert_busy_range`], never anything else.
pub fn check_busy_json(v: &serde_json::Value, what: &str) {
    if !v.is_null() {
        let pct = v
            .as_f64()
            .unwrap_or_else(|| panic!("{what}: not a number or null: {v}"));
        assert_busy_range(pct, what);
    }
}

/// Parses a duration as printed ("571ns", "56.9us", "6.61ms", "1.20s") to ns.
pub fn parse_dur_ns(s: &str) -> f64 {
    let s = s.trim();
    let (num, mult) = if let Some(v) = s.strip_suffix("ns") {
        (v, 1.0)
    } else if let Some(v) = s.strip_suffix("us") {
        (v, 1e3)
    } else if let Some(v) = s.strip_suffix("µs") {
        (v, 1e3)
    } else if let Some(v) = s.strip_suffix("ms") {
        (v, 1e6)
    } else if let Some(v) = s.strip_suffix('s') {
        (v, 1e9)
    } else {
        panic!("not a duration: {s:?}")
    };
    num.trim()
        .parse::<f64>()
        .unwrap_or_else(|_| panic!("not a duration: {s:?}"))
        * mult
}

/// Processes (other than zombies) whose command line contains `needle`.
pub fn procs_mentioning(needle: &str) -> Vec<(u32, String)> {
    let me = std::process::id();
    let mut found = Vec::new();
    let Ok(rd) = fs::read_dir("/proc") else {
        return found;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let Ok(raw) = fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmdline.contains(needle) {
            found.push((pid, cmdline));
        }
    }
    found
}

/// Reads and parses a JSON file.
pub fn read_json(path: &Path) -> serde_json::Value {
    let text =
        fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()))
}

/// `v[key]` as f64 (panics with the path if missing or not a number).
pub fn num(v: &serde_json::Value, key: &str) -> f64 {
    v.get(key)
        .and_then(serde_json::Value::as_f64)
        .unwrap_or_else(|| panic!("missing number {key:?} in {v}"))
}

/// Checks a latency summary object: counts and ordered percentiles.
pub fn check_latency(l: &serde_json::Value, count: u64) {
    assert_eq!(
        l.get("count").and_then(serde_json::Value::as_u64),
        Some(count),
        "latency count in {l}"
    );
    let keys = ["min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns"];
    let vals: Vec<f64> = keys.iter().map(|k| num(l, k)).collect();
    assert!(vals[0] > 0.0, "min latency must be positive: {l}");
    for w in vals.windows(2) {
        assert!(w[0] <= w[1], "percentiles out of order in {l}");
    }
}

/// A loopback TCP port that is free now and lies below the kernel's
/// ephemeral range, which every `bind(":0")` of tests running in parallel
/// draws from: a port found with `bind(":0")` and released can be handed to
/// another test before the server under test binds it.
pub fn unused_port() -> u16 {
    let ephemeral_lo = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u16>().ok())
        .unwrap_or(32768);
    let (lo, hi) = (10_000u16, ephemeral_lo.max(10_001));
    let span = u32::from(hi - lo);
    let seed = std::process::id().wrapping_mul(2_654_435_761)
        ^ std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
    (0..span)
        .map(|k| lo + ((seed.wrapping_add(k.wrapping_mul(7919))) % span) as u16)
        .find(|&p| std::net::TcpListener::bind(("127.0.0.1", p)).is_ok())
        .expect("a free loopback port below the ephemeral range")
}

/// Reports a test skipped for `reason` (a missing privilege or tool), or
/// fails it when `CI` is set: CI must really exercise every test. The
/// line goes straight to stderr, past the test harness's capture, so a
/// skip is seen in a plain `cargo test` run, not mistaken for a pass.
pub fn skip(reason: &str) {
    let test = std::thread::current()
        .name()
        .unwrap_or("a test")
        .to_string();
    if std::env::var_os("CI").is_some() {
        panic!("CI is set, so {test} may not be skipped: {reason}");
    }
    use std::io::Write;
    // Best effort: a closed stderr must not fail the test.
    let _ = writeln!(std::io::stderr(), "skipped {test}: {reason}");
}

/// True when running as root (euid 0).
pub fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether `text` holds `needle` on a line already ended: a reader polling a
/// pipe can catch a line half written, and a test reading the rest of that
/// line (a path, a pid) must not see it cut.
fn has_whole_line(text: &str, needle: &str) -> bool {
    text.find(needle)
        .is_some_and(|at| text[at..].contains('\n'))
}
