//! A server at scale, on every transport, with real processes and real
//! connections (counts and correctness, never timing):
//!
//! - **idle clients**: as many idle, connected clients as the transport
//!   can have here (10,000, or fewer where a limit says so: see
//!   [`idle_count`]), held by child processes, beside an honest client
//!   whose every reply is checked; the server counts them all, and drops
//!   them all once the children die;
//! - **active clients**: 64 client processes calling one server at once,
//!   each checking every reply and its own sequence numbers (8 on the
//!   transports whose clients spin while they wait: 64 spinning processes
//!   on a machine of two CPUs measure the scheduler, not the server);
//! - **fairness**: a client flooding from 16 connections cannot starve an
//!   honest one: between two of the honest client's requests the server
//!   serves at most two rounds of the flooder's connections (one-way
//!   messages where the transport has them, so that its connections are
//!   always ready; calls on sysv-msg, whose requests share one kernel
//!   queue served in arrival order, so that a flood of one-way messages
//!   fills it for everyone: see `transport::sysv_msg`; 4 connections on the
//!   spinning transports). The flooder runs on another CPU than the server and the
//!   honest client, and the honest client runs SCHED_FIFO (root), so that
//!   the count measures the server, not how long the scheduler keeps the
//!   honest client from sending its next request (a time slice of a busy
//!   server: thousands of requests).
//!
//! The tests of this file run one at a time (the idle clients need most
//! of this process's descriptors), each under a watchdog, in a private
//! namespace left empty.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;
use msgpass::transport::Transport;
use msgpass::{Channel, Connection, Namespace, Options};

/// Full test path of the child entry point.
const CHILD_ENTRY: &str = "child_entry";
/// How many connections a child holds (its descriptors: at most 3 each).
const COUNT_ENV: &str = "MSGPASS_TEST_COUNT";
/// Idle clients beside the honest one, where the transport allows.
const IDLE: usize = 10_000;
/// Most idle connections one child holds.
const PER_CHILD: usize = 2_000;
/// Active client processes.
const ACTIVE: usize = 64;
/// Active client processes on a transport whose clients spin.
const ACTIVE_SPINNING: usize = 8;
/// Calls each active client makes.
const ACTIVE_CALLS: usize = 100;
/// The flooder's connections.
const FLOOD: usize = 16;
/// The flooder's connections on a transport whose clients spin.
const FLOOD_SPINNING: usize = 4;

/// True when transport `t`'s clients spin while they wait.
fn spins(t: &str) -> bool {
    msgpass::transport::info(t).is_ok_and(|i| i.wait == msgpass::transport::Wait::Spin)
}
/// This file's tests take turns: the idle clients' server needs most of
/// this process's descriptors.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
/// How long a scale test may take: a liveness bound, generous for a
/// loaded machine of two CPUs, where opening 10,000 connections once took
/// over a minute.
const SCALE_WATCHDOG: Duration = Duration::from_secs(300);

macro_rules! scale_tests {
    ($($module:ident: $transport:literal),* $(,)?) => {
        $(mod $module {
            const T: &str = $transport;

            #[test]
            fn idle_clients_beside_an_honest_one() {
                super::idle_clients_beside_an_honest_one(T)
            }
            #[test]
            fn sixty_four_active_clients() {
                super::sixty_four_active_clients(T)
            }
            #[test]
            fn a_flooding_client_starves_nobody() {
                super::a_flooding_client_starves_nobody(T)
            }
            #[test]
            fn a_busy_client_starves_nobody() {
                super::a_busy_client_starves_nobody(T)
            }
        })*

        /// The transports instantiated, from the same invocation.
        const INSTANTIATED: &[&str] = &[$($transport),*];
    };
}

every_transport!(scale_tests);

#[test]
fn every_transport_is_scaled() {
    assert_every_transport(INSTANTIATED, "scale_tests!");
}

/// How many idle clients transport `t` can have beside the honest one in
/// this process: [`IDLE`], or fewer where
/// - the server's descriptors per connection times the count would not
///   fit this process's RLIMIT_NOFILE (raised to its hard limit first;
///   20,000 here, and root cannot raise the hard one without
///   CAP_SYS_RESOURCE), less room for the rest of the test;
/// - the system caps it: posix-mq two queues a connection within
///   `fs.mqueue.queues_max` (256 by default, all users together);
///   sysv-msg one watchdog thread a client (a System V queue cannot be
///   polled), kept to 2,000 threads.
fn idle_count(t: &str) -> usize {
    let info = msgpass::transport::info(t).expect("known transport");
    let nofile = oslayer::rlimit::raise_soft_to_hard(oslayer::rlimit::Resource::Nofile)
        .expect("raise RLIMIT_NOFILE")
        .unwrap_or(u64::MAX) as usize;
    let by_fds = match info.server_fds {
        0 => IDLE,
        n => nofile.saturating_sub(400) / n as usize,
    };
    let by_system = match t {
        "posix-mq" => {
            let qmax: usize = std::fs::read_to_string("/proc/sys/fs/mqueue/queues_max")
                .ok()
                .and_then(|s| s.trim().parse().ok())
                .unwrap_or(256);
            // Two queues a connection, within the system's count of
            // queues and this user's RLIMIT_MSGQUEUE, less the honest
            // client's and room for other users of the system.
            let by_bytes = oslayer::rlimit::soft(oslayer::rlimit::Resource::Msgqueue).map_or(
                usize::MAX,
                |bytes| {
                    let payload = msgpass::transport::by_name(t)
                        .expect("transport")
                        .max_msg(Options::default().max_msg);
                    let per = msgpass::transport::posix_mq::queue_bytes_per_connection(payload);
                    (bytes / per) as usize
                },
            );
            (qmax / 2).min(by_bytes).saturating_sub(8)
        }
        "sysv-msg" => 2_000,
        _ => IDLE,
    };
    IDLE.min(by_fds).min(by_system) - 1
}

/// Runs `body` for transport `t` (skipping one this machine cannot serve,
/// which under CI is a failure) in a fresh namespace, one test at a time.
fn run(t: &'static str, test: &str, body: impl FnOnce(&Namespace) + Send + 'static) {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let label = format!("{t}::{test}");
    let info = msgpass::transport::info(t).expect("known transport");
    if let Some(why) = info.unavailable() {
        assert!(std::env::var_os("CI").is_none(), "{label}: {why}");
        println!("{label}: skipped: {why}");
        return;
    }
    let tns = TestNs::new();
    let ns = tns.ns.clone();
    watchdog(&label, SCALE_WATCHDOG, move || body(&ns));
    tns.finish();
}

/// Child processes of this test binary in `role`, for transport `t` and
/// endpoint `name` in `ns`, `count` connections each.
fn child(ns: &Namespace, t: &str, name: &str, role: &str, count: usize) -> ChildProc {
    let count = count.to_string();
    ChildProc::spawn(
        CHILD_ENTRY,
        role,
        &[
            (CHILD_NS, ns.root()),
            (CHILD_TRANSPORT, t.as_ref()),
            (CHILD_NAME, name.as_ref()),
            (COUNT_ENV, count.as_ref()),
        ],
    )
}

/// Asks the test server how many clients it has.
fn connections(c: &mut Connection) -> u64 {
    let mut b = [0u8; 8];
    let n = c.call(CMD_CONNS, &[], &mut b).expect("CONNS call");
    assert_eq!(n, 8);
    u64::from_le_bytes(b)
}

/// Echoes a request carrying `who` and `seq`, checking every byte.
fn checked_call(c: &mut Connection, who: u32, seq: u32, buf: &mut [u8]) {
    let mut req = [0u8; 24];
    req[..4].copy_from_slice(&who.to_le_bytes());
    req[4..8].copy_from_slice(&seq.to_le_bytes());
    req[8..].fill(seq as u8);
    let cmd = seq % (ECHO_LAST + 1);
    let want = echo_reply(cmd, &req, c.max_msg());
    let n = c
        .call(cmd, &req, buf)
        .unwrap_or_else(|e| panic!("client {who}, call {seq}: {e}"));
    assert_eq!(
        &buf[..n],
        &want[..],
        "client {who}, call {seq}: wrong reply"
    );
}

fn idle_clients_beside_an_honest_one(t: &'static str) {
    run(t, "idle_clients_beside_an_honest_one", move |ns| {
        let idle = idle_count(t);
        let server = Server::start(ns, "idle/0", t);
        let mut children = Vec::new();
        let mut left = idle;
        while left > 0 {
            let n = left.min(PER_CHILD);
            let c = child(ns, t, "idle/0", "idle", n);
            let held = c.expect_line("MSGPASS_IDLE");
            assert_eq!(held, n.to_string(), "{t}: a child's idle connections");
            children.push(c);
            left -= n;
        }
        let tr = msgpass::transport::by_name(t).expect("transport");
        let mut honest =
            Connection::open(ns, "idle/0", &*tr, &Options::default()).expect("honest open");
        let mut buf = vec![0u8; 256];
        for seq in 0..2_000 {
            checked_call(&mut honest, 0, seq, &mut buf);
        }
        assert_eq!(
            connections(&mut honest),
            idle as u64 + 1,
            "{t}: the server's count of its clients"
        );
        for mut c in children {
            c.kill_and_reap();
        }
        // Every dead client is dropped (the watchdog bounds how soon).
        while connections(&mut honest) != 1 {
            thread::sleep(Duration::from_millis(20));
        }
        drop(honest);
        server.stop();
    });
}

fn sixty_four_active_clients(t: &'static str) {
    run(t, "sixty_four_active_clients", move |ns| {
        let active = if spins(t) { ACTIVE_SPINNING } else { ACTIVE };
        let server = Server::start(ns, "active/0", t);
        let children: Vec<ChildProc> = (0..active)
            .map(|k| child(ns, t, "active/0", "active", k))
            .collect();
        for (k, c) in children.iter().enumerate() {
            let done = c.expect_line("MSGPASS_DONE");
            assert_eq!(done, format!("{k} {ACTIVE_CALLS}"), "{t}: client {k}");
        }
        drop(children);
        // CMD_CONNS is not counted: the server served exactly the calls.
        assert_eq!(server.stop(), (active * ACTIVE_CALLS) as u64);
    });
}

/// The server of the fairness test: echoes, and answers `CMD_CONNS` with
/// how many requests it has served so far.
fn counting_server(
    ns: &Namespace,
    t: &str,
    stop: Arc<AtomicBool>,
    served: Arc<AtomicU64>,
) -> thread::JoinHandle<()> {
    let tr = msgpass::transport::by_name(t).expect("transport");
    let mut chan = Channel::create(ns, "flood/0", &*tr, &Options::default()).expect("create");
    chan.set_stop_flag(stop);
    let max = chan.max_msg();
    thread::spawn(move || {
        pin(0);
        while let Ok(Some(req)) = chan.receive() {
            let n = served.fetch_add(1, Ordering::Relaxed);
            let r = match req.cmd() {
                CMD_CONNS => req.reply(&n.to_le_bytes()),
                cmd => {
                    let out = echo_reply(cmd, req.data(), max);
                    req.reply(&out)
                }
            };
            r.expect("reply");
        }
    })
}

fn a_flooding_client_starves_nobody(t: &'static str) {
    let flood = if spins(t) { FLOOD_SPINNING } else { FLOOD };
    // Between two of the honest client's requests: one round of the
    // flooder's connections, and the one under way.
    flood_beside_an_honest_client(t, "a_flooding_client_starves_nobody", flood, 2 * flood);
}

/// The most requests of one busy connection a server serves between two
/// looks at its other clients: 16 in the reactor (`SOLO_LOOK` in
/// `transport/serve/reactor/`), 64 in the shm server (`TELL_EVERY` in
/// `transport/mechanisms/shm/server.rs`).
const LOOK_EVERY: usize = 64;

/// One busy connection and an honest client: the server may serve the
/// busy one alone for a while (see "one active client among idle ones"
/// in `transport/serve/reactor/`; the shm server's watched slots), but must
/// look at the others every [`LOOK_EVERY`] of its requests at most.
fn a_busy_client_starves_nobody(t: &'static str) {
    flood_beside_an_honest_client(t, "a_busy_client_starves_nobody", 1, LOOK_EVERY + 1);
}

/// A client flooding from `flood` connections beside an honest one, which
/// checks that at most `bound` requests are served between two of its own.
fn flood_beside_an_honest_client(t: &'static str, test: &'static str, flood: usize, bound: usize) {
    run(t, test, move |ns| {
        let cpus = cpu_count();
        let stop = Arc::new(AtomicBool::new(false));
        let served = Arc::new(AtomicU64::new(0));
        let server = counting_server(ns, t, Arc::clone(&stop), Arc::clone(&served));
        pin(0);
        if let Err(why) = preempt_when_woken(t) {
            assert!(std::env::var_os("CI").is_none(), "{t}: {why}");
            println!("{t}::{test}: skipped: {why}");
            stop.store(true, Ordering::Relaxed);
            server.join().expect("server thread");
            return;
        }
        let flooder = child(ns, t, "flood/0", "flood", flood);
        flooder.expect_line("MSGPASS_FLOODING");
        let tr = msgpass::transport::by_name(t).expect("transport");
        let mut honest =
            Connection::open(ns, "flood/0", &*tr, &Options::default()).expect("honest open");
        // The first call is not counted: a connection's set-up (tcp pairs
        // its stream with its session) takes the server a round or two.
        served_so_far(&mut honest);
        let mut worst = 0;
        for _ in 0..200 {
            if flood == 1 {
                // Long enough for the server to take to the busy
                // connection alone again, so that our call must be found
                // by a look at the others.
                thread::sleep(Duration::from_millis(1));
            }
            // Requests served while our call waited (the server counts
            // each as it takes it, ours included): at most `bound`.
            let before = served.load(Ordering::Relaxed);
            let at = served_so_far(&mut honest);
            worst = worst.max(at - before);
        }
        drop(flooder);
        drop(honest);
        stop.store(true, Ordering::Relaxed);
        server.join().expect("server thread");
        let verdict = format!(
            "{t}: {worst} requests of a {flood}-connection flood served while an honest client's call waited"
        );
        if spins(t) && cpus < 3 {
            // A spinning server, a spinning flooder and the honest client
            // each need a CPU of their own: with fewer, a count of
            // requests measures who the scheduler ran. Here the honest
            // client's 200 calls being answered is the check.
            println!("{verdict} (not judged: fewer than 3 CPUs for spinning peers)");
            return;
        }
        assert!(worst <= bound as u64, "{verdict}");
    });
}

/// How many CPUs this process may run on.
fn cpu_count() -> usize {
    oslayer::sched::affinity().map_or(1, |cpus| cpus.len())
}

/// Pins the calling thread (and the threads it starts) to CPU `cpu`, when
/// the machine has it.
fn pin(cpu: usize) {
    if oslayer::sched::affinity().is_ok_and(|cpus| cpus.contains(&cpu) && cpus.len() > 1) {
        oslayer::sched::set_affinity(&[cpu]).expect("pin");
    }
}

/// Makes the calling thread (the honest client) run at once when its reply
/// wakes it: SCHED_FIFO, unless it spins while it waits (a spinning
/// real-time thread would keep the server from its CPU).
fn preempt_when_woken(t: &str) -> Result<(), String> {
    let info = msgpass::transport::info(t).expect("known transport");
    if info.wait == msgpass::transport::Wait::Spin {
        return Ok(());
    }
    oslayer::sched::set_policy(oslayer::sched::Policy::Fifo(10))
        .map_err(|e| format!("SCHED_FIFO for the honest client (needs root or CAP_SYS_NICE): {e}"))
}

/// The counting server's count, asked with a call.
fn served_so_far(c: &mut Connection) -> u64 {
    connections(c)
}

/// A server raises its soft descriptor limit to the hard one when it
/// creates its first channel (in a child, whose limit starts low).
#[test]
fn a_server_raises_its_descriptor_limit() {
    let tns = TestNs::new();
    let c = ChildProc::spawn(
        CHILD_ENTRY,
        "raise",
        &[
            (CHILD_NS, tns.dir()),
            (CHILD_TRANSPORT, "uds".as_ref()),
            (CHILD_NAME, "raise/0".as_ref()),
            (COUNT_ENV, "0".as_ref()),
        ],
    );
    let got = c.expect_line("MSGPASS_LIMITS");
    let [before, after, hard]: [&str; 3] = got
        .split_whitespace()
        .collect::<Vec<_>>()
        .try_into()
        .expect("three limits");
    assert_eq!(before, "256", "the child's soft limit before");
    assert_eq!(after, hard, "the soft limit after creating a channel");
    drop(c);
    tns.finish();
}

/// Entry point of child processes; does nothing in a normal test run.
#[test]
fn child_entry() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    // The children live as long as a test may (they die with it, or
    // when it kills them), not the minute of other tests' children: the
    // first idle ones must outlive the opening of the last.
    child_self_destruct_after(SCALE_WATCHDOG);
    let (ns, name, t) = child_context();
    let count: usize = std::env::var(COUNT_ENV)
        .ok()
        .and_then(|c| c.parse().ok())
        .expect("child: count");
    if role == "raise" {
        return report_raised_limit(&ns, &name, &*t);
    }
    let _ = oslayer::rlimit::raise_soft_to_hard(oslayer::rlimit::Resource::Nofile);
    match role.as_str() {
        "idle" => hold_idle(&ns, &name, &*t, count),
        "active" => {
            let mut c = open(&ns, &name, &*t);
            let mut buf = vec![0u8; 256];
            for seq in 0..ACTIVE_CALLS as u32 {
                checked_call(&mut c, count as u32, seq, &mut buf);
            }
            println!("MSGPASS_DONE {count} {ACTIVE_CALLS}");
            thread::sleep(SCALE_WATCHDOG);
        }
        "flood" => {
            pin(1);
            let shared_queue = t.name() == "sysv-msg";
            let conns: Vec<Connection> = (0..count).map(|_| open(&ns, &name, &*t)).collect();
            println!("MSGPASS_FLOODING");
            for (k, mut c) in conns.into_iter().enumerate() {
                thread::spawn(move || {
                    let mut buf = vec![0u8; 256];
                    for seq in 0.. {
                        // One-way messages where the transport has them:
                        // its connections are then always ready, whatever
                        // the scheduler does with this process.
                        if c.supports_oneway() && !shared_queue {
                            let _ = c.send_oneway(1, &[k as u8; 24]);
                        } else {
                            checked_call(&mut c, 1000 + k as u32, seq, &mut buf);
                        }
                    }
                });
            }
            thread::sleep(SCALE_WATCHDOG);
        }
        other => panic!("unknown child role {other}"),
    }
}

/// Lowers this process's soft descriptor limit to 256, creates a channel,
/// and prints the soft limit before and after and the hard limit.
fn report_raised_limit(ns: &Namespace, name: &str, t: &dyn Transport) {
    use oslayer::rlimit::{hard, soft, Resource::Nofile};
    let lim = libc::rlimit {
        rlim_cur: 256,
        rlim_max: hard(Nofile).unwrap_or(libc::RLIM_INFINITY),
    };
    // SAFETY: `lim` is a valid rlimit for the duration of the call.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    let before = soft(Nofile).expect("a soft limit");
    drop(Channel::create(ns, name, t, &Options::default()).expect("create"));
    let show = |v: Option<u64>| v.map_or("unlimited".to_string(), |v| v.to_string());
    println!(
        "MSGPASS_LIMITS {before} {} {}",
        show(soft(Nofile)),
        show(hard(Nofile))
    );
}

/// Opens a connection, waiting a little for the endpoint.
fn open(ns: &Namespace, name: &str, t: &dyn Transport) -> Connection {
    let opts = Options {
        wait: Some(Duration::from_secs(5)),
        ..Options::default()
    };
    Connection::open(ns, name, t, &opts).expect("child: connect")
}

/// Opens a connection for opener thread `k`, its `i`th; on failure says
/// how far it got, how long it took and how many descriptors this process
/// holds against its limit (a server that stops greeting, or a child out
/// of descriptors, then shows which).
fn open_or_explain(
    ns: &Namespace,
    name: &str,
    t: &dyn Transport,
    k: usize,
    i: usize,
    started: Instant,
) -> Connection {
    let opts = Options {
        wait: Some(Duration::from_secs(5)),
        ..Options::default()
    };
    Connection::open(ns, name, t, &opts).unwrap_or_else(|e| {
        let fds = std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count());
        let limit = oslayer::rlimit::soft(oslayer::rlimit::Resource::Nofile);
        panic!(
            "child: connect: {e} (opener {k}, connection {i}, {:?} after the first; \
             {fds} descriptors open, soft limit {limit:?})",
            started.elapsed()
        )
    })
}

/// Opens `count` connections, from a few threads at once, each making one
/// checked call; says how many it holds and holds them.
fn hold_idle(ns: &Namespace, name: &str, t: &dyn Transport, count: usize) {
    let threads = 8.min(count).max(1);
    let started = Instant::now();
    let conns: Vec<Connection> = thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|k| {
                let n = count / threads + usize::from(k < count % threads);
                s.spawn(move || {
                    let mut buf = vec![0u8; 256];
                    (0..n)
                        .map(|i| {
                            let mut c = open_or_explain(ns, name, t, k, i, started);
                            checked_call(&mut c, 2000 + k as u32, i as u32, &mut buf);
                            c
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("idle opener"))
            .collect()
    });
    println!("MSGPASS_IDLE {}", conns.len());
    let _keep = conns;
    thread::sleep(SCALE_WATCHDOG);
}
