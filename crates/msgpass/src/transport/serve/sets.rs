//! The wait sets of a server's threads: one epoll set per worker, every
//! descriptor of the server registered in each.
//!
//! With one worker this is a plain epoll server. With a pool, every
//! descriptor is registered *exclusive* in every worker's set, its home
//! worker's first: an event wakes the home worker if it waits, else the
//! next worker that waits, in that order (see `oslayer::epoll`). So a
//! client's requests go to its home thread while that thread is free, and
//! to another free thread while it is busy or stuck, without a thread ever
//! looking at another's connections; and a thread waking for nothing is
//! rare (a set that had no waiter is told too, and reports the event on
//! its next wait, when it may be served already: the reader then finds
//! nothing, under the connection's lock).

use std::io;
use std::os::fd::BorrowedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use oslayer::epoll::{Epoll, Interest};
use parking_lot::RwLock;

/// Every worker's wait set, in worker order.
#[derive(Default)]
pub(crate) struct Sets {
    sets: RwLock<Vec<Arc<Epoll>>>,
    /// Several workers: registrations are exclusive.
    pool: AtomicBool,
}

impl Sets {
    /// A new worker's set, registered with nothing yet; returns it and the
    /// worker's number.
    pub(crate) fn push(&self) -> io::Result<(Arc<Epoll>, usize)> {
        let set = Arc::new(Epoll::new()?);
        let mut sets = self.sets.write();
        sets.push(Arc::clone(&set));
        Ok((set, sets.len() - 1))
    }

    /// True once the server has several workers.
    #[inline]
    pub(crate) fn pool(&self) -> bool {
        self.pool.load(Ordering::Relaxed)
    }

    /// Switches to exclusive registrations (a pool); the caller registers
    /// again what it had registered.
    pub(crate) fn set_pool(&self) {
        self.pool.store(true, Ordering::Relaxed);
    }

    /// How many workers there are.
    pub(crate) fn len(&self) -> usize {
        self.sets.read().len()
    }

    /// Worker `i`'s set.
    pub(crate) fn get(&self, i: usize) -> Option<Arc<Epoll>> {
        self.sets.read().get(i).cloned()
    }

    /// The interest every registration gets: `interest`, exclusive in a pool
    /// (but a hang-up alone: the kernel takes no exclusive interest in it,
    /// and every worker may hear of a death).
    fn interest(&self, interest: Interest) -> Interest {
        match self.pool() && interest != Interest::HANGUP {
            true => interest.exclusive(),
            false => interest,
        }
    }

    /// Registers `fd` with `token` in every set, worker `home`'s first.
    pub(crate) fn add(
        &self,
        fd: BorrowedFd<'_>,
        token: u64,
        interest: Interest,
        home: usize,
    ) -> io::Result<()> {
        let interest = self.interest(interest);
        let sets = self.sets.read();
        let n = sets.len();
        for k in 0..n {
            if let Err(e) = sets[(home + k) % n].add(fd, token, interest) {
                for j in 0..k {
                    sets[(home + j) % n].delete(fd);
                }
                return Err(e);
            }
        }
        Ok(())
    }

    /// Registers `fd` in `set` alone (a worker joining a pool).
    pub(crate) fn add_to(
        &self,
        set: &Epoll,
        fd: BorrowedFd<'_>,
        token: u64,
        interest: Interest,
    ) -> io::Result<()> {
        set.add(fd, token, self.interest(interest))
    }

    /// Unregisters `fd` from every set.
    pub(crate) fn delete(&self, fd: BorrowedFd<'_>) {
        for set in self.sets.read().iter() {
            set.delete(fd);
        }
    }
}
