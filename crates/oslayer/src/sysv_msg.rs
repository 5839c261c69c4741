//! System V message queues (`msgget`, `msgsnd`, `msgrcv`, `msgctl`).
//!
//! Hand-written over libc: neither rustix nor nix has them. Queues are
//! named by kernel ids, not descriptors: [`MsgQueueId`] keeps them apart
//! from other integers.

use std::io;
use std::mem::{size_of, zeroed};
use std::ptr;

use crate::{check, check_size, retry};

/// A System V message queue's id (reusable by the kernel once removed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct MsgQueueId(pub i32);

/// A message type: positive to send; see msgrcv(2) for receiving.
pub type MsgType = libc::c_long;

/// Flags of [`send`] and [`receive`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MsgFlags(libc::c_int);

impl MsgFlags {
    /// No flag: block.
    pub const EMPTY: MsgFlags = MsgFlags(0);
    /// Do not block: a full queue is `EAGAIN` (send), an empty one `ENOMSG`
    /// (receive).
    pub const NOWAIT: MsgFlags = MsgFlags(libc::IPC_NOWAIT);
    /// Receive: truncate a message longer than the buffer instead of
    /// failing with `E2BIG`.
    pub const NOERROR: MsgFlags = MsgFlags(libc::MSG_NOERROR);
}

impl std::ops::BitOr for MsgFlags {
    type Output = MsgFlags;
    fn bitor(self, o: MsgFlags) -> MsgFlags {
        MsgFlags(self.0 | o.0)
    }
}

/// A message buffer: the `long` message type, then up to `capacity` bytes
/// of text, laid out as `msgsnd`/`msgrcv` expect. Allocated once, reused
/// for every message.
#[derive(Debug)]
pub struct MsgBuf {
    /// Word 0 is the type; the text starts at word 1.
    words: Vec<libc::c_long>,
    capacity: usize,
}

impl MsgBuf {
    /// A zeroed buffer for texts of up to `capacity` bytes.
    pub fn new(capacity: usize) -> MsgBuf {
        let w = size_of::<libc::c_long>();
        MsgBuf {
            words: vec![0; 1 + capacity.div_ceil(w)],
            capacity,
        }
    }

    /// The text capacity in bytes.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The message type.
    #[inline]
    pub fn mtype(&self) -> MsgType {
        self.words[0]
    }

    /// Sets the message type (must be positive to be sent).
    #[inline]
    pub fn set_mtype(&mut self, t: MsgType) {
        self.words[0] = t;
    }

    /// The text area (`capacity` bytes).
    #[inline]
    pub fn text(&self) -> &[u8] {
        // SAFETY: words[1..] holds at least `capacity` bytes, any bit
        // pattern is a valid u8, and the borrow of self keeps them alive
        // and unaliased by writers.
        unsafe { std::slice::from_raw_parts(self.words[1..].as_ptr() as *const u8, self.capacity) }
    }

    /// The text area (`capacity` bytes), writable.
    #[inline]
    pub fn text_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `text`, with the unique borrow of self.
        unsafe {
            std::slice::from_raw_parts_mut(self.words[1..].as_mut_ptr() as *mut u8, self.capacity)
        }
    }
}

/// Creates a new private queue (`IPC_PRIVATE`) with mode 0600.
pub fn create_private() -> io::Result<MsgQueueId> {
    // SAFETY: msgget takes no pointers.
    check(unsafe { libc::msgget(libc::IPC_PRIVATE, libc::IPC_CREAT | 0o600) }).map(MsgQueueId)
}

/// Sends the first `len` text bytes of `buf`, with its type, on queue
/// `id` (retried on `EINTR`).
///
/// # Panics
/// When `len` exceeds the buffer's capacity (a caller's bug).
#[inline]
pub fn send(id: MsgQueueId, buf: &MsgBuf, len: usize, flags: MsgFlags) -> io::Result<()> {
    assert!(len <= buf.capacity, "message text exceeds its buffer");
    retry(|| {
        // SAFETY: buf.words holds the type word followed by at least len
        // text bytes, as msgsnd reads them.
        check(unsafe {
            libc::msgsnd(
                id.0,
                buf.words.as_ptr() as *const libc::c_void,
                len,
                flags.0,
            )
        })
    })?;
    Ok(())
}

/// Receives a message of type `msgtyp` (0: any; see msgrcv(2)) from queue
/// `id` into `buf`; returns its text length. A message longer than the
/// buffer fails with `E2BIG` and stays queued (unless
/// [`MsgFlags::NOERROR`]). Not retried on `EINTR`, so that a caller can
/// re-check its conditions.
#[inline]
pub fn receive(
    id: MsgQueueId,
    buf: &mut MsgBuf,
    msgtyp: MsgType,
    flags: MsgFlags,
) -> io::Result<usize> {
    let cap = buf.capacity;
    // SAFETY: buf.words holds the type word followed by at least `cap`
    // text bytes, as msgrcv writes them.
    check_size(unsafe {
        libc::msgrcv(
            id.0,
            buf.words.as_mut_ptr() as *mut libc::c_void,
            cap,
            msgtyp,
            flags.0,
        )
    })
}

/// Removes queue `id` at once (blocked senders and receivers fail with
/// `EIDRM`).
pub fn remove(id: MsgQueueId) -> io::Result<()> {
    // SAFETY: IPC_RMID ignores the buffer pointer, which may be null.
    check(unsafe { libc::msgctl(id.0, libc::IPC_RMID, ptr::null_mut()) })?;
    Ok(())
}

/// What identifies a queue beyond its (reusable) id: its creator's uid, its
/// mode bits and its creation time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MsgQueueStamp {
    /// Uid of the creating process.
    pub cuid: u32,
    /// Permission bits.
    pub mode: u32,
    /// Creation (last change) time, in seconds since the epoch.
    pub ctime: i64,
}

/// `IPC_STAT` of queue `id`.
fn stat(id: MsgQueueId) -> io::Result<libc::msqid_ds> {
    // SAFETY: msqid_ds is plain old data; all-zero is a valid value.
    let mut ds: libc::msqid_ds = unsafe { zeroed() };
    // SAFETY: ds is valid for writes for the duration of the call.
    check(unsafe { libc::msgctl(id.0, libc::IPC_STAT, &mut ds) })?;
    Ok(ds)
}

/// The [`MsgQueueStamp`] of queue `id` (`EINVAL`/`EIDRM` once removed).
pub fn stamp(id: MsgQueueId) -> io::Result<MsgQueueStamp> {
    let ds = stat(id)?;
    Ok(MsgQueueStamp {
        cuid: ds.msg_perm.cuid,
        mode: ds.msg_perm.mode as u32 & 0o777,
        ctime: ds.msg_ctime as i64,
    })
}

/// Number of messages waiting in queue `id`.
pub fn count(id: MsgQueueId) -> io::Result<u64> {
    Ok(stat(id)?.msg_qnum as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_round_trips_and_the_queue_goes_away() {
        let q = create_private().unwrap();
        let st = stamp(q).unwrap();
        assert_eq!((st.cuid, st.mode), (crate::ids::euid(), 0o600));
        let mut buf = MsgBuf::new(16);
        buf.set_mtype(3);
        buf.text_mut()[..5].copy_from_slice(b"hello");
        send(q, &buf, 5, MsgFlags::NOWAIT).unwrap();
        assert_eq!(count(q).unwrap(), 1);
        let mut small = MsgBuf::new(2);
        let e = receive(q, &mut small, 0, MsgFlags::NOWAIT).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::E2BIG));
        let mut got = MsgBuf::new(16);
        assert_eq!(receive(q, &mut got, 0, MsgFlags::NOWAIT).unwrap(), 5);
        assert_eq!((got.mtype(), &got.text()[..5]), (3, &b"hello"[..]));
        let e = receive(q, &mut got, 0, MsgFlags::NOWAIT | MsgFlags::NOERROR).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(libc::ENOMSG));
        remove(q).unwrap();
        assert!(stamp(q).is_err());
    }
}
