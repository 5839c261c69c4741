//! libdbus's (de)serialisation cost alone: each message built and
//! appended to, marshalled to its wire bytes (`dbus_message_marshal`),
//! parsed back from them (`dbus_message_demarshal`, which validates the
//! header and body as a receiving connection's loader does) and read,
//! with no I/O, no transport and no daemon.

use std::hint::black_box;
use std::os::raw::{c_char, c_int};
use std::ptr;

use anyhow::{anyhow, ensure, Result};

use super::ffi::Api;
use super::msg::{Error, Msg};
use crate::suites::broker::dbus::marshal::per_op_ns;
use crate::suites::broker::dbus::{bus_name, check, values, MarshalCost, MAX_INTS};

/// `msg`'s wire bytes parsed back into a new message, as a receiver
/// would; `msg` gets serial `serial` first (a sent message has one).
fn round_trip(api: &'static Api, msg: &Msg, serial: u32) -> Result<Msg> {
    let mut bytes: *mut c_char = ptr::null_mut();
    let mut len: c_int = 0;
    // SAFETY: a live message; marshal allocates the bytes (freed below
    // with dbus_free) and sets their length.
    let ok = unsafe {
        api.dbus_message_set_serial(msg.as_ptr(), serial);
        api.dbus_message_marshal(msg.as_ptr(), &mut bytes, &mut len)
    };
    if ok == 0 || bytes.is_null() {
        return Err(anyhow!("dbus_message_marshal: out of memory"));
    }
    let mut err = Error::new(api);
    // SAFETY: `bytes` holds `len` bytes from dbus_message_marshal; they
    // are copied by demarshal and freed once, after it.
    let back = unsafe {
        let m = api.dbus_message_demarshal(bytes, len, err.as_ptr());
        api.dbus_free(bytes.cast());
        m
    };
    Msg::own(api, back).ok_or_else(|| anyhow!(err.text("dbus_message_demarshal")))
}

/// The call to `GetInteger(n)`, as the client builds it on a bus.
fn call(api: &'static Api, dest: &std::ffi::CStr, n: i32) -> Result<Msg> {
    let mut m = Msg::get_integer_call(api, Some(dest))?;
    m.append_i32(n)?;
    Ok(m)
}

/// Times libdbus building the `GetInteger(num_ints)` call and its return,
/// `iterations` times each, marshalling each and parsing it back (header
/// and body validated, the body read). The answer's values are made once,
/// outside the timing: that is the service's work, not marshalling.
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
    let dest = std::ffi::CString::new(bus_name(0))?;
    let template = round_trip(api, &call(api, &dest, num_ints as i32)?, 1)?;
    let answer = values(num_ints);
    // Checked once, outside the timing: the values survive the round trip.
    let mut once = Msg::method_return(&template)?;
    once.append_ints(&answer)?;
    round_trip(api, &once, 2)?.with_ints("the reply", |got| check(num_ints, got))??;

    let request_ns = per_op_ns(iterations, |k| {
        let back = round_trip(api, &call(api, &dest, black_box(num_ints as i32))?, k + 1)?;
        let n = back.read_i32("the call")?;
        ensure!(n == num_ints as i32, "request body came back as {n}");
        Ok(())
    })?;
    let reply_ns = per_op_ns(iterations, |k| {
        let mut m = Msg::method_return(&template)?;
        m.append_ints(black_box(&answer))?;
        let back = round_trip(api, &m, k + 1)?;
        ensure!(back.reply_serial() == 1, "lost the reply serial");
        let got = back.with_ints("the reply", <[i32]>::len)?;
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
