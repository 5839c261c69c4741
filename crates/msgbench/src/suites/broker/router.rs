//! The msgbench broker: clients call it, it calls the service a request
//! names and hands the reply back. It reads only the fixed header
//! ([`RequestHeader`]): destination to pick the service, nothing else;
//! the body goes from the client's message straight into the call to
//! the service (one copy per leg, no buffer of ours in between), and the
//! reply from the service's message into the client's. With `validate`
//! it also decodes every request and reply body in the D-Bus wire format
//! with the D-Bus library, as a daemon that validates would.
//!
//! It times itself: from the moment a request is in hand to the call
//! onward, and from the service's reply to the reply sent back. That sum
//! per call is the broker's own routing time ([`RouterStats`]).
//!
//! One thread, like dbus-daemon: requests are routed one at a time. A
//! service that dies gets its caller an error (`EHOSTUNREACH`, as soon as
//! msgpass notices: at once on sockets, within its liveness tick on shared
//! memory) and is dropped; a later request for it is refused (`ENOENT`)
//! unless it is served again. A client that dies only loses its reply.

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use msgpass::{Channel, Connection, Namespace, Options, Request, Transport};
use serde::{Deserialize, Serialize};

use super::dbus;
use super::proto::{read_reply, RequestHeader};
use super::service::endpoint;
use crate::measure::clock::Clock;

/// The broker's endpoint name in a run's namespace.
pub const ENDPOINT: &str = "bus";

/// What the broker measured of itself, printed as one JSON line when it
/// stops.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouterStats {
    /// Calls routed to a service and answered.
    pub routed: u64,
    /// Requests refused or failed (no such service, service gone, bad
    /// header, invalid body).
    pub refused: u64,
    /// The broker's own time over all routed calls, ns: request in hand
    /// to call onward, plus service's reply in hand to reply handed back
    /// (validation included, the sends not).
    pub routing_ns: f64,
    /// Of that, the time spent validating bodies, ns.
    pub validate_ns: f64,
}

/// The routing broker.
pub struct Router {
    ns: Namespace,
    transport: Box<dyn Transport>,
    opts: Options,
    services: Vec<Option<Connection>>,
    validate: bool,
    clock: Clock,
    stats: RouterStats,
}

impl Router {
    /// Connects to services `0..services` (waiting for each as `opts`
    /// says), ready to route.
    pub fn connect(
        ns: &Namespace,
        transport: &str,
        services: u32,
        validate: bool,
        opts: &Options,
    ) -> Result<Router> {
        let t = msgpass::transport::by_name(transport)?;
        let conns = (0..services)
            .map(|k| {
                Connection::open(ns, &endpoint(k), &*t, opts)
                    .map(Some)
                    .with_context(|| format!("cannot reach service {}", endpoint(k)))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(Router {
            ns: ns.clone(),
            transport: t,
            opts: Options {
                wait: None,
                ..opts.clone()
            },
            services: conns,
            validate,
            clock: Clock::best(),
            stats: RouterStats::default(),
        })
    }

    /// Serves the broker endpoint until `stop` is set; returns what it
    /// measured.
    pub fn serve(mut self, stop: Arc<AtomicBool>) -> Result<RouterStats> {
        let mut ch = Channel::create(&self.ns, ENDPOINT, &*self.transport, &self.opts)
            .context("cannot serve the broker endpoint")?;
        ch.set_stop_flag(stop);
        let mut reply = vec![0u8; ch.max_msg()];
        while let Some(req) = ch.receive()? {
            self.route(req, &mut reply);
        }
        Ok(self.stats)
    }

    /// Routes one request, or refuses it.
    fn route(&mut self, req: Request<'_>, reply: &mut [u8]) {
        let t0 = self.clock.now();
        let mut checked = 0u64;
        let Some((head, body)) = RequestHeader::read(req.data()) else {
            return self.refuse(req, libc::EBADMSG);
        };
        if self.validate {
            let v0 = self.clock.now();
            let ok = dbus::validate_request_body(body).is_ok();
            checked += self.clock.now() - v0;
            if !ok {
                return self.refuse(req, libc::EBADMSG);
            }
        }
        let clock = self.clock;
        let Some(conn) = self.service(head.destination) else {
            return self.refuse(req, libc::ENOENT);
        };
        let t1 = clock.now();
        let result = conn.call(req.cmd(), req.data(), reply);
        let t2 = clock.now();
        let n = match result {
            Ok(n) => n,
            Err(msgpass::Error::Remote { code }) => return self.refuse(req, code),
            Err(_) => {
                self.services[head.destination as usize] = None;
                return self.refuse(req, libc::EHOSTUNREACH);
            }
        };
        if self.validate {
            let v0 = self.clock.now();
            let ok =
                read_reply(&reply[..n]).is_some_and(|(_, b)| dbus::validate_reply_body(b).is_ok());
            checked += self.clock.now() - v0;
            if !ok {
                return self.refuse(req, libc::EBADMSG);
            }
        }
        let t3 = self.clock.now();
        // A client gone meanwhile only loses its reply.
        let _ = req.reply(&reply[..n]);
        self.stats.routed += 1;
        self.stats.routing_ns += self.clock.ticks_to_ns((t1 - t0) + (t3 - t2));
        self.stats.validate_ns += self.clock.ticks_to_ns(checked);
    }

    /// The connection to service `k`, reconnecting once if it was lost
    /// (a service served again); `None` when there is no such service.
    fn service(&mut self, k: u32) -> Option<&mut Connection> {
        let slot = self.services.get_mut(k as usize)?;
        if slot.is_none() {
            *slot = Connection::open(&self.ns, &endpoint(k), &*self.transport, &self.opts).ok();
        }
        slot.as_mut()
    }

    fn refuse(&mut self, req: Request<'_>, errno: i32) {
        self.stats.refused += 1;
        let _ = req.reply_error(errno);
    }
}
