//! The client side of `msgbench serve`: `--server ADDR:PORT` and
//! `--token-file FILE` ([`RemoteArgs`], flattened into the suites that
//! measure against a remote server), reaching the server's control
//! channel before anything runs ([`RemoteServer::reach`]: a missing
//! server, a refused token or a server of another suite is one line, exit
//! 1), and what the results say of it: the envelope's `settings.server`
//! (`remote`, `address`, and the server host's `host`, `kernel` and
//! `msgbench` version, as its control channel told them).

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{anyhow, bail, Result};
use clap::Args;
use msgpass::{Connection, Error, Token};
use serde::Serialize;

use super::control::{Info, RowAsk, RowOffer, CMD_INFO, CMD_IPC_ROW, INFO_MAX};
use super::secret;

/// How long a control call may take before the server is called stuck.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(10);

/// `--server` and `--token-file`, as the suites take them.
#[derive(Debug, Clone, Default, Args)]
pub struct RemoteArgs {
    /// Measure against `msgbench serve` at ADDR:PORT (the "listen" of its
    /// ready line; on another host) over tcp, instead of servers of our
    /// own; its token from $MSGBENCH_TOKEN or --token-file.
    #[arg(long = "server", value_name = "ADDR:PORT")]
    pub server: Option<String>,
    /// With --server: the server's token is in FILE (32 hexadecimal
    /// digits; a file of this user nobody else may read) [default:
    /// $MSGBENCH_TOKEN].
    #[arg(long = "token-file", value_name = "FILE", requires = "server")]
    pub token_file: Option<PathBuf>,
}

/// A `msgbench serve` reached and asked what it serves: the envelope's
/// `settings.server`.
#[derive(Debug, Clone, Serialize)]
pub struct RemoteServer {
    /// Always true: the rows were measured against this server, not ones
    /// the suite started.
    pub remote: bool,
    /// The control address, as `--server` gave it.
    pub address: String,
    /// The server host's name.
    pub host: String,
    /// The server host's kernel (`sysname release version`).
    pub kernel: String,
    /// The serving msgbench's version.
    pub msgbench: String,
    /// adder: the instances it serves.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instances: Option<u32>,
    /// The control address, resolved.
    #[serde(skip)]
    addr: SocketAddr,
    /// The token presented (never written anywhere).
    #[serde(skip)]
    token: Option<Token>,
    /// adder: instance k's port is `first_port + k`.
    #[serde(skip)]
    first_port: Option<u16>,
}

impl RemoteServer {
    /// Reaches the server `args` name, if they name one, and checks it
    /// serves `suite`.
    pub fn reach(args: &RemoteArgs, suite: &str) -> Result<Option<RemoteServer>> {
        let Some(given) = &args.server else {
            return Ok(None);
        };
        let token = secret::given(args.token_file.as_deref())?;
        let addr = resolve(given)?;
        let info = ask_info(given, addr, token.as_ref(), suite)?;
        if info.suite != suite {
            bail!(
                "--server {given}: it serves {0} (msgbench serve {0}), not {suite}",
                info.suite
            );
        }
        Ok(Some(RemoteServer {
            remote: true,
            address: given.clone(),
            host: info.host,
            kernel: info.kernel,
            msgbench: info.msgbench,
            instances: info.instances,
            addr,
            token,
            first_port: info.first_port,
        }))
    }

    /// `base` with the server's token.
    pub fn options(&self, base: msgpass::Options) -> msgpass::Options {
        msgpass::Options {
            token: self.token.clone(),
            ..base
        }
    }

    /// adder: instance 0's address (instance k is on its port + k).
    pub fn first_instance(&self) -> Result<SocketAddr> {
        let port = self
            .first_port
            .ok_or_else(|| anyhow!("--server {}: it named no adder ports", self.address))?;
        Ok(self.at_port(port))
    }

    /// ipc: asks the server for a row's server of `size`-byte messages
    /// (`copy`: the copying API's echo); its address and the CPU its
    /// thread is pinned to.
    pub fn ipc_row(&self, size: usize, copy: bool) -> Result<(SocketAddr, usize)> {
        let mut conn = connect(&self.address, self.addr, self.token.as_ref(), "ipc")?;
        let ask = RowAsk {
            size: size as u64,
            copy,
        };
        let mut buf = [0u8; RowOffer::LEN];
        let n = conn
            .call(CMD_IPC_ROW, &ask.encode(), &mut buf)
            .map_err(|e| match e {
                Error::Remote { code } if code == libc::EBUSY => anyhow!(
                    "the server could not start this row's server (its standard error says why)"
                ),
                e => anyhow!("asking the server for a row: {e}"),
            })?;
        let offer = RowOffer::decode(&buf[..n])
            .ok_or_else(|| anyhow!("the server's answer to a row is {n} bytes, not a row"))?;
        Ok((self.at_port(offer.port), offer.cpu as usize))
    }

    /// One line for the notes: where the rows were measured against.
    pub fn describe(&self, suite: &str) -> String {
        format!(
            "Server: msgbench serve {suite} at {} on host {} ({}); every row measured from this host over tcp.",
            self.address, self.host, self.kernel
        )
    }

    /// The control address's host with `port`.
    fn at_port(&self, port: u16) -> SocketAddr {
        let mut a = self.addr;
        a.set_port(port);
        a
    }
}

/// `--server ADDR:PORT`, resolved.
fn resolve(given: &str) -> Result<SocketAddr> {
    let addr = given
        .to_socket_addrs()
        .map_err(|e| anyhow!("--server {given}: expected ADDR:PORT, like 10.0.0.1:7100 ({e})"))?
        .next()
        .ok_or_else(|| anyhow!("--server {given}: the name has no address"))?;
    if addr.port() == 0 {
        bail!("--server {given}: the port must be between 1 and 65535");
    }
    Ok(addr)
}

/// Asks the control channel at `addr` what it serves.
fn ask_info(given: &str, addr: SocketAddr, token: Option<&Token>, suite: &str) -> Result<Info> {
    let mut conn = connect(given, addr, token, suite)?;
    let mut buf = vec![0u8; INFO_MAX];
    let n = conn
        .call(CMD_INFO, &[], &mut buf)
        .map_err(|e| anyhow!("--server {given}: asking what it serves: {e}"))?;
    Info::parse(&buf[..n]).map_err(|e| anyhow!("--server {given}: {e}"))
}

/// A connection to the control channel at `addr`, every call bounded.
fn connect(
    given: &str,
    addr: SocketAddr,
    token: Option<&Token>,
    suite: &str,
) -> Result<Connection> {
    let opts = msgpass::Options {
        token: token.cloned(),
        call_timeout: Some(CONTROL_TIMEOUT),
        ..msgpass::Options::default()
    };
    Connection::connect_tcp(addr, &opts).map_err(|e| match e {
        Error::NotFound { .. } => anyhow!(
            "--server {given}: nobody listens there: start `msgbench serve {suite} --listen {given}` on that host"
        ),
        Error::Refused { .. } if token.is_none() => anyhow!(
            "--server {given}: the server asks for a token and none was given: set \
             MSGBENCH_TOKEN, or --token-file FILE, to the token of its ready line"
        ),
        Error::Refused { reason, .. } => anyhow!(
            "--server {given}: the server refused the token ({reason}): give the one its \
             ready line printed"
        ),
        e => anyhow!("--server {given}: {e}"),
    })
}
