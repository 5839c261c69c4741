//! `msgbench serve ipc`: the control channel on PORT, and each row's echo
//! server (the ipc suite's own server thread, pinned to `--cpu`) on PORT+1,
//! started when a client asks for the row and stopped at the next ask or
//! at the end. One row at a time: one client at a time.

use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::control::{self, Info, RowAsk, RowOffer};
use super::{listen, listen_addr, options, port_after, ready, secret, IpcServeArgs};
use crate::suites::ipc::{Api, ServerThread};

/// Longest a row's server may take to stop.
const STOP_LIMIT: Duration = Duration::from_secs(3);

/// Serves until `stop` is set.
pub(super) fn run(args: &IpcServeArgs, stop: Arc<AtomicBool>) -> Result<()> {
    let addr = listen_addr(&args.listen.listen, 1)?;
    let cpu = server_cpu(args.cpu)?;
    let token = secret::for_server(args.listen.token_file.as_deref())?;
    let control = listen(addr, &token, &stop)?;
    let row_addr = port_after(addr, 1);
    // Each row binds it anew: a port taken now is refused now, not at the
    // first row.
    drop(
        std::net::TcpListener::bind(row_addr)
            .with_context(|| format!("cannot listen on {row_addr}"))?,
    );
    let mut info = Info::here("ipc");
    info.row_port = Some(row_addr.port());
    ready(addr, &token, &info)?;
    let mut rows = Rows {
        addr: row_addr,
        opts: options(&token),
        cpu,
        current: None,
    };
    let served = control::serve(control, &info, &mut |ask| rows.start(ask));
    rows.stop_current();
    served
}

/// `--cpu`, checked against the CPUs this process may run on, or the
/// first of them.
fn server_cpu(given: Option<usize>) -> Result<usize> {
    let usable = crate::suites::ipc::usable_cpus();
    match given {
        Some(c) if usable.contains(&c) => Ok(c),
        Some(c) => bail!("--cpu {c}: not a CPU this process may run on ({usable:?})"),
        None => usable
            .first()
            .copied()
            .context("no CPU is available to this process"),
    }
}

/// The rows' server: at most one running.
struct Rows {
    addr: SocketAddr,
    opts: msgpass::Options,
    cpu: usize,
    current: Option<ServerThread>,
}

impl Rows {
    /// Stops the running row and starts `ask`'s; `EBUSY` when it cannot.
    fn start(&mut self, ask: RowAsk) -> Result<RowOffer, i32> {
        self.stop_current();
        let api = if ask.copy { Api::Copy } else { Api::InPlace };
        // RowAsk::decode has bounded the size (16 MiB).
        match ServerThread::listen_tcp(self.addr, &self.opts, self.cpu, ask.size as usize, api) {
            Ok(t) => {
                self.current = Some(t);
                Ok(RowOffer {
                    port: self.addr.port(),
                    cpu: self.cpu as u32,
                })
            }
            Err(e) => {
                eprintln!(
                    "msgbench serve: a row of {} bytes did not start: {e}",
                    ask.size
                );
                Err(libc::EBUSY)
            }
        }
    }

    /// Stops the running row, if any (normally over already: the client
    /// ends each row with the ipc protocol's stop).
    fn stop_current(&mut self) {
        if let Some(t) = self.current.take() {
            if let Err(e) = t.stop(STOP_LIMIT) {
                eprintln!("msgbench serve: the last row's server: {e}");
            }
        }
    }
}
