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
