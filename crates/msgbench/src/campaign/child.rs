//! One entry run: this executable started as `msgbench SUITE --json
//! DIR/ENTRY.json OPTIONS...`, a child process of the campaign.
//!
//! Why a child and not `suites::execute` in this process: the entry's
//! envelope records its own command line and environment (not the
//! campaign's), its standard output (the suite's tables) goes to
//! DIR/ENTRY.txt and never into the campaign's summary, and whatever a
//! suite leaves in its process (scheduling controls, limits raised,
//! threads) ends with it. The child is told its campaign tag and the
//! store in its environment (the store's URL there, not on its command
//! line, where the envelope and `ps` would show a password), and records
//! its run itself ([`crate::store::record_run`]).
//!
//! Signals: the child runs in a process group of its own, so a Ctrl-C at
//! the terminal reaches the campaign only, which hands the child one
//! SIGINT (as it does for a SIGINT or SIGTERM sent to the campaign): the
//! suite stops as on a Ctrl-C, cleans up, and does not record its
//! interrupted run. A second Ctrl-C ends the campaign at once, and the
//! child with it: it dies with the campaign (SIGTERM on the campaign's
//! death, PR_SET_PDEATHSIG), also when the campaign is killed outright.

use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use oslayer::process::{self, Pid, Signal};

use super::check::Checked;
use crate::store::campaign::{Tag, ENV_CAMPAIGN};
use crate::store::location::{ENV_NO_STORE, ENV_STORE};

/// How often the campaign looks at its child and its stop flag.
const POLL: Duration = Duration::from_millis(50);

/// Where an entry's run goes.
pub struct Setting<'a> {
    /// The store, as the child is to be given it.
    pub store: &'a std::ffi::OsStr,
    /// The directory of the entries' outputs.
    pub dir: &'a Path,
}

/// Runs entry `e` tagged `tag` to its end; its exit status. When `stop`
/// is set meanwhile, the child is handed one SIGINT and waited for.
pub fn run(e: &Checked, tag: &Tag, at: &Setting<'_>, stop: &AtomicBool) -> Result<ExitStatus> {
    let exe = std::env::current_exe().context("cannot find my own executable")?;
    let text = at.dir.join(format!("{}.txt", e.name));
    let out = File::create(&text).with_context(|| format!("{}: cannot write", text.display()))?;
    let mut cmd = Command::new(exe);
    cmd.arg(e.suite)
        .arg("--json")
        .arg(at.dir.join(format!("{}.json", e.name)))
        .args(&e.words[1..])
        .env(ENV_CAMPAIGN, tag.to_env())
        .env(ENV_STORE, at.store)
        .env_remove(ENV_NO_STORE)
        .stdin(Stdio::null())
        .stdout(out)
        .process_group(0);
    die_with_us(&mut cmd);
    let child = cmd
        .spawn()
        .with_context(|| format!("entry {:?}: cannot start msgbench {}", e.name, e.suite))?;
    Running(child).wait(stop)
}

/// A running child: killed and reaped on drop if not waited for (an
/// error on the way leaves no process behind).
struct Running(Child);

impl Running {
    /// Waits for the child's end, handing it one SIGINT once `stop` is set.
    fn wait(mut self, stop: &AtomicBool) -> Result<ExitStatus> {
        let mut told = false;
        loop {
            if let Some(status) = self.0.try_wait().context("cannot wait for an entry")? {
                return Ok(status);
            }
            if !told && stop.load(Ordering::Relaxed) {
                told = true;
                if let Some(pid) = Pid::from_raw(self.0.id() as i32) {
                    let _ = process::kill(pid, Signal::INT);
                }
            }
            std::thread::sleep(POLL);
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Makes `cmd`'s child end (SIGTERM, which a suite takes as a Ctrl-C)
/// when the thread that starts it dies: the campaign's main thread, so
/// when the campaign dies, however.
fn die_with_us(cmd: &mut Command) {
    let parent = process::pid();
    let setup = move || -> std::io::Result<()> {
        process::set_parent_death_signal(Some(Signal::TERM))?;
        // The campaign may have died before the request took effect (a
        // raw OS error: building one with a message would allocate).
        if process::parent_pid() != Some(parent) {
            return Err(std::io::Error::from_raw_os_error(libc::ESRCH));
        }
        Ok(())
    };
    // SAFETY: `setup` runs in the child between fork and exec. It makes
    // only oslayer calls documented async-signal-safe (one raw system call
    // each, no allocation) on a value made before the fork, and takes no
    // lock.
    unsafe { cmd.pre_exec(setup) };
}
