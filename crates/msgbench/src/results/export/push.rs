//! `--push URL`: a run's OpenMetrics text sent to a Prometheus
//! Pushgateway, `POST URL/metrics/job/msgbench/instance/<host>`.
//!
//! POST replaces, in that group, the families the run has (a new ipc run
//! replaces the host's ipc figures) and keeps the others (the host's
//! adder figures stay). The host goes in the path as it is when it is
//! letters, digits, `.`, `_` and `-`, else base64url-encoded
//! (`instance@base64/...`, as the Pushgateway reads a value a path cannot
//! carry). The text is sent as Prometheus's text format 0.0.4 (what the
//! Pushgateway documents it parses; the OpenMetrics text is valid in it,
//! `# UNIT` and `# EOF` being comments there). Plain HTTP only (no TLS
//! built in); connecting may take [`CONNECT`], the whole push [`WHOLE`],
//! so an unreachable or silent gateway costs seconds, never a hang.

use std::time::Duration;

use anyhow::{bail, Result};
use base64::Engine as _;

/// The longest connecting to the gateway may take.
pub const CONNECT: Duration = Duration::from_secs(5);

/// The longest the whole push may take (connecting, sending, the answer).
pub const WHOLE: Duration = Duration::from_secs(10);

/// What the push says its body is.
const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A Pushgateway's address, checked before a run starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gateway {
    base: String,
}

impl Gateway {
    /// `--push URL`: `http://HOST[:PORT][/PATH]`.
    pub fn parse(url: &str) -> Result<Gateway> {
        let Some(rest) = url.strip_prefix("http://") else {
            if url.starts_with("https://") {
                bail!("--push {url}: https is not supported (no TLS built in): give the gateway's http:// address");
            }
            bail!("--push {url}: not a Pushgateway address (http://HOST[:PORT])");
        };
        let host = rest.split('/').next().unwrap_or("");
        if host.is_empty() || host.chars().any(|c| c.is_whitespace() || c == '@') {
            bail!("--push {url}: not a Pushgateway address (http://HOST[:PORT])");
        }
        Ok(Gateway {
            base: url.trim_end_matches('/').to_string(),
        })
    }

    /// The group a run of `host` is pushed to.
    pub fn group_url(&self, host: &str) -> String {
        let plain = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if plain {
            format!("{}/metrics/job/msgbench/instance/{host}", self.base)
        } else {
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(host);
            format!("{}/metrics/job/msgbench/instance@base64/{b64}", self.base)
        }
    }

    /// Pushes `text` (OpenMetrics) as the group of `host`; an error is
    /// one line naming the URL.
    pub fn push(&self, host: &str, text: &str) -> Result<()> {
        let url = self.group_url(host);
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_connect(Some(CONNECT))
            .timeout_global(Some(WHOLE))
            .http_status_as_error(false)
            .build()
            .into();
        let mut resp = match agent
            .post(&url)
            .header("Content-Type", CONTENT_TYPE)
            .send(text)
        {
            Ok(r) => r,
            Err(e) => bail!("--push: {url}: {e}"),
        };
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        let said = resp
            .body_mut()
            .with_config()
            .limit(4096)
            .read_to_string()
            .unwrap_or_default();
        let said = said.split_whitespace().collect::<Vec<_>>().join(" ");
        bail!("--push: {url}: the gateway answered {status}: {said}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gateway_addresses_and_groups() {
        let g = Gateway::parse("http://127.0.0.1:9091/").unwrap();
        assert_eq!(
            g.group_url("board-1.lab"),
            "http://127.0.0.1:9091/metrics/job/msgbench/instance/board-1.lab"
        );
        assert_eq!(
            g.group_url("a/b"),
            "http://127.0.0.1:9091/metrics/job/msgbench/instance@base64/YS9i"
        );
        for bad in [
            "https://gw:9091",
            "gw:9091",
            "http://",
            "http:///x",
            "ftp://gw",
        ] {
            let e = Gateway::parse(bad).unwrap_err().to_string();
            assert!(e.starts_with(&format!("--push {bad}: ")), "{e}");
        }
    }
}
