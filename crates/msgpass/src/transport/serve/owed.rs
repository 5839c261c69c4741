//! The reply owed to a call that timed out, written once for every client
//! that keeps its own flag (the wire client, sysv-msg's and signal's; the
//! shm client's slot records it in the shared memory itself). A call whose
//! deadline passed after its request went out leaves the reply coming: the
//! next call waits for it and discards it before it sends, so it can never
//! take the late reply for its own.

use crate::error::{Error, Result};

/// A reply owed, with what waiting for it needs (`T`: nothing for a
/// client with one reply stream, the request's number and thread for one
/// that matches replies).
#[derive(Debug, Default)]
pub(crate) struct Owed<T = ()>(Option<T>);

impl<T: Copy> Owed<T> {
    /// Nothing owed.
    pub(crate) const fn none() -> Owed<T> {
        Owed(None)
    }

    /// True while a reply is owed.
    #[inline]
    pub(crate) fn is_owed(&self) -> bool {
        self.0.is_some()
    }

    /// The outcome of the wait for a call's reply: a timeout leaves the
    /// reply owed (`what`, to wait for it later); the outcome is passed on.
    #[inline]
    pub(crate) fn after_wait<R>(&mut self, r: Result<R>, what: T) -> Result<R> {
        if let Err(Error::TimedOut { .. }) = r {
            self.0 = Some(what);
        }
        r
    }

    /// Before a call: the owed reply, if any, waited for by `wait` (which
    /// keeps the call's deadline) and discarded; still owed if the wait
    /// failed.
    #[inline]
    pub(crate) fn settle(&mut self, wait: impl FnOnce(T) -> Result<()>) -> Result<()> {
        if let Some(what) = self.0 {
            wait(what)?;
            self.0 = None;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn timed_out() -> Error {
        Error::TimedOut {
            timeout: Duration::from_millis(1),
        }
    }

    #[test]
    fn a_timeout_owes_the_reply_and_a_settled_wait_clears_it() {
        let mut owed = Owed::<u64>::none();
        assert!(owed.after_wait(Ok::<_, Error>(3), 7).is_ok());
        assert!(!owed.is_owed(), "a reply received owes nothing");
        assert!(owed
            .after_wait(Err::<(), _>(Error::Disconnected), 7)
            .is_err());
        assert!(!owed.is_owed(), "only a timeout owes the reply");
        let _ = owed.after_wait(Err::<(), _>(timed_out()), 7);
        assert!(owed.is_owed());
        let failed = owed.settle(|seq| {
            assert_eq!(seq, 7);
            Err(timed_out())
        });
        assert!(failed.is_err());
        assert!(owed.is_owed(), "a failed wait still owes it");
        let mut waited = 0;
        owed.settle(|_| {
            waited += 1;
            Ok(())
        })
        .expect("settled");
        owed.settle(|_| panic!("nothing owed"))
            .expect("nothing to do");
        assert_eq!((waited, owed.is_owed()), (1, false));
    }
}
