//! `--vs-ipc-bench`: the IPC comparison study's own programs
//! (goldsborough/ipc-bench) and rigtorp/ipc-bench's, built here from the
//! repository's `peers/` ([`build`]) and run on the mechanisms, sizes and
//! placements of the run's rows, each beside msgbench's row of the same
//! transport, size and placement with the server a process of its own:
//! their figures as they print them ([`parse`]), ours beside, and what
//! each program does differently ([`programs`]).
//!
//! Each program runs in a process group of its own (goldsborough's signal
//! their group), all its processes restricted to the first CPU: only the
//! same-CPU placement is run, because a program's two processes cannot be
//! pinned apart from outside (allowed both CPUs, the scheduler mostly
//! keeps them together, which is not msgbench's cross placement). It runs
//! in the build's work directory; one that prints nothing within
//! [`HANG`] is killed with its group and tried once more, and what a
//! killed one leaves (its socket or FIFO in /tmp, its System V queue or
//! segment) is removed.

pub mod build;
pub mod parse;
pub mod programs;

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::options::Plan;
use super::row::{Api, Layout, Placement, Row};
use crate::results::peer::{PeerRun, PeerStatus};
use crate::suites::RunContext;
use programs::{Program, Project, PROGRAMS};

/// Round trips a program makes without `--count` (the study's tables
/// show 1000).
pub const DEFAULT_COUNT: u64 = 1000;
/// How long a program may take before it is taken as hung.
pub const HANG: Duration = Duration::from_secs(5);
/// Files goldsborough's programs make in /tmp and remove when they end.
const TMP_FILES: [&str; 2] = ["/tmp/ipc_bench_socket", "/tmp/ipc_bench_fifo"];

/// The programs of a run, built, and what they gave so far.
pub struct Session {
    built: build::Built,
    chosen: Vec<Program>,
    cpu: usize,
    count: u64,
    /// Every program run so far, in order.
    pub runs: Vec<PeerRun>,
}

impl Session {
    /// Builds the programs of the plan's transports; `Err` is the run's
    /// note saying why none will run.
    pub fn start(plan: &Plan, cx: &RunContext) -> Result<Session, String> {
        let chosen: Vec<Program> = PROGRAMS
            .iter()
            .filter(|p| plan.transports.iter().any(|t| t == p.transport))
            .copied()
            .collect();
        if chosen.is_empty() {
            return Err(no_program_note());
        }
        let Ok((cpu, _)) = plan.cpus_for(Placement::Same) else {
            return Err("--vs-ipc-bench: not run: no CPU to run on".into());
        };
        cx.progress.start("building ipc-bench's programs");
        let built = build::build(&build::sources(), &chosen);
        cx.progress.done(Duration::ZERO);
        let built = built.map_err(|e| format!("--vs-ipc-bench: not run: {e:#}"))?;
        Ok(Session {
            built,
            chosen,
            cpu,
            count: plan.count.unwrap_or(DEFAULT_COUNT),
            runs: Vec::new(),
        })
    }

    /// Runs every program at `size`, right after msgbench's rows of that
    /// size (`rows`: the run's rows so far), so that both see the same
    /// machine state.
    pub fn run_size(&mut self, size: usize, rows: &[Row], cx: &RunContext) {
        for p in &self.chosen {
            if cx.stopped() {
                return;
            }
            cx.progress.start(format!("{} {size} B", p.label()));
            let mut r = run_one(&self.built, p, size, self.cpu, self.count);
            r.ours_mean_ns = ours(rows, p.transport, size, Placement::Same);
            self.runs.push(r);
            cx.progress.done(Duration::ZERO);
        }
    }
}

/// The note when no transport of the run has a reference program.
fn no_program_note() -> String {
    let mut t: Vec<&str> = PROGRAMS.iter().map(|p| p.transport).collect();
    // The study's programs, then rigtorp's: the same transport twice,
    // not side by side.
    t.sort_unstable();
    t.dedup();
    format!(
        "--vs-ipc-bench: no reference program for these transports (they have: {})",
        t.join(", ")
    )
}

/// The mean round trip of msgbench's process row of `transport`, `size`
/// and `placement` (in place, one client).
fn ours(rows: &[Row], transport: &str, size: usize, placement: Placement) -> Option<f64> {
    rows.iter()
        .find(|r| {
            r.transport == transport
                && (r.size, r.placement, r.layout, r.api)
                    == (size, placement, Layout::Process, Api::InPlace)
                && r.idle_clients.is_none()
                && r.clients.is_none()
        })
        .filter(|r| r.p50_ns().is_some())
        .and_then(|r| r.latency.as_ref())
        .map(|l| l.exact.mean_ns)
}

/// One program at one size and placement, tried twice if it hangs.
fn run_one(b: &build::Built, p: &Program, size: usize, cpu: usize, count: u64) -> PeerRun {
    let exe = b.exe(p);
    let args: Vec<String> = match p.project {
        Project::Goldsborough => {
            vec![
                "-c".into(),
                count.to_string(),
                "-s".into(),
                size.to_string(),
            ]
        }
        Project::Rigtorp => vec![size.to_string(), count.to_string()],
    };
    let allowed = [cpu];
    let mut r = PeerRun {
        program: p.label(),
        upstream: p.project.upstream().to_string(),
        command: format!("{} {}", p.exe, args.join(" ")),
        transport: p.transport.to_string(),
        size,
        placement: Placement::Same.name().to_string(),
        count,
        status: PeerStatus::Failed,
        reason: None,
        mean_ns: None,
        min_ns: None,
        max_ns: None,
        rate_per_s: None,
        ours_mean_ns: None,
        differs: p.differs.to_string(),
    };
    let mut outcome = attempt(&exe, &args, &b.work(), &allowed);
    if matches!(outcome, Attempt::Hung) {
        outcome = attempt(&exe, &args, &b.work(), &allowed);
    }
    match outcome {
        Attempt::Hung => {
            r.status = PeerStatus::Hung;
            r.reason = Some(format!(
                "printed nothing within {} s, twice (killed)",
                HANG.as_secs()
            ));
        }
        Attempt::Failed(why) => r.reason = Some(why),
        Attempt::Done(out) => {
            let printed = match p.project {
                Project::Goldsborough => parse::goldsborough(&out),
                Project::Rigtorp => parse::rigtorp(&out),
            };
            match printed {
                Some(f) => {
                    r.status = PeerStatus::Ok;
                    (r.mean_ns, r.min_ns, r.max_ns, r.rate_per_s) =
                        (Some(f.mean_ns), f.min_ns, f.max_ns, f.rate_per_s);
                }
                None => r.reason = Some(format!("printed no figures: {}", first_line(&out))),
            }
        }
    }
    r
}

/// The first non-empty line of `s`, for an error.
fn first_line(s: &str) -> &str {
    s.lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("nothing")
}

/// How one attempt ended.
enum Attempt {
    /// Exited 0; its standard output.
    Done(String),
    /// Killed after [`HANG`].
    Hung,
    /// Could not start, or exited otherwise.
    Failed(String),
}

/// Runs `exe ARGS` in `work`, in a process group of its own, from a
/// thread restricted to `cpus` (its processes inherit the mask).
fn attempt(exe: &Path, args: &[String], work: &Path, cpus: &[usize]) -> Attempt {
    std::thread::scope(|s| {
        s.spawn(|| {
            if let Err(e) = oslayer::sched::set_affinity(cpus) {
                return Attempt::Failed(format!("cannot restrict to CPUs {cpus:?}: {e}"));
            }
            let spawned = Command::new(exe)
                .args(args)
                .current_dir(work)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .process_group(0)
                .spawn();
            match spawned {
                Ok(child) => wait(child, work),
                Err(e) => Attempt::Failed(format!("cannot start {}: {e}", exe.display())),
            }
        })
        .join()
        .unwrap_or_else(|_| Attempt::Failed("its thread panicked".into()))
    })
}

/// Waits up to [`HANG`] for `child`; kills its group after that.
fn wait(mut child: std::process::Child, work: &Path) -> Attempt {
    let start = Instant::now();
    let reader = drain(child.stdout.take());
    let errors = drain(child.stderr.take());
    loop {
        match child.try_wait() {
            Ok(Some(st)) => {
                let text = reader.join().unwrap_or_default();
                kill_group(child.id());
                if st.success() {
                    return Attempt::Done(text);
                }
                let err = errors.join().unwrap_or_default();
                return Attempt::Failed(format!("exited with {st}: {}", first_line(&err)));
            }
            Ok(None) if start.elapsed() < HANG => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                kill_group(child.id());
                let _ = child.wait();
                let _ = reader.join();
                clean_after_kill(work);
                return Attempt::Hung;
            }
        }
    }
}

/// Reads `pipe` to its end in a thread of its own (so that a full pipe
/// never stops the program).
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut p) = pipe {
            let _ = p.read_to_string(&mut s);
        }
        s
    })
}

/// SIGKILL to the process group led by `pid` (what is left of it).
fn kill_group(pid: u32) {
    if let Some(pgid) = i32::try_from(pid)
        .ok()
        .and_then(oslayer::process::Pid::from_raw)
    {
        let _ = oslayer::process::kill_group(pgid, oslayer::process::Signal::KILL);
    }
}

/// Removes what a killed goldsborough program leaves: its socket and
/// FIFO in /tmp, and the System V queue and segment keyed on the work
/// directory's `mq` and `shm` files (`ipcrm`, where it is installed).
fn clean_after_kill(work: &Path) {
    for f in TMP_FILES {
        let _ = std::fs::remove_file(f);
    }
    for (file, flag) in [("mq", "-Q"), ("shm", "-M")] {
        if let Some(key) = ftok(&work.join(file), b'X') {
            let _ = Command::new("ipcrm")
                .args([flag, &format!("{key:#x}")])
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// The System V key glibc's `ftok(path, id)` makes: the id's low byte,
/// the device's low byte and the inode's low 16 bits.
fn ftok(path: &Path, id: u8) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let m = std::fs::metadata(path).ok()?;
    Some((u32::from(id) << 24) | (((m.dev() & 0xff) as u32) << 16) | ((m.ino() & 0xffff) as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_note_names_each_transport_with_a_program_once() {
        let note = no_program_note();
        for t in ["pipe", "fifo", "uds-stream", "tcp"] {
            assert_eq!(
                note.matches(&format!(" {t},")).count() + note.matches(&format!(" {t})")).count(),
                1,
                "{t}: {note}"
            );
        }
    }
}
