//! What every test is given.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::measure::clock::Clock;
use crate::measure::placement;

/// The semaphore implementation the SEM tests use (`--sem`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SemKind {
    /// POSIX unnamed semaphores (sem_init, process-private).
    Posix,
    /// System V semaphores (semget/semop).
    Sysv,
    /// A futex-based counting semaphore of our own.
    Futex,
}

impl SemKind {
    /// The option value.
    pub fn name(self) -> &'static str {
        match self {
            SemKind::Posix => "posix",
            SemKind::Sysv => "sysv",
            SemKind::Futex => "futex",
        }
    }
}

/// The context of a run.
pub struct Ctx {
    /// `--quick`: fewer samples (see [`Ctx::samples`]).
    pub quick: bool,
    /// `--sem`.
    pub sem: SemKind,
    /// `--duration` (MEM-B-LEK).
    pub duration: Duration,
    /// The clock for timestamps.
    pub clock: Clock,
    /// Cost of one timestamp, ns (CAL-P-TRC): subtracted from every
    /// interval measured with two timestamps.
    pub timestamp_ns: f64,
    /// SCHED_FIFO can be used (CAP_SYS_NICE or RLIMIT_RTPRIO).
    pub fifo_allowed: bool,
    /// Online CPUs.
    pub cpus: Vec<usize>,
    /// Set by SIGINT/SIGTERM: a long test should stop early.
    pub stop: Arc<AtomicBool>,
    /// `--msg-inherit`: the servers of MSG-B-PRI and MSG-P-PRI inherit
    /// their callers' priority (true unless set off).
    pub msg_inherit: bool,
    /// `--msg-transport`: the msgpass transport of the MSG tests.
    pub msg_transport: String,
}

impl Ctx {
    /// The context of a run: `--quick`, `--sem` and `--duration` as
    /// planned, timed with `clock`, stopped early by `stop`.
    pub fn new(
        quick: bool,
        sem: SemKind,
        duration: Duration,
        clock: Clock,
        stop: Arc<AtomicBool>,
    ) -> Ctx {
        Ctx {
            quick,
            sem,
            duration,
            timestamp_ns: clock.overhead_ns(),
            clock,
            fifo_allowed: super::rt::fifo_allowed(),
            cpus: placement::online_cpus(),
            stop,
            msg_inherit: true,
            msg_transport: super::msgpeer::TRANSPORT.into(),
        }
    }

    /// `full` samples, or a tenth of them (at least 10) with `--quick`.
    pub fn samples(&self, full: usize) -> usize {
        if self.quick {
            (full / 10).max(10)
        } else {
            full
        }
    }

    /// True once SIGINT or SIGTERM arrived.
    pub fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// An interval of `ticks` clock ticks between two timestamps, in ns,
    /// less one timestamp's cost (clamped at 0).
    pub fn interval_ns(&self, ticks: u64) -> f64 {
        (self.clock.ticks_to_ns(ticks) - self.timestamp_ns).max(0.0)
    }
}
