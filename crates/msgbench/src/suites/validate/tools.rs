//! Finding and running the reference tools: a missing tool is reported
//! with the package that installs it; a run is bounded by a time limit
//! (the tool is killed past it) and its output captured.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

/// Where `name` is found on `PATH` (or in `/usr/sbin`, `/usr/bin`).
pub fn find(name: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(name))
        .find(|p| is_executable(p))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    p.metadata()
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// The Debian package that installs `tool`.
pub fn package_of(tool: &str) -> &'static str {
    match tool {
        "perf" => "linux-perf",
        "taskset" | "chrt" => "util-linux",
        _ => "rt-tests",
    }
}

/// Runs `argv` (the first element is looked up with [`find`]) with its
/// output captured; past `limit` it is killed. Returns stdout; a failure
/// status is an error carrying the last line of stderr.
pub fn run(argv: &[String], limit: Duration) -> Result<String> {
    let (prog, args) = argv.split_first().context("empty command")?;
    let path = find(prog)
        .with_context(|| format!("{prog} not found (apt-get install {})", package_of(prog)))?;
    let mut child = Command::new(path)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {prog}"))?;
    let mut out = child.stdout.take().context("stdout")?;
    let mut err = child.stderr.take().context("stderr")?;
    let out_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = out.read_to_end(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err.read_to_end(&mut s);
        s
    });
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(st) = child.try_wait().context("waiting")? {
            break st;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{prog} did not finish within {limit:?} (killed)");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let out = String::from_utf8_lossy(&out_t.join().unwrap_or_default()).into_owned();
    let err = String::from_utf8_lossy(&err_t.join().unwrap_or_default()).into_owned();
    if !status.success() {
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("no message");
        bail!("{prog} failed ({status}): {last}");
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_tool_names_its_package() {
        let e = run(&["msgbench-no-such-tool".into()], Duration::from_secs(1)).unwrap_err();
        assert!(e.to_string().contains("apt-get install rt-tests"), "{e}");
        assert_eq!(package_of("perf"), "linux-perf");
    }

    #[test]
    fn runs_and_bounds_a_command() {
        let out = run(
            &["sh".into(), "-c".into(), "echo hi".into()],
            Duration::from_secs(10),
        )
        .unwrap();
        assert_eq!(out, "hi\n");
        let e = run(
            &["sh".into(), "-c".into(), "echo oops >&2; exit 3".into()],
            Duration::from_secs(10),
        )
        .unwrap_err();
        assert!(e.to_string().contains("oops"), "{e}");
        let e = run(&["sleep".into(), "5".into()], Duration::from_millis(200)).unwrap_err();
        assert!(e.to_string().contains("did not finish"), "{e}");
    }
}
