//! The control channel of `msgbench serve`: what a client learns at the
//! `--listen` address before it measures, and (ipc) how it asks for each
//! row's server. The channel is a msgpass remote tcp channel with the
//! server's token, like the measured ones, so nobody without the token
//! reaches any of it.
//!
//! - [`CMD_INFO`]: empty request; the reply is [`Info`] as JSON (at most
//!   [`INFO_MAX`] bytes): the suite served, the server host's name and
//!   kernel, msgbench's version, and the adder's instances and ports.
//! - [`CMD_IPC_ROW`] (ipc only): the request is a [`RowAsk`] (size, API);
//!   the server stops the previous row's server and starts this one's on
//!   its row port, then replies a [`RowOffer`] (port, the server thread's
//!   CPU), or an errno (`EINVAL` for a request it refuses, `EBUSY` when the
//!   row's server cannot start, `ENOTTY` from an adder server).

use anyhow::Result;
use msgpass::Channel;
use serde::{Deserialize, Serialize};

/// Reply [`Info`] as JSON.
pub const CMD_INFO: u32 = 0x5345_0001;
/// Start an ipc row's server (request: [`RowAsk`]; reply: [`RowOffer`]).
pub const CMD_IPC_ROW: u32 = 0x5345_0002;
/// Largest [`Info`] reply a client reads.
pub const INFO_MAX: usize = 4096;
/// Longest host name or kernel string a client keeps from a reply.
const TEXT_MAX: usize = 256;
/// Largest ipc row size a server accepts (what `msgbench ipc --sizes` takes).
pub const ROW_SIZE_MAX: u64 = 16 << 20;

/// What a server says about itself ([`CMD_INFO`]; also in its ready line).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Info {
    /// The suite served: `adder` or `ipc`.
    pub suite: String,
    /// The server host's name.
    pub host: String,
    /// Its kernel: `sysname release version`, as the envelope's
    /// `environment.kernel`.
    pub kernel: String,
    /// The serving msgbench's version.
    pub msgbench: String,
    /// adder: the instances served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instances: Option<u32>,
    /// adder: instance k's port is `first_port + k`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_port: Option<u16>,
    /// ipc: the port each row's server listens on, one row at a time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_port: Option<u16>,
}

impl Info {
    /// This host's [`Info`] for `suite` (the suite's fields unset).
    pub fn here(suite: &str) -> Info {
        let u = oslayer::system::uname();
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        Info {
            suite: suite.to_string(),
            host,
            kernel: format!("{} {} {}", u.sysname, u.release, u.version),
            msgbench: env!("CARGO_PKG_VERSION").to_string(),
            instances: None,
            first_port: None,
            row_port: None,
        }
    }

    /// An [`Info`] from a peer's reply: JSON of at most [`INFO_MAX`]
    /// bytes, its texts cut to `TEXT_MAX` characters, control
    /// characters replaced (they go into terminals and results).
    pub fn parse(bytes: &[u8]) -> std::result::Result<Info, String> {
        let mut info: Info =
            serde_json::from_slice(bytes).map_err(|e| format!("not msgbench serve's info: {e}"))?;
        for t in [
            &mut info.suite,
            &mut info.host,
            &mut info.kernel,
            &mut info.msgbench,
        ] {
            *t = tame(t);
        }
        Ok(info)
    }
}

/// `text` cut to [`TEXT_MAX`] characters, control characters as `?`.
fn tame(text: &str) -> String {
    text.chars()
        .take(TEXT_MAX)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// The ready line `msgbench serve` prints once on standard output when
/// every channel listens: JSON, one line.
#[derive(Debug, Serialize)]
pub struct Ready<'a> {
    /// Always true.
    pub ready: bool,
    /// The control address, as bound (what `--server` takes).
    pub listen: String,
    /// The token a client needs, 32 hexadecimal digits.
    pub token: String,
    /// The server's process id.
    pub pid: u32,
    /// The rest: suite, host, kernel, version, ports.
    #[serde(flatten)]
    pub info: &'a Info,
}

/// What an ipc client asks for ([`CMD_IPC_ROW`]): the row's largest
/// message and whether it measures the copying API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowAsk {
    /// Message size, bytes (at most [`ROW_SIZE_MAX`]).
    pub size: u64,
    /// The copying API (every byte echoed) rather than in place.
    pub copy: bool,
}

impl RowAsk {
    /// Bytes on the wire.
    pub const LEN: usize = 9;

    /// The request: size (u64, little-endian), then 1 for copy, 0 in place.
    pub fn encode(&self) -> [u8; RowAsk::LEN] {
        let mut b = [0u8; RowAsk::LEN];
        b[..8].copy_from_slice(&self.size.to_le_bytes());
        b[8] = u8::from(self.copy);
        b
    }

    /// A peer's request, or `None` when it is not one this server takes.
    pub fn decode(b: &[u8]) -> Option<RowAsk> {
        let b: &[u8; RowAsk::LEN] = b.try_into().ok()?;
        let size = u64::from_le_bytes(b[..8].try_into().ok()?);
        let copy = match b[8] {
            0 => false,
            1 => true,
            _ => return None,
        };
        (size <= ROW_SIZE_MAX).then_some(RowAsk { size, copy })
    }
}

/// What an ipc server answers a [`RowAsk`]: where the row's server
/// listens and the CPU its thread is pinned to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowOffer {
    /// The row server's port (on the control address's host).
    pub port: u16,
    /// The CPU its thread is pinned to, on the server host.
    pub cpu: u32,
}

impl RowOffer {
    /// Bytes on the wire.
    pub const LEN: usize = 6;

    /// The reply: port (u16), CPU (u32), little-endian.
    pub fn encode(&self) -> [u8; RowOffer::LEN] {
        let mut b = [0u8; RowOffer::LEN];
        b[..2].copy_from_slice(&self.port.to_le_bytes());
        b[2..].copy_from_slice(&self.cpu.to_le_bytes());
        b
    }

    /// A server's reply, or `None` when it is not one.
    pub fn decode(b: &[u8]) -> Option<RowOffer> {
        let b: &[u8; RowOffer::LEN] = b.try_into().ok()?;
        Some(RowOffer {
            port: u16::from_le_bytes([b[0], b[1]]),
            cpu: u32::from_le_bytes([b[2], b[3], b[4], b[5]]),
        })
    }
}

/// Serves the control channel until its stop flag is set: [`CMD_INFO`]
/// with `info`, [`CMD_IPC_ROW`] with `row` (a [`RowOffer`], or the errno
/// to answer), anything else `ENOTTY`.
pub fn serve(
    mut ch: Channel,
    info: &Info,
    row: &mut dyn FnMut(RowAsk) -> std::result::Result<RowOffer, i32>,
) -> Result<()> {
    let info_json = serde_json::to_vec(info)?;
    while let Some(req) = ch.receive()? {
        match req.cmd() {
            CMD_INFO => req.reply(&info_json)?,
            CMD_IPC_ROW => match RowAsk::decode(req.data()) {
                None => req.reply_error(libc::EINVAL)?,
                Some(ask) => match row(ask) {
                    Ok(offer) => req.reply(&offer.encode())?,
                    Err(code) => req.reply_error(code)?,
                },
            },
            _ => req.reply_error(libc::ENOTTY)?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn row_messages_round_trip_and_bad_ones_are_refused() {
        let ask = RowAsk {
            size: 4096,
            copy: true,
        };
        assert_eq!(RowAsk::decode(&ask.encode()), Some(ask));
        let mut big = ask;
        big.size = ROW_SIZE_MAX + 1;
        assert_eq!(RowAsk::decode(&big.encode()), None, "over the largest size");
        let mut odd = ask.encode();
        odd[8] = 2;
        assert_eq!(RowAsk::decode(&odd), None);
        assert_eq!(RowAsk::decode(&odd[..8]), None);
        let offer = RowOffer { port: 7101, cpu: 3 };
        assert_eq!(RowOffer::decode(&offer.encode()), Some(offer));
        assert_eq!(RowOffer::decode(&[1, 2, 3]), None);
    }

    #[test]
    fn a_peers_info_is_tamed() {
        let mut info = Info::here("adder");
        info.host = format!("evil\x1b[2J{}", "x".repeat(1000));
        let parsed = Info::parse(&serde_json::to_vec(&info).expect("json")).expect("parses");
        assert!(parsed.host.starts_with("evil?[2J"), "{}", parsed.host);
        assert_eq!(parsed.host.chars().count(), TEXT_MAX);
        assert!(Info::parse(b"SSH-2.0").is_err());
    }
}
