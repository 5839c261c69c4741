//! The progress bar of a suite run (`report/progress.rs`): drawn when
//! standard error is a terminal, absent through a pipe.
//!
//! The run is `msgbench floor --quick`: the bar is drawn as soon as the
//! first item starts (and redrawn every 200 ms), so even a run of half a
//! second shows it, while the full `msgbench floor` (about 6 s on an idle
//! machine) spins on both CPUs and took over a minute on a loaded 2-CPU
//! VM. The two tests take turns, so neither run competes with the other.
//! The terminal is a real pseudo-terminal from `openpty(3)` (through the
//! `libc` crate, already a dependency).

mod common;

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::{run_cmd, serial, Bin};

/// Longest the run may take before it is killed and the test fails.
const LIMIT: Duration = Duration::from_secs(60);

/// The ESC byte every terminal control sequence starts with.
const ESC: char = '\u{1b}';

/// A pseudo-terminal pair, (master, slave), 120 columns wide, neither
/// inherited by children (`FD_CLOEXEC`; the slave is given to the child
/// through dup2, which clears it there).
fn openpty() -> (OwnedFd, OwnedFd) {
    let (mut master, mut slave) = (-1, -1);
    let size = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: valid out-pointers; null name and termios are allowed.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(rc, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: openpty succeeded, so both are open descriptors we own.
    let (m, s) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    for fd in [&m, &s] {
        // SAFETY: fcntl on an open descriptor.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    (m, s)
}

/// Waits for `child` at most [`LIMIT`], killing it past that.
fn wait_bounded(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("msgbench floor ran over {LIMIT:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn in_a_terminal_a_bar_is_drawn() {
    let _turn = serial();
    let (master, slave) = openpty();
    let mut cmd = Bin::Msgbench.cmd(["floor", "--quick"]);
    cmd.env("TERM", "xterm-256color")
        .stdin(Stdio::null())
        .stdout(Stdio::from(slave.try_clone().expect("dup")))
        .stderr(Stdio::from(slave));
    let mut child = cmd.spawn().expect("spawn msgbench floor");
    // The parent's copies of the slave must go, or the master never sees
    // the end (EIO) once the child has exited.
    drop(cmd);
    let reader = std::thread::spawn(move || {
        let mut f = File::from(master);
        let (mut all, mut buf) = (Vec::new(), [0u8; 4096]);
        // Linux answers EIO on the master once every slave is closed.
        while let Ok(n @ 1..) = f.read(&mut buf) {
            all.extend_from_slice(&buf[..n]);
        }
        all
    });
    let status = wait_bounded(&mut child);
    let seen = String::from_utf8_lossy(&reader.join().expect("reader")).into_owned();
    assert!(status.success(), "{status}: {seen}");
    assert!(seen.contains("floor ["), "no bar: {seen:?}");
    assert!(seen.contains('%'), "no percentage: {seen:?}");
    assert!(seen.contains(ESC), "no terminal control: {seen:?}");
    assert!(seen.contains("futex"), "no table after the bar: {seen:?}");
}

#[test]
fn through_a_pipe_there_are_no_escape_codes() {
    let _turn = serial();
    let mut cmd = Bin::Msgbench.cmd(["floor", "--quick"]);
    // A capable TERM, so that only the pipe can be what turns the bar off.
    cmd.env("TERM", "xterm-256color");
    let out = run_cmd("msgbench floor", cmd);
    out.assert_ok();
    assert!(out.stdout.contains("futex"), "{out}");
    assert!(!out.stdout.contains(ESC), "ESC on stdout: {out}");
    assert!(!out.stderr.contains(ESC), "ESC on stderr: {out}");
    assert!(!out.stderr.contains("floor ["), "a bar on stderr: {out}");
}
