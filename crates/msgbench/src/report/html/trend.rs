//! Trend (`msgbench report --trend METRIC`): a figure over time from the
//! results store, one chart per row of the suite (its full key) with a
//! line per host, x in time since the first run shown (seconds, minutes,
//! hours or days, whichever suits the span); the points in a table under
//! the charts, each with its run (`msgbench history show @ID`).

use std::collections::BTreeMap;
use std::time::SystemTime;

use anyhow::Result;

use super::chart::{self, Series as Line, XyPlot};
use super::{chart_html, para, table, Section};
use crate::history::trend::{Key, Series};
use crate::store::headline::number;

/// At most this many charts (the table has every point).
const MAX_CHARTS: usize = 24;

/// Seconds since the epoch of an RFC 3339 time (`None` if unreadable).
fn seconds(t: &str) -> Option<f64> {
    let at = humantime::parse_rfc3339(t).ok()?;
    Some(
        at.duration_since(SystemTime::UNIX_EPOCH)
            .ok()?
            .as_secs_f64(),
    )
}

/// The trend section, or `None` without series.
pub fn section(key: &Key, all: &[Series]) -> Result<Option<Section>> {
    let t0 = all
        .iter()
        .flat_map(|s| s.points.iter())
        .filter_map(|p| seconds(&p.started).map(|x| (x, p.started.as_str())))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let Some((t0, first)) = t0 else {
        return Ok(None);
    };
    let t1 = all
        .iter()
        .flat_map(|s| s.points.iter())
        .filter_map(|p| seconds(&p.started))
        .fold(t0, f64::max);
    let (unit_name, per) = time_unit(t1 - t0);
    // One chart per suite, key and unit; a line per host.
    let mut charts: BTreeMap<(String, String, String), Vec<&Series>> = BTreeMap::new();
    for s in all {
        let fields: Vec<String> = s.key.iter().map(|(k, v)| format!("{k}={v}")).collect();
        charts
            .entry((s.suite.clone(), fields.join(" "), s.unit.clone()))
            .or_default()
            .push(s);
    }
    let mut html = para(&format!(
        "{} over time ({} run(s) on {} host(s)): each point is a run, x in {unit_name} since the first ({first}).",
        key.text(),
        runs(all),
        hosts(all)
    ));
    for ((suite, fields, unit), series) in charts.iter().take(MAX_CHARTS) {
        let lines: Vec<Line> = series
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let pts = s
                    .points
                    .iter()
                    .filter_map(|p| Some(((seconds(&p.started)? - t0) / per, p.value)))
                    .collect();
                Line::data(s.host.clone(), pts, i)
            })
            .collect();
        let plot = XyPlot {
            title: format!("{suite}: {} {fields}", key.metric),
            x_desc: format!("{unit_name} since {first}"),
            y_desc: unit.clone(),
            x_log: false,
            y_log: false,
            series: lines,
            small: false,
        };
        if let Some(c) = chart::xy(&plot)? {
            html.push_str(&chart_html(&c));
        }
    }
    if charts.len() > MAX_CHARTS {
        html.push_str(&para(&format!(
            "{} more rows are in the table only: name more key fields (--where) to narrow the trend.",
            charts.len() - MAX_CHARTS
        )));
    }
    html.push_str(&points_table(all));
    Ok(Some(Section {
        id: "trend",
        title: "Trend",
        html,
    }))
}

/// The x axis' unit for a span of `secs`: its name and length in seconds.
fn time_unit(secs: f64) -> (&'static str, f64) {
    match secs {
        s if s < 120.0 => ("seconds", 1.0),
        s if s < 7_200.0 => ("minutes", 60.0),
        s if s < 259_200.0 => ("hours", 3_600.0),
        _ => ("days", 86_400.0),
    }
}

fn runs(all: &[Series]) -> usize {
    let mut ids: Vec<i64> = all
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.run))
        .collect();
    ids.sort_unstable();
    ids.dedup();
    ids.len()
}

fn hosts(all: &[Series]) -> usize {
    let mut h: Vec<&str> = all.iter().map(|s| s.host.as_str()).collect();
    h.sort_unstable();
    h.dedup();
    h.len()
}

/// Every point: host, row, run, start, value.
fn points_table(all: &[Series]) -> String {
    let rows: Vec<Vec<String>> = all
        .iter()
        .flat_map(|s| {
            let fields: Vec<String> = s.key.iter().map(|(k, v)| format!("{k}={v}")).collect();
            let row = fields.join(" ");
            s.points.iter().map(move |p| {
                vec![
                    s.host.clone(),
                    row.clone(),
                    format!("@{}", p.run),
                    p.started.clone(),
                    format!("{} {}", number(p.value), s.unit),
                ]
            })
        })
        .collect();
    table(&["host", "row", "run", "started", "value"], &rows)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::trend::TrendPoint;

    fn series(host: &str, threads: &str, values: &[(i64, &str, f64)]) -> Series {
        Series {
            host: host.into(),
            suite: "adder".into(),
            key: [("threads".to_string(), threads.to_string())].into(),
            metric: "rate_per_thread".into(),
            unit: "msg/s".into(),
            points: values
                .iter()
                .map(|(run, started, value)| TrendPoint {
                    run: *run,
                    started: started.to_string(),
                    value: *value,
                })
                .collect(),
        }
    }

    #[test]
    fn a_chart_per_row_a_line_per_host() {
        let key = Key::parse(&["rate_per_thread".to_string()]).unwrap();
        let all = [
            series(
                "a<b>",
                "1",
                &[
                    (1, "2026-05-01T00:00:00Z", 10.0),
                    (3, "2026-05-03T00:00:00Z", 12.0),
                ],
            ),
            series("c", "1", &[(2, "2026-05-02T00:00:00Z", 20.0)]),
            series("c", "2", &[(2, "2026-05-02T00:00:00Z", 30.0)]),
        ];
        let s = section(&key, &all).unwrap().unwrap();
        assert_eq!(s.html.matches("<svg").count(), 2, "{}", s.html);
        assert!(s.html.contains("class=\"data-series\""));
        assert!(s.html.contains("a&lt;b&gt;") && !s.html.contains("a<b>"));
        assert!(s.html.contains("hours since 2026-05-01T00:00:00Z"));
        assert_eq!(time_unit(5.0).0, "seconds");
        assert_eq!(time_unit(86_400.0 * 30.0).0, "days");
        assert!(s.html.contains("3 run(s) on 2 host(s)"), "{}", s.html);
        assert!(section(&key, &[]).unwrap().is_none());
    }
}
