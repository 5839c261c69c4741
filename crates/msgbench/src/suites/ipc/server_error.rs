//! Why a row's server thread (or its idle clients) did not start or
//! stop cleanly; the Display is the row's skip or failure reason.

use std::time::Duration;

use crate::measure::placement::PlacementError;

/// What went wrong with a row's server thread.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The thread could not be pinned to its CPU.
    #[error("server thread: {0}")]
    Pin(#[from] PlacementError),
    /// The transport is not known to msgpass.
    #[error("{0}")]
    Transport(msgpass::Error),
    /// The thread could not be spawned.
    #[error("cannot start a server thread: {0}")]
    Spawn(std::io::Error),
    /// It did not report a channel in time.
    #[error("the server did not start within {} s", .0.as_secs())]
    StartTimeout(Duration),
    /// The channel could not be made.
    #[error("cannot serve: {0}")]
    Serve(msgpass::Error),
    /// It did not stop in time.
    #[error("the server thread did not stop within {} s", .0.as_secs_f64())]
    StopTimeout(Duration),
    /// It panicked.
    #[error("the server thread panicked")]
    Panicked,
    /// A receive failed.
    #[error("server: receive: {0}")]
    Receive(msgpass::Error),
    /// The reply to the client's stop failed.
    #[error("server: reply to stop: {0}")]
    ReplyStop(msgpass::Error),
    /// A reply failed.
    #[error("server: reply to command {cmd} ({len} bytes): {source}")]
    Reply {
        /// The request's command.
        cmd: u32,
        /// Its length in bytes.
        len: usize,
        /// Why.
        source: msgpass::Error,
    },
    /// Idle clients did not exit cleanly (one reason each).
    #[error("idle clients: {}", .0.join("; "))]
    IdleClients(Vec<String>),
    /// The server process (`--layout process`) said so, or did not say
    /// what it should have.
    #[error("{0}")]
    Process(String),
    /// Two of these, in the order they happened.
    #[error("{0}; {1}")]
    Both(Box<ServerError>, Box<ServerError>),
}
