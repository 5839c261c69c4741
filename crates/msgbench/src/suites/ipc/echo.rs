//! The echo exchange of a row ([`Echo`]): one round trip at a time,
//! through the row's API, every reply checked (length, sequence number,
//! payload as the API says), and what a wrong reply is called. Used by
//! the row's measured client and by the active clients of `--clients`.

use msgpass::transport::ClientConnection;
use msgpass::{Connection, View};

use super::protocol::{
    all_stamps, body, body_mismatch, echo_mismatch, in_place_expected, stamp, stamp_ends,
    stamps_mismatch, stamps_seq, Ends, CMD_ECHO, ECHO_MASK, STAMP,
};
use super::row::Api;
use super::stop::Stop;
use crate::measure::clock::Clock;

/// Open loop: sleep (rather than spin) towards a send time further away
/// than this, microseconds (sleeping stops half that short of it).
const SLEEP_ABOVE_US: f64 = 200.0;

/// Maps a failed call: too large is n/a, anything else fails the row.
pub fn call_error(e: msgpass::Error, what: &str, seq: u64) -> Stop {
    match e {
        msgpass::Error::TooLarge { max, .. } => Stop::NotApplicable(max),
        e => Stop::Failed(format!("{what} #{seq}: {e}")),
    }
}

/// How often an in-place round trip checks the whole body: every
/// `BODY_CHECK_EVERY`-th sequence number (besides the first and last of a
/// measured run).
pub const BODY_CHECK_EVERY: u64 = 1024;

/// The echo exchange of a row: its API, the request pattern, the reply
/// buffer of the copying API and the sequence number.
///
/// Copying API ([`Api::Copy`]): the request is `req` with the sequence
/// number [`stamp`]ed into its first 8 bytes, sent with
/// [`Connection::call`]; the reply (every byte XORed) is copied into
/// `reply` and every byte checked.
///
/// In place ([`Api::InPlace`]): [`Connection::call_with`] writes the two
/// stamps ([`stamp_ends`]) into the transport's buffer, and the whole body
/// only when `write_body` is set (the first round trip after a warm-up
/// starts, since on shared memory the slot holds the previous reply, which
/// is the previous request with only its stamps changed) or when the
/// transport is not in place (its copying fallback's buffer is the
/// library's). Every reply's length and stamps are checked; its body
/// between the stamps is checked whole on the first and last round trip of
/// each measured run, every [`BODY_CHECK_EVERY`]-th one, the first after a
/// warm-up starts, and every one when the transport is not in place (the
/// body was written whole then anyway). A body corrupted in the slot stays
/// there, so the next whole check sees it.
pub struct Echo {
    api: Api,
    /// The transport lends its buffers (in place for real).
    in_place: bool,
    /// The request pattern ([`body`]); with the copying API, stamped.
    req: Vec<u8>,
    /// The copying API's reply buffer.
    reply: Vec<u8>,
    seq: u64,
    /// In place: write the whole body with the next request.
    write_body: bool,
    /// In place: check the next reply's whole body.
    check_body: bool,
    /// In place, during a measured run: its last sequence number and the
    /// clock reading at which it stops early (either ends it: the reply
    /// that ends the run has its body checked).
    run_end: Option<(u64, u64)>,
}

impl Echo {
    pub fn new(size: usize, api: Api, in_place: bool) -> Echo {
        Echo {
            api,
            in_place,
            req: body(size),
            // Room for a reply that is too long, so it shows as such; in
            // place, for a reply copied out to check its body.
            reply: match api {
                Api::Copy => vec![0u8; size + 64],
                Api::InPlace => vec![0u8; size],
            },
            seq: 0,
            write_body: true,
            check_body: true,
            run_end: None,
        }
    }

    /// The same exchange numbering its round trips from `seq` (each of
    /// several clients its own range, so that a reply meant for another
    /// shows as a wrong sequence number).
    pub fn numbered_from(mut self, seq: u64) -> Echo {
        self.seq = seq;
        self
    }

    /// A warm-up starts (other calls have used the connection): the next
    /// request is written whole and its reply checked whole.
    pub fn restart(&mut self) {
        self.write_body = true;
        self.check_body = true;
    }

    /// A measured run of at most `count` round trips, stopping early at
    /// clock reading `deadline`, starts: its first and last replies are
    /// checked whole.
    pub fn begin_run(&mut self, count: u64, deadline: u64) {
        self.check_body = true;
        self.run_end = Some((self.seq.saturating_add(count.max(1) - 1), deadline));
    }

    /// The measured run is over.
    pub fn end_run(&mut self) {
        self.run_end = None;
    }

    /// One verified round trip; returns the timestamps around the call.
    #[inline(always)]
    pub fn round<C: ClientConnection + ?Sized>(
        &mut self,
        conn: &mut Connection<C>,
        clock: &Clock,
    ) -> Result<(u64, u64), Stop> {
        match self.api {
            Api::Copy => {
                stamp(&mut self.req, self.seq, 8);
                let t0 = clock.now();
                let r = conn.call(CMD_ECHO, &self.req, &mut self.reply);
                let t1 = clock.now();
                self.check(r)?;
                Ok((t0, t1))
            }
            Api::InPlace => {
                let t0 = clock.now();
                let (r, kept) = self.send(conn);
                let t1 = clock.now();
                self.check_in_place(r, kept, Some(t1))?;
                Ok((t0, t1))
            }
        }
    }

    /// One verified round trip sent once the clock reaches `intended`;
    /// returns the timestamp after the call.
    #[inline(always)]
    pub fn round_at<C: ClientConnection + ?Sized>(
        &mut self,
        conn: &mut Connection<C>,
        clock: &Clock,
        intended: u64,
    ) -> Result<u64, Stop> {
        match self.api {
            Api::Copy => {
                stamp(&mut self.req, self.seq, 8);
                wait_until(clock, intended);
                let r = conn.call(CMD_ECHO, &self.req, &mut self.reply);
                let t1 = clock.now();
                self.check(r)?;
                Ok(t1)
            }
            Api::InPlace => {
                wait_until(clock, intended);
                let (r, kept) = self.send(conn);
                let t1 = clock.now();
                self.check_in_place(r, kept, Some(t1))?;
                Ok(t1)
            }
        }
    }

    /// One verified round trip without a clock in the loop; with `clock`
    /// (where the loop looks at the time), the clock's reading after it.
    #[inline(always)]
    pub fn round_untimed<C: ClientConnection + ?Sized>(
        &mut self,
        conn: &mut Connection<C>,
        clock: Option<&Clock>,
    ) -> Result<Option<u64>, Stop> {
        match self.api {
            Api::Copy => {
                stamp(&mut self.req, self.seq, 8);
                let r = conn.call(CMD_ECHO, &self.req, &mut self.reply);
                self.check(r)?;
                Ok(clock.map(Clock::now))
            }
            Api::InPlace => {
                let (r, kept) = self.send(conn);
                let t1 = clock.map(Clock::now);
                self.check_in_place(r, kept, t1)?;
                Ok(t1)
            }
        }
    }

    /// The in-place call: the stamps (and the body when it must be
    /// written) into the memory the transport lends; the reply where it
    /// lies.
    ///
    /// Also says whether the reply lies where the request was built: then a
    /// body corrupted in it stays there for the next whole check (the slot
    /// on shm, the one private buffer msgpass lends a connection for
    /// request and reply on the areas of eventfd, io-uring and signal);
    /// where it does not, every body is checked.
    #[inline(always)]
    fn send<'c, C: ClientConnection + ?Sized>(
        &self,
        conn: &'c mut Connection<C>,
    ) -> (msgpass::Result<View<'c>>, bool) {
        let (seq, whole, body) = (self.seq, self.write_body || !self.in_place, &self.req);
        let n = body.len();
        let mut built = std::ptr::null();
        let r = conn.call_with(CMD_ECHO, |buf| {
            built = buf.as_ptr();
            if whole {
                buf.write(0, body);
            }
            let mut ends = Ends::new(n);
            stamp_ends(ends.bytes_mut(), seq);
            ends.write(buf);
            n
        });
        let kept = self.in_place && r.as_ref().is_ok_and(|reply| reply.as_ptr() == built);
        (r, kept)
    }

    /// Checks the reply of the current round trip (copying API) and moves
    /// to the next.
    #[inline(always)]
    fn check(&mut self, r: Result<usize, msgpass::Error>) -> Result<(), Stop> {
        let seq = self.seq;
        let n = r.map_err(|e| call_error(e, "round trip", seq))?;
        if n != self.req.len() {
            return Err(Stop::Failed(format!(
                "round trip #{seq}: reply of {n} bytes, expected {}",
                self.req.len()
            )));
        }
        if let Some(i) = echo_mismatch(&self.req, &self.reply[..n]) {
            return Err(Stop::Failed(echo_error(
                &self.req,
                &self.reply[..n],
                seq,
                i,
            )));
        }
        self.seq += 1;
        Ok(())
    }

    /// Checks an in-place reply, received at clock reading `t1` when
    /// known: its length and stamps always, its whole body when due (see
    /// [`Echo`]; every time unless the reply is `kept` where the request
    /// was built); then moves to the next round trip.
    #[inline(always)]
    fn check_in_place(
        &mut self,
        r: msgpass::Result<View<'_>>,
        kept: bool,
        t1: Option<u64>,
    ) -> Result<(), Stop> {
        let seq = self.seq;
        let reply = r.map_err(|e| call_error(e, "round trip", seq))?;
        let n = self.req.len();
        if reply.len() != n {
            return Err(Stop::Failed(format!(
                "round trip #{seq}: reply of {} bytes, expected {n}",
                reply.len()
            )));
        }
        let last = self
            .run_end
            .is_some_and(|(end, deadline)| seq >= end || t1.is_some_and(|t| t >= deadline));
        let whole = self.check_body || !kept || last || seq % BODY_CHECK_EVERY == 0;
        let ends = Ends::read(&reply, n);
        let bad = match stamps_mismatch(ends.bytes(), seq) {
            Some(i) => Some(ends.index(i)),
            None if whole => {
                // Copied out whole only now, to be checked where it
                // cannot change.
                reply.read(0, &mut self.reply[..n]);
                body_mismatch(&self.req, &self.reply[..n])
            }
            None => None,
        };
        if let Some(i) = bad {
            let got = reply.to_vec();
            return Err(Stop::Failed(in_place_error(&self.req, &got, seq, i, kept)));
        }
        self.seq += 1;
        self.write_body = false;
        self.check_body = false;
        Ok(())
    }
}

/// Describes a wrong in-place echo reply whose first bad byte is `i`:
/// both stamps carrying another sequence number is a lost, stale or
/// reordered reply; anything else is corruption (of the body: found by a
/// whole-body check, possibly of an earlier reply left in the slot).
#[cold]
fn in_place_error(body: &[u8], reply: &[u8], seq: u64, i: usize, kept: bool) -> String {
    let n = reply.len();
    let w = n.min(STAMP);
    let in_stamps = all_stamps(n) || i < STAMP || i >= n - STAMP;
    if in_stamps {
        if let Some(got) = stamps_seq(reply) {
            return stale_reply(seq, got, w, n < 2 * STAMP);
        }
    }
    let whose = match (in_stamps, kept) {
        (true, _) => "",
        (false, false) => ", a body byte",
        (false, true) => {
            ", a body byte; the body is checked whole only now and then, so an earlier reply's \
             corruption, left in the slot, shows here"
        }
    };
    format!(
        "round trip #{seq}: reply byte {i} is {:#04x}, expected {:#04x} (corrupted payload{whose})",
        reply[i],
        in_place_expected(body, seq, i)
    )
}

/// Waits until the clock reads `t`: sleeps while more than
/// [`SLEEP_ABOVE_US`] remain, then spins.
#[inline(always)]
fn wait_until(clock: &Clock, t: u64) {
    let now = clock.now();
    if now >= t {
        return;
    }
    let left_ns = clock.ticks_to_ns(t - now);
    if left_ns > SLEEP_ABOVE_US * 1000.0 {
        let ns = left_ns - SLEEP_ABOVE_US * 500.0;
        std::thread::sleep(std::time::Duration::from_nanos(ns as u64));
    }
    while clock.now() < t {
        std::hint::spin_loop();
    }
}

/// A reply to round trip `seq` that carries sequence number `got` (in
/// its `w` stamped bytes): lost, stale or reordered, or also possibly
/// corrupted when the stamp is too short to tell.
#[cold]
fn stale_reply(seq: u64, got: u64, w: usize, maybe_corrupted: bool) -> String {
    let low = if w < 8 {
        format!(" (low {w} byte(s) of {seq})")
    } else {
        String::new()
    };
    format!(
        "round trip #{seq}: the reply carries sequence number {got}{low}: \
         a lost, stale or reordered reply{}",
        if maybe_corrupted {
            ", or a corrupted one"
        } else {
            ""
        }
    )
}

/// Describes a wrong echo reply whose first bad byte is `i`: a right
/// payload under another sequence number is a lost, stale or reordered
/// reply; anything else is corruption.
#[cold]
fn echo_error(req: &[u8], reply: &[u8], seq: u64, i: usize) -> String {
    let w = req.len().min(8);
    if i < w && echo_mismatch(&req[w..], &reply[w..]).is_none() {
        let mut b = [0u8; 8];
        for (d, r) in b.iter_mut().zip(&reply[..w]) {
            *d = r ^ ECHO_MASK;
        }
        return stale_reply(seq, u64::from_le_bytes(b), w, w < 8);
    }
    format!(
        "round trip #{seq}: reply byte {i} is {:#04x}, expected {:#04x} (corrupted payload)",
        reply[i],
        req[i] ^ ECHO_MASK
    )
}
