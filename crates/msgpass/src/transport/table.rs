//! The transport table: every transport msgpass has, described once.
//!
//! Each [`TransportInfo`] in [`TRANSPORTS`] gives a transport's name and
//! aliases, a one-line description, how it waits, whether it carries
//! one-way messages, how it limits the message size, what it needs to run,
//! its constructor and the hooks generic code calls (stale-endpoint
//! cleanup, "is this path served by one of mine"). Everything else is
//! derived from it: [`by_name`](super::by_name), [`NAMES`](super::NAMES),
//! the rendezvous family names, and the generic modules' calls into a
//! transport. Adding a transport means adding one entry here (and one line
//! to the conformance suite, whose test fails until it is there).

use std::path::Path;

use crate::error::{Error, Result};
use crate::transport::api::{Transport, Wait};
use crate::transport::mechanisms::{
    eventfd, fifo, fuse, io_uring, pipe, posix_mq, shm, signal, sysv_msg, tcp, udp, uds, uds_pair,
};
use crate::transport::serve::mechanism;
use crate::transport::wire::rendezvous::Family;

/// How a transport limits [`Options::max_msg`](super::Options::max_msg)
/// (see [`Transport::max_msg`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeLimit {
    /// Carries whatever size is asked for.
    None,
    /// Carries at most this many payload bytes.
    Fixed(usize),
    /// A limit read from the system's configuration when the channel is
    /// made, described here.
    System(&'static str),
}

/// One transport, as the table describes it.
#[derive(Debug)]
pub struct TransportInfo {
    /// The name it is selected by, which its [`Transport::name`] returns.
    pub name: &'static str,
    /// Other names selecting the same transport.
    pub aliases: &'static [&'static str],
    /// One line saying what it is, for help texts.
    pub description: &'static str,
    /// How its sides wait.
    pub wait: Wait,
    /// True when its connections carry one-way messages
    /// ([`crate::Connection::supports_oneway`]).
    pub oneway: bool,
    /// How it limits the message size.
    pub limit: SizeLimit,
    /// What it needs beyond an ordinary user's rights, if anything.
    pub requires: Option<&'static str>,
    /// Descriptors the server keeps open per connected client, once the
    /// connection is set up (what a server with N clients needs of its
    /// RLIMIT_NOFILE, about N times this): the wire's descriptors and the
    /// rendezvous session where the server watches it (a wire that reports
    /// a dead peer itself needs none). A pool of threads on the shm
    /// transports keeps each client's bell too: one more.
    pub server_fds: u32,
    /// Rendezvous family (`None`: it does not meet on the rendezvous socket).
    pub(crate) family: Option<Family>,
    make: fn(&'static TransportInfo) -> Box<dyn Transport>,
    unavailable: Option<fn() -> Option<String>>,
    clean_stale: Option<fn(&Path) -> bool>,
    serves: Option<fn(&Path) -> bool>,
}

impl TransportInfo {
    /// A new instance of the transport.
    pub fn transport(&'static self) -> Box<dyn Transport> {
        (self.make)(self)
    }

    /// Why this transport cannot serve here (like fuse without root), or
    /// `None` when nothing is known to stop it.
    pub fn unavailable(&self) -> Option<String> {
        self.unavailable.and_then(|f| f())
    }

    /// Every name that selects it: aliases first, then its name.
    pub fn names(&self) -> impl Iterator<Item = &'static str> {
        self.aliases
            .iter()
            .copied()
            .chain(std::iter::once(self.name))
    }

    /// The name an endpoint of this transport is reported by when a client
    /// of another family finds it ([`Error::WrongTransport`]): transports of
    /// one family (the shm variants) interoperate and share the first name
    /// of the family's first entry.
    pub fn family_name(&self) -> &'static str {
        match self.family {
            Some(f) => f.name(),
            None => self.name,
        }
    }
}

/// A [`wire::WireTransport`] of mechanism `M`, described by `info`.
fn wire_transport<M: mechanism::Mechanism + Default>(
    info: &'static TransportInfo,
) -> Box<dyn Transport> {
    Box::new(mechanism::WireTransport {
        mech: M::default(),
        name: info.name,
        oneway: info.oneway,
    })
}

/// An entry with no hooks and no requirements; entries override fields.
const BASE: TransportInfo = TransportInfo {
    name: "",
    aliases: &[],
    description: "",
    wait: Wait::Block,
    oneway: false,
    limit: SizeLimit::None,
    requires: None,
    server_fds: 0,
    family: None,
    make: |t| unreachable!("{}: no constructor in the table", t.name),
    unavailable: None,
    clean_stale: None,
    serves: None,
};

/// Every transport, in the order help texts and tables list them.
/// `shm` (an alias of `shm-hybrid`) is the recommended default.
pub const TRANSPORTS: &[TransportInfo] = &[
    TransportInfo {
        name: "shm-hybrid",
        aliases: &["shm"],
        description: "shared-memory slot, futex wake-ups: spin a while (Options::spin), then sleep",
        wait: Wait::Hybrid,
        // the session (the slot's memfd is closed once mapped)
        server_fds: 1,
        family: Some(Family::Shm),
        make: |_| Box::new(shm::Shm::new(Wait::Hybrid)),
        ..BASE
    },
    TransportInfo {
        name: "shm-spin",
        description: "shared-memory slot, both sides poll (lowest latency, burns a CPU each)",
        wait: Wait::Spin,
        // the session
        server_fds: 1,
        family: Some(Family::Shm),
        make: |_| Box::new(shm::Shm::new(Wait::Spin)),
        ..BASE
    },
    TransportInfo {
        name: "shm-block",
        description: "shared-memory slot, both sides sleep on a futex at once",
        // the session
        server_fds: 1,
        family: Some(Family::Shm),
        make: |_| Box::new(shm::Shm::new(Wait::Block)),
        ..BASE
    },
    TransportInfo {
        name: "uds",
        description: "Unix domain SOCK_SEQPACKET socket",
        oneway: true,
        // the session, which carries the messages
        server_fds: 1,
        family: Some(Family::Uds),
        make: |_| Box::new(uds::Uds),
        ..BASE
    },
    TransportInfo {
        name: "uds-stream",
        description: "Unix domain SOCK_STREAM socket pair, framed messages",
        oneway: true,
        // its end of the pair and the session
        server_fds: 1,
        family: Some(Family::UdsStream),
        make: wire_transport::<uds_pair::UdsStream>,
        ..BASE
    },
    TransportInfo {
        name: "uds-dgram",
        description: "Unix domain SOCK_DGRAM socket pair, one datagram per message",
        oneway: true,
        // its end of the pair and the session
        server_fds: 2,
        family: Some(Family::UdsDgram),
        make: wire_transport::<uds_pair::UdsDgram>,
        ..BASE
    },
    TransportInfo {
        name: "pipe",
        description: "two anonymous pipes per connection, framed messages",
        oneway: true,
        // its two pipe ends and the session
        server_fds: 2,
        family: Some(Family::Pipe),
        make: wire_transport::<pipe::Pipe>,
        ..BASE
    },
    TransportInfo {
        name: "fifo",
        description: "two named pipes (FIFOs) per connection, opened by name, framed messages",
        oneway: true,
        // its two FIFO ends and the session
        server_fds: 3,
        family: Some(Family::Fifo),
        make: wire_transport::<fifo::Fifo>,
        clean_stale: Some(fifo::clean_stale),
        ..BASE
    },
    TransportInfo {
        name: "posix-mq",
        description: "two POSIX message queues per connection",
        limit: SizeLimit::System(
            "fs.mqueue.msgsize_max and RLIMIT_MSGQUEUE: 2048 bytes with default limits",
        ),
        // its two queue ends and the session
        server_fds: 3,
        family: Some(Family::PosixMq),
        make: wire_transport::<posix_mq::PosixMq>,
        ..BASE
    },
    TransportInfo {
        name: "sysv-msg",
        description:
            "System V message queues: one per channel for requests, one per client for replies",
        oneway: true,
        limit: SizeLimit::System("min(kernel.msgmax, kernel.msgmnb) - 8: 8184 bytes by default"),
        // the session (the reply queue is no descriptor)
        server_fds: 1,
        family: Some(Family::SysvMsg),
        make: |_| Box::new(sysv_msg::SysvMsg),
        clean_stale: Some(|p| {
            sysv_msg::clean_stale(p);
            false
        }),
        ..BASE
    },
    TransportInfo {
        name: "eventfd",
        description: "shared-memory message areas, eventfd wake-ups",
        // its two eventfds and the session (the memfd is closed once mapped)
        server_fds: 3,
        family: Some(Family::Eventfd),
        make: wire_transport::<eventfd::EventFd>,
        ..BASE
    },
    TransportInfo {
        name: "io-uring",
        description:
            "shared-memory message areas, IORING_OP_MSG_RING wake-ups between two io_urings",
        limit: SizeLimit::Fixed(io_uring::MAX_AREA_MSG),
        requires: Some("io_uring with IORING_OP_MSG_RING; pidfd_getfd on the peer (ptrace access)"),
        // its ring, the client's ring (before the first request: the socket it comes on) and the session
        server_fds: 3,
        family: Some(Family::IoUring),
        make: |info| Box::new(io_uring::IoUringTransport::new(info.name, info.oneway)),
        ..BASE
    },
    TransportInfo {
        name: "signal",
        description:
            "shared-memory message areas, real-time signal wake-ups (rt_tgsigqueueinfo + signalfd)",
        // the session (the memfd is closed once mapped)
        server_fds: 1,
        family: Some(Family::Signal),
        make: |_| Box::new(signal::Signal),
        ..BASE
    },
    TransportInfo {
        name: "fuse",
        description: "FUSE file mounted at the endpoint, one ioctl per message",
        limit: SizeLimit::Fixed(fuse::MAX_PAYLOAD),
        requires: Some("root and /dev/fuse to serve"),
        // none: a client's open file is a file handle in the server, no descriptor
        server_fds: 0,
        make: |_| Box::new(fuse::Fuse),
        unavailable: Some(fuse::unavailable),
        clean_stale: Some(fuse::clear_dead_mount),
        serves: Some(fuse::serves),
        ..BASE
    },
    TransportInfo {
        name: "tcp",
        description: "TCP on loopback per connection, TCP_NODELAY, framed messages",
        oneway: true,
        // the stream and the session
        server_fds: 1,
        family: Some(Family::Tcp),
        make: |_| Box::new(tcp::Tcp),
        ..BASE
    },
    TransportInfo {
        name: "udp",
        description: "connected UDP socket pair on loopback, one datagram per message",
        limit: SizeLimit::Fixed(udp::MAX_PAYLOAD),
        // its socket and the session (the client's socket is passed on and closed)
        server_fds: 2,
        family: Some(Family::Udp),
        make: wire_transport::<udp::Udp>,
        ..BASE
    },
];

/// The transport selected by `name` (a name or an alias).
pub fn info(name: &str) -> Result<&'static TransportInfo> {
    TRANSPORTS
        .iter()
        .find(|t| t.names().any(|n| n == name))
        .ok_or_else(|| Error::UnknownTransport {
            name: name.to_string(),
            known: NAME_LIST.join(", "),
        })
}

/// How many names select a transport (names and aliases).
const fn name_count() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < TRANSPORTS.len() {
        n += 1 + TRANSPORTS[i].aliases.len();
        i += 1;
    }
    n
}

/// Every name, in table order, each entry's aliases before its name.
pub(crate) const NAME_LIST: [&str; name_count()] = {
    let mut out = [""; name_count()];
    let (mut i, mut k) = (0, 0);
    while i < TRANSPORTS.len() {
        let t = &TRANSPORTS[i];
        let mut a = 0;
        while a < t.aliases.len() {
            out[k] = t.aliases[a];
            k += 1;
            a += 1;
        }
        out[k] = t.name;
        k += 1;
        i += 1;
    }
    out
};

/// Runs every transport's stale-endpoint cleanup on `endpoint`, which the
/// caller has just claimed (so whoever left anything there is dead).
/// Returns true if any of them found something to remove.
pub(crate) fn clean_stale(endpoint: &Path) -> bool {
    TRANSPORTS
        .iter()
        .filter_map(|t| t.clean_stale)
        .fold(false, |found, clean| clean(endpoint) | found)
}

/// The transport other than `asking` whose live endpoint is at `path`,
/// among those that do not answer on the rendezvous socket (a fuse mount).
/// A transport is not asked about its own endpoint: its connect meets it,
/// and the probe would be one more connection (a fuse server counts the
/// probe's open until the kernel releases it, after the close).
pub(crate) fn served_by_other(path: &Path, asking: &str) -> Option<&'static str> {
    TRANSPORTS
        .iter()
        .filter(|t| t.name != asking)
        .find(|t| t.serves.is_some_and(|serves| serves(path)))
        .map(|t| t.name)
}

/// The shm family's typed transport by name: here, beside the table it
/// reads, so that the transports never import the table above them.
impl shm::Shm {
    /// The typed transport a name or alias of the transport table stands
    /// for when it is one of the shared-memory family (`shm`, `shm-spin`,
    /// `shm-block`, `shm-hybrid`), for programs that pick the transport at
    /// run time but want the typed channels for shm; `None` for any other
    /// transport (or an unknown name).
    pub fn by_name(name: &str) -> Option<shm::Shm> {
        let info = info(name).ok()?;
        (info.family == Some(Family::Shm)).then(|| shm::Shm::new(info.wait))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::api::Transport;

    /// The transport a name stands for (what `transport::by_name`, above
    /// this table, makes of it).
    fn by_name(name: &str) -> Result<Box<dyn Transport>> {
        info(name).map(TransportInfo::transport)
    }

    /// Every name and alias (`transport::NAMES`).
    const NAMES: &[&str] = &NAME_LIST;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for t in TRANSPORTS {
            assert!(!t.description.is_empty(), "{}: no description", t.name);
            let made = by_name(t.name).expect("by_name");
            assert_eq!(made.name(), t.name);
            assert_eq!(t.transport().name(), t.name);
            for n in t.names() {
                assert!(seen.insert(n), "{n} names two transports");
                assert!(NAMES.contains(&n), "NAMES lacks {n}");
                assert_eq!(by_name(n).expect("by_name").name(), t.name, "{n}");
                assert_eq!(info(n).expect("info").name, t.name, "{n}");
            }
        }
        assert_eq!(seen.len(), NAMES.len());
    }

    #[test]
    fn shm_is_an_alias_of_shm_hybrid() {
        assert_eq!(by_name("shm").expect("shm").name(), "shm-hybrid");
        assert_eq!(info("shm").expect("shm").wait, Wait::Hybrid);
    }

    #[test]
    fn wait_classes() {
        let wait = |n| info(n).expect("known").wait;
        assert_eq!(wait("shm-spin"), Wait::Spin);
        assert_eq!(wait("shm-hybrid"), Wait::Hybrid);
        assert_eq!(wait("shm-block"), Wait::Block);
        for t in TRANSPORTS.iter().filter(|t| !t.name.starts_with("shm")) {
            assert_eq!(t.wait, Wait::Block, "{}", t.name);
        }
    }

    #[test]
    fn limits_match_the_transports() {
        for t in TRANSPORTS {
            let got = t.transport().max_msg(usize::MAX);
            match t.limit {
                SizeLimit::None => assert_eq!(got, usize::MAX, "{}", t.name),
                SizeLimit::Fixed(n) => assert_eq!(got, n, "{}", t.name),
                SizeLimit::System(_) => assert!(got < usize::MAX, "{}", t.name),
            }
            assert_eq!(t.transport().max_msg(1), 1, "{}", t.name);
        }
        assert_eq!(info("udp").expect("udp").limit, SizeLimit::Fixed(65499));
    }

    #[test]
    fn families_are_named_and_distinct() {
        for t in TRANSPORTS {
            let Some(f) = t.family else {
                assert_eq!(t.family_name(), t.name);
                continue;
            };
            assert_eq!(Family::name_of(f as u16), f.name());
            // A family's name selects a transport of that family.
            assert_eq!(info(f.name()).expect("family name").family, Some(f));
            for u in TRANSPORTS.iter().filter(|u| u.family != t.family) {
                assert_ne!(u.family_name(), t.family_name(), "{} {}", u.name, t.name);
            }
        }
        assert_eq!(info("shm-spin").expect("shm-spin").family_name(), "shm");
        assert_eq!(Family::name_of(999), "unknown family 999");
    }

    /// Each rendezvous transport's server says the family its table entry
    /// names (a client of that family is let in), so the table's family and
    /// the transport's own agree.
    #[test]
    fn servers_greet_with_the_table_family() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let tmp = tempfile::Builder::new()
            .prefix("msgpass-table-")
            .tempdir()
            .expect("dir");
        let dir = tmp.path().to_path_buf();
        let opts = crate::transport::api::Options::default();
        for t in TRANSPORTS {
            let Some(family) = t.family else { continue };
            let path = dir.join(t.name);
            let mut server = t.transport().serve(&path, &opts).expect(t.name);
            let stop = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&stop);
            let receiver =
                std::thread::spawn(move || while let Ok(Some(_)) = server.receive(&flag) {});
            let met = crate::transport::wire::rendezvous::connect(&path, family, &opts);
            stop.store(true, Ordering::Relaxed);
            receiver.join().expect("receiver");
            let _ = std::fs::remove_file(&path);
            if let Err(e) = met {
                panic!("{}: a client of its table family: {e}", t.name);
            }
        }
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        match by_name("carrier-pigeon") {
            Err(Error::UnknownTransport { name, known }) => {
                assert_eq!(name, "carrier-pigeon");
                for n in NAMES {
                    assert!(known.split(", ").any(|k| k == *n), "{known} lacks {n}");
                }
            }
            other => panic!("expected UnknownTransport, got {other:?}"),
        }
    }

    /// Each transport whose messages lie in areas lends a private buffer
    /// on both sides: the client reads the reply in the buffer it built
    /// its request in; the server builds its reply in the buffer it read
    /// the request in, starting with the request.
    #[test]
    fn the_area_transports_pass_messages_in_place() {
        use crate::transport::api::Options;
        use std::sync::atomic::AtomicBool;
        for name in ["eventfd", "io-uring", "signal"] {
            let tmp = tempfile::Builder::new()
                .prefix(&format!("msgpass-areas-{name}-"))
                .tempdir()
                .expect("dir");
            let dir = tmp.path().to_path_buf();
            let path = dir.join("ep");
            let opts = Options::default();
            let mut server = by_name(name)
                .expect(name)
                .serve(&path, &opts)
                .expect("serve");
            let client = std::thread::spawn({
                let (path, opts) = (path.clone(), opts.clone());
                move || {
                    let t = by_name(name).expect(name);
                    let mut c = t.connect(&path, &opts).expect("connect");
                    let mut buf = c.request_buffer().expect("request buffer lent");
                    buf.write(0, b"hello");
                    let at = buf.as_ptr();
                    let reply = c.call_in_place(3, 5).expect("call");
                    assert_eq!(reply.to_vec(), b"HELLO!", "{name}");
                    assert_eq!(reply.as_ptr(), at, "{name}: reply");
                }
            });
            let stop = AtomicBool::new(false);
            let inc = server.receive(&stop).expect("receive").expect("request");
            assert_eq!((inc.cmd, inc.len), (3, 5), "{name}");
            assert_eq!(server.data(), b"hello", "{name}");
            let mut buf = server.reply_buffer().expect("reply buffer lent");
            assert_eq!(
                &buf.get::<5>(0),
                b"hello",
                "{name}: starts with the request"
            );
            buf.write(0, b"HELLO!");
            server.reply_in_place(6).expect("reply");
            client.join().expect("client");
            drop(server);
        }
    }
}
