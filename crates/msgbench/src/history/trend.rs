//! `msgbench history trend METRIC [FIELD=VALUE]...`: one figure over
//! time, per host. The figure is named as `compare` names a row: its
//! metric (`rate_per_thread`, `p50_ns`...) and the fields of its key
//! (`transport=uds threads=1`); fields left out match any value, and each
//! distinct full key on each host is a series of its own. `msgbench
//! report --trend` draws the same series.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, Context, Result};
use clap::Args;
use serde::Serialize;

use super::FilterArgs;
use crate::results::table::{render, Format, Section, Table};
use crate::store::headline::number;
use crate::store::{refs, Filter, Point, StoreArgs};

/// Options of `msgbench history trend`.
#[derive(Debug, Clone, Args)]
pub struct TrendArgs {
    /// METRIC, then FIELD=VALUE words naming the row, e.g.
    /// `rate_per_thread transport=uds threads=1` (quote a value with spaces).
    #[arg(value_name = "KEY", required = true, num_args = 1..)]
    pub key: Vec<String>,
    /// Which runs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// table, markdown, csv, or json (every series with its points).
    #[arg(long = "format", value_enum, default_value_t = Format::Table, value_name = "FORMAT")]
    pub format: Format,
}

/// A figure's name: metric and the key fields it must have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Key {
    /// The metric.
    pub metric: String,
    /// Fields the figure's key must have, with these values.
    pub fields: Vec<(String, String)>,
}

impl Key {
    /// Parses `METRIC [FIELD=VALUE]...` (in any order; one metric).
    pub fn parse(words: &[String]) -> Result<Key> {
        let mut metric: Option<String> = None;
        let mut fields = Vec::new();
        for w in words {
            match w.split_once('=') {
                Some((f, v)) if !f.is_empty() => fields.push((f.to_string(), v.to_string())),
                Some(_) => bail!("{w}: a key field is FIELD=VALUE"),
                None if w.is_empty() => bail!("an empty word in the key"),
                None => match &metric {
                    Some(m) => {
                        bail!("{w}: a second metric (after {m}); key fields are FIELD=VALUE")
                    }
                    None => metric = Some(w.clone()),
                },
            }
        }
        let metric = metric.ok_or_else(|| {
            anyhow!("no metric in the key (e.g. rate_per_thread transport=uds threads=1)")
        })?;
        Ok(Key { metric, fields })
    }

    /// Whether `key` has every field asked for.
    pub fn matches(&self, key: &BTreeMap<String, String>) -> bool {
        self.fields.iter().all(|(f, v)| key.get(f) == Some(v))
    }

    /// As typed: `rate_per_thread transport=uds`.
    pub fn text(&self) -> String {
        let mut parts = vec![self.metric.clone()];
        parts.extend(self.fields.iter().map(|(f, v)| format!("{f}={v}")));
        parts.join(" ")
    }
}

/// One figure of one host over time.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Series {
    /// The host.
    pub host: String,
    /// The suite.
    pub suite: String,
    /// The figure's full key.
    pub key: BTreeMap<String, String>,
    /// The metric.
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// Its values, oldest first.
    pub points: Vec<TrendPoint>,
}

/// One value.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TrendPoint {
    /// The run.
    pub run: i64,
    /// Its start, RFC 3339 UTC.
    pub started: String,
    /// The value.
    pub value: f64,
}

impl Series {
    /// `host (suite): metric field=value ... (unit)`.
    pub fn title(&self) -> String {
        let fields: Vec<String> = self.key.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!(
            "{} ({}): {} {} ({})",
            self.host,
            self.suite,
            self.metric,
            fields.join(" "),
            self.unit
        )
    }
}

/// What tells series apart: host, suite, full key, unit.
type SeriesId = (String, String, BTreeMap<String, String>, String);

/// The points that match `key`, as series ordered by host, suite, key.
pub fn series(points: Vec<Point>, key: &Key) -> Vec<Series> {
    let mut by: BTreeMap<SeriesId, Vec<TrendPoint>> = BTreeMap::new();
    for p in points.into_iter().filter(|p| key.matches(&p.key)) {
        by.entry((p.host, p.suite, p.key, p.unit))
            .or_default()
            .push(TrendPoint {
                run: p.run,
                started: p.started,
                value: p.value,
            });
    }
    by.into_iter()
        .map(|((host, suite, k, unit), points)| Series {
            host,
            suite,
            key: k,
            metric: key.metric.clone(),
            unit,
            points,
        })
        .collect()
}

/// The series of `key` in the runs `filter` selects; none is an error
/// naming the figure.
pub fn load(store: &StoreArgs, key: &Key, filter: &Filter) -> Result<Vec<Series>> {
    let mut s = refs::open(store)?;
    let shown = s.location.to_string();
    let points = s
        .points(&key.metric, filter)
        .with_context(|| format!("store {shown}"))?;
    let out = series(points, key);
    if out.is_empty() {
        bail!(
            "no run in the store {shown} has a figure {}{}",
            key.text(),
            filter
                .suite
                .as_ref()
                .map_or(String::new(), |s| format!(" (suite {s})"))
        );
    }
    Ok(out)
}

/// Runs `msgbench history trend`.
pub fn run(store: &StoreArgs, args: &TrendArgs) -> Result<()> {
    let key = Key::parse(&args.key)?;
    let all = load(store, &key, &args.filter.filter())?;
    print!("{}", text(&all, &key, args.format));
    Ok(())
}

/// The series in `format`: a table each (run, start, value, change from
/// the first), or JSON.
pub fn text(all: &[Series], key: &Key, format: Format) -> String {
    if format == Format::Json {
        let doc = serde_json::json!({"key": key, "series": all});
        return serde_json::to_string_pretty(&doc).unwrap_or_default() + "\n";
    }
    let sections: Vec<Section> = all
        .iter()
        .map(|s| {
            let mut t = Table::new(s.title(), &["run", "started", "value", "vs first"]);
            let first = s.points.first().map_or(0.0, |p| p.value);
            for p in &s.points {
                let change = if first != 0.0 {
                    format!("{:+.1}%", (p.value - first) / first.abs() * 100.0)
                } else {
                    "n/a".into()
                };
                t.row(vec![
                    format!("@{}", p.run),
                    p.started.clone(),
                    number(p.value),
                    change,
                ]);
            }
            Section::Table(t)
        })
        .collect();
    render(&sections, format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    fn point(run: i64, host: &str, threads: &str, value: f64) -> Point {
        Point {
            run,
            started: format!("2026-05-0{run}T00:00:00Z"),
            host: host.into(),
            suite: "adder".into(),
            key: [("threads".to_string(), threads.to_string())].into(),
            value,
            unit: "msg/s".into(),
        }
    }

    #[test]
    fn a_key_is_a_metric_and_fields() {
        let k = Key::parse(&words(&[
            "threads=1",
            "rate_per_thread",
            "floor=cache line, threads",
        ]))
        .unwrap();
        assert_eq!(k.metric, "rate_per_thread");
        assert_eq!(k.fields[1], ("floor".into(), "cache line, threads".into()));
        assert!(Key::parse(&words(&["a", "b"]))
            .unwrap_err()
            .to_string()
            .contains("second metric"));
        assert!(Key::parse(&words(&["threads=1"]))
            .unwrap_err()
            .to_string()
            .starts_with("no metric"));
        assert!(Key::parse(&words(&["=1", "m"])).is_err());
    }

    #[test]
    fn series_per_host_and_key() {
        let pts = vec![
            point(1, "b", "1", 10.0),
            point(1, "b", "2", 30.0),
            point(2, "a", "1", 20.0),
            point(3, "b", "1", 15.0),
        ];
        let k = Key::parse(&words(&["rate_per_thread", "threads=1"])).unwrap();
        let s = series(pts.clone(), &k);
        assert_eq!(s.len(), 2);
        assert_eq!((s[0].host.as_str(), s[0].points.len()), ("a", 1));
        assert_eq!(
            s[1].points.iter().map(|p| p.run).collect::<Vec<_>>(),
            [1, 3]
        );
        let t = text(&s, &k, Format::Table);
        assert!(
            t.contains("b (adder): rate_per_thread threads=1 (msg/s)"),
            "{t}"
        );
        assert!(t.contains("+50.0%"), "{t}");
        let all = series(pts, &Key::parse(&words(&["rate_per_thread"])).unwrap());
        assert_eq!(all.len(), 3);
    }
}
