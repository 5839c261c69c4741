//! The sentence on threads past the CPU count: the seed ran 5 and 6
//! client/server pairs on its 4 cores, and its table answers what one more
//! thread than there are cores costs. [`past_cores`] says the same of our
//! rows (the aggregate rate at the CPU count against the most threads
//! measured past it, per extra thread) beside the seed's own change from 4
//! to 6 threads, so either can come out rising or falling.

use super::row::Row;
use super::{Mode, Placement};
use crate::devctl::options::Api;
use crate::devctl::seed::{self, SEED_CORES};
use crate::results::thousands;

/// One transport's aggregate at the CPU count and at the most threads
/// measured past it.
struct Past {
    transport: String,
    at_cpus: f64,
    threads: u32,
    at_most: f64,
}

impl Past {
    /// The change of the aggregate per thread past `from` threads, as a
    /// share (-0.05: 5% lower per extra thread).
    fn per_thread(&self, from: u32) -> f64 {
        (self.at_most / self.at_cpus - 1.0) / f64::from(self.threads - from)
    }
}

/// The sentence for `mode`'s rows past `cpus` (pinned rows, else the
/// unpinned ones), with the seed's figures for the same mode; `None`
/// when no transport has a row at `cpus` threads and one past it.
pub fn past_cores(rows: &[Row], cpus: usize, mode: Mode) -> Option<String> {
    let cpus = u32::try_from(cpus).ok().filter(|&c| c >= 1)?;
    let (placement, pasts) = [Placement::Pinned, Placement::Unpinned]
        .into_iter()
        .map(|p| (p, pasts(rows, p, mode, cpus)))
        .find(|(_, v)| !v.is_empty())?;
    let ours: Vec<String> = pasts
        .iter()
        .map(|p| {
            format!(
                "{} {} per extra thread ({} msg/s aggregate at {cpus} → {} at {})",
                p.transport,
                signed_pct(p.per_thread(cpus)),
                thousands(p.at_cpus),
                thousands(p.at_most),
                p.threads
            )
        })
        .collect();
    Some(format!(
        "Past the {cpus} CPU{} ({}, {}): {}. {}",
        if cpus == 1 { "" } else { "s" },
        mode.label().to_lowercase(),
        match placement {
            Placement::Pinned => "pinned",
            Placement::Unpinned => "unpinned",
        },
        ours.join("; "),
        seed_clause(mode)
    ))
}

/// Each transport's rows of `mode` in `placement` at `cpus` threads and
/// at the most threads past it, in first-seen order.
fn pasts(rows: &[Row], placement: Placement, mode: Mode, cpus: u32) -> Vec<Past> {
    let ran: Vec<(&str, u32, f64)> = rows
        .iter()
        .filter(|r| r.placement == placement && r.mode == mode && r.api == Api::InPlace)
        .filter_map(|r| {
            Some((
                r.transport.as_str(),
                r.threads,
                r.measured.as_ref()?.aggregate_rate,
            ))
        })
        .collect();
    let mut out: Vec<Past> = Vec::new();
    for &(t, ..) in &ran {
        if out.iter().any(|p| p.transport == t) {
            continue;
        }
        let at = |x: u32| {
            ran.iter()
                .find(|(rt, rx, _)| *rt == t && *rx == x)
                .map(|r| r.2)
        };
        let most = ran
            .iter()
            .filter(|(rt, rx, _)| *rt == t && *rx > cpus)
            .map(|r| r.1)
            .max();
        if let (Some(at_cpus), Some(threads)) = (at(cpus).filter(|&a| a > 0.0), most) {
            out.push(Past {
                transport: t.to_string(),
                at_cpus,
                threads,
                at_most: at(threads).unwrap_or(0.0),
            });
        }
    }
    out
}

/// The seed's change past its cores in `mode`, per system: "The seed on
/// its 4 cores: QNX 8.0 -7.2% per extra thread (...), QNX 7.1 ...".
fn seed_clause(mode: Mode) -> String {
    let most = 6;
    let each: Vec<String> = seed::OSES
        .iter()
        .filter_map(|os| {
            let layout = mode.seed_layout()?;
            let p = Past {
                transport: os.to_string(),
                at_cpus: seed::aggregate(os, layout, SEED_CORES)?,
                threads: most,
                at_most: seed::aggregate(os, layout, most)?,
            };
            Some(format!(
                "{os} {} per extra thread ({} at {SEED_CORES} → {} at {most})",
                signed_pct(p.per_thread(SEED_CORES)),
                thousands(p.at_cpus),
                thousands(p.at_most)
            ))
        })
        .collect();
    match each.is_empty() {
        true => "The seed has no figures for this mode.".to_string(),
        false => format!(
            "The seed past its {SEED_CORES} cores (Raspberry Pi 4): {}.",
            each.join(", ")
        ),
    }
}

/// "+3.1%" or "-7.2%".
fn signed_pct(v: f64) -> String {
    format!("{:+.1}%", v * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devctl::client::ClientRun;
    use crate::suites::adder::Measured;

    fn row(transport: &str, threads: u32, aggregate: f64) -> Row {
        let run = ClientRun {
            histogram: Vec::new(),
            api: Api::InPlace,
            transport: transport.into(),
            samples: 1000,
            threads: Vec::new(),
            busy: None,
            ave_duration_ns: 1e6,
            rate_per_thread: aggregate / f64::from(threads),
            aggregate_rate: aggregate,
            latency: None,
        };
        Row {
            transport: transport.into(),
            placement: Placement::Pinned,
            mode: Mode::One,
            threads,
            api: Api::InPlace,
            error: None,
            measured: Some(Measured::new(threads, run, None, None)),
        }
    }

    #[test]
    fn a_falling_and_a_rising_aggregate_are_said_as_they_are() {
        let rows = [
            row("uds", 2, 100_000.0),
            row("uds", 3, 95_000.0),
            row("uds", 4, 90_000.0),
            row("shm", 2, 100_000.0),
            row("shm", 4, 110_000.0),
        ];
        let s = past_cores(&rows, 2, Mode::One).expect("a sentence");
        assert!(
            s.contains("uds -5.0% per extra thread (100,000 msg/s aggregate at 2 → 90,000 at 4)"),
            "{s}"
        );
        assert!(s.contains("shm +5.0% per extra thread"), "{s}");
        // The seed's QNX 8.0, one process: 573,800 at 4, 491,220 at 6.
        assert!(
            s.contains("QNX 8.0 -7.2% per extra thread (573,800 at 4 → 491,220 at 6)"),
            "{s}"
        );
        assert!(s.contains("QNX 7.1 -2.9% per extra thread"), "{s}");
    }

    #[test]
    fn nothing_is_said_without_rows_past_the_cpus_or_at_them() {
        let rows = [row("uds", 1, 50_000.0), row("uds", 2, 100_000.0)];
        assert_eq!(past_cores(&rows, 2, Mode::One), None);
        let rows = [row("uds", 1, 50_000.0), row("uds", 3, 100_000.0)];
        assert_eq!(past_cores(&rows, 2, Mode::One), None);
        assert_eq!(
            past_cores(&[row("uds", 2, 1.0), row("uds", 3, 1.0)], 2, Mode::Multi),
            None
        );
    }

    #[test]
    fn a_pool_is_compared_with_nothing_of_the_seed() {
        let mut rows = [row("uds", 2, 100_000.0), row("uds", 3, 100_000.0)];
        for r in &mut rows {
            r.mode = Mode::Pool;
        }
        let s = past_cores(&rows, 2, Mode::Pool).expect("a sentence");
        assert!(s.contains("uds +0.0% per extra thread"), "{s}");
        assert!(s.ends_with("The seed has no figures for this mode."), "{s}");
    }
}
