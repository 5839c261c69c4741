//! How a message crosses and how a client meets its server: framing
//! (`framing`: the `Wire` trait, stream and datagram wires), the Unix
//! rendezvous and its versioned hello (`rendezvous`), the message areas in
//! shared memory of the eventfd, io-uring and signal wires (`areas`), the
//! doorman that says a client connected (`doorman`), and the poker that ends a wait on a pipe
//! or eventfd wire (`poker`). Uses `mem` and `clock`, never `serve`.

pub(crate) mod areas;
pub(crate) mod doorman;
pub(crate) mod framing;
pub(crate) mod poker;
pub(crate) mod rendezvous;
