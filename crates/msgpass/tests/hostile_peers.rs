//! Hostile peers of every transport, through the public API: clients that
//! are real child processes (this test binary re-executed to run only
//! [`child_entry`]) and that misbehave the ways any process can, whatever
//! the transport underneath:
//!
//! - a client frozen (SIGSTOP) in the middle of its stream of calls, which
//!   may hold a request half written, a reply unread, a lock or a slot;
//! - a client flooding the server from several connections at once (one-way
//!   messages where the transport carries them, calls where not), served
//!   beside others while it floods, then frozen with its queues full;
//! - clients killed (SIGKILL) in the middle of their calls, one after
//!   another, each of which the server must forget without a trace;
//! - a client frozen in the middle of connecting or leaving;
//! - several frozen attackers at once;
//! - a server stopped beside frozen clients, and its successor.
//!
//! Each check runs an honest client beside the attackers, which must have
//! all its calls answered within [`HONEST_BOUND`] (a bound on a hang, not a
//! measure of speed), and checks that nothing is left afterwards: the server
//! drops every dead attacker's connection, the namespace is empty, /dev/shm
//! and /dev/mqueue gained no entry, no System V queue the server recorded
//! outlives it, and nothing stays mounted under the namespace (fuse).
//!
//! Raw-byte attacks on particular wires live in `hostile_stream.rs`,
//! `hostile_rendezvous.rs` and `hostile_fds.rs`; this file is the matrix
//! that every transport in `msgpass::transport::NAMES` must pass.

#[macro_use]
mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use msgpass::{Connection, Namespace, Options};

/// Full test path of the child entry point (top level of this file).
const CHILD_ENTRY: &str = "child_entry";

/// Calls the honest client makes beside the attackers, each time.
const HONEST_CALLS: usize = 20;

/// How long the honest client may take for its calls, however the
/// attackers behave (generous: this bounds a hang, it does not time speed).
const HONEST_BOUND: Duration = Duration::from_secs(5);

/// How long the server may take to drop a dead attacker's connection and
/// whatever it held (a few ticks of the default 100 ms, with room to spare).
const SETTLE_BOUND: Duration = Duration::from_secs(5);

/// The endpoint every test serves.
const ENDPOINT: &str = "hostile/0";

/// Connections a flooding child floods from, one thread each.
const FLOOD_THREADS: usize = 3;

/// Sends (or calls) each flooding thread makes before the flood counts as
/// under way.
const FLOOD_WARMUP: usize = 50;

macro_rules! hostile_tests {
    ($($module:ident: $transport:literal),* $(,)?) => {
        $(mod $module {
            const T: &str = $transport;

            #[test]
            fn a_frozen_client_stops_nobody() {
                super::attacks::a_frozen_client_stops_nobody(T)
            }
            #[test]
            fn a_flooding_client_that_never_reads_stops_nobody() {
                super::attacks::a_flooding_client_that_never_reads_stops_nobody(T)
            }
            #[test]
            fn a_client_killed_while_holding_a_request_leaves_nothing() {
                super::attacks::a_client_killed_while_holding_a_request_leaves_nothing(T)
            }
            #[test]
            fn a_client_frozen_while_connecting_stops_nobody() {
                super::attacks::a_client_frozen_while_connecting_stops_nobody(T)
            }
            #[test]
            fn many_attackers_at_once() {
                super::attacks::many_attackers_at_once(T)
            }
            #[test]
            fn frozen_clients_do_not_hold_up_shutdown() {
                super::attacks::frozen_clients_do_not_hold_up_shutdown(T)
            }
        })*

        /// The transports instantiated, from the same invocation.
        const INSTANTIATED: &[&str] = &[$($transport),*];
    };
}

every_transport!(hostile_tests);

#[test]
fn every_transport_is_attacked() {
    assert_every_transport(INSTANTIATED, "hostile_tests!");
}

/// Entry point of child processes; does nothing in a normal test run.
#[test]
fn child_entry() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    child_self_destruct();
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("child needs {k}"));
    let ns = Namespace::open(var(CHILD_NS)).expect("child: open namespace");
    let name = var(CHILD_NAME);
    let t = var(CHILD_TRANSPORT);
    let open = || {
        let tr = msgpass::transport::by_name(&t).expect("child: transport");
        Connection::open(&ns, &name, &*tr, &Options::default()).expect("child: connect")
    };
    match role.as_str() {
        "caller" => child::caller(open()),
        "flooder" => child::flooder((0..FLOOD_THREADS).map(|_| open()).collect()),
        "connector" => child::connector(open),
        other => panic!("unknown child role {other}"),
    }
    thread::sleep(CHILD_LIFETIME);
}

/// What the attacking children do until they are frozen or killed.
mod child {
    use super::*;

    /// Calls in a loop, with payloads from empty to the maximum (so that a
    /// signal often lands with a request or a reply half across); says
    /// `MSGPASS_CALLING` after the first answer.
    pub fn caller(mut c: Connection) {
        let max = c.max_msg();
        let sizes = [0, 100, max / 2, max];
        let mut buf = vec![0u8; max];
        for i in 0usize.. {
            let req = vec![i as u8; sizes[i % sizes.len()]];
            if let Err(e) = c.call(1, &req, &mut buf) {
                println!("MSGPASS_CALL_FAILED {e}");
                return;
            }
            if i == 0 {
                println!("MSGPASS_CALLING");
            }
        }
    }

    /// Connects, calls once and leaves, in a loop (so that a signal often
    /// lands in the middle of a handshake); says `MSGPASS_CONNECTING`
    /// after the first round.
    pub fn connector(open: impl Fn() -> Connection) {
        for i in 0usize.. {
            let mut c = open();
            if let Err(e) = c.call(1, b"hello", &mut [0u8; 64]) {
                println!("MSGPASS_CALL_FAILED {e}");
                return;
            }
            drop(c);
            if i == 0 {
                println!("MSGPASS_CONNECTING");
            }
        }
    }

    /// Floods from every connection of `conns` on its own thread (one-way
    /// messages of the largest size where the transport carries them,
    /// calls where not); says `MSGPASS_FLOODING` once every thread is
    /// under way. Never reads anything it is not made to.
    pub fn flooder(conns: Vec<Connection>) {
        let (tx, warm) = mpsc::channel();
        for c in conns {
            let tx = tx.clone();
            thread::spawn(move || flood(c, tx));
        }
        drop(tx);
        for _ in 0..FLOOD_THREADS {
            warm.recv()
                .expect("a flooding thread died before warming up");
        }
        println!("MSGPASS_FLOODING");
    }

    fn flood(mut c: Connection, warm: mpsc::Sender<()>) {
        let max = c.max_msg();
        let req = vec![0xF1u8; max];
        let mut buf = vec![0u8; max];
        for i in 0usize.. {
            let r = if c.supports_oneway() {
                c.send_oneway(1, &req)
            } else {
                c.call(1, &req, &mut buf).map(drop)
            };
            if let Err(e) = r {
                println!("MSGPASS_FLOOD_FAILED {e}");
                return;
            }
            if i == FLOOD_WARMUP {
                let _ = warm.send(());
            }
        }
    }
}

mod attacks {
    use super::*;

    /// What a test body gets: its transport, private namespace, and the
    /// System V queues seen recorded by its server (sysv-msg only).
    pub struct Cx {
        pub t: &'static str,
        pub ns: Namespace,
        dir: PathBuf,
        queues: Mutex<BTreeSet<i32>>,
    }

    /// What must be the same once the server has forgotten the attackers:
    /// the files in the namespace and the queues the server records.
    #[derive(Debug, PartialEq)]
    pub struct Trace {
        files: Vec<PathBuf>,
        queues: Vec<i32>,
    }

    impl Cx {
        pub fn open(&self) -> Connection {
            let tr = msgpass::transport::by_name(self.t).expect("known transport");
            Connection::open(&self.ns, ENDPOINT, &*tr, &Options::default())
                .unwrap_or_else(|e| panic!("{}: open {ENDPOINT}: {e}", self.t))
        }

        pub fn server(&self) -> Server {
            Server::start(&self.ns, ENDPOINT, self.t)
        }

        /// An attacking child in `role` (`caller`, `connector` or
        /// `flooder`), under way
        /// when this returns.
        pub fn attacker(&self, role: &str) -> ChildProc {
            let c = ChildProc::spawn(
                CHILD_ENTRY,
                role,
                &[
                    (CHILD_NS, self.dir.as_path()),
                    (CHILD_TRANSPORT, self.t.as_ref()),
                    (CHILD_NAME, ENDPOINT.as_ref()),
                ],
            );
            c.expect_line(match role {
                "caller" => "MSGPASS_CALLING",
                "connector" => "MSGPASS_CONNECTING",
                _ => "MSGPASS_FLOODING",
            });
            self.note_queues();
            c
        }

        /// Runs [`HONEST_CALLS`] honest calls on a new connection, which
        /// must all be answered within [`HONEST_BOUND`].
        pub fn honest(&self, beside: &str) {
            let (ns, t) = (self.ns.clone(), self.t);
            let who = format!("{t}: beside {beside}");
            honest_calls(&who, HONEST_CALLS, HONEST_BOUND, move || {
                let tr = msgpass::transport::by_name(t).expect("known transport");
                Connection::open(&ns, ENDPOINT, &*tr, &Options::default())
                    .unwrap_or_else(|e| panic!("{t}: honest open: {e}"))
            });
        }

        /// The namespace's files and the server's recorded queues now.
        pub fn trace(&self) -> Trace {
            Trace {
                files: list_recursive(&self.dir),
                queues: self.note_queues(),
            }
        }

        /// Waits until the server serves exactly `conns` connections (asked
        /// on `asker`, one of them) and the trace is `want` again: every
        /// dead attacker is forgotten. Fails after [`SETTLE_BOUND`].
        pub fn settled(&self, asker: &mut Connection, conns: u64, want: &Trace) {
            let deadline = Instant::now() + SETTLE_BOUND;
            loop {
                let n = connections(asker);
                let now = self.trace();
                if n == conns && now == *want {
                    return;
                }
                assert!(
                    Instant::now() < deadline,
                    "{}: dead attackers not forgotten within {SETTLE_BOUND:?}: \
                     {n} connections (want {conns}), {now:?} (want {want:?})",
                    self.t
                );
                thread::sleep(Duration::from_millis(20));
            }
        }

        /// A connection to ask the server how many it serves, and the trace
        /// with it open and nobody else: what [`Cx::settled`] waits for.
        /// Taken after a call, which the server answers only once it has
        /// finished setting the connection up (fifo unlinks its names then).
        pub fn baseline(&self) -> (Connection, Trace) {
            let mut asker = self.open();
            // The count is taken before the receive that accepts the asker.
            connections(&mut asker);
            assert_eq!(connections(&mut asker), 1, "{}: a fresh server", self.t);
            (asker, self.trace())
        }

        /// The queues a sysv-msg server records now (its request queue,
        /// then one reply queue per connection), remembered so that the
        /// end of the test can check that none is left; empty for other
        /// transports.
        fn note_queues(&self) -> Vec<i32> {
            if self.t != "sysv-msg" {
                return Vec::new();
            }
            let mut record = self.dir.join(ENDPOINT).into_os_string();
            record.push(".msq.lock.lock");
            let ids: Vec<i32> = std::fs::read_to_string(&record)
                .map(|s| s.lines().skip(1).filter_map(first_number).collect())
                .unwrap_or_default();
            let mut seen = self.queues.lock().expect("queues lock");
            seen.extend(ids.iter().copied());
            ids
        }
    }

    fn first_number(line: &str) -> Option<i32> {
        line.split_whitespace().next()?.parse().ok()
    }

    /// The server's connection count, asked on `c`.
    fn connections(c: &mut Connection) -> u64 {
        let mut b = [0u8; 8];
        let n = c.call(CMD_CONNS, &[], &mut b).expect("CONNS call");
        assert_eq!(n, 8, "CONNS reply");
        u64::from_le_bytes(b)
    }

    /// Stops a child where it is (SIGSTOP); it stays connected.
    fn freeze(c: &ChildProc) {
        let pid = oslayer::process::Pid::from_raw(c.pid() as i32).expect("child pid");
        oslayer::process::kill(pid, oslayer::process::Signal::STOP).expect("SIGSTOP");
    }

    /// Runs `body` under the watchdog in a fresh namespace, then checks
    /// that nothing is left: no file in the namespace, no new entry in
    /// /dev/shm or /dev/mqueue, no mount under it, no System V queue the
    /// server recorded. A transport that cannot run here (fuse without
    /// root) is skipped with the reason, and fails under CI.
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
        let tns = TestNs::new();
        let cx = std::sync::Arc::new(Cx {
            t,
            ns: tns.ns.clone(),
            dir: tns.dir().to_path_buf(),
            queues: Mutex::new(BTreeSet::new()),
        });
        let in_body = std::sync::Arc::clone(&cx);
        watchdog(&label, WATCHDOG, move || body(&in_body));
        let mounted = mounts_under(tns.dir());
        assert!(mounted.is_empty(), "{label}: left mounted: {mounted:?}");
        let queues = cx.queues.lock().expect("queues lock").clone();
        let left: Vec<_> = sysv_queues().intersection(&queues).copied().collect();
        assert!(left.is_empty(), "{label}: System V queues left: {left:?}");
        tns.finish();
    }

    /// Mount points under `dir` (from /proc/self/mountinfo).
    fn mounts_under(dir: &Path) -> Vec<String> {
        let prefix = format!("{}/", dir.display());
        std::fs::read_to_string("/proc/self/mountinfo")
            .expect("read /proc/self/mountinfo")
            .lines()
            .filter_map(|l| l.split(' ').nth(4))
            .filter(|m| m.starts_with(&prefix))
            .map(str::to_string)
            .collect()
    }

    /// Ids of the System V message queues that exist (what `ipcs -q` shows).
    fn sysv_queues() -> BTreeSet<i32> {
        std::fs::read_to_string("/proc/sysvipc/msg")
            .map(|s| s.lines().skip(1).filter_map(second_number).collect())
            .unwrap_or_default()
    }

    fn second_number(line: &str) -> Option<i32> {
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// A client frozen in its stream of calls, whatever it holds, keeps
    /// nobody waiting; killed, it is forgotten.
    pub fn a_frozen_client_stops_nobody(t: &'static str) {
        run(t, "a_frozen_client_stops_nobody", |cx| {
            let s = cx.server();
            let (mut asker, clean) = cx.baseline();
            let mut attacker = cx.attacker("caller");
            freeze(&attacker);
            cx.honest("a frozen caller");
            attacker.kill_and_reap();
            cx.settled(&mut asker, 1, &clean);
            drop(asker);
            s.stop();
        });
    }

    /// A client frozen in the middle of connecting (or leaving), which may
    /// have left a handshake half done, keeps nobody waiting; killed, it
    /// is forgotten, with whatever the handshake made.
    pub fn a_client_frozen_while_connecting_stops_nobody(t: &'static str) {
        run(t, "a_client_frozen_while_connecting_stops_nobody", |cx| {
            let s = cx.server();
            let (mut asker, clean) = cx.baseline();
            let mut attacker = cx.attacker("connector");
            freeze(&attacker);
            cx.honest("a client frozen while connecting");
            attacker.kill_and_reap();
            cx.settled(&mut asker, 1, &clean);
            drop(asker);
            s.stop();
        });
    }

    /// A client flooding from several connections shares the server with
    /// an honest one, and frozen with everything it sent in flight (its
    /// queues full, replies unread) keeps nobody waiting; killed, it is
    /// forgotten.
    pub fn a_flooding_client_that_never_reads_stops_nobody(t: &'static str) {
        run(t, "a_flooding_client_that_never_reads_stops_nobody", |cx| {
            let s = cx.server();
            let (mut asker, clean) = cx.baseline();
            let mut attacker = cx.attacker("flooder");
            cx.honest("a live flood");
            freeze(&attacker);
            cx.honest("a frozen flood");
            attacker.kill_and_reap();
            cx.settled(&mut asker, 1, &clean);
            drop(asker);
            s.stop();
        });
    }

    /// Clients killed in the middle of their calls or one-way floods, one
    /// after another: after each, an honest client is served and the
    /// server has forgotten the dead one, all it held and every file it
    /// made.
    pub fn a_client_killed_while_holding_a_request_leaves_nothing(t: &'static str) {
        const ATTACKERS: usize = 5;
        run(
            t,
            "a_client_killed_while_holding_a_request_leaves_nothing",
            |cx| {
                let s = cx.server();
                let (mut asker, clean) = cx.baseline();
                let mut rng = Rng::for_test(&format!("{}::killed", cx.t));
                for i in 0..ATTACKERS {
                    let role = if i % 2 == 0 { "caller" } else { "flooder" };
                    let mut attacker = cx.attacker(role);
                    // Jitter, not synchronisation: lands the kill at
                    // different points of the child's calls.
                    thread::sleep(Duration::from_micros(rng.upto(20_000) as u64));
                    attacker.kill_and_reap();
                    cx.honest(&format!("killed {role} {i}"));
                    cx.settled(&mut asker, 1, &clean);
                }
                drop(asker);
                s.stop();
            },
        );
    }

    /// Several attackers frozen at once, callers and flooders, keep nobody
    /// waiting; killed, all are forgotten.
    pub fn many_attackers_at_once(t: &'static str) {
        const ATTACKERS: usize = 4;
        run(t, "many_attackers_at_once", |cx| {
            let s = cx.server();
            let (mut asker, clean) = cx.baseline();
            // Each is frozen once under way, before the next starts: they
            // all hold what they held, and the spinning transports' clients
            // do not starve the start of the next on a small machine.
            let mut attackers: Vec<ChildProc> = (0..ATTACKERS)
                .map(|i| {
                    let a = cx.attacker(if i % 2 == 0 { "caller" } else { "flooder" });
                    freeze(&a);
                    a
                })
                .collect();
            cx.honest("four frozen attackers");
            attackers.iter_mut().for_each(ChildProc::kill_and_reap);
            cx.settled(&mut asker, 1, &clean);
            drop(asker);
            s.stop();
        });
    }

    /// A server stopped while attackers are frozen (a caller and a
    /// flooder, holding whatever they hold) stops within the bound; once
    /// they are killed, the next server of the endpoint is served as ever,
    /// and when it stops nothing of either is left.
    pub fn frozen_clients_do_not_hold_up_shutdown(t: &'static str) {
        run(t, "frozen_clients_do_not_hold_up_shutdown", |cx| {
            let s = cx.server();
            let mut attackers = ["caller", "flooder"].map(|role| {
                let a = cx.attacker(role);
                freeze(&a);
                a
            });
            let stopping = Instant::now();
            s.stop();
            assert!(
                stopping.elapsed() < SETTLE_BOUND,
                "{}: stopping beside frozen clients took {:?}",
                cx.t,
                stopping.elapsed()
            );
            attackers.iter_mut().for_each(ChildProc::kill_and_reap);
            // The next server claims the endpoint (and clears what a
            // frozen client kept its predecessor from removing).
            let s = cx.server();
            cx.honest("the killed clients of the last server");
            s.stop();
        });
    }
}
