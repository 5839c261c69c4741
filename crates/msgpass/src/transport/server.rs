//! What every server of the crate shares, whatever it waits on: the reply
//! guard, the reply size rule, and the set of rendezvous sessions of the
//! servers whose requests do not arrive on a descriptor per connection
//! (shm, signal, sysv-msg). The descriptor-driven servers share a whole
//! loop besides (`reactor.rs`).

use std::os::fd::{AsFd, OwnedFd};

use oslayer::poll::{self, PollFd};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::transport::rendezvous::Listener;
use crate::transport::Status;

/// Requests between two looks at the listener while a single client keeps
/// a server busy.
pub(crate) const ACCEPT_EVERY: u32 = 1024;

/// The request being served, if any (by default the index of its
/// connection): the reply guard of every server.
#[derive(Debug)]
pub(crate) struct Guard<T = usize>(Option<T>);

impl<T> Default for Guard<T> {
    fn default() -> Guard<T> {
        Guard(None)
    }
}

impl<T> Guard<T> {
    /// A request (from connection `t`) is being served.
    #[inline]
    pub(crate) fn set(&mut self, t: T) {
        self.0 = Some(t);
    }

    /// No request is being served (a new receive, or the connection set
    /// changed under the one that was).
    #[inline]
    pub(crate) fn clear(&mut self) {
        self.0 = None;
    }

    /// The request being served, to look at.
    #[inline]
    pub(crate) fn get(&self) -> Option<&T> {
        self.0.as_ref()
    }

    /// The request to answer, once: a second reply, or a reply without a
    /// request, is an error.
    #[inline]
    pub(crate) fn take(&mut self) -> Result<T> {
        self.0
            .take()
            .ok_or_else(|| Error::Protocol("reply without a request".into()))
    }
}

/// What a server sends for a reply: the wire code and payload, and what
/// the reply returns to its caller. A payload longer than `max` is not
/// sent: the client hears `EMSGSIZE` (it is never left waiting) and the
/// caller gets [`Error::TooLarge`].
#[inline]
pub(crate) fn reply_parts(status: Status, data: &[u8], max: usize) -> (u32, &[u8], Result<()>) {
    let (code, data) = status.encode(data);
    if data.len() > max {
        let err = Error::TooLarge {
            len: data.len(),
            max,
        };
        return (libc::EMSGSIZE as u32, &[], Err(err));
    }
    (code, data, Ok(()))
}

/// What a server sends for a reply of `len` bytes built in place: the wire
/// code and length, and what the reply returns to its caller; over `max`
/// as for [`reply_parts`] (`EMSGSIZE` with no payload, [`Error::TooLarge`]).
#[inline]
pub(crate) fn in_place_parts(len: usize, max: usize) -> (u32, usize, Result<()>) {
    if len > max {
        return (libc::EMSGSIZE as u32, 0, Err(Error::TooLarge { len, max }));
    }
    (0, len, Ok(()))
}

/// True when accepting failed for want of descriptors or memory: the
/// client stays queued and the listener polls readable until the process
/// has room again, so a server must stop looking at it for a while rather
/// than spin.
pub(crate) fn starved(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if matches!(
        source.raw_os_error(),
        Some(libc::EMFILE | libc::ENFILE | libc::ENOBUFS | libc::ENOMEM)
    ))
}

/// A client's objects could not be made (`e`): out of descriptors, it
/// stays queued and the error goes up (see [`starved`]); otherwise it is
/// taken and hung up on, so that it hears at once instead of timing out.
pub(crate) fn refuse<T>(listener: &Listener, e: Error) -> Result<Option<T>> {
    if starved(&e) {
        return Err(e);
    }
    listener.accept(&[]).map(|_| None)
}

/// What greeting a client (`accepted`, the session or why not) came to:
/// the connection `make` makes of its session; nothing when the client
/// left meanwhile; an error when the listener is out of descriptors.
pub(crate) fn greeted<T>(
    accepted: Result<OwnedFd>,
    make: impl FnOnce(OwnedFd) -> T,
) -> Result<Option<T>> {
    match accepted {
        Ok(session) => Ok(Some(make(session))),
        Err(e) if starved(&e) => Err(e),
        Err(_) => Ok(None),
    }
}

/// Most queued clients accepted in one round (the listen backlog): a
/// burst of connects must not outlast the clients' hello timeout.
const ACCEPT_BURST: usize = 128;

/// A client of a server that waits on something else than its
/// descriptors: the rendezvous session (whose hang-up means the client
/// died) and what the mechanism keeps for it. Dropping it releases both.
pub(crate) struct Session<L> {
    pub(crate) sock: OwnedFd,
    pub(crate) link: L,
}

/// The rendezvous listener and the clients it let in.
pub(crate) struct Sessions<L> {
    listener: Listener,
    pub(crate) list: Vec<Session<L>>,
    /// Until when the listener is left alone (accepting starved).
    paused: Option<Instant>,
}

impl<L> Sessions<L> {
    /// No client yet.
    pub(crate) fn new(listener: Listener) -> Sessions<L> {
        Sessions {
            listener,
            list: Vec::new(),
            paused: None,
        }
    }

    /// The listener, for a server that polls it with descriptors of its own.
    pub(crate) fn listener(&self) -> &Listener {
        &self.listener
    }

    /// Drops client `i` (its resources go with it).
    pub(crate) fn remove(&mut self, i: usize) -> Session<L> {
        self.list.swap_remove(i)
    }

    /// Accepts the clients waiting on the listener (at most a backlog's
    /// worth), waiting up to `timeout` for the first. `greet` makes one
    /// client's link and greets it, seeing the clients already in (see
    /// [`greeted`], [`refuse`]); when it starves, the listener rests for
    /// `rest`. True when anyone joined.
    pub(crate) fn accept_waiting(
        &mut self,
        timeout: Duration,
        rest: Duration,
        mut greet: impl FnMut(&Listener, &[Session<L>]) -> Result<Option<Session<L>>>,
    ) -> bool {
        if let Some(until) = self.paused {
            let now = Instant::now();
            if now < until {
                // Resting: wait as asked, without looking.
                std::thread::sleep(timeout.min(until - now));
                return false;
            }
            self.paused = None;
        }
        let before = self.list.len();
        let mut p = [PollFd::readable(self.listener.as_fd())];
        let mut wait = timeout;
        for _ in 0..ACCEPT_BURST {
            p[0].revents = 0;
            if poll::poll(&mut p, Some(wait)).unwrap_or(0) == 0 {
                break;
            }
            match greet(&self.listener, &self.list) {
                Ok(Some(s)) => self.list.push(s),
                Ok(None) => {}
                Err(e) if starved(&e) => {
                    self.paused = Some(Instant::now() + rest);
                    break;
                }
                Err(_) => {}
            }
            wait = Duration::ZERO;
        }
        self.list.len() != before
    }

    /// Indices of the clients whose session hung up (a client never writes
    /// on its session: any event is a hang-up), highest first, so that
    /// removing them in that order keeps the others' indices valid.
    pub(crate) fn hung_up(&self) -> Vec<usize> {
        let mut p: Vec<PollFd> = self
            .list
            .iter()
            .map(|s| PollFd::readable(s.sock.as_fd()))
            .collect();
        if poll::poll(&mut p, Some(Duration::ZERO)).unwrap_or(0) == 0 {
            return Vec::new();
        }
        (0..p.len()).rev().filter(|&i| p[i].revents != 0).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_goes_once_and_only_to_a_request() {
        let mut g = Guard::default();
        assert!(matches!(g.take(), Err(Error::Protocol(_))));
        g.set(3);
        assert_eq!(g.get(), Some(&3));
        assert_eq!(g.take().ok(), Some(3));
        assert!(matches!(g.take(), Err(Error::Protocol(_))));
        g.set(4);
        g.clear();
        assert!(g.take().is_err());
    }

    #[test]
    fn an_over_size_reply_becomes_emsgsize_for_the_client() {
        let (code, data, verdict) = reply_parts(Status::Ok, b"abcd", 4);
        assert_eq!((code, data), (0, &b"abcd"[..]));
        assert!(verdict.is_ok());
        let (code, data, verdict) = reply_parts(Status::Ok, b"abcde", 4);
        assert_eq!((code, data), (libc::EMSGSIZE as u32, &[][..]));
        assert!(matches!(verdict, Err(Error::TooLarge { len: 5, max: 4 })));
        let (code, data, verdict) = reply_parts(Status::Err(libc::ENOTTY), b"ignored", 4);
        assert_eq!((code, data), (libc::ENOTTY as u32, &[][..]));
        assert!(verdict.is_ok());
        let (code, len, verdict) = in_place_parts(4, 4);
        assert_eq!((code, len), (0, 4));
        assert!(verdict.is_ok());
        let (code, len, verdict) = in_place_parts(5, 4);
        assert_eq!((code, len), (libc::EMSGSIZE as u32, 0));
        assert!(matches!(verdict, Err(Error::TooLarge { len: 5, max: 4 })));
    }
}
