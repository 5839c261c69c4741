//! `pipe`: two anonymous pipes per connection (one each way), made by the
//! server and passed to the client through the rendezvous. Messages are
//! framed on the byte stream; a dead peer reads as EOF. The client writes
//! its requests in packets (`O_DIRECT`), so that the server can wait in a
//! plain `read` that the poker ends with a one-byte packet (`poker.rs`).

use std::io;
use std::os::fd::{AsFd, OwnedFd};

use crate::transport::api::Options;
use crate::transport::serve::mechanism::{ConnCtx, Mechanism};
use crate::transport::wire::framing::{Packets, StreamWire, HEAD};
use crate::transport::wire::rendezvous::Family;

/// Anonymous pipes.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pipe;

impl Mechanism for Pipe {
    type W = StreamWire;
    const FAMILY: Family = Family::Pipe;
    const EOF_ON_DEATH: bool = true;

    fn server_side(
        &self,
        _ctx: ConnCtx<'_>,
        opts: &Options,
    ) -> io::Result<(StreamWire, Vec<OwnedFd>, Vec<u8>)> {
        let (c2s_r, c2s_w) = oslayer::pipe::pipe()?;
        let (s2c_r, s2c_w) = oslayer::pipe::pipe()?;
        // Room for a whole reply: the server writes without blocking (a
        // client that does not read must not hold it), and a reply larger
        // than the pipe would be written in parts, each waiting for the
        // client (a 64 KiB round trip a quarter slower). Best effort: the
        // user's pipe quota may refuse it.
        let _ = oslayer::pipe::set_capacity(s2c_w.as_fd(), HEAD + opts.max_msg);
        let wire = StreamWire::pipes(c2s_r, s2c_w, Packets::Receive)?;
        Ok((wire, vec![c2s_w, s2c_r], Vec::new()))
    }

    fn client_side(
        &self,
        fds: Vec<OwnedFd>,
        _extra: &[u8],
        _opts: &Options,
    ) -> io::Result<StreamWire> {
        let [c2s_w, s2c_r]: [OwnedFd; 2] = fds
            .try_into()
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "expected 2 pipe ends"))?;
        StreamWire::pipes(s2c_r, c2s_w, Packets::Send)
    }
}
