//! `msgbench report`: results files in, one self-contained HTML page out
//! (styles inline, charts as inline SVG drawn by plotters, no script, no
//! address to fetch anything from).
//!
//! The page is built from each run's generic `figures` (and the few row
//! fields `docs/results.md` names: ipc `histogram`, rtos `reference` and
//! `outcome`, validate `tolerance`, smp `reference` and the rest of its
//! rows for the table, broker `reference` and the rest of its rows for
//! the table; the run's `notes`); whatever is missing is left out.
//! Several runs given together are overlaid, each series labelled with
//! its run. Every string that comes from a results file is escaped.

pub mod adder;
pub mod broker;
pub mod chart;
pub mod dots;
pub mod env;
pub mod floor;
pub mod ipc;
pub mod ipc_scale;
pub mod rtos;
pub mod sample;
pub mod smp;
pub mod validate;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

use super::envelope::{Figure, Run};
use chart::{Chart, Marker};

/// `msgbench report` options.
#[derive(Debug, Clone, Args)]
pub struct ReportArgs {
    /// Results files (`--json FILE` of any suite); several are overlaid.
    #[arg(required = true, value_name = "RUN.json")]
    pub files: Vec<PathBuf>,
    /// Where to write the page.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
}

/// One run with the label it is shown under.
#[derive(Debug, Clone)]
pub struct Input {
    /// Unique among the inputs (the file's stem, numbered if repeated).
    pub label: String,
    /// The run.
    pub run: Run,
}

/// A part of the page: heading and HTML body.
#[derive(Debug, Clone)]
pub struct Section {
    /// Anchor id (a fixed word, not from the data).
    pub id: &'static str,
    /// Heading.
    pub title: &'static str,
    /// Body, already escaped.
    pub html: String,
}

/// Runs `msgbench report`: loads every file, writes the page, says where.
pub fn run(args: &ReportArgs) -> Result<()> {
    let inputs = load(&args.files)?;
    let page = page(&inputs)?;
    std::fs::write(&args.output, page)
        .with_context(|| format!("{}: cannot write", args.output.display()))?;
    println!("report written to {}", args.output.display());
    Ok(())
}

/// Loads `paths`, labelling each run by its file's stem (numbered when
/// two files share one).
pub fn load(paths: &[PathBuf]) -> Result<Vec<Input>> {
    let mut out: Vec<Input> = Vec::new();
    for p in paths {
        let run = Run::load(p)?;
        out.push(Input {
            label: unique_label(&run.label(p), &out),
            run,
        });
    }
    Ok(out)
}

fn unique_label(base: &str, taken: &[Input]) -> String {
    let mut label = base.to_string();
    let mut n = 2;
    while taken.iter().any(|i| i.label == label) {
        label = format!("{base} ({n})");
        n += 1;
    }
    label
}

/// The inputs of one suite.
pub fn of_suite<'a>(inputs: &'a [Input], suite: &str) -> Vec<&'a Input> {
    inputs.iter().filter(|i| i.run.suite == suite).collect()
}

/// A series label: `what`, prefixed with the run's label when several
/// runs are overlaid.
pub fn series_label(overlaid: bool, run: &str, what: &str) -> String {
    if overlaid {
        format!("{run}: {what}")
    } else {
        what.to_string()
    }
}

/// A figure's key field, or "" when absent.
pub fn key<'a>(f: &'a Figure, name: &str) -> &'a str {
    f.key.get(name).map_or("", String::as_str)
}

/// The whole page.
pub fn page(inputs: &[Input]) -> Result<String> {
    let sections = [
        adder::section(inputs)?,
        ipc::section(inputs)?,
        floor::section(inputs)?,
        rtos::section(inputs)?,
        smp::section(inputs)?,
        broker::section(inputs)?,
        validate::section(inputs)?,
        Some(env::section(inputs)),
    ];
    let sections: Vec<Section> = sections.into_iter().flatten().collect();
    let runs: Vec<String> = inputs
        .iter()
        .map(|i| format!("{} ({})", i.label, i.run.suite))
        .collect();
    Ok(fill(&runs.join(", "), &sections))
}

const TEMPLATE: &str = include_str!("page.html");

/// Fills the template: the runs line, the contents, the sections (the
/// body last, so nothing in it is taken for a placeholder).
fn fill(runs: &str, sections: &[Section]) -> String {
    let nav: String = sections
        .iter()
        .map(|s| format!("<a href=\"#{}\">{}</a>", s.id, s.title))
        .collect::<Vec<_>>()
        .join(" · ");
    let body: String = sections
        .iter()
        .map(|s| {
            format!(
                "<section id=\"{}\">\n<h2>{}</h2>\n{}</section>\n",
                s.id, s.title, s.html
            )
        })
        .collect();
    let (head, rest) = TEMPLATE.split_once("{{body}}").unwrap_or((TEMPLATE, ""));
    let head = head
        .replace("{{runs}}", &escape(runs))
        .replace("{{nav}}", &nav);
    format!("{head}{body}{rest}")
}

/// Escapes text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// A chart as HTML: heading, the SVG, the legend (labels escaped).
pub fn chart_html(c: &Chart) -> String {
    let items: String = c
        .legend
        .iter()
        .map(|(colour, marker, label)| {
            let shape = match marker {
                Marker::Cross => "cross",
                Marker::Triangle => "triangle",
                Marker::Square => "square",
                Marker::Circle | Marker::None => "dot",
            };
            format!(
                "<li><span class=\"swatch {shape}\" style=\"color:{colour}\"></span>{}</li>",
                escape(label)
            )
        })
        .collect();
    format!(
        "<figure class=\"chart\">\n<figcaption>{}</figcaption>\n{}<ul class=\"legend\">{items}</ul>\n</figure>\n",
        escape(&c.title),
        c.svg
    )
}

/// A paragraph of escaped text.
pub fn para(text: &str) -> String {
    format!("<p>{}</p>\n", escape(text))
}

/// An HTML table: header cells and rows, every cell escaped.
pub fn table(head: &[&str], rows: &[Vec<String>]) -> String {
    let th: String = head
        .iter()
        .map(|h| format!("<th>{}</th>", escape(h)))
        .collect();
    let trs: String = rows
        .iter()
        .map(|r| {
            let tds: String = r
                .iter()
                .map(|c| format!("<td>{}</td>", escape(c)))
                .collect();
            format!("<tr>{tds}</tr>\n")
        })
        .collect();
    format!("<table>\n<thead><tr>{th}</tr></thead>\n<tbody>\n{trs}</tbody>\n</table>\n")
}

#[cfg(test)]
mod tests;
