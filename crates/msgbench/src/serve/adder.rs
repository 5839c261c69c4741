//! `msgbench serve adder`: N adder instances, instance k a remote tcp
//! channel on PORT+1+k served by a thread of its own (the dev-adder loop,
//! in place), beside the control channel on PORT.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{anyhow, Result};

use super::control::{self, Info};
use super::{listen, listen_addr, port_after, ready, secret, AdderServeArgs};
use crate::devctl::options::{check_instances, Api};
use crate::devctl::server::serve_all;

/// Serves until `stop` is set.
pub(super) fn run(args: &AdderServeArgs, stop: Arc<AtomicBool>) -> Result<()> {
    check_instances(args.n, 0)?;
    let addr = listen_addr(&args.listen.listen, args.n)?;
    let token = secret::for_server(args.listen.token_file.as_deref())?;
    let control = listen(addr, &token, &stop)?;
    let instances = (0..args.n)
        .map(|k| listen(port_after(addr, 1 + k), &token, &stop))
        .collect::<Result<Vec<_>>>()?;
    let mut info = Info::here("adder");
    info.instances = Some(args.n);
    info.first_port = Some(port_after(addr, 1).port());
    ready(addr, &token, &info)?;
    let cpus = args.cpus.clone().unwrap_or_default();
    std::thread::scope(|s| {
        let ctl = s.spawn(|| control::serve(control, &info, &mut |_| Err(libc::ENOTTY)));
        let served = serve_all(instances, &cpus, None, Api::InPlace, &stop);
        // An instance that failed stops the control channel too.
        stop.store(true, Ordering::Relaxed);
        let ctl = ctl
            .join()
            .unwrap_or_else(|_| Err(anyhow!("the control thread panicked")));
        served.and(ctl)
    })
}
