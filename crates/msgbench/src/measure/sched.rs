//! Scheduling controls shared by every command: `--fifo PRIO`, `--mlock`,
//! `--dma-latency US`, one vocabulary everywhere (placement itself is
//! `--cpus`/`--placement`, see [`super::placement`]).
//!
//! [`SchedArgs::apply`] takes effect for the calling thread and every thread
//! and process started after it (Linux threads inherit the policy, children
//! inherit it through fork and exec). What was applied is recorded in a
//! process-wide [`Controls`] that every report's environment stores, with
//! the CPU idle driver and states: a figure is only comparable with the
//! context that produced it (on a VM, holding `/dev/cpu_dma_latency` at 0
//! keeps idle vCPUs polling instead of halting, which changes a cross-CPU
//! wake-up several-fold).
//!
//! A privilege that is missing is an error naming the option, never a
//! silent fallback.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::sync::Mutex;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

/// The scheduling options every command takes.
#[derive(Debug, Clone, Default, Args)]
pub struct SchedArgs {
    /// Run every measuring thread at SCHED_FIFO priority PRIO (1-99); needs
    /// CAP_SYS_NICE. Spinning transports are skipped at real-time priority
    /// (a spinning real-time thread never yields its CPU).
    #[arg(
        long = "fifo",
        value_name = "PRIO",
        allow_hyphen_values = true,
        value_parser = parse_prio
    )]
    pub fifo: Option<u8>,
    /// Lock all current and future memory (mlockall), so no page fault or
    /// swap-in lands in a measurement.
    #[arg(long = "mlock")]
    pub mlock: bool,
    /// Hold a PM-QoS CPU latency request of US microseconds (write it to
    /// /dev/cpu_dma_latency and keep the file open while running); 0 keeps
    /// idle CPUs out of deep idle states.
    #[arg(
        long = "dma-latency",
        value_name = "US",
        allow_hyphen_values = true,
        value_parser = parse_dma_latency
    )]
    pub dma_latency: Option<u32>,
}

/// What the scheduling options put in place, as stored with results.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Controls {
    /// SCHED_FIFO priority of the measuring threads, or `None` (SCHED_OTHER).
    pub fifo_priority: Option<u8>,
    /// mlockall was in effect.
    pub mlocked: bool,
    /// The PM-QoS CPU latency request held, microseconds, or `None`.
    pub dma_latency_us: Option<u32>,
}

/// The controls in effect in this process.
static IN_EFFECT: Mutex<Controls> = Mutex::new(Controls {
    fifo_priority: None,
    mlocked: false,
    dma_latency_us: None,
});

/// The controls in effect now (recorded by every report's environment).
pub fn in_effect() -> Controls {
    IN_EFFECT.lock().map(|c| c.clone()).unwrap_or_default()
}

/// Held while the controls apply: dropping it releases the PM-QoS request
/// (the kernel drops it when the file closes) and forgets the record.
/// SCHED_FIFO and mlockall stay for the rest of the process.
#[derive(Debug)]
pub struct Applied {
    _dma: Option<File>,
}

impl Drop for Applied {
    fn drop(&mut self) {
        if let Ok(mut c) = IN_EFFECT.lock() {
            c.dma_latency_us = None;
        }
    }
}

impl SchedArgs {
    /// What the options ask for, without applying anything (clap's value
    /// parsers have checked every value).
    pub fn parse(&self) -> Controls {
        Controls {
            fifo_priority: self.fifo,
            mlocked: self.mlock,
            dma_latency_us: self.dma_latency,
        }
    }

    /// Applies the options to this process (see the module docs). Errors
    /// name the option and say what is missing.
    pub fn apply(&self) -> Result<Applied> {
        let want = self.parse();
        if want.mlocked {
            mlock_all()?;
        }
        let dma = match want.dma_latency_us {
            Some(us) => Some(hold_dma_latency(us)?),
            None => None,
        };
        if let Some(prio) = want.fifo_priority {
            set_fifo(prio)?;
        }
        if let Ok(mut c) = IN_EFFECT.lock() {
            *c = want;
        }
        Ok(Applied { _dma: dma })
    }
}

/// Why a scheduling option's value was refused (clap prints it after
/// `--option value: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchedValueError {
    /// `--fifo`: not 1 to 99.
    #[error("expected a SCHED_FIFO priority from 1 to 99")]
    Priority,
    /// `--dma-latency`: not a whole number of microseconds that fits
    /// the kernel's 32-bit signed request.
    #[error("expected whole microseconds, 0 or more")]
    Latency,
}

/// Value parser of `--fifo`: a SCHED_FIFO priority, 1 to 99.
pub fn parse_prio(v: &str) -> std::result::Result<u8, SchedValueError> {
    match v.trim().parse::<u8>() {
        Ok(p) if (1..=99).contains(&p) => Ok(p),
        _ => Err(SchedValueError::Priority),
    }
}

/// Value parser of `--dma-latency`: microseconds, 0 to `i32::MAX`.
pub fn parse_dma_latency(v: &str) -> std::result::Result<u32, SchedValueError> {
    v.trim()
        .parse::<u32>()
        .ok()
        .filter(|&us| us <= i32::MAX as u32)
        .ok_or(SchedValueError::Latency)
}

/// Locks all current and future memory of the process
/// (mlockall(MCL_CURRENT | MCL_FUTURE)).
pub fn lock_memory() -> std::io::Result<()> {
    oslayer::mem::lock_all()
}

/// [`lock_memory`], its error naming `--mlock`.
fn mlock_all() -> Result<()> {
    if let Err(e) = lock_memory() {
        bail!(
            "--mlock: mlockall: {e}{}",
            if e.raw_os_error() == Some(libc::EPERM) || e.raw_os_error() == Some(libc::ENOMEM) {
                " (needs CAP_IPC_LOCK or a large enough RLIMIT_MEMLOCK)"
            } else {
                ""
            }
        );
    }
    Ok(())
}

/// Opens /dev/cpu_dma_latency and writes a request of `us` microseconds
/// (a native-endian 32-bit value); the request holds while the returned
/// file stays open.
pub fn request_dma_latency(us: u32) -> std::io::Result<File> {
    let mut f = OpenOptions::new()
        .write(true)
        .open("/dev/cpu_dma_latency")?;
    f.write_all(&(us.min(i32::MAX as u32) as i32).to_ne_bytes())?;
    Ok(f)
}

/// [`request_dma_latency`], its errors naming `--dma-latency`.
fn hold_dma_latency(us: u32) -> Result<File> {
    request_dma_latency(us).map_err(|e| {
        anyhow!(
            "--dma-latency {us}: /dev/cpu_dma_latency: {e}{}",
            if e.kind() == std::io::ErrorKind::PermissionDenied {
                " (needs root)"
            } else {
                ""
            }
        )
    })
}

/// Puts the calling thread (and so the threads it starts later) in
/// SCHED_FIFO at `prio`.
pub fn set_thread_fifo(prio: i32) -> std::io::Result<()> {
    oslayer::sched::set_policy(oslayer::sched::Policy::Fifo(prio))
}

/// [`set_thread_fifo`], its errors naming `--fifo` and the privilege.
fn set_fifo(prio: u8) -> Result<()> {
    if let Err(e) = set_thread_fifo(i32::from(prio)) {
        if e.raw_os_error() == Some(libc::EPERM) {
            bail!("--fifo {prio}: SCHED_FIFO needs CAP_SYS_NICE (run as root or grant it)");
        }
        bail!("--fifo {prio}: sched_setscheduler: {e}");
    }
    Ok(())
}

/// The calling thread's SCHED_FIFO priority, or `None` for another policy.
pub fn current_fifo_priority() -> Option<u8> {
    match oslayer::sched::policy() {
        Ok(oslayer::sched::Policy::Fifo(p)) => u8::try_from(p).ok(),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        sched: SchedArgs,
    }

    fn args(a: &[&str]) -> std::result::Result<SchedArgs, String> {
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("x").chain(a.iter().copied()))
            .map(|c| c.sched)
            .map_err(|e| crate::cli::one_line(&e))
    }

    #[test]
    fn priorities_and_latencies_parse() {
        let c = args(&["--fifo", "80", "--dma-latency", "0"])
            .unwrap()
            .parse();
        assert_eq!(c.fifo_priority, Some(80));
        assert_eq!(c.dma_latency_us, Some(0));
        assert_eq!(args(&[]).unwrap().parse(), Controls::default());
    }

    #[test]
    fn bad_values_are_refused_by_the_parser_naming_the_option() {
        let prio = "expected a SCHED_FIFO priority from 1 to 99";
        let us = "expected whole microseconds, 0 or more";
        for (a, want) in [
            (["--fifo", "0"], format!("--fifo 0: {prio}")),
            (["--fifo", "100"], format!("--fifo 100: {prio}")),
            (["--fifo", "x"], format!("--fifo x: {prio}")),
            (["--dma-latency", "-1"], format!("--dma-latency -1: {us}")),
            (["--dma-latency", "1.5"], format!("--dma-latency 1.5: {us}")),
            (
                ["--dma-latency", "2147483648"],
                format!("--dma-latency 2147483648: {us}"),
            ),
        ] {
            assert_eq!(args(&a).err().as_deref(), Some(want.as_str()), "{a:?}");
        }
    }
}
