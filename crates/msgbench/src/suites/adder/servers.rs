//! The embedded servers of `msgbench adder`: real dev-adder processes
//! (this executable re-run as `msgbench serve-adder`), so that "One
//! process" and "Multi-process" mean what they say. They die with us
//! (PR_SET_PDEATHSIG) and are stopped with SIGTERM, which makes them remove
//! their endpoints.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use msgpass::Namespace;
use oslayer::process::{self, Pid, Signal};

use super::Mode;
use crate::devctl::options::Api;
use crate::measure::placement::CpuList;

/// Running server processes; killed on drop if not stopped.
pub(super) struct Servers {
    children: Vec<Child>,
}

impl Servers {
    /// Starts the servers for X instances in `mode`, replying with `api`.
    pub(super) fn start(
        mode: Mode,
        x: u32,
        transport: &str,
        ns: &Namespace,
        cpus: &CpuList,
        spin_us: u64,
        api: Api,
    ) -> Result<Servers> {
        let exe = std::env::current_exe().context("cannot find my own executable")?;
        let layout: Vec<(u32, u32)> = match mode {
            Mode::One => vec![(x, 0)],
            Mode::Multi => (0..x).map(|k| (1, k)).collect(),
        };
        let mut servers = Servers {
            children: Vec::new(),
        };
        for (n, first) in layout {
            let mut cmd = Command::new(&exe);
            cmd.arg("serve-adder")
                .args([
                    "-q",
                    "-n",
                    &n.to_string(),
                    "-i",
                    &first.to_string(),
                    "-t",
                    transport,
                ])
                .arg("--spin-us")
                .arg(spin_us.to_string())
                .arg("--ns")
                .arg(ns.root())
                .arg("--die-with-parent")
                .arg(std::process::id().to_string())
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            if api == Api::Copy {
                cmd.arg("--copy");
            }
            let pins: Vec<usize> = (first..first + n)
                .filter_map(|k| cpus.for_thread(k as usize))
                .collect();
            if !pins.is_empty() {
                let list: Vec<String> = pins.iter().map(|c| c.to_string()).collect();
                cmd.arg("--cpus").arg(list.join(","));
            }
            servers
                .children
                .push(cmd.spawn().context("cannot start a dev-adder process")?);
        }
        Ok(servers)
    }

    /// Stops every server with SIGTERM and checks each exited cleanly.
    pub(super) fn stop(&mut self) -> Result<()> {
        for c in &self.children {
            // A pid we spawned and have not reaped.
            if let Some(pid) = Pid::from_raw(c.id() as i32) {
                let _ = process::kill(pid, Signal::TERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut failures = Vec::new();
        for mut c in self.children.drain(..) {
            let status = loop {
                match c.try_wait() {
                    Ok(Some(s)) => break Some(s),
                    Ok(None) if Instant::now() < deadline => {
                        std::thread::sleep(Duration::from_millis(5))
                    }
                    _ => {
                        let _ = c.kill();
                        let _ = c.wait();
                        break None;
                    }
                }
            };
            match status {
                Some(s) if s.success() => {}
                Some(s) => failures.push(format!("pid {} exited with {s}", c.id())),
                None => failures.push(format!(
                    "pid {} ignored SIGTERM for 5 s and was killed",
                    c.id()
                )),
            }
        }
        if !failures.is_empty() {
            bail!("server processes failed: {}", failures.join("; "));
        }
        Ok(())
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}
