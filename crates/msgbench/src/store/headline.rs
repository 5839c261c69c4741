//! One figure that sums a run up in `msgbench history`: per suite, the
//! best of its main metric with the row it came from; rtos counts its
//! passes, and a suite without such a metric shows its row count.

use crate::results::envelope::{Figure, Run};
use crate::results::thousands;

/// Best is the largest or the smallest value.
#[derive(Debug, Clone, Copy)]
enum Pick {
    Max,
    Min,
}

/// Suite, metric, which is best, how it is named.
const RULES: &[(&str, &str, Pick, &str)] = &[
    ("adder", "aggregate_rate", Pick::Max, "best aggregate"),
    ("ipc", "p50_ns", Pick::Min, "best p50"),
    (
        "floor",
        "ns_per_round_trip",
        Pick::Min,
        "fastest round trip",
    ),
    ("smp", "zero_loss_pps", Pick::Max, "best zero-loss"),
    ("broker", "p50_ns", Pick::Min, "best p50"),
];

/// The headline of `run`.
pub fn of(run: &Run) -> String {
    if run.suite == "rtos" {
        let passes: Vec<&Figure> = run.figures.iter().filter(|f| f.metric == "pass").collect();
        if !passes.is_empty() {
            let ok = passes.iter().filter(|f| f.value >= 1.0).count();
            return format!("{ok}/{} behaviour tests pass", passes.len());
        }
    }
    let rule = RULES.iter().find(|r| r.0 == run.suite);
    let best = rule.and_then(|&(_, metric, pick, _)| best(&run.figures, metric, pick));
    match (rule, best) {
        (Some(r), Some(f)) => format!("{} {} {} ({})", r.3, number(f.value), f.unit, where_(f)),
        _ => format!("{} rows", run.outcome.rows),
    }
}

/// The best figure of `metric`.
fn best<'a>(figures: &'a [Figure], metric: &str, pick: Pick) -> Option<&'a Figure> {
    let of_metric = figures
        .iter()
        .filter(|f| f.metric == metric && f.value.is_finite());
    match pick {
        Pick::Max => of_metric.max_by(|a, b| a.value.total_cmp(&b.value)),
        Pick::Min => of_metric.min_by(|a, b| a.value.total_cmp(&b.value)),
    }
}

/// The figure's row, its key without the API (in place unless `--copy`).
fn where_(f: &Figure) -> String {
    let parts: Vec<String> = f
        .key
        .iter()
        .filter(|(k, _)| k.as_str() != "api")
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    parts.join(" ")
}

/// A figure as shown: thousands separated from 1000, three significant
/// digits below.
pub fn number(v: f64) -> String {
    match v.abs() {
        a if a >= 1000.0 => thousands(v),
        a if a >= 100.0 => format!("{v:.0}"),
        a if a >= 10.0 => format!("{v:.1}"),
        _ => format!("{v:.2}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::envelope::Better;

    fn run(suite: &str, figures: Vec<Figure>) -> Run {
        let text = crate::report::html::sample::envelope_json(suite, 1.0).unwrap();
        let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
        v["figures"] = serde_json::to_value(&figures).unwrap();
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_best_figure_with_its_row() {
        let f = |t: &str, v: f64| {
            Figure::new(
                &[("transport", t.into()), ("api", "in-place".into())],
                "aggregate_rate",
                v,
                "msg/s",
                Better::Higher,
            )
        };
        let r = run("adder", vec![f("uds", 1500.4), f("shm", 2_500_000.0)]);
        assert_eq!(of(&r), "best aggregate 2,500,000 msg/s (transport=shm)");
        let p = |v: f64| Figure::new(&[("id", "x".into())], "pass", v, "", Better::Higher);
        let r = run("rtos", vec![p(1.0), p(0.0), p(1.0)]);
        assert_eq!(of(&r), "2/3 behaviour tests pass");
        let r = run("validate", vec![]);
        assert!(of(&r).ends_with(" rows"), "{}", of(&r));
    }
}
