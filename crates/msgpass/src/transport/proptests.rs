//! Property tests: every decoder of what a peer sends (the rendezvous
//! hello, the transports' hello extras, the wire header and reply, the
//! shared-memory areas' header) is fed arbitrary bytes and must answer
//! with a value or a clean error, never a panic.
//!
//! The default case count (proptest's 256 per property) keeps CI short;
//! for a long run of a million inputs per property:
//!
//! ```text
//! PROPTEST_CASES=1000000 cargo test -p msgpass --lib proptest
//! ```

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use proptest::collection::vec;
use proptest::prelude::*;

use crate::error::Error;
use crate::transport::api::Options;
use crate::transport::mechanisms::{eventfd::EventFd, fifo::Fifo, io_uring::IoUring, tcp};
use crate::transport::serve::mechanism::Mechanism;
use crate::transport::wire::areas::{Areas, MAX_AREA_MSG};
use crate::transport::wire::framing::{self, HEAD};
use crate::transport::wire::rendezvous::{self, Family, HELLO_LEN};

/// Arbitrary bytes, mostly short, up to the largest hello extra.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        vec(any::<u8>(), 0..40),
        vec(any::<u8>(), 0..=rendezvous::EXTRA_MAX)
    ]
}

/// A hello: arbitrary, or a valid one with some bytes overwritten (so the
/// checks past the magic number are reached too).
fn hello() -> impl Strategy<Value = [u8; HELLO_LEN]> {
    let valid = (
        0..Family::ALL.len(),
        any::<u32>(),
        vec((0..HELLO_LEN, any::<u8>()), 0..3),
    )
        .prop_map(|(f, max, edits)| {
            let mut h = rendezvous::hello_bytes(Family::ALL[f], max as usize);
            for (i, b) in edits {
                h[i] = b;
            }
            h
        });
    prop_oneof![any::<[u8; HELLO_LEN]>(), valid]
}

/// The memory of a pair of areas, as the server makes and the client maps
/// it, for a message size of `max`.
fn areas(max: usize) -> (OwnedFd, Areas, Areas) {
    let (mem, server) = Areas::create("proptest", 0, max).unwrap();
    let client = Areas::adopt(mem.as_fd(), "proptest", 0, max as u64).unwrap();
    (mem, server, client)
}

/// A scratch directory that does not exist: names under it open nothing.
fn nowhere() -> std::path::PathBuf {
    std::env::temp_dir().join(format!("msgpass-proptest-absent-{}", std::process::id()))
}

proptest! {
    #[test]
    fn proptest_check_hello_answers_cleanly(h in hello(), f in 0..Family::ALL.len()) {
        let family = Family::ALL[f];
        match rendezvous::check_hello(&h, Path::new("/peer"), family) {
            Ok((max, _pid)) => {
                prop_assert_eq!(u16::from_le_bytes([h[6], h[7]]), family as u16);
                prop_assert_eq!(max, u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize);
            }
            Err(Error::Protocol(_) | Error::WrongTransport { .. }) => {}
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    #[test]
    fn proptest_tcp_extra_answers_cleanly(extra in bytes()) {
        if let Some((port, token)) = tcp::parse_extra(&extra) {
            prop_assert_eq!(extra.len(), 2 + token.len());
            prop_assert_eq!(port, u16::from_le_bytes([extra[0], extra[1]]));
        }
    }

    #[test]
    fn proptest_wire_heads_answer_cleanly(frame in vec(any::<u8>(), HEAD..HEAD + 64)) {
        let mut h = [0u8; HEAD];
        h.copy_from_slice(&frame[..HEAD]);
        let (code, len) = framing::parse_head(&h);
        prop_assert_eq!(framing::frame_head(&frame), (code, len));
        prop_assert_eq!(framing::head(code, len), h);
    }

    #[test]
    fn proptest_unpack_reply_answers_cleanly(
        frame in vec(any::<u8>(), HEAD..HEAD + 96),
        cut in any::<prop::sample::Index>(),
        room in 0usize..128,
        honest_len in any::<bool>(),
    ) {
        // `len` is what the wire received: at most what the frame holds.
        let len = cut.index(frame.len() - HEAD + 1);
        let mut frame = frame;
        if honest_len {
            // A header that tells the truth, so the status is reached.
            let status = u32::from_le_bytes([frame[0], frame[1], frame[2], frame[3]]) % 4;
            frame[..HEAD].copy_from_slice(&framing::head(status, len));
        }
        let mut reply = vec![0u8; room];
        match framing::unpack_reply(&frame, &frame[HEAD..HEAD + len], &mut reply) {
            Ok(n) => {
                prop_assert_eq!(n, len);
                prop_assert_eq!(&reply[..n], &frame[HEAD..HEAD + n]);
            }
            Err(Error::Protocol(_) | Error::Remote { .. } | Error::ReplyTooLarge { .. }) => {}
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }

    #[test]
    fn proptest_area_heads_answer_cleanly(
        max in prop_oneof![Just(0usize), 1usize..64, Just(4096)],
        memory in vec(any::<u8>(), 0..256),
        at in 0usize..8192,
    ) {
        let (_mem, mut server, mut client) = areas(max);
        // Whatever the peer wrote anywhere in the shared memory.
        let map = server.control();
        let at = at.min(map.len() - memory.len().min(map.len()));
        map.write_at(at, &memory[..memory.len().min(map.len())]);
        map.write_at(0, &memory[..memory.len().min(HEAD)]);
        let mut frame = vec![0u8; HEAD + max];
        for side in [&mut server, &mut client] {
            match side.head() {
                Ok((_code, len)) => prop_assert!(len <= max),
                Err(e) => prop_assert_eq!(e.kind(), std::io::ErrorKind::InvalidData),
            }
            match side.take(&mut frame) {
                Ok(len) => prop_assert!(len <= max),
                Err(e) => prop_assert_eq!(e.kind(), std::io::ErrorKind::InvalidData),
            }
        }
    }

    #[test]
    fn proptest_eventfd_extra_answers_cleanly(extra in bytes(), max in 0usize..256) {
        let (mem, _server, _client) = areas(max);
        let fds = vec![mem, oslayer::eventfd::new().unwrap(), oslayer::eventfd::new().unwrap()];
        // A clean error, or a wire over memory that is large enough.
        if EventFd.client_side(fds, &extra, &Options::default()).is_ok() {
            prop_assert_eq!(extra.len(), 8);
            let claimed = u64::from_le_bytes(extra[..8].try_into().unwrap());
            prop_assert!(claimed <= MAX_AREA_MSG as u64);
        }
    }

    #[test]
    fn proptest_io_uring_extra_answers_cleanly(extra in bytes()) {
        // Without its descriptors: refused before anything is used.
        prop_assert!(IoUring.client_side(Vec::new(), &extra, &Options::default()).is_err());
    }

    #[test]
    fn proptest_fifo_extra_answers_cleanly(
        ids in vec(any::<u8>(), 0..40),
        // Any byte but the separator and NUL (mapped, not filtered: a
        // filter rejects so often that a million-case run aborts).
        name in vec((1u8..=255).prop_map(|b| if b == b'/' { b'_' } else { b }), 0..32),
    ) {
        // Names under a directory that does not exist: the parse is
        // exercised, nothing on the machine is opened.
        use std::os::unix::ffi::OsStrExt;
        let mut extra = ids;
        let base = nowhere().join(std::ffi::OsStr::from_bytes(&name));
        extra.extend_from_slice(base.as_os_str().as_bytes());
        prop_assert!(Fifo.client_side(Vec::new(), &extra, &Options::default()).is_err());
    }
}
