//! The broker suite: `GetInteger(in i numInts, out ai intData)` called
//! directly, through a broker, and over real D-Bus.

pub mod dbus;
