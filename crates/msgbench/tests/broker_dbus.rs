//! The D-Bus side of the broker suite with real daemons and processes, on
//! every D-Bus library (libdbus, sd-bus, zbus): a private dbus-daemon and
//! dbus-broker (and peer to peer, no daemon), two services and two clients
//! at once checking every value (and every reply's serial), daemons gone
//! and reaped after stop, a service killed (SIGKILL, in a child process:
//! this test binary re-run as `helper_service`) showing up at the client
//! as an error (not a hang, and long before the libraries' 25 s call
//! timeout) while the daemon goes on serving, and the daemons dying with
//! the process that started them (`helper_bus`, killed; this test process
//! is made a child subreaper so it reaps them).
//!
//! Every wait for an event after a kill is bounded by [`EVENT_LIMIT`], a
//! liveness bound for a loaded 2-CPU machine, not a speed: the event
//! itself (the error, the exit, the reaping) is what each test checks.
//!
//! A daemon not installed, or a library not built in, skips its test with
//! a reason, except under CI (env CI set), where it fails.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{serial, TestDir};
use msgbench::suites::broker::dbus::{DaemonKind, DbusLib, PrivateBus, Target};

/// The environment variable that makes `helper_service` serve.
const HELPER_ENV: &str = "MSGBENCH_DBUS_HELPER_TARGET";
/// The environment variable that makes `helper_bus` start a bus of this
/// kind in this directory (`<kind>:<dir>`), print its pids and wait.
const BUS_HELPER_ENV: &str = "MSGBENCH_DBUS_HELPER_BUS";
const SIZES: [u32; 3] = [1, 256, 4096];
const ROUNDS: usize = 30;
/// Longest wait for what must follow a kill or a stop (an error at the
/// client, a service's return, a daemon's end): well under the D-Bus
/// libraries' default call timeout (25 s), so an error that only came
/// from a timeout still fails, and far above what a loaded machine needs.
const EVENT_LIMIT: Duration = Duration::from_secs(10);

/// Runs `f` on a thread and waits up to [`EVENT_LIMIT`] for its result;
/// panics naming `what` when it does not come (the thread is left behind:
/// the test fails anyway).
fn within_limit<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(EVENT_LIMIT)
        .unwrap_or_else(|e| panic!("{what}: nothing within {EVENT_LIMIT:?} ({e})"))
}

/// Ok to go on, or false after printing why the daemon is skipped; panics
/// under CI.
fn have(kind: DaemonKind) -> bool {
    match kind.available() {
        Ok(()) => true,
        Err(why) if std::env::var_os("CI").is_some() => {
            panic!("{}: {why} (CI is set: not skipping)", kind.name())
        }
        Err(why) => {
            eprintln!("skipped: {}: {why}", kind.name());
            false
        }
    }
}

/// Every library built in; panics under CI when one is not.
fn libs() -> Vec<DbusLib> {
    DbusLib::ALL
        .into_iter()
        .filter(|l| match l.available() {
            Ok(()) => true,
            Err(why) if std::env::var_os("CI").is_some() => {
                panic!("{}: {why} (CI is set: not skipping)", l.name())
            }
            Err(why) => {
                eprintln!("skipped: {why}");
                false
            }
        })
        .collect()
}

/// Service `k`'s place: its own socket peer to peer, the bus otherwise.
fn place(target: &Target, k: u32) -> Target {
    match target {
        Target::P2p(p) => Target::P2p(p.with_extension(k.to_string())),
        t => t.clone(),
    }
}

/// Two services, two clients (each calling both services) on `lib`, every
/// value and serial checked; services stopped and joined.
fn exchange(lib: DbusLib, target: &Target) {
    let stop = Arc::new(AtomicBool::new(false));
    let services: Vec<_> = (0..2u32)
        .map(|k| {
            let t = place(target, k);
            let stop = stop.clone();
            std::thread::spawn(move || lib.serve(&t, k, &stop))
        })
        .collect();
    let clients: Vec<_> = (0..2u32)
        .map(|c| {
            let target = target.clone();
            std::thread::spawn(move || -> anyhow::Result<()> {
                let mut conns = Vec::new();
                for k in 0..2u32 {
                    conns.push(lib.connect(&place(&target, k), k)?);
                }
                for round in 0..ROUNDS {
                    for &n in &SIZES {
                        conns[(round + c as usize) % 2].get_integer(n)?;
                    }
                }
                // Bad input is a D-Bus error, not a dead service.
                let err = conns[0].get_integer(2_000_000).unwrap_err();
                let err = format!("{err:#}");
                assert!(err.contains("InvalidArgs"), "{}: {err}", lib.name());
                conns[0].get_integer(1)?;
                Ok(())
            })
        })
        .collect();
    let results: Vec<_> = clients.into_iter().map(|c| c.join()).collect();
    stop.store(true, Ordering::Relaxed);
    for s in services {
        s.join()
            .expect("service thread")
            .unwrap_or_else(|e| panic!("{} service: {e:#}", lib.name()));
    }
    for r in results {
        r.expect("client thread")
            .unwrap_or_else(|e| panic!("{} client: {e:#}", lib.name()));
    }
}

fn assert_gone(pids: &[i32]) {
    for pid in pids {
        assert!(
            !Path::new(&format!("/proc/{pid}")).exists(),
            "process {pid} is still there (running or an unreaped zombie)"
        );
    }
}

fn bus_round_trips(kind: DaemonKind) {
    if !have(kind) {
        return;
    }
    let _one = serial();
    let dir = TestDir::new(kind.name());
    let bus = PrivateBus::start(kind, dir.path()).expect("start the bus");
    let pids = bus.pids();
    let want = if kind == DaemonKind::DbusBroker { 2 } else { 1 };
    assert_eq!(pids.len(), want, "pids {pids:?}");
    assert!(bus.address().starts_with("unix:path="), "{}", bus.address());
    for lib in libs() {
        exchange(lib, &Target::Bus(bus.address().to_string()));
    }
    bus.stop().expect("a clean stop");
    assert_gone(&pids);
    let path = dir.path().to_path_buf();
    drop(dir);
    assert!(!path.exists(), "{} left behind", path.display());
}

#[test]
fn dbus_daemon_round_trips() {
    bus_round_trips(DaemonKind::DbusDaemon);
}

#[test]
fn dbus_broker_round_trips() {
    bus_round_trips(DaemonKind::DbusBroker);
}

#[test]
fn p2p_round_trips() {
    let _one = serial();
    let dir = TestDir::new("p2p");
    for lib in libs() {
        exchange(lib, &Target::P2p(dir.file(lib.name())));
        // The services removed their sockets.
        let left = common::list_tree(dir.path());
        assert!(left.is_empty(), "{}: {left:?}", lib.name());
    }
}

/// Dropping a bus stops and reaps it, and a service on it returns an
/// error (not a hang) when its bus dies.
#[test]
fn dropping_a_bus_stops_it() {
    let _one = serial();
    for kind in DaemonKind::ALL {
        if !have(kind) {
            continue;
        }
        for lib in libs() {
            let dir = TestDir::new("drop");
            let bus = PrivateBus::start(kind, dir.path()).expect("start");
            let pids = bus.pids();
            let target = Target::Bus(bus.address().to_string());
            let stop = Arc::new(AtomicBool::new(false));
            let s = stop.clone();
            let (done, service_ended) = std::sync::mpsc::channel();
            let service = std::thread::spawn(move || {
                let r = lib.serve(&target, 0, &s);
                let _ = done.send(());
                r
            });
            let mut client = lib
                .connect(&Target::Bus(bus.address().to_string()), 0)
                .expect("connect");
            client.get_integer(1).expect("a call");
            let dropped = Instant::now();
            drop(bus);
            assert_gone(&pids);
            let what = format!("{} with {}", kind.name(), lib.name());
            // The service's return is the event; the bound only turns a
            // hang into a failure.
            service_ended
                .recv_timeout(EVENT_LIMIT)
                .unwrap_or_else(|_| panic!("{what}: the service still serves a dead bus"));
            let err = service.join().expect("service thread").unwrap_err();
            eprintln!(
                "{what}: the service saw after {:?}: {err:#}",
                dropped.elapsed()
            );
            assert!(client.get_integer(1).is_err(), "{what}");
        }
    }
}

/// Not a test on its own: with [`HELPER_ENV`] set (`<lib>/bus:<address>`
/// or `<lib>/p2p:<path>`), serves as service 0 on that library until
/// killed.
#[test]
fn helper_service() {
    let Ok(spec) = std::env::var(HELPER_ENV) else {
        return;
    };
    let (lib, spec) = spec.split_once('/').expect("<lib>/...");
    let lib = DbusLib::parse(lib).expect("a library");
    let target = match spec.split_once(':') {
        Some(("bus", a)) => Target::Bus(a.to_string()),
        Some(("p2p", p)) => Target::P2p(p.into()),
        _ => panic!("bad {HELPER_ENV}: {spec}"),
    };
    let never = AtomicBool::new(false);
    lib.serve(&target, 0, &never).expect("serve");
}

/// The helper process, killed and reaped on drop.
struct Helper(Child);

impl Helper {
    fn start(spec: &str) -> Helper {
        let exe = std::env::current_exe().expect("test binary");
        let child = Command::new(exe)
            .args([
                "helper_service",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(HELPER_ENV, spec)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .expect("spawn the helper service");
        Helper(child)
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Kills the service (on `lib`) mid-run and returns how long the client
/// took to see an error, and the error. The client's error, and the error
/// of its next call, are the events waited for (each up to
/// [`EVENT_LIMIT`]).
fn killed_service(lib: DbusLib, target: &Target, spec: &str) -> (Duration, String) {
    let mut helper = Helper::start(&format!("{}/{spec}", lib.name()));
    let mut client = lib.connect(target, 0).expect("connect to the helper");
    client.get_integer(256).expect("a first call");
    let (first_err, seen) = std::sync::mpsc::channel();
    let calling = std::thread::spawn(move || loop {
        if let Err(e) = client.get_integer(4096) {
            let _ = first_err.send(Instant::now());
            // A second call fails too, without waiting for a timeout.
            let again = within_limit("the call after the first error", move || {
                let t = Instant::now();
                let r = client.get_integer(1).map(|_| ());
                (r, t.elapsed())
            });
            let (again, again_took) = again;
            let again = again.expect_err("a call to a dead service succeeded");
            return format!("{e:#}; the next call, after {again_took:?}: {again:#}");
        }
    });
    std::thread::sleep(Duration::from_millis(300));
    let killed = Instant::now();
    helper.0.kill().expect("SIGKILL the helper");
    helper.0.wait().expect("reap the helper");
    let at = seen.recv_timeout(EVENT_LIMIT).unwrap_or_else(|_| {
        panic!(
            "{} {spec}: no error at the client {EVENT_LIMIT:?} after its service was killed",
            lib.name()
        )
    });
    let err = calling.join().expect("client thread");
    let took = at.saturating_duration_since(killed);
    eprintln!(
        "{} {spec}: killed service seen after {took:?}: {err}",
        lib.name()
    );
    (took, err)
}

#[test]
fn killed_service_is_an_error_and_the_daemon_goes_on() {
    let _one = serial();
    let dir = TestDir::new("kill");
    let libs = libs();
    for &lib in &libs {
        let path = dir.file(&format!("{}.sock", lib.name()));
        killed_service(
            lib,
            &Target::P2p(path.clone()),
            &format!("p2p:{}", path.display()),
        );
    }
    for kind in DaemonKind::ALL {
        if !have(kind) {
            continue;
        }
        let sub = dir.file(kind.name());
        std::fs::create_dir(&sub).unwrap();
        let bus = PrivateBus::start(kind, &sub).expect("start the bus");
        let target = Target::Bus(bus.address().to_string());
        for &lib in &libs {
            let spec = format!("bus:{}", bus.address());
            killed_service(lib, &target, &spec);
            // The daemon goes on serving the others.
            exchange(lib, &target);
        }
        bus.stop().expect("a clean stop");
    }
}

/// A bad directory is a one-line error, not a panic or a stray daemon.
#[test]
fn a_missing_directory_is_an_error() {
    for kind in DaemonKind::ALL {
        if !have(kind) {
            continue;
        }
        let dir = TestDir::new("missing");
        let err = PrivateBus::start(kind, &dir.file("absent"))
            .err()
            .expect("no bus in a missing directory");
        let msg = format!("{err:#}");
        assert!(msg.contains("absent"), "{msg}");
    }
}

/// Not a test on its own: with [`BUS_HELPER_ENV`] set, starts a bus, prints
/// `pids <pid>...` and waits to be killed.
#[test]
fn helper_bus() {
    let Ok(spec) = std::env::var(BUS_HELPER_ENV) else {
        return;
    };
    let (kind, dir) = spec.split_once(':').expect("kind:dir");
    let kind = DaemonKind::ALL
        .into_iter()
        .find(|k| k.name() == kind)
        .expect("a daemon kind");
    let bus = PrivateBus::start(kind, Path::new(dir)).expect("start the bus");
    let pids: Vec<String> = bus.pids().iter().map(i32::to_string).collect();
    println!("pids {}", pids.join(" "));
    std::thread::sleep(Duration::from_secs(30));
    drop(bus);
}

/// Reaps `pid` if it became our child (we are a subreaper); true once it
/// is gone from /proc.
fn reap_if_ours(pid: i32) -> bool {
    let mut status = 0;
    // SAFETY: waitpid on a pid with WNOHANG and a valid status pointer; it
    // only reaps `pid` if it is our (adopted) child.
    unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    !Path::new(&format!("/proc/{pid}")).exists()
}

/// The daemons die when the process that started them dies
/// (PR_SET_PDEATHSIG). This test makes its process a child subreaper so
/// the orphaned daemons come to it and are reaped here, not left as
/// zombies (process 1 here does not reap).
#[test]
fn daemons_die_with_their_parent() {
    use std::io::{BufRead, BufReader};
    let _one = serial();
    // SAFETY: prctl with integer arguments; it only marks this process as
    // a subreaper for its descendants.
    let r = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    assert_eq!(r, 0, "PR_SET_CHILD_SUBREAPER");
    for kind in DaemonKind::ALL {
        if !have(kind) {
            continue;
        }
        let dir = TestDir::new("orphan");
        let exe = std::env::current_exe().expect("test binary");
        let mut helper = Helper(
            Command::new(exe)
                .args(["helper_bus", "--exact", "--nocapture", "--test-threads=1"])
                .env(
                    BUS_HELPER_ENV,
                    format!("{}:{}", kind.name(), dir.path().display()),
                )
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .spawn()
                .expect("spawn the helper bus"),
        );
        let out = helper.0.stdout.take().expect("stdout");
        let pids: Vec<i32> = BufReader::new(out)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| {
                // libtest has printed "test helper_bus ... " before it.
                l.split_once("pids ")
                    .map(|(_, p)| p.split(' ').filter_map(|x| x.parse().ok()).collect())
            })
            .expect("the helper's pids");
        assert!(!pids.is_empty());
        helper.0.kill().expect("SIGKILL the helper");
        helper.0.wait().expect("reap the helper");
        let deadline = Instant::now() + EVENT_LIMIT;
        let mut left = pids.clone();
        while !left.is_empty() && Instant::now() < deadline {
            left.retain(|&p| !reap_if_ours(p));
            std::thread::sleep(Duration::from_millis(10));
        }
        for &p in &left {
            // SAFETY: kill(2) on a pid this test saw started; cleanup only.
            unsafe { libc::kill(p, libc::SIGKILL) };
            std::thread::sleep(Duration::from_millis(50));
            reap_if_ours(p);
        }
        assert!(
            left.is_empty(),
            "{}: {left:?} outlived their parent",
            kind.name()
        );
    }
}
