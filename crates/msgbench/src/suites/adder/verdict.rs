//! The one sentence under the adder's tables: what the pinned rows say
//! about the seed's question (does messaging scale with threads, and do
//! threads of one process scale like separate processes?), computed from
//! the measured figures, so it can come out either way.

use super::row::Row;
use super::{Mode, Placement};
use crate::devctl::options::Api;

/// Scaling below this share of the way from 1/X (a fully serialised run)
/// to 100% (linear) reads as a global lock or another shared bottleneck.
const LOCK_SHARE: f64 = 0.5;

/// Two modes whose worst scaling (capped at linear) differs by more than
/// this differ.
const MODE_GAP: f64 = 0.15;

/// A pinned row with X from 2 to `cpus` and a scaling figure.
struct Judged {
    /// The transport, with " (copy API)" for a copying row of `--copy`.
    transport: String,
    mode: Mode,
    threads: u32,
    efficiency: f64,
}

/// The verdict sentence, from the pinned rows with 2 to `cpus` threads
/// (one client/server pair per CPU at most) and a path per server thread
/// (a pool's threads share one channel by design, so how they scale says
/// nothing about a lock in the OS); `None` when there are none.
pub fn verdict(rows: &[Row], cpus: usize) -> Option<String> {
    let judged: Vec<Judged> = rows
        .iter()
        .filter(|r| r.placement == Placement::Pinned && judged_x(r, cpus))
        .filter(|r| r.mode != Mode::Pool)
        .filter_map(|r| {
            Some(Judged {
                transport: transport_label(r),
                mode: r.mode,
                threads: r.threads,
                efficiency: r.efficiency()?,
            })
        })
        .collect();
    let worst = worst_per_transport(&judged);
    let best = worst
        .iter()
        .max_by(|a, b| a.efficiency.total_cmp(&b.efficiency))?;
    let low = worst
        .iter()
        .min_by(|a, b| a.efficiency.total_cmp(&b.efficiency))?;
    let mut s = "With each client/server pair pinned, ".to_string();
    if lock_like(low) {
        if !std::ptr::eq(*best, *low) {
            s.push_str(&format!("{}, but ", best_clause(best)));
        }
        s.push_str(&format!(
            "{} reached only {} at {} threads (a fully serialised run reads {}), \
             which suggests a global lock or another shared bottleneck",
            low.transport,
            pct(low.efficiency),
            low.threads,
            pct(1.0 / low.threads as f64)
        ));
    } else if worst.len() > 1 {
        s.push_str(&format!(
            "{} and every transport kept at least {} of linear scaling, so nothing suggests a global lock",
            best_clause(best),
            pct(low.efficiency)
        ));
    } else {
        s.push_str(&format!(
            "{}, so nothing suggests a global lock",
            best_clause(best)
        ));
    }
    s.push_str(&modes(&judged));
    s.push_str(&busy(rows, cpus));
    s.push('.');
    Some(s)
}

/// True for a row with 2 to `cpus` threads: one that shows scaling, with
/// one client/server pair per CPU at most.
fn judged_x(r: &Row, cpus: usize) -> bool {
    r.threads >= 2 && r.threads as usize <= cpus
}

/// The transport, with " (copy API)" for a copying row of `--copy`.
fn transport_label(r: &Row) -> String {
    match r.api {
        Api::InPlace => r.transport.clone(),
        Api::Copy => format!("{} (copy API)", r.transport),
    }
}

/// "uds scaled best (90% at 2 threads)".
fn best_clause(j: &Judged) -> String {
    format!(
        "{} scaled best ({} at {} threads)",
        j.transport,
        pct(j.efficiency),
        j.threads
    )
}

/// Each transport's lowest-scaling row, in first-seen order.
fn worst_per_transport(judged: &[Judged]) -> Vec<&Judged> {
    let mut out: Vec<&Judged> = Vec::new();
    for j in judged {
        match out.iter_mut().find(|w| w.transport == j.transport) {
            Some(w) if j.efficiency < w.efficiency => *w = j,
            Some(_) => {}
            None => out.push(j),
        }
    }
    out
}

/// Scaling closer to 1/X than to linear.
fn lock_like(j: &Judged) -> bool {
    let serial = 1.0 / j.threads as f64;
    j.efficiency < serial + (1.0 - serial) * LOCK_SHARE
}

/// The threads-against-processes clause, when both modes ran.
fn modes(judged: &[Judged]) -> String {
    let worst = |m: Mode| {
        judged
            .iter()
            .filter(|j| j.mode == m)
            // Above linear is the 1-thread row's bad luck, not a merit.
            .map(|j| j.efficiency.min(1.0))
            .reduce(f64::min)
    };
    let (Some(one), Some(multi)) = (worst(Mode::One), worst(Mode::Multi)) else {
        return String::new();
    };
    if one < multi - MODE_GAP {
        format!(
            "; threads of one server process scaled worse than separate processes ({} against {}), \
             a sign of a lock inside the process",
            pct(one),
            pct(multi)
        )
    } else if multi < one - MODE_GAP {
        format!(
            "; separate server processes scaled worse than threads of one process ({} against {})",
            pct(multi),
            pct(one)
        )
    } else {
        "; threads of one server process scaled like separate processes".to_string()
    }
}

/// A caveat when the idle baseline found the machine already busy (a
/// quarter of its CPUs or more): other load then shares the CPUs.
fn busy(rows: &[Row], cpus: usize) -> String {
    let idle = rows
        .iter()
        .filter_map(|r| r.measured.as_ref()?.idle_pct)
        .next();
    match idle {
        Some(i) if i >= cpus as f64 * 25.0 => format!(
            "; but the machine was already {i:.0}% busy before the run, so other load weighs on every figure"
        ),
        _ => String::new(),
    }
}

fn pct(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devctl::client::ClientRun;
    use crate::suites::adder::row::Measured;

    /// A measured row with scaling `eff`.
    fn row(transport: &str, placement: Placement, mode: Mode, threads: u32, eff: f64) -> Row {
        let run = ClientRun {
            histogram: Vec::new(),
            api: crate::devctl::options::Api::InPlace,
            transport: transport.into(),
            samples: 1000,
            threads: Vec::new(),
            busy: None,
            ave_duration_ns: 1e6,
            rate_per_thread: 1e6,
            aggregate_rate: 1e6 * threads as f64 * eff,
            latency: None,
        };
        Row {
            transport: transport.into(),
            placement,
            mode,
            threads,
            api: Api::InPlace,
            error: None,
            measured: Some(Measured::new(threads, run, None, Some(1e6))),
        }
    }

    fn both_modes(transport: &str, one: f64, multi: f64) -> Vec<Row> {
        vec![
            row(transport, Placement::Pinned, Mode::One, 1, 1.0),
            row(transport, Placement::Pinned, Mode::One, 2, one),
            row(transport, Placement::Pinned, Mode::Multi, 1, 1.0),
            row(transport, Placement::Pinned, Mode::Multi, 2, multi),
        ]
    }

    #[test]
    fn good_scaling_reads_as_no_global_lock() {
        let mut rows = both_modes("shm-block", 0.98, 0.96);
        rows.extend(both_modes("uds", 0.90, 0.91));
        // Unpinned rows, however odd, are not judged.
        rows.push(row("uds", Placement::Unpinned, Mode::One, 2, 0.05));
        let v = verdict(&rows, 2).expect("a verdict");
        assert_eq!(
            v,
            "With each client/server pair pinned, shm-block scaled best (96% at 2 threads) and \
             every transport kept at least 90% of linear scaling, so nothing suggests a global \
             lock; threads of one server process scaled like separate processes."
        );
    }

    #[test]
    fn serialised_scaling_reads_as_a_global_lock() {
        let mut rows = both_modes("shm-block", 0.97, 0.99);
        rows.extend(both_modes("uds", 0.55, 0.52));
        let v = verdict(&rows, 2).expect("a verdict");
        assert!(
            v.contains("shm-block scaled best (97% at 2 threads)"),
            "{v}"
        );
        assert!(v.contains("but uds reached only 52% at 2 threads"), "{v}");
        assert!(v.contains("suggests a global lock"), "{v}");
        assert!(!v.contains("nothing suggests"), "{v}");
        assert!(v.contains("(a fully serialised run reads 50%)"), "{v}");
        assert!(!v.contains("already"), "no idle baseline, no caveat: {v}");
    }

    #[test]
    fn a_busy_machine_is_said_to_be_busy() {
        let mut rows = both_modes("uds", 0.9, 0.9);
        for r in &mut rows {
            r.measured.as_mut().expect("measured").idle_pct = Some(120.0);
        }
        let v = verdict(&rows, 2).expect("a verdict");
        assert!(
            v.ends_with(
                "; but the machine was already 120% busy before the run, so other load weighs on every figure."
            ),
            "{v}"
        );
    }

    #[test]
    fn threads_scaling_worse_than_processes_is_named() {
        let v = verdict(&both_modes("pipe", 0.78, 0.96), 2).expect("a verdict");
        assert!(v.contains("so nothing suggests a global lock"), "{v}");
        assert!(
            v.contains("threads of one server process scaled worse than separate processes (78% against 96%)"),
            "{v}"
        );
        let v = verdict(&both_modes("pipe", 0.60, 0.96), 2).expect("a verdict");
        assert!(
            v.starts_with(
                "With each client/server pair pinned, pipe reached only 60% at 2 threads"
            ),
            "one transport: no 'best': {v}"
        );
    }

    #[test]
    fn scaling_above_linear_is_no_merit_between_modes() {
        let v = verdict(&both_modes("uds", 0.88, 1.35), 2).expect("a verdict");
        assert!(
            v.ends_with("threads of one server process scaled like separate processes."),
            "88% against 135% is 88% against 100%: {v}"
        );
    }

    #[test]
    fn no_pinned_rows_within_the_cpus_no_verdict() {
        let rows = vec![
            row("uds", Placement::Unpinned, Mode::One, 1, 1.0),
            row("uds", Placement::Unpinned, Mode::One, 2, 3.1),
        ];
        assert_eq!(verdict(&rows, 2), None);
        let pinned = both_modes("uds", 0.9, 0.9);
        assert_eq!(verdict(&pinned, 1), None, "one CPU: nothing to judge");
    }

    /// Both seed modes and a pool at X = 1 and 2 on `transport`, pinned.
    fn three_models(transport: &str, one: f64, multi: f64, pool: f64) -> Vec<Row> {
        let mut rows = both_modes(transport, one, multi);
        rows.push(row(transport, Placement::Pinned, Mode::Pool, 1, 1.0));
        rows.push(row(transport, Placement::Pinned, Mode::Pool, 2, pool));
        rows
    }

    #[test]
    fn a_pool_is_not_read_as_a_global_lock() {
        // A pool's threads share one channel by design: its scaling says
        // nothing about a lock in the OS, so the seed's verdict leaves it out.
        let v = verdict(&three_models("uds", 0.95, 0.93, 0.30), 2).expect("a verdict");
        assert!(v.contains("so nothing suggests a global lock"), "{v}");
        assert!(!v.contains("30%"), "{v}");
        let pool_only: Vec<Row> = three_models("uds", 0.95, 0.93, 0.30)
            .into_iter()
            .filter(|r| r.mode == Mode::Pool)
            .collect();
        assert_eq!(verdict(&pool_only, 2), None);
    }
}
