//! sd-bus's (de)serialisation cost alone: each message built, appended
//! to and sealed (`sd_bus_message_seal`: its header and body laid out in
//! wire format), then rewound and read back (`sd_bus_message_rewind`,
//! `sd_bus_message_read_*`), with no I/O and no daemon. sd-bus has no
//! public call that parses a message from bytes, so the header's parse
//! on receipt is not in it (the body's is: reading walks and checks the
//! wire-format body). Messages need a started bus object: one end of a
//! socket pair, never read or written after its handshake begins.

use std::hint::black_box;
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;

use anyhow::{ensure, Result};

use super::{ok, Bus, Message};
use crate::suites::broker::dbus::marshal::per_op_ns;
use crate::suites::broker::dbus::{bus_name, check, values, MarshalCost, MAX_INTS};

/// Seals `m` with cookie `cookie` and rewinds it for reading, as a
/// received message is read.
fn seal_and_rewind(m: &Message, cookie: u64) -> Result<()> {
    // SAFETY: a live, unsealed message.
    ok("sd_bus_message_seal", unsafe {
        m.api.f.sd_bus_message_seal(m.as_ptr(), cookie, 0)
    })?;
    // SAFETY: a live, sealed message.
    ok("sd_bus_message_rewind", unsafe {
        m.api.f.sd_bus_message_rewind(m.as_ptr(), 1)
    })?;
    Ok(())
}

/// The single `i` of a sealed, rewound message.
fn read_i32(m: &Message) -> Result<i32> {
    let mut n = 0i32;
    // SAFETY: a live, sealed message; `i` is read into an i32.
    ok("reading numInts", unsafe {
        m.api
            .f
            .sd_bus_message_read_basic(m.as_ptr(), b'i' as _, (&mut n as *mut i32).cast())
    })?;
    Ok(n)
}

/// Times sd-bus building the `GetInteger(num_ints)` call and its return,
/// `iterations` times each, sealing each and reading it back (the body
/// checked). The answer's values are made once, outside the timing: that
/// is the service's work, not marshalling.
pub fn marshal_cost(num_ints: u32, iterations: u32) -> Result<MarshalCost> {
    ensure!(
        iterations > 0,
        "marshal_cost: iterations must be at least 1"
    );
    ensure!(
        num_ints <= MAX_INTS,
        "marshal_cost: numInts {num_ints} is over {MAX_INTS}"
    );
    let api = super::api()?;
    let (ours, _peer) = UnixStream::pair()?;
    let bus = Bus::on_socket(api, OwnedFd::from(ours), None)?;
    let dest = std::ffi::CString::new(bus_name(0))?;
    let template = Message::get_integer_call(&bus, Some(&dest), num_ints as i32)?;
    seal_and_rewind(&template, 1)?;
    let answer = values(num_ints);
    // Checked once, outside the timing: the values survive the round trip.
    let once = Message::get_integer_return(api, template.as_ptr(), &answer)?;
    seal_and_rewind(&once, 2)?;
    once.with_ints("the reply", |got| check(num_ints, got))??;

    let request_ns = per_op_ns(iterations, |k| {
        let m = Message::get_integer_call(&bus, Some(&dest), black_box(num_ints as i32))?;
        seal_and_rewind(&m, u64::from(k) + 1)?;
        let n = read_i32(&m)?;
        ensure!(n == num_ints as i32, "request body came back as {n}");
        Ok(())
    })?;
    let reply_ns = per_op_ns(iterations, |k| {
        let m = Message::get_integer_return(api, template.as_ptr(), black_box(&answer))?;
        seal_and_rewind(&m, u64::from(k) + 2)?;
        ensure!(m.reply_cookie()? == 1, "lost the reply cookie");
        let got = m.with_ints("the reply", <[i32]>::len)?;
        ensure!(
            got == answer.len(),
            "reply body came back with {got} integers"
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
        if super::super::loaded_or_skip().is_none() {
            return;
        }
        for n in [0, 1, 4096] {
            let c = marshal_cost(n, 20).unwrap();
            assert!(c.request_ns > 0.0 && c.reply_ns > 0.0, "{c:?}");
        }
        assert!(marshal_cost(1, 0).is_err());
        assert!(marshal_cost(MAX_INTS + 1, 1).is_err());
    }
}
