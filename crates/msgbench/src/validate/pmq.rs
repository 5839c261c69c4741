//! pmqtest's equivalent: a POSIX message queue hand-over.
//!
//! Two queues as pmqtest makes them (`mq_maxmsg` 1, `mq_msgsize` 8,
//! blocking, opened read-write), here under a unique name unlinked at
//! once. The wake-up is `mq_send` of pmqtest's 7-byte text at priority 1;
//! the wait `mq_timedreceive` (pmqtest's `mq_receive`, which is the same
//! system call, with a bound). The received text is checked.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{bail, Context, Result};

use super::handover::{realtime_deadline, Mechanism, Side};

/// pmqtest's message size.
const MSG_SIZE: usize = 8;
/// The test message.
const TEXT: &[u8] = b"Testing";

static SEQ: AtomicU64 = AtomicU64::new(0);

fn make_queue() -> Result<OwnedFd> {
    let seq = SEQ.fetch_add(1, Ordering::Relaxed);
    let name = CString::new(format!("/msgbench-validate.{}.{seq}", std::process::id()))
        .context("queue name")?;
    // SAFETY: mq_attr is plain data; all-zero is valid.
    let mut attr: libc::mq_attr = unsafe { std::mem::zeroed() };
    attr.mq_maxmsg = 1;
    attr.mq_msgsize = MSG_SIZE as libc::c_long;
    let mode: libc::mode_t = 0o600;
    // SAFETY: name is NUL-terminated; with O_CREAT mq_open reads a mode_t
    // and a pointer to an mq_attr that lives for the call.
    let fd = unsafe {
        libc::mq_open(
            name.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            mode,
            &attr as *const libc::mq_attr,
        )
    };
    let err = std::io::Error::last_os_error();
    // SAFETY: name is NUL-terminated.
    unsafe { libc::mq_unlink(name.as_ptr()) };
    if fd < 0 {
        return Err(err).with_context(|| format!("mq_open {name:?}"));
    }
    // SAFETY: fd was just returned by mq_open and is owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
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
        let q = self.queue_of(to).as_raw_fd();
        // SAFETY: TEXT is valid for its length; q is an open queue.
        let r = unsafe { libc::mq_send(q, TEXT.as_ptr().cast(), TEXT.len(), 1) };
        if r != 0 {
            return Err(std::io::Error::last_os_error()).context("mq_send");
        }
        Ok(())
    }

    fn wait(&self, side: Side, limit: Duration) -> Result<()> {
        let q = self.queue_of(side).as_raw_fd();
        let mut buf = [0u8; MSG_SIZE];
        let ts = realtime_deadline(limit);
        // SAFETY: buf is writable for MSG_SIZE bytes (the queue's message
        // size); ts is a valid timespec; no priority wanted.
        let n = unsafe {
            libc::mq_timedreceive(
                q,
                buf.as_mut_ptr().cast(),
                MSG_SIZE,
                std::ptr::null_mut(),
                &ts,
            )
        };
        if n < 0 {
            return Err(std::io::Error::last_os_error()).context("mq_timedreceive");
        }
        if &buf[..n as usize] != TEXT {
            bail!("wrong message: {:?}", &buf[..n as usize]);
        }
        Ok(())
    }
}
