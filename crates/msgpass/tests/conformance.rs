//! The transport conformance suite: one set of tests, written once and
//! instantiated for every transport in `msgpass::transport::NAMES` by
//! [`conformance_tests!`], which also lists what it instantiated
//! (`INSTANTIATED`) so that a test can check it against the transport table.
//!
//! The suite runs against both APIs: the copying one (`Connection::call`,
//! `Request::reply`) and the in-place one (`Connection::call_with`,
//! `Request::reply_with`). The test server answers a command with the
//! [`IN_PLACE`] bit set the same way, but through `reply_with`, so the
//! `in_place_*` and `call_with_*` tests mix the four combinations (client
//! copying or in place × server copying or in place) on every transport:
//! in place for real on the transports whose messages lie in shared
//! memory (the shm family, eventfd, io-uring, signal), through the copying
//! fallback elsewhere (`in_place_exactly_on_shared_memory` checks which is
//! which).
//! `typed_shm_in_place` runs the same round trips over the typed
//! shared-memory path (`create_typed`, `open_typed`), for each wait.
//!
//! Every test runs under a watchdog (a hang is a failure, not a stuck CI
//! job) in its own private namespace directory, which must be empty at the
//! end (no endpoint, lock file or sub-directory left), with no new entry in
//! /dev/shm and no `msgbench.*` POSIX message queue left (when the mqueue
//! filesystem can be listed: root). Tests assert behaviour, never speed: a
//! client blocked in `call` learns of its server's death (from its 100 ms
//! tick at worst, well within 1 s on a quiet machine; the time is printed)
//! as `Disconnected`, and a generous liveness bound for a loaded 2-CPU
//! machine, [`DEATH_BOUND`], turns a client that never notices into a
//! failure long before the server's reply would have come.
//!
//! Servers and clients that must die a violent death run in a child
//! process: this test binary re-executed to run only [`child_entry`], with
//! its role in `MSGPASS_TEST_CHILD`.

#[macro_use]
mod common;

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use msgpass::transport::ClientConnection;
use msgpass::{Channel, Connection, Error, Namespace, Options, Transport};

/// Full test path of the child entry point (top level of this file).
const CHILD_ENTRY: &str = "child_entry";

/// A blocked client learns of its server's death within this: a liveness
/// bound for a loaded 2-CPU machine (the contract's tick is 100 ms), half
/// the 10 s the killed server would have slept before replying.
const DEATH_BOUND: Duration = Duration::from_secs(5);

macro_rules! conformance_tests {
    ($($module:ident: $transport:literal),* $(,)?) => {
        $(mod $module {
            const T: &str = $transport;

            #[test]
            fn round_trips_random_sizes() {
                super::suite::round_trips_random_sizes(T)
            }
            #[test]
            fn reply_sizes() {
                super::suite::reply_sizes(T)
            }
            #[test]
            fn error_replies() {
                super::suite::error_replies(T)
            }
            #[test]
            fn request_too_large_keeps_connection() {
                super::suite::request_too_large_keeps_connection(T)
            }
            #[test]
            fn reply_too_large_for_buffer() {
                super::suite::reply_too_large_for_buffer(T)
            }
            #[test]
            fn server_reply_over_max() {
                super::suite::server_reply_over_max(T)
            }
            #[test]
            fn server_death_mid_call() {
                super::suite::server_death_mid_call(T)
            }
            #[test]
            fn server_death_while_idle() {
                super::suite::server_death_while_idle(T)
            }
            #[test]
            fn channel_closed_by_server() {
                super::suite::channel_closed_by_server(T)
            }
            #[test]
            fn reply_then_close() {
                super::suite::reply_then_close(T)
            }
            #[test]
            fn client_death() {
                super::suite::client_death(T)
            }
            #[test]
            fn next_client_while_the_only_one_dies() {
                super::suite::next_client_while_the_only_one_dies(T)
            }
            #[test]
            fn many_concurrent_clients() {
                super::suite::many_concurrent_clients(T)
            }
            #[test]
            fn many_simultaneous_connects() {
                super::suite::many_simultaneous_connects(T)
            }
            #[test]
            fn stale_endpoint_replaced_live_one_kept() {
                super::suite::stale_endpoint_replaced_live_one_kept(T)
            }
            #[test]
            fn live_endpoint_in_process_not_stolen() {
                super::suite::live_endpoint_in_process_not_stolen(T)
            }
            #[test]
            fn wait_for_late_server() {
                super::suite::wait_for_late_server(T)
            }
            #[test]
            fn not_found_without_wait() {
                super::suite::not_found_without_wait(T)
            }
            #[test]
            fn wrong_transport() {
                super::suite::wrong_transport(T)
            }
            #[test]
            fn stop_flag_idle() {
                super::suite::stop_flag_idle(T)
            }
            #[test]
            fn stop_flag_with_client() {
                super::suite::stop_flag_with_client(T)
            }
            #[test]
            fn nested_names_pruned() {
                super::suite::nested_names_pruned(T)
            }
            #[test]
            fn oneway_stream_in_order() {
                super::suite::oneway_stream_in_order(T)
            }
            #[test]
            fn oneway_too_large_and_reserved_commands() {
                super::suite::oneway_too_large_and_reserved_commands(T)
            }
            #[test]
            fn oneway_to_dead_server() {
                super::suite::oneway_to_dead_server(T)
            }
            #[test]
            fn in_place_round_trips() {
                super::suite::in_place_round_trips(T)
            }
            #[test]
            fn in_place_reply_sizes() {
                super::suite::in_place_reply_sizes(T)
            }
            #[test]
            fn in_place_error_replies() {
                super::suite::in_place_error_replies(T)
            }
            #[test]
            fn call_with_too_large_keeps_connection() {
                super::suite::call_with_too_large_keeps_connection(T)
            }
            #[test]
            fn call_with_reserved_command() {
                super::suite::call_with_reserved_command(T)
            }
            #[test]
            fn server_in_place_reply_over_max() {
                super::suite::server_in_place_reply_over_max(T)
            }
            #[test]
            fn in_place_exactly_on_shared_memory() {
                super::suite::in_place_exactly_on_shared_memory(T)
            }
            #[test]
            fn pool_answers_every_request_once_to_its_client() {
                super::suite::pool_answers_every_request_once_to_its_client(T)
            }
            #[test]
            fn pool_serves_on_beside_a_stuck_handler() {
                super::suite::pool_serves_on_beside_a_stuck_handler(T)
            }
            #[test]
            fn pool_survives_killed_clients() {
                super::suite::pool_survives_killed_clients(T)
            }
            #[test]
            fn pool_stops_every_thread() {
                super::suite::pool_stops_every_thread(T)
            }
        })*

        /// The transports instantiated, from the same invocation.
        const INSTANTIATED: &[&str] = &[$($transport),*];
    };
}

every_transport!(conformance_tests);

#[test]
fn every_transport_is_instantiated() {
    assert_every_transport(INSTANTIATED, "conformance_tests!");
    for info in msgpass::transport::TRANSPORTS {
        for name in info.names() {
            let t = msgpass::transport::by_name(name).expect("registered transport");
            // An alias (shm) selects its entry (shm-hybrid).
            assert_eq!(t.name(), info.name);
        }
    }
}

/// The typed shared-memory path passes the in-place round trips.
#[test]
fn typed_shm_in_place() {
    suite::typed_shm_in_place()
}

/// sysv-msg queues outlive processes: check that none is ever left behind.
#[test]
fn sysv_msg_queues_never_leak() {
    suite::sysv_msg_queues_never_leak()
}

/// A sysv-msg client frozen while its server stops, then killed, leaves no
/// reply queue behind.
#[test]
fn sysv_msg_frozen_client_leaves_no_queue() {
    suite::sysv_msg_frozen_client_leaves_no_queue()
}

/// ... nor one frozen with a reply queued for it, then killed: the queue
/// goes with the server, not with the next server of the endpoint.
#[test]
fn sysv_msg_frozen_client_with_a_reply_leaves_no_queue() {
    suite::sysv_msg_frozen_client_with_a_reply(suite::Served::ByOne, suite::Then::Kill)
}

/// The same with a relay pool serving the channel.
#[test]
fn sysv_msg_frozen_client_of_a_pool_leaves_no_queue() {
    suite::sysv_msg_frozen_client_with_a_reply(suite::Served::ByPool, suite::Then::Kill)
}

/// A sysv-msg client frozen with a reply queued while its server stops,
/// then thawed, gets that reply, and `Disconnected` for its next call.
#[test]
fn sysv_msg_frozen_client_thawed_gets_its_reply() {
    suite::sysv_msg_frozen_client_with_a_reply(suite::Served::ByOne, suite::Then::Thaw)
}

/// A sysv-msg client killed with a reply queued while its server lives:
/// the server removes the queue when it sees the client's session hang up.
#[test]
fn sysv_msg_killed_client_with_a_reply_leaves_no_queue() {
    suite::sysv_msg_killed_client_with_a_reply_leaves_no_queue()
}

#[test]
fn unknown_transport_is_refused() {
    match msgpass::transport::by_name("carrier-pigeon") {
        Err(Error::UnknownTransport { name, known }) => {
            assert_eq!(name, "carrier-pigeon");
            for n in msgpass::transport::NAMES {
                assert!(known.contains(n), "{known} lacks {n}");
            }
        }
        other => panic!("expected UnknownTransport, got {other:?}"),
    }
}

/// Entry point of child processes; does nothing in a normal test run.
#[test]
fn child_entry() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    child_self_destruct();
    let (ns, name, t) = child_context();
    match role.as_str() {
        "server" => {
            let mut chan = Channel::create(&ns, &name, &*t, &Options::default())
                .expect("child: create channel");
            println!("MSGPASS_READY {}", std::process::id());
            let mut hooks = Hooks {
                events: Box::new(|e| {
                    if let Event::Busy = e {
                        println!("MSGPASS_BUSY");
                    }
                }),
                release: None,
            };
            let max = chan.max_msg();
            serve(&mut chan, max, &mut hooks);
        }
        "client-hold" => {
            let mut c =
                Connection::open(&ns, &name, &*t, &Options::default()).expect("child: connect");
            println!("MSGPASS_CONNECTED");
            let _ = c.call(CMD_HOLD, &[], &mut [0u8; 64]);
            thread::sleep(CHILD_LIFETIME);
        }
        // As client-hold, then reports how its call and one more ended.
        "client-hold-report" => {
            let mut c =
                Connection::open(&ns, &name, &*t, &Options::default()).expect("child: connect");
            println!("MSGPASS_CONNECTED");
            let mut buf = [0u8; 64];
            let first = c
                .call(CMD_HOLD, &[], &mut buf)
                .map(|n| String::from_utf8_lossy(&buf[..n]).into_owned());
            println!("MSGPASS_FIRST {first:?}");
            let second = c.call(1, b"again", &mut buf);
            println!("MSGPASS_SECOND {second:?}");
            thread::sleep(CHILD_LIFETIME);
        }
        "client-idle" => {
            let mut c =
                Connection::open(&ns, &name, &*t, &Options::default()).expect("child: connect");
            suite::echo(&mut c, 9, b"idle child", &mut [0u8; 64]);
            println!("MSGPASS_CONNECTED");
            thread::sleep(CHILD_LIFETIME);
        }
        other => panic!("unknown child role {other}"),
    }
}

mod suite {
    use super::*;

    /// What a test body gets: its transport and private namespace.
    pub struct Cx {
        pub t: &'static str,
        pub transport: Box<dyn Transport>,
        pub ns: Namespace,
        pub label: String,
        /// The transport's payload limit: [`MAX`], or lower for the few
        /// transports that cannot carry that much (udp).
        pub max: usize,
        dir: PathBuf,
    }

    impl Cx {
        pub fn rng(&self) -> Rng {
            Rng::for_test(&self.label)
        }

        pub fn open(&self, name: &str) -> Connection {
            Connection::open(&self.ns, name, &*self.transport, &Options::default())
                .unwrap_or_else(|e| panic!("{}: open {name}: {e}", self.t))
        }

        pub fn server(&self, name: &str) -> Server {
            Server::start(&self.ns, name, self.t)
        }

        pub fn create(&self, name: &str) -> msgpass::Result<Channel> {
            Channel::create(&self.ns, name, &*self.transport, &Options::default())
        }

        /// A server child process serving `name`, ready when this returns.
        pub fn server_child(&self, name: &str) -> ChildProc {
            let c = self.child("server", name);
            let pid = c.expect_line("MSGPASS_READY");
            assert_eq!(pid, c.pid().to_string());
            c
        }

        pub fn child(&self, role: &str, name: &str) -> ChildProc {
            ChildProc::spawn(
                CHILD_ENTRY,
                role,
                &[
                    (CHILD_NS, self.dir.as_path()),
                    (CHILD_TRANSPORT, self.t.as_ref()),
                    (CHILD_NAME, name.as_ref()),
                ],
            )
        }

        /// Clears the endpoint a killed server left behind by serving it
        /// again (which must report the stale endpoint it replaced).
        pub fn replace_stale(&self, name: &str) {
            let chan = self.create(name).expect("create over a stale endpoint");
            assert!(chan.replaced_stale(), "{name}: stale endpoint not reported");
            drop(chan);
        }
    }

    /// Runs `body` under the watchdog in a fresh namespace, then checks the
    /// namespace is clean.
    fn run<F>(t: &'static str, test: &'static str, body: F)
    where
        F: FnOnce(&Cx) + Send + 'static,
    {
        let label = format!("{t}::{test}");
        let info = msgpass::transport::info(t).expect("known transport");
        if let Some(why) = info.unavailable() {
            assert!(std::env::var_os("CI").is_none(), "{label}: {why}");
            println!("{label}: skipped: {why}");
            return;
        }
        // Owned out here, so that even a hung body's directory is removed.
        let tns = TestNs::new();
        let ns = tns.ns.clone();
        let dir = tns.dir().to_path_buf();
        watchdog(&label.clone(), WATCHDOG, move || {
            let transport = msgpass::transport::by_name(t).expect("known transport");
            let cx = Cx {
                t,
                max: transport.max_msg(MAX),
                transport,
                ns,
                label,
                dir,
            };
            body(&cx);
        });
        let mounted = mounts_under(tns.dir());
        assert!(mounted.is_empty(), "{t}::{test}: left mounted: {mounted:?}");
        tns.finish();
    }

    /// Mount points under `dir` (from /proc/self/mountinfo): a fuse
    /// endpoint must be unmounted with its channel.
    fn mounts_under(dir: &std::path::Path) -> Vec<String> {
        let prefix = format!("{}/", dir.display());
        std::fs::read_to_string("/proc/self/mountinfo")
            .expect("read /proc/self/mountinfo")
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|m| m.starts_with(&prefix))
            .map(str::to_string)
            .collect()
    }

    /// Calls echo command `cmd` with `req` and checks every byte of the reply.
    pub fn echo<C: ClientConnection + ?Sized>(
        conn: &mut Connection<C>,
        cmd: u32,
        req: &[u8],
        buf: &mut [u8],
    ) {
        let want = echo_reply(cmd, req, conn.max_msg());
        let n = conn
            .call(cmd, req, buf)
            .unwrap_or_else(|e| panic!("echo of {} bytes (cmd {cmd:#x}): {e}", req.len()));
        check_echo(cmd, req.len(), &buf[..n], &want);
    }

    /// Like [`echo`], in place: the request is written into the buffer
    /// `call_with` lends (the rest of it poisoned), the reply checked where
    /// it lies.
    pub fn echo_with<C: ClientConnection + ?Sized>(conn: &mut Connection<C>, cmd: u32, req: &[u8]) {
        let max = conn.max_msg();
        let want = echo_reply(cmd, req, max);
        let mut lent = None;
        let reply = conn
            .call_with(cmd, |buf| {
                lent = Some(buf.len());
                buf.write(0, req);
                buf.write(req.len(), &vec![0xA5; buf.len() - req.len()]);
                req.len()
            })
            .unwrap_or_else(|e| panic!("in-place echo of {} bytes (cmd {cmd:#x}): {e}", req.len()))
            .to_vec();
        assert_eq!(lent, Some(max), "call_with lends max_msg bytes");
        check_echo(cmd, req.len(), &reply, &want);
    }

    fn check_echo(cmd: u32, len: usize, got: &[u8], want: &[u8]) {
        assert_eq!(
            got.len(),
            want.len(),
            "reply length for a {len}-byte echo (cmd {cmd:#x})"
        );
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!(
                "echo of {len} bytes (cmd {cmd:#x}): byte {i} is {:#04x}, want {:#04x}",
                got[i], want[i]
            );
        }
    }

    /// The four ways a call can go, by `mode`'s two low bits: the client
    /// copying (`call`) or in place (`call_with`), the server copying
    /// (`reply`) or in place (`reply_with`, asked for by [`IN_PLACE`]).
    pub fn echo_mode<C: ClientConnection + ?Sized>(
        conn: &mut Connection<C>,
        mode: usize,
        cmd: u32,
        req: &[u8],
        buf: &mut [u8],
    ) {
        let cmd = if mode & 1 != 0 { cmd | IN_PLACE } else { cmd };
        if mode & 2 != 0 {
            echo_with(conn, cmd, req)
        } else {
            echo(conn, cmd, req, buf)
        }
    }

    /// Echo round trips over the edge sizes (each in all four modes) and
    /// `random` random sizes (the modes in turn), shuffled together so that
    /// a short message follows a long one in every mode (stale tail bytes).
    pub fn mixed_round_trips<C: ClientConnection + ?Sized>(
        c: &mut Connection<C>,
        rng: &mut Rng,
        random: usize,
    ) {
        let max = c.max_msg();
        let mut buf = vec![0u8; max];
        let mut calls: Vec<(usize, usize)> = Vec::new();
        for mode in 0..4 {
            calls.extend(edge_sizes(max).into_iter().map(|len| (len, mode)));
        }
        for i in 0..random {
            let len = if i % 2 == 0 {
                rng.upto(256)
            } else {
                rng.upto(max)
            };
            calls.push((len, i % 4));
        }
        for i in (1..calls.len()).rev() {
            calls.swap(i, rng.upto(i));
        }
        for (len, mode) in calls {
            let req = rng.bytes(len);
            let cmd = rng.upto(ECHO_LAST as usize) as u32;
            buf.fill(0xA5);
            echo_mode(c, mode, cmd, &req, &mut buf);
        }
    }

    fn gen_request(len: usize, seed: u64) -> [u8; 12] {
        let mut r = [0u8; 12];
        r[..4].copy_from_slice(&(len as u32).to_le_bytes());
        r[4..].copy_from_slice(&seed.to_le_bytes());
        r
    }

    fn call_conns(conn: &mut Connection) -> u64 {
        let mut b = [0u8; 8];
        let n = conn.call(CMD_CONNS, &[], &mut b).expect("CONNS call");
        assert_eq!(n, 8);
        u64::from_le_bytes(b)
    }

    /// Sizes around every boundary a transport might have, up to `max`
    /// (the 4 KiB ones only when `max` reaches them).
    fn edge_sizes(max: usize) -> Vec<usize> {
        let sizes = vec![
            0,
            1,
            2,
            7,
            8,
            15,
            16,
            47,
            48,
            49,
            63,
            64,
            65,
            4079,
            4080,
            4081,
            4095,
            4096,
            4097,
            max - 9,
            max - 8,
            max - 7,
            max - 1,
            max,
        ];
        sizes.into_iter().filter(|&s| s <= max).collect()
    }

    pub fn round_trips_random_sizes(t: &'static str) {
        run(t, "round_trips_random_sizes", |cx| {
            let mut rng = cx.rng();
            let s = cx.server("echo/0");
            let mut c = cx.open("echo/0");
            let max = cx.max;
            assert_eq!(c.max_msg(), max);
            let mut buf = vec![0u8; max];
            let mut sizes: Vec<usize> = edge_sizes(max);
            // Then random sizes: half small, half anywhere up to the maximum.
            for i in 0..400 {
                sizes.push(if i % 2 == 0 {
                    rng.upto(256)
                } else {
                    rng.upto(max)
                });
            }
            // Edge sizes once more, shuffled among the rest, so a short
            // message after a long one is covered (stale tail bytes).
            sizes.extend(edge_sizes(max));
            for i in (1..sizes.len()).rev() {
                sizes.swap(i, rng.upto(i));
            }
            for len in sizes {
                let req = rng.bytes(len);
                let cmd = rng.upto(ECHO_LAST as usize) as u32;
                // Poison the buffer so a reply that is not written is caught.
                buf.fill(0xA5);
                echo(&mut c, cmd, &req, &mut buf);
            }
            drop(c);
            s.stop();
        });
    }

    pub fn reply_sizes(t: &'static str) {
        run(t, "reply_sizes", |cx| {
            let mut rng = cx.rng();
            let s = cx.server("gen/0");
            let mut c = cx.open("gen/0");
            let mut buf = vec![0u8; cx.max];
            let mut sizes = edge_sizes(cx.max);
            sizes.extend((0..100).map(|_| rng.upto(cx.max)));
            for len in sizes {
                let seed = rng.next_u64();
                buf.fill(0x5A);
                let n = c
                    .call(CMD_GEN, &gen_request(len, seed), &mut buf)
                    .unwrap_or_else(|e| panic!("GEN {len}: {e}"));
                assert_eq!(n, len);
                assert!(
                    buf[..n] == Rng::new(seed).bytes(len)[..],
                    "GEN {len}: bad data"
                );
            }
            // An empty reply fits an empty buffer.
            assert_eq!(c.call(CMD_GEN, &gen_request(0, 1), &mut []).unwrap(), 0);
            drop(c);
            s.stop();
        });
    }

    pub fn error_replies(t: &'static str) {
        run(t, "error_replies", |cx| {
            let s = cx.server("err/0");
            let mut c = cx.open("err/0");
            let mut buf = [0u8; 64];
            for code in [libc::ENOTTY, libc::EPERM, libc::EINVAL, libc::EAGAIN, 4095] {
                match c.call(CMD_ERR, &code.to_le_bytes(), &mut buf) {
                    Err(Error::Remote { code: got }) => assert_eq!(got, code),
                    other => panic!("reply_error({code}): got {other:?}"),
                }
                echo(&mut c, 3, b"still fine", &mut buf);
            }
            // A command the server does not know: ENOTTY, like a devctl.
            // (Codes with the top bit set are reserved for one-way messages.)
            match c.call(0x5ead_beef, b"?", &mut buf) {
                Err(Error::Remote { code }) => assert_eq!(code, libc::ENOTTY),
                other => panic!("unknown command: got {other:?}"),
            }
            // A request dropped unanswered: EIO, and the connection lives on.
            for _ in 0..3 {
                match c.call(CMD_DROP, b"drop me", &mut buf) {
                    Err(Error::Remote { code }) => assert_eq!(code, libc::EIO),
                    other => panic!("dropped request: got {other:?}"),
                }
                echo(&mut c, 4, b"after drop", &mut buf);
            }
            // The error reply's Display names the errno.
            let e = Error::Remote { code: libc::ENOTTY };
            assert!(e.to_string().contains(&libc::ENOTTY.to_string()), "{e}");
            drop(c);
            s.stop();
        });
    }

    pub fn request_too_large_keeps_connection(t: &'static str) {
        run(t, "request_too_large_keeps_connection", |cx| {
            let s = cx.server("big/0");
            let mut c = cx.open("big/0");
            let mut buf = vec![0u8; cx.max];
            for len in [cx.max + 1, cx.max + 4096, 4 * cx.max] {
                match c.call(1, &vec![1u8; len], &mut buf) {
                    Err(Error::TooLarge { len: l, max }) => {
                        assert_eq!((l, max), (len, cx.max));
                    }
                    other => panic!("request of {len} bytes: got {other:?}"),
                }
                // The connection is intact.
                echo(&mut c, 2, &vec![9u8; cx.max], &mut buf);
                echo(&mut c, 2, b"", &mut buf);
            }
            drop(c);
            s.stop();
        });
    }

    pub fn reply_too_large_for_buffer(t: &'static str) {
        run(t, "reply_too_large_for_buffer", |cx| {
            let s = cx.server("small/0");
            let mut c = cx.open("small/0");
            let max = cx.max;
            for (len, cap) in [(100, 99), (1, 0), (max, max - 1), (4097, 4096), (49, 48)] {
                if len > max {
                    continue;
                }
                let mut buf = vec![0u8; cap];
                match c.call(CMD_GEN, &gen_request(len, 5), &mut buf) {
                    Err(Error::ReplyTooLarge { len: l, cap: k }) => {
                        assert_eq!((l, k), (len, cap));
                    }
                    other => panic!("{len}-byte reply into {cap} bytes: got {other:?}"),
                }
                // The oversized reply was consumed: the next call is in step.
                let mut big = vec![0u8; MAX];
                echo(&mut c, 8, b"in step", &mut big);
                let n = c
                    .call(CMD_GEN, &gen_request(len, 6), &mut big)
                    .expect("same reply into a buffer that fits");
                assert_eq!(big[..n], Rng::new(6).bytes(len)[..]);
            }
            drop(c);
            s.stop();
        });
    }

    pub fn server_reply_over_max(t: &'static str) {
        run(t, "server_reply_over_max", |cx| {
            let s = cx.server("over/0");
            let mut c = cx.open("over/0");
            let mut buf = vec![0u8; 2 * MAX];
            for _ in 0..2 {
                match c.call(CMD_OVERSIZE, &[], &mut buf) {
                    Err(Error::Remote { code }) => assert_eq!(code, libc::EMSGSIZE),
                    other => panic!("over-long reply: client got {other:?}"),
                }
                match s.event() {
                    Event::Oversize(Err(Error::TooLarge { len, max })) => {
                        assert_eq!((len, max), (cx.max + 1, cx.max))
                    }
                    other => panic!("over-long reply: server got {other:?}"),
                }
                echo(&mut c, 1, b"after oversize", &mut buf);
            }
            drop(c);
            s.stop();
        });
    }

    pub fn server_death_mid_call(t: &'static str) {
        run(t, "server_death_mid_call", |cx| {
            let mut child = cx.server_child("srv/0");
            let mut c = cx.open("srv/0");
            echo(&mut c, 1, b"alive", &mut [0u8; 64]);
            let (tx, rx) = mpsc::channel();
            let caller = thread::spawn(move || {
                let r = c.call(CMD_SLEEP, &10_000u32.to_le_bytes(), &mut [0u8; 64]);
                let _ = tx.send((r, Instant::now()));
            });
            child.expect_line("MSGPASS_BUSY");
            let killed = Instant::now();
            child.kill();
            let (r, returned) = rx.recv_timeout(WATCHDOG).expect("call never returned");
            caller.join().expect("caller thread");
            assert!(
                matches!(r, Err(Error::Disconnected)),
                "server killed mid-call: got {r:?}"
            );
            let took = returned.saturating_duration_since(killed);
            println!("{}: call returned {took:?} after SIGKILL", cx.t);
            assert!(
                took < DEATH_BOUND,
                "call returned {took:?} after the server was killed (bound: {DEATH_BOUND:?})"
            );
            child.kill_and_reap();
            cx.replace_stale("srv/0");
        });
    }

    pub fn server_death_while_idle(t: &'static str) {
        run(t, "server_death_while_idle", |cx| {
            let mut child = cx.server_child("idle/0");
            let mut c = cx.open("idle/0");
            let mut buf = [0u8; 64];
            echo(&mut c, 1, b"alive", &mut buf);
            child.kill_and_reap();
            for _ in 0..2 {
                match c.call(1, b"anyone?", &mut buf) {
                    Err(Error::Disconnected) => {}
                    other => panic!("call to a dead server: got {other:?}"),
                }
            }
            // The dead server's socket is still there: a fresh client is
            // told nobody serves it, at once (no wait requested).
            match Connection::open(&cx.ns, "idle/0", &*cx.transport, &Options::default()) {
                Err(Error::NotFound { path }) => assert_eq!(path, cx.ns.root().join("idle/0")),
                Err(e) => panic!("open of a dead endpoint: got {e:?}"),
                Ok(_) => panic!("open of a dead endpoint succeeded"),
            }
            cx.replace_stale("idle/0");
        });
    }

    pub fn channel_closed_by_server(t: &'static str) {
        run(t, "channel_closed_by_server", |cx| {
            let s = cx.server("close/0");
            let mut c = cx.open("close/0");
            let mut buf = [0u8; 64];
            echo(&mut c, 1, b"alive", &mut buf);
            s.stop();
            for _ in 0..2 {
                match c.call(1, b"anyone?", &mut buf) {
                    Err(Error::Disconnected) => {}
                    other => panic!("call to a closed channel: got {other:?}"),
                }
            }
            match Connection::open(&cx.ns, "close/0", &*cx.transport, &Options::default()) {
                Err(Error::NotFound { .. }) => {}
                Err(e) => panic!("open of a closed endpoint: got {e:?}"),
                Ok(_) => panic!("open of a closed endpoint succeeded"),
            }
        });
    }

    /// A reply sent just before the channel closes still reaches the
    /// client; only its next call learns of the close.
    pub fn reply_then_close(t: &'static str) {
        run(t, "reply_then_close", |cx| {
            for round in 0..20 {
                let name = format!("rtc/{round}");
                let mut chan = Channel::create(&cx.ns, &name, &*cx.transport, &Options::default())
                    .expect("create channel");
                let server = std::thread::spawn(move || {
                    if let Ok(Some(req)) = chan.receive() {
                        let d = req.data().to_vec();
                        req.reply(&d).expect("reply");
                    }
                    drop(chan); // close at once, before the client can read
                });
                let mut c = Connection::open(&cx.ns, &name, &*cx.transport, &Options::default())
                    .expect("open");
                let mut buf = [0u8; 64];
                match c.call(1, b"last words", &mut buf) {
                    Ok(n) => assert_eq!(&buf[..n], b"last words"),
                    Err(e) => panic!("round {round}: reply sent before the close was lost: {e:?}"),
                }
                server.join().expect("server thread");
                match c.call(1, b"anyone?", &mut buf) {
                    Err(Error::Disconnected) => {}
                    other => panic!("call after the close: got {other:?}"),
                }
            }
        });
    }

    pub fn client_death(t: &'static str) {
        run(t, "client_death", |cx| {
            let s = cx.server("cd/0");
            // An idle client, and one killed while the server handles its call.
            let mut idle = cx.child("client-idle", "cd/0");
            idle.expect_line("MSGPASS_CONNECTED");
            let mut busy = cx.child("client-hold", "cd/0");
            busy.expect_line("MSGPASS_CONNECTED");
            match s.event() {
                Event::Held => {}
                other => panic!("expected the held call, got {other:?}"),
            }
            busy.kill_and_reap();
            idle.kill_and_reap();
            // The server replies to a dead client, then keeps serving.
            s.release();
            let mut rng = cx.rng();
            let mut c = cx.open("cd/0");
            let mut buf = vec![0u8; MAX];
            for _ in 0..50 {
                let len = rng.upto(2048);
                echo(&mut c, 6, &rng.bytes(len), &mut buf);
            }
            // Both dead connections are dropped eventually (the watchdog
            // bounds "eventually").
            loop {
                let n = call_conns(&mut c);
                assert!(n >= 1, "the asking client is connected");
                if n == 1 {
                    break;
                }
                thread::sleep(Duration::from_millis(20));
            }
            drop(c);
            s.stop();
        });
    }

    /// The server's only client dies while the next one is connecting:
    /// the next is greeted and served. (A server serving its only client
    /// on the single-client path once kept serving the dead one's closed
    /// connection in a loop, and the next never heard its hello.)
    pub fn next_client_while_the_only_one_dies(t: &'static str) {
        run(t, "next_client_while_the_only_one_dies", |cx| {
            let s = cx.server("next/0");
            let mut rng = cx.rng();
            let mut buf = vec![0u8; MAX];
            for round in 0..3 {
                let mut only = cx.child("client-idle", "next/0");
                only.expect_line("MSGPASS_CONNECTED");
                thread::scope(|scope| {
                    let next = scope.spawn(|| cx.open("next/0"));
                    // The next client is connecting (in the listener's
                    // backlog, or just taken) as the only one dies.
                    thread::sleep(Duration::from_millis(20 * round));
                    only.kill_and_reap();
                    let mut c = next.join().expect("the connecting thread");
                    for _ in 0..10 {
                        let len = rng.upto(2048);
                        echo(&mut c, 6, &rng.bytes(len), &mut buf);
                    }
                });
            }
            s.stop();
        });
    }

    pub fn many_concurrent_clients(t: &'static str) {
        // A spinning transport's waiting clients each burn a CPU: 16 of
        // them on a 2-CPU machine leave the server a sliver of CPU time,
        // and under outside load the test measured the scheduler, not the
        // transport (it ran past the watchdog). 4 spinning clients still
        // outnumber the CPUs; the others take 16.
        let spins =
            msgpass::transport::info(t).is_ok_and(|i| i.wait == msgpass::transport::Wait::Spin);
        let clients: usize = if spins { 4 } else { 16 };
        const CALLS: usize = 500;
        run(t, "many_concurrent_clients", move |cx| {
            let s = cx.server("many/0");
            concurrent_clients(cx, "many/0", clients, CALLS);
            assert_eq!(s.stop(), (clients * CALLS) as u64);
        });
    }

    /// `clients` threads, each with its own connection to `name`, started
    /// together, each making `calls` echo calls of random sizes (now and
    /// then up to the maximum) in every API mix, with payloads of their
    /// own led by the client's number and the call's: every reply is
    /// checked, so one meant for another client would show.
    fn concurrent_clients(cx: &Cx, name: &str, clients: usize, calls: usize) {
        let base = cx.rng().next_u64();
        let max = cx.max;
        let start = Arc::new(Barrier::new(clients));
        let handles: Vec<_> = (0..clients)
            .map(|k| {
                let mut c = cx.open(name);
                let start = Arc::clone(&start);
                thread::spawn(move || {
                    let mut rng = Rng::new(base ^ (k as u64 + 1).wrapping_mul(0x9e37_79b9));
                    let mut buf = vec![0u8; MAX];
                    start.wait();
                    for i in 0..calls {
                        let len = if i % 40 == 39 {
                            rng.upto(max)
                        } else {
                            rng.upto(300)
                        };
                        let mut req = rng.bytes(len.max(8));
                        req[..4].copy_from_slice(&(k as u32).to_le_bytes());
                        req[4..8].copy_from_slice(&(i as u32).to_le_bytes());
                        let cmd = (k * 7 + i) as u32 % (ECHO_LAST + 1);
                        echo_mode(&mut c, i % 4, cmd, &req, &mut buf);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().expect("client thread");
        }
    }

    /// Clients of a pool, each a thread with its own connection, calling
    /// with payloads of their own (both APIs, both ways); every reply must
    /// be the answer to that client's request, and the pool's threads
    /// together must have served each request exactly once.
    pub fn pool_answers_every_request_once_to_its_client(t: &'static str) {
        let spins =
            msgpass::transport::info(t).is_ok_and(|i| i.wait == msgpass::transport::Wait::Spin);
        let (threads, clients): (usize, usize) = if spins { (2, 3) } else { (4, 8) };
        const CALLS: usize = 150;
        run(
            t,
            "pool_answers_every_request_once_to_its_client",
            move |cx| {
                let pool = PoolServer::start(&cx.ns, "pool/0", cx.t, threads);
                concurrent_clients(cx, "pool/0", clients, CALLS);
                let served = pool.stop();
                assert_eq!(
                    served.iter().sum::<u64>(),
                    (clients * CALLS) as u64,
                    "{t}: requests served by each thread: {served:?}"
                );
            },
        );
    }

    /// One thread of a pool is held in its handler: the others keep
    /// answering every other client; released, it answers its own.
    pub fn pool_serves_on_beside_a_stuck_handler(t: &'static str) {
        run(t, "pool_serves_on_beside_a_stuck_handler", |cx| {
            let pool = PoolServer::start(&cx.ns, "stuck/0", cx.t, 3);
            let mut held = cx.open("stuck/0");
            let holder = thread::spawn(move || {
                let mut buf = [0u8; 64];
                let n = held.call(CMD_HOLD, &[], &mut buf).expect("held call");
                buf[..n].to_vec()
            });
            match pool.event() {
                Event::Held => {}
                other => panic!("expected the held call, got {other:?}"),
            }
            let mut rng = cx.rng();
            let handles: Vec<_> = (0..4)
                .map(|k| {
                    let mut c = cx.open("stuck/0");
                    let seed = rng.next_u64();
                    thread::spawn(move || {
                        let mut rng = Rng::new(seed);
                        let mut buf = vec![0u8; MAX];
                        for i in 0..100 {
                            let len = 16 + rng.upto(200);
                            let req = rng.bytes(len);
                            echo_mode(
                                &mut c,
                                i % 4,
                                (k + i) as u32 % (ECHO_LAST + 1),
                                &req,
                                &mut buf,
                            );
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().expect("client beside the stuck handler");
            }
            pool.release();
            assert_eq!(holder.join().expect("holder"), b"released");
            pool.stop();
        });
    }

    /// Clients killed while a pool serves them (one in the middle of its
    /// call, one idle) are dropped; the others are served throughout.
    pub fn pool_survives_killed_clients(t: &'static str) {
        run(t, "pool_survives_killed_clients", |cx| {
            let pool = PoolServer::start(&cx.ns, "kill/0", cx.t, 2);
            let mut c = cx.open("kill/0");
            let mut buf = vec![0u8; MAX];
            let mut rng = cx.rng();
            for round in 0..3 {
                let mut idle = cx.child("client-idle", "kill/0");
                idle.expect_line("MSGPASS_CONNECTED");
                let mut busy = cx.child("client-hold", "kill/0");
                busy.expect_line("MSGPASS_CONNECTED");
                match pool.event() {
                    Event::Held => {}
                    other => panic!("round {round}: expected the held call, got {other:?}"),
                }
                echo(&mut c, 3, &rng.bytes(100), &mut buf);
                busy.kill_and_reap();
                idle.kill_and_reap();
                // The held thread answers a dead client, and serves on.
                pool.release();
                for _ in 0..20 {
                    let len = rng.upto(2048);
                    echo(&mut c, 6, &rng.bytes(len), &mut buf);
                }
            }
            // Every dead connection is dropped eventually (the watchdog
            // bounds "eventually").
            while call_conns(&mut c) != 1 {
                thread::sleep(Duration::from_millis(20));
            }
            drop(c);
            pool.stop();
        });
    }

    /// Setting the stop flag ends every receiver's wait, idle or not.
    pub fn pool_stops_every_thread(t: &'static str) {
        run(t, "pool_stops_every_thread", |cx| {
            let pool = PoolServer::start(&cx.ns, "halt/0", cx.t, 4);
            let mut c = cx.open("halt/0");
            echo(&mut c, 1, b"before the stop", &mut [0u8; 256]);
            let served = pool.stop();
            assert_eq!(served.len(), 4);
            assert_eq!(served.iter().sum::<u64>(), 1);
            // The endpoint is gone with the last receiver.
            match c.call(1, b"after", &mut [0u8; 64]) {
                Err(Error::Disconnected) => {}
                other => panic!("a call after the pool stopped: {other:?}"),
            }
        });
    }

    pub fn many_simultaneous_connects(t: &'static str) {
        const CLIENTS: usize = 64;
        run(t, "many_simultaneous_connects", |cx| {
            let s = cx.server("conn/0");
            let start = Arc::new(Barrier::new(CLIENTS));
            let handles: Vec<_> = (0..CLIENTS)
                .map(|k| {
                    let ns = cx.ns.clone();
                    let t = cx.t;
                    let start = Arc::clone(&start);
                    thread::spawn(move || {
                        let tr = msgpass::transport::by_name(t).expect("transport");
                        start.wait();
                        let mut c = Connection::open(&ns, "conn/0", &*tr, &Options::default())
                            .unwrap_or_else(|e| panic!("client {k} of {CLIENTS}: open: {e}"));
                        echo(&mut c, k as u32, &[k as u8; 100], &mut [0u8; 256]);
                        // Stay connected until every client got through.
                        c
                    })
                })
                .collect();
            let conns: Vec<Connection> = handles
                .into_iter()
                .map(|h| h.join().expect("client thread"))
                .collect();
            drop(conns);
            assert_eq!(s.stop(), CLIENTS as u64);
        });
    }

    pub fn stale_endpoint_replaced_live_one_kept(t: &'static str) {
        run(t, "stale_endpoint_replaced_live_one_kept", |cx| {
            let mut child = cx.server_child("stale/0");
            // Live in another process: never stolen, and the owner is named.
            match cx.create("stale/0") {
                Err(Error::AlreadyServed { path, pid }) => {
                    assert_eq!(path, cx.ns.root().join("stale/0"));
                    assert_eq!(pid, Some(child.pid() as i32));
                }
                Err(e) => panic!("create over a live endpoint: got {e:?}"),
                Ok(_) => panic!("create stole a live endpoint"),
            }
            // ... and the failed attempt did not hurt the live server.
            let mut c = cx.open("stale/0");
            echo(&mut c, 1, b"still served", &mut [0u8; 64]);
            drop(c);
            child.kill_and_reap();
            // Dead: the endpoint is replaced, and the new server works.
            let chan = cx.create("stale/0").expect("create over a stale endpoint");
            assert!(chan.replaced_stale());
            let s = Server::serve_channel(chan);
            let mut c = cx.open("stale/0");
            echo(&mut c, 2, b"new server", &mut [0u8; 64]);
            drop(c);
            s.stop();
            // A clean create replaces nothing.
            let chan = cx.create("stale/0").expect("create afresh");
            assert!(!chan.replaced_stale());
        });
    }

    pub fn live_endpoint_in_process_not_stolen(t: &'static str) {
        run(t, "live_endpoint_in_process_not_stolen", |cx| {
            let s = cx.server("live/0");
            for tname in msgpass::transport::NAMES {
                let other = msgpass::transport::by_name(tname).expect("transport");
                match Channel::create(&cx.ns, "live/0", &*other, &Options::default()) {
                    Err(Error::AlreadyServed { path, pid }) => {
                        assert_eq!(path, s.path);
                        assert_eq!(pid, Some(std::process::id() as i32));
                    }
                    Err(e) => panic!("second create ({tname}): got {e:?}"),
                    Ok(_) => panic!("second create ({tname}) stole a live endpoint"),
                }
            }
            let mut c = cx.open("live/0");
            echo(&mut c, 1, b"still mine", &mut [0u8; 64]);
            drop(c);
            s.stop();
        });
    }

    pub fn wait_for_late_server(t: &'static str) {
        run(t, "wait_for_late_server", move |cx| {
            let ns = cx.ns.clone();
            let late = thread::spawn(move || {
                thread::sleep(Duration::from_millis(300));
                Server::start(&ns, "late/0", t)
            });
            let opts = Options {
                wait: Some(Duration::from_secs(5)),
                ..Options::default()
            };
            let mut c = Connection::open(&cx.ns, "late/0", &*cx.transport, &opts)
                .expect("open waiting for a late server");
            echo(&mut c, 1, b"worth the wait", &mut [0u8; 64]);
            let s = late.join().expect("late server thread");
            drop(c);
            s.stop();
            // Waiting for a server that never comes ends with NotFound.
            let opts = Options {
                wait: Some(Duration::from_millis(200)),
                ..Options::default()
            };
            match Connection::open(&cx.ns, "never/0", &*cx.transport, &opts) {
                Err(Error::NotFound { path }) => assert_eq!(path, cx.ns.root().join("never/0")),
                Err(e) => panic!("wait for a missing server: got {e:?}"),
                Ok(_) => panic!("connected to nobody"),
            }
        });
    }

    pub fn not_found_without_wait(t: &'static str) {
        run(t, "not_found_without_wait", |cx| {
            match Connection::open(&cx.ns, "nobody/0", &*cx.transport, &Options::default()) {
                Err(e @ Error::NotFound { .. }) => {
                    let want = cx.ns.root().join("nobody/0");
                    assert!(matches!(&e, Error::NotFound { path } if *path == want));
                    assert!(e.to_string().contains(&*want.to_string_lossy()), "{e}");
                }
                Err(e) => panic!("open with nobody serving: got {e:?}"),
                Ok(_) => panic!("connected to nobody"),
            }
        });
    }

    fn family(t: &'static str) -> &'static str {
        // The shm variants share one family; every other transport is its own.
        if t.starts_with("shm") {
            "shm"
        } else {
            t
        }
    }

    pub fn wrong_transport(t: &'static str) {
        run(t, "wrong_transport", move |cx| {
            let s = cx.server("wt/0");
            let other = if family(t) == "uds" { "shm" } else { "uds" };
            let wrong = msgpass::transport::by_name(other).expect("transport");
            for _ in 0..2 {
                match Connection::open(&cx.ns, "wt/0", &*wrong, &Options::default()) {
                    Err(Error::WrongTransport {
                        path,
                        expected,
                        found,
                    }) => {
                        assert_eq!(path, s.path);
                        assert_eq!(expected, other);
                        assert_eq!(found, family(t));
                    }
                    Err(e) => panic!("{other} client on a {t} server: got {e:?}"),
                    Ok(_) => panic!("{other} client on a {t} server connected"),
                }
            }
            // The server shrugs off the wrong clients.
            let mut c = cx.open("wt/0");
            echo(&mut c, 1, b"right transport", &mut [0u8; 64]);
            drop(c);
            s.stop();
        });
    }

    /// Blocks in `receive` on another thread; returns its outcome.
    fn receive_on_thread(mut chan: Channel) -> thread::JoinHandle<Result<bool, String>> {
        thread::spawn(move || match chan.receive() {
            Ok(None) => Ok(true),
            Ok(Some(r)) => Err(format!("unexpected request {}", r.cmd())),
            Err(e) => Err(e.to_string()),
        })
    }

    pub fn stop_flag_idle(t: &'static str) {
        run(t, "stop_flag_idle", |cx| {
            let chan = cx.create("stop/0").expect("create");
            let flag = chan.stop_flag();
            let h = receive_on_thread(chan);
            thread::sleep(Duration::from_millis(150));
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
            assert_eq!(h.join().expect("receiver"), Ok(true));
            // One flag shared by two channels stops both.
            let shared = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let hs: Vec<_> = ["stop/a", "stop/b"]
                .iter()
                .map(|n| {
                    let mut chan = cx.create(n).expect("create");
                    chan.set_stop_flag(Arc::clone(&shared));
                    receive_on_thread(chan)
                })
                .collect();
            thread::sleep(Duration::from_millis(150));
            shared.store(true, std::sync::atomic::Ordering::Relaxed);
            for h in hs {
                assert_eq!(h.join().expect("receiver"), Ok(true));
            }
        });
    }

    pub fn stop_flag_with_client(t: &'static str) {
        run(t, "stop_flag_with_client", |cx| {
            let chan = cx.create("stopc/0").expect("create");
            let flag = chan.stop_flag();
            let h = receive_on_thread(chan);
            // A connected, idle client: the server waits on it, not on accept.
            let c = cx.open("stopc/0");
            thread::sleep(Duration::from_millis(150));
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
            assert_eq!(h.join().expect("receiver"), Ok(true));
            drop(c);
        });
    }

    /// Asks the test server for `(count, chain)` of the one-way messages
    /// since the last ask.
    fn oneway_stats(conn: &mut Connection) -> (u64, u64) {
        let mut b = [0u8; 16];
        let n = conn
            .call(CMD_ONEWAY_STATS, &[], &mut b)
            .expect("ONEWAY_STATS call");
        assert_eq!(n, 16);
        (
            u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
            u64::from_le_bytes(b[8..].try_into().expect("8 bytes")),
        )
    }

    /// A transport without one-way messages says so, and refuses them with
    /// the typed error naming it.
    fn assert_oneway_unsupported(cx: &Cx, c: &mut Connection) {
        assert!(!c.supports_oneway(), "{}: supports_oneway", cx.t);
        match c.send_oneway(1, b"pulse") {
            Err(Error::Unsupported { what, transport }) => {
                assert_eq!(transport, cx.transport.name());
                assert!(what.contains("one-way"), "{what}");
            }
            other => panic!("{}: send_oneway unsupported: got {other:?}", cx.t),
        }
    }

    /// Transports that must carry one-way messages (blocking when full).
    /// What the transport table says: this checks each transport's
    /// connections against it.
    fn oneway_expected(t: &str) -> bool {
        msgpass::transport::info(t).expect("known transport").oneway
    }

    /// 1000 one-way messages (sequence number, random payload of random
    /// size up to the maximum, echo, error and drop commands whose replies
    /// must go nowhere), twice, each batch acknowledged by a call: all
    /// arrive, whole and in order, and the connection stays in step.
    pub fn oneway_stream_in_order(t: &'static str) {
        run(t, "oneway_stream_in_order", |cx| {
            let mut rng = cx.rng();
            let s = cx.server("ow/0");
            let mut c = cx.open("ow/0");
            assert_eq!(c.supports_oneway(), oneway_expected(cx.t), "{}", cx.t);
            if !c.supports_oneway() {
                assert_oneway_unsupported(cx, &mut c);
                echo(&mut c, 3, b"still fine", &mut [0u8; 64]);
                drop(c);
                s.stop();
                return;
            }
            let mut buf = vec![0u8; cx.max];
            let mut seq = 0u64;
            for batch in 0..2 {
                let mut want = 0u64;
                for i in 0..1000 {
                    let len = match i % 100 {
                        0 => cx.max,
                        1..=9 => 8 + rng.upto(cx.max - 8),
                        _ => 8 + rng.upto(64),
                    };
                    let mut req = rng.bytes(len);
                    req[..8].copy_from_slice(&seq.to_le_bytes());
                    seq += 1;
                    // In-place echoes too: reply_with lends no buffer for
                    // a one-way message (the test server checks).
                    let cmd = match i % 7 {
                        0 => CMD_DROP,
                        1 => CMD_ERR,
                        2 => IN_PLACE | rng.upto(ECHO_LAST as usize) as u32,
                        _ => rng.upto(ECHO_LAST as usize) as u32,
                    };
                    c.send_oneway(cmd, &req)
                        .unwrap_or_else(|e| panic!("batch {batch} one-way {i}: {e}"));
                    want = oneway_chain(want, cmd, &req);
                }
                assert_eq!(oneway_stats(&mut c), (1000, want), "batch {batch}");
                // No stray reply is waiting: calls still pair up.
                let req = rng.bytes(100);
                echo(&mut c, 5, &req, &mut buf);
            }
            drop(c);
            s.stop();
        });
    }

    /// A one-way message over the maximum is refused at the client, and
    /// the connection stays usable; a command with the one-way bit is
    /// refused by `call` on every transport.
    pub fn oneway_too_large_and_reserved_commands(t: &'static str) {
        run(t, "oneway_too_large_and_reserved_commands", |cx| {
            let s = cx.server("owbig/0");
            let mut c = cx.open("owbig/0");
            let mut buf = vec![0u8; 64];
            match c.call(msgpass::ONEWAY | 1, b"x", &mut buf) {
                Err(Error::ReservedCommand { cmd }) => assert_eq!(cmd, msgpass::ONEWAY | 1),
                other => panic!("call with the one-way bit: got {other:?}"),
            }
            echo(&mut c, 1, b"alive", &mut buf);
            if !c.supports_oneway() {
                assert_oneway_unsupported(cx, &mut c);
            } else {
                let big = vec![1u8; cx.max + 1];
                match c.send_oneway(1, &big) {
                    Err(Error::TooLarge { len, max }) => {
                        assert_eq!((len, max), (cx.max + 1, cx.max))
                    }
                    other => panic!("one-way over the maximum: got {other:?}"),
                }
                match c.send_oneway(msgpass::ONEWAY | 2, b"x") {
                    Err(Error::ReservedCommand { .. }) => {}
                    other => panic!("one-way with the one-way bit: got {other:?}"),
                }
                c.send_oneway(2, b"fits").expect("one-way after a refusal");
                assert_eq!(oneway_stats(&mut c), (1, oneway_chain(0, 2, b"fits")));
            }
            echo(&mut c, 2, b"still alive", &mut buf);
            drop(c);
            s.stop();
        });
    }

    /// One-way messages to a server that was killed: a send or the next
    /// call fails with `Disconnected`, and nothing hangs (the watchdog).
    pub fn oneway_to_dead_server(t: &'static str) {
        run(t, "oneway_to_dead_server", |cx| {
            let mut child = cx.server_child("owdead/0");
            let mut c = cx.open("owdead/0");
            let mut buf = [0u8; 64];
            echo(&mut c, 1, b"alive", &mut buf);
            if c.supports_oneway() {
                c.send_oneway(1, b"before")
                    .expect("one-way to a live server");
                assert_eq!(oneway_stats(&mut c).0, 1);
            }
            child.kill_and_reap();
            if c.supports_oneway() {
                let payload = vec![9u8; 1024];
                let mut failed = false;
                // More than any of these channels buffers.
                for _ in 0..20_000 {
                    match c.send_oneway(1, &payload) {
                        Ok(()) => {}
                        Err(Error::Disconnected) => {
                            failed = true;
                            break;
                        }
                        Err(e) => panic!("one-way to a dead server: got {e:?}"),
                    }
                }
                println!("{}: a one-way send failed: {failed}", cx.t);
            } else {
                assert_oneway_unsupported(cx, &mut c);
            }
            match c.call(1, b"anyone?", &mut buf) {
                Err(Error::Disconnected) => {}
                other => panic!("call to a dead server after one-way messages: got {other:?}"),
            }
            cx.replace_stale("owdead/0");
        });
    }

    /// Echo round trips in the four modes (client and server each copying
    /// or in place), every byte checked: the same sizes as
    /// [`round_trips_random_sizes`].
    pub fn in_place_round_trips(t: &'static str) {
        run(t, "in_place_round_trips", |cx| {
            let mut rng = cx.rng();
            let s = cx.server("ip/0");
            let mut c = cx.open("ip/0");
            assert_eq!(c.max_msg(), cx.max);
            mixed_round_trips(&mut c, &mut rng, 400);
            drop(c);
            s.stop();
        });
    }

    /// Calls `CMD_GEN` (with `IN_PLACE` when `mode & 1`) in place when
    /// `mode & 2`, for a `len`-byte reply of `seed`, and checks it.
    fn gen_mode(c: &mut Connection, mode: usize, len: usize, seed: u64, buf: &mut [u8]) {
        let cmd = if mode & 1 != 0 {
            CMD_GEN | IN_PLACE
        } else {
            CMD_GEN
        };
        let want = Rng::new(seed).bytes(len);
        let req = gen_request(len, seed);
        let got = if mode & 2 != 0 {
            c.call_with(cmd, |b| {
                b.write(0, &req);
                req.len()
            })
            .map(|v| v.to_vec())
        } else {
            c.call(cmd, &req, buf).map(|n| buf[..n].to_vec())
        };
        let got = got.unwrap_or_else(|e| panic!("GEN {len} (mode {mode}): {e}"));
        assert_eq!(got.len(), len, "GEN {len} (mode {mode})");
        assert!(got == want, "GEN {len} (mode {mode}): bad data");
    }

    /// Replies of every size, in the four modes: like [`reply_sizes`].
    pub fn in_place_reply_sizes(t: &'static str) {
        run(t, "in_place_reply_sizes", |cx| {
            let mut rng = cx.rng();
            let s = cx.server("ipgen/0");
            let mut c = cx.open("ipgen/0");
            let mut buf = vec![0u8; cx.max];
            for mode in 0..4 {
                for len in edge_sizes(cx.max) {
                    buf.fill(0x5A);
                    gen_mode(&mut c, mode, len, rng.next_u64(), &mut buf);
                }
            }
            for i in 0..100 {
                buf.fill(0x5A);
                let len = rng.upto(cx.max);
                gen_mode(&mut c, i % 4, len, rng.next_u64(), &mut buf);
            }
            drop(c);
            s.stop();
        });
    }

    /// Error replies and dropped requests reach `call_with` as
    /// `Error::Remote`, and the connection stays in step.
    pub fn in_place_error_replies(t: &'static str) {
        run(t, "in_place_error_replies", |cx| {
            let s = cx.server("iperr/0");
            let mut c = cx.open("iperr/0");
            let mut buf = [0u8; 64];
            for code in [libc::ENOTTY, libc::EPERM, libc::EINVAL, libc::EAGAIN, 4095] {
                let r = c.call_with(CMD_ERR, |b| {
                    b.write(0, &code.to_le_bytes());
                    4
                });
                match r {
                    Err(Error::Remote { code: got }) => assert_eq!(got, code),
                    other => panic!("reply_error({code}) in place: got {other:?}"),
                }
                echo_with(&mut c, IN_PLACE | 3, b"still fine");
                echo(&mut c, 3, b"still fine", &mut buf);
            }
            match c.call_with(0x0ead_beef, |b| {
                b.write(0, b"?");
                1
            }) {
                Err(Error::Remote { code }) => assert_eq!(code, libc::ENOTTY),
                other => panic!("unknown command in place: got {other:?}"),
            }
            for _ in 0..3 {
                match c.call_with(CMD_DROP, |b| {
                    b.write(0, b"drop me");
                    7
                }) {
                    Err(Error::Remote { code }) => assert_eq!(code, libc::EIO),
                    other => panic!("dropped request in place: got {other:?}"),
                }
                echo_with(&mut c, 4, b"after drop");
                echo_with(&mut c, IN_PLACE | 4, b"after drop");
            }
            drop(c);
            s.stop();
        });
    }

    /// A request `call_with` builds over the buffer is refused with
    /// `TooLarge`, nothing is sent, and the connection is intact.
    pub fn call_with_too_large_keeps_connection(t: &'static str) {
        run(t, "call_with_too_large_keeps_connection", |cx| {
            let s = cx.server("ipbig/0");
            let mut c = cx.open("ipbig/0");
            let mut buf = vec![0u8; cx.max];
            let mut sent = 0;
            for len in [cx.max + 1, cx.max + 4096, usize::MAX] {
                // The whole buffer written, then a length over it.
                match c.call_with(1, |b| {
                    b.write(0, &vec![0xEE; b.len()]);
                    len
                }) {
                    Err(Error::TooLarge { len: l, max }) => assert_eq!((l, max), (len, cx.max)),
                    other => panic!("call_with of {len} bytes: got {other:?}"),
                }
                echo_with(&mut c, 2, &vec![9u8; cx.max]);
                echo_with(&mut c, IN_PLACE | 2, b"");
                echo(&mut c, 2, b"copying", &mut buf);
                sent += 3;
            }
            drop(c);
            assert_eq!(s.stop(), sent, "a refused request reached the server");
        });
    }

    /// `call_with` refuses a command with the one-way bit before it lends
    /// the buffer, and sends nothing.
    pub fn call_with_reserved_command(t: &'static str) {
        run(t, "call_with_reserved_command", |cx| {
            let s = cx.server("iprsv/0");
            let mut c = cx.open("iprsv/0");
            for cmd in [
                msgpass::ONEWAY | 1,
                msgpass::ONEWAY | IN_PLACE | 1,
                u32::MAX,
            ] {
                let mut lent = false;
                match c.call_with(cmd, |b| {
                    lent = true;
                    b.write(0, &[1]);
                    1
                }) {
                    Err(Error::ReservedCommand { cmd: got }) => assert_eq!(got, cmd),
                    other => panic!("call_with({cmd:#x}): got {other:?}"),
                }
                assert!(!lent, "call_with({cmd:#x}) lent the buffer");
                echo_with(&mut c, 1, b"alive");
            }
            drop(c);
            assert_eq!(s.stop(), 3, "a refused request reached the server");
        });
    }

    /// A server's in-place reply over the maximum: the client (copying or
    /// in place) gets `EMSGSIZE`, `reply_with` returns `TooLarge`, and the
    /// connection is intact. The copying server's too, for `call_with`.
    pub fn server_in_place_reply_over_max(t: &'static str) {
        run(t, "server_in_place_reply_over_max", |cx| {
            let s = cx.server("ipover/0");
            let mut c = cx.open("ipover/0");
            let mut buf = vec![0u8; 2 * MAX];
            for round in 0..2 {
                for mode in 0..4 {
                    let cmd = if mode & 1 != 0 {
                        CMD_OVERSIZE | IN_PLACE
                    } else {
                        CMD_OVERSIZE
                    };
                    let r = if mode & 2 != 0 {
                        c.call_with(cmd, |_| 0).map(|v| v.len())
                    } else {
                        c.call(cmd, &[], &mut buf)
                    };
                    match r {
                        Err(Error::Remote { code }) => assert_eq!(code, libc::EMSGSIZE),
                        other => panic!("round {round} mode {mode}: client got {other:?}"),
                    }
                    match s.event() {
                        Event::Oversize(Err(Error::TooLarge { len, max })) => {
                            assert_eq!((len, max), (cx.max + 1, cx.max))
                        }
                        other => panic!("round {round} mode {mode}: server got {other:?}"),
                    }
                    for m in 0..4 {
                        echo_mode(&mut c, m, 1, b"after oversize", &mut buf);
                    }
                }
            }
            drop(c);
            s.stop();
        });
    }

    /// The transports besides the shm family whose messages lie in shared
    /// memory, one message area per direction (`areas.rs`): they lend
    /// those areas to the in-place API too.
    const AREA_TRANSPORTS: &[&str] = &["eventfd", "io-uring", "signal"];

    /// `in_place` is true exactly for the transports whose messages lie in
    /// shared memory, whose `call_with` lends memory of the connection (on
    /// the shm family the slot itself, read and written only by copies:
    /// see `transport/mem/shared.rs`) and returns the reply in that same
    /// memory. Any of them falling back on the library's copying path
    /// fails here.
    pub fn in_place_exactly_on_shared_memory(t: &'static str) {
        run(t, "in_place_exactly_on_shared_memory", move |cx| {
            let shm = msgpass::transport::info(t)
                .expect("known transport")
                .family_name()
                == "shm";
            assert_eq!(shm, t.starts_with("shm"), "{t}: family");
            let areas = AREA_TRANSPORTS.contains(&t);
            let lends = shm || areas;
            let s = cx.server("ipflag/0");
            let mut c = cx.open("ipflag/0");
            assert_eq!(c.in_place(), lends, "{t}: in_place");
            for cmd in [1, IN_PLACE | 1] {
                let mut at = std::ptr::null();
                let reply = c
                    .call_with(cmd, |b| {
                        at = b.as_ptr();
                        b.write(0, b"where");
                        5
                    })
                    .expect("call_with");
                assert_eq!(reply.to_vec(), echo_reply(cmd, b"where", cx.max));
                if lends {
                    assert_eq!(reply.as_ptr(), at, "{t}: reply not in the lent memory");
                }
            }
            assert_eq!(c.in_place(), lends, "{t}: in_place after calls");
            drop(c);
            s.stop();
        });
    }

    /// The typed shared-memory transport (`create_typed`, `open_typed`),
    /// for each wait: in-place round trips in the four modes, typed with
    /// typed, and each typed side with the other side chosen by name.
    pub fn typed_shm_in_place() {
        use msgpass::transport::shm::{Shm, Wait};
        run("shm", "typed_shm_in_place", |cx| {
            let mut rng = cx.rng();
            let opts = Options::default();
            for (wait, name) in [
                (Wait::Spin, "shm-spin"),
                (Wait::Block, "shm-block"),
                (Wait::Hybrid, "shm-hybrid"),
            ] {
                let shm = Shm::new(wait);
                let by_name = msgpass::transport::by_name(name).expect("transport");
                assert_eq!(shm.name(), name);
                // Typed server, typed client.
                let ep = format!("typed/{name}");
                let chan = Channel::create_typed(&cx.ns, &ep, &shm, &opts).expect("create_typed");
                assert_eq!(chan.max_msg(), cx.max);
                let s = Server::serve_channel(chan);
                let mut c = Connection::open_typed(&cx.ns, &ep, &shm, &opts).expect("open_typed");
                assert!(c.in_place(), "{name}: typed client not in place");
                mixed_round_trips(&mut c, &mut rng, 100);
                // A client chosen by name, on the same typed server.
                let mut d = Connection::open(&cx.ns, &ep, &*by_name, &opts).expect("open");
                mixed_round_trips(&mut d, &mut rng, 20);
                drop((c, d));
                s.stop();
                // A typed client of a server chosen by name.
                let s = Server::start(&cx.ns, &ep, name);
                let mut c = Connection::open_typed(&cx.ns, &ep, &shm, &opts).expect("open_typed");
                mixed_round_trips(&mut c, &mut rng, 20);
                drop(c);
                s.stop();
            }
        });
    }

    pub fn nested_names_pruned(t: &'static str) {
        run(t, "nested_names_pruned", |cx| {
            let a = cx.server("a/b/c");
            let b = cx.server("a/d");
            for name in ["a/b/c", "a/d"] {
                let mut c = cx.open(name);
                echo(&mut c, 1, name.as_bytes(), &mut [0u8; 64]);
            }
            a.stop();
            let root = cx.ns.root();
            assert!(!root.join("a/b").exists(), "empty a/b not removed");
            assert!(root.join("a/d").exists(), "a/d removed with a/b/c");
            b.stop();
            assert!(!root.join("a").exists(), "empty a not removed");
        });
    }

    /// Ids of the System V message queues that exist, from
    /// /proc/sysvipc/msg (what `ipcs -q` shows).
    fn sysv_queues() -> std::collections::BTreeSet<i32> {
        std::fs::read_to_string("/proc/sysvipc/msg")
            .expect("read /proc/sysvipc/msg")
            .lines()
            .skip(1)
            .filter_map(|l| l.split_whitespace().nth(1)?.parse().ok())
            .collect()
    }

    /// The queues a sysv-msg server serving `endpoint` recorded (its
    /// request queue, then one reply queue per connection), from the
    /// record it keeps beside the endpoint.
    fn recorded_queues(endpoint: &std::path::Path) -> Vec<i32> {
        let mut p = endpoint.as_os_str().to_owned();
        p.push(".msq.lock.lock");
        std::fs::read_to_string(&p)
            .unwrap_or_else(|e| panic!("read {}: {e}", p.to_string_lossy()))
            .lines()
            .skip(1)
            .map(|l| {
                l.split_whitespace()
                    .next()
                    .and_then(|w| w.parse().ok())
                    .unwrap_or_else(|| panic!("bad record line {l:?}"))
            })
            .collect()
    }

    /// Every queue of a sysv-msg channel is removed: with the clients that
    /// leave or die and the server that stops; and when the server is
    /// killed, by the surviving client (its reply queue) and by the next
    /// server claiming the stale endpoint (the rest).
    pub fn sysv_msg_queues_never_leak() {
        run("sysv-msg", "queues_never_leak", |cx| {
            let gone = |ids: &[i32], what: &str| {
                let live = sysv_queues();
                let left: Vec<_> = ids.iter().filter(|i| live.contains(i)).collect();
                assert!(left.is_empty(), "{what}: queues {left:?} left behind");
            };
            // A live server: a client that leaves, one that is killed.
            let s = cx.server("leak/0");
            let mut c = cx.open("leak/0");
            echo(&mut c, 1, b"hello", &mut [0u8; 64]);
            let mut idle = cx.child("client-idle", "leak/0");
            idle.expect_line("MSGPASS_CONNECTED");
            let ids = recorded_queues(&s.path);
            assert_eq!(ids.len(), 3, "request queue + 2 reply queues: {ids:?}");
            let live = sysv_queues();
            assert!(ids.iter().all(|i| live.contains(i)), "{ids:?} not all live");
            drop(c);
            gone(&ids[1..2], "client dropped");
            idle.kill_and_reap();
            // The server drops the dead client within a tick or so.
            let mut c = cx.open("leak/0");
            while call_conns(&mut c) != 1 {
                thread::sleep(Duration::from_millis(20));
            }
            gone(&ids[2..3], "client killed");
            let ids = recorded_queues(&s.path);
            drop(c);
            s.stop();
            gone(&ids, "server stopped");

            // A killed server, with one client surviving and one killed.
            let mut srv = cx.server_child("leak/1");
            let mut c = cx.open("leak/1");
            echo(&mut c, 1, b"hello", &mut [0u8; 64]);
            let mut idle = cx.child("client-idle", "leak/1");
            idle.expect_line("MSGPASS_CONNECTED");
            let ids = recorded_queues(&cx.ns.root().join("leak/1"));
            assert_eq!(ids.len(), 3, "request queue + 2 reply queues: {ids:?}");
            srv.kill_and_reap();
            idle.kill_and_reap();
            match c.call(1, b"anyone?", &mut [0u8; 64]) {
                Err(Error::Disconnected) => {}
                other => panic!("call to a killed server: got {other:?}"),
            }
            drop(c);
            gone(&ids[1..2], "surviving client of a killed server");
            // Only the next server can remove the request queue (the killed
            // client's may be gone or not: its watchdog may have seen the
            // server die first).
            assert!(
                sysv_queues().contains(&ids[0]),
                "who removed the killed server's request queue?"
            );
            cx.replace_stale("leak/1");
            gone(&ids, "stale endpoint replaced");
        });
    }

    /// A client frozen (SIGSTOP) while its server stops cannot remove its
    /// reply queue (its watchdog never runs), and is then killed: the
    /// server must.
    pub fn sysv_msg_frozen_client_leaves_no_queue() {
        run("sysv-msg", "frozen_client_leaves_no_queue", |cx| {
            let s = cx.server("frozen/0");
            let mut idle = cx.child("client-idle", "frozen/0");
            idle.expect_line("MSGPASS_CONNECTED");
            let ids = recorded_queues(&s.path);
            assert_eq!(ids.len(), 2, "request queue + 1 reply queue: {ids:?}");
            freeze(&idle);
            s.stop();
            idle.kill_and_reap();
            let live = sysv_queues();
            let left: Vec<_> = ids.iter().filter(|i| live.contains(i)).collect();
            assert!(left.is_empty(), "queues {left:?} left behind");
        });
    }

    /// What serves the channel in [`sysv_msg_frozen_client_with_a_reply`].
    #[derive(Clone, Copy)]
    pub enum Served {
        /// A server thread ([`Server`]).
        ByOne,
        /// A relay pool of two threads ([`PoolServer`]).
        ByPool,
    }

    /// What becomes of the frozen client once its server stopped.
    #[derive(Clone, Copy)]
    pub enum Then {
        /// It is killed (SIGKILL) without ever running again.
        Kill,
        /// It runs on (SIGCONT), and reports its call and the next.
        Thaw,
    }

    /// A test server of either kind, driven the same way.
    enum AnyServer {
        One(Server),
        Pool(PoolServer),
    }

    impl AnyServer {
        fn event(&self) -> Event {
            match self {
                AnyServer::One(s) => s.event(),
                AnyServer::Pool(p) => p.event(),
            }
        }

        fn release(&self) {
            match self {
                AnyServer::One(s) => s.release(),
                AnyServer::Pool(p) => p.release(),
            }
        }

        /// Stops the server: when this returns, its channel is dropped.
        fn stop(self) {
            match self {
                AnyServer::One(s) => drop(s.stop()),
                AnyServer::Pool(p) => drop(p.stop()),
            }
        }
    }

    /// Sends `sig` to child `c`.
    fn signal(c: &ChildProc, sig: oslayer::process::Signal) {
        let pid = oslayer::process::Pid::from_raw(c.pid() as i32).expect("child pid");
        oslayer::process::kill(pid, sig).expect("signal the child");
    }

    /// Stops child `c` (SIGSTOP) and waits until every thread of it is
    /// stopped, out of any system call it blocked in (a `msgrcv` is left,
    /// to be restarted when the child runs again).
    fn freeze(c: &ChildProc) {
        signal(c, oslayer::process::Signal::STOP);
        let tasks = format!("/proc/{}/task", c.pid());
        let stopped = |stat: String| {
            let state = stat.rsplit_once(") ").and_then(|(_, r)| r.chars().next());
            matches!(state, Some('T' | 't'))
        };
        while !std::fs::read_dir(&tasks)
            .expect("the child's threads")
            .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("stat")).ok())
            .all(stopped)
        {
            thread::sleep(Duration::from_millis(1));
        }
    }

    /// Messages waiting in System V queue `id`, `None` once it is gone.
    fn queued(id: i32) -> Option<u64> {
        oslayer::sysv_msg::count(oslayer::sysv_msg::MsgQueueId(id)).ok()
    }

    /// The queue record beside `endpoint`.
    fn record_of(endpoint: &std::path::Path) -> PathBuf {
        let mut p = endpoint.as_os_str().to_owned();
        p.push(".msq.lock.lock");
        PathBuf::from(p)
    }

    /// A client is frozen (SIGSTOP) with the reply to its call queued for
    /// it when its server stops: the server, not its next one, must
    /// remove the reply queue, since the client, killed, never runs again
    /// (`Then::Kill`: no queue and no record is left); thawed instead, the
    /// client gets its reply, and `Disconnected` for its next call.
    pub fn sysv_msg_frozen_client_with_a_reply(served: Served, then: Then) {
        let test = match (served, then) {
            (Served::ByOne, Then::Kill) => "frozen_client_with_a_reply",
            (Served::ByPool, Then::Kill) => "frozen_client_of_a_pool",
            (_, Then::Thaw) => "frozen_client_thawed",
        };
        run("sysv-msg", test, move |cx| {
            let name = "frozen/1";
            let path = cx.ns.root().join(name);
            let s = match served {
                Served::ByOne => AnyServer::One(cx.server(name)),
                Served::ByPool => AnyServer::Pool(PoolServer::start(&cx.ns, name, cx.t, 2)),
            };
            let mut c = cx.child("client-hold-report", name);
            c.expect_line("MSGPASS_CONNECTED");
            assert!(matches!(s.event(), Event::Held), "the call is not held");
            let ids = recorded_queues(&path);
            assert_eq!(ids.len(), 2, "request queue + 1 reply queue: {ids:?}");
            freeze(&c);
            s.release();
            // The reply waits in the frozen client's queue.
            while queued(ids[1]) != Some(1) {
                thread::sleep(Duration::from_millis(1));
            }
            s.stop();
            if let Then::Thaw = then {
                signal(&c, oslayer::process::Signal::CONT);
                let first = c.expect_line("MSGPASS_FIRST");
                let second = c.expect_line("MSGPASS_SECOND");
                assert_eq!(first, r#"Ok("released")"#, "the thawed call");
                assert_eq!(second, "Err(Disconnected)", "the call after it");
            }
            c.kill_and_reap();
            let live = sysv_queues();
            let left: Vec<_> = ids.iter().filter(|i| live.contains(i)).collect();
            let record = record_of(&path).exists();
            assert!(left.is_empty(), "queues {left:?} left behind");
            assert!(!record, "a queue record left beside the endpoint");
        });
    }

    /// A client frozen with a reply queued for it, then killed, while its
    /// server lives: the server removes its queue when it sees the
    /// session hang up, and serves on.
    pub fn sysv_msg_killed_client_with_a_reply_leaves_no_queue() {
        run("sysv-msg", "killed_client_with_a_reply", |cx| {
            let s = cx.server("killed/0");
            let mut c = cx.child("client-hold", "killed/0");
            c.expect_line("MSGPASS_CONNECTED");
            assert!(matches!(s.event(), Event::Held), "the call is not held");
            let ids = recorded_queues(&s.path);
            assert_eq!(ids.len(), 2, "request queue + 1 reply queue: {ids:?}");
            freeze(&c);
            s.release();
            while queued(ids[1]) != Some(1) {
                thread::sleep(Duration::from_millis(1));
            }
            c.kill_and_reap();
            // Within a tick or so (the run's watchdog bounds the wait).
            while queued(ids[1]).is_some() {
                thread::sleep(Duration::from_millis(5));
            }
            let mut next = cx.open("killed/0");
            echo(&mut next, 1, b"still serving", &mut [0u8; 64]);
            assert_eq!(call_conns(&mut next), 1, "the killed client is counted");
            drop(next);
            s.stop();
            let live = sysv_queues();
            let left: Vec<_> = ids.iter().filter(|i| live.contains(i)).collect();
            assert!(left.is_empty(), "queues {left:?} left behind");
        });
    }
}
