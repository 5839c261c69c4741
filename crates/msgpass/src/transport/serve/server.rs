//! What every server of the crate shares, whatever it waits on: the reply
//! guard, the reply size rule, accepting under a descriptor shortage, and
//! the set of rendezvous sessions of the servers whose requests do not
//! arrive on a descriptor per connection (signal, sysv-msg). The
//! descriptor-driven servers share a whole loop besides (`reactor/`).

use std::collections::VecDeque;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use oslayer::epoll::{Epoll, Interest, Ready};
use oslayer::poll::{self, PollFd};

use crate::error::{Error, Result};
use crate::transport::api::{Creds, Status};
use crate::transport::serve::slab::{Slab, Token};
use crate::transport::wire::rendezvous::Listener;

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
        self.0.take().ok_or_else(Error::no_request)
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

/// The credentials of the client at the other end of rendezvous session
/// `session`, as the kernel named them when it connected (`SO_PEERCRED`).
pub(crate) fn creds_of(session: BorrowedFd<'_>) -> Option<Creds> {
    oslayer::socket::peer_cred(session).ok().map(|c| Creds {
        pid: c.pid,
        uid: c.uid,
        gid: c.gid,
    })
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

/// Tokens at and above this are a session set's own descriptors (the
/// listener, and the caller's: [`Sessions::watch`]); below, the table's.
const OWN: u64 = 1 << 63;
/// The listener's token.
const LISTENER: u64 = OWN;

/// A client of a server that waits on something else than its
/// descriptors: the rendezvous session (whose hang-up means the client
/// died) and what the mechanism keeps for it. Dropping it releases both.
pub(crate) struct Session<L> {
    pub(crate) sock: OwnedFd,
    pub(crate) link: L,
}

/// What a wait on a session set reported, one descriptor at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Event {
    /// Clients wait on the listener: [`Sessions::accept`] them.
    Listener,
    /// The caller's own descriptor registered as `id` is ready.
    Own(u32),
    /// The session of this connection hung up (or a stale token: the
    /// table no longer has it, see [`Sessions::remove`]).
    HungUp(Token),
}

/// The rendezvous listener and the clients it let in, in a table reached
/// by token, with the kernel's ready list over the listener and every
/// session: a client never writes on its session, so any event on one is
/// its hang-up, learnt without looking at the others. A wait costs the
/// same with ten thousand idle clients as with one.
pub(crate) struct Sessions<L> {
    listener: Listener,
    table: Slab<Session<L>>,
    set: Epoll,
    /// Events harvested and not yet handed out.
    ready: VecDeque<Ready>,
    events: Vec<Ready>,
    /// Until when the listener is left alone (accepting starved).
    paused: Option<Instant>,
    /// How long the listener rests when accepting starves.
    rest: Duration,
    /// The number of clients, for threads that do not own the set.
    census: Arc<AtomicUsize>,
}

impl<L> Sessions<L> {
    /// No client yet; the listener watched. Accepting that starves for
    /// descriptors rests the listener for `rest`.
    pub(crate) fn new(listener: Listener, rest: Duration) -> Result<Sessions<L>> {
        let set = Epoll::new().map_err(|e| Error::io("epoll_create", e))?;
        set.add(listener.as_fd(), LISTENER, Interest::READABLE)
            .map_err(|e| Error::io("epoll_ctl", e))?;
        Ok(Sessions {
            listener,
            table: Slab::default(),
            set,
            ready: VecDeque::new(),
            events: Vec::with_capacity(64),
            paused: None,
            rest,
            census: Arc::default(),
        })
    }

    /// The set's own descriptor: it polls readable while a client waits on
    /// the listener, a session hung up or a descriptor of the caller's is
    /// ready (for a helper thread that watches on the server's behalf).
    pub(crate) fn poll_fd(&self) -> BorrowedFd<'_> {
        self.set.as_fd()
    }

    /// Watches a descriptor of the caller's (readable), reported as
    /// [`Event::Own`] with `id`.
    pub(crate) fn watch(&self, fd: BorrowedFd<'_>, id: u32) -> Result<()> {
        self.set
            .add(fd, OWN | (1 + id as u64), Interest::READABLE)
            .map_err(|e| Error::io("epoll_ctl", e))
    }

    /// The client of token `t`, if it is still there.
    #[inline]
    pub(crate) fn get(&self, t: Token) -> Option<&Session<L>> {
        self.table.get(t)
    }

    /// The client of token `t`, if it is still there, to change.
    #[inline]
    pub(crate) fn get_mut(&mut self, t: Token) -> Option<&mut Session<L>> {
        self.table.get_mut(t)
    }

    /// Drops client `t` from the set and returns it (its resources go
    /// when it is dropped); `None` for a stale token.
    pub(crate) fn remove(&mut self, t: Token) -> Option<Session<L>> {
        let s = self.table.remove(t)?;
        self.set.delete(s.sock.as_fd());
        self.census.store(self.table.len(), Ordering::Relaxed);
        Some(s)
    }

    /// Number of clients.
    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    /// The number of clients, kept up to date, for other threads.
    pub(crate) fn census(&self) -> Arc<AtomicUsize> {
        Arc::clone(&self.census)
    }

    /// Every client.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Session<L>> {
        self.table.values()
    }

    /// Waits up to `timeout` for events, to be taken with
    /// [`Sessions::next_event`]; returns how many came. A listener at
    /// rest is watched again once its rest is over.
    pub(crate) fn wait(&mut self, timeout: Duration) -> Result<usize> {
        self.resume();
        let n = self
            .set
            .wait(&mut self.events, Some(timeout))
            .map_err(|e| Error::io("epoll_wait", e))?;
        self.ready.extend(self.events.drain(..));
        Ok(n)
    }

    /// The next event harvested by [`Sessions::wait`].
    pub(crate) fn next_event(&mut self) -> Option<Event> {
        let ev = self.ready.pop_front()?;
        Some(match ev.token {
            LISTENER => Event::Listener,
            raw if raw > LISTENER => Event::Own((raw - LISTENER - 1) as u32),
            raw => Event::HungUp(Token::from_raw(raw).0),
        })
    }

    /// Accepts the clients waiting on the listener, a backlog's worth at
    /// most. `greet` makes one client's link and greets it, given the
    /// token it will have (see [`greeted`], [`refuse`]); when it starves,
    /// the listener rests (see [`Sessions::new`]). Returns how many joined.
    pub(crate) fn accept(
        &mut self,
        mut greet: impl FnMut(&Listener, Token) -> Result<Option<Session<L>>>,
    ) -> usize {
        if self.paused.is_some() {
            return 0;
        }
        let mut joined = 0;
        for _ in 0..ACCEPT_BURST {
            if !readable_now(self.listener.as_fd()) {
                break;
            }
            match greet(&self.listener, self.table.next_token()) {
                Ok(Some(s)) => joined += usize::from(self.insert(s)),
                Ok(None) => {}
                Err(e) if starved(&e) => {
                    self.pause();
                    break;
                }
                Err(_) => {}
            }
        }
        joined
    }

    /// Puts a greeted client in the table and watches its session; true
    /// when it is in. One that cannot be watched is dropped (it hears the
    /// hang-up), its token retired first, so that whatever was told that
    /// token reaches nobody.
    fn insert(&mut self, s: Session<L>) -> bool {
        let t = self.table.insert(s);
        let Some(s) = self.table.get(t) else {
            return false;
        };
        if self
            .set
            .add(s.sock.as_fd(), t.with_mark(false), Interest::READABLE)
            .is_ok()
        {
            self.census.store(self.table.len(), Ordering::Relaxed);
            return true;
        }
        self.table.remove(t);
        false
    }

    /// Leaves the listener alone for a while (accepting starved): it polls
    /// readable while clients wait, and would wake every wait.
    fn pause(&mut self) {
        self.paused = Some(Instant::now() + self.rest);
        self.set.delete(self.listener.as_fd());
    }

    /// Watches the listener again once its rest is over.
    fn resume(&mut self) {
        let Some(until) = self.paused else { return };
        let now = Instant::now();
        if now < until {
            return;
        }
        self.paused = match self
            .set
            .add(self.listener.as_fd(), LISTENER, Interest::READABLE)
        {
            Ok(()) => None,
            Err(_) => Some(now + self.rest),
        };
    }
}

/// True when `fd` polls readable (or in error) now.
fn readable_now(fd: BorrowedFd<'_>) -> bool {
    let mut p = [PollFd::readable(fd)];
    poll::poll(&mut p, Some(Duration::ZERO)).unwrap_or(0) > 0
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

    /// A listener at a fresh path, and the path's directory (removed when
    /// dropped, also when the test fails).
    fn listener(tag: &str) -> (Listener, std::path::PathBuf, tempfile::TempDir) {
        use crate::transport::wire::rendezvous::Family;
        let dir = tempfile::Builder::new()
            .prefix(&format!("msgpass-sess-{tag}-"))
            .tempdir()
            .expect("dir");
        let path = dir.path().join("ep");
        let l = Listener::bind(&path, Family::Signal, 64).expect("listen");
        (l, path, dir)
    }

    /// A client's end of the rendezvous (its hello left unread).
    fn client(path: &std::path::Path) -> OwnedFd {
        oslayer::socket::unix_connect(path, oslayer::socket::SocketType::SEQPACKET)
            .expect("connect")
    }

    /// Waits (bounded) for events and accepts whoever waits; every client
    /// keeps the token it was greeted with as its link.
    fn settle(s: &mut Sessions<Token>) -> Vec<Event> {
        let mut seen = Vec::new();
        for _ in 0..50 {
            if s.wait(Duration::from_millis(100)).expect("wait") == 0 {
                break;
            }
            while let Some(ev) = s.next_event() {
                if ev == Event::Listener {
                    s.accept(|l, t| greeted(l.accept(&[]), |sock| Session { sock, link: t }));
                }
                seen.push(ev);
            }
            if !seen.is_empty() {
                break;
            }
        }
        seen
    }

    #[test]
    fn a_hang_up_is_reported_by_token_and_a_stale_token_reaches_nothing() {
        let (l, path, _dir) = listener("hang");
        let mut s: Sessions<Token> = Sessions::new(l, Duration::from_millis(10)).expect("set");
        let a = client(&path);
        let b = client(&path);
        while s.len() < 2 {
            assert!(settle(&mut s).contains(&Event::Listener), "nobody joined");
        }
        let tokens: Vec<Token> = s.iter().map(|x| x.link).collect();
        let (ta, tb) = (tokens[0], tokens[1]);
        assert_ne!(ta, tb);
        // Nothing happens while both live.
        assert_eq!(s.wait(Duration::ZERO).expect("wait"), 0);
        drop(a);
        assert_eq!(settle(&mut s), [Event::HungUp(ta)]);
        assert_eq!(s.remove(ta).map(|x| x.link), Some(ta));
        assert_eq!(s.wait(Duration::ZERO).expect("wait"), 0, "still watched");
        // A newcomer takes the place of the one gone, under a new token.
        let c = client(&path);
        assert_eq!(settle(&mut s), [Event::Listener]);
        let tc = s.iter().map(|x| x.link).find(|&t| t != tb).expect("c");
        assert_ne!(tc, ta);
        assert!(s.get(ta).is_none() && s.get_mut(ta).is_none());
        assert!(s.remove(ta).is_none(), "a stale token removed a newcomer");
        assert_eq!(s.get(tc).map(|x| x.link), Some(tc));
        assert_eq!(s.len(), 2);
        drop((b, c));
        let mut gone = Vec::new();
        for _ in 0..10 {
            if s.len() == 0 {
                break;
            }
            for ev in settle(&mut s) {
                let Event::HungUp(t) = ev else {
                    panic!("{ev:?}")
                };
                assert!(s.remove(t).is_some(), "{t:?} reported twice");
                gone.push(t);
            }
        }
        gone.sort_by_key(|t| t.with_mark(false));
        let mut want = vec![tb, tc];
        want.sort_by_key(|t| t.with_mark(false));
        assert_eq!(gone, want);
    }

    #[test]
    fn a_starved_accept_rests_the_listener_and_own_descriptors_are_reported() {
        let (l, path, _dir) = listener("rest");
        let mut s: Sessions<()> = Sessions::new(l, Duration::from_millis(300)).expect("set");
        let ev = oslayer::eventfd::new().expect("eventfd");
        s.watch(ev.as_fd(), 7).expect("watch");
        oslayer::eventfd::write(ev.as_fd(), 1).expect("write");
        assert_eq!(s.wait(Duration::ZERO).expect("wait"), 1);
        assert_eq!(s.next_event(), Some(Event::Own(7)));
        assert_eq!(s.next_event(), None);
        let _ = oslayer::eventfd::read(ev.as_fd());
        let _a = client(&path);
        let mut tries = 0;
        let joined = s.accept(|_, _| {
            tries += 1;
            Err(Error::io(
                "accept",
                std::io::Error::from_raw_os_error(libc::EMFILE),
            ))
        });
        assert_eq!((joined, tries), (0, 1), "a starved accept goes on");
        // At rest: the waiting client does not wake the set.
        assert_eq!(s.wait(Duration::ZERO).expect("wait"), 0);
        assert_eq!(s.accept(|_, _| unreachable!("accepted at rest")), 0);
        // After the rest, it is watched again and taken.
        let mut joined = 0;
        for _ in 0..100 {
            s.wait(Duration::from_millis(20)).expect("wait");
            while let Some(ev) = s.next_event() {
                assert_eq!(ev, Event::Listener);
                joined +=
                    s.accept(|l, _| greeted(l.accept(&[]), |sock| Session { sock, link: () }));
            }
            if joined > 0 {
                break;
            }
        }
        assert_eq!((joined, s.len()), (1, 1));
    }
}
