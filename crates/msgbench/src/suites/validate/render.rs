//! The printed results: the comparison table (one line per row, the
//! notes of rows that could not be compared under it), then how each row
//! was measured.

use super::judge::{Figure, Row};
use crate::report::table::{Align, Table};

/// A figure as printed: the average, with the minimum where known.
fn figure(f: &Option<Figure>) -> String {
    match f {
        None => "-".into(),
        Some(f) => match f.min_us {
            Some(m) => format!("{:.2} (min {:.2})", f.avg_us, m),
            None => format!("{:.2}", f.avg_us),
        },
    }
}

/// One line per comparison: the two averages, their ratio, the band it
/// must fall in, and the verdict.
pub fn table(rows: &[Row]) -> Table {
    use Align::{Left, Right};
    let mut t = Table::new(
        "",
        &[
            "comparison",
            "reference",
            "ref avg us",
            "ours avg us",
            "ratio",
            "tolerance",
            "verdict",
        ],
    )
    .aligned(&[Left, Left, Right, Right, Right, Right, Left]);
    for r in rows {
        t.row(vec![
            r.name.clone(),
            r.tool.clone(),
            figure(&r.reference),
            figure(&r.ours),
            r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
            r.tolerance.label(),
            r.verdict.label().to_string(),
        ]);
    }
    t.notes = rows
        .iter()
        .filter_map(|r| {
            let n = r.note.as_ref()?;
            Some(format!("{}: {}: {n}", r.name, r.verdict.label()))
        })
        .collect();
    t
}

/// How each row was measured: the reference command, ours, placement and
/// priority; then the remarks on the whole run.
pub fn details(rows: &[Row], notes: &[String]) -> String {
    let mut out = String::from("rows:\n");
    for r in rows {
        out += &format!(
            "  {}: {} x [{}] | ours: {} | {} | {}\n",
            r.name, r.runs, r.command, r.ours_method, r.placement, r.priority
        );
    }
    for n in notes {
        out += &format!("{n}\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::judge::{Tolerance, Verdict, LATENCY, ROUND_TRIP};
    use super::*;
    use crate::report::table::{render, Format, Section};

    fn row(name: &str, verdict: Verdict, tolerance: Tolerance, note: Option<&str>) -> Row {
        let measured = verdict != Verdict::Missing;
        Row {
            name: name.into(),
            tool: "tool".into(),
            command: "tool -q".into(),
            runs: 4,
            ours_method: "ours".into(),
            placement: "CPU 0".into(),
            priority: "normal".into(),
            reference: measured.then(|| Figure::avg(10.0)),
            ours: measured.then_some(Figure {
                min_us: Some(9.0),
                avg_us: 12.0,
                max_us: Some(30.0),
            }),
            ratio: measured.then_some(1.2),
            tolerance,
            verdict,
            note: note.map(Into::into),
        }
    }

    #[test]
    fn rows_show_figures_ratio_band_and_verdict() {
        let rows = [
            row("pipe", Verdict::Agree, ROUND_TRIP, None),
            row("timer", Verdict::Missing, LATENCY, Some("not installed")),
        ];
        let text = render(&[Section::Table(table(&rows))], Format::Table);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("tolerance"), "{text}");
        assert!(lines[2].contains("10.00") && lines[2].contains("12.00 (min 9.00)"));
        assert!(lines[2].contains("1.20") && lines[2].contains("0.67-1.50"));
        assert!(lines[2].trim_end().ends_with("agree"), "{text}");
        assert!(lines[3].contains("0.67-1.50 or +-1 us"), "{text}");
        assert!(text.contains("timer: missing: not installed"), "{text}");
        let csv = render(&[Section::Table(table(&rows))], Format::Csv);
        assert_eq!(csv.lines().count(), 3, "{csv}");
    }

    #[test]
    fn details_name_the_command_and_the_notes() {
        let d = details(
            &[row("pipe", Verdict::Agree, ROUND_TRIP, None)],
            &["memory locked: yes".into()],
        );
        assert!(d.contains("pipe: 4 x [tool -q] | ours: ours"), "{d}");
        assert!(d.ends_with("memory locked: yes\n"), "{d}");
    }
}
