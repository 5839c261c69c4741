//! zbus's (de)serialisation cost alone: building a complete message and
//! parsing it back, with no I/O, no transport and no daemon; and how every
//! library's marshalling is timed ([`per_op_ns`]).

use std::hint::black_box;
use std::time::Instant;

use anyhow::{ensure, Context as _, Result};
use zbus::message::Message;
use zbus::zvariant::serialized::Data;

use super::{bus_name, check, values, INTERFACE, MAX_INTS, METHOD, OBJECT_PATH};

/// Mean nanoseconds per message for zbus to marshal and parse back.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct MarshalCost {
    /// The method call, body `i`: build, then parse header and body.
    pub request_ns: f64,
    /// The method return, body `ai` of numInts values: build, then parse
    /// header and body.
    pub reply_ns: f64,
}

/// Batches a marshalling figure is timed in.
const BATCHES: u32 = 20;

/// Nanoseconds per `op`, run `iterations` times (`op` gets the iteration's
/// index): the median over `BATCHES` batches of each batch's mean, so a
/// batch that another process's time slice fell into (the machine is
/// shared, and the suite runs on `--cpus`) does not weigh on the figure,
/// as it does not on a p50. Every library's marshalling is timed with it.
pub fn per_op_ns(iterations: u32, mut op: impl FnMut(u32) -> Result<()>) -> Result<f64> {
    ensure!(
        iterations > 0,
        "marshal_cost: iterations must be at least 1"
    );
    let batches = BATCHES.min(iterations);
    let mut means = Vec::with_capacity(batches as usize);
    let mut k = 0;
    for b in 0..batches {
        let n = iterations / batches + u32::from(b < iterations % batches);
        let t = Instant::now();
        for _ in 0..n {
            op(k)?;
            k += 1;
        }
        means.push(t.elapsed().as_nanos() as f64 / f64::from(n));
    }
    means.sort_by(f64::total_cmp);
    Ok(means[means.len() / 2])
}

/// Parses `msg`'s bytes back into a message, as a receiver would.
fn reparse(msg: &Message) -> Result<Message> {
    let bytes = msg.data().bytes().to_vec();
    let data = Data::new(bytes, msg.data().context());
    // SAFETY: `from_bytes` is unsafe only because arbitrary bytes may be
    // badly encoded; these are a message zbus itself just encoded, and an
    // encoding error would still be returned as an `Err`, not UB in zbus.
    unsafe { Message::from_bytes(data) }.context("zbus could not parse its own message")
}

/// Times zbus building the `GetInteger(num_ints)` call and its return,
/// `iterations` times each, and parsing each back (header decoded, body
/// deserialized and checked). The answer's values are made once, outside
/// the timing: that is the service's work, not marshalling.
pub fn marshal_cost(num_ints: u32, iterations: u32) -> Result<MarshalCost> {
    ensure!(
        iterations > 0,
        "marshal_cost: iterations must be at least 1"
    );
    ensure!(
        num_ints <= MAX_INTS,
        "marshal_cost: numInts {num_ints} is over {MAX_INTS}"
    );
    let dest = bus_name(0);
    let call = |n: i32| -> Result<Message> {
        Ok(Message::method_call(OBJECT_PATH, METHOD)?
            .destination(dest.as_str())?
            .interface(INTERFACE)?
            .build(&n)?)
    };
    let template = call(num_ints as i32)?;
    let answer = values(num_ints);
    // Checked once, outside the timing: the values survive the round trip.
    let once = reparse(&Message::method_return(&template.header())?.build(&answer)?)?;
    check(num_ints, &once.body().deserialize::<Vec<i32>>()?)?;

    let request_ns = per_op_ns(iterations, |_| {
        let m = call(black_box(num_ints as i32))?;
        let back = reparse(&m)?;
        let h = back.header();
        ensure!(
            h.member().is_some_and(|m| m.as_str() == METHOD),
            "lost the member"
        );
        let n: i32 = back.body().deserialize()?;
        ensure!(n == num_ints as i32, "request body came back as {n}");
        Ok(())
    })?;
    let reply_ns = per_op_ns(iterations, |_| {
        let m = Message::method_return(&template.header())?.build(black_box(&answer))?;
        let back = reparse(&m)?;
        let h = back.header();
        ensure!(h.reply_serial().is_some(), "lost the reply serial");
        let got: Vec<i32> = back.body().deserialize()?;
        ensure!(
            got.len() == answer.len(),
            "reply body came back with {} integers",
            got.len()
        );
        Ok(())
    })?;
    Ok(MarshalCost {
        request_ns,
        reply_ns,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marshal_cost_measures_both_messages() {
        for n in [1, 256, 4096] {
            let c = marshal_cost(n, 20).unwrap();
            assert!(c.request_ns > 0.0 && c.reply_ns > 0.0, "{c:?}");
            eprintln!("marshal_cost({n}): {c:?}");
        }
        assert!(marshal_cost(1, 0).is_err());
    }

    #[test]
    fn per_op_is_the_median_batch_and_runs_every_iteration() {
        let mut seen = Vec::new();
        let ns = per_op_ns(45, |k| {
            seen.push(k);
            // One slow batch (the first) does not move the median.
            if k == 0 {
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(seen, (0..45).collect::<Vec<_>>());
        assert!(ns < 1e6, "{ns}");
        let fails = per_op_ns(3, |k| {
            anyhow::ensure!(k < 2, "stop");
            Ok(())
        });
        assert!(fails.is_err());
        assert!(per_op_ns(0, |_| Ok(())).is_err());
    }
}
