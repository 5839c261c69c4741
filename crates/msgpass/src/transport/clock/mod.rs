//! Time as the transports use it: alarms that end a blocking wait at a
//! deadline (`alarm`), and the pacing of spin loops (`pace`).

pub(crate) mod alarm;
pub(crate) mod pace;
