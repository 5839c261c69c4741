//! The study's three lessons, judged from the measured rows: each verdict
//! says whether the lesson holds on this machine, with the figures that
//! decide it, and can come out either way (or "not judged" when the rows
//! it needs were not measured).

use serde::Serialize;

use super::row::{Forwarder, SmpRow};
use super::tables::Variant;

/// Scaling at or above this is "almost 2x" (the study: 1.93x).
pub const ALMOST_TWICE: f64 = 1.8;
/// A per-cpu gain at or below this, with one run, is within the noise.
pub const NOISE: f64 = 0.02;
/// The share of the line rate that counts as reaching it.
pub const AT_LINE: f64 = 0.99;

/// One lesson's verdict.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// 1, 2 or 3.
    pub lesson: u8,
    /// Holds (`Some(true)`), does not (`Some(false)`), not judged (`None`).
    pub holds: Option<bool>,
    /// The sentence printed under the table.
    pub text: String,
}

/// The three verdicts from `rows` (one path's rows).
pub fn judge(rows: &[SmpRow]) -> Vec<Verdict> {
    vec![lesson1(rows), lesson2(rows), lesson3(rows)]
}

fn find(rows: &[SmpRow], v: Variant, n: usize, size: usize) -> Option<&SmpRow> {
    rows.iter().find(|r| {
        r.forwarder == Forwarder::Table(v) && r.workers == Some(n) && r.size == size && r.measured()
    })
}

/// The smallest size measured, and the worker count the study compares
/// with one: 2, or the largest above 1 measured.
fn small_and_pair(rows: &[SmpRow]) -> Option<(usize, usize)> {
    let measured = rows.iter().filter(|r| r.measured() && r.workers.is_some());
    let size = measured.clone().map(|r| r.size).min()?;
    let ns: Vec<usize> = measured
        .filter_map(|r| r.workers)
        .filter(|&n| n > 1)
        .collect();
    let n = if ns.contains(&2) {
        2
    } else {
        *ns.iter().max()?
    };
    Some((size, n))
}

fn not_judged(lesson: u8, what: &str, why: &str) -> Verdict {
    Verdict {
        lesson,
        holds: None,
        text: format!("Lesson {lesson} ({what}): not judged: {why}."),
    }
}

const L1: &str = "two workers scale almost 2x; the study: 1.93x at 64 B with one shared table";

fn lesson1(rows: &[SmpRow]) -> Verdict {
    let Some((size, n)) = small_and_pair(rows) else {
        return not_judged(1, L1, "needs rows with 1 and 2 workers (--workers 1,2)");
    };
    let scale = |v| Some(find(rows, v, n, size)?.pps / find(rows, v, 1, size)?.pps);
    let (Some(mutex), other) = (scale(Variant::Mutex), scale(Variant::PerCpu)) else {
        return not_judged(
            1,
            L1,
            "needs the mutex table with 1 and 2 workers (--table mutex)",
        );
    };
    let holds = mutex >= ALMOST_TWICE;
    let per_cpu = other.map_or(String::new(), |s| format!("; per-cpu tables {s:.2}x"));
    Verdict {
        lesson: 1,
        holds: Some(holds),
        text: format!(
            "Lesson 1 ({L1}): {} here: one mutex scales {mutex:.2}x from 1 to {n} workers at {size} B{per_cpu}.",
            if holds { "holds" } else { "does not hold" },
        ),
    }
}

const L2: &str = "per-CPU tables beat one shared mutex; the study: +5.6% at 64 B with 2 CPUs";

fn lesson2(rows: &[SmpRow]) -> Verdict {
    let Some((size, n)) = small_and_pair(rows) else {
        return not_judged(2, L2, "needs rows with 2 workers (--workers 1,2)");
    };
    let (Some(m), Some(p)) = (
        find(rows, Variant::Mutex, n, size),
        find(rows, Variant::PerCpu, n, size),
    ) else {
        return not_judged(
            2,
            L2,
            "needs the mutex and per-cpu tables (--table mutex,per-cpu)",
        );
    };
    if m.pps <= 0.0 {
        return not_judged(2, L2, "the mutex table forwarded nothing without loss");
    }
    let gain = p.pps / m.pps - 1.0;
    // With repeats, "beyond the noise" means every per-cpu run beat every
    // mutex run; with one run, a gain above NOISE.
    let separated = |a: &SmpRow, b: &SmpRow| {
        a.repeats_pps.iter().copied().fold(f64::INFINITY, f64::min)
            > b.repeats_pps.iter().copied().fold(0.0, f64::max)
    };
    let repeated = m.repeats_pps.len() > 1 && p.repeats_pps.len() > 1;
    let (better, worse) = if repeated {
        (separated(p, m), separated(m, p))
    } else {
        (gain > NOISE, gain < -NOISE)
    };
    let wait = |r: &SmpRow| {
        let w = r.wait_ns();
        w.iter().sum::<f64>() / w.len().max(1) as f64
    };
    let figures = format!(
        "per-cpu tables {} one mutex by {:.1}% at {size} B with {n} workers (lock wait {:.0} against {:.0} ns per packet)",
        if gain >= 0.0 { "beat" } else { "trail" },
        gain.abs() * 100.0,
        wait(p),
        wait(m),
    );
    let noise = if repeated {
        "every run of one beat every run of the other"
    } else {
        "one run; -r 3 shows the spread"
    };
    let (holds, verdict) = match (better, worse) {
        (true, _) => (Some(true), "holds"),
        (_, true) => (Some(false), "does not hold"),
        _ => (Some(false), "not seen beyond the noise"),
    };
    Verdict {
        lesson: 2,
        holds,
        text: format!("Lesson 2 ({L2}): {verdict} here: {figures} ({noise})."),
    }
}

const L3: &str =
    "large packets hit the line rate, so CPU scaling shows only for small ones; the study: 768 B and up at line rate";

fn lesson3(rows: &[SmpRow]) -> Verdict {
    let ours: Vec<&SmpRow> = rows
        .iter()
        .filter(|r| r.measured() && r.workers.is_some())
        .collect();
    let (Some(small), Some(large)) = (
        ours.iter().map(|r| r.size).min(),
        ours.iter().map(|r| r.size).max(),
    ) else {
        return not_judged(3, L3, "nothing measured");
    };
    if small == large {
        return not_judged(3, L3, "needs a small and a large size (--sizes 64,1518)");
    }
    let one_large: Vec<&&SmpRow> = ours
        .iter()
        .filter(|r| r.size == large && r.workers == Some(1))
        .collect();
    if ours[0].line_pps.is_none() {
        let pps = one_large.iter().map(|r| r.pps).fold(0.0, f64::max);
        return not_judged(
            3,
            L3,
            &format!(
                "no port speed (--line-rate none; the study's ports were 1 Gbit/s: --line-rate 1g). \
                 Without one, {large}-byte frames went at up to {:.0} pps ({:.1} Gbit/s) with 1 worker: \
                 the CPU, not a wire, is the limit at every size",
                pps,
                pps * (large * 8) as f64 / 1e9
            ),
        );
    }
    let scale_at = |size: usize| {
        ours.iter()
            .filter(|r| r.size == size)
            .filter_map(|r| r.scaling)
            .fold(0.0, f64::max)
    };
    let line_hit = !one_large.is_empty() && one_large.iter().all(|r| r.at_line_rate());
    let (s_small, s_large) = (scale_at(small), scale_at(large));
    let holds = line_hit && s_large < s_small.max(1.05);
    let hit = if line_hit {
        format!("1 worker reaches the line rate at {large} B")
    } else {
        format!("1 worker stays below the line rate at {large} B")
    };
    Verdict {
        lesson: 3,
        holds: Some(holds),
        text: format!(
            "Lesson 3 ({L3}): {} here: {hit}; the best scaling is {s_large:.2}x at {large} B against {s_small:.2}x at {small} B.",
            if holds { "holds" } else { "does not hold" }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::super::search::SearchResult;
    use super::*;

    fn row(v: Variant, n: usize, size: usize, pps: f64) -> SmpRow {
        let memory = crate::suites::smp::PortsMode::Memory;
        let mut r = SmpRow::new(memory, Forwarder::Table(v), Some(n), size, 2, pps);
        r.mbit_s = 0.0;
        r.search = SearchResult {
            rate: pps / 2.0,
            failed_at: None,
            trials: Vec::new(),
            resolution: 0.02,
            converged: true,
            note: None,
        };
        r
    }

    /// The study's own figures, as rows: every lesson holds.
    fn study(line: Option<f64>) -> Vec<SmpRow> {
        let mut rows = vec![
            row(Variant::Mutex, 1, 64, 2.0 * 167_280.0),
            row(Variant::Mutex, 2, 64, 2.0 * 323_429.0),
            row(Variant::PerCpu, 1, 64, 2.0 * 167_280.0),
            row(Variant::PerCpu, 2, 64, 2.0 * 341_390.0),
            row(Variant::Mutex, 1, 1518, 2.0 * 81_274.0),
            row(Variant::Mutex, 2, 1518, 2.0 * 81_274.0),
            row(Variant::PerCpu, 1, 1518, 2.0 * 81_274.0),
            row(Variant::PerCpu, 2, 1518, 2.0 * 81_274.0),
        ];
        for r in &mut rows {
            r.line_pps = line;
            let one = if r.size == 64 {
                2.0 * 167_280.0
            } else {
                2.0 * 81_274.0
            };
            r.scaling = Some(r.pps / one);
        }
        rows
    }

    #[test]
    fn the_studys_own_figures_pass_every_lesson() {
        let v = judge(&study(Some(81_274.0)));
        assert!(v.iter().all(|v| v.holds == Some(true)), "{v:#?}");
        assert!(
            v[1].text.contains("beat one mutex by 5.6%"),
            "{}",
            v[1].text
        );
    }

    #[test]
    fn a_contended_mutex_breaks_lesson_one_and_a_per_cpu_loss_breaks_two() {
        let mut rows = study(Some(81_274.0));
        rows[1].pps = 0.6 * rows[0].pps; // mutex x2 slower than x1
        rows[3].pps = 0.5 * rows[1].pps; // per-cpu x2 slower than mutex x2
        let v = judge(&rows);
        assert_eq!(v[0].holds, Some(false), "{}", v[0].text);
        assert!(v[0].text.contains("scales 0.60x"), "{}", v[0].text);
        assert_eq!(v[1].holds, Some(false), "{}", v[1].text);
        assert!(
            v[1].text.contains("trail one mutex by 50.0%"),
            "{}",
            v[1].text
        );
    }

    #[test]
    fn a_small_gain_is_noise_with_one_run_and_decided_by_repeats() {
        let mut rows = study(None);
        rows[3].pps = rows[1].pps * 1.01;
        assert!(judge(&rows)[1].text.contains("not seen beyond the noise"));
        rows[1].repeats_pps = vec![100.0, 101.0, 102.0];
        rows[3].repeats_pps = vec![103.0, 104.0, 105.0];
        assert_eq!(judge(&rows)[1].holds, Some(true));
    }

    #[test]
    fn lesson_three_needs_a_line_rate_and_fails_below_it() {
        let v = judge(&study(None));
        assert_eq!(v[2].holds, None);
        assert!(v[2].text.contains("--line-rate 1g"), "{}", v[2].text);
        let mut rows = study(Some(1e9)); // a wire far above what was forwarded
        for r in &mut rows {
            r.scaling = Some(1.9); // scaling at both sizes: the wire never limits
        }
        let v = judge(&rows);
        assert_eq!(v[2].holds, Some(false), "{}", v[2].text);
    }

    #[test]
    fn missing_rows_are_not_judged() {
        let rows = vec![row(Variant::Rcu, 1, 64, 1e6)];
        let v = judge(&rows);
        assert!(v.iter().all(|v| v.holds.is_none()), "{v:#?}");
    }
}
