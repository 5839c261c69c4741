//! The CPU clocks read around a measured run: the server's serving
//! thread (asked over the connection), the whole process and the client
//! thread, and the CPU per message between two readings.

use msgpass::transport::ClientConnection;
use msgpass::Connection;

use super::super::protocol::CMD_CPU;
use super::super::row::CpuCost;
use super::super::stop::Stop;
use crate::measure::cpu::{process_cpu_ns, thread_cpu_ns};

/// Asks the server for its thread's CPU time.
fn server_cpu_ns<C: ClientConnection + ?Sized>(conn: &mut Connection<C>) -> Result<u64, Stop> {
    let mut r = [0u8; 16];
    let n = conn
        .call(CMD_CPU, &[], &mut r)
        .map_err(|e| Stop::Failed(format!("asking the server for its CPU time: {e}")))?;
    if n != 8 {
        return Err(Stop::Failed(format!(
            "the server's CPU time came as {n} bytes, expected 8"
        )));
    }
    let mut b = [0u8; 8];
    b.copy_from_slice(&r[..8]);
    Ok(u64::from_le_bytes(b))
}

/// The CPU time of this process, and of the server's when it is another
/// one (`--layout process`): what "CPU all" counts.
fn processes_cpu_ns(server_pid: Option<i32>) -> Result<u64, Stop> {
    let server = match server_pid {
        Some(pid) => oslayer::clock::process_cpu_ns_of(pid)
            .map_err(|e| Stop::Failed(format!("reading the server process's CPU clock: {e}")))?,
        None => 0,
    };
    Ok(process_cpu_ns() + server)
}

/// CPU clocks read around a run: the server's serving thread (asked
/// over the connection), the whole process (with the server's, when it
/// is another one) and this thread.
pub(super) struct CpuMark {
    server: u64,
    process: u64,
    client: u64,
}

impl CpuMark {
    /// Reads the clocks before a run (the server's first).
    pub(super) fn before<C: ClientConnection + ?Sized>(
        conn: &mut Connection<C>,
        server_pid: Option<i32>,
    ) -> Result<CpuMark, Stop> {
        let server = server_cpu_ns(conn)?;
        Ok(CpuMark {
            server,
            process: processes_cpu_ns(server_pid)?,
            client: thread_cpu_ns(),
        })
    }

    /// Reads the clocks after a run (the server's last).
    pub(super) fn after<C: ClientConnection + ?Sized>(
        conn: &mut Connection<C>,
        server_pid: Option<i32>,
    ) -> Result<CpuMark, Stop> {
        let client = thread_cpu_ns();
        let process = processes_cpu_ns(server_pid)?;
        Ok(CpuMark {
            server: server_cpu_ns(conn)?,
            process,
            client,
        })
    }

    /// The CPU per message between `self` and `end`.
    pub(super) fn per_message(&self, end: &CpuMark, messages: u64) -> CpuCost {
        CpuCost::per_message(
            end.client.saturating_sub(self.client),
            end.server.saturating_sub(self.server),
            end.process.saturating_sub(self.process),
            messages,
        )
    }
}
