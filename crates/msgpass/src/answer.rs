//! Answering a request, once: what [`Request`](crate::Request) (borrowing
//! its channel, an [`Answer`]) and [`OwnedRequest`](crate::OwnedRequest)
//! (held apart from it, a `Box<dyn Answer>`) share. The reply size rule,
//! the copying fallback of `reply_with`, and the `EIO` a request dropped
//! unanswered sends are written here once.

use std::ops::DerefMut;

use crate::error::{Error, Result};
use crate::transport::api::{Answer, Client, Incoming, Status};
use crate::transport::mem::window::Window;

/// A request to be answered once through `A` (a channel borrowed, or a
/// held request boxed); dropped unanswered, it
/// replies `EIO` (nothing for a one-way message).
pub(crate) struct Once<A: DerefMut<Target: Answer>> {
    pub(crate) to: A,
    pub(crate) head: Incoming,
    pub(crate) max_msg: usize,
    answered: bool,
}

impl<A: DerefMut<Target: Answer>> Once<A> {
    /// A request with header `head`, answered through `to`, whose channel
    /// carries at most `max_msg` bytes.
    #[inline]
    pub(crate) fn new(to: A, head: Incoming, max_msg: usize) -> Once<A> {
        Once {
            to,
            head,
            max_msg,
            answered: false,
        }
    }

    /// Marks the request answered without answering it: its answer goes
    /// another way now (a deferred request's handle).
    pub(crate) fn disarm(&mut self) {
        self.answered = true;
    }

    /// Replies with `data` (see [`Request::reply`](crate::Request::reply)).
    #[inline]
    pub(crate) fn reply(&mut self, data: &[u8]) -> Result<()> {
        self.answered = true;
        if self.head.oneway {
            return Ok(());
        }
        if data.len() > self.max_msg {
            return self.refuse_oversize(data.len());
        }
        self.to.reply(Status::Ok, data)
    }

    /// Replies in place, or through `scratch` where the transport lends no
    /// memory (see [`Request::reply_with`](crate::Request::reply_with)).
    #[inline]
    pub(crate) fn reply_with(
        &mut self,
        scratch: &mut Vec<u8>,
        fill: impl FnOnce(&mut Window<'_>) -> usize,
    ) -> Result<()> {
        if self.head.oneway {
            self.answered = true;
            return Ok(());
        }
        let max = self.max_msg;
        if let Some(buf) = self.to.reply_buffer() {
            // Answered only once `fill` returns: if it panics, the drop
            // still tells the client (EIO).
            let len = fill(&mut buf.prefix(max));
            self.answered = true;
            if len > max {
                return self.refuse_oversize(len);
            }
            return self.to.reply_in_place(len);
        }
        // The copying fallback: a buffer of ours, holding the request.
        let data = self.to.data();
        scratch.resize(max.max(data.len()), 0);
        scratch[..data.len()].copy_from_slice(data);
        let len = fill(&mut Window::from(&mut scratch[..max]));
        self.answered = true;
        if len > max {
            return self.refuse_oversize(len);
        }
        self.to.reply(Status::Ok, &scratch[..len])
    }

    /// Replies with an errno-style code.
    #[inline]
    pub(crate) fn reply_error(&mut self, code: i32) -> Result<()> {
        self.answered = true;
        if self.head.oneway {
            return Ok(());
        }
        self.to.reply(Status::Err(code), &[])
    }

    /// A reply of `len` bytes does not fit: the client hears `EMSGSIZE`.
    #[cold]
    fn refuse_oversize(&mut self, len: usize) -> Result<()> {
        self.to.reply(Status::Err(libc::EMSGSIZE), &[])?;
        Err(Error::TooLarge {
            len,
            max: self.max_msg,
        })
    }
}

impl<A: DerefMut<Target: Answer>> Drop for Once<A> {
    #[inline]
    fn drop(&mut self) {
        if !self.answered && !self.head.oneway {
            let _ = self.to.reply(Status::Err(libc::EIO), &[]);
        }
    }
}

/// A received request, however it was received: borrowed from its
/// channel ([`Request`](crate::Request)) or held apart from it by a pool
/// ([`OwnedRequest`](crate::OwnedRequest)). Write a handler once, generic
/// over it, and serve it from one thread or from a pool.
///
/// ```no_run
/// fn increment(req: impl msgpass::Received) -> msgpass::Result<()> {
///     match <[u8; 4]>::try_from(req.data()) {
///         Ok(b) => req.reply(&(u32::from_le_bytes(b) + 1).to_le_bytes()),
///         Err(_) => req.reply_error(libc::EINVAL),
///     }
/// }
/// ```
pub trait Received: Sized {
    /// The command code.
    fn cmd(&self) -> u32;
    /// The request payload (see [`Request::data`](crate::Request::data)).
    fn data(&self) -> &[u8];
    /// The request payload's length, without a copy of it.
    fn len(&self) -> usize;
    /// True when the request has no payload.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// True for a one-way message: no reply is expected, and none is sent.
    fn is_oneway(&self) -> bool;
    /// Who sent it (see [`Request::client`](crate::Request::client)).
    fn client(&self) -> Client;
    /// Replies with `data` (see [`Request::reply`](crate::Request::reply)).
    fn reply(self, data: &[u8]) -> Result<()>;
    /// Replies in place (see [`Request::reply_with`](crate::Request::reply_with)).
    fn reply_with(self, fill: impl FnOnce(&mut Window<'_>) -> usize) -> Result<()>;
    /// Replies with an errno-style code.
    fn reply_error(self, code: i32) -> Result<()>;
}

/// A request's client as the transport says, or, where it says nothing
/// (a transport of someone else's, see [`Answer::client`]), id 0
/// and no credentials.
pub(crate) fn client_or_unknown(c: Option<Client>) -> Client {
    c.unwrap_or(Client { id: 0, creds: None })
}
