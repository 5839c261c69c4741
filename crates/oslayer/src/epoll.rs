//! The kernel's ready list (`epoll(7)`). Backed by rustix.
//!
//! A server registers each descriptor once with a 64-bit token of its
//! choosing and then learns, in one call, which of them are ready: the
//! cost of a wait does not grow with the number of descriptors registered
//! (unlike `poll`, which the kernel walks entry by entry).
//!
//! Two properties the servers rely on, both documented in `epoll(7)` and
//! `epoll_ctl(2)`:
//! - a registration belongs to the *open file description*, not to the
//!   descriptor number: a file shared with another process (an eventfd
//!   passed over a socket, say) stays registered after this process closes
//!   its descriptor, until every process has closed it;
//! - several epoll sets may watch one file with [`Interest::exclusive`]:
//!   an event then wakes one of the sets that has a thread waiting, the
//!   first in the order they were registered (sets without a waiter are
//!   told too, and report it on their next wait).

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::time::Duration;

use rustix::event::epoll::{self, CreateFlags, EventData, EventFlags};

/// What to watch a descriptor for, and how.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interest(EventFlags);

impl Interest {
    /// Data to read (or a client to accept), level-triggered: reported by
    /// every wait while it lasts. A hang-up or an error is always reported.
    pub const READABLE: Interest = Interest(EventFlags::IN);

    /// Only the peer's hang-up (or an error): data waiting is not
    /// reported. For a connection not to be read for now, whose death must
    /// still be heard of.
    pub const HANGUP: Interest = Interest(EventFlags::RDHUP);

    /// Nothing (but an error): registered and silent, until
    /// [`Epoll::modify`] asks for more.
    pub const NOTHING: Interest = Interest(EventFlags::empty());

    /// Edge-triggered: reported once per change (each write to an eventfd,
    /// each packet arriving), not while it lasts.
    pub fn edge(self) -> Interest {
        Interest(self.0 | EventFlags::ET)
    }

    /// Reported once, then silent (as [`Interest::NOTHING`]) until
    /// [`Epoll::modify`] asks again: a wake-up armed on demand.
    pub fn oneshot(self) -> Interest {
        Interest(self.0 | EventFlags::ONESHOT)
    }

    /// One waiting set among several watching the same file is woken (see
    /// the module doc), instead of all of them.
    pub fn exclusive(self) -> Interest {
        Interest(self.0 | EventFlags::EXCLUSIVE)
    }
}

/// One ready descriptor, as a wait reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ready {
    /// The token it was registered with.
    pub token: u64,
    /// Data to read (or a client to accept).
    pub readable: bool,
    /// The peer hung up, or the descriptor is in error.
    pub hangup: bool,
}

/// An epoll set, close-on-exec.
#[derive(Debug)]
pub struct Epoll {
    fd: OwnedFd,
}

impl Epoll {
    /// A new, empty set.
    pub fn new() -> io::Result<Epoll> {
        Ok(Epoll {
            fd: epoll::create(CreateFlags::CLOEXEC)?,
        })
    }

    /// Watches `fd` for `interest`, reporting it with `token`.
    pub fn add(&self, fd: BorrowedFd<'_>, token: u64, interest: Interest) -> io::Result<()> {
        Ok(epoll::add(
            &self.fd,
            fd,
            EventData::new_u64(token),
            interest.0,
        )?)
    }

    /// Watches `fd`, already added, for `interest` instead (re-arming a
    /// [`Interest::oneshot`] registration).
    pub fn modify(&self, fd: BorrowedFd<'_>, token: u64, interest: Interest) -> io::Result<()> {
        Ok(epoll::modify(
            &self.fd,
            fd,
            EventData::new_u64(token),
            interest.0,
        )?)
    }

    /// Stops watching `fd`. A descriptor that was never added (or whose
    /// file is gone) is not an error.
    pub fn delete(&self, fd: BorrowedFd<'_>) {
        let _ = epoll::delete(&self.fd, fd);
    }

    /// Waits up to `timeout` (`None`: for ever) for ready descriptors, and
    /// puts them in `out` (at most its capacity, which must not be zero);
    /// returns how many. Interrupted by a signal, it returns 0.
    pub fn wait(&self, out: &mut Vec<Ready>, timeout: Option<Duration>) -> io::Result<usize> {
        let mut raw: [epoll::Event; 64] = [epoll::Event {
            flags: EventFlags::empty(),
            data: EventData::new_u64(0),
        }; 64];
        let cap = out.capacity().clamp(1, raw.len());
        let ts = timeout.map(|t| rustix::time::Timespec {
            tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
            tv_nsec: t.subsec_nanos() as _,
        });
        let n = match epoll::wait(&self.fd, &mut raw[..cap], ts.as_ref()) {
            Ok(n) => n,
            Err(rustix::io::Errno::INTR) => 0,
            Err(e) => return Err(e.into()),
        };
        out.clear();
        out.extend(raw[..n].iter().map(|e| {
            let flags = e.flags;
            Ready {
                token: e.data.u64(),
                readable: flags.contains(EventFlags::IN),
                hangup: flags.intersects(EventFlags::HUP | EventFlags::RDHUP | EventFlags::ERR),
            }
        }));
        Ok(n)
    }
}

impl AsFd for Epoll {
    /// The set's own descriptor, which polls readable while anything in it
    /// is ready (so a set can be watched by `poll` or by another set).
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_what_is_ready_by_token() {
        let ep = Epoll::new().unwrap();
        let a = crate::eventfd::new().unwrap();
        let b = crate::eventfd::new().unwrap();
        ep.add(a.as_fd(), 7, Interest::READABLE).unwrap();
        ep.add(b.as_fd(), 9, Interest::READABLE).unwrap();
        let mut out = Vec::with_capacity(8);
        assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 0);
        crate::eventfd::write(b.as_fd(), 1).unwrap();
        assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 1);
        assert_eq!(out[0].token, 9);
        assert!(out[0].readable && !out[0].hangup);
        ep.delete(b.as_fd());
        assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 0);
    }

    #[test]
    fn a_oneshot_is_silent_until_armed_again_and_nothing_is_silent() {
        let ep = Epoll::new().unwrap();
        let a = crate::eventfd::new().unwrap();
        ep.add(a.as_fd(), 5, Interest::NOTHING).unwrap();
        crate::eventfd::write(a.as_fd(), 1).unwrap();
        let mut out = Vec::with_capacity(8);
        assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 0);
        ep.modify(a.as_fd(), 5, Interest::READABLE.oneshot())
            .unwrap();
        assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 1);
        assert_eq!(out[0].token, 5);
        // Still readable (level), but the shot is spent.
        assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 0);
        ep.modify(a.as_fd(), 6, Interest::READABLE.oneshot())
            .unwrap();
        assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 1);
        assert_eq!(out[0].token, 6);
    }

    #[test]
    fn an_edge_is_reported_once_per_write_and_outlives_our_descriptor() {
        let ep = Epoll::new().unwrap();
        let mine = crate::eventfd::new().unwrap();
        let theirs = mine.try_clone().unwrap();
        ep.add(mine.as_fd(), 3, Interest::READABLE.edge()).unwrap();
        drop(mine);
        let mut out = Vec::with_capacity(8);
        for _ in 0..3 {
            crate::eventfd::write(theirs.as_fd(), 1).unwrap();
            assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 1);
            assert_eq!(out[0].token, 3);
            // Never read: the counter stays up, yet no event until the next write.
            assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 0);
        }
        drop(theirs);
        assert_eq!(ep.wait(&mut out, Some(Duration::ZERO)).unwrap(), 0);
    }

    #[test]
    fn an_exclusive_event_goes_to_the_first_set_with_a_waiter() {
        let first = Epoll::new().unwrap();
        let second = std::sync::Arc::new(Epoll::new().unwrap());
        let e = crate::eventfd::new().unwrap();
        let x = Interest::READABLE.edge().exclusive();
        first.add(e.as_fd(), 1, x).unwrap();
        second.add(e.as_fd(), 2, x).unwrap();
        // Nobody waits on `first`: the waiter on `second` is woken.
        let waiter = {
            let second = std::sync::Arc::clone(&second);
            std::thread::spawn(move || {
                let mut out = Vec::with_capacity(8);
                second
                    .wait(&mut out, Some(Duration::from_secs(10)))
                    .unwrap();
                out
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        crate::eventfd::write(e.as_fd(), 1).unwrap();
        let got = waiter.join().unwrap();
        assert_eq!(got.iter().map(|r| r.token).collect::<Vec<_>>(), [2]);
        // `first` was told too, and reports it on its next wait.
        let mut out = Vec::with_capacity(8);
        assert_eq!(first.wait(&mut out, Some(Duration::ZERO)).unwrap(), 1);
        assert_eq!(out[0].token, 1);
    }
}
