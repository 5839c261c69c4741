//! The one error type of msgpass. Every variant says what went wrong and,
//! where there is one, what to do about it.

use std::io;
use std::path::PathBuf;

/// Errors returned by msgpass operations.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The endpoint namespace directory cannot be used safely.
    #[error("namespace {path}: {reason}")]
    Namespace {
        /// The directory at fault.
        path: PathBuf,
        /// Why it was refused, with the fix where there is one.
        reason: String,
    },

    /// An endpoint name is not a plain relative path like `adder/0`.
    #[error("invalid endpoint name {name:?}: {reason}")]
    BadName {
        /// The name as given.
        name: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// No server is listening at the endpoint.
    #[error("no server at {}", path.display())]
    NotFound {
        /// Where the endpoint was looked for.
        path: PathBuf,
    },

    /// Another live process already serves this endpoint.
    #[error("{} is already served by {}", path.display(), match pid { Some(p) => format!("pid {p}"), None => "another process".to_string() })]
    AlreadyServed {
        /// The endpoint.
        path: PathBuf,
        /// The serving process, when known.
        pid: Option<i32>,
    },

    /// The endpoint is served with a different transport than requested.
    /// Connect with a transport of the server's family (see
    /// `transport::by_name`).
    #[error("{} is served over transport {found}, not {expected}", path.display())]
    WrongTransport {
        /// The endpoint.
        path: PathBuf,
        /// Transport family the client asked for.
        expected: &'static str,
        /// Transport family the server uses.
        found: String,
    },

    /// The transport name is not one msgpass knows.
    #[error("unknown transport {name:?} (known: {known})")]
    UnknownTransport {
        /// The name as given.
        name: String,
        /// Comma-separated list of valid names.
        known: String,
    },

    /// A message exceeds what the channel carries.
    #[error("message of {len} bytes exceeds the channel maximum of {max} bytes")]
    TooLarge {
        /// Size of the message.
        len: usize,
        /// The channel's maximum.
        max: usize,
    },

    /// The reply does not fit the buffer the caller gave.
    #[error("reply of {len} bytes does not fit the {cap}-byte reply buffer")]
    ReplyTooLarge {
        /// Size of the reply.
        len: usize,
        /// Capacity of the caller's buffer.
        cap: usize,
    },

    /// The server answered the request with an error code (an errno value).
    #[error("server replied with error {code} ({})", io::Error::from_raw_os_error(*code))]
    Remote {
        /// The errno-style code the server replied with.
        code: i32,
    },

    /// The transport cannot do what was asked (like one-way messages over
    /// a transport whose channel holds one message at a time).
    #[error("transport {transport} does not support {what}")]
    Unsupported {
        /// What was asked for.
        what: &'static str,
        /// The transport's name.
        transport: &'static str,
    },

    /// A reserved command code: the top bit marks one-way messages on the
    /// wire, 0x7fff_fffe ([`PULSE`](crate::PULSE)) pulses, 0x7fff_fffd and
    /// 0x7fff_ffff the wire's own control messages (from
    /// [`RESERVED`](crate::RESERVED) up), so `call` and `send_oneway`
    /// refuse them.
    #[error("command {cmd:#x} is reserved (the top bit marks one-way messages, 0x7fff_fffd and up are the library's): use a code below 0x7fff_fffd")]
    ReservedCommand {
        /// The command code as given.
        cmd: u32,
    },

    /// [`Options::inherit_priority`](crate::Options::inherit_priority) was
    /// asked for where it cannot be given (the transport cannot name its
    /// callers, or this process may not use SCHED_FIFO).
    #[error("inherit_priority: {reason}")]
    NoInheritance {
        /// Why, and where it works.
        reason: String,
    },

    /// A pool of threads of a size it cannot have.
    #[error("a pool of {threads} threads: must be 1 to {max}")]
    BadPool {
        /// The size asked for.
        threads: usize,
        /// The largest pool.
        max: usize,
    },

    /// A remote server ([`Channel::listen_tcp`](crate::Channel::listen_tcp)
    /// with [`Options::token`](crate::Options::token)) let this client
    /// in only with its token, and it gave none or another.
    #[error("{} refused this client: {reason}", path.display())]
    Refused {
        /// The server, `tcp://ADDR:PORT`.
        path: PathBuf,
        /// Why: no token given, or the wrong one.
        reason: &'static str,
    },

    /// Text that is not a [`Token`](crate::Token) (the text itself is never
    /// repeated: it may be a mistyped secret).
    #[error("bad token: {reason}")]
    BadToken {
        /// What is wrong with it.
        reason: &'static str,
    },

    /// The peer went away (server died or closed the channel; client died).
    #[error("the peer closed the connection")]
    Disconnected,

    /// A call was not answered within its deadline
    /// ([`Connection::set_timeout`](crate::Connection::set_timeout),
    /// [`Connection::call_timeout`](crate::Connection::call_timeout)). The
    /// server may still carry the request out: its late reply is
    /// discarded, never taken as the answer to a later call.
    #[error("no reply within {timeout:?}")]
    TimedOut {
        /// The time the call was given.
        timeout: std::time::Duration,
    },

    /// A call timeout of zero: a call needs some time.
    #[error("a call timeout must be more than zero")]
    BadTimeout,

    /// A server already holds as many deferred requests as it may
    /// ([`Options::max_held`](crate::Options::max_held)): the request was
    /// answered `EAGAIN` instead.
    #[error("{max} requests are held already (Options::max_held): answered EAGAIN")]
    HeldLimit {
        /// The limit.
        max: usize,
    },

    /// A pulse found the connection's queue full (the server is not
    /// taking messages as fast as they come): it was not sent.
    #[error("the server's queue is full: pulse not sent")]
    PulseQueueFull,

    /// The peer broke the wire protocol.
    #[error("protocol error: {0}")]
    Protocol(String),

    /// A system call failed.
    #[error("{op}: {source}")]
    Io {
        /// What was being done.
        op: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl Error {
    /// Wraps an I/O error with a description of the operation.
    pub(crate) fn io(op: impl Into<String>, source: io::Error) -> Error {
        Error::Io {
            op: op.into(),
            source,
        }
    }

    /// [`Error::Unsupported`] from a transport's own code, which does not
    /// know its name (the [`Connection`](crate::Connection) or
    /// [`Channel`](crate::Channel) above names it).
    pub(crate) fn unsupported(what: &'static str) -> Error {
        Error::Unsupported {
            what,
            transport: "this transport",
        }
    }

    /// A reply (or a deferral) with no request received and unanswered:
    /// the one constructor for it, whichever server family answers.
    pub(crate) fn no_request() -> Error {
        Error::Protocol("reply without a request".into())
    }
}

/// Result alias for msgpass operations.
pub type Result<T, E = Error> = std::result::Result<T, E>;
