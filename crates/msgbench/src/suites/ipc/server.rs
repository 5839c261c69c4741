//! The server of one row: a thread of this process, pinned and verified,
//! serving one channel with the [`protocol`](super::protocol) until asked to
//! stop ([`CMD_STOP`]) or until its stop flag is set.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use msgpass::{Channel, Namespace, Options};

use super::protocol::{
    ack_fold, checksum, echo_transform, CMD_ACK, CMD_CPU, CMD_ECHO, CMD_STOP, CMD_SUM,
};
use crate::measure::cpu::thread_cpu_ns;
use crate::measure::placement::pin_current_thread;

/// Longest the server may take to pin itself and create its channel.
const START_LIMIT: Duration = Duration::from_secs(10);

/// A reply the server breaks on purpose (the `--inject-fault` test hook),
/// always at the same point of every row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Flip the last byte of the [`FAULT_AT`]-th echo reply.
    Corrupt,
    /// Answer the [`FAULT_AT`]-th echo request with the previous reply.
    Stale,
    /// Return a wrong checksum to the [`FAULT_AT`]-th checksum request.
    Checksum,
    /// Take the [`FAULT_AT`]-th one-way checksum message as corrupted (a
    /// byte flipped before it is summed); only windowed rows send them.
    Oneway,
    /// Sleep [`STALL`] before answering the [`FAULT_AT`]-th echo request
    /// (the reply itself is right).
    Stall,
}

/// How long [`Fault::Stall`] stalls the server, once.
pub const STALL: Duration = Duration::from_millis(50);

/// Which request of its kind a [`Fault`] breaks (counting from 0): past
/// the warm-up's minimum, inside the first measured run.
pub const FAULT_AT: u64 = 100;

/// A running server thread.
pub struct ServerThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<(), String>>>,
}

impl ServerThread {
    /// Starts a server for `endpoint` on `cpu`, replying to messages of up
    /// to `size` bytes. The error is a one-line reason (the row is skipped).
    pub fn start(
        ns: &Namespace,
        endpoint: &str,
        transport: &str,
        opts: &Options,
        cpu: usize,
        size: usize,
        fault: Option<Fault>,
    ) -> Result<ServerThread, String> {
        let (tx, rx) = mpsc::channel();
        let (ns, endpoint, transport, opts) = (
            ns.clone(),
            endpoint.to_string(),
            transport.to_string(),
            opts.clone(),
        );
        let handle = std::thread::Builder::new()
            .name("ipc-server".into())
            .spawn(move || {
                let chan = pin_current_thread(cpu)
                    .map_err(|e| format!("server thread: {e}"))
                    .and_then(|()| {
                        msgpass::transport::by_name(&transport).map_err(|e| e.to_string())
                    })
                    .and_then(|t| {
                        Channel::create(&ns, &endpoint, &*t, &opts)
                            .map_err(|e| format!("cannot serve: {e}"))
                    });
                match chan {
                    Ok(mut chan) => {
                        let _ = tx.send(Ok(chan.stop_flag()));
                        serve(&mut chan, size, fault)
                    }
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        Ok(())
                    }
                }
            })
            .map_err(|e| format!("cannot start a server thread: {e}"))?;
        match rx.recv_timeout(START_LIMIT) {
            Ok(Ok(stop)) => Ok(ServerThread {
                stop,
                handle: Some(handle),
            }),
            Ok(Err(reason)) => {
                let _ = handle.join();
                Err(reason)
            }
            // The thread is left behind; it holds nothing we wait for.
            Err(_) => Err(format!(
                "the server did not start within {} s",
                START_LIMIT.as_secs()
            )),
        }
    }

    /// Stops the server (if the client's [`CMD_STOP`] did not already) and
    /// waits up to `limit` for it; the error says what went wrong in it.
    pub fn stop(mut self, limit: Duration) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        let Some(h) = self.handle.take() else {
            return Ok(());
        };
        let deadline = Instant::now() + limit;
        while !h.is_finished() {
            if Instant::now() >= deadline {
                // Left behind: the run directory is removed at the end anyway.
                return Err(format!(
                    "the server thread did not stop within {} s",
                    limit.as_secs_f64()
                ));
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        h.join()
            .unwrap_or_else(|_| Err("the server thread panicked".into()))
    }
}

impl Drop for ServerThread {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The server loop. Returns when told to stop; a failed receive or reply
/// is the error.
fn serve(chan: &mut Channel, size: usize, fault: Option<Fault>) -> Result<(), String> {
    let mut out = vec![0u8; size];
    let (mut echoes, mut sums, mut oneways) = (0u64, 0u64, 0u64);
    // The running check of the window since the last CMD_ACK.
    let (mut count, mut check) = (0u32, 0u64);
    loop {
        let Some(req) = chan
            .receive()
            .map_err(|e| format!("server: receive: {e}"))?
        else {
            return Ok(());
        };
        let (cmd, len) = (req.cmd(), req.data().len());
        let sent = match cmd {
            CMD_ECHO if len <= out.len() => {
                let broken = (echoes == FAULT_AT).then_some(fault).flatten();
                echoes += 1;
                // Stale: `out` still holds the previous reply.
                if broken != Some(Fault::Stale) {
                    echo_transform(req.data(), &mut out[..len]);
                }
                if broken == Some(Fault::Stall) {
                    std::thread::sleep(STALL);
                }
                if broken == Some(Fault::Corrupt) && len > 0 {
                    out[len - 1] ^= 0x01;
                }
                req.reply(&out[..len])
            }
            CMD_ECHO => req.reply_error(libc::EMSGSIZE),
            CMD_SUM | CMD_ACK => {
                let mut sum = checksum(req.data());
                if req.is_oneway() {
                    if oneways == FAULT_AT && fault == Some(Fault::Oneway) {
                        let mut bad = req.data().to_vec();
                        if let Some(b) = bad.last_mut() {
                            *b ^= 0x01;
                        }
                        sum = checksum(&bad);
                    }
                    oneways += 1;
                }
                if sums == FAULT_AT && fault == Some(Fault::Checksum) {
                    sum ^= 0x8000_0000;
                }
                sums += 1;
                if cmd == CMD_SUM && !req.is_oneway() {
                    req.reply(&sum.to_le_bytes())
                } else {
                    count = count.wrapping_add(1);
                    check = ack_fold(check, sum);
                    if cmd == CMD_ACK {
                        let mut out = [0u8; 12];
                        out[..4].copy_from_slice(&count.to_le_bytes());
                        out[4..].copy_from_slice(&check.to_le_bytes());
                        (count, check) = (0, 0);
                        req.reply(&out)
                    } else {
                        // One-way: nothing goes back.
                        Ok(())
                    }
                }
            }
            CMD_CPU => req.reply(&thread_cpu_ns().to_le_bytes()),
            CMD_STOP => {
                return req
                    .reply(&[])
                    .map_err(|e| format!("server: reply to stop: {e}"))
            }
            _ => req.reply_error(libc::ENOTTY),
        };
        sent.map_err(|e| format!("server: reply to command {cmd} ({len} bytes): {e}"))?;
    }
}
