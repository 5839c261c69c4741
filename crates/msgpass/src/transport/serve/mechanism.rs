//! Wire mechanisms: the Linux IPC mechanisms whose connection is a two-way
//! message channel (pipes, socket pairs, queues...) made per client and
//! handed over through the rendezvous. A [`Mechanism`] says how to make a
//! connection's objects on each side; [`WireTransport`] makes a transport
//! of it, served by the [`Reactor`] and called through the [`WireClient`].
//!
//! Liveness: a mechanism whose receive reports a dead peer by itself (a pipe
//! or stream socket reads EOF) says so with [`Mechanism::EOF_ON_DEATH`];
//! otherwise both sides also watch the rendezvous session socket, whose
//! hang-up means the peer died.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::transport::api::{ClientConnection, Options, ServerChannel, Transport};
use crate::transport::serve::client::{Traits, WireClient};
use crate::transport::serve::reactor::{self, Acceptor, Conn, Setup};
use crate::transport::serve::server::{greeted, refuse};
use crate::transport::wire::framing::Wire;
use crate::transport::wire::rendezvous::{self, Family, Listener};

/// What a mechanism knows about the connection it is making.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnCtx<'a> {
    /// The endpoint's path (for mechanisms that name things beside it).
    pub(crate) endpoint: &'a Path,
    /// A number unique among this server's connections.
    pub(crate) conn: u64,
}

/// A mechanism: how to make a connection's two wires.
pub(crate) trait Mechanism: Send + Sync + Clone + std::fmt::Debug + 'static {
    /// The wire type.
    type W: Wire + 'static;
    /// Rendezvous family (so a client of another mechanism is refused).
    const FAMILY: Family;
    /// True when [`Wire::recv`] returns `None` once the peer has died.
    const EOF_ON_DEATH: bool;
    /// Pulses a client may send between two replies, where the path would
    /// drop a message silently when full instead of refusing it (udp: a
    /// full receive buffer drops the datagram, a call's among them);
    /// `None` where a full path refuses a pulse by itself.
    const PULSE_CREDIT: Option<u32> = None;
    /// True when the server keeps the client's rendezvous session, whose
    /// hang-up says the client died: by default where the wire does not
    /// say so itself (a wire that does needs one descriptor less).
    const KEEP_SESSION: bool = !Self::EOF_ON_DEATH;
    /// The largest payload this mechanism carries when `requested` is asked
    /// for (a mechanism with a lower limit lowers it; clients learn it from
    /// the hello).
    fn max_msg(&self, requested: usize) -> usize {
        requested
    }
    /// Makes a new connection's objects: the server's wire, the descriptors
    /// and extra hello bytes that let the client make its own.
    fn server_side(
        &self,
        ctx: ConnCtx<'_>,
        opts: &Options,
    ) -> io::Result<(Self::W, Vec<OwnedFd>, Vec<u8>)>;
    /// Makes the client's wire from what the server passed.
    fn client_side(&self, fds: Vec<OwnedFd>, extra: &[u8], opts: &Options) -> io::Result<Self::W>;
}

/// A [`Transport`] made of a [`Mechanism`].
#[derive(Debug, Clone)]
pub(crate) struct WireTransport<M: Mechanism> {
    pub(crate) mech: M,
    /// Its name in the transport table.
    pub(crate) name: &'static str,
    /// True when its connections carry one-way messages (the table says).
    pub(crate) oneway: bool,
}

impl<M: Mechanism> Transport for WireTransport<M> {
    fn name(&self) -> &'static str {
        self.name
    }

    fn max_msg(&self, requested: usize) -> usize {
        self.mech.max_msg(requested)
    }

    fn serve(&self, path: &Path, opts: &Options) -> Result<Box<dyn ServerChannel>> {
        let mut opts = opts.clone();
        opts.max_msg = self.mech.max_msg(opts.max_msg);
        let listener = Listener::bind(path, M::FAMILY, opts.max_msg)?;
        let serving = opts.clone();
        let acceptor = MechAcceptor {
            mech: self.mech.clone(),
            endpoint: path.to_path_buf(),
            next_conn: 0,
            opts,
        };
        Ok(Box::new(reactor::serve(
            acceptor,
            Some(listener),
            &serving,
        )?))
    }

    fn connect(&self, path: &Path, opts: &Options) -> Result<Box<dyn ClientConnection>> {
        let (session, hello, fds) = rendezvous::connect(path, M::FAMILY, opts)?;
        let wire = self
            .mech
            .client_side(fds, &hello.extra, opts)
            .map_err(|e| Error::io(format!("{}: set up the client side", self.name), e))?;
        let traits = Traits {
            eof_on_death: M::EOF_ON_DEATH,
            oneway: self.oneway,
            pulse_credit: M::PULSE_CREDIT,
        };
        let mut client = WireClient::new(wire, Some(session), hello.max_msg, opts.tick, traits);
        // A server cannot look at a message waiting on these wires before
        // it takes it: the connecting thread is named now, so that a
        // server with priority inheritance knows who a first call is from
        // if it arrives while the server is busy (boost on arrival).
        client.name_thread(None)?;
        Ok(Box::new(client))
    }
}

/// Accepts a client of a wire mechanism: makes the connection's objects,
/// then greets the client with them.
struct MechAcceptor<M: Mechanism> {
    mech: M,
    endpoint: PathBuf,
    next_conn: u64,
    opts: Options,
}

impl<M: Mechanism> Acceptor for MechAcceptor<M> {
    type W = M::W;

    fn accept(&mut self, listener: &Listener, _setup: &Setup<'_>) -> Result<Option<Conn<M::W>>> {
        self.next_conn += 1;
        let ctx = ConnCtx {
            endpoint: &self.endpoint,
            conn: self.next_conn,
        };
        let (wire, fds, extra) = match self.mech.server_side(ctx, &self.opts) {
            Ok(made) => made,
            Err(e) => return refuse(listener, Error::io("make a connection", e)),
        };
        let borrowed: Vec<BorrowedFd<'_>> = fds.iter().map(|f| f.as_fd()).collect();
        let inherit = self.opts.inherit_priority;
        greeted(listener.accept_with(&borrowed, &extra), |session| Conn {
            peer: inherit.then(|| reactor::peer_of(&session)).flatten(),
            creds: reactor::creds_of(&session),
            wire,
            session: M::KEEP_SESSION.then_some(session),
        })
    }
}
