//! The throughput run of a row: `size` bytes one way and a checksum
//! back, in windows of one-way messages closed by an acknowledged call
//! where the transport has one-way messages, every reply verified.

use msgpass::transport::ClientConnection;
use msgpass::Connection;

use super::super::echo::call_error;
use super::super::protocol::{
    ack_fold, body, stamp, SumBase, ACK_LEN, CMD_ACK, CMD_SUM, SUM_SEQ_BYTES,
};
use super::super::row::{Api, ThroughputRun};
use super::super::stop::Stop;
use super::config::{check_stop, target, ticks, ClientConfig, CAP_FACTOR};
use super::cpu_marks::CpuMark;

/// Request and reply buffers of the checksum exchange. The request is
/// `req` with the sequence number [`stamp`]ed into its first
/// [`SUM_SEQ_BYTES`]; the calls go through the row's API: copied, or in
/// place, where only the stamp is written into the transport's buffer
/// unless `write_body` is set (the first call of the run and after the
/// CPU-time calls, or every call when the transport is not in place) and
/// the (short) reply is copied out of it. One-way messages have no
/// in-place API: both APIs send them copied.
struct Sum {
    api: Api,
    in_place: bool,
    req: Vec<u8>,
    reply: [u8; 64],
    base: SumBase,
    seq: u64,
    write_body: bool,
}

impl Sum {
    fn new(size: usize, api: Api, in_place: bool) -> Sum {
        let req = body(size);
        Sum {
            api,
            in_place,
            base: SumBase::new(&req),
            req,
            reply: [0u8; 64],
            seq: 0,
            write_body: true,
        }
    }

    /// Calls `cmd` with the request stamped with the current sequence
    /// number; the reply's first bytes land in `reply`; returns its length.
    #[inline(always)]
    fn call<C: ClientConnection + ?Sized>(
        &mut self,
        conn: &mut Connection<C>,
        cmd: u32,
    ) -> Result<usize, Stop> {
        let seq = self.seq;
        stamp(&mut self.req, seq, SUM_SEQ_BYTES);
        let n = match self.api {
            Api::Copy => conn.call(cmd, &self.req, &mut self.reply),
            Api::InPlace => {
                let (req, whole) = (&self.req, self.write_body || !self.in_place);
                let k = req.len().min(SUM_SEQ_BYTES);
                conn.call_with(cmd, |buf| {
                    if whole {
                        buf.write(0, req);
                    } else {
                        buf.write(0, &req[..k]);
                    }
                    req.len()
                })
                .map(|r| {
                    let k = r.len().min(self.reply.len());
                    r.read(0, &mut self.reply[..k]);
                    r.len()
                })
            }
        }
        .map_err(|e| call_error(e, "message", seq))?;
        self.write_body = false;
        Ok(n)
    }

    /// One message and its verified checksum.
    #[inline(always)]
    fn round<C: ClientConnection + ?Sized>(
        &mut self,
        conn: &mut Connection<C>,
    ) -> Result<(), Stop> {
        let seq = self.seq;
        let n = self.call(conn, CMD_SUM)?;
        let r = &self.reply;
        let got = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
        if n != 4 || got != self.base.expected(seq) {
            return Err(Stop::Failed(format!(
                "message #{seq}: checksum reply {got:#010x} in {n} bytes, expected {:#010x} in 4 \
                 (corrupted, lost or stale message)",
                self.base.expected(seq)
            )));
        }
        self.seq += 1;
        Ok(())
    }

    /// A window of `w` messages: `w - 1` one-way, then a [`CMD_ACK`]
    /// call whose reply must be the count and running check of all `w`.
    #[inline(always)]
    fn window<C: ClientConnection + ?Sized>(
        &mut self,
        conn: &mut Connection<C>,
        w: u32,
    ) -> Result<(), Stop> {
        if w <= 1 {
            return self.round(conn);
        }
        let first = self.seq;
        let mut check = 0u64;
        for _ in 1..w {
            let seq = self.seq;
            stamp(&mut self.req, seq, SUM_SEQ_BYTES);
            conn.send_oneway(CMD_SUM, &self.req)
                .map_err(|e| call_error(e, "one-way message", seq))?;
            check = ack_fold(check, self.base.expected(seq));
            self.seq += 1;
        }
        let seq = self.seq;
        let n = self.call(conn, CMD_ACK)?;
        check = ack_fold(check, self.base.expected(seq));
        self.seq += 1;
        let r = &self.reply;
        let count = u32::from_le_bytes([r[0], r[1], r[2], r[3]]);
        let got = u64::from_le_bytes([r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11]]);
        if n != ACK_LEN || count != w || got != check {
            return Err(Stop::Failed(format!(
                "messages #{first}..#{seq}: checksum reply of the window (count {count}, check \
                 {got:#018x}) in {n} bytes, expected (count {w}, check {check:#018x}) in \
                 {ACK_LEN} (a one-way message corrupted, lost, duplicated or reordered)"
            )));
        }
        Ok(())
    }
}

/// `size` bytes one way, the checksum back; sized from the latency run's
/// rate, the clock read about once per millisecond.
pub(super) fn throughput<C: ClientConnection + ?Sized>(
    cfg: &ClientConfig,
    conn: &mut Connection<C>,
    rate: f64,
) -> Result<ThroughputRun, Stop> {
    let clock = &cfg.clock;
    let mut sum = Sum::new(cfg.size, cfg.api, conn.in_place());
    // Window 1 unless the transport has one-way messages.
    let window = if conn.supports_oneway() {
        cfg.window.max(1)
    } else {
        1
    };
    let target = target(rate, cfg.row_secs);
    // The clock is looked at every `mask + 1` windows.
    let mask = ((rate / 1000.0 / window as f64) as u64)
        .clamp(1, 1024)
        .next_power_of_two()
        - 1;
    // Warm the checksum path: a few windows, at most a fiftieth of a row.
    let warm_until = clock.now().wrapping_add(ticks(clock, cfg.row_secs / 50.0));
    for _ in 0..10 {
        sum.window(conn, window)?;
        if clock.now() >= warm_until {
            break;
        }
    }
    let cpu0 = CpuMark::before(conn, cfg.server_pid)?;
    // The CPU-time call's reply overwrote the slot's first bytes.
    sum.write_body = true;
    let start = clock.now();
    let deadline = start.wrapping_add(ticks(clock, cfg.row_secs * CAP_FACTOR));
    let mut done: u64 = 0;
    let mut windows: u64 = 0;
    while done < target {
        sum.window(conn, window)?;
        done += window as u64;
        windows += 1;
        if windows & mask == 0 {
            if clock.now() >= deadline {
                break;
            }
            check_stop(cfg)?;
        }
    }
    let end = clock.now();
    let cpu1 = CpuMark::after(conn, cfg.server_pid)?;
    let secs = clock.ticks_to_ns(end.wrapping_sub(start)) / 1e9;
    let msgs_per_s = done as f64 / secs.max(1e-9);
    Ok(ThroughputRun {
        window,
        target,
        messages: done,
        time_capped: done < target,
        duration_ns: secs * 1e9,
        msgs_per_s,
        mb_per_s: msgs_per_s * cfg.size as f64 / 1e6,
        cpu: cpu0.per_message(&cpu1, done),
    })
}
