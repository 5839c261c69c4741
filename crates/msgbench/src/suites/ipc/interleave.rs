//! `-r N` run as the studies ask: the rows of one message size measured
//! in turn, one latency run each, N times over (A B C, A B C, ...), so
//! that a slow minute of this machine falls on every row alike rather
//! than on one transport's repeats (as smp and broker do with their
//! cells). Each pass is a whole row of its own (server started, warm-up,
//! one latency run, server stopped); the first also measures throughput
//! and fixes the round trips of the later ones (as one row's repeats
//! did) unless `--count` or `--rate` does. A row keeps its N runs, is
//! made from the median one, and shows the spread over them. A row that
//! failed, was skipped or cannot carry the size is not run again; rows
//! with idle or active clients run once, their repeats inside.

use super::context::RowContext;
use super::one_row::set_repeats;
use super::options::Plan;
use super::row::{LatencyRun, Row, RowSpec, Status};

/// One pass of a row: `first` when it is the row's first.
pub(super) struct Pass<'a> {
    /// The row.
    pub spec: &'a RowSpec<'a>,
    /// The first pass of the row (it measures throughput).
    pub first: bool,
}

/// Runs the rows `specs` (one message size) as [`Pass`]es through `run`,
/// interleaved `ctx.plan.repeats` times; `stopped` ends the sweep before
/// the next pass. Returns the rows reached, in the order of `specs`.
pub(super) fn run_size(
    ctx: &RowContext,
    specs: &[RowSpec],
    stopped: impl Fn() -> bool,
    mut run: impl FnMut(&RowContext, Pass) -> Row,
) -> Vec<Row> {
    let repeats = ctx.plan.repeats.max(1);
    let mut rows: Vec<Option<Row>> = specs.iter().map(|_| None).collect();
    let mut runs: Vec<Vec<LatencyRun>> = specs.iter().map(|_| Vec::new()).collect();
    'sweep: for round in 0..repeats {
        for (j, spec) in specs.iter().enumerate() {
            if stopped() {
                break 'sweep;
            }
            let first = rows[j].is_none();
            if !first
                && (round_once(spec) || rows[j].as_ref().map(|r| r.status) != Some(Status::Ok))
            {
                continue;
            }
            let plan = pass_plan(ctx.plan, spec);
            let pass_ctx = RowContext {
                plan: &plan,
                throughput: first,
                sized: sized(ctx.plan, runs[j].first()),
                ..*ctx
            };
            let row = run(&pass_ctx, Pass { spec, first });
            keep(&mut rows[j], &mut runs[j], row, round);
        }
    }
    rows.into_iter()
        .zip(runs)
        .filter_map(|(row, runs)| {
            let mut row = row?;
            if row.status == Status::Ok && !runs.is_empty() {
                set_repeats(&mut row, runs);
            }
            Some(row)
        })
        .collect()
}

/// Rows whose repeats stay inside one run: idle or active clients.
fn round_once(spec: &RowSpec) -> bool {
    spec.idle.is_some() || spec.clients.is_some()
}

/// The plan of one pass of `spec`: one latency run (rows with clients:
/// all of them).
fn pass_plan(plan: &Plan, spec: &RowSpec) -> Plan {
    let mut p = plan.clone();
    if !round_once(spec) {
        p.repeats = 1;
    }
    p
}

/// The round trips of a later pass: those the row's `first` run asked
/// for, when its warm-up sized it (not `--count`, `--rate` or
/// `--warmup 0`).
fn sized(plan: &Plan, first: Option<&LatencyRun>) -> Option<u64> {
    let by_warm_up = plan.count.is_none() && plan.rate.is_none() && plan.warmup_secs != Some(0.0);
    first
        .filter(|r| by_warm_up && r.target > 0)
        .map(|r| r.target)
}

/// Keeps what pass `round` of a row found: its latency run beside the
/// others, its warnings; a pass that failed or was skipped ends the row as
/// it ended (the runs before it are dropped with the figures), one that a
/// stop cut short is dropped (the runs before it stand).
fn keep(slot: &mut Option<Row>, runs: &mut Vec<LatencyRun>, mut row: Row, round: usize) {
    let measured = row.status == Status::Ok;
    match slot {
        None => {
            runs.append(&mut row.repeats);
            *slot = Some(row);
        }
        // A stop in a later pass: the runs measured before it stand.
        Some(_) if row.status == Status::Interrupted => {}
        Some(_) if !measured => {
            if round > 0 {
                let why = row.reason.take().unwrap_or_default();
                row.reason = Some(format!("{why} (in repeat {} of its row)", round + 1));
            }
            runs.clear();
            *slot = Some(row);
        }
        Some(kept) => {
            runs.append(&mut row.repeats);
            for w in row.warnings {
                if !kept.warnings.contains(&w) {
                    kept.warnings.push(w);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;
    use crate::measure::clock::Clock;
    use crate::suites::ipc::options::tests::plan_of;
    use crate::suites::ipc::row::Placement;

    /// What a pass was given.
    #[derive(Debug, PartialEq)]
    struct Seen {
        transport: String,
        first: bool,
        repeats: usize,
        sized: Option<u64>,
        throughput: bool,
    }

    fn run_of(p50: f64, target: u64) -> LatencyRun {
        LatencyRun::with_p50(p50, target)
    }

    /// Runs `transports` with `repeats` through a pass that records what
    /// it was given and measures p50 = 1000 + 100 x its number (in run
    /// order), ending the passes `ends` names (by number) as it says, and
    /// setting the stop flag once `stop_after` passes have run.
    fn sweep(
        transports: &[&str],
        repeats: usize,
        ends: &[(usize, Status)],
        stop_after: usize,
    ) -> (Vec<Seen>, Vec<Row>) {
        let mut plan = plan_of(transports, vec![64], vec![Placement::Same], vec![0]);
        plan.repeats = repeats;
        let specs = plan.row_order();
        let dir = tempfile::tempdir().unwrap();
        let ns = msgpass::Namespace::open(dir.path()).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let ctx = RowContext {
            ns: &ns,
            opts: &msgpass::Options::default(),
            row_secs: plan.row_secs,
            clock: Clock::monotonic(),
            stop: &stop,
            fault: None,
            plan: &plan,
            throughput: true,
            sized: None,
        };
        let (mut seen, n) = (Vec::new(), AtomicUsize::new(0));
        let rows = run_size(
            &ctx,
            &specs,
            || stop.load(Ordering::Relaxed),
            |ctx, pass| {
                seen.push(Seen {
                    transport: pass.spec.transport.to_string(),
                    first: pass.first,
                    repeats: ctx.plan.repeats,
                    sized: ctx.sized,
                    throughput: ctx.throughput,
                });
                let k = n.fetch_add(1, Ordering::Relaxed);
                if k + 1 == stop_after {
                    stop.store(true, Ordering::Relaxed);
                }
                let mut row = Row::for_spec(pass.spec);
                if let Some((_, status)) = ends.iter().find(|e| e.0 == k) {
                    return row.end(*status, "a reply was wrong");
                }
                row.repeats = vec![run_of(1000.0 + 100.0 * k as f64, 500 + k as u64)];
                row
            },
        );
        (seen, rows)
    }

    fn order(seen: &[Seen]) -> Vec<&str> {
        seen.iter().map(|s| s.transport.as_str()).collect()
    }

    #[test]
    fn repeats_interleave_the_rows_and_each_keeps_its_runs() {
        let (seen, rows) = sweep(&["uds", "pipe", "tcp"], 3, &[], usize::MAX);
        assert_eq!(
            order(&seen),
            ["uds", "pipe", "tcp", "uds", "pipe", "tcp", "uds", "pipe", "tcp"]
        );
        // One latency run a pass; the first measures throughput and sizes
        // the later ones (its target: 500 + its number).
        for (k, s) in seen.iter().enumerate() {
            let first = k < 3;
            assert_eq!(
                (s.first, s.throughput, s.repeats),
                (first, first, 1),
                "{s:?}"
            );
            let count = (!first).then_some(500 + (k % 3) as u64);
            assert_eq!(s.sized, count, "{s:?}");
        }
        // Each row: its three runs (passes k, k+3, k+6), the median kept,
        // the spread over them.
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(row.status, Status::Ok);
            let p50s: Vec<f64> = row.repeats.iter().map(|r| r.summary.p50_ns).collect();
            let want = [k, k + 3, k + 6].map(|i| 1000.0 + 100.0 * i as f64);
            assert_eq!(p50s, want, "{}", row.transport);
            let kept = row.latency.as_ref().map(|l| l.summary.p50_ns);
            assert_eq!(kept, Some(want[1]));
            assert!(row.repeat_stats.is_some());
        }
    }

    #[test]
    fn a_failed_row_is_not_run_again_and_says_in_which_repeat() {
        // Pass 4 is pipe's second.
        let (seen, rows) = sweep(
            &["uds", "pipe", "tcp"],
            3,
            &[(4, Status::Failed)],
            usize::MAX,
        );
        assert_eq!(
            order(&seen),
            ["uds", "pipe", "tcp", "uds", "pipe", "tcp", "uds", "tcp"]
        );
        assert_eq!(rows[1].status, Status::Failed);
        assert_eq!(
            rows[1].reason.as_deref(),
            Some("a reply was wrong (in repeat 2 of its row)")
        );
        assert!(rows[1].latency.is_none());
        assert_eq!(rows[2].repeats.len(), 3);
    }

    #[test]
    fn a_stop_ends_the_sweep_and_keeps_the_rows_reached() {
        let (seen, rows) = sweep(&["uds", "pipe", "tcp"], 3, &[], 4);
        assert_eq!(order(&seen), ["uds", "pipe", "tcp", "uds"]);
        let runs: Vec<usize> = rows.iter().map(|r| r.repeats.len()).collect();
        assert_eq!(runs, [2, 1, 1]);
        // The pass the stop cut short is dropped; the runs before stand.
        let (_, rows) = sweep(&["uds", "pipe"], 3, &[(3, Status::Interrupted)], 4);
        assert_eq!(rows[1].status, Status::Ok);
        assert_eq!(rows[1].repeats.len(), 1);
        // And with one repeat, nothing is interleaved or sized again.
        let (seen, rows) = sweep(&["uds", "pipe"], 1, &[], usize::MAX);
        assert_eq!(order(&seen), ["uds", "pipe"]);
        assert!(seen.iter().all(|s| s.first && s.sized.is_none()));
        assert_eq!(rows.len(), 2);
    }
}
