//! pmqtest's equivalent: a POSIX message queue hand-over.
//!
//! Two queues as pmqtest makes them (`mq_maxmsg` 1, `mq_msgsize` 8,
//! blocking, opened read-write), here under a unique name unlinked at
//! once. The wake-up is `mq_send` of pmqtest's 7-byte text at priority 1;
//! the wait `mq_timedreceive` (pmqtest's `mq_receive`, which is the same
//! system call, with a bound). The received text is checked.

use std::ffi::CString;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use oslayer::mqueue::{self, Access};

use super::handover::{Mechanism, Side};

/// pmqtest's message size.
const MSG_SIZE: usize = 8;
/// The test message.
const TEXT: &[u8] = b"Testing";

static SEQ: AtomicU64 = AtomicU64::new(0);

fn make_queue() -> Result<OwnedFd> {
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let name = CString::new(format!("/msgbench-validate.{}.{seq}", std::process::id()))
        .context("queue name")?;
    let fd = mqueue::open(&name, Access::ReadWrite, false, Some((1, MSG_SIZE)));
    let _ = mqueue::unlink(&name);
    fd.with_context(|| format!("mq_open {name:?}"))
}

/// The test queue (receiver reads it) and the sync queue (sender).
pub struct MqHandover {
    test: OwnedFd,
    sync: OwnedFd,
}

impl MqHandover {
    /// Creates both queues.
    pub fn new() -> Result<MqHandover> {
        Ok(MqHandover {
            test: make_queue()?,
            sync: make_queue()?,
        })
    }

    fn queue_of(&self, side: Side) -> &OwnedFd {
        match side {
            Side::Receiver => &self.test,
            Side::Sender => &self.sync,
        }
    }
}

impl Mechanism for MqHandover {
    fn post(&self, to: Side) -> Result<()> {
        mqueue::send_priority(self.queue_of(to).as_fd(), TEXT, 1).context("mq_send")
    }

    fn wait(&self, side: Side, limit: Duration) -> Result<()> {
        let mut buf = [0u8; MSG_SIZE];
        let n = mqueue::timed_receive(self.queue_of(side).as_fd(), &mut buf, limit)
            .context("mq_timedreceive")?;
        if &buf[..n] != TEXT {
            bail!("wrong message: {:?}", &buf[..n]);
        }
        Ok(())
    }
}
