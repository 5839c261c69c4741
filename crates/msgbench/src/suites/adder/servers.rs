//! The embedded servers of `msgbench adder`: real dev-adder processes
//! (this executable re-run as `msgbench serve-adder`), so that "One
//! process", "Multi-process" and "Thread pool (one path)" (`serve-adder
//! --pool X`) mean what they say. They die with us
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
    /// Starts the servers for X threads in `mode`, replying with `api`.
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
        let mut servers = Servers {
            children: Vec::new(),
        };
        for process in layout(mode, x) {
            let mut cmd = Command::new(&exe);
            cmd.arg("serve-adder")
                .args(process.args())
                .args(["-t", transport])
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
            if let Some(list) = process.pins(cpus) {
                cmd.arg("--cpus").arg(list);
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

/// One server process of a row: the paths it serves and its threads.
#[derive(Debug, PartialEq, Eq)]
struct Process {
    /// The first path, adder/`first`.
    first: u32,
    /// How many paths, one thread each (`-n`).
    paths: u32,
    /// `--pool`: the one path served from a pool of this many threads.
    pool: Option<u32>,
}

/// The server processes of X threads in `mode`: one process with X
/// paths, X processes with one path each, or one process serving adder/0
/// from a pool of X threads.
fn layout(mode: Mode, x: u32) -> Vec<Process> {
    let process = |first, paths, pool| Process { first, paths, pool };
    match mode {
        Mode::One => vec![process(0, x, None)],
        Mode::Multi => (0..x).map(|k| process(k, 1, None)).collect(),
        Mode::Pool => vec![process(0, 1, Some(x))],
    }
}

impl Process {
    /// Its `serve-adder` arguments: `-q -n N -i K`, and `--pool X`.
    fn args(&self) -> Vec<String> {
        let mut a = vec![
            "-q".to_string(),
            "-n".into(),
            self.paths.to_string(),
            "-i".into(),
            self.first.to_string(),
        ];
        if let Some(x) = self.pool {
            a.extend(["--pool".to_string(), x.to_string()]);
        }
        a
    }

    /// The row's thread numbers k its threads are: its paths' numbers, or
    /// 0..X for a pool (pool thread k is server thread k).
    fn threads(&self) -> std::ops::Range<u32> {
        match self.pool {
            Some(x) => 0..x,
            None => self.first..self.first + self.paths,
        }
    }

    /// Its `--cpus` list: thread k on the k-th CPU of `cpus`; `None`
    /// when unpinned.
    fn pins(&self, cpus: &CpuList) -> Option<String> {
        let pins: Vec<String> = self
            .threads()
            .filter_map(|k| cpus.for_thread(k as usize))
            .map(|c| c.to_string())
            .collect();
        (!pins.is_empty()).then(|| pins.join(","))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_mode_lays_out_its_processes() {
        assert_eq!(layout(Mode::One, 3).len(), 1);
        assert_eq!(layout(Mode::Multi, 3).len(), 3);
        let pool = layout(Mode::Pool, 3);
        assert_eq!(pool.len(), 1);
        assert_eq!(pool[0].args(), ["-q", "-n", "1", "-i", "0", "--pool", "3"]);
        assert_eq!(layout(Mode::One, 3)[0].args(), ["-q", "-n", "3", "-i", "0"]);
        assert_eq!(
            layout(Mode::Multi, 3)[2].args(),
            ["-q", "-n", "1", "-i", "2"]
        );
    }

    #[test]
    fn server_thread_k_is_pinned_like_client_thread_k_in_every_mode() {
        let cpus = CpuList(vec![4, 5]);
        for mode in [Mode::One, Mode::Pool] {
            let pins: Vec<_> = layout(mode, 3).iter().map(|p| p.pins(&cpus)).collect();
            assert_eq!(pins, [Some("4,5,4".to_string())], "{mode:?}");
        }
        let pins: Vec<_> = layout(Mode::Multi, 3)
            .iter()
            .map(|p| p.pins(&cpus))
            .collect();
        assert_eq!(pins, [Some("4".into()), Some("5".into()), Some("4".into())]);
        assert_eq!(layout(Mode::Pool, 2)[0].pins(&CpuList::default()), None);
    }
}
