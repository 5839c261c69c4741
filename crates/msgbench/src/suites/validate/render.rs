//! The printed results: the comparison table (one line per row, the
//! notes of rows that could not be compared under it), then how each row
//! was measured.

use super::row::{Figure, Row};
use crate::results::envelope::{self, Better};
use crate::results::table::{Align, Table};

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

/// A row as generic figures: the ratio (keyed by `check`), and each
/// side's average (keyed by `check` and `side`), where measured.
pub fn figures(r: &Row) -> Vec<envelope::Figure> {
    let check = || ("check", r.name.clone());
    let mut v = Vec::new();
    if let Some(x) = r.ratio {
        v.push(envelope::Figure::new(
            &[check()],
            "ratio",
            x,
            "ratio",
            Better::Neither,
        ));
    }
    for (side, f) in [("reference", &r.reference), ("ours", &r.ours)] {
        if let Some(f) = f {
            v.push(envelope::Figure::new(
                &[check(), ("side", side.to_string())],
                "avg_us",
                f.avg_us,
                "us",
                Better::Lower,
            ));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::super::judge::{LATENCY, ROUND_TRIP};
    use super::super::row::{example as row, Verdict};
    use super::*;
    use crate::results::table::{render, Format, Section};

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
    #[test]
    fn a_compared_row_gives_its_ratio_and_both_sides() {
        let f = figures(&row("pipe", Verdict::Agree, ROUND_TRIP, None));
        let got: Vec<(String, &str, f64)> = f
            .iter()
            .map(|f| (f.key_text(), f.metric.as_str(), f.value))
            .collect();
        assert_eq!(
            got,
            [
                ("check=pipe".to_string(), "ratio", 1.2),
                ("check=pipe side=reference".to_string(), "avg_us", 10.0),
                ("check=pipe side=ours".to_string(), "avg_us", 12.0),
            ]
        );
        assert_eq!(f[0].better, Better::Neither);
        assert_eq!(f[1].unit, "us");
        assert!(figures(&row("pipe", Verdict::Missing, ROUND_TRIP, None)).is_empty());
    }
}
