//! The options of `msgbench rtos`, checked into a [`Plan`]: a value its
//! clap value parser refuses is a usage error (one line naming the option,
//! exit status 2); an unknown test or group is one line, exit status 1.

use std::time::Duration;

use anyhow::{bail, Result};
use clap::Args;
use serde::{Serialize, Serializer};

use super::ctx::SemKind;
use super::def::TestDef;
use super::row::Group;
use super::run::catalogue;
use crate::measure::sched::SchedArgs;
use crate::suites::OutputArgs;

/// Options of `msgbench rtos`.
#[derive(Debug, Clone, Args)]
pub struct RtosArgs {
    /// Test IDs (THR-P-SLS) or groups (CAL, CLK, THR, SEM, MUT, IRQ, MEM,
    /// MSG),
    /// any case [default: the whole catalogue].
    #[arg(value_name = "TEST")]
    pub select: Vec<String>,
    /// Fewer samples per test: the whole catalogue in about 20 s.
    #[arg(long = "quick")]
    pub quick: bool,
    /// Semaphores for the SEM tests: posix (unnamed, sem_init), sysv
    /// (semget/semop) or futex (our own counting semaphore).
    #[arg(
        long = "sem",
        value_name = "KIND",
        default_value = "posix",
        value_parser = parse_sem
    )]
    pub sem: SemKind,
    /// How long MEM-B-LEK creates and destroys objects, seconds (hours
    /// when asked: up to 86400, a day) [default: 10, 2 with --quick].
    #[arg(
        long = "duration",
        value_name = "SECS",
        allow_hyphen_values = true,
        value_parser = parse_duration
    )]
    pub duration: Option<Duration>,
    /// Priority inheritance through messages in MSG-B-PRI and MSG-P-PRI:
    /// on (the server runs at its callers' priority, QNX's behaviour: PASS
    /// expected) or off (the same scenarios without it: MSG-B-PRI's
    /// inversion and MSG-P-PRI's calls served below their caller, FAIL
    /// expected).
    #[arg(
        long = "msg-inherit",
        value_name = "on|off",
        default_value = "on",
        action = clap::ArgAction::Set,
        value_parser = parse_on_off
    )]
    pub msg_inherit: bool,
    /// The msgpass transports of the MSG tests (client and server
    /// processes), comma-separated: each MSG test runs on each in turn,
    /// its variants named "TRANSPORT, VARIANT" when there are several, and
    /// a table compares MSG-P-PRI with MSG-P-SRR per transport. Priority
    /// inheritance is refused, with why, where a transport cannot carry it
    /// (see `dev-adder --help`).
    #[arg(
        long = "msg-transport",
        value_name = "T[,T...]",
        value_delimiter = ',',
        default_value = super::msgpeer::TRANSPORT,
        value_parser = crate::devctl::options::transport_name
    )]
    pub msg_transport: Vec<String>,
    /// Hide the QNX reference figures.
    #[arg(long = "no-reference")]
    pub no_reference: bool,
    /// Scheduling controls: --fifo, --mlock, --dma-latency.
    #[command(flatten)]
    pub sched: SchedArgs,
    /// --format, --json (every result, with the raw samples).
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `--duration` when not given, seconds.
const DEFAULT_DURATION_S: u64 = 10;
/// The longest `--duration`, seconds: a day.
const MAX_DURATION_S: f64 = 86_400.0;
/// `--duration` when not given, with `--quick`, seconds.
const QUICK_DURATION_S: u64 = 2;

/// The checked options, stored in the envelope as `settings`.
#[derive(Debug, Serialize)]
pub struct Plan {
    /// The tests to run, in catalogue order (stored as their IDs).
    #[serde(serialize_with = "ids")]
    pub tests: Vec<&'static TestDef>,
    /// `--quick`.
    pub quick: bool,
    /// `--sem`.
    #[serde(serialize_with = "sem_name")]
    pub sem: SemKind,
    /// `--duration` (stored in seconds).
    #[serde(rename = "duration_secs", serialize_with = "secs")]
    pub duration: Duration,
    /// Print the reference column (not `--no-reference`).
    pub reference: bool,
    /// `--msg-inherit` (stored as true for on).
    pub msg_inherit: bool,
    /// `--msg-transport`, comma-separated (see [`Plan::msg_transports`]).
    pub msg_transport: String,
}

impl Plan {
    /// The MSG tests' transports, in the order given.
    pub fn msg_transports(&self) -> Vec<&str> {
        self.msg_transport.split(',').collect()
    }
}

/// The tests as their IDs.
fn ids<S: Serializer>(tests: &[&'static TestDef], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(tests.iter().map(|t| t.id))
}

/// `--sem` as written.
fn sem_name<S: Serializer>(sem: &SemKind, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(sem.name())
}

/// A duration in seconds.
fn secs<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(d.as_secs_f64())
}

impl Default for RtosArgs {
    /// The options of a bare `msgbench rtos`.
    fn default() -> RtosArgs {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrap {
            #[command(flatten)]
            a: RtosArgs,
        }
        Wrap::parse_from(["msgbench"]).a
    }
}

/// Checks the options.
pub fn plan(args: &RtosArgs) -> Result<Plan> {
    if args.msg_transport.iter().any(|t| t == "shm-spin") {
        bail!(
            "--msg-transport shm-spin: its server spins at a real-time priority on the CPU \
             its callers share (the one-CPU tests), so they never run; use shm-hybrid (it \
             spins only for a caller on another CPU) or shm-block"
        );
    }
    let duration = match args.duration {
        None if args.quick => Duration::from_secs(QUICK_DURATION_S),
        None => Duration::from_secs(DEFAULT_DURATION_S),
        Some(d) => d,
    };
    Ok(Plan {
        msg_inherit: args.msg_inherit,
        msg_transport: msg_transports(&args.msg_transport).join(","),
        tests: select(&args.select)?,
        quick: args.quick,
        sem: args.sem,
        duration,
        reference: !args.no_reference,
    })
}

/// `--msg-transport`'s transports, each once, in the order given.
fn msg_transports(given: &[String]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for t in given {
        if !out.contains(&t.as_str()) {
            out.push(t);
        }
    }
    out
}

/// Why a value of an rtos option was refused (clap prints it after
/// `--option value: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BadValue {
    /// `--sem`: not posix, sysv or futex.
    #[error("expected posix, sysv or futex")]
    Sem,
    /// `--duration`: not seconds from more than 0 to a day.
    #[error("expected seconds, more than 0 and at most {MAX_DURATION_S} (a day)")]
    Duration,
    /// `--msg-inherit`: not on or off.
    #[error("expected on or off")]
    OnOff,
}

/// Value parser of `--sem`.
fn parse_sem(s: &str) -> Result<SemKind, BadValue> {
    match s {
        "posix" => Ok(SemKind::Posix),
        "sysv" => Ok(SemKind::Sysv),
        "futex" => Ok(SemKind::Futex),
        _ => Err(BadValue::Sem),
    }
}

/// Value parser of `--duration`: seconds, more than 0, at most a day.
fn parse_duration(d: &str) -> Result<Duration, BadValue> {
    match d.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= MAX_DURATION_S => Ok(Duration::from_secs_f64(s)),
        _ => Err(BadValue::Duration),
    }
}

/// Value parser of `--msg-inherit`: on or off.
fn parse_on_off(s: &str) -> Result<bool, BadValue> {
    match s {
        "on" => Ok(true),
        "off" => Ok(false),
        _ => Err(BadValue::OnOff),
    }
}

/// The tests named by `select` (IDs or groups), in catalogue order.
fn select(select: &[String]) -> Result<Vec<&'static TestDef>> {
    let all = catalogue();
    if select.is_empty() {
        return Ok(all.iter().collect());
    }
    let mut keep = vec![false; all.len()];
    for s in select {
        let want = s.trim().to_ascii_uppercase();
        let group = Group::ALL.into_iter().find(|g| g.name() == want);
        let mut any = false;
        for (k, t) in all.iter().enumerate() {
            if t.id == want || Some(t.group) == group {
                keep[k] = true;
                any = true;
            }
        }
        if !any {
            bail!(
                "unknown test or group '{s}' (groups: {}; tests: {})",
                Group::ALL.map(|g| g.name()).join(", "),
                all.iter().map(|t| t.id).collect::<Vec<_>>().join(", ")
            );
        }
    }
    Ok(all
        .iter()
        .zip(keep)
        .filter_map(|(t, k)| k.then_some(t))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duration_defaults_to_10_s_or_2_s_quick_unless_given() {
        let mut a = RtosArgs::default();
        assert_eq!((a.sem, a.msg_inherit), (SemKind::Posix, true));
        assert_eq!(plan(&a).unwrap().duration, Duration::from_secs(10));
        a.quick = true;
        assert_eq!(plan(&a).unwrap().duration, Duration::from_secs(2));
        a.duration = Some(parse_duration("5").unwrap());
        assert_eq!(plan(&a).unwrap().duration, Duration::from_secs(5));
        assert_eq!(parse_duration("86400"), Ok(Duration::from_secs(86_400)));
    }

    #[test]
    fn the_parser_refuses_each_bad_value_naming_its_option() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            a: RtosArgs,
        }
        let refused = |args: &[&str]| {
            let e = Cli::try_parse_from(std::iter::once("rtos").chain(args.iter().copied()))
                .err()
                .unwrap_or_else(|| panic!("{args:?} accepted"));
            crate::cli::one_line(&e)
        };
        for bad in ["0", "1e300", "86401", "inf", "NaN", "-1", "x"] {
            assert_eq!(
                refused(&["--duration", bad]),
                format!(
                    "--duration {bad}: expected seconds, more than 0 and at most 86400 (a day)"
                )
            );
        }
        assert_eq!(
            refused(&["--sem", "mutex"]),
            "--sem mutex: expected posix, sysv or futex"
        );
        assert_eq!(
            refused(&["--msg-inherit", "yes"]),
            "--msg-inherit yes: expected on or off"
        );
        let a = Cli::try_parse_from(["rtos", "--sem", "futex", "--msg-inherit", "off"]).unwrap();
        assert_eq!((a.a.sem, a.a.msg_inherit), (SemKind::Futex, false));
    }

    #[test]
    fn select_by_id_and_group_in_catalogue_order() {
        let got = select(&["mem".into(), "CAL-P-TRC".into()]).unwrap();
        assert_eq!(got[0].id, "CAL-P-TRC");
        assert!(got[1..].iter().all(|t| t.group == Group::MEM));
        assert!(select(&["XYZ".into()])
            .unwrap_err()
            .to_string()
            .starts_with("unknown test or group 'XYZ'"));
    }
}
