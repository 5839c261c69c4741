//! The comparisons: for each, the reference command and msgbench's
//! measurement of the same quantity, with the same placement and
//! priority.

use std::time::Duration;

use anyhow::{Context, Result};

use super::handover::{self, sender_prio, Mechanism, Setup};
use super::judge;
use super::options::{Plan, CHUNKS, INTERVAL};
use super::row::{Figure, Row, Tolerance, Verdict};
use super::{mutex, parse, pmq, sched, sigwait, svsem, timer, tools};
use crate::pingpong;
use crate::suites::{Results, RunContext};

/// About how long one pipe round trip takes, for the progress estimate.
const PIPE_ROUND_TRIP: Duration = Duration::from_micros(5);

/// One comparison to run.
pub struct Spec {
    /// What is compared.
    pub name: &'static str,
    /// The reference tool (looked up on PATH).
    pub tool: &'static str,
    /// The reference command line.
    pub argv: Vec<String>,
    /// How ours measures.
    pub ours_method: &'static str,
    /// Placement, as printed.
    pub placement: String,
    /// Priority, as printed.
    pub priority: String,
    /// The tolerance.
    pub tolerance: Tolerance,
    /// Parses the reference output.
    pub parse: fn(&str) -> Result<Figure>,
    /// Measures ours.
    pub ours: Box<dyn Fn() -> Result<Figure>>,
    /// Time limit of the reference run.
    pub limit: Duration,
    /// About how long the row takes, both sides, every run (progress).
    pub planned: Duration,
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Every comparison of `plan`, in run order.
pub fn specs(plan: &Plan) -> Vec<Spec> {
    let mut v = pipe_specs(plan);
    v.extend(handover_specs(plan));
    v.push(timer_spec(plan));
    v
}

/// `chrt -f PRIO` before a command in SCHED_FIFO, nothing otherwise.
fn chrt(fifo: Option<i32>) -> Vec<String> {
    match fifo {
        Some(p) => s(&["chrt", "-f", &p.to_string()]),
        None => Vec::new(),
    }
}

/// The priority of both tasks, as printed.
fn both_priority(fifo: Option<i32>) -> String {
    match fifo {
        Some(p) => format!("SCHED_FIFO {p}, both tasks"),
        None => "normal (SCHED_OTHER)".to_string(),
    }
}

/// `perf bench sched pipe` for `n` round trips in the CPU set `cpus`.
fn perf_argv(cpus: &str, fifo: Option<i32>, n: u64) -> Vec<String> {
    let mut a = s(&["taskset", "-c", cpus]);
    a.extend(chrt(fifo));
    a.extend(s(&["perf", "bench", "sched", "pipe", "-T", "-l"]));
    a.push(n.to_string());
    a
}

/// The perf pipe rows: one CPU, and floating on two when there are two.
fn pipe_specs(plan: &Plan) -> Vec<Spec> {
    let (cpu, fifo) = (plan.cpu, plan.fifo);
    let n = (plan.perf_loops / CHUNKS).max(1);
    let limit = Duration::from_secs(30) + Duration::from_micros(200) * n as u32;
    let planned = PIPE_ROUND_TRIP.mul_f64((2 * CHUNKS * n) as f64);
    let mut v = vec![Spec {
        name: "pipe round trip, same CPU",
        tool: "perf",
        argv: perf_argv(&cpu.to_string(), fifo, n),
        ours_method: "pingpong::pipe, two threads pinned to the CPU",
        placement: format!("both on CPU {cpu}"),
        priority: both_priority(fifo),
        tolerance: judge::ROUND_TRIP,
        parse: |o| parse::perf_pipe(o).map(Figure::avg),
        ours: Box::new(move || pipe_in(&[cpu], fifo, (Some(cpu), Some(cpu)), n)),
        limit,
        planned,
    }];
    if let Some((a, b)) = plan.pair {
        v.push(Spec {
            name: "pipe round trip, two CPUs",
            tool: "perf",
            argv: perf_argv(&format!("{a},{b}"), fifo, n),
            ours_method: "pingpong::pipe, two unpinned threads in that CPU set",
            placement: format!("floating on CPUs {a},{b} (perf cannot pin each task)"),
            priority: both_priority(fifo),
            tolerance: judge::ROUND_TRIP,
            parse: |o| parse::perf_pipe(o).map(Figure::avg),
            ours: Box::new(move || pipe_in(&[a, b], fifo, (None, None), n)),
            limit,
            planned,
        });
    }
    v
}

/// Makes one of msgbench's hand-over mechanisms.
type Make = fn() -> Result<Box<dyn Mechanism>>;

/// The rt-tests hand-overs: name, tool, how ours does it, ours.
const HANDOVERS: [(&str, &str, &str, Make); 4] = [
    (
        "mutex hand-over",
        "ptsematest",
        "futex low-level lock, as glibc's mutex",
        || Ok(Box::new(mutex::MutexHandover::new())),
    ),
    (
        "POSIX mq hand-over",
        "pmqtest",
        "mq_send / mq_timedreceive",
        || Ok(Box::new(pmq::MqHandover::new()?)),
    ),
    (
        "SysV semaphore hand-over",
        "svsematest",
        "semop +1 / semtimedop -1",
        || Ok(Box::new(svsem::SemHandover::new()?)),
    ),
    (
        "signal hand-over",
        "sigwaittest",
        "tgkill / sigtimedwait",
        || Ok(Box::new(sigwait::SignalHandover::new())),
    ),
];

/// Loops of one run of a latency row.
fn latency_loops(plan: &Plan) -> u64 {
    (plan.loops / CHUNKS).max(1)
}

/// Time limit of one reference run of a latency row.
fn latency_limit(loops: u64) -> Duration {
    Duration::from_secs(30) + INTERVAL * 3 * loops as u32
}

/// About how long a latency row takes: every run of both sides.
fn latency_planned(loops: u64) -> Duration {
    INTERVAL.mul_f64((2 * CHUNKS * loops) as f64)
}

/// The options rt-tests tools and cyclictest share: loops, interval, CPU
/// and priority.
fn rt_options(argv: &mut Vec<String>, loops: u64, cpu: usize, fifo: Option<i32>) {
    argv.extend(["-l".into(), loops.to_string(), "-i".into()]);
    argv.push(INTERVAL.as_micros().to_string());
    argv.push(format!("-a{cpu}"));
    if let Some(p) = fifo {
        argv.push(format!("-p{p}"));
    }
}

/// One row per rt-tests hand-over tool, both threads on the plan's CPU.
fn handover_specs(plan: &Plan) -> Vec<Spec> {
    let (cpu, fifo) = (plan.cpu, plan.fifo);
    let loops = latency_loops(plan);
    let priority = match fifo {
        Some(p) => format!("SCHED_FIFO {p} receiver, {} sender", sender_prio(p)),
        None => "normal (SCHED_OTHER)".to_string(),
    };
    let setup = Setup {
        cpu,
        fifo,
        loops,
        interval: INTERVAL,
    };
    HANDOVERS
        .into_iter()
        .map(|(name, tool, method, make)| {
            let mut argv = s(&[tool, "-q"]);
            rt_options(&mut argv, loops, cpu, fifo);
            Spec {
                name,
                tool,
                argv,
                ours_method: method,
                placement: format!("both threads on CPU {cpu}"),
                priority: priority.clone(),
                tolerance: judge::LATENCY,
                parse: |o| parse::rt_handover(o).map(Figure::from),
                ours: Box::new(move || {
                    let m = make()?;
                    handover::run(m.as_ref(), setup).map(Figure::from)
                }),
                limit: latency_limit(loops),
                planned: latency_planned(loops),
            }
        })
        .collect()
}

/// cyclictest against a periodic `clock_nanosleep` on the plan's CPU.
fn timer_spec(plan: &Plan) -> Spec {
    let (cpu, fifo) = (plan.cpu, plan.fifo);
    let loops = latency_loops(plan);
    let mut argv = s(&["cyclictest", "-m", "-q", "-t", "1"]);
    rt_options(&mut argv, loops, cpu, fifo);
    Spec {
        name: "timer wake-up (1 ms period)",
        tool: "cyclictest",
        argv,
        ours_method: "clock_nanosleep(TIMER_ABSTIME) lateness",
        placement: format!("one thread on CPU {cpu}"),
        priority: match fifo {
            Some(p) => format!("SCHED_FIFO {p}"),
            None => "normal (SCHED_OTHER)".to_string(),
        },
        tolerance: judge::LATENCY,
        parse: |o| parse::cyclictest(o).map(Figure::from),
        ours: Box::new(move || {
            let _dma = sched::DmaLatency::request();
            timer::run(cpu, fifo, loops, INTERVAL).map(Figure::from)
        }),
        limit: latency_limit(loops),
        planned: latency_planned(loops),
    }
}

/// pingpong::pipe run from a thread restricted to `set` and, when asked, in
/// SCHED_FIFO: its two threads inherit both, as perf's tasks inherit
/// taskset's CPU set and chrt's policy.
fn pipe_in(
    set: &[usize],
    fifo: Option<i32>,
    cpus: (Option<usize>, Option<usize>),
    n: u64,
) -> Result<Figure> {
    let set = set.to_vec();
    std::thread::scope(|s| {
        s.spawn(|| -> Result<Figure> {
            sched::set_affinity(&set)?;
            if let Some(p) = fifo {
                sched::set_fifo(p)?;
            }
            let p = pingpong::pipe(cpus, n).context("pipe ping-pong")?;
            Ok(Figure::avg(p.ns_per_round_trip / 1e3))
        })
        .join()
        .unwrap_or_else(|_| Err(anyhow::anyhow!("the pipe run panicked")))
    })
}

/// Merges chunk figures: min of minima, max of maxima, mean of averages
/// (the chunks are of equal size).
fn merge(chunks: &[Figure]) -> Option<Figure> {
    let first = chunks.first()?;
    let fold = |f: fn(&Figure) -> Option<f64>, pick: fn(f64, f64) -> f64| {
        chunks
            .iter()
            .map(f)
            .try_fold(f(first)?, |acc, x| x.map(|x| pick(acc, x)))
    };
    Some(Figure {
        min_us: fold(|f| f.min_us, f64::min),
        avg_us: chunks.iter().map(|f| f.avg_us).sum::<f64>() / chunks.len() as f64,
        max_us: fold(|f| f.max_us, f64::max),
    })
}

/// Runs one comparison: [`CHUNKS`] alternations of a reference run and
/// ours, so that a change of machine load between the two shows in both.
pub fn run_one(spec: &Spec) -> Row {
    let mut row = Row {
        name: spec.name.to_string(),
        tool: spec.tool.to_string(),
        command: spec.argv.join(" "),
        runs: CHUNKS,
        ours_method: spec.ours_method.to_string(),
        placement: spec.placement.clone(),
        priority: spec.priority.clone(),
        reference: None,
        ours: None,
        ratio: None,
        tolerance: spec.tolerance,
        verdict: Verdict::Error,
        note: None,
    };
    if let Some(note) = missing_tool(spec) {
        row.verdict = Verdict::Missing;
        row.note = Some(note);
        return row;
    }
    let (refs, ours, failure) = alternate(spec);
    row.reference = merge(&refs);
    row.ours = merge(&ours);
    match (failure, &row.reference, &row.ours) {
        (None, Some(r), Some(o)) => {
            let (ratio, verdict) = judge::judge(r, o, &spec.tolerance);
            row.ratio = Some(ratio);
            row.verdict = verdict;
        }
        (Some(f), _, _) => row.note = Some(f),
        _ => row.note = Some("no figure".into()),
    }
    row
}

/// The first program of the row's command (taskset, chrt, the tool) that
/// is not installed, as a note naming its package.
fn missing_tool(spec: &Spec) -> Option<String> {
    spec.argv
        .iter()
        .map(String::as_str)
        .filter(|a| ["taskset", "chrt", spec.tool].contains(a))
        .find(|t| tools::find(t).is_none())
        .map(|t| {
            format!(
                "{t} is not installed: apt-get install {}",
                tools::package_of(t)
            )
        })
}

/// Runs the reference and ours in turn, [`CHUNKS`] times each: their
/// figures, and the first failure (which ends the alternation).
fn alternate(spec: &Spec) -> (Vec<Figure>, Vec<Figure>, Option<String>) {
    let (mut refs, mut ours) = (Vec::new(), Vec::new());
    for _ in 0..CHUNKS {
        let r = tools::run(&spec.argv, spec.limit).and_then(|out| {
            (spec.parse)(&out).with_context(|| format!("parsing {}'s output", spec.tool))
        });
        match r {
            Ok(f) => refs.push(f),
            Err(e) => return (refs, ours, Some(format!("{}: {e:#}", spec.tool))),
        }
        match (spec.ours)() {
            Ok(f) => ours.push(f),
            Err(e) => return (refs, ours, Some(format!("msgbench: {e:#}"))),
        }
    }
    (refs, ours, None)
}

/// Runs every comparison of `plan` in order, one progress item each,
/// until the run is stopped: errors fail, missing tools skip, and whether
/// memory was locked is noted.
pub fn run(plan: &Plan, cx: &RunContext) -> Result<Results<Row>> {
    let memory_locked = sched::lock_memory();
    let mut rows = Vec::new();
    for spec in specs(plan) {
        if cx.stopped() {
            break;
        }
        cx.progress.start(spec.name);
        rows.push(run_one(&spec));
        cx.progress.done(spec.planned);
    }
    let mut r = Results::new(rows);
    r.notes.push(format!(
        "memory locked (as the tools' -m): {}",
        if memory_locked { "yes" } else { "no" }
    ));
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::super::judge::LATENCY;
    use super::super::row::example as row;
    use super::*;

    #[test]
    fn chunks_merge_into_one_figure() {
        let a = Figure {
            min_us: Some(2.0),
            avg_us: 3.0,
            max_us: Some(9.0),
        };
        let b = Figure {
            min_us: Some(1.0),
            avg_us: 5.0,
            max_us: Some(7.0),
        };
        assert_eq!(
            merge(&[a, b]),
            Some(Figure {
                min_us: Some(1.0),
                avg_us: 4.0,
                max_us: Some(9.0)
            })
        );
        let p = merge(&[Figure::avg(2.0), Figure::avg(4.0)]).unwrap();
        assert_eq!((p.min_us, p.avg_us), (None, 3.0));
        assert!(merge(&[]).is_none());
    }
    #[test]
    fn errors_fail_and_missing_tools_skip() {
        let rows = [
            row("a", Verdict::Error, LATENCY, None),
            row("b", Verdict::Missing, LATENCY, None),
            row("c", Verdict::Disagree, LATENCY, None),
        ];
        let o = crate::suites::outcome_of(&rows, false);
        assert_eq!(
            (o.rows, o.failed, o.skipped),
            (3, 1, 1),
            "a disagreement is no failure"
        );
        assert!(!o.interrupted);
    }
}
