//! zbus's (de)serialisation cost alone: building a complete message and
//! parsing it back, with no I/O, no transport and no daemon.

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
    check(num_ints, &once.body().deserialize::<Vec<i32>>()?).map_err(anyhow::Error::msg)?;

    let t = Instant::now();
    for _ in 0..iterations {
        let m = call(black_box(num_ints as i32))?;
        let back = reparse(&m)?;
        let h = back.header();
        ensure!(
            h.member().is_some_and(|m| m.as_str() == METHOD),
            "lost the member"
        );
        let n: i32 = back.body().deserialize()?;
        ensure!(n == num_ints as i32, "request body came back as {n}");
    }
    let request_ns = t.elapsed().as_nanos() as f64 / f64::from(iterations);

    let t = Instant::now();
    for _ in 0..iterations {
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
    }
    let reply_ns = t.elapsed().as_nanos() as f64 / f64::from(iterations);
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
}
