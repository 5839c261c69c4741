//! `N` checked round trips of 8 bytes over one transport, a server thread
//! and a client thread of this process: the program the instruction
//! counts per round trip are taken from (valgrind's callgrind counts the
//! same instructions on every run, whatever else the machine does;
//! `tests/instructions.rs` keeps them under a baseline).
//!
//! ```text
//! cargo build --release -p msgpass --example roundtrip
//! valgrind --tool=callgrind target/release/examples/roundtrip uds 2000 in-place
//! ```
//!
//! `roundtrip TRANSPORT N [copy|in-place] [--no-spin]`: `copy` calls with
//! `Connection::call` and answers with `Request::reply` (msgpass copies
//! each message once each way), `in-place` (the default) with
//! `call_with` and `reply_with`. `--no-spin` sets `Options::spin` to zero,
//! so a transport that spins before it sleeps (shm, shm-hybrid) sleeps at
//! once: under valgrind, whose threads take turns, a spin lasts until the
//! scheduler's time slice ends and its count says nothing about the call.
//!
//! Two runs of different `N` give the cost of one round trip (client and
//! server, user space) as the difference of their totals over the
//! difference of their `N`: start-up and shutdown cancel out.
use std::time::Duration;

use msgpass::{Channel, Connection, Namespace, Options};

/// How both sides move the message.
#[derive(Clone, Copy, PartialEq)]
enum Api {
    Copy,
    InPlace,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let usage = "usage: roundtrip TRANSPORT N [copy|in-place] [--no-spin]";
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(name), Some(n)) = (args.first(), args.get(1)) else {
        return Err(usage.into());
    };
    let n: u64 = n.parse().map_err(|e| format!("N {n:?}: {e}"))?;
    let mut api = Api::InPlace;
    let mut opts = Options::default();
    for a in &args[2..] {
        match a.as_str() {
            "copy" => api = Api::Copy,
            "in-place" => api = Api::InPlace,
            "--no-spin" => opts.spin = Duration::ZERO,
            _ => return Err(format!("{a:?}: {usage}").into()),
        }
    }
    let dir = std::env::temp_dir().join(format!("msgpass-roundtrip-{}", std::process::id()));
    let ns = Namespace::open(&dir)?;
    let result = run(&ns, name, n, api, &opts);
    std::fs::remove_dir(&dir).ok();
    result?;
    println!("{name}: {n} round trips checked");
    Ok(())
}

/// Serves `rt/0` on a thread and makes `n` checked calls to it.
fn run(
    ns: &Namespace,
    name: &str,
    n: u64,
    api: Api,
    opts: &Options,
) -> Result<(), Box<dyn std::error::Error>> {
    let t = msgpass::transport::by_name(name)?;
    let mut server = Channel::create(ns, "rt/0", &*t, opts)?;
    let stop = server.stop_flag();
    let served = std::thread::spawn(move || {
        while let Ok(Some(req)) = server.receive() {
            let _ = match api {
                Api::InPlace => req.reply_with(|w| w.len().min(8)),
                Api::Copy => {
                    let mut echo = [0u8; 8];
                    let k = req.data().len().min(8);
                    echo[..k].copy_from_slice(&req.data()[..k]);
                    req.reply(&echo[..k])
                }
            };
        }
    });
    let mut c = Connection::open(ns, "rt/0", &*t, opts)?;
    let calls = (0..n).try_for_each(|i| call(&mut c, api, i));
    drop(c);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    served.join().map_err(|_| "server thread panicked")?;
    calls
}

/// One call carrying `i`, its reply checked.
fn call(c: &mut Connection, api: Api, i: u64) -> Result<(), Box<dyn std::error::Error>> {
    let got = match api {
        Api::Copy => {
            let mut buf = [0u8; 8];
            let k = c.call(1, &i.to_le_bytes(), &mut buf)?;
            (k == 8).then(|| u64::from_le_bytes(buf))
        }
        Api::InPlace => {
            let v = c.call_with(1, |w| {
                w.write(0, &i.to_le_bytes());
                8
            })?;
            (v.len() == 8).then(|| u64::from_le_bytes(v.get::<8>(0)))
        }
    };
    if got != Some(i) {
        return Err(format!("round trip {i}: wrong reply").into());
    }
    Ok(())
}
