//! Pulses (QNX `MsgSendPulse`): small fixed-size notifications, an 8-bit
//! code and a 32-bit value, that never block their sender.
//!
//! A pulse travels as a one-way message on the connection's own path, so
//! it arrives at [`Channel::receive`](crate::Channel::receive) in order
//! with the calls of the same connection: a call made after a pulse is
//! received after it. On the wire it is the reserved command [`PULSE`]
//! with the [`ONEWAY`] bit and an 8-byte payload ([`Pulse::encode`]); a
//! server drops a connection that sends a malformed one.
//!
//! **Bounded.** A pulse is sent only if the connection's path has room for
//! it now; otherwise [`Connection::send_pulse`](crate::Connection::send_pulse)
//! returns [`Error::PulseQueueFull`](crate::Error::PulseQueueFull) and
//! nothing is queued, so a sender never waits for a slow or stuck server
//! and no queue grows without bound. Where the room is depends on the
//! transport (see [`Connection::send_pulse`](crate::Connection::send_pulse)).

use crate::transport::api::ONEWAY;

/// The command code of a pulse on the wire (with [`ONEWAY`]): reserved,
/// like every code from [`RESERVED`] up (0x7fff_ffff is the wire's CPU
/// hint, 0x7fff_fffd a client's calling thread), so
/// [`Connection::call`](crate::Connection::call) and
/// [`Connection::send_oneway`](crate::Connection::send_oneway) refuse them.
pub const PULSE: u32 = 0x7fff_fffe;

/// The command code (with [`ONEWAY`]) by which the client library names
/// its calling thread to a server with priority inheritance.
pub(crate) const CALLER: u32 = 0x7fff_fffd;

/// The first command code reserved to the library: codes from it up are
/// refused by [`Connection::call`](crate::Connection::call) and
/// [`Connection::send_oneway`](crate::Connection::send_oneway).
pub const RESERVED: u32 = CALLER;

pub(crate) use crate::transport::api::PULSE_LEN;

/// A pulse: what the sender says (`code`) and a value that goes with it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pulse {
    /// What the pulse means, the application's choice (QNX: its code).
    pub code: u8,
    /// A value that goes with it.
    pub value: u32,
}

impl Pulse {
    /// The pulse's payload on the wire: the code, three zero bytes, the
    /// value (little-endian).
    pub(crate) fn encode(self) -> [u8; PULSE_LEN] {
        let mut b = [0u8; PULSE_LEN];
        b[0] = self.code;
        b[4..].copy_from_slice(&self.value.to_le_bytes());
        b
    }

    /// The pulse a payload holds; `None` when it is not one (wrong length,
    /// or the bytes that must be zero are not).
    pub(crate) fn decode(payload: &[u8]) -> Option<Pulse> {
        let b: [u8; PULSE_LEN] = payload.try_into().ok()?;
        if b[1..4] != [0, 0, 0] {
            return None;
        }
        Some(Pulse {
            code: b[0],
            value: u32::from_le_bytes(b[4..].try_into().ok()?),
        })
    }
}

/// The pulse a received request is, if it is one.
pub(crate) fn pulse_of(head: crate::transport::api::Incoming, data: &[u8]) -> Option<Pulse> {
    match head.oneway && head.cmd == PULSE {
        true => Pulse::decode(data),
        false => None,
    }
}

/// True for a wire command code that is a pulse.
pub(crate) fn is_pulse(code: u32) -> bool {
    code == PULSE | ONEWAY
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pulse_round_trips_and_anything_else_is_refused() {
        let p = Pulse {
            code: 200,
            value: 0xdead_beef,
        };
        assert_eq!(Pulse::decode(&p.encode()), Some(p));
        assert_eq!(Pulse::decode(&[0; 7]), None);
        assert_eq!(Pulse::decode(&[0; 9]), None);
        let mut bad = p.encode();
        bad[2] = 1;
        assert_eq!(Pulse::decode(&bad), None);
        assert!(is_pulse(PULSE | ONEWAY));
        assert!(!is_pulse(PULSE));
        assert!(!is_pulse(ONEWAY | 1));
    }
}
