//! The veth path of `msgbench smp` against the real kernel (root and `ip`
//! needed; skipped with a reason otherwise, failed under CI): the test bed
//! forwards real frames, and nothing of ours survives a drop, a SIGINT or
//! a SIGKILL (the next start sweeps).

mod common;

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{is_root, serial, skip, Proc};
use msgbench::suites::smp::veth::afpacket::{self, Relayed};
use msgbench::suites::smp::veth::kernel::{flow_pool, kernel_trial, run_trial, Outcome, Trial};
use msgbench::suites::smp::veth::topology::{self, Topology, FWD0, FWD1, SINK0};

/// Set in the child a test spawns (the test binary itself).
const CHILD_ENV: &str = "MSGBENCH_VETH_CHILD";

/// Why this machine cannot run these tests, if it cannot.
fn unavailable() -> Option<String> {
    if !is_root() {
        return Some("needs root (network namespaces and packet sockets)".into());
    }
    match Command::new("ip").arg("-V").output() {
        Ok(o) if o.status.success() => None,
        _ => Some("needs the `ip` program (iproute2)".into()),
    }
}

/// Those of `names` that `ip netns list` still lists.
fn still_listed(names: &[String]) -> Vec<String> {
    let listed = topology::our_namespaces().expect("ip netns list");
    names
        .iter()
        .filter(|n| listed.contains(n))
        .cloned()
        .collect()
}

/// No interface of ours in this (the root) namespace (`ip link`).
fn assert_no_veth_here() {
    let links = topology::ip(["-o", "link"]).expect("ip link");
    for name in ["gen0", "fwd0", "fwd1", "sink0"] {
        assert!(
            !links
                .lines()
                .any(|l| l.contains(&format!(" {name}@")) || l.contains(&format!(" {name}:"))),
            "{name} is in the root namespace:\n{links}"
        );
    }
}

#[test]
fn the_kernel_forwards_real_frames_and_the_guard_removes_everything() {
    let _serial = serial(); // sweeps must not meet a stale set half made
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let topo = Topology::create().expect("create the test bed");
    let names = topo.names().to_vec();
    assert!(
        still_listed(&names).len() == 3,
        "all three namespaces exist"
    );
    let stop = AtomicBool::new(false);
    let trial = Trial {
        size: 64,
        rate: 20_000.0,
        duration: Duration::from_millis(500),
    };
    let out = kernel_trial(&topo, &trial, &flow_pool(trial.size), &stop).expect("kernel trial");
    eprintln!(
        "kernel reference at {} fps, 64 B: {out:?} (lost {})",
        trial.rate,
        out.lost()
    );
    // Not asserted: that all 10,000 were offered (a generator descheduled
    // by a busy machine falls behind; `late` says so, the search retries).
    assert!(out.sent.frames > 0, "{out:?}");
    assert_eq!(
        out.sent.frames + out.sent.late + out.sent.refused,
        10_000,
        "every frame due is sent, late or refused: {out:?}"
    );
    assert!(
        out.received.frames > 0,
        "the kernel forwarded nothing: {out:?}"
    );
    assert!(out.received.frames <= out.sent.frames, "{out:?}");
    assert_eq!(out.received.bytes, out.received.frames * 60, "{out:?}");
    assert!(out.received.socket_drops <= out.lost(), "{out:?}");
    drop(topo);
    assert!(
        still_listed(&names).is_empty(),
        "left behind: {:?}",
        still_listed(&names)
    );
    assert_no_veth_here();
}

#[test]
fn with_kernel_forwarding_off_nothing_crosses_unless_a_relay_forwards_it() {
    let _serial = serial(); // sweeps must not meet a stale set half made
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let topo = Topology::create().expect("create the test bed");
    let stop = AtomicBool::new(false);
    let trial = Trial {
        size: 128,
        rate: 5_000.0,
        duration: Duration::from_millis(200),
    };
    let out =
        run_trial(&topo, &trial, &flow_pool(trial.size), &stop).expect("trial without a forwarder");
    assert_eq!(out.received.frames, 0, "ip_forward is off: {out:?}");

    let (out, relayed) = relay_trial(&topo, &trial, 2);
    eprintln!(
        "relay at {} fps, 128 B: {out:?}, workers {relayed:?}",
        trial.rate
    );
    let forwarded: u64 = relayed.iter().map(|r| r.forwarded).sum();
    assert!(
        out.received.frames > 0 && out.received.frames <= out.sent.frames,
        "{out:?}"
    );
    assert!(out.received.frames <= forwarded, "{out:?} {relayed:?}");
    let overruns: u64 = relayed.iter().map(|r| r.socket_drops).sum();
    let received: u64 = relayed.iter().map(|r| r.received).sum();
    assert_eq!(
        received + overruns,
        out.sent.frames,
        "every frame sent reached a worker or overran its socket: {out:?} {relayed:?}"
    );
    assert!(
        relayed.iter().all(|r| r.received > 0),
        "fanout spreads 256 flows over both: {relayed:?}"
    );
}

/// One trial through `workers` relay workers in the middle namespace (a
/// fanout group on fwd0, all sending out of fwd1), rewriting the MACs only.
fn relay_trial(topo: &Topology, trial: &Trial, workers: usize) -> (Outcome, Vec<Relayed>) {
    let stop = AtomicBool::new(false);
    let rx = afpacket::open_receivers(topo, FWD0, workers, 7).expect("fanout receivers");
    let tx = afpacket::open_sender(topo, FWD1).expect("sender");
    let relay_stop = AtomicBool::new(false);
    std::thread::scope(|s| {
        let handles: Vec<_> = rx
            .iter()
            .map(|r| {
                s.spawn(|| {
                    afpacket::relay(r, &tx, &relay_stop, |f| {
                        f[0..6].copy_from_slice(&SINK0.mac);
                        f[6..12].copy_from_slice(&FWD1.mac);
                        true
                    })
                })
            })
            .collect();
        let out = run_trial(topo, trial, &flow_pool(trial.size), &stop);
        relay_stop.store(true, Ordering::Relaxed);
        let relayed: Vec<_> = handles
            .into_iter()
            .map(|w| w.join().unwrap().unwrap())
            .collect();
        (out.expect("trial through the relay"), relayed)
    })
}

/// Not an assertion: prints the relay's loss at a few offered rates.
#[test]
#[ignore = "a measurement, not a check"]
fn relay_rates() {
    let _serial = serial();
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let topo = Topology::create().expect("create the test bed");
    for workers in [1, 2] {
        for rate in [50e3, 100e3, 200e3, 400e3] {
            let trial = Trial {
                size: 64,
                rate,
                duration: Duration::from_secs(1),
            };
            let (o, r) = relay_trial(&topo, &trial, workers);
            eprintln!(
                "relay x{workers} 64 B offered {rate:>7.0}/s: sent {:>7} late {:>7} received {:>7} lost {:>6}; workers {:?}",
                o.sent.frames,
                o.sent.late,
                o.received.frames,
                o.lost(),
                r.iter().map(|w| (w.received, w.forwarded, w.socket_drops)).collect::<Vec<_>>()
            );
        }
    }
}

#[test]
fn a_dead_runs_namespaces_are_swept_at_start() {
    let _serial = serial(); // sweeps must not meet a stale set half made
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let pid_max: u64 = std::fs::read_to_string("/proc/sys/kernel/pid_max")
        .expect("pid_max")
        .trim()
        .parse()
        .expect("pid_max is a number");
    let dead = pid_max + 1; // no process can have it
    let stale: Vec<String> = ["gen", "fwd", "sink"]
        .iter()
        .map(|r| format!("{}{dead}-0-{r}", topology::PREFIX))
        .collect();
    for n in &stale {
        topology::ip(["netns", "add", n]).expect("add a stale namespace");
    }
    let topo = Topology::create().expect("create sweeps first");
    assert!(
        still_listed(&stale).is_empty(),
        "not swept: {:?}",
        still_listed(&stale)
    );
    assert_eq!(
        still_listed(topo.names()).len(),
        3,
        "a live run's namespaces stay"
    );
}

/// Not a test of its own: when spawned by the tests below (the variable
/// set), builds a test bed, says so, and holds it until SIGINT.
#[test]
fn child_holds_a_test_bed_until_sigint() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    let stop: Arc<AtomicBool> = msgbench::cli::stop_on_signals().expect("signal handlers");
    let topo = Topology::create().expect("child: create the test bed");
    println!("ready {}", topo.names().join(" "));
    while !stop.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Spawns the holding child and returns it with its namespace names.
fn spawn_holder() -> (Proc, Vec<String>) {
    let mut cmd = Command::new(std::env::current_exe().expect("test binary"));
    cmd.args([
        "--exact",
        "child_holds_a_test_bed_until_sigint",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, "1");
    let mut child = Proc::spawn("smp_veth child", cmd);
    let out = child.wait_stdout("ready ");
    // libtest prints the test's name and then, on the same line, its output.
    let line = out
        .lines()
        .find_map(|l| l.split_once("ready ").map(|(_, r)| r))
        .expect("ready line");
    let names: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    assert_eq!(names.len(), 3, "{line}");
    assert_eq!(
        still_listed(&names).len(),
        3,
        "the child's namespaces exist"
    );
    (child, names)
}

#[test]
fn sigint_removes_everything() {
    let _serial = serial(); // sweeps must not meet a stale set half made
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let (mut child, names) = spawn_holder();
    child.signal(libc::SIGINT);
    let o = child.wait_within(Duration::from_secs(10), "SIGINT");
    assert!(o.status.success(), "the child exits cleanly on SIGINT: {o}");
    assert!(
        still_listed(&names).is_empty(),
        "left after SIGINT: {:?}",
        still_listed(&names)
    );
}

#[test]
fn after_sigkill_the_next_start_sweeps() {
    let _serial = serial(); // sweeps must not meet a stale set half made
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let (mut child, names) = spawn_holder();
    child.signal(libc::SIGKILL);
    let _ = child.wait_within(Duration::from_secs(10), "SIGKILL");
    assert_eq!(
        still_listed(&names).len(),
        3,
        "nothing could clean up after SIGKILL"
    );
    let topo = Topology::create().expect("the next start");
    assert!(
        still_listed(&names).is_empty(),
        "not swept: {:?}",
        still_listed(&names)
    );
    drop(topo);
}

/// Not an assertion: prints the kernel reference's loss at a few offered
/// rates (`cargo test --release --test smp_veth -- --ignored --nocapture`).
#[test]
#[ignore = "a measurement, not a check"]
fn kernel_reference_rates() {
    let _serial = serial();
    if let Some(why) = unavailable() {
        return skip(&why);
    }
    let topo = Topology::create().expect("create the test bed");
    let stop = AtomicBool::new(false);
    for size in [64, 1518] {
        for rate in [50e3, 100e3, 200e3, 400e3, 800e3, 1.6e6] {
            let trial = Trial {
                size,
                rate,
                duration: Duration::from_secs(1),
            };
            let o =
                kernel_trial(&topo, &trial, &flow_pool(trial.size), &stop).expect("kernel trial");
            let secs = o.sent.elapsed.as_secs_f64();
            eprintln!(
                "{size:>5} B offered {rate:>9.0}/s: sent {:>8} ({:>9.0}/s, late {:>8}) received {:>8} lost {:>7} ({:.2}%)",
                o.sent.frames,
                o.sent.frames as f64 / secs,
                o.sent.late,
                o.received.frames,
                o.lost(),
                100.0 * o.lost() as f64 / o.sent.frames.max(1) as f64
            );
        }
    }
}
