//! Options shared by `dev-adder`, `client-adder` and `msgbench adder`:
//! their value parsers (a refused value is a one-line usage error naming
//! the option, exit 2) and the range checks that need two options (exit 1,
//! one line naming the option).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;

use anyhow::{anyhow, bail, Result};
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
    /// Transport (the help lists msgpass's transport table).
    #[arg(
        short = 't',
        long = "transport",
        value_name = "NAME",
        default_value = "shm",
        help = format!("Transport: {} (--help describes them)", crate::cli::transport_help()),
        long_help = crate::cli::transport_long_help("Transport, one of:"),
        value_parser = transport_name,
    )]
    pub transport: String,
    /// Endpoint namespace directory [default: $MSGBENCH_NS, else
    /// $XDG_RUNTIME_DIR/msgbench, /run/msgbench for root, /tmp/msgbench-UID].
    #[arg(long = "ns", value_name = "DIR")]
    pub ns: Option<PathBuf>,
    /// Pin thread k to the k-th CPU of LIST (e.g. 0,1 or 0-3; cycles when
    /// there are more threads than CPUs). Verified with sched_getcpu.
    #[arg(long = "cpus", value_name = "LIST", value_parser = crate::measure::placement::parse_cpus_arg)]
    pub cpus: Option<CpuList>,
    /// Hybrid waiting: how long to spin before sleeping, in microseconds
    /// (0 to 1000000).
    #[arg(long = "spin-us", value_name = "US", default_value_t = 20)]
    pub spin_us: u64,
    /// Use the copying API: Connection::call / Request::reply with buffers
    /// of our own [default: in place, Connection::call_with /
    /// Request::reply_with, zero-copy in the shm slot].
    #[arg(long = "copy")]
    pub copy: bool,
}

impl Common {
    /// Checks -n, -i and --spin-us (clap's value parsers have checked
    /// -t and --cpus), and gives the --cpus list (empty: threads float).
    pub fn validate(&self) -> Result<CpuList> {
        check_instances(self.n, self.i)?;
        crate::cli::check_spin_us(self.spin_us)?;
        Ok(self.cpus.clone().unwrap_or_default())
    }

    /// The API `--copy` asks for.
    pub fn api(&self) -> Api {
        if self.copy {
            Api::Copy
        } else {
            Api::InPlace
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

/// Which msgpass API the adder programs pass messages with (the wire
/// protocol is the same, so either side can use either).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Api {
    /// `Connection::call_with` / `Request::reply_with`: the request and
    /// reply are written and read in the transport's own buffer (no copy
    /// on the shared-memory transports).
    InPlace,
    /// `Connection::call` / `Request::reply` with buffers of our own.
    Copy,
}

impl Api {
    /// The JSON value and table cell: `in-place` or `copy`.
    pub fn key(self) -> &'static str {
        match self {
            Api::InPlace => "in-place",
            Api::Copy => "copy",
        }
    }

    /// What the results block says: `in place (zero-copy)` or `copy`.
    pub fn describe(self) -> &'static str {
        match self {
            Api::InPlace => "in place (zero-copy)",
            Api::Copy => "copy",
        }
    }
}

/// Value parser of a `-t/--transport NAME` that takes one msgpass
/// transport name or alias (msgpass's error lists the known ones).
pub fn transport_name(name: &str) -> Result<String, msgpass::Error> {
    msgpass::transport::by_name(name)?;
    Ok(name.to_string())
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

/// Parses the `ADDR:PORT` of `--listen` / `--connect` (named `flag` in
/// errors): only with `-t tcp`, and the port of the last instance,
/// PORT + its number, must fit.
pub fn tcp_base(flag: &str, value: &str, common: &Common) -> Result<SocketAddr> {
    if common.transport != "tcp" {
        bail!(
            "{flag} {value}: only works with -t tcp (the transport is {})",
            common.transport
        );
    }
    let addr = value
        .to_socket_addrs()
        .map_err(|e| anyhow!("{flag} {value}: expected ADDR:PORT, like 10.0.0.1:5000 ({e})"))?
        .next()
        .ok_or_else(|| anyhow!("{flag} {value}: the name has no address"))?;
    if addr.port() == 0 {
        bail!("{flag} {value}: the port must be between 1 and 65535");
    }
    let last = common.i.saturating_add(common.n - 1);
    instance_addr(addr, last).map_err(|e| anyhow!("{flag} {value}: {e}"))?;
    Ok(addr)
}

/// The TCP address of adder instance `k` when instance 0 is at `base`:
/// the same host, port + k.
pub fn instance_addr(base: SocketAddr, k: u32) -> Result<SocketAddr> {
    let port = u16::try_from(base.port() as u64 + k as u64).map_err(|_| {
        anyhow!(
            "instance {k} would need port {}, above 65535 (use a lower port or -i)",
            base.port() as u64 + k as u64
        )
    })?;
    let mut a = base;
    a.set_port(port);
    Ok(a)
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
    fn tcp_addresses() {
        let common = |t: &str, n, i| Common {
            n,
            i,
            transport: t.to_string(),
            ns: None,
            cpus: None,
            spin_us: 20,
            copy: false,
        };
        let base = tcp_base("--listen", "10.0.0.1:5000", &common("tcp", 2, 3)).unwrap();
        assert_eq!(
            instance_addr(base, 4).unwrap(),
            "10.0.0.1:5004".parse().unwrap()
        );
        let e = tcp_base("--listen", "10.0.0.1:5000", &common("shm", 1, 0)).unwrap_err();
        assert!(e
            .to_string()
            .starts_with("--listen 10.0.0.1:5000: only works with -t tcp"));
        assert!(tcp_base("--connect", "10.0.0.1", &common("tcp", 1, 0)).is_err());
        assert!(tcp_base("--connect", "10.0.0.1:0", &common("tcp", 1, 0)).is_err());
        assert!(tcp_base("--connect", "10.0.0.1:65535", &common("tcp", 1, 0)).is_ok());
        let e = tcp_base("--connect", "10.0.0.1:65535", &common("tcp", 2, 0)).unwrap_err();
        assert!(e.to_string().contains("above 65535"), "{e}");
        assert!(tcp_base("--connect", "[::1]:7000", &common("tcp", 1, 0)).is_ok());
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

    #[test]
    fn the_parser_refuses_an_unknown_transport_and_a_bad_cpu_list() {
        use clap::Parser;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            c: Common,
        }
        let refused = |a: &[&str]| {
            let e = Wrap::try_parse_from(std::iter::once("x").chain(a.iter().copied()))
                .err()
                .unwrap_or_else(|| panic!("{a:?} accepted"));
            crate::cli::one_line(&e)
        };
        let e = refused(&["-t", "bogus"]);
        assert!(
            e.starts_with("--transport bogus: unknown transport \"bogus\" (known: shm, "),
            "{e}"
        );
        let e = refused(&["--cpus", "4294967295"]);
        assert!(e.starts_with("--cpus 4294967295: invalid CPU list"), "{e}");
        let w = Wrap::try_parse_from(["x", "-t", "uds", "--cpus", "0,0"]).unwrap();
        assert_eq!(
            (w.c.transport.as_str(), w.c.validate().unwrap().0),
            ("uds", vec![0, 0])
        );
    }

    #[test]
    fn transport_help_names_every_transport() {
        use clap::CommandFactory;
        #[derive(clap::Parser)]
        struct Wrap {
            #[command(flatten)]
            c: Common,
        }
        let cmd = Wrap::command();
        let arg = cmd
            .get_arguments()
            .find(|a| a.get_id() == "transport")
            .expect("--transport");
        let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
        for name in msgpass::transport::NAMES {
            assert!(help.contains(name), "--transport help lacks {name}: {help}");
        }
    }
}
