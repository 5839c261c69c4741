//! Priority inheritance on an shm channel ([`Options::inherit_priority`],
//! see `serve/priority.rs` for what it gives and how a caller is checked).
//!
//! The calling process is the one that connected the rendezvous session,
//! as the kernel names it. The calling thread is claimed by the client
//! library in its slot's `caller` word (written when the thread changes,
//! published by the post that follows), checked with the kernel like a
//! `TID` message, and the caller's scheduling read from the kernel when
//! the request is taken. While the single thread holds a request that
//! boosts it (the watcher raises a thread only then) it publishes
//! [`BUSY`](super::BUSY) in the doorbell, so that a client posting
//! meanwhile rings its bell, and every bell is in the watcher's set too:
//! the watcher reads the ringing client's `caller` word, checks it, and
//! raises the busy thread to that caller's priority if it is higher (a
//! boost on arrival). The thread publishes `LOOKING` again before it
//! replies (or when it defers the request), so that its caller's next
//! request rings nothing. A spinning server (`shm-spin`) inheriting
//! priority does not spare its clients the look at who watches
//! ([`FLAG_SPINS`](super::FLAG_SPINS) unset), so that they ring while it
//! is busy. The plain path pays one branch on each side for all this: a
//! request without a boost is answered as without the option.
//!
//! [`Options::inherit_priority`]: crate::Options::inherit_priority

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::Ordering::{Relaxed, SeqCst};
use std::sync::Arc;

use super::publish;
use super::{ShmConn, ShmCore, ShmWorker};
use crate::error::{Error, Result};
use crate::transport::mechanisms::shm::{Slot, LOOKING, PAGE};
use crate::transport::serve::priority::{Front, Peer, PeerProcess};
use crate::transport::serve::server::in_place_parts;
use crate::transport::serve::slab::Token;

impl ShmCore {
    /// A new connection `token` (its rendezvous `session`, its slot's
    /// memfd `slot_fd`, its bell `ring`) joins the watcher's set, with
    /// priority inheritance: its caller is the process the kernel names
    /// on the session, its thread the one its slot's `caller` word names.
    pub(super) fn join(
        &self,
        token: Token,
        session: &OwnedFd,
        slot_fd: &OwnedFd,
        ring: &OwnedFd,
    ) -> Option<Arc<Peer>> {
        let inherit = &self.inherit.as_ref()?.inherit;
        let process = PeerProcess::of(session.as_fd());
        // The watcher's own view of the slot's first page (the worker's
        // mapping belongs to the connection): for the `caller` word.
        let front = Slot::map(slot_fd, PAGE).ok()?;
        let front: Front = Box::new(move || front.caller().load(Relaxed) as i32);
        inherit.join(token.with_mark(false), process, ring, Some(front))
    }

    /// Connection `c` is gone: out of the watcher's set.
    pub(super) fn leave(&self, c: &ShmConn) {
        if let (Some(i), Some(_)) = (&self.inherit, &c.peer) {
            i.inherit.leave(c.token.with_mark(false));
        }
    }

    /// `w` took what it hands out now (a request or a pulse): the
    /// thread's boosts are its own, a request runs it at its caller's
    /// scheduling until the reply, and any message ends a boost on
    /// arrival for its connection.
    pub(super) fn took(&self, w: &mut ShmWorker, pool: bool) {
        let Some(i) = &self.inherit else { return };
        w.boost = None;
        i.inherit.boosts_here(&mut w.boosts, pool);
        let Some(b) = &w.boosts else { return };
        let c = match (self.held(w), &w.pulse_from) {
            (Some(c), _) => c,
            (None, Some(from)) if w.pulse.is_some() => {
                b.taken(from.id);
                return;
            }
            _ => return,
        };
        let key = c.token.with_mark(false);
        let caller = c.peer.as_ref().and_then(|p| {
            p.named(c.slot.caller().load(Relaxed) as i32);
            p.caller()
        });
        match caller {
            Some(a) => w.boost = Some(b.begin(key, a)),
            None => b.taken(key),
        }
    }

    /// `w` answers its request with `publish` (given its connection and
    /// the largest reply): before, the watcher is disarmed (see
    /// `Boost::replying`) and a single thread looks again, so that the
    /// caller's next request rings nothing; after, the boost ends. Out of
    /// the plain reply's way, which pays one branch for it.
    #[inline(never)]
    pub(super) fn reply_inheriting(
        &self,
        w: &mut ShmWorker,
        publish: impl FnOnce(&ShmConn, usize),
    ) -> Result<()> {
        if let Some(b) = &w.boost {
            b.replying();
        }
        if !self.sets.pool() {
            self.state_of(w.index).store(LOOKING, SeqCst);
        }
        let c = self.held(w).ok_or_else(Error::no_request)?;
        publish(c, self.opts.max_msg);
        w.cur = None;
        w.boost = None;
        Ok(())
    }

    /// [`reply_inheriting`](Self::reply_inheriting) for a reply of `len`
    /// bytes built in place.
    #[inline(never)]
    pub(super) fn reply_in_place_inheriting(&self, w: &mut ShmWorker, len: usize) -> Result<()> {
        let (code, len, verdict) = in_place_parts(len, self.opts.max_msg);
        self.reply_inheriting(w, |c, _| publish(&c.slot, code, len))
            .and(verdict)
    }
}

#[cfg(test)]
mod tests {
    use std::os::fd::AsFd;
    use std::path::Path;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use oslayer::mman::Mapping;
    use oslayer::prio::{self, SchedAttr};

    use crate::transport::api::{Options, Status, Transport, Wait};
    use crate::transport::mechanisms::shm::{slot_size, Shm, EMPTY, MASK, REPLY, REQUEST};
    use crate::transport::wire::rendezvous::{self, Family};

    /// One request posted by hand in a raw connection's slot, its `caller`
    /// word naming `tid`: what the handler ran at, (policy, priority).
    fn raw_call(path: &Path, opts: &Options, tid: i32) -> (i32, u32) {
        let (_sock, hello, fds) = rendezvous::connect(path, Family::Shm, opts).expect("connect");
        let slot = Mapping::new(fds[1].as_fd(), slot_size(hello.max_msg)).expect("map");
        slot.atomic_u32(28).store(tid as u32, SeqCst);
        slot.atomic_u32(20).store(1, SeqCst);
        slot.atomic_u32(4).store(1, SeqCst);
        slot.atomic_u32(8).store(0, SeqCst);
        let st = slot.atomic_u32(0);
        st.compare_exchange(EMPTY, REQUEST, SeqCst, SeqCst)
            .expect("an empty slot");
        oslayer::eventfd::write(fds[2].as_fd(), 1).expect("ring");
        let end = Instant::now() + Duration::from_secs(5);
        while st.load(SeqCst) & MASK != REPLY {
            assert!(Instant::now() < end, "no reply within 5 s");
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut reply = [0u8; 8];
        crate::transport::mem::shared::load(&slot, 32, &mut reply);
        let word = |i: usize| u32::from_le_bytes(reply[i..i + 4].try_into().expect("4"));
        (word(0) as i32, word(4))
    }

    #[test]
    fn a_slot_naming_another_process_thread_gets_no_boost() {
        if !prio::has_cap_sys_nice() {
            let why = "needs CAP_SYS_NICE (run as root) to raise a thread";
            assert!(std::env::var_os("CI").is_none(), "CI is set: {why}");
            println!("skipped: {why}");
            return;
        }
        let tmp = tempfile::tempdir().expect("dir");
        let path = tmp.path().join("ch");
        let opts = Options {
            inherit_priority: true,
            ..Options::default()
        };
        let mut server = Shm::new(Wait::Block).serve(&path, &opts).expect("serve");
        let stop = Arc::new(AtomicBool::new(false));
        let serving = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                while let Ok(Some(_)) = server.receive(&stop) {
                    let a = prio::attr(0).expect("attr");
                    let mut out = a.policy.to_le_bytes().to_vec();
                    out.extend_from_slice(&a.priority.to_le_bytes());
                    let _ = server.reply(Status::Ok, &out);
                }
            })
        };
        // Another process's FIFO 30 thread, named by a SCHED_OTHER client.
        let mut stranger = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let pid = stranger.id() as i32;
        prio::set_attr(pid, SchedAttr::fifo(30)).expect("FIFO 30");
        let forged = raw_call(&path, &opts, pid);
        // The same bytes naming the client's own FIFO 30 thread: believed.
        let (p, o) = (path.clone(), opts.clone());
        let honest = std::thread::spawn(move || {
            prio::set_attr(0, SchedAttr::fifo(30)).expect("FIFO 30");
            raw_call(&p, &o, oslayer::thread::gettid())
        })
        .join()
        .expect("honest");
        let _ = stranger.kill();
        let _ = stranger.wait();
        stop.store(true, SeqCst);
        serving.join().expect("server");
        assert_eq!(forged, (libc::SCHED_OTHER, 0), "a forged caller boosted");
        assert_eq!(honest, (libc::SCHED_FIFO, 30), "a true caller inherits");
    }
}
