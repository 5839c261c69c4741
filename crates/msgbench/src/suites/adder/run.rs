//! Running the plan of `msgbench adder`: the idle baseline, then each row
//! with its own servers, sized by probes to last about `--row-secs`.

use std::time::Duration;

use anyhow::Result;
use msgpass::Namespace;

use super::options::{AdderPlan, Spec};
use super::row::{DiscardedRun, Measured, Row};
use super::servers::Servers;
use crate::devctl::client::{self, ClientRun, RunConfig};
use crate::measure::rundir::RunDir;
use crate::suites::{Results, RunContext};

/// Runs every row; a row that fails is kept with its error and the run
/// goes on; SIGINT/SIGTERM stops it with the rows done so far.
pub(super) fn run(plan: &AdderPlan, cx: &RunContext) -> Result<Results<Row>> {
    let base = Namespace::resolve(plan.ns.as_deref())?;
    let dir = RunDir::create(&base, &format!("adder-run-{}", std::process::id()))?;
    let idle = idle_baseline(plan, cx)?;
    let mut rows: Vec<Row> = Vec::new();
    let mut stopped_at = None;
    for spec in plan.specs() {
        if cx.stopped() {
            stopped_at = Some(spec.label());
            break;
        }
        match one_row(plan, dir.ns(), &spec, cx, &rows, idle) {
            Some(row) => rows.push(row),
            None => {
                stopped_at = Some(spec.label());
                break;
            }
        }
    }
    Ok(results(rows, plan, idle, stopped_at))
}

/// Measures one row with progress; `None` when a signal stopped it.
fn one_row(
    plan: &AdderPlan,
    ns: &Namespace,
    spec: &Spec,
    cx: &RunContext,
    done: &[Row],
    idle: Option<f64>,
) -> Option<Row> {
    let planned = plan.row_estimate();
    cx.progress.start(spec.label());
    let measured = measure_row(plan, ns, spec, cx, &|| cx.progress.extend(planned));
    let mut row = Row {
        transport: spec.transport.to_string(),
        placement: spec.placement,
        mode: spec.mode,
        threads: spec.threads,
        api: spec.api,
        error: None,
        measured: None,
    };
    match measured {
        Ok(sized) => {
            cx.progress
                .done(planned * (1 + sized.discarded.len() as u32));
            let mut m = Measured::new(spec.threads, sized.run, idle, base_rate(done, spec));
            m.discarded_runs = sized.discarded;
            row.measured = Some(m);
        }
        Err(_) if cx.stopped() => return None,
        Err(e) => {
            cx.progress.done(planned);
            row.error = Some(format!("{e:#}"));
        }
    }
    Some(row)
}

/// The per-thread rate of the X = 1 row `spec` scales against.
fn base_rate(done: &[Row], spec: &Spec) -> Option<f64> {
    done.iter()
        .find(|b| {
            b.threads == 1
                && b.mode == spec.mode
                && b.placement == spec.placement
                && b.transport == spec.transport
                && b.api == spec.api
        })
        .and_then(|b| b.measured.as_ref())
        .map(|m| m.rate_per_thread)
}

/// The idle baseline, % busy, when asked for.
fn idle_baseline(plan: &AdderPlan, cx: &RunContext) -> Result<Option<f64>> {
    if plan.idle_secs <= 0.0 {
        return Ok(None);
    }
    cx.progress.start("idle baseline");
    let idle = client::idle_baseline(plan.idle_secs)?;
    cx.progress.done(Duration::from_secs_f64(plan.idle_secs));
    Ok(Some(idle.busy_pct))
}

/// The results: failed rows counted, the idle baseline and any
/// interruption stated in the notes.
fn results(
    rows: Vec<Row>,
    plan: &AdderPlan,
    idle: Option<f64>,
    stopped_at: Option<String>,
) -> Results<Row> {
    let left = plan.row_count() - rows.len();
    let mut r = Results::new(rows);
    if let Some(s) = &plan.server {
        r.notes.push(s.describe("adder"));
    }
    if let Some(i) = idle {
        r.notes.push(format!(
            "Idle baseline: {i:.2}% busy over {} s, before the first row.",
            crate::cli::show_num(plan.idle_secs)
        ));
    }
    if let Some(at) = stopped_at {
        r.notes.push(format!(
            "Interrupted at {at}: that row and the {} after it were not run.",
            left.saturating_sub(1)
        ));
    }
    r
}

/// Starts the servers of one row, sizes the run, runs it, stops them.
fn measure_row(
    plan: &AdderPlan,
    ns: &Namespace,
    spec: &Spec,
    cx: &RunContext,
    on_rerun: &dyn Fn(),
) -> Result<Sized> {
    let (client_cpus, server_cpus) = plan.cpus(spec.placement);
    // A remote server serves already; else this row's servers start.
    let mut servers = match &plan.server {
        Some(_) => None,
        None => Some(Servers::start(
            spec.mode,
            spec.threads,
            spec.transport,
            ns,
            &server_cpus,
            plan.spin_us,
            spec.api,
        )?),
    };
    let remote = match &plan.server {
        Some(s) => Some(s.first_instance()?),
        None => None,
    };
    let opts = msgpass::Options {
        wait: Some(Duration::from_secs(10)),
        spin: Duration::from_micros(plan.spin_us),
        ..msgpass::Options::default()
    };
    let opts = match &plan.server {
        Some(s) => s.options(opts),
        None => opts,
    };
    let cfg = |samples: u64, timestamps: bool| RunConfig {
        ns,
        transport: spec.transport,
        opts: opts.clone(),
        n: spec.threads,
        first: 0,
        one_path: spec.mode.one_path(),
        samples,
        cpus: &client_cpus,
        timestamps,
        clock: &cx.clock,
        abort: &cx.stop,
        // Rows the suite sizes itself get a hard limit: a workload whose
        // rate flips between phases can make any chosen count last 100x
        // too long; stop at 3x the target. With -S the user's count is honoured exactly.
        time_limit: plan
            .samples
            .is_none()
            .then(|| Duration::from_secs_f64((plan.row_secs * 3.0).max(2.0))),
        api: spec.api,
    };
    let sized = size_and_run(plan, &|s, ts| client::run_to(&cfg(s, ts), remote), on_rerun)?;
    if let Some(s) = servers.as_mut() {
        s.stop()?;
    }
    Ok(sized)
}

/// Warms up and sizes a row (`run(samples, timestamps)`), runs it, and
/// runs it again when it came out too short.
fn size_and_run(
    plan: &AdderPlan,
    run: &dyn Fn(u64, bool) -> Result<ClientRun>,
    on_rerun: &dyn Fn(),
) -> Result<Sized> {
    // Short runs warm up (and wait for) the servers and size the row.
    let samples = match plan.samples {
        Some(s) => {
            run(s.min(1000), false)?;
            s
        }
        None => {
            let rate = probe_rate(&|s| run(s, false), plan.row_secs)?;
            ((rate * plan.row_secs) as u64).clamp(crate::devctl::MIN_SAMPLES, u32::MAX as u64)
        }
    };
    let first = run(samples, plan.timestamps)?;
    match plan.samples {
        Some(_) => Ok(Sized {
            run: first,
            discarded: Vec::new(),
        }),
        None => rerun_short(
            &|s| {
                on_rerun();
                run(s, plan.timestamps)
            },
            first,
            plan.row_secs,
        ),
    }
}

/// A row's kept run and the runs of it that were thrown away.
pub(super) struct Sized {
    pub run: ClientRun,
    pub discarded: Vec<DiscardedRun>,
}

/// How many times a short row is run again at most.
pub(super) const MAX_RERUNS: usize = 3;

/// A bimodal workload can still fool the probe: a measured run shorter
/// than a third of `row_secs` (too short for /proc/stat's 10 ms ticks to
/// mean much) is run again, up to [`MAX_RERUNS`] times, sized from its
/// own rate to last `row_secs` (at least twice its count). The last run is
/// kept; the earlier ones are returned as discarded, with why.
pub(super) fn rerun_short(
    run: &dyn Fn(u64) -> Result<ClientRun>,
    first: ClientRun,
    row_secs: f64,
) -> Result<Sized> {
    let mut kept = first;
    let mut discarded = Vec::new();
    while discarded.len() < MAX_RERUNS && kept.ave_duration_ns / 1e9 < row_secs / 3.0 {
        let s = ((kept.rate_per_thread * row_secs) as u64)
            .max(kept.samples * 2)
            .min(u32::MAX as u64);
        if s == kept.samples {
            break;
        }
        let next = run(s)?;
        let old = std::mem::replace(&mut kept, next);
        let reason = format!(
            "lasted {:.0} ms, under a third of --row-secs {} ({:.0} ms); run again with {s} round trips per thread",
            old.ave_duration_ns / 1e6,
            crate::cli::show_num(row_secs),
            row_secs / 3.0 * 1e3
        );
        discarded.push(DiscardedRun::new(&old, reason));
    }
    Ok(Sized {
        run: kept,
        discarded,
    })
}

/// Per-thread rate from probe runs long enough to mean something: the
/// sample count grows until a probe lasts a tenth of the row (at least
/// 50 ms), because a very short probe can catch a fast or a slow phase of
/// a bimodal workload (spinning threads outnumbering CPUs) and size the row
/// a hundred times wrong.
fn probe_rate(run: &dyn Fn(u64) -> Result<ClientRun>, row_secs: f64) -> Result<f64> {
    let want = (row_secs / 10.0).max(0.05);
    let mut samples: u64 = 1000;
    loop {
        let probe = run(samples)?;
        let secs = probe.ave_duration_ns / 1e9;
        if secs >= want || samples >= u32::MAX as u64 / 4 {
            return Ok(probe.rate_per_thread);
        }
        let scale = if secs > 0.0 {
            (want * 1.2 / secs).clamp(2.0, 100.0)
        } else {
            100.0
        };
        samples = ((samples as f64 * scale) as u64).min(u32::MAX as u64 / 4);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suites::adder::{Mode, Placement};

    /// A run of `samples` round trips per thread at `rate` per second.
    pub(crate) fn fake(samples: u64, rate: f64) -> ClientRun {
        ClientRun {
            histogram: Vec::new(),
            api: crate::devctl::options::Api::InPlace,
            transport: "shm".into(),
            samples,
            threads: Vec::new(),
            busy: None,
            ave_duration_ns: samples as f64 / rate * 1e9,
            rate_per_thread: rate,
            aggregate_rate: rate,
            latency: None,
        }
    }

    fn row(sized: Sized) -> Row {
        let mut m = Measured::new(1, sized.run, None, None);
        m.discarded_runs = sized.discarded;
        Row {
            transport: "shm".into(),
            placement: Placement::Unpinned,
            mode: Mode::One,
            threads: 1,
            api: crate::devctl::options::Api::InPlace,
            error: None,
            measured: Some(m),
        }
    }

    #[test]
    fn a_short_row_is_rerun_and_the_json_keeps_the_discarded_run() {
        // The probe said 10k/s, the row ran at 1M/s: 1000 round trips in
        // 1 ms, far under a third of 0.3 s.
        let asked = std::cell::RefCell::new(Vec::new());
        let sized = rerun_short(
            &|s| {
                asked.borrow_mut().push(s);
                Ok(fake(s, 1e6))
            },
            fake(1000, 1e6),
            0.3,
        )
        .expect("runs");
        assert_eq!(*asked.borrow(), [300_000], "sized from its own rate");
        assert_eq!(sized.run.samples, 300_000);
        assert_eq!(sized.discarded.len(), 1);
        let json = serde_json::to_value(row(sized)).expect("serialises");
        let d = &json["discarded_runs"];
        assert_eq!(d.as_array().map(Vec::len), Some(1), "{json}");
        assert_eq!(d[0]["samples_per_thread"], 1000, "{d}");
        assert_eq!(d[0]["ave_duration_ms"], 1.0, "{d}");
        assert_eq!(d[0]["rate_per_thread"], 1e6, "{d}");
        let why = d[0]["reason"].as_str().unwrap_or("");
        assert!(why.contains("under a third of --row-secs 0.3"), "{why}");
        assert_eq!(json["samples_per_thread"], 300_000, "the kept run: {json}");
        assert!(json["error"].is_null(), "{json}");
        assert_eq!(json["placement"], "unpinned", "{json}");
        assert_eq!(json["mode"], "one", "{json}");
    }

    #[test]
    fn a_row_of_the_asked_length_is_kept_and_nothing_is_discarded() {
        let sized =
            rerun_short(&|_| panic!("must not run again"), fake(300_000, 1e6), 0.3).expect("runs");
        assert!(sized.discarded.is_empty());
        let json = serde_json::to_value(row(sized)).expect("serialises");
        assert_eq!(json["discarded_runs"], serde_json::json!([]), "{json}");
    }

    #[test]
    fn failed_rows_are_counted_and_an_interruption_is_noted() {
        let args = crate::suites::adder::AdderArgs {
            threads: Some(vec![1, 2]),
            ..Default::default()
        };
        let plan = crate::suites::adder::options::plan(&args).expect("plan");
        let ok = row(Sized {
            run: fake(1000, 1e6),
            discarded: Vec::new(),
        });
        let mut bad = ok.clone();
        bad.measured = None;
        bad.error = Some("thread 0: final value 7, expected 1000".into());
        let r = results(vec![ok.clone(), bad], &plan, Some(3.5), None);
        let o = crate::suites::outcome_of(&r.rows, false);
        assert_eq!((o.rows, o.failed, o.skipped), (2, 1, 0));
        assert!(!o.interrupted);
        assert_eq!(
            r.notes,
            ["Idle baseline: 3.50% busy over 2 s, before the first row."]
        );
        let r = results(
            vec![ok],
            &plan,
            None,
            Some("shm, unpinned, One process, 2 threads".into()),
        );
        let o = crate::suites::outcome_of(&r.rows, true);
        assert_eq!((o.rows, o.failed), (1, 0));
        assert!(o.interrupted);
        assert_eq!(
            r.notes,
            ["Interrupted at shm, unpinned, One process, 2 threads: that row and the 4 after it were not run."]
        );
    }

    #[test]
    fn reruns_stop_after_three() {
        // A row that stays short (every run lasts 1 ms) keeps the last run
        // and the three before it as discarded.
        let ms = |s: u64| fake(s, s as f64 * 1e3);
        let sized = rerun_short(&|s| Ok(ms(s)), ms(1000), 1.0).expect("runs");
        assert_eq!(sized.discarded.len(), MAX_RERUNS);
        let counts: Vec<u64> = sized
            .discarded
            .iter()
            .map(|d| d.samples_per_thread)
            .collect();
        assert_eq!(counts, [1000, 1_000_000, 1_000_000_000]);
        assert_eq!(sized.run.samples, u32::MAX as u64);
    }
}
