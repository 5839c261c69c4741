//! The MSG tests' shared server side: the server process
//! (`msgbench rtos-peer server`, [`super::msgpeer`]) in a namespace of its
//! own, a bounded connection to it, and the WORK call. Both
//! [`super::msg`] (MSG-P-SRR, MSG-P-PRI) and [`super::msginv`] (MSG-B-PRI)
//! use it.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Result};
use msgpass::{Connection, Namespace};

use super::msgpeer::{self, WORK};
use crate::measure::peers::Peer;
use crate::measure::rundir::RunDir;

/// The endpoint the server serves in the test's namespace.
const ENDPOINT: &str = "msg/0";
/// Longest a call of these tests may take.
pub(crate) const CALL_LIMIT: Duration = Duration::from_secs(3);

/// A server process of an MSG test, in a namespace of its own (both
/// gone on drop: the process stopped first, then the directory).
pub(crate) struct Server {
    peer: Peer,
    dir: RunDir,
    transport: String,
}

/// Where a client finds a server: its namespace and transport.
#[derive(Debug, Clone)]
pub(crate) struct Target {
    ns: PathBuf,
    transport: String,
}

impl Server {
    /// Starts `msgbench rtos-peer server` over `transport` at SCHED_FIFO
    /// `fifo` on `cpu`, with inheritance when `inherit`, and waits until
    /// it serves (an error with the server's own when it cannot, such as
    /// inheritance refused on that transport).
    pub(crate) fn start(transport: &str, cpu: usize, fifo: u32, inherit: bool) -> Result<Server> {
        let base = Namespace::resolve(None)?;
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir = RunDir::create(&base, &format!("rtos-msg-{}-{nanos}", std::process::id()))?;
        let args = msgpeer::server_args(dir.path(), ENDPOINT, transport, cpu, fifo, inherit);
        let mut peer = Peer::start(msgpeer::COMMAND, "the MSG server process", &args)?;
        peer.expect("ready", Duration::from_secs(5))?;
        Ok(Server {
            peer,
            dir,
            transport: transport.to_string(),
        })
    }

    /// Where a client finds it.
    pub(crate) fn target(&self) -> Target {
        Target {
            ns: self.dir.path().to_path_buf(),
            transport: self.transport.clone(),
        }
    }

    /// Stops it; an error when it did not end cleanly.
    pub(crate) fn stop(mut self) -> Result<()> {
        self.peer.stop(Duration::from_secs(3))
    }
}

/// A connection to the server at `to` from the calling thread, every call
/// bounded by [`CALL_LIMIT`].
pub(crate) fn connect(to: &Target) -> Result<Connection> {
    let ns = Namespace::open(&to.ns)?;
    let t = msgpass::transport::by_name(&to.transport)?;
    let mut c = Connection::open(&ns, ENDPOINT, &*t, &msgpeer::options(false))?;
    c.set_timeout(Some(CALL_LIMIT))?;
    Ok(c)
}

/// One WORK call of `us` microseconds: the server's FIFO priority when
/// it began, the highest during the work, and at the reply.
pub(crate) fn work(c: &mut Connection, us: u64) -> Result<[u32; 3]> {
    let mut reply = [0u8; 12];
    let n = c.call(WORK, &us.to_le_bytes(), &mut reply)?;
    if n != 12 {
        bail!("a WORK reply of {n} bytes, expected 12");
    }
    let p = |i: usize| u32::from_le_bytes([reply[i], reply[i + 1], reply[i + 2], reply[i + 3]]);
    Ok([p(0), p(4), p(8)])
}
