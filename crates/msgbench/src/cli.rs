//! What every program's `main` shares: the exit path and signal handling.

use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

/// Prints `prog: error: ...` on one line (causes joined by ": ") and maps
/// the result to the exit status: 0 on success, 1 on any error.
pub fn finish(prog: &str, result: anyhow::Result<()>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{prog}: error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// A flag set by the first SIGINT or SIGTERM, so the program can stop
/// cleanly; a second SIGINT ends the process at once.
pub fn stop_on_signals() -> anyhow::Result<Arc<AtomicBool>> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    use signal_hook::flag;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [SIGINT, SIGTERM] {
        flag::register_conditional_shutdown(sig, 130, Arc::clone(&stop))?;
        flag::register(sig, Arc::clone(&stop))?;
    }
    Ok(stop)
}

/// The `-t`/`--transport` short help: every transport name from msgpass's
/// transport table, aliases shown as `shm (= shm-hybrid)` (`--help` has
/// the descriptions and requirements).
pub fn transport_help() -> String {
    let names: Vec<String> = msgpass::transport::TRANSPORTS
        .iter()
        .flat_map(|t| {
            t.aliases
                .iter()
                .map(move |a| format!("{a} (= {})", t.name))
                .chain(std::iter::once(t.name.to_string()))
        })
        .collect();
    names.join(", ")
}

/// The `--transport` long help: one line per transport (its names, then
/// its description, size limit and requirements), after `intro`.
pub fn transport_long_help(intro: &str) -> String {
    use msgpass::transport::SizeLimit;
    let mut out = format!("{intro}\n");
    for t in msgpass::transport::TRANSPORTS {
        let names: Vec<&str> = t.names().collect();
        out.push_str(&format!("\n  {:<18} {}", names.join(", "), t.description));
        match t.limit {
            SizeLimit::None => {}
            SizeLimit::Fixed(n) => out.push_str(&format!("; payloads up to {n} bytes")),
            SizeLimit::System(how) => out.push_str(&format!("; payload limit {how}")),
        }
        if let Some(r) = t.requires {
            out.push_str(&format!("; needs {r}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_helps_come_from_the_table() {
        let short = transport_help();
        let long = transport_long_help("Transport.");
        assert!(
            short.starts_with("shm (= shm-hybrid), shm-hybrid, "),
            "{short}"
        );
        for t in msgpass::transport::TRANSPORTS {
            assert!(long.contains(t.description), "{long}");
            for n in t.names() {
                assert!(short.contains(n), "{short} lacks {n}");
            }
        }
        assert!(long.contains("needs root"), "{long}");
    }
}
