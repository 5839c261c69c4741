//! The hand-over harness shared by the rt-tests equivalents (ptsematest,
//! pmqtest, svsematest, sigwaittest).
//!
//! As in those tools, two threads on one CPU: the receiver (priority P)
//! blocks on the *test* object; the sender (priority P-1) takes a
//! timestamp just before the wake-up action on it, the receiver takes one
//! just after waking: the difference is one sample. The receiver then
//! sleeps one interval (`nanosleep`) and releases the sender through the
//! *sync* object, and the cycle repeats. Every wait is bounded
//! ([`WAIT_LIMIT`] beyond the interval): a lost wake-up is an error, never
//! a hang, and neither side ever spins.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::Serialize;

use super::sched::set_fifo;
use crate::measure::clock::monotonic_ns;
use crate::measure::placement::pin_current_thread;

/// Longest a side waits for its peer beyond the interval.
pub const WAIT_LIMIT: Duration = Duration::from_secs(2);

/// Which side of a hand-over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Takes the first timestamp and wakes the receiver.
    Sender,
    /// Woken; takes the second timestamp.
    Receiver,
}

/// A wake-up mechanism: `post(Receiver)` is the measured action on the
/// test object, `post(Sender)` the (unmeasured) release through the sync
/// object.
pub trait Mechanism: Sync {
    /// Runs on each side's thread before the first hand-over.
    fn enter(&self, _side: Side) -> Result<()> {
        Ok(())
    }
    /// Wakes `to` (the caller is the other side).
    fn post(&self, to: Side) -> Result<()>;
    /// Blocks `side` until woken, at most `limit`.
    fn wait(&self, side: Side, limit: Duration) -> Result<()>;
}

/// Placement and scheduling of one hand-over run.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// CPU of both threads.
    pub cpu: usize,
    /// SCHED_FIFO priority of the receiver (the sender runs one below), or
    /// normal scheduling.
    pub fifo: Option<i32>,
    /// Number of hand-overs.
    pub loops: u64,
    /// Receiver's sleep between hand-overs.
    pub interval: Duration,
}

/// Minimum, average and maximum of a latency, microseconds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Latency {
    /// Smallest sample.
    pub min_us: f64,
    /// Mean of all samples.
    pub avg_us: f64,
    /// Largest sample.
    pub max_us: f64,
    /// Number of samples.
    pub samples: u64,
}

impl Latency {
    /// Summarises samples in ns; `None` when there are none.
    pub fn from_ns(samples: &[u64]) -> Option<Latency> {
        let (&min, &max) = (samples.iter().min()?, samples.iter().max()?);
        let sum: u128 = samples.iter().map(|&s| s as u128).sum();
        Some(Latency {
            min_us: min as f64 / 1e3,
            avg_us: sum as f64 / samples.len() as f64 / 1e3,
            max_us: max as f64 / 1e3,
            samples: samples.len() as u64,
        })
    }
}

/// Priority of the sender for a receiver at `p`, as rt-tests set it.
pub fn sender_prio(p: i32) -> i32 {
    if p > 1 {
        p - 1
    } else {
        p
    }
}

/// Runs `setup.loops` hand-overs through `m`.
pub fn run(m: &dyn Mechanism, setup: Setup) -> Result<Latency> {
    anyhow::ensure!(setup.loops > 0, "at least one loop is needed");
    let sent = AtomicU64::new(0);
    let failed = AtomicBool::new(false);
    let barrier = Barrier::new(2);
    let prepare = |side: Side| -> Result<bool> {
        let r = (|| {
            pin_current_thread(setup.cpu)
                .with_context(|| format!("pinning to CPU {}", setup.cpu))?;
            if let Some(p) = setup.fifo {
                set_fifo(if side == Side::Sender {
                    sender_prio(p)
                } else {
                    p
                })?;
            }
            m.enter(side)
        })();
        if r.is_err() {
            failed.store(true, Ordering::SeqCst);
        }
        barrier.wait();
        r?;
        Ok(!failed.load(Ordering::SeqCst))
    };
    let (rx, tx) = std::thread::scope(|s| {
        let rx = s.spawn(|| -> Result<Vec<u64>> {
            if !prepare(Side::Receiver)? {
                return Ok(Vec::new());
            }
            let r = receive(m, setup, &sent);
            if r.is_err() {
                failed.store(true, Ordering::SeqCst);
            }
            r
        });
        let tx = s.spawn(|| -> Result<()> {
            if !prepare(Side::Sender)? {
                return Ok(());
            }
            send(m, setup, &sent)
        });
        (rx.join(), tx.join())
    });
    let rx = rx.unwrap_or_else(|_| Err(anyhow!("the receiver panicked")));
    let tx = tx.unwrap_or_else(|_| Err(anyhow!("the sender panicked")));
    let samples = match (rx, tx) {
        (Ok(s), Ok(())) => s,
        (Err(e), _) | (_, Err(e)) => return Err(e),
    };
    match Latency::from_ns(&samples) {
        Some(l) if l.samples == setup.loops => Ok(l),
        _ => bail!("a thread could not be set up"),
    }
}

/// The receiving side: waits for each hand-over and times it from the
/// sender's stamp in `sent`, sleeps the interval, releases the sender.
fn receive(m: &dyn Mechanism, setup: Setup, sent: &AtomicU64) -> Result<Vec<u64>> {
    let limit = setup.interval + WAIT_LIMIT;
    let mut samples = Vec::with_capacity(setup.loops as usize);
    for i in 0..setup.loops {
        let r = m
            .wait(Side::Receiver, limit)
            .with_context(|| format!("receiver, hand-over {i}"));
        let now = monotonic_ns();
        r?;
        samples.push(now.saturating_sub(sent.load(Ordering::Acquire)));
        if i + 1 < setup.loops {
            std::thread::sleep(setup.interval);
            m.post(Side::Sender)
                .with_context(|| format!("receiver, release {i}"))?;
        }
    }
    Ok(samples)
}

/// The sending side: stamps `sent`, hands over, waits to be released.
fn send(m: &dyn Mechanism, setup: Setup, sent: &AtomicU64) -> Result<()> {
    let limit = setup.interval + WAIT_LIMIT;
    for i in 0..setup.loops {
        sent.store(monotonic_ns(), Ordering::Release);
        m.post(Side::Receiver)
            .with_context(|| format!("sender, hand-over {i}"))?;
        if i + 1 < setup.loops {
            m.wait(Side::Sender, limit)
                .with_context(|| format!("sender, waiting for release {i}"))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_samples() {
        let l = Latency::from_ns(&[1000, 3000, 2000]).unwrap();
        assert_eq!(
            (l.min_us, l.avg_us, l.max_us, l.samples),
            (1.0, 2.0, 3.0, 3)
        );
        assert!(Latency::from_ns(&[]).is_none());
    }

    #[test]
    fn sender_runs_one_below() {
        assert_eq!(sender_prio(80), 79);
        assert_eq!(sender_prio(1), 1);
    }
}

#[cfg(test)]
mod mechanism_tests {
    use super::*;
    use crate::suites::validate::{mutex, pmq, sigwait, svsem};

    /// Every mechanism hands over every time, without FIFO, on one CPU.
    #[test]
    fn every_mechanism_hands_over() {
        let cpu = crate::measure::placement::online_cpus()[0];
        let setup = Setup {
            cpu,
            fifo: None,
            loops: 20,
            interval: Duration::from_micros(100),
        };
        let ms: Vec<(&str, Box<dyn Mechanism>)> = vec![
            ("mutex", Box::new(mutex::MutexHandover::new())),
            ("mq", Box::new(pmq::MqHandover::new().unwrap())),
            ("sem", Box::new(svsem::SemHandover::new().unwrap())),
            ("sig", Box::new(sigwait::SignalHandover::new())),
        ];
        for (name, m) in ms {
            let l = run(m.as_ref(), setup).unwrap_or_else(|e| panic!("{name}: {e:#}"));
            assert_eq!(l.samples, 20, "{name}");
            assert!(
                l.min_us > 0.0 && l.min_us <= l.avg_us && l.avg_us <= l.max_us,
                "{name}: {l:?}"
            );
        }
    }

    /// A wake-up that never comes is an error after the bound, not a hang.
    #[test]
    fn a_lost_wake_up_is_bounded() {
        let m = mutex::MutexHandover::new();
        let t = std::time::Instant::now();
        assert!(m.wait(Side::Receiver, Duration::from_millis(50)).is_err());
        assert!(t.elapsed() < WAIT_LIMIT);
    }
}
