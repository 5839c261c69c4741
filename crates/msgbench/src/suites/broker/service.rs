//! The `GetInteger` service over msgpass. It answers `numInts` integers in
//! the D-Bus `ai` encoding behind a reply header carrying the request's
//! serial, and refuses (with an errno, never a panic) a request that is
//! short, for another service, for another method or out of range.
//!
//! Two ways, as the arrangement needs: [`serve`] answers on a channel of
//! its own (`svc/K`), which `direct` clients call; [`attach`] is how a
//! D-Bus service meets its bus, a client of the msgbench broker, whose
//! every call hands in the result of the last work and takes the next:
//! one system call pair per leg, a send batched with the next receive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Context, Result};
use msgpass::{Channel, Connection, Namespace, Options, Request};

use super::dbus;
use super::proto::{
    read_work, write_result_header, RequestHeader, ATTACH, GET_INTEGER, MAX_INTS, RESULT,
};
use super::router;

/// The endpoint name of service `index` in a run's namespace.
pub fn endpoint(index: u32) -> String {
    format!("svc/{index}")
}

/// Serves service `index` over `transport` in `ns` until `stop` is set.
pub fn serve(
    ns: &Namespace,
    transport: &str,
    index: u32,
    opts: &Options,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let t = msgpass::transport::by_name(transport)?;
    let mut ch = Channel::create(ns, &endpoint(index), &*t, opts)
        .with_context(|| format!("cannot serve {}", endpoint(index)))?;
    ch.set_stop_flag(stop);
    let mut reply = Vec::with_capacity(opts.max_msg);
    while let Some(req) = ch.receive()? {
        // A client gone before its reply is its own business: go on.
        let _ = answer(req, index, &mut reply);
    }
    Ok(())
}

/// Attaches service `index` to the msgbench broker in `ns` over
/// `transport` and does the work it hands out until the broker goes (the
/// run is over) or `stop` is set while no work is under way. With
/// `hang_after` (the fault `hang-service`) it takes that many work items,
/// then holds the next one for ever without answering, as a service that
/// stopped answering does.
pub fn attach(
    ns: &Namespace,
    transport: &str,
    index: u32,
    opts: &Options,
    hang_after: Option<u64>,
    stop: Arc<AtomicBool>,
) -> Result<()> {
    let t = msgpass::transport::by_name(transport)?;
    let mut bus = Connection::open(ns, router::ENDPOINT, &*t, opts)
        .context("cannot reach the msgbench broker")?;
    let mut work = vec![0u8; bus.max_msg()];
    let mut hello = index.to_le_bytes().to_vec();
    hello.extend_from_slice(&std::process::id().to_le_bytes());
    let mut got = bus.call(ATTACH, &hello, &mut work);
    let mut out = Vec::with_capacity(opts.max_msg);
    for taken in 1u64.. {
        let n = match got {
            Ok(n) => n,
            // The broker closed, or is gone: the run is over.
            Err(msgpass::Error::Disconnected) => return Ok(()),
            Err(msgpass::Error::Remote { code }) if code == libc::ESHUTDOWN => return Ok(()),
            Err(e) => return Err(e).context("waiting for work"),
        };
        let (token, cmd, req) =
            read_work(&work[..n]).ok_or_else(|| anyhow!("a work item of {n} bytes"))?;
        if hang_after.is_some_and(|h| taken > h) {
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            return Ok(());
        }
        match check(cmd, req, index) {
            Ok((serial, ints)) => {
                write_result_header(&mut out, token, 0);
                out.extend_from_slice(&serial.to_le_bytes());
                dbus::encode_reply(ints, &mut out);
            }
            Err(errno) => write_result_header(&mut out, token, errno as u32),
        }
        got = bus.call(RESULT, &out, &mut work);
    }
    Ok(())
}

/// Answers one request (or refuses it with an errno).
fn answer(req: Request<'_>, index: u32, reply: &mut Vec<u8>) -> msgpass::Result<()> {
    match check(req.cmd(), req.data(), index) {
        Ok((serial, n)) => {
            reply.clear();
            reply.extend_from_slice(&serial.to_le_bytes());
            dbus::encode_reply(n, reply);
            req.reply(reply)
        }
        Err(errno) => req.reply_error(errno),
    }
}

/// The serial and `numInts` of a well-formed request for service
/// `index`, or the errno refusing it.
pub fn check(cmd: u32, msg: &[u8], index: u32) -> Result<(u64, u32), i32> {
    let (head, body) = RequestHeader::read(msg).ok_or(libc::EBADMSG)?;
    if cmd != GET_INTEGER || head.method != GET_INTEGER {
        return Err(libc::ENOSYS);
    }
    if head.destination != index {
        return Err(libc::EHOSTUNREACH);
    }
    let n = i32::from_le_bytes(body.try_into().map_err(|_| libc::EBADMSG)?);
    match u32::try_from(n) {
        Ok(n) if n <= MAX_INTS => Ok((head.serial, n)),
        _ => Err(libc::EINVAL),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(dest: u32, method: u32, body: &[u8]) -> Vec<u8> {
        let mut m = Vec::new();
        RequestHeader {
            destination: dest,
            method,
            serial: 77,
        }
        .write(&mut m);
        m.extend_from_slice(body);
        m
    }

    #[test]
    fn only_a_well_formed_request_for_this_service_is_answered() {
        let ok = request(2, GET_INTEGER, &5i32.to_le_bytes());
        assert_eq!(check(GET_INTEGER, &ok, 2), Ok((77, 5)));
        assert_eq!(check(GET_INTEGER, &ok, 3), Err(libc::EHOSTUNREACH));
        assert_eq!(check(9, &ok, 2), Err(libc::ENOSYS));
        assert_eq!(check(GET_INTEGER, &ok[..10], 2), Err(libc::EBADMSG));
        let neg = request(2, GET_INTEGER, &(-1i32).to_le_bytes());
        assert_eq!(check(GET_INTEGER, &neg, 2), Err(libc::EINVAL));
        let big = request(2, GET_INTEGER, &((MAX_INTS + 1) as i32).to_le_bytes());
        assert_eq!(check(GET_INTEGER, &big, 2), Err(libc::EINVAL));
        let long = request(2, GET_INTEGER, &[0; 8]);
        assert_eq!(check(GET_INTEGER, &long, 2), Err(libc::EBADMSG));
    }
}
