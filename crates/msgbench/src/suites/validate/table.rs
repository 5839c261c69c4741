//! The printed table: one line per comparison, then the notes of rows
//! that could not be compared.

use super::compare::{Figure, Row};

fn figure(f: &Option<Figure>) -> String {
    match f {
        None => "-".into(),
        Some(f) => match f.min_us {
            Some(m) => format!("{:.2} (min {:.2})", f.avg_us, m),
            None => format!("{:.2}", f.avg_us),
        },
    }
}

/// The table as text.
pub fn render(rows: &[Row]) -> String {
    let head = [
        "comparison",
        "reference",
        "ref avg us",
        "ours avg us",
        "ratio",
        "verdict",
    ];
    let lines: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.name.clone(),
                r.tool.clone(),
                figure(&r.reference),
                figure(&r.ours),
                r.ratio.map_or("-".into(), |x| format!("{x:.2}")),
                r.verdict.label().to_string(),
            ]
        })
        .collect();
    let mut w = head.map(str::len);
    for l in &lines {
        for (i, c) in l.iter().enumerate() {
            w[i] = w[i].max(c.len());
        }
    }
    let fmt = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, c) in cells.iter().enumerate() {
            if i == 0 || i == 1 || i == 5 {
                s += &format!("{c:<width$}  ", width = w[i]);
            } else {
                s += &format!("{c:>width$}  ", width = w[i]);
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = fmt(&head.map(String::from));
    for l in &lines {
        out += &fmt(l);
    }
    out += "\nrows:\n";
    for r in rows {
        out += &format!(
            "  {}: {} x [{}] | ours: {} | {} | {}\n",
            r.name, r.runs, r.command, r.ours_method, r.placement, r.priority
        );
        if let Some(n) = &r.note {
            out += &format!("    {}: {n}\n", r.verdict.label());
        }
    }
    out
}
