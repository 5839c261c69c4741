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

/// Checks `MSGBENCH_CLOCK` before a program starts measuring: a value
/// other than `auto` or `monotonic` is an error naming the variable.
pub fn check_clock_env() -> anyhow::Result<()> {
    crate::measure::clock::ClockChoice::from_env()?;
    Ok(())
}

/// Parses the command line. A usage error (a value a value parser
/// refused, an unknown option) is one line, `prog: error: --repeats 0:
/// must be ...`, and exit status 2, as clap's own; `--help` and
/// `--version` print as clap prints them.
pub fn parse_args<P: clap::Parser>(prog: &str) -> P {
    use clap::error::ErrorKind;
    match P::try_parse() {
        Ok(p) => p,
        Err(e) => match e.kind() {
            ErrorKind::DisplayHelp
            | ErrorKind::DisplayVersion
            | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => e.exit(),
            _ => {
                eprintln!("{prog}: error: {}", one_line(&e));
                std::process::exit(2)
            }
        },
    }
}

/// A clap error in one line. A refused value reads `--option value: why`
/// (the option's long name, the value as given, the value parser's
/// reason, or the values it takes); any other error is clap's message
/// with its lines joined.
pub fn one_line(e: &clap::Error) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let text = |k| match e.get(k) {
        Some(ContextValue::String(s)) => Some(s.as_str()),
        _ => None,
    };
    let flag = text(ContextKind::InvalidArg).and_then(|a| a.split([' ', '=']).next());
    let value = text(ContextKind::InvalidValue);
    if let (Some(flag), Some(value)) = (flag, value) {
        match e.kind() {
            ErrorKind::ValueValidation => {
                if let Some(why) = std::error::Error::source(e) {
                    return format!("{flag} {value}: {why}");
                }
            }
            ErrorKind::InvalidValue => {
                if let Some(ContextValue::Strings(ok)) = e.get(ContextKind::ValidValue) {
                    return format!("{flag} {value}: expected one of {}", ok.join(", "));
                }
            }
            _ => {}
        }
    }
    let rendered = e.render().to_string();
    let lines: Vec<&str> = rendered
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter(|l| {
            !["For more information", "Usage:", "tip:"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .collect();
    lines.join(" ").trim_start_matches("error: ").to_string()
}

/// A number as given back in an error message: as written when short,
/// in exponent form when long (`--wait 1e300`, not 301 digits).
pub fn show_num(v: f64) -> String {
    let plain = v.to_string();
    if plain.len() <= 20 {
        plain
    } else {
        format!("{v:e}")
    }
}

/// The longest `--spin-us` (hybrid spin budget) any program takes: one
/// second, far beyond any useful spin.
pub const MAX_SPIN_US: u64 = 1_000_000;

/// Checks a `--spin-us` value: at most [`MAX_SPIN_US`] (a larger one
/// would overflow a deadline inside msgpass).
pub fn check_spin_us(us: u64) -> anyhow::Result<()> {
    if us > MAX_SPIN_US {
        anyhow::bail!("--spin-us {us}: must be a whole number of microseconds, 0 to {MAX_SPIN_US}");
    }
    Ok(())
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

    #[test]
    fn numbers_in_errors_stay_short() {
        assert_eq!(show_num(-1.0), "-1");
        assert_eq!(show_num(0.5), "0.5");
        assert_eq!(show_num(1e300), "1e300");
        assert_eq!(show_num(f64::INFINITY), "inf");
        assert_eq!(show_num(f64::NAN), "NaN");
    }

    #[test]
    fn spin_budgets_are_bounded() {
        assert!(check_spin_us(0).is_ok());
        assert!(check_spin_us(MAX_SPIN_US).is_ok());
        let e = check_spin_us(u64::MAX).unwrap_err().to_string();
        assert!(e.starts_with("--spin-us 18446744073709551615: "), "{e}");
        assert!(e.contains("1000000"), "{e}");
    }
}
