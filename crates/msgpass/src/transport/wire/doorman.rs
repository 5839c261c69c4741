//! A process-wide thread that tells a server serving one client alone
//! that a newcomer waits on its listener.
//!
//! A server with one busy client waits in that client's own receive (the
//! reactor's single-client path, the shm server's nap on the client's
//! word or its spin over its slot), not in its epoll set, because a wait
//! on the set costs more per message (see `serve/reactor/`). A newcomer on
//! the listener cannot end that wait. Looking at the listener every N
//! requests, as the server did, lets a client that calls every 50 ms keep
//! a newcomer out for N x 50 ms (51 s at N = 1,024); looking at it on
//! every request is a system call per request.
//!
//! So every such server registers its listeners here ([`watch`]): one
//! thread per process waits on one epoll set holding them all,
//! edge-triggered, and when one becomes readable (a client connected) it
//! sets that server's [`Door::knocked`] flag and ends the wait its worker
//! may be in through the [`Wake`] the worker left on the door
//! ([`Door::wake_with`]: a poke of a pipe or eventfd wire, a futex wake of
//! the word an shm server naps on). The worker loads the flag once per
//! request on its single-client path and, when set, looks at its set at
//! once. A wait nobody can end from outside (a socket's timed receive)
//! lasts at most a couple of milliseconds before the worker goes back to
//! its set, which holds the listener. So a newcomer is greeted within a
//! few milliseconds whatever the client already there does: at its next
//! request when it calls often, when its wait is ended or runs out when
//! it calls seldom.
//!
//! Cost per message: one relaxed load. Cost per connection made: one
//! wake-up of this thread (a burst of connections is one edge or a few).
//! Idle: one thread asleep in `epoll_wait`. The thread belongs to the
//! process that started it: a child made by `fork` starts its own on its
//! first [`watch`].

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};

use oslayer::epoll::{Epoll, Interest, Ready};

/// How the doorman ends the wait a worker is in on its single-client path.
pub(crate) trait Wake: Send + Sync {
    /// Ends the wait now, or the next one if none is going on: that wait
    /// returns as if its time were up.
    fn wake(&self);
}

/// One server's listeners, as the doorman watches them.
pub(crate) struct Door {
    knock: AtomicBool,
    /// What ends the wait of the worker on its single-client path, where
    /// its wait can be ended from outside.
    waker: Mutex<Option<Arc<dyn Wake>>>,
    /// Duplicates of the listeners, registered in the doorman's set (a
    /// duplicate, so that the registration lives exactly as long as the
    /// door, whatever the server does with its own descriptor).
    fds: Vec<OwnedFd>,
    /// The set they are registered in (the doorman of the process that
    /// made the door).
    set: Arc<Epoll>,
    id: u64,
}

impl Door {
    /// True when a client connected since the last [`Door::answer`].
    #[inline]
    pub(crate) fn knocked(&self) -> bool {
        self.knock.load(Ordering::Relaxed)
    }

    /// The server is about to look at its listeners: a client that
    /// connects from now on knocks again.
    #[inline]
    pub(crate) fn answer(&self) {
        if self.knocked() {
            self.knock.store(false, Ordering::Relaxed);
        }
    }

    /// What ends the single-client wait from now on (`None`: nothing; the
    /// wait then ends by its own timeout).
    pub(crate) fn wake_with(&self, waker: Option<Arc<dyn Wake>>) {
        *self.waker.lock().unwrap_or_else(|e| e.into_inner()) = waker;
    }

    /// A client connected: says so, and ends the worker's wait.
    fn knock(&self) {
        self.knock.store(true, Ordering::Relaxed);
        let waker = self.waker.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

impl Drop for Door {
    fn drop(&mut self) {
        for fd in &self.fds {
            self.set.delete(fd.as_fd());
        }
        let mut guard = DOORMAN.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(d) = guard.as_mut() {
            d.doors.remove(&self.id);
        }
    }
}

/// The registry and its set, for one process.
struct Doorman {
    pid: u32,
    set: Arc<Epoll>,
    doors: HashMap<u64, Weak<Door>>,
    next: u64,
}

static DOORMAN: Mutex<Option<Doorman>> = Mutex::new(None);

/// Watches `fds` (duplicates of a server's listeners) for clients
/// connecting; the returned door says when one did, until it is dropped.
pub(crate) fn watch(fds: Vec<OwnedFd>) -> io::Result<Arc<Door>> {
    let mut guard = DOORMAN.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if guard.as_ref().is_none_or(|d| d.pid != pid) {
        // First use in this process (or a child after fork, which has the
        // parent's registry but no thread of its own).
        *guard = Some(start(pid)?);
    }
    let Some(doorman) = guard.as_mut() else {
        return Err(io::Error::other("the doorman is not there"));
    };
    doorman.next += 1;
    let door = Arc::new(Door {
        knock: AtomicBool::new(false),
        waker: Mutex::new(None),
        fds,
        set: Arc::clone(&doorman.set),
        id: doorman.next,
    });
    doorman.doors.insert(door.id, Arc::downgrade(&door));
    drop(guard);
    for fd in &door.fds {
        door.set
            .add(fd.as_fd(), door.id, Interest::READABLE.edge())?;
    }
    Ok(door)
}

/// A new doorman: its set, and its thread waiting on it.
fn start(pid: u32) -> io::Result<Doorman> {
    let set = Arc::new(Epoll::new()?);
    let theirs = Arc::clone(&set);
    std::thread::Builder::new()
        .name("msgpass-doorman".into())
        .spawn(move || run(&theirs, pid))?;
    Ok(Doorman {
        pid,
        set,
        doors: HashMap::new(),
        next: 0,
    })
}

/// The doorman's thread: knocks on the door of every listener the kernel
/// reports readable, for as long as its process uses this set.
fn run(set: &Epoll, pid: u32) {
    let mut events: Vec<Ready> = Vec::with_capacity(16);
    let mut doors: Vec<Arc<Door>> = Vec::with_capacity(16);
    loop {
        if set.wait(&mut events, None).is_err() {
            return;
        }
        {
            let guard = DOORMAN.lock().unwrap_or_else(|e| e.into_inner());
            let Some(doorman) = guard.as_ref().filter(|d| d.pid == pid) else {
                return;
            };
            let known = events
                .drain(..)
                .filter_map(|ev| doorman.doors.get(&ev.token));
            doors.extend(known.filter_map(Weak::upgrade));
        }
        // Knocked outside the registry's lock: the last handle on a door
        // may go here, and a door's drop takes that lock.
        for door in doors.drain(..) {
            door.knock();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    /// Waits (bounded) for `door` to be knocked on.
    fn knocked_within(door: &Door, bound: Duration) -> bool {
        let until = Instant::now() + bound;
        while Instant::now() < until {
            if door.knocked() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        false
    }

    #[test]
    fn a_client_connecting_knocks_and_an_answer_clears_it() {
        let dir = std::env::temp_dir().join(format!("msgpass-door-{}", std::process::id()));
        let _ = std::fs::remove_file(&dir);
        let listener = std::os::unix::net::UnixListener::bind(&dir).expect("bind");
        let fd = listener.as_fd().try_clone_to_owned().expect("dup");
        let door = watch(vec![fd]).expect("watch");
        assert!(!door.knocked(), "nobody connected yet");
        let _c1 = std::os::unix::net::UnixStream::connect(&dir).expect("connect");
        assert!(knocked_within(&door, Duration::from_secs(10)));
        door.answer();
        assert!(!door.knocked());
        // Not accepted, but a new client is a new edge.
        let _c2 = std::os::unix::net::UnixStream::connect(&dir).expect("connect");
        assert!(knocked_within(&door, Duration::from_secs(10)));
        drop(door);
        let _ = std::fs::remove_file(&dir);
    }
}
