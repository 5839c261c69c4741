//! A flood of connections against a server out of descriptors: a child
//! process serves with a low RLIMIT_NOFILE, this process opens far more
//! connections than it can take. The server must not spin (its CPU time
//! over a second of flood stays under half a CPU), must keep serving the
//! client it had, and must take new clients once the flood is gone.

mod common;

use std::os::fd::OwnedFd;
use std::path::Path;
use std::thread;
use std::time::Duration;

use common::*;
use msgpass::{Channel, Connection, Namespace, Options};

const TICK: Duration = Duration::from_millis(20);
/// The child server's descriptor limit.
const NOFILE: u64 = 48;

fn options() -> Options {
    Options {
        tick: TICK,
        ..Options::default()
    }
}

/// The child's role: serve the endpoint named in its environment with a
/// low descriptor limit until killed.
#[test]
fn child_entry() {
    if std::env::var(CHILD_ENV).as_deref() != Ok("fd-server") {
        return;
    }
    let var = |k: &str| std::env::var(k).unwrap_or_else(|_| panic!("{k} not set"));
    let lim = libc::rlimit {
        rlim_cur: NOFILE,
        rlim_max: NOFILE,
    };
    // SAFETY: lim is a valid rlimit for the duration of the call.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    let ns = Namespace::open(Path::new(&var(CHILD_NS))).expect("namespace");
    let tr = msgpass::transport::by_name(&var(CHILD_TRANSPORT)).expect("transport");
    let chan = Channel::create(&ns, &var(CHILD_NAME), &*tr, &options()).expect("create");
    let s = Server::serve_channel(chan);
    println!("serving");
    // Until the parent asks (a file beside the namespace), then cleanly,
    // so the endpoint goes with the server.
    let stop = Path::new(&var(CHILD_NS)).with_extension("stop");
    let deadline = std::time::Instant::now() + CHILD_LIFETIME;
    while !stop.exists() && std::time::Instant::now() < deadline {
        thread::sleep(TICK);
    }
    s.stop();
    println!("stopped");
}

/// Clock ticks (user + system) process `pid` has run.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    // Fields after the command's closing parenthesis; utime and stime are
    // the 14th and 15th fields of the line.
    let rest = &stat[stat.rfind(')').expect("comm") + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    f[11].parse::<u64>().expect("utime") + f[12].parse::<u64>().expect("stime")
}

/// A non-blocking connect to the seqpacket socket at `path`: `None` when
/// the listen backlog is full (a server that accepts nobody fills it).
fn connect_now(path: &Path) -> Option<OwnedFd> {
    use std::os::fd::FromRawFd;
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: plain socket(2); the result is checked before use.
    let fd = unsafe {
        libc::socket(
            libc::AF_UNIX,
            libc::SOCK_SEQPACKET | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        )
    };
    if fd < 0 {
        return None;
    }
    // SAFETY: fd was just made and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    // SAFETY: sockaddr_un is plain data; all-zero is valid.
    let mut addr: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    addr.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    for (d, s) in addr.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: addr is a valid sockaddr_un for the call.
    let r = unsafe {
        libc::connect(
            std::os::fd::AsRawFd::as_raw_fd(&fd),
            &addr as *const libc::sockaddr_un as *const libc::sockaddr,
            std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t,
        )
    };
    (r == 0).then_some(fd)
}

fn call(c: &mut Connection, what: &str) {
    let mut buf = [0u8; 64];
    let n = c.call(1, what.as_bytes(), &mut buf).expect("honest call");
    assert_eq!(buf[..n], echo_reply(1, what.as_bytes(), c.max_msg())[..]);
}

#[test]
fn a_connection_flood_past_the_descriptor_limit_neither_spins_nor_breaks_the_server() {
    for transport in ["uds-stream", "pipe", "uds", "tcp", "signal", "sysv-msg"] {
        watchdog(transport, WATCHDOG, move || {
            let t = TestNs::new();
            let name = Path::new("flood");
            let child = ChildProc::spawn(
                "child_entry",
                "fd-server",
                &[
                    (CHILD_NS, t.dir()),
                    (CHILD_TRANSPORT, Path::new(transport)),
                    (CHILD_NAME, name),
                ],
            );
            child.expect_line("serving");
            let tr = msgpass::transport::by_name(transport).expect("transport");
            let mut honest = Connection::open(&t.ns, "flood", &*tr, &options()).expect("open");
            call(&mut honest, "before");
            let path = t.dir().join("flood");
            // Far more connections than the server has descriptors.
            let flood: Vec<OwnedFd> = (0..4 * NOFILE).filter_map(|_| connect_now(&path)).collect();
            assert!(!flood.is_empty());
            let before = cpu_ticks(child.pid());
            for i in 0..20 {
                call(&mut honest, &format!("during {i}"));
                thread::sleep(Duration::from_millis(50));
            }
            let spent = cpu_ticks(child.pid()) - before;
            // One second of flood: a spinning accept loop burns ~100 ticks.
            assert!(
                spent < 50,
                "{transport}: the server spun ({spent} ticks in ~1 s)"
            );
            drop(flood);
            let mut late = Connection::open(
                &t.ns,
                "flood",
                &*tr,
                &Options {
                    wait: Some(Duration::from_secs(5)),
                    ..options()
                },
            )
            .unwrap_or_else(|e| panic!("{transport}: no new client after the flood: {e}"));
            call(&mut late, "after");
            call(&mut honest, "after");
            drop((honest, late));
            let stop = t.dir().with_extension("stop");
            std::fs::write(&stop, b"").expect("stop file");
            child.expect_line("stopped");
            let _ = std::fs::remove_file(&stop);
            drop(child);
            t.finish();
        });
    }
}
