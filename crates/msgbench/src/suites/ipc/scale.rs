//! How many clients a plan may ask for (`--idle-clients`, `--clients`):
//! the lists parsed, and every count checked before anything runs against
//! what the row's server, a thread of this process, can hold: descriptors
//! (RLIMIT_NOFILE, the soft limit raised to the hard one first; msgpass's
//! transport table says how many a server keeps per connection) and the
//! transport's own ceiling where it has one (POSIX queues, System V
//! queues, loopback ports). Also how idle connections are shared out
//! between child processes, none holding more than its own limit allows.

use anyhow::{anyhow, bail, Result};
use oslayer::rlimit::{self, Resource};

use crate::measure::placement::{parse_ranges, RangeError};

/// Largest `--idle-clients` count (far beyond any descriptor limit: a
/// larger one is a typing error).
pub const MAX_IDLE: u32 = 1_000_000;
/// Largest `--clients` count (each is a process).
pub const MAX_CLIENTS: u32 = 1024;

/// Descriptors the suite process holds besides the connections and the
/// children's pipes (standard streams, the run directory, the listener,
/// the measured client's side, the library's helpers), with room.
const SLACK_FDS: u64 = 128;
/// Descriptors each child process costs the suite (its stdin, stdout and
/// stderr pipes).
const FDS_PER_CHILD: u64 = 3;
/// Descriptors a client of any transport holds per connection, at most,
/// with room (measured with `--idle-clients 50`: 4 on eventfd, its two
/// eventfds, the session and the poker's copy of one; 3 on pipe, fifo,
/// posix-mq, io-uring and sysv-msg). Only how idle connections are shared
/// out between children rests on it: each child checks its own use after
/// its first connection.
pub const CLIENT_FDS_BOUND: u64 = 5;
/// Descriptors a child holds besides its connections.
pub const CHILD_SLACK_FDS: u64 = 64;
/// Most idle connections one child holds, whatever its limit (so that
/// large counts connect from several processes at once).
pub const MAX_PER_CHILD: u64 = 4096;

/// Why a list of client counts was refused (clap prints it after
/// `--idle-clients LIST: ` or `--clients LIST: `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CountsError {
    /// Not a list of numbers and ranges within `max`.
    #[error("{why} (a list of client counts, {min} to {max}, like 1,8,64)")]
    List {
        /// What is wrong with it.
        why: RangeError,
        /// The smallest count.
        min: u32,
        /// The largest count.
        max: u32,
    },
    /// A count below `min`.
    #[error("{n} is below the minimum, {min}")]
    BelowMin {
        /// The count.
        n: u32,
        /// The smallest count.
        min: u32,
    },
}

/// Value parser of `--idle-clients`: counts from 0 to [`MAX_IDLE`].
pub fn idle_counts(list: &str) -> Result<Vec<u32>, CountsError> {
    counts(list, 0, MAX_IDLE)
}

/// Value parser of `--clients`: counts from 1 to [`MAX_CLIENTS`].
pub fn client_counts(list: &str) -> Result<Vec<u32>, CountsError> {
    counts(list, 1, MAX_CLIENTS)
}

/// Parses a list of client counts (`1,8,64`; ranges such as `1-4`
/// allowed), each at least `min` and at most `max`, repeats dropped,
/// order kept.
fn counts(list: &str, min: u32, max: u32) -> Result<Vec<u32>, CountsError> {
    let all =
        parse_ranges(list, max as usize).map_err(|why| CountsError::List { why, min, max })?;
    let mut out: Vec<u32> = Vec::new();
    for n in all {
        let n = n as u32; // at most `max`
        if n < min {
            return Err(CountsError::BelowMin { n, min });
        }
        if !out.contains(&n) {
            out.push(n);
        }
    }
    Ok(out)
}

/// The idle connections of a row shared out between child processes:
/// as few children as hold them within their own RLIMIT_NOFILE (the hard
/// limit, to which each raises its soft one), shares as even as can be.
pub fn children(n: u32) -> Vec<u32> {
    let per_child = rlimit::hard(Resource::Nofile)
        .map_or(MAX_PER_CHILD, |h| {
            h.saturating_sub(CHILD_SLACK_FDS) / CLIENT_FDS_BOUND
        })
        .clamp(1, MAX_PER_CHILD);
    split(n, per_child as u32)
}

/// `n` shared out in as few parts of at most `per_part` as can be, as
/// even as can be (the larger parts first).
fn split(n: u32, per_part: u32) -> Vec<u32> {
    if n == 0 {
        return Vec::new();
    }
    let parts = n.div_ceil(per_part.max(1));
    (0..parts)
        .map(|k| n / parts + u32::from(k < n % parts))
        .collect()
}

/// Checks that the server of every row can hold the largest count of
/// each list on every transport; the error is one line naming the
/// option, the transport, the need, the limit and how to raise it.
pub fn check_fit(transports: &[String], idle: &[u32], clients: &[u32]) -> Result<()> {
    if idle.is_empty() && clients.is_empty() {
        return Ok(()); // without the axes, nothing changes
    }
    // Raising the soft limit needs no privilege; what is left is the
    // hard limit. Where even reading fails, the soft limit stands.
    let nofile = rlimit::raise_soft_to_hard(Resource::Nofile)
        .unwrap_or_else(|_| rlimit::soft(Resource::Nofile));
    for (option, counts, idle) in [
        ("--idle-clients", idle, true),
        ("--clients", clients, false),
    ] {
        let Some(&n) = counts.iter().max() else {
            continue;
        };
        for t in transports {
            let info = msgpass::transport::info(t).map_err(|e| anyhow!("--transport {t}: {e}"))?;
            let need = |n: u32| Need::of(n, idle, u64::from(info.server_fds));
            let fits = |n: u32| need(n).fds <= nofile.unwrap_or(u64::MAX);
            if !fits(n) {
                bail!(
                    "{option} {n}: {t} needs about {} descriptors in this process ({}), more \
                     than its RLIMIT_NOFILE of {} (the soft limit raised to the hard one); at most \
                     {} fit: raise the hard limit (ulimit -Hn as root, or nofile in \
                     /etc/security/limits.conf; raising it needs CAP_SYS_RESOURCE)",
                    need(n).fds,
                    need(n).describe(info.server_fds),
                    nofile.unwrap_or(u64::MAX),
                    largest(n, fits)
                );
            }
            let conns = need(n).connections;
            let ceilings = ceilings(info.name);
            let Some(low) = ceilings.iter().map(|c| c.connections).min() else {
                continue;
            };
            if conns > low {
                let at = ceilings.iter().filter(|c| c.connections == low);
                let (what, how): (Vec<&str>, Vec<&str>) =
                    at.map(|c| (c.what.as_str(), c.how.as_str())).unzip();
                bail!(
                    "{option} {n}: {t} needs {conns} connections at once, more than {} allows \
                     ({low}); at most {} fit: {}",
                    what.join(" and "),
                    largest(n, |k| need(k).connections <= low),
                    how.join("; ")
                );
            }
        }
    }
    Ok(())
}

/// The largest count up to `n` that `fits` (0 when none does).
fn largest(n: u32, fits: impl Fn(u32) -> bool) -> u32 {
    let (mut lo, mut hi) = (0u32, n);
    if !fits(lo) {
        return 0;
    }
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// What a row with `n` clients needs of the suite process.
struct Need {
    /// Connections its server holds at once (the idle ones and the
    /// measured one; or the active ones).
    connections: u64,
    /// Descriptors besides them.
    besides: u64,
    /// Descriptors in all.
    fds: u64,
}

impl Need {
    fn of(n: u32, idle: bool, server_fds: u64) -> Need {
        let (connections, processes) = if idle {
            (u64::from(n) + 1, children(n).len() as u64)
        } else {
            (u64::from(n), u64::from(n))
        };
        let besides = SLACK_FDS + FDS_PER_CHILD * processes;
        Need {
            connections,
            besides,
            fds: connections * server_fds + besides,
        }
    }

    fn describe(&self, server_fds: u32) -> String {
        format!(
            "{} connections x {server_fds} and {} besides",
            self.connections, self.besides
        )
    }
}

/// A limit on the connections of one transport, other than descriptors.
struct Ceiling {
    /// Connections it allows at once.
    connections: u64,
    /// What it is, e.g. `fs.mqueue.queues_max = 256`.
    what: String,
    /// How to raise it.
    how: String,
}

/// A number read from a file of /proc, `None` if unreadable.
fn proc_number(path: &str) -> Option<u64> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// Loopback ports the kernel hands out (`net.ipv4.ip_local_port_range`).
fn ephemeral_ports() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok()?;
    let mut it = s.split_whitespace().map(|v| v.parse::<u64>().ok());
    let (lo, hi) = (it.next()??, it.next()??);
    Some(hi.checked_sub(lo)? + 1)
}

/// The ceilings of transport `name` here (none for most).
fn ceilings(name: &str) -> Vec<Ceiling> {
    let ports = "widen it with sysctl net.ipv4.ip_local_port_range (needs root)";
    match name {
        "posix-mq" => {
            let mut out = Vec::new();
            if let Some(q) = proc_number("/proc/sys/fs/mqueue/queues_max") {
                out.push(Ceiling {
                    connections: q / 2,
                    what: format!(
                        "fs.mqueue.queues_max = {q} (two queues a connection, every user's \
                         queues counted)"
                    ),
                    how: "raise fs.mqueue.queues_max with sysctl (needs root)".into(),
                });
            }
            if let (Some(bytes), Ok(t)) = (
                rlimit::soft(Resource::Msgqueue),
                msgpass::transport::by_name(name),
            ) {
                let payload = t.max_msg(msgpass::Options::default().max_msg);
                let per_conn = msgpass::transport::posix_mq::queue_bytes_per_connection(payload);
                out.push(Ceiling {
                    connections: bytes / per_conn,
                    what: format!(
                        "RLIMIT_MSGQUEUE = {bytes} bytes ({per_conn} bytes of queues a \
                         connection, every queue of this user counted)"
                    ),
                    how: "raise it with ulimit -q, or msgqueue in /etc/security/limits.conf".into(),
                });
            }
            out
        }
        "sysv-msg" => proc_number("/proc/sys/kernel/msgmni")
            .map(|m| {
                let used = std::fs::read_to_string("/proc/sysvipc/msg")
                    .map_or(0, |s| s.lines().count().saturating_sub(1) as u64);
                Ceiling {
                    // One queue a connection, one for the channel.
                    connections: m.saturating_sub(used + 1),
                    what: format!(
                        "kernel.msgmni = {m} less the {used} queues in use (one queue a \
                         connection and one a channel)"
                    ),
                    how: "raise kernel.msgmni with sysctl (needs root)".into(),
                }
            })
            .into_iter()
            .collect(),
        "udp" => ephemeral_ports()
            .map(|p| Ceiling {
                connections: p / 2,
                what: format!("the {p} ephemeral loopback ports (two a connection)"),
                how: ports.into(),
            })
            .into_iter()
            .collect(),
        "tcp" => ephemeral_ports()
            .map(|p| Ceiling {
                connections: p.saturating_sub(1),
                what: format!("the {p} ephemeral loopback ports (one a connection)"),
                how: ports.into(),
            })
            .into_iter()
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_keep_order_drop_repeats_and_say_why() {
        assert_eq!(idle_counts("0,1000,10,1000").unwrap(), [0, 1000, 10]);
        assert_eq!(idle_counts("2-4").unwrap(), [2, 3, 4]);
        for bad in ["", "x", "-1", "1,,2", "1000001", "99999999999999999999999"] {
            let e = idle_counts(bad).unwrap_err().to_string();
            assert!(
                e.ends_with("(a list of client counts, 0 to 1000000, like 1,8,64)"),
                "{bad}: {e}"
            );
        }
        let e = client_counts("0,8").unwrap_err();
        assert_eq!(e, CountsError::BelowMin { n: 0, min: 1 });
        assert_eq!(e.to_string(), "0 is below the minimum, 1");
        let e = client_counts("2000").unwrap_err().to_string();
        assert_eq!(
            e,
            "2000 is above the maximum, 1024 (a list of client counts, 1 to 1024, like 1,8,64)"
        );
    }

    #[test]
    fn shares_are_even_and_within_the_part_limit() {
        assert!(split(0, 10).is_empty());
        assert_eq!(split(300, 4096), [300]);
        assert_eq!(split(10_000, 4096), [3334, 3333, 3333]);
        assert_eq!(split(8192, 4096), [4096, 4096]);
        assert_eq!(split(7, 0), [1; 7]);
        let s = children(100_000);
        assert_eq!(s.iter().sum::<u32>(), 100_000);
        assert!(s.iter().all(|&k| u64::from(k) <= MAX_PER_CHILD), "{s:?}");
    }

    #[test]
    fn largest_finds_the_edge() {
        assert_eq!(largest(100, |n| n <= 37), 37);
        assert_eq!(largest(100, |_| true), 100);
        assert_eq!(largest(100, |_| false), 0);
        assert_eq!(largest(u32::MAX, |n| n <= 5), 5);
    }

    #[test]
    fn more_than_the_descriptor_limit_is_refused_in_one_line() {
        let hard = rlimit::hard(Resource::Nofile);
        let Some(hard) = hard.filter(|&h| h < u64::from(MAX_IDLE)) else {
            return; // unlimited here: nothing to exceed
        };
        let n = (hard + 1000) as u32;
        let e = check_fit(&["uds".into()], &[0, n], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("--idle-clients {n}: uds needs about ")),
            "{e}"
        );
        assert!(
            e.contains("RLIMIT_NOFILE") && e.contains("ulimit -Hn"),
            "{e}"
        );
        assert!(!e.contains('\n'), "{e}");
        // fuse keeps no descriptor per connection: only the slack counts.
        assert!(check_fit(&["fuse".into()], &[n], &[]).is_ok());
        assert!(check_fit(&["uds".into()], &[100], &[8]).is_ok());
    }

    #[test]
    fn posix_queues_have_a_ceiling_of_their_own() {
        let Some(low) = ceilings("posix-mq").iter().map(|c| c.connections).min() else {
            return; // no /proc here
        };
        let n = low as u32; // plus the measured connection: one too many
        let e = check_fit(&["posix-mq".into()], &[n], &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("--idle-clients {n}: posix-mq needs ")),
            "{e}"
        );
        assert!(e.contains(&format!("at most {} fit", n - 1)), "{e}");
        assert!(check_fit(&["posix-mq".into()], &[n - 1], &[]).is_ok());
        assert!(ceilings("uds").is_empty());
    }
}
