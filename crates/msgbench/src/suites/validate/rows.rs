//! The comparisons: for each, the reference command and msgbench's
//! measurement of the same quantity, with the same placement and
//! priority.

use std::time::Duration;

use anyhow::{Context, Result};

use super::compare::{self, Figure, Row, Tolerance, Verdict};
use super::handover::{self, sender_prio, Mechanism, Setup};
use super::options::{Plan, CHUNKS, INTERVAL};
use super::{mutex, parse, pmq, sched, sigwait, svsem, timer, tools};
use crate::pingpong;

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
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

/// Every comparison of `plan`, in run order.
pub fn specs(plan: &Plan) -> Vec<Spec> {
    let mut v = Vec::new();
    let fifo = plan.fifo;
    let both = match fifo {
        Some(p) => format!("SCHED_FIFO {p}, both tasks"),
        None => "normal (SCHED_OTHER)".to_string(),
    };
    let chrt: Vec<String> = match fifo {
        Some(p) => s(&["chrt", "-f", &p.to_string()]),
        None => Vec::new(),
    };
    let perf_chunk = (plan.perf_loops / CHUNKS).max(1);
    let perf = |cpus: &str| -> Vec<String> {
        let mut a = s(&["taskset", "-c", cpus]);
        a.extend(chrt.clone());
        a.extend(s(&["perf", "bench", "sched", "pipe", "-T", "-l"]));
        a.push(perf_chunk.to_string());
        a
    };
    let perf_limit = Duration::from_secs(30) + Duration::from_micros(200) * perf_chunk as u32;
    let (cpu, n) = (plan.cpu, perf_chunk);
    v.push(Spec {
        name: "pipe round trip, same CPU",
        tool: "perf",
        argv: perf(&cpu.to_string()),
        ours_method: "pingpong::pipe, two threads pinned to the CPU",
        placement: format!("both on CPU {cpu}"),
        priority: both.clone(),
        tolerance: compare::ROUND_TRIP,
        parse: |o| parse::perf_pipe(o).map(Figure::avg),
        ours: Box::new(move || pipe_in(&[cpu], fifo, (Some(cpu), Some(cpu)), n)),
        limit: perf_limit,
    });
    if let Some((a, b)) = plan.pair {
        v.push(Spec {
            name: "pipe round trip, two CPUs",
            tool: "perf",
            argv: perf(&format!("{a},{b}")),
            ours_method: "pingpong::pipe, two unpinned threads in that CPU set",
            placement: format!("floating on CPUs {a},{b} (perf cannot pin each task)"),
            priority: both.clone(),
            tolerance: compare::ROUND_TRIP,
            parse: |o| parse::perf_pipe(o).map(Figure::avg),
            ours: Box::new(move || pipe_in(&[a, b], fifo, (None, None), n)),
            limit: perf_limit,
        });
    }
    let prio = match fifo {
        Some(p) => format!("SCHED_FIFO {p} receiver, {} sender", sender_prio(p)),
        None => "normal (SCHED_OTHER)".to_string(),
    };
    let loops = (plan.loops / CHUNKS).max(1);
    let rt_limit = Duration::from_secs(30) + INTERVAL * 3 * loops as u32;
    type Make = fn() -> Result<Box<dyn Mechanism>>;
    let handovers: [(&str, &str, &str, Make); 4] = [
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
    for (name, tool, method, make) in handovers {
        let mut argv = s(&[tool, "-q", "-l"]);
        argv.push(loops.to_string());
        argv.push("-i".into());
        argv.push(INTERVAL.as_micros().to_string());
        argv.push(format!("-a{cpu}"));
        if let Some(p) = fifo {
            argv.push(format!("-p{p}"));
        }
        v.push(Spec {
            name,
            tool,
            argv,
            ours_method: method,
            placement: format!("both threads on CPU {cpu}"),
            priority: prio.clone(),
            tolerance: compare::LATENCY,
            parse: |o| parse::rt_handover(o).map(Figure::from),
            ours: Box::new(move || {
                let m = make()?;
                let setup = Setup {
                    cpu,
                    fifo,
                    loops,
                    interval: INTERVAL,
                };
                handover::run(m.as_ref(), setup).map(Figure::from)
            }),
            limit: rt_limit,
        });
    }
    let mut argv = s(&["cyclictest", "-m", "-q", "-t", "1", "-i"]);
    argv.push(INTERVAL.as_micros().to_string());
    argv.push("-l".into());
    argv.push(loops.to_string());
    argv.push(format!("-a{cpu}"));
    if let Some(p) = fifo {
        argv.push(format!("-p{p}"));
    }
    v.push(Spec {
        name: "timer wake-up (1 ms period)",
        tool: "cyclictest",
        argv,
        ours_method: "clock_nanosleep(TIMER_ABSTIME) lateness",
        placement: format!("one thread on CPU {cpu}"),
        priority: match fifo {
            Some(p) => format!("SCHED_FIFO {p}"),
            None => "normal (SCHED_OTHER)".to_string(),
        },
        tolerance: compare::LATENCY,
        parse: |o| parse::cyclictest(o).map(Figure::from),
        ours: Box::new(move || {
            let _dma = sched::DmaLatency::request();
            timer::run(cpu, fifo, loops, INTERVAL).map(Figure::from)
        }),
        limit: rt_limit,
    });
    v
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
pub fn run(spec: &Spec) -> Row {
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
    let needed = spec
        .argv
        .iter()
        .map(String::as_str)
        .filter(|a| ["taskset", "chrt", spec.tool].contains(a));
    for t in needed {
        if tools::find(t).is_none() {
            row.verdict = Verdict::Missing;
            row.note = Some(format!(
                "{t} is not installed: apt-get install {}",
                tools::package_of(t)
            ));
            return row;
        }
    }
    let (mut refs, mut ours) = (Vec::new(), Vec::new());
    let mut failure = None;
    for _ in 0..CHUNKS {
        let r = tools::run(&spec.argv, spec.limit).and_then(|out| {
            (spec.parse)(&out).with_context(|| format!("parsing {}'s output", spec.tool))
        });
        match r {
            Ok(f) => refs.push(f),
            Err(e) => {
                failure = Some(format!("{}: {e:#}", spec.tool));
                break;
            }
        }
        match (spec.ours)() {
            Ok(f) => ours.push(f),
            Err(e) => {
                failure = Some(format!("msgbench: {e:#}"));
                break;
            }
        }
    }
    row.reference = merge(&refs);
    row.ours = merge(&ours);
    match (failure, &row.reference, &row.ours) {
        (None, Some(r), Some(o)) => {
            let (ratio, verdict) = compare::judge(r, o, &spec.tolerance);
            row.ratio = Some(ratio);
            row.verdict = verdict;
        }
        (Some(f), _, _) => row.note = Some(f),
        _ => row.note = Some("no figure".into()),
    }
    row
}

#[cfg(test)]
mod tests {
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
}
