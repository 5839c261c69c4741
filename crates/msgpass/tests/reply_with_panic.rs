//! A server whose `reply_with` closure panics still answers: the client
//! hears EIO (the unanswered request's drop), and the channel serves on.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use msgpass::{Channel, Connection, Error, Namespace, Options};

fn panicking_fill_answers_eio(transport: &str) {
    let dir = std::env::temp_dir().join(format!(
        "msgpass-reply-panic-{transport}-{}",
        std::process::id()
    ));
    let ns = Namespace::open(&dir).expect("namespace");
    let t = msgpass::transport::by_name(transport).expect("transport");
    let mut chan = Channel::create(&ns, "p/0", &*t, &Options::default()).expect("serve");
    let stop = chan.stop_flag();
    let server = std::thread::spawn(move || {
        while let Ok(Some(req)) = chan.receive() {
            if req.cmd() == 1 {
                let r = catch_unwind(AssertUnwindSafe(|| req.reply_with(|_| panic!("fill"))));
                assert!(r.is_err(), "the closure panicked");
            } else {
                req.reply_with(|buf| {
                    buf.write(0, &[7]);
                    1
                })
                .expect("reply");
            }
        }
    });
    let opts = Options {
        wait: Some(Duration::from_secs(5)),
        ..Options::default()
    };
    let mut conn = Connection::open(&ns, "p/0", &*t, &opts).expect("open");
    // A client left without an answer would wait for ever: watch it.
    let (done, finished) = std::sync::mpsc::channel();
    let label = transport.to_string();
    let client = std::thread::spawn(move || {
        for _ in 0..3 {
            match conn.call_with(1, |_| 0) {
                Err(Error::Remote { code }) => assert_eq!(code, libc::EIO),
                other => panic!("{label}: panicking fill gave {other:?}"),
            }
            assert_eq!(conn.call_with(2, |_| 0).expect("next call").to_vec(), [7]);
        }
        let _ = done.send(());
        conn
    });
    if finished.recv_timeout(Duration::from_secs(20)).is_err() {
        panic!("{transport}: the client got no answer to a request whose fill panicked");
    }
    let conn = client.join().expect("client thread");
    drop(conn);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    server.join().expect("server thread");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn in_place_shm() {
    panicking_fill_answers_eio("shm-spin");
    panicking_fill_answers_eio("shm-block");
}

#[test]
fn in_place_areas() {
    panicking_fill_answers_eio("eventfd");
    panicking_fill_answers_eio("io-uring");
    panicking_fill_answers_eio("signal");
}

#[test]
fn copying_fallback_uds() {
    panicking_fill_answers_eio("uds");
}
