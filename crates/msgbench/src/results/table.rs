//! The one text renderer: a suite turns its results into [`Section`]s
//! (tables and blocks of prose), and `--format` picks how they are drawn.
//! The JSON format is the envelope itself, written by the suite driver.

use std::fmt::Write as _;

use clap::ValueEnum;
use comfy_table::{presets, CellAlignment, ContentArrangement};
use serde::{Deserialize, Serialize};

/// `--format`: how results are printed on standard output.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text tables (default).
    #[default]
    Table,
    /// Markdown tables, for pasting into a document or an issue.
    Markdown,
    /// CSV, one block per table, a blank line between blocks.
    Csv,
    /// The results envelope (the same document `--json FILE` writes).
    Json,
}

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Align {
    /// Text.
    Left,
    /// Figures.
    Right,
}

/// A table: a title, a header, rows of cells already formatted, and notes
/// printed under it.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Table {
    /// Printed above the table ("" for none).
    pub title: String,
    /// Column names.
    pub head: Vec<String>,
    /// Alignment per column (missing ones are left-aligned).
    pub align: Vec<Align>,
    /// Rows of cells, as many as `head`.
    pub rows: Vec<Vec<String>>,
    /// Lines under the table, e.g. what a row observed.
    pub notes: Vec<String>,
}

impl Table {
    /// A table with `head`: the first column left-aligned, the others
    /// right-aligned (names first, figures after).
    pub fn new(title: impl Into<String>, head: &[&str]) -> Table {
        let align = (0..head.len())
            .map(|i| if i == 0 { Align::Left } else { Align::Right })
            .collect();
        Table {
            title: title.into(),
            head: head.iter().map(|h| h.to_string()).collect(),
            align,
            rows: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Sets every column's alignment.
    pub fn aligned(mut self, align: &[Align]) -> Table {
        self.align = align.to_vec();
        self
    }

    /// Adds a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }
}

/// One part of a suite's text output (serialisable: the results store
/// keeps a run's sections, for `msgbench history show`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Section {
    /// A table.
    Table(Table),
    /// Prose or a preformatted block (the seed's results block), printed
    /// as it is; left out of CSV.
    Text(String),
}

/// Draws `sections` in `format` (`Json` is not drawn here: it draws
/// nothing).
pub fn render(sections: &[Section], format: Format) -> String {
    let mut out = String::new();
    for s in sections {
        let part = match (s, format) {
            (_, Format::Json) => continue,
            (Section::Text(_), Format::Csv) => continue,
            (Section::Text(t), _) => t.trim_end().to_string(),
            (Section::Table(t), Format::Table) => text(t),
            (Section::Table(t), Format::Markdown) => markdown(t),
            (Section::Table(t), Format::Csv) => csv(t),
        };
        if !out.is_empty() {
            out.push('\n');
        }
        out.push_str(&part);
        out.push('\n');
    }
    out
}

fn comfy(t: &Table, preset: &str) -> comfy_table::Table {
    let mut c = comfy_table::Table::new();
    c.load_preset(preset)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(t.head.clone());
    for r in &t.rows {
        c.add_row(r.clone());
    }
    for (i, a) in t.align.iter().enumerate() {
        if let Some(col) = c.column_mut(i) {
            col.set_cell_alignment(match a {
                Align::Left => CellAlignment::Left,
                Align::Right => CellAlignment::Right,
            });
        }
    }
    c
}

/// comfy-table's preset for plain text: no borders, no column lines, one
/// rule of '-' under the header (the 6th and 7th of the preset's 19
/// characters: the header line and its crossings).
const PLAIN: &str = "     --            ";

/// Aligned text: the title, the table with a rule under its header, the
/// notes indented.
fn text(t: &Table) -> String {
    let mut out = String::new();
    if !t.title.is_empty() {
        let _ = writeln!(out, "{}", t.title);
    }
    // Cells are padded by one space on each side: two spaces between
    // columns, and one before the first, taken off here.
    for l in comfy(t, PLAIN).trim_fmt().lines() {
        let _ = writeln!(out, "{}", l.get(1..).unwrap_or("").trim_end());
    }
    for n in &t.notes {
        let _ = writeln!(out, "  {n}");
    }
    out.trim_end().to_string()
}

/// A Markdown table, the title as a bold line, the notes as a list.
fn markdown(t: &Table) -> String {
    let mut out = String::new();
    if !t.title.is_empty() {
        let _ = writeln!(out, "**{}**\n", t.title);
    }
    let escaped = Table {
        rows: t
            .rows
            .iter()
            .map(|r| r.iter().map(|c| c.replace('|', "\\|")).collect())
            .collect(),
        ..t.clone()
    };
    let _ = writeln!(
        out,
        "{}",
        comfy(&escaped, presets::ASCII_MARKDOWN).trim_fmt()
    );
    if !t.notes.is_empty() {
        out.push('\n');
        for n in &t.notes {
            let _ = writeln!(out, "- {n}");
        }
    }
    out.trim_end().to_string()
}

/// CSV with the header as its first record; the title and notes are left
/// out (they are in the JSON).
fn csv(t: &Table) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let _ = w.write_record(&t.head);
    for r in &t.rows {
        let _ = w.write_record(r);
    }
    let bytes = w.into_inner().unwrap_or_default();
    String::from_utf8_lossy(&bytes).trim_end().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Section> {
        let mut t = Table::new("Transport uds", &["size", "p50 ns", "note"]);
        t.row(vec!["64".into(), "1,234".into(), "a|b, \"c\"".into()]);
        t.row(vec!["4096".into(), "12".into(), "".into()]);
        t.notes.push("one note".into());
        vec![Section::Text("intro".into()), Section::Table(t)]
    }

    #[test]
    fn text_aligns_figures_right_with_one_rule() {
        let s = render(&sample(), Format::Table);
        assert!(s.starts_with("intro\n\nTransport uds\n"), "{s}");
        let lines: Vec<&str> = s.lines().collect();
        assert!(
            lines[3].contains("size") && lines[3].contains("p50 ns"),
            "{s}"
        );
        assert!(lines[4].chars().all(|c| "-+= ".contains(c)), "{s}");
        // "12" ends where "1,234" ends.
        let end = |l: &str, w: &str| l.find(w).map(|i| i + w.len());
        assert_eq!(end(lines[5], "1,234"), end(lines[6], "12"), "{s}");
        assert!(s.ends_with("  one note\n"), "{s:?}");
    }

    #[test]
    fn markdown_escapes_pipes_and_lists_notes() {
        let s = render(&sample(), Format::Markdown);
        assert!(s.contains("**Transport uds**"), "{s}");
        assert!(s.contains("a\\|b"), "{s}");
        assert!(s.contains("- one note"), "{s}");
    }

    #[test]
    fn csv_quotes_and_leaves_prose_out() {
        let s = render(&sample(), Format::Csv);
        assert_eq!(
            s,
            "size,p50 ns,note\n64,\"1,234\",\"a|b, \"\"c\"\"\"\n4096,12,\n"
        );
    }

    #[test]
    fn json_draws_nothing() {
        assert_eq!(render(&sample(), Format::Json), "");
    }
}
