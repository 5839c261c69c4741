//! Options shared by `dev-adder`, `client-adder` and `msgbench adder`, and
//! their range checks (which exit 1 with a one-line error naming the option).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use crate::measure::placement::CpuList;

/// Options every adder program takes.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Number of instances (server) or client threads (client), 1..=128.
    #[arg(short = 'n', value_name = "N", default_value_t = 1)]
    pub n: u32,
    /// Number of the first instance: `-n1 -i3` is adder/3.
    #[arg(short = 'i', value_name = "K", default_value_t = 0)]
    pub i: u32,
    /// Transport: shm (= shm-hybrid), shm-spin, shm-block, shm-hybrid, uds.
    #[arg(
        short = 't',
        long = "transport",
        value_name = "NAME",
        default_value = "shm"
    )]
    pub transport: String,
    /// Endpoint namespace directory [default: $MSGBENCH_NS, else
    /// $XDG_RUNTIME_DIR/msgbench, /run/msgbench for root, /tmp/msgbench-UID].
    #[arg(long = "ns", value_name = "DIR")]
    pub ns: Option<PathBuf>,
    /// Pin thread k to the k-th CPU of LIST (e.g. 0,1 or 0-3; cycles when
    /// there are more threads than CPUs). Verified with sched_getcpu.
    #[arg(long = "cpus", value_name = "LIST")]
    pub cpus: Option<String>,
    /// Hybrid waiting: how long to spin before sleeping, in microseconds.
    #[arg(long = "spin-us", value_name = "US", default_value_t = 20)]
    pub spin_us: u64,
}

impl Common {
    /// Checks -n and -i, and parses --cpus.
    pub fn validate(&self) -> Result<CpuList> {
        check_instances(self.n, self.i)?;
        msgpass::transport::by_name(&self.transport)
            .map_err(|e| anyhow::anyhow!("-t {}: {e}", self.transport))?;
        match &self.cpus {
            Some(l) => CpuList::parse(l).map_err(|e| anyhow::anyhow!("--cpus {l}: {e}")),
            None => Ok(CpuList::default()),
        }
    }

    /// The msgpass options these flags ask for.
    pub fn msgpass_options(&self) -> msgpass::Options {
        msgpass::Options {
            spin: std::time::Duration::from_micros(self.spin_us),
            ..msgpass::Options::default()
        }
    }
}

/// Range checks for `-n` and `-i`.
pub fn check_instances(n: u32, i: u32) -> Result<()> {
    if !(1..=super::MAX_INSTANCES).contains(&n) {
        bail!(
            "-n {n}: the number of instances must be between 1 and {}",
            super::MAX_INSTANCES
        );
    }
    if i.checked_add(n - 1).is_none() {
        bail!("-i {i}: with -n {n} the last instance number overflows a u32");
    }
    Ok(())
}

/// Range check for `-S`.
pub fn check_samples(s: u64) -> Result<()> {
    if s < super::MIN_SAMPLES {
        bail!("-S {s}: at least {} samples are needed", super::MIN_SAMPLES);
    }
    if s > u32::MAX as u64 {
        bail!(
            "-S {s}: at most {} samples (the adder counts in a u32)",
            u32::MAX
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_ranges() {
        assert!(check_instances(1, 0).is_ok());
        assert!(check_instances(128, 0).is_ok());
        assert!(check_instances(0, 0)
            .unwrap_err()
            .to_string()
            .starts_with("-n 0"));
        assert!(check_instances(129, 0)
            .unwrap_err()
            .to_string()
            .starts_with("-n 129"));
        assert!(check_instances(1, u32::MAX).is_ok());
        assert!(check_instances(2, u32::MAX)
            .unwrap_err()
            .to_string()
            .starts_with("-i"));
    }

    #[test]
    fn sample_ranges() {
        assert!(check_samples(100).is_ok());
        assert!(check_samples(99)
            .unwrap_err()
            .to_string()
            .starts_with("-S 99"));
        assert!(check_samples(u32::MAX as u64 + 1).is_err());
    }
}
