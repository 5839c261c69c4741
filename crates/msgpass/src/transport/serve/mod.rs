//! The message-passing core and its servers: the Core / worker shape and
//! the relay pool (`core`), what every server shares (`server`), the
//! reactor that serves every descriptor-driven transport (`reactor`), its
//! wait sets and connection table (`sets`, `slab`), a connection's kernel objects and the
//! transport built on them (`mechanism`), priority inheritance (`priority`), the one
//! client of the descriptor-driven transports (`client`), the owed late
//! reply (`owed`) and a pool's homes (`homes`). Uses `wire`, `mem` and `clock`; the mechanisms use it.

pub(crate) mod client;
pub(crate) mod core;
pub(crate) mod homes;
pub(crate) mod mechanism;
pub(crate) mod owed;
pub mod priority;
pub(crate) mod reactor;
pub(crate) mod server;
pub(crate) mod sets;
pub(crate) mod slab;
