//! Why a row ended without figures ([`Stop`]), and the row it leaves.

use super::row::{Row, Status};
use super::server_error::ServerError;

/// Why a row ended without figures.
#[derive(Debug)]
pub enum Stop {
    /// The transport cannot carry the size: its maximum.
    NotApplicable(usize),
    /// The client could not be set up (pin or connect): one-line reason.
    Skipped(String),
    /// A call failed or a reply was wrong.
    Failed(String),
    /// SIGINT/SIGTERM.
    Interrupted,
}

impl Stop {
    /// What happened, in a few words.
    pub fn reason(&self) -> String {
        match self {
            Stop::NotApplicable(max) => format!("messages of at most {max} bytes"),
            Stop::Skipped(r) | Stop::Failed(r) => r.clone(),
            Stop::Interrupted => "interrupted".into(),
        }
    }
}

/// The row ended by `stop` before it had figures, the server's stop
/// (`stopped`) added to a failure's reason.
pub fn conclude_stop(
    mut row: Row,
    transport: &str,
    stop: Stop,
    stopped: Result<(), ServerError>,
) -> Row {
    let reason = |r: String| match &stopped {
        Err(e) => format!("{r}; {e}"),
        Ok(()) => r,
    };
    match stop {
        Stop::NotApplicable(max) => {
            row.max_msg = Some(max);
            row.end(
                Status::NotApplicable,
                format!("{transport} max message {max} bytes"),
            )
        }
        Stop::Skipped(r) => row.end(Status::Skipped, r),
        Stop::Failed(r) => row.end(Status::Failed, reason(r)),
        Stop::Interrupted => row.end(Status::Interrupted, "interrupted"),
    }
}
