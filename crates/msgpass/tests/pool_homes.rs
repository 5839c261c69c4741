//! A pool pinned one thread per CPU serves each client on its own CPU:
//! a connection's home moves to the thread pinned on the CPU its client
//! runs on (`serve/homes.rs`, for the reactor and shm alike), and follows
//! the client when it moves. Two pool threads, pinned on CPUs 0 and 1,
//! answer with their index; one client, pinned on one CPU and then on the
//! other, calls and counts which thread answered. Over the last calls of
//! each phase the home thread must answer at least three in four; a pool
//! whose homes never moved would answer one of the two phases (nearly)
//! all from the other CPU. On this 2-vCPU VM the home thread answered
//! 839 to 1000 of the last 1000 calls on uds (a request now and then is
//! taken by the other pool thread while the home one is slow to wake),
//! so "nine in ten" failed 3 runs in 12 on a quiet machine.
//!
//! Needs two CPUs: skipped with the reason by hand on one, a failure
//! under `CI`.

mod common;

use std::thread;
use std::time::Duration;

use common::*;
use msgpass::{transport, Channel, Connection, Receiver};

/// The server's tick: a home moves at most once a tick.
const TICK: Duration = Duration::from_millis(20);
/// Calls per phase.
const CALLS: usize = 4000;
/// The phase's last calls, which are counted.
const COUNTED: usize = 1000;

/// Pool thread `w`: pinned on CPU `w`, answers every request with its index.
fn serve(mut rx: Receiver, cpu: usize) {
    oslayer::sched::set_affinity(&[cpu]).expect("pin the pool thread");
    let w = rx.index() as u8;
    while let Ok(Some(req)) = rx.receive() {
        req.reply(&[w]).expect("reply");
    }
}

/// How many of the phase's last calls the thread pinned on CPU `cpu`
/// answered, the client pinned on that CPU.
fn phase(conn: &mut Connection, cpu: usize) -> usize {
    oslayer::sched::set_affinity(&[cpu]).expect("pin the client");
    let mut by = [0u8; 1];
    let mut home = 0;
    for i in 0..CALLS {
        conn.call(1, b"where", &mut by).expect("call");
        if i >= CALLS - COUNTED && usize::from(by[0]) == cpu {
            home += 1;
        }
        // Long enough apart that a tick passes within the phase.
        if i % 100 == 0 {
            thread::sleep(Duration::from_millis(1));
        }
    }
    home
}

/// One test at a time: both pin their threads on the same two CPUs.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn homes_follow_the_client(name: &'static str) {
    if unavailable_here(name) {
        return;
    }
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let cpus = oslayer::sched::affinity().expect("affinity");
    if !(cpus.contains(&0) && cpus.contains(&1)) {
        assert!(
            std::env::var_os("CI").is_none(),
            "{name}: CI is set: needs CPUs 0 and 1, has {cpus:?}"
        );
        println!("{name}: skipped: needs CPUs 0 and 1, has {cpus:?}");
        return;
    }
    watchdog(name, WATCHDOG, move || {
        let t = TestNs::new();
        let tr = transport::by_name(name).expect("transport");
        let chan = Channel::create(&t.ns, "homes", &*tr, &tick_options(TICK)).expect("create");
        let stop = chan.stop_flag();
        let pool: Vec<_> = chan
            .into_pool(2)
            .expect("pool")
            .into_iter()
            .enumerate()
            .map(|(cpu, rx)| thread::spawn(move || serve(rx, cpu)))
            .collect();
        // The pool threads pin themselves before their first receive.
        thread::sleep(Duration::from_millis(50));
        let mut conn = Connection::open(&t.ns, "homes", &*tr, &tick_options(TICK)).expect("open");
        let on = [phase(&mut conn, 1), phase(&mut conn, 0)];
        drop(conn);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for p in pool {
            p.join().expect("pool thread");
        }
        t.finish();
        for (cpu, home) in [1, 0].into_iter().zip(on) {
            assert!(
                home * 4 >= COUNTED * 3,
                "{name}: client on CPU {cpu}: its home thread answered {home} of the last {COUNTED} calls"
            );
        }
    });
}

#[test]
fn homes_follow_the_client_on_shm_block() {
    homes_follow_the_client("shm-block");
}

#[test]
fn homes_follow_the_client_on_uds() {
    homes_follow_the_client("uds");
}
