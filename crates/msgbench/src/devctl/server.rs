//! `dev-adder`: one thread per instance, each with its own channel (so that
//! a global lock in the OS shows up as lost scaling), or with `--pool N`
//! one path served by a pool of N threads (the QNX multithreaded resource
//! manager's model).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use clap::Parser;
use msgpass::transport::shm::Shm;
use msgpass::transport::ServerChannel;
use msgpass::{Channel, Namespace, Received};
use oslayer::process;

use super::options::{self, Api, Common};
use super::{endpoint, ADDER_INCREMENT};
use crate::measure::placement::{self, CpuList};

/// Command line of `dev-adder`.
#[derive(Debug, Parser)]
#[command(
    name = "dev-adder",
    version,
    about = "The adder server of the QNX devctl benchmark: serves adder/<k> for k = K..K+N-1",
    long_about = "The adder server of the QNX devctl benchmark.\n\nServes one endpoint per instance, adder/<k> for k = K..K+N-1, each on its own thread and channel. Each answers ADDER_INCREMENT (u32 in, u32 + 1 out) and replies ENOTTY to anything else. Stops cleanly on SIGINT/SIGTERM, removing its endpoints.\n\nWith --pool N, serves the one path adder/K from a pool of N threads instead: any free thread takes the next request of any client (QNX's multithreaded resource manager), its connection's home thread first (the one pinned to the CPU the client last ran on, with --cpus) while that one is free.\n\nWith -t tcp --listen ADDR:PORT, instance k is served on ADDR:PORT+k instead, for clients on other hosts (client-adder -t tcp --connect ADDR:PORT)."
)]
pub struct ServerArgs {
    #[command(flatten)]
    #[allow(missing_docs)]
    pub common: Common,
    /// Exit when process PID (the parent) dies (used by msgbench).
    #[arg(long = "die-with-parent", value_name = "PID", hide = true)]
    pub die_with_parent: Option<i32>,
    /// Print nothing but errors.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// Serve instance k over TCP on ADDR:PORT+k, reachable from other
    /// hosts, instead of in the namespace (needs -t tcp).
    #[arg(long = "listen", value_name = "ADDR:PORT")]
    pub listen: Option<String>,
    /// Serve the one path adder/K from a pool of N threads (1 to 64)
    /// instead of one thread per instance; --cpus pins pool thread k to
    /// the k-th CPU of the list.
    #[arg(long = "pool", value_name = "N")]
    pub pool: Option<usize>,
    /// Priority inheritance: each request is served at its calling
    /// thread's scheduling policy and priority until the reply, as on QNX
    /// (uds, uds-stream, uds-dgram, pipe, fifo, eventfd, posix-mq, io-uring,
    /// shm, shm-hybrid, shm-spin, shm-block; needs CAP_SYS_NICE or an RLIMIT_RTPRIO above 0; refused elsewhere,
    /// saying why).
    #[arg(long = "inherit-priority")]
    pub inherit_priority: bool,
}

/// Where the instances are served.
enum Place {
    /// In the endpoint namespace.
    Ns(Namespace),
    /// Over TCP, instance k on this address's port + k.
    Tcp(std::net::SocketAddr),
}

/// Test knob, not an option: when set to a whole number of microseconds,
/// every instance sleeps that long before each reply, so that a test can
/// make a deliberately slower server (`tests/compare.rs` checks that
/// `msgbench compare` calls such a run slower). Read once at start; the
/// serving loop only tests a cached `Option`. Children started by
/// `msgbench adder` inherit it.
pub const TEST_DELAY_ENV: &str = "MSGBENCH_TEST_SERVER_DELAY_US";

/// The delay [`TEST_DELAY_ENV`] asks for: `None` when unset or 0, an
/// error naming the variable when it is not a whole number of
/// microseconds (at most one second).
fn test_delay() -> Result<Option<Duration>> {
    match std::env::var_os(TEST_DELAY_ENV) {
        Some(v) => parse_test_delay(&v.to_string_lossy()),
        None => Ok(None),
    }
}

/// Parses a [`TEST_DELAY_ENV`] value.
fn parse_test_delay(text: &str) -> Result<Option<Duration>> {
    match text.trim().parse::<u64>() {
        Ok(0) => Ok(None),
        Ok(us) if us <= 1_000_000 => Ok(Some(Duration::from_micros(us))),
        _ => anyhow::bail!(
            "{TEST_DELAY_ENV}={text}: must be a whole number of microseconds, 0 to 1000000"
        ),
    }
}

/// Runs the server until SIGINT/SIGTERM (or `stop` is set).
pub fn run(args: &ServerArgs, stop: Arc<AtomicBool>) -> Result<()> {
    let cpus = args.common.validate()?;
    check_pool(args)?;
    let delay = test_delay()?;
    let listen = match &args.listen {
        Some(v) => Some(options::tcp_base("--listen", v, &args.common)?),
        None => None,
    };
    if let Some(ppid) = args.die_with_parent {
        process::die_with(ppid, process::Signal::TERM).context("--die-with-parent")?;
    }
    let place = match listen {
        Some(base) => Place::Tcp(base),
        None => Place::Ns(Namespace::resolve(args.common.ns.as_deref())?),
    };
    let transport = msgpass::transport::by_name(&args.common.transport)?;
    let api = args.common.api();
    let announce = |place: &Place| -> Result<()> {
        if !args.quiet {
            let mut threads = match args.pool {
                Some(n) => format!(" with a pool of {n} threads"),
                None => String::new(),
            };
            if args.inherit_priority {
                threads.push_str(", inheriting its callers' priority");
            }
            println!(
                "dev-adder: serving {}{threads} over {}, API {} (pid {})",
                describe(args, place)?,
                transport.name(),
                api.describe(),
                std::process::id()
            );
        }
        Ok(())
    };
    if let (Some(threads), Place::Ns(ns)) = (args.pool, &place) {
        let mut channels = create_all(args, &stop, |k, opts| {
            Channel::create(ns, &endpoint(k), &*transport, opts)
                .with_context(|| format!("cannot serve {}", endpoint(k)))
        })?;
        let ch = channels.pop().context("no channel to pool")?;
        announce(&place)?;
        return serve_pool(ch, threads, &cpus, delay, api);
    }
    // The shared-memory transports are used typed: receiving and replying
    // are then direct calls the compiler inlines into the serving loop.
    match (&place, Shm::by_name(&args.common.transport)) {
        (Place::Ns(ns), Some(shm)) => {
            let channels = create_all(args, &stop, |k, opts| {
                Channel::create_typed(ns, &endpoint(k), &shm, opts)
                    .with_context(|| format!("cannot serve {}", endpoint(k)))
            })?;
            announce(&place)?;
            serve_all(channels, &cpus, delay, api, &stop)
        }
        _ => {
            let channels = create_all(args, &stop, |k, opts| match &place {
                Place::Ns(ns) => Channel::create(ns, &endpoint(k), &*transport, opts)
                    .with_context(|| format!("cannot serve {}", endpoint(k))),
                Place::Tcp(base) => {
                    let addr = options::instance_addr(*base, k)?;
                    Channel::listen_tcp(addr, opts)
                        .with_context(|| format!("cannot serve {} on tcp {addr}", endpoint(k)))
                }
            })?;
            announce(&place)?;
            serve_all(channels, &cpus, delay, api, &stop)
        }
    }
}

/// `--pool N`: 1 to the largest pool, one path (`-n 1`), in the namespace.
fn check_pool(args: &ServerArgs) -> Result<()> {
    let Some(n) = args.pool else { return Ok(()) };
    let max = msgpass::pool::MAX_THREADS;
    if !(1..=max).contains(&n) {
        anyhow::bail!("--pool {n}: a pool has 1 to {max} threads");
    }
    if args.common.n != 1 {
        anyhow::bail!(
            "--pool {n}: a pool serves one path (adder/{}), so -n must be 1 (got -n {})",
            args.common.i,
            args.common.n
        );
    }
    if args.listen.is_some() {
        anyhow::bail!("--pool {n}: serves a path in the namespace, not with --listen");
    }
    Ok(())
}

/// Serves `ch` from a pool of `threads` threads (thread k pinned to the
/// k-th CPU of `cpus`) until stopped; the first to fail stops the others.
fn serve_pool(
    ch: Channel,
    threads: usize,
    cpus: &CpuList,
    delay: Option<Duration>,
    api: Api,
) -> Result<()> {
    let name = ch.path().display().to_string();
    let stop = ch.stop_flag();
    let receivers = ch
        .into_pool(threads)
        .with_context(|| format!("cannot serve {name} with a pool of {threads} threads"))?;
    on_threads(receivers, &stop, "a pool thread", |mut rx| {
        placement::maybe_pin(cpus.for_thread(rx.index()))?;
        while let Some(req) = rx.receive().with_context(|| format!("receive on {name}"))? {
            answer(req, delay, api)?;
        }
        Ok(())
    })
}

/// Runs `work` on each of `items`, each on a thread of its own; the first
/// to fail sets `stop` (so the others end within a tick), and its error is
/// returned once every thread is done.
fn on_threads<T: Send>(
    items: Vec<T>,
    stop: &AtomicBool,
    what: &str,
    work: impl Fn(T) -> Result<()> + Sync,
) -> Result<()> {
    let results = std::thread::scope(|s| {
        let handles: Vec<_> = items
            .into_iter()
            .map(|item| {
                let work = &work;
                s.spawn(move || {
                    let r = work(item);
                    if r.is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                    r
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(anyhow!("{what} panicked"))))
            .collect::<Vec<_>>()
    });
    results.into_iter().collect::<Result<Vec<()>>>()?;
    Ok(())
}

/// Creates every channel (instance k made by `make(k, options)`) before
/// serving any, so a failure is reported once and nothing is left
/// half-started.
fn create_all<S: ServerChannel + ?Sized>(
    args: &ServerArgs,
    stop: &Arc<AtomicBool>,
    make: impl Fn(u32, &msgpass::Options) -> Result<Channel<S>>,
) -> Result<Vec<Channel<S>>> {
    let opts = msgpass::Options {
        inherit_priority: args.inherit_priority,
        ..args.common.msgpass_options()
    };
    let (first, n) = (args.common.i, args.common.n);
    let mut channels = Vec::with_capacity(n as usize);
    for k in first..=first + (n - 1) {
        let mut ch = make(k, &opts)?;
        if ch.replaced_stale() && !args.quiet {
            eprintln!(
                "dev-adder: replaced a stale endpoint at {}",
                ch.path().display()
            );
        }
        ch.set_stop_flag(Arc::clone(stop));
        channels.push(ch);
    }
    Ok(channels)
}

/// "adder/0..adder/3 in DIR" or "... on ADDR..PORT": what is served where.
fn describe(args: &ServerArgs, place: &Place) -> Result<String> {
    let (first, n) = (args.common.i, args.common.n);
    let last = first + (n - 1);
    let range = if n == 1 {
        endpoint(first)
    } else {
        format!("{}..{}", endpoint(first), endpoint(last))
    };
    let place = match place {
        Place::Ns(ns) => format!("in {}", ns.root().display()),
        Place::Tcp(base) if n == 1 => format!("on {}", options::instance_addr(*base, first)?),
        Place::Tcp(base) => format!(
            "on {}..{}",
            options::instance_addr(*base, first)?,
            options::instance_addr(*base, last)?.port()
        ),
    };
    Ok(format!("{range} {place}"))
}

/// Serves every channel on its own pinned thread until stopped; the first
/// to fail stops the others, and its error is returned.
pub(crate) fn serve_all<S: ServerChannel + ?Sized>(
    channels: Vec<Channel<S>>,
    cpus: &CpuList,
    delay: Option<Duration>,
    api: Api,
    stop: &Arc<AtomicBool>,
) -> Result<()> {
    let placed = channels.into_iter().enumerate().collect();
    on_threads(placed, stop, "a server thread", |(j, ch)| {
        let cpu = cpus.for_thread(j);
        match api {
            Api::InPlace => serve::<S, false>(ch, cpu, delay),
            Api::Copy => serve::<S, true>(ch, cpu, delay),
        }
    })
}

/// Serves one channel until stopped, sleeping `delay` before each reply
/// (the [`TEST_DELAY_ENV`] knob; `None` in every real run). `COPY` picks
/// the API at compile time, so the loop carries no test for it: the
/// copying `Request::reply` from a buffer of ours, or (`false`)
/// `Request::reply_with`, adding one to the request where it lies.
fn serve<S: ServerChannel + ?Sized, const COPY: bool>(
    mut ch: Channel<S>,
    cpu: Option<usize>,
    delay: Option<Duration>,
) -> Result<()> {
    placement::maybe_pin(cpu)?;
    let name = ch.path().display().to_string();
    let api = if COPY { Api::Copy } else { Api::InPlace };
    while let Some(req) = ch.receive().with_context(|| format!("receive on {name}"))? {
        answer(req, delay, api)?;
    }
    Ok(())
}

/// Answers one request: ADDER_INCREMENT with its u32 plus one, through the
/// copying `reply` or (in place) `reply_with`, adding one to the request
/// where it lies; ENOTTY to any other command, EINVAL to a request that is
/// not 4 bytes. Sleeps `delay` first (the [`TEST_DELAY_ENV`] knob).
#[inline(always)]
fn answer(req: impl Received, delay: Option<Duration>, api: Api) -> Result<()> {
    if let Some(d) = delay {
        std::thread::sleep(d);
    }
    if req.cmd() != ADDER_INCREMENT {
        req.reply_error(libc::ENOTTY)?;
        return Ok(());
    }
    if req.len() != 4 {
        req.reply_error(libc::EINVAL)?;
        return Ok(());
    }
    match api {
        Api::Copy => {
            let mut b = [0u8; 4];
            b.copy_from_slice(req.data());
            let v = u32::from_le_bytes(b).wrapping_add(1);
            req.reply(&v.to_le_bytes())?;
        }
        // The window starts with the 4 request bytes, their length just
        // checked (read there, in place: no copy of the request first).
        Api::InPlace => req.reply_with(|buf| {
            let v = u32::from_le_bytes(buf.get(0)).wrapping_add(1);
            buf.write(0, &v.to_le_bytes());
            4
        })?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_delay_is_microseconds_and_off_at_zero() {
        assert_eq!(parse_test_delay("0").unwrap(), None);
        assert_eq!(
            parse_test_delay("250").unwrap(),
            Some(Duration::from_micros(250))
        );
        for bad in ["", "-1", "1.5", "2000000"] {
            let e = parse_test_delay(bad).unwrap_err().to_string();
            assert!(e.starts_with(TEST_DELAY_ENV), "{e}");
        }
    }
}
