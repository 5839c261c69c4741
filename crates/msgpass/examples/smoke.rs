//! Minimal round trip over every transport (a quick manual check).
use msgpass::{Channel, Connection, Namespace, Options};
use std::time::Instant;

fn main() -> msgpass::Result<()> {
    let dir = std::env::temp_dir().join(format!("msgpass-smoke-{}", std::process::id()));
    let ns = Namespace::open(&dir)?;
    for name in msgpass::transport::NAMES {
        let t = msgpass::transport::by_name(name)?;
        let mut server = Channel::create(&ns, "echo/0", &*t, &Options::default())?;
        let stop = server.stop_flag();
        let h = std::thread::spawn(move || {
            while let Ok(Some(req)) = server.receive() {
                let d = req.data().to_vec();
                let _ = req.reply(&d);
            }
        });
        let mut c = Connection::open(&ns, "echo/0", &*t, &Options::default())?;
        let mut buf = [0u8; 8];
        let n = 200_000;
        let t0 = Instant::now();
        for i in 0..n as u64 {
            let k = c.call(1, &i.to_le_bytes(), &mut buf)?;
            assert_eq!(k, 8);
            assert_eq!(u64::from_le_bytes(buf), i);
        }
        let dt = t0.elapsed();
        println!(
            "{name:12} {:8.0} ns/round trip",
            dt.as_nanos() as f64 / n as f64
        );
        drop(c);
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        h.join().unwrap();
    }
    std::fs::remove_dir(&dir).ok();
    Ok(())
}
