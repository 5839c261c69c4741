//! `N` checked round trips of 8 bytes over one transport, a server thread
//! and a client thread of this process: the program the instruction
//! counts per round trip are taken from (valgrind's callgrind counts the
//! same instructions on every run, whatever else the machine does).
//!
//! ```text
//! cargo build --release -p msgpass --example roundtrip
//! valgrind --tool=callgrind target/release/examples/roundtrip uds 2000
//! ```
//!
//! Two runs of different `N` give the cost of one round trip (client and
//! server, user space) as the difference of their totals over the
//! difference of their `N`: start-up and shutdown cancel out.
use msgpass::{Channel, Connection, Namespace, Options};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let (Some(name), Some(n)) = (args.next(), args.next()) else {
        return Err("usage: roundtrip TRANSPORT N".into());
    };
    let n: u64 = n.parse().map_err(|e| format!("N {n:?}: {e}"))?;
    let dir = std::env::temp_dir().join(format!("msgpass-roundtrip-{}", std::process::id()));
    let ns = Namespace::open(&dir)?;
    let t = msgpass::transport::by_name(&name)?;
    let mut server = Channel::create(&ns, "rt/0", &*t, &Options::default())?;
    let stop = server.stop_flag();
    let served = std::thread::spawn(move || {
        while let Ok(Some(req)) = server.receive() {
            let _ = req.reply_with(|w| w.len().min(8));
        }
    });
    let mut c = Connection::open(&ns, "rt/0", &*t, &Options::default())?;
    let mut buf = [0u8; 8];
    for i in 0..n {
        let k = c.call(1, &i.to_le_bytes(), &mut buf)?;
        if k != 8 || u64::from_le_bytes(buf) != i {
            return Err(format!("round trip {i}: wrong reply").into());
        }
    }
    drop(c);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    served.join().map_err(|_| "server thread panicked")?;
    std::fs::remove_dir(&dir).ok();
    println!("{name}: {n} round trips checked");
    Ok(())
}
