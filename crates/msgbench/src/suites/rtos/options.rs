//! The options of `msgbench rtos`, checked into a [`Plan`]: every mistake
//! is one line naming the option, exit status 1.

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
#[derive(Debug, Clone, Default, Args)]
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
    #[arg(long = "sem", value_name = "KIND", default_value = "posix")]
    pub sem: String,
    /// How long MEM-B-LEK creates and destroys objects, seconds (hours
    /// when asked: up to 86400, a day) [default: 10, 2 with --quick].
    #[arg(long = "duration", value_name = "SECS", allow_hyphen_values = true)]
    pub duration: Option<String>,
    /// Priority inheritance through messages in MSG-B-PRI: on (the
    /// server runs at its callers' priority, QNX's behaviour: PASS
    /// expected) or off (the same scenario without it: the inversion,
    /// FAIL expected).
    #[arg(long = "msg-inherit", value_name = "on|off", default_value = "on")]
    pub msg_inherit: String,
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

/// Checks the options.
pub fn plan(args: &RtosArgs) -> Result<Plan> {
    args.sched.parse()?;
    let sem = match args.sem.as_str() {
        "posix" => SemKind::Posix,
        "sysv" => SemKind::Sysv,
        "futex" => SemKind::Futex,
        other => bail!("--sem {other}: expected posix, sysv or futex"),
    };
    let duration = match &args.duration {
        None if args.quick => Duration::from_secs(QUICK_DURATION_S),
        None => Duration::from_secs(DEFAULT_DURATION_S),
        Some(d) => match d.trim().parse::<f64>() {
            Ok(s) if s.is_finite() && s > 0.0 && s <= MAX_DURATION_S => Duration::from_secs_f64(s),
            _ => bail!(
                "--duration {d}: expected seconds, more than 0 and at most {MAX_DURATION_S} (a day)"
            ),
        },
    };
    let msg_inherit = match args.msg_inherit.as_str() {
        "on" => true,
        "off" => false,
        other => bail!("--msg-inherit {other}: expected on or off"),
    };
    Ok(Plan {
        msg_inherit,
        tests: select(&args.select)?,
        quick: args.quick,
        sem,
        duration,
        reference: !args.no_reference,
    })
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
        let mut a = RtosArgs {
            sem: "posix".into(),
            msg_inherit: "on".into(),
            ..RtosArgs::default()
        };
        assert_eq!(plan(&a).unwrap().duration, Duration::from_secs(10));
        a.quick = true;
        assert_eq!(plan(&a).unwrap().duration, Duration::from_secs(2));
        a.duration = Some("5".into());
        assert_eq!(plan(&a).unwrap().duration, Duration::from_secs(5));
        a.duration = Some("0".into());
        let e = plan(&a).err().unwrap().to_string();
        assert!(e.starts_with("--duration 0:"), "{e}");
        assert!(!e.contains('\n'));
        a.duration = Some("86400".into());
        assert_eq!(plan(&a).unwrap().duration, Duration::from_secs(86_400));
        for bad in ["1e300", "86401", "inf", "NaN", "-1", "x"] {
            a.duration = Some(bad.into());
            let e = plan(&a).err().unwrap().to_string();
            assert!(e.starts_with(&format!("--duration {bad}: ")), "{e}");
            assert!(e.contains("at most 86400"), "{e}");
        }
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
