//! The sentences under the adder's tables, computed from the measured
//! figures, so each can come out any way: [`verdict`], what the pinned
//! rows say about the seed's question (does messaging scale with threads,
//! and do threads of one process scale like separate processes?), and
//! [`models`], which server model (one process with a path per thread, a
//! process per thread, a thread pool on one path) scales best here.

use super::row::Row;
use super::{Mode, Placement};
use crate::devctl::options::Api;
use crate::results::thousands;

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
/// nothing about a lock in the OS: [`models`] weighs them); `None` when
/// there are none.
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

/// Server models whose aggregate rates are within this share of the
/// best's tie with it: closer than that, run-to-run noise on a shared
/// machine can order them either way.
const MODEL_TIE: f64 = 0.05;

/// The server models' aggregate rates on one transport (and API) at one X.
struct Contest {
    /// The transport, with " (copy API)" for copying rows.
    transport: String,
    /// The X compared: the largest from 2 to the CPUs that two models or
    /// more ran at.
    threads: u32,
    /// Each model's aggregate rate, in run order.
    rates: Vec<(Mode, f64)>,
}

/// The sentence saying which server model scales best: on each
/// transport, the models' aggregate rates at the largest X from 2 to
/// `cpus` (one client/server pair per CPU at most) that two models or
/// more ran at, from the pinned rows (the unpinned ones when none was
/// pinned), with ties within `MODEL_TIE`; `None` when no transport has
/// two models to compare.
pub fn models(rows: &[Row], cpus: usize) -> Option<String> {
    let (placement, contests) = [Placement::Pinned, Placement::Unpinned]
        .into_iter()
        .map(|p| (p, contests(rows, p, cpus)))
        .find(|(_, c)| !c.is_empty())?;
    let clauses: Vec<String> = contests.iter().map(contest_clause).collect();
    Some(format!(
        "Server models compared by aggregate rate at the most threads measured up to \
         one per CPU ({cpus} CPUs), {}: {}.",
        placement_phrase(placement),
        clauses.join("; ")
    ))
}

/// A measured row of a contest: its transport label, X, mode and
/// aggregate rate.
type Ran = (String, u32, Mode, f64);

/// Every transport's contest among the measured rows in `placement`,
/// in first-seen order.
fn contests(rows: &[Row], placement: Placement, cpus: usize) -> Vec<Contest> {
    let ran: Vec<Ran> = rows
        .iter()
        .filter(|r| r.placement == placement && judged_x(r, cpus))
        .filter_map(|r| {
            let rate = r.measured.as_ref()?.aggregate_rate;
            Some((transport_label(r), r.threads, r.mode, rate))
        })
        .collect();
    let mut transports: Vec<&String> = Vec::new();
    for (t, ..) in &ran {
        if !transports.contains(&t) {
            transports.push(t);
        }
    }
    transports
        .into_iter()
        .filter_map(|t| contest(&ran, t))
        .collect()
}

/// `transport`'s contest: the models' rates at the largest X two models
/// or more ran at; `None` when there is no such X.
fn contest(ran: &[Ran], transport: &str) -> Option<Contest> {
    let at = |x: u32| -> Vec<(Mode, f64)> {
        ran.iter()
            .filter(|(t, rx, ..)| t == transport && *rx == x)
            .map(|&(_, _, m, rate)| (m, rate))
            .collect()
    };
    let threads = ran
        .iter()
        .filter(|(t, x, ..)| t == transport && at(*x).len() >= 2)
        .map(|(_, x, ..)| *x)
        .max()?;
    Some(Contest {
        transport: transport.to_string(),
        threads,
        rates: at(threads),
    })
}

/// "pinned (...)" or "unpinned (...)": where the compared rows ran.
fn placement_phrase(p: Placement) -> &'static str {
    match p {
        Placement::Pinned => "with each client/server thread pair pinned",
        Placement::Unpinned => "unpinned (every thread left to the scheduler)",
    }
}

/// How a model is named in the sentence.
fn model_name(m: Mode) -> &'static str {
    match m {
        Mode::One => "one process with a path per thread",
        Mode::Multi => "a process per thread",
        Mode::Pool => "a thread pool on one path",
    }
}

/// One transport's clause: the model that scaled best, or the models that
/// tied for best, with every model's aggregate rate.
fn contest_clause(c: &Contest) -> String {
    let mut rates = c.rates.clone();
    rates.sort_by(|a, b| b.1.total_cmp(&a.1));
    let best = rates[0].1;
    let tied = rates
        .iter()
        .take_while(|(_, r)| *r >= best * (1.0 - MODEL_TIE))
        .count();
    let (top, rest) = rates.split_at(tied);
    let head = format!("on {} at {} threads", c.transport, c.threads);
    let listed = |rs: &[(Mode, f64)]| -> String {
        let each: Vec<String> = rs
            .iter()
            .map(|(m, r)| format!("{} msg/s for {}", thousands(*r), model_name(*m)))
            .collect();
        and_list(&each)
    };
    match (top, rest) {
        ([(m, r)], rest) => format!(
            "{head}, {} scaled best ({} msg/s, against {})",
            model_name(*m),
            thousands(*r),
            listed(rest)
        ),
        (top, []) => format!(
            "{head}, {} tied (within {}: {})",
            if top.len() == 2 {
                "both models"
            } else {
                "all three models"
            },
            pct(MODEL_TIE),
            listed(top)
        ),
        (top, rest) => format!(
            "{head}, {} tied for best (within {}: {}), ahead of {}",
            and_list(
                &top.iter()
                    .map(|(m, _)| model_name(*m).to_string())
                    .collect::<Vec<_>>()
            ),
            pct(MODEL_TIE),
            listed(top),
            listed(rest)
        ),
    }
}

/// "a", "a and b", "a, b and c".
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
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

    /// The three models at X = 1 and 2 on `transport`, pinned, scaling
    /// `one`, `multi` and `pool` at 2 threads.
    fn three_models(transport: &str, one: f64, multi: f64, pool: f64) -> Vec<Row> {
        let mut rows = both_modes(transport, one, multi);
        rows.push(row(transport, Placement::Pinned, Mode::Pool, 1, 1.0));
        rows.push(row(transport, Placement::Pinned, Mode::Pool, 2, pool));
        rows
    }

    #[test]
    fn each_model_can_scale_best() {
        for (one, multi, pool, best) in [
            (0.95, 0.80, 0.70, "one process with a path per thread"),
            (0.70, 0.95, 0.80, "a process per thread"),
            (0.70, 0.80, 0.95, "a thread pool on one path"),
        ] {
            let v = models(&three_models("shm", one, multi, pool), 2).expect("a sentence");
            assert!(
                v.contains(&format!("on shm at 2 threads, {best} scaled best")),
                "{v}"
            );
        }
        let v = models(&three_models("shm", 0.70, 0.80, 0.95), 2).expect("a sentence");
        assert_eq!(
            v,
            "Server models compared by aggregate rate at the most threads measured up to one \
             per CPU (2 CPUs), with each client/server thread pair pinned: on shm at 2 threads, \
             a thread pool on one path scaled best (1,900,000 msg/s, against 1,600,000 msg/s \
             for a process per thread and 1,400,000 msg/s for one process with a path per \
             thread)."
        );
    }

    #[test]
    fn models_within_five_percent_tie() {
        let v = models(&three_models("uds", 0.96, 0.94, 0.95), 2).expect("a sentence");
        assert!(
            v.ends_with(
                "on uds at 2 threads, all three models tied (within 5%: 1,920,000 msg/s for one \
                 process with a path per thread, 1,900,000 msg/s for a thread pool on one path \
                 and 1,880,000 msg/s for a process per thread)."
            ),
            "{v}"
        );
        let v = models(&three_models("uds", 0.96, 0.70, 0.94), 2).expect("a sentence");
        assert!(
            v.contains(
                "one process with a path per thread and a thread pool on one path tied for best \
                 (within 5%: 1,920,000 msg/s for one process with a path per thread and \
                 1,880,000 msg/s for a thread pool on one path), ahead of 1,400,000 msg/s for a \
                 process per thread"
            ),
            "{v}"
        );
        let v = models(&both_modes("pipe", 0.90, 0.88), 2).expect("a sentence");
        assert!(v.contains("on pipe at 2 threads, both models tied"), "{v}");
        // Just outside the band is a win.
        let v = models(&both_modes("pipe", 0.90, 0.85), 2).expect("a sentence");
        assert!(
            v.contains("one process with a path per thread scaled best"),
            "{v}"
        );
    }

    #[test]
    fn models_are_compared_at_the_largest_x_per_transport() {
        let mut rows = three_models("shm", 0.95, 0.80, 0.70);
        for (mode, eff) in [(Mode::One, 0.60), (Mode::Pool, 0.90)] {
            rows.push(row("shm", Placement::Pinned, mode, 4, eff));
        }
        // X = 6 is beyond the CPUs; X = 3 has one model only.
        rows.push(row("shm", Placement::Pinned, Mode::Multi, 6, 2.0));
        rows.push(row("shm", Placement::Pinned, Mode::Multi, 3, 2.0));
        rows.extend(three_models("uds", 0.70, 0.95, 0.80));
        let v = models(&rows, 4).expect("a sentence");
        assert!(v.contains("one per CPU (4 CPUs)"), "{v}");
        assert!(
            v.contains(
                "on shm at 4 threads, a thread pool on one path scaled best (3,600,000 msg/s, \
                 against 2,400,000 msg/s for one process with a path per thread); on uds at 2 \
                 threads, a process per thread scaled best"
            ),
            "{v}"
        );
    }

    #[test]
    fn models_name_the_placement_pinned_first() {
        let unpinned: Vec<Row> = three_models("uds", 0.70, 0.80, 0.95)
            .into_iter()
            .map(|mut r| {
                r.placement = Placement::Unpinned;
                r
            })
            .collect();
        let v = models(&unpinned, 2).expect("a sentence");
        assert!(
            v.contains(
                "(2 CPUs), unpinned (every thread left to the scheduler): on uds at 2 threads, a \
                 thread pool on one path scaled best"
            ),
            "{v}"
        );
        let mut both = three_models("uds", 0.95, 0.80, 0.70);
        both.extend(unpinned);
        let v = models(&both, 2).expect("a sentence");
        assert!(
            v.contains("pinned: on uds at 2 threads, one process"),
            "{v}"
        );
    }

    #[test]
    fn one_model_or_one_cpu_compares_nothing() {
        let one: Vec<Row> = both_modes("uds", 0.9, 0.9)
            .into_iter()
            .filter(|r| r.mode == Mode::One)
            .collect();
        assert_eq!(models(&one, 2), None);
        assert_eq!(models(&three_models("uds", 0.9, 0.8, 0.7), 1), None);
        let mut failed = three_models("uds", 0.9, 0.8, 0.7);
        for r in failed.iter_mut().filter(|r| r.mode != Mode::One) {
            r.measured = None;
        }
        assert_eq!(models(&failed, 2), None, "failed rows are not compared");
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
