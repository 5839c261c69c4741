//! The fuse server's book of requests: what its reader thread queued and
//! what the serving threads took, per connection (an open file handle).
//!
//! **Per connection.** Each connection has its own queue of requests not
//! yet taken, in the order they came: pulses (at most [`PULSE_DEPTH`]) and
//! at most one call. While a call of the connection is in service (taken
//! and not yet answered: handled, held by `Request::defer`, or in a pool)
//! nothing more of that connection is handed out: its next call (and the
//! pulses behind it) wait in its queue until the answer. A second call
//! queued meanwhile (only a hostile client, with several threads on one
//! file, can send one) is refused at once; so is a pulse past the depth.
//! So a connection costs at most one call in service, one waiting and
//! [`PULSE_DEPTH`] pulses, whatever it sends.
//!
//! **Fair.** Connections with something to hand out wait in one ready
//! list; a connection goes to the back of it after each request taken, so
//! a flooding connection takes turns with the others. Every step is a hash
//! or queue operation; only a withdrawn call is looked for in its
//! connection's queue (at most `PULSE_DEPTH + 1` entries).

use std::collections::{HashMap, VecDeque};

/// Pulses a connection may have queued, not yet taken: past it a pulse is
/// refused (`PulseQueueFull` at the sender).
pub(crate) const PULSE_DEPTH: usize = 32;

/// What a queued request is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A call: its caller waits in its ioctl for the answer.
    Call,
    /// A pulse: its ioctl was answered when it was queued.
    Pulse,
}

/// A request ioctl waiting for (or held by) the application.
pub(crate) struct Pending {
    /// The FUSE request (a pulse's was answered already).
    pub(crate) unique: u64,
    /// Its connection's file handle.
    pub(crate) fh: u64,
    /// The calling thread, from the request header.
    pub(crate) pid: u32,
    /// The calling thread's user and group, from the request header.
    pub(crate) uid: u32,
    pub(crate) gid: u32,
    pub(crate) cmd: u32,
    pub(crate) kind: Kind,
    /// Room for the reply: the class size the client chose.
    pub(crate) out_size: usize,
    pub(crate) data: Vec<u8>,
}

/// Why a call in service was let go before its answer (its ioctl was
/// answered by the reader thread; the application's answer goes nowhere).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LetGo {
    /// Its caller's deadline passed: the caller lives, and the late answer
    /// is simply discarded.
    TimedOut,
    /// Its caller was dying: the answer is `Disconnected`.
    Gone,
}

/// A call in service.
struct InService {
    fh: u64,
    pid: u32,
    let_go: Option<LetGo>,
}

/// One connection.
#[derive(Default)]
struct Conn {
    /// Its requests not yet taken, in order.
    queue: VecDeque<Pending>,
    /// Pulses in `queue`.
    pulses: usize,
    /// Its call in `queue`, if any.
    waiting: Option<u64>,
    /// Its call in service, if any.
    serving: Option<u64>,
    /// In the ready list.
    listed: bool,
    /// Sent something malformed: refused from now on.
    dropped: bool,
}

impl Conn {
    /// True when the connection has something to hand out now.
    fn ready(&self) -> bool {
        self.serving.is_none() && !self.queue.is_empty() && !self.dropped
    }
}

/// Why a request was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refused {
    /// The connection has a call waiting already, or its pulses fill their
    /// depth: answered `EAGAIN` at once.
    Full,
    /// The connection is unknown or was dropped.
    Dropped,
}

/// The book (see the module doc).
#[derive(Default)]
pub(crate) struct State {
    conns: HashMap<u64, Conn>,
    /// Connections with something to hand out (one entry each; an entry
    /// whose connection has nothing any more is skipped).
    ready: VecDeque<u64>,
    /// Calls not yet taken: `unique` -> connection.
    waiting: HashMap<u64, u64>,
    /// Calls taken and not yet answered: `unique` -> its service.
    serving: HashMap<u64, InService>,
    /// Connections dropped and not yet released.
    dropped: usize,
    /// Why the reader stopped, when it did.
    pub(crate) dead: Option<String>,
}

impl State {
    /// A new connection.
    pub(crate) fn open(&mut self, fh: u64) {
        self.conns.insert(fh, Conn::default());
    }

    /// A connection closed: its queued requests go (a call cannot be
    /// queued by a closed file; pulses can).
    pub(crate) fn release(&mut self, fh: u64) {
        if let Some(c) = self.conns.remove(&fh) {
            if let Some(u) = c.waiting {
                self.waiting.remove(&u);
            }
            if c.dropped {
                self.dropped -= 1;
            }
        }
    }

    /// Connections open and not dropped.
    pub(crate) fn connections(&self) -> usize {
        self.conns.len() - self.dropped
    }

    /// Drops connection `fh` (it sent something malformed): its queue is
    /// emptied, and the calls that were in it are returned, to be answered
    /// as a dropped connection's.
    pub(crate) fn drop_conn(&mut self, fh: u64) -> Vec<u64> {
        let Some(c) = self.conns.get_mut(&fh) else {
            return Vec::new();
        };
        if !c.dropped {
            c.dropped = true;
            self.dropped += 1;
        }
        c.pulses = 0;
        let calls: Vec<u64> = c.waiting.take().into_iter().collect();
        c.queue.clear();
        for u in &calls {
            self.waiting.remove(u);
        }
        calls
    }

    /// True when connection `fh` was dropped (or is unknown).
    pub(crate) fn is_dropped(&self, fh: u64) -> bool {
        self.conns.get(&fh).is_none_or(|c| c.dropped)
    }

    /// Queues a request of its connection; true when that connection
    /// became ready (a serving thread should be woken).
    pub(crate) fn push(&mut self, p: Pending) -> Result<bool, Refused> {
        let c = match self.conns.get_mut(&p.fh) {
            Some(c) if !c.dropped => c,
            _ => return Err(Refused::Dropped),
        };
        match p.kind {
            Kind::Call if c.waiting.is_some() => return Err(Refused::Full),
            Kind::Pulse if c.pulses >= PULSE_DEPTH => return Err(Refused::Full),
            Kind::Call => {
                c.waiting = Some(p.unique);
                self.waiting.insert(p.unique, p.fh);
            }
            Kind::Pulse => c.pulses += 1,
        }
        let fh = p.fh;
        c.queue.push_back(p);
        Ok(self.list(fh))
    }

    /// Puts connection `fh` in the ready list if it is ready and not there;
    /// true when it was put there.
    fn list(&mut self, fh: u64) -> bool {
        match self.conns.get_mut(&fh) {
            Some(c) if c.ready() && !c.listed => {
                c.listed = true;
                self.ready.push_back(fh);
                true
            }
            _ => false,
        }
    }

    /// The next request, now in service if it is a call.
    pub(crate) fn pop(&mut self) -> Option<Pending> {
        while let Some(fh) = self.ready.pop_front() {
            let Some(c) = self.conns.get_mut(&fh) else {
                continue;
            };
            c.listed = false;
            if !c.ready() {
                continue;
            }
            let Some(p) = c.queue.pop_front() else {
                continue;
            };
            match p.kind {
                Kind::Call => {
                    c.waiting = None;
                    c.serving = Some(p.unique);
                    self.waiting.remove(&p.unique);
                    let s = InService {
                        fh,
                        pid: p.pid,
                        let_go: None,
                    };
                    self.serving.insert(p.unique, s);
                }
                Kind::Pulse => c.pulses -= 1,
            }
            self.list(fh);
            return Some(p);
        }
        None
    }

    /// Ends the service of call `unique`: `None` when it was not in
    /// service, else why it was let go (`Some(None)`: it was not, and its
    /// answer goes). Its connection may hand out its next request then.
    pub(crate) fn finish(&mut self, unique: u64) -> Option<Option<LetGo>> {
        let s = self.serving.remove(&unique)?;
        if let Some(c) = self.conns.get_mut(&s.fh) {
            if c.serving == Some(unique) {
                c.serving = None;
            }
        }
        self.list(s.fh);
        Some(s.let_go)
    }

    /// Withdraws call `unique` if it was not taken yet; true if it was
    /// there (it will never be handed out).
    pub(crate) fn withdraw_waiting(&mut self, unique: u64) -> bool {
        let Some(fh) = self.waiting.remove(&unique) else {
            return false;
        };
        if let Some(c) = self.conns.get_mut(&fh) {
            c.waiting = None;
            c.queue
                .retain(|p| !(p.kind == Kind::Call && p.unique == unique));
        }
        true
    }

    /// The calling thread of call `unique` in service and not let go.
    pub(crate) fn caller(&self, unique: u64) -> Option<u32> {
        self.serving
            .get(&unique)
            .filter(|s| s.let_go.is_none())
            .map(|s| s.pid)
    }

    /// Lets call `unique` in service go for `why`; true if it was in
    /// service and not let go before (its ioctl is then answered by the
    /// caller of this, once).
    pub(crate) fn let_go(&mut self, unique: u64, why: LetGo) -> bool {
        match self.serving.get_mut(&unique) {
            Some(s) if s.let_go.is_none() => {
                s.let_go = Some(why);
                true
            }
            _ => false,
        }
    }

    /// The call of connection `fh` made by thread `tid`, waiting or in
    /// service (and not let go): what a withdrawal (a deadline) targets.
    pub(crate) fn call_of(&self, fh: u64, tid: u32) -> Option<u64> {
        let c = self.conns.get(&fh)?;
        let waiting = c.waiting.filter(|u| {
            c.queue
                .iter()
                .any(|p| p.kind == Kind::Call && p.unique == *u && p.pid == tid)
        });
        let serving = c.serving.filter(|u| {
            self.serving
                .get(u)
                .is_some_and(|s| s.pid == tid && s.let_go.is_none())
        });
        waiting.or(serving)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(unique: u64, fh: u64, kind: Kind) -> Pending {
        Pending {
            unique,
            fh,
            pid: 100 + fh as u32,
            uid: 0,
            gid: 0,
            cmd: 1,
            kind,
            out_size: 64,
            data: Vec::new(),
        }
    }

    #[test]
    fn a_connection_in_service_hands_out_nothing_more() {
        let mut st = State::default();
        st.open(1);
        st.open(2);
        assert_eq!(st.push(req(10, 1, Kind::Call)), Ok(true));
        assert_eq!(st.pop().map(|p| p.unique), Some(10));
        // While 10 is in service: a pulse and one call wait, a second call
        // and a pulse past the depth are refused.
        assert_eq!(st.push(req(0, 1, Kind::Pulse)), Ok(false));
        assert_eq!(st.push(req(11, 1, Kind::Call)), Ok(false));
        assert_eq!(st.push(req(12, 1, Kind::Call)), Err(Refused::Full));
        for _ in 1..PULSE_DEPTH {
            assert!(st.push(req(0, 1, Kind::Pulse)).is_ok());
        }
        assert_eq!(st.push(req(0, 1, Kind::Pulse)), Err(Refused::Full));
        // Another connection is served meanwhile.
        assert_eq!(st.push(req(20, 2, Kind::Call)), Ok(true));
        assert_eq!(st.pop().map(|p| p.unique), Some(20));
        assert!(st.pop().is_none(), "connection 1 is in service");
        // The answer frees connection 1: in order, its first pulse, its
        // call (in service: the pulses after it wait), then the rest.
        assert_eq!(st.finish(10), Some(None));
        assert_eq!(st.finish(10), None, "answered once");
        assert_eq!(st.pop().map(|p| p.kind), Some(Kind::Pulse));
        assert_eq!(st.pop().map(|p| p.unique), Some(11));
        assert!(st.pop().is_none(), "11 is in service");
        assert_eq!(st.finish(11), Some(None));
        for _ in 1..PULSE_DEPTH {
            assert_eq!(st.pop().map(|p| p.kind), Some(Kind::Pulse));
        }
        assert!(st.pop().is_none());
    }

    #[test]
    fn withdrawn_and_let_go_calls_are_answered_once() {
        let mut st = State::default();
        st.open(1);
        st.push(req(10, 1, Kind::Call)).expect("push");
        assert_eq!(st.call_of(1, 101), Some(10));
        assert_eq!(st.call_of(1, 999), None, "another thread's");
        assert!(st.withdraw_waiting(10));
        assert!(!st.withdraw_waiting(10));
        assert!(st.pop().is_none(), "a withdrawn call is never handed out");
        st.push(req(11, 1, Kind::Call)).expect("push");
        st.pop().expect("11");
        assert_eq!(st.call_of(1, 101), Some(11));
        assert!(st.let_go(11, LetGo::TimedOut));
        assert!(!st.let_go(11, LetGo::Gone), "let go once");
        assert_eq!(st.call_of(1, 101), None);
        assert_eq!(st.caller(11), None);
        // The connection's next call waits for the late answer.
        st.push(req(12, 1, Kind::Call)).expect("push");
        assert!(st.pop().is_none());
        assert_eq!(st.finish(11), Some(Some(LetGo::TimedOut)));
        assert_eq!(st.pop().map(|p| p.unique), Some(12));
    }

    #[test]
    fn a_dropped_connection_is_refused_and_not_counted() {
        let mut st = State::default();
        st.open(1);
        st.open(2);
        st.push(req(0, 1, Kind::Pulse)).expect("push");
        st.push(req(10, 1, Kind::Call)).expect("push");
        assert_eq!(st.drop_conn(1), vec![10]);
        assert_eq!(st.connections(), 1);
        assert!(st.is_dropped(1) && !st.is_dropped(2));
        assert_eq!(st.push(req(0, 1, Kind::Pulse)), Err(Refused::Dropped));
        assert!(st.pop().is_none());
        st.release(1);
        assert_eq!(st.connections(), 1);
        assert_eq!(st.push(req(0, 3, Kind::Pulse)), Err(Refused::Dropped));
    }
}
