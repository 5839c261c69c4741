//! The client side of every arrangement: one `GetInteger(numInts)` call
//! at a time, every reply checked (serial and every integer), timed into
//! a latency histogram. [`Caller`] is how a call is made; [`measure`]
//! is the timed loop, the same for all of them.

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
use msgpass::{Connection, Namespace, Options};
use serde::{Deserialize, Serialize};

use super::dbus;
use super::proto::{read_reply, RequestHeader, GET_INTEGER};
use crate::measure::clock::Clock;
use crate::measure::cpu::process_cpu_ns;
use crate::measure::hist::Recorder;

/// One way of calling `GetInteger`.
pub trait Caller {
    /// Calls `GetInteger(num_ints)` and checks the reply: an error when
    /// the call fails or any integer is wrong.
    fn get_integer(&mut self, num_ints: u32) -> Result<()>;
}

/// `GetInteger` over msgpass, straight to a service or through the
/// broker: the fixed header, then the D-Bus `i` body.
pub struct MsgpassCaller {
    conn: Connection,
    destination: u32,
    /// This client's serial space: its index in the top 32 bits.
    serial_base: u64,
    seq: u32,
    request: Vec<u8>,
    reply: Vec<u8>,
}

impl MsgpassCaller {
    /// Connects to `endpoint` in `ns`, calling service `destination` as
    /// client `index`.
    pub fn connect(
        ns: &Namespace,
        endpoint: &str,
        transport: &str,
        index: u32,
        destination: u32,
        opts: &Options,
    ) -> Result<MsgpassCaller> {
        let t = msgpass::transport::by_name(transport)?;
        let conn = Connection::open(ns, endpoint, &*t, opts)
            .with_context(|| format!("cannot reach {endpoint}"))?;
        let max = conn.max_msg();
        Ok(MsgpassCaller {
            conn,
            destination,
            serial_base: u64::from(index) << 32,
            seq: 0,
            request: Vec::with_capacity(64),
            reply: vec![0; max],
        })
    }
}

impl Caller for MsgpassCaller {
    fn get_integer(&mut self, num_ints: u32) -> Result<()> {
        self.seq = self.seq.wrapping_add(1);
        let serial = self.serial_base | u64::from(self.seq);
        RequestHeader {
            destination: self.destination,
            method: GET_INTEGER,
            serial,
        }
        .write(&mut self.request);
        dbus::encode_request(num_ints, &mut self.request);
        let n = self
            .conn
            .call(GET_INTEGER, &self.request, &mut self.reply)?;
        let (got, body) = read_reply(&self.reply[..n]).ok_or_else(|| anyhow!("short reply"))?;
        if got != serial {
            bail!("reply for serial {got:#x} reached the caller of {serial:#x}");
        }
        dbus::decode_reply(body, num_ints).map_err(|e| anyhow!("wrong reply: {e}"))
    }
}

/// `GetInteger` over D-Bus.
pub struct DbusCaller(pub dbus::DbusClient);

impl Caller for DbusCaller {
    fn get_integer(&mut self, num_ints: u32) -> Result<()> {
        let got = self.0.get_integer(num_ints)?;
        dbus::check(num_ints, &got).map_err(|e| anyhow!("wrong reply: {e}"))
    }
}

/// What one client measured, sent to the suite as one JSON line.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ClientReport {
    /// Calls completed and checked.
    pub calls: u64,
    /// Time the calls took, ns.
    pub elapsed_ns: u64,
    /// This client process's CPU time over them, ns.
    pub cpu_ns: u64,
    /// Latency per call: (upper bound ns, count) per histogram bucket.
    pub histogram: Vec<(f64, u64)>,
    /// Calls the broker answered `ETIMEDOUT` (its call timeout passed
    /// with the service silent): counted, not timed, and the client goes
    /// on calling.
    #[serde(default)]
    pub timeouts: u64,
    /// Why the client stopped early, if it did.
    pub error: Option<String>,
}

/// Calls `GetInteger(num_ints)` `warmup` times untimed.
pub fn warm_up(caller: &mut dyn Caller, num_ints: u32, warmup: u32) -> Result<()> {
    for _ in 0..warmup {
        caller.get_integer(num_ints)?;
    }
    Ok(())
}

/// True when a call failed because the broker's call timeout passed.
pub fn timed_out(e: &anyhow::Error) -> bool {
    matches!(
        e.downcast_ref::<msgpass::Error>(),
        Some(msgpass::Error::Remote { code }) if *code == libc::ETIMEDOUT
    )
}

/// Calls `GetInteger(num_ints)` back to back for `duration`, timing each
/// call. A call the broker timed out is counted and the next one made; any
/// other failure ends the run, and the report says why and keeps what was
/// measured before.
pub fn measure(caller: &mut dyn Caller, num_ints: u32, duration: Duration) -> ClientReport {
    let clock = Clock::monotonic();
    let mut hist = Recorder::new();
    let cpu0 = process_cpu_ns();
    let start = Instant::now();
    let mut error = None;
    let mut calls = 0u64;
    let mut timeouts = 0u64;
    while start.elapsed() < duration {
        let t0 = clock.now();
        match caller.get_integer(num_ints) {
            Ok(()) => {}
            Err(e) if timed_out(&e) => {
                timeouts += 1;
                continue;
            }
            Err(e) => {
                error = Some(format!("call {}: {e:#}", calls + timeouts + 1));
                break;
            }
        }
        hist.record(clock.now() - t0);
        calls += 1;
    }
    ClientReport {
        calls,
        elapsed_ns: start.elapsed().as_nanos() as u64,
        cpu_ns: process_cpu_ns() - cpu0,
        histogram: hist.buckets(&clock),
        timeouts,
        error,
    }
}
