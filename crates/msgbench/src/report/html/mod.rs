//! `msgbench report`: runs in (results files, or runs in the store:
//! `@last`, `@prev`, `@ID`, the latest run of each `--host`, a
//! campaign's latest pass on each host: [`campaign`]), one
//! self-contained HTML page out (styles inline, charts as inline SVG
//! drawn by plotters, no script, no address to fetch anything from);
//! `--trend METRIC` adds a figure over time from the store ([`trend`]).
//!
//! The page is built from each run's generic `figures` (and the few row
//! fields `docs/results.md` names: ipc `histogram`, rtos `reference` and
//! `outcome`, validate `tolerance`, smp `reference` and the rest of its
//! rows for the table, broker `reference` and the rest of its rows for
//! the table; the run's `notes`); whatever is missing is left out. Each
//! section opens with the run's answers ([`answers`]: the sentences the
//! terminal prints), then its charts, crowded ones as small multiples
//! ([`multiples`]).
//! Several runs given together are overlaid, each series labelled with
//! its run. Every string that comes from a results file is escaped.

pub mod adder;
pub mod answers;
pub mod broker;
pub mod campaign;
pub mod chart;
pub mod dots;
pub mod env;
pub mod floor;
pub mod ipc;
pub mod ipc_scale;
pub mod rtos;
pub mod sample;
pub mod smp;
pub mod trend;
pub mod validate;

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::{ArgGroup, Args};

use crate::history::{self, trend::Key};
use crate::results::envelope::{Figure, Run};
use crate::store::refs::{self, Loaded, Source};
use crate::store::{Filter, StoreArgs};
use chart::{Chart, Line, Marker};

/// `msgbench report` options.
#[derive(Debug, Clone, Default, Args)]
#[command(group(ArgGroup::new("runs").required(true).multiple(true)
    .args(["files", "suite", "hosts", "trend", "campaign"])))]
pub struct ReportArgs {
    /// Runs: results files (`--json FILE` of any suite), or @last, @prev,
    /// @ID from the results store; several are overlaid.
    #[arg(value_name = "RUN")]
    pub files: Vec<String>,
    /// Where to write the page.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,
    /// From the store: the latest run of this suite of each --host (of
    /// every host with one, without --host), side by side.
    #[arg(long = "suite", value_name = "SUITE")]
    pub suite: Option<String>,
    /// From the store: the latest run of this host (repeat for several
    /// machines side by side; with --suite, of that suite; with
    /// --campaign, the campaign's runs on that host).
    #[arg(long = "host", value_name = "HOST")]
    pub hosts: Vec<String>,
    /// From the store: the runs of campaign NAME (`msgbench campaign`),
    /// its latest pass on each --host (on every host that ran it,
    /// without --host), overlaid suite by suite; with --suite, of that
    /// suite only.
    #[arg(long = "campaign", value_name = "NAME", conflicts_with = "trend")]
    pub campaign: Option<String>,
    /// From the store: METRIC over time, a line per host (with --trend,
    /// --suite and --host only choose the runs of the trend).
    #[arg(long = "trend", value_name = "METRIC")]
    pub trend: Option<String>,
    /// With --trend: a field the figure's key must have, e.g.
    /// threads=1 (repeat for several).
    #[arg(long = "where", value_name = "FIELD=VALUE", requires = "trend")]
    pub wheres: Vec<String>,
    /// With --trend: only runs started since WHEN (2026-05-01, 7d...).
    #[arg(long = "since", value_name = "WHEN", requires = "trend", value_parser = history::since)]
    pub since: Option<String>,
    /// Where @last, @prev, @ID, --host and --trend are looked up.
    #[command(flatten)]
    pub store: StoreArgs,
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

/// Runs `msgbench report`: loads every run, writes the page, says where.
pub fn run(args: &ReportArgs) -> Result<()> {
    let inputs = inputs(args)?;
    let mut extra = Vec::new();
    if let Some(metric) = &args.trend {
        let mut words = vec![metric.clone()];
        words.extend(args.wheres.iter().cloned());
        let key = Key::parse(&words).context("--trend")?;
        let filter = Filter {
            suite: args.suite.clone(),
            hosts: args.hosts.clone(),
            since: args.since.clone(),
            ..Filter::default()
        };
        let series = history::trend::load(&args.store, &key, &filter)?;
        extra.extend(trend::section(&key, &series)?);
    }
    let page = page_with(&inputs, extra)?;
    std::fs::write(&args.output, page)
        .with_context(|| format!("{}: cannot write", args.output.display()))?;
    println!("report written to {}", args.output.display());
    Ok(())
}

/// The runs the page shows: the files and references given, then (without
/// `--trend`) the latest run of each host `--suite`/`--host` name.
fn inputs(args: &ReportArgs) -> Result<Vec<Input>> {
    let sources: Vec<Source> = args
        .files
        .iter()
        .map(|f| Source::parse(f))
        .collect::<Result<_>>()?;
    let mut loaded = refs::load_all(&sources, &args.store)?;
    let by_host = args.campaign.is_none()
        && args.trend.is_none()
        && (args.suite.is_some() || !args.hosts.is_empty());
    if by_host {
        loaded.extend(latest_per_host(args)?);
    }
    let mut out: Vec<Input> = Vec::new();
    for l in loaded {
        let label = match (&l.summary, by_host && l.name.starts_with('@')) {
            (Some(s), true) => format!("{} ({})", s.host, l.name),
            (Some(s), false) => format!("{} ({})", l.name, s.host),
            (None, _) => l.run.label(std::path::Path::new(&l.name)),
        };
        out.push(Input {
            label: unique_label(&label, &out),
            run: l.run,
        });
    }
    if let Some(name) = &args.campaign {
        let mut store = refs::open(&args.store)?;
        let runs = campaign::inputs(&mut store, name, &args.hosts, args.suite.as_deref())?;
        for i in runs {
            out.push(Input {
                label: unique_label(&i.label, &out),
                run: i.run,
            });
        }
    }
    Ok(out)
}

/// The latest run (of `--suite`, if given) of each `--host`, else of
/// every host that has one.
fn latest_per_host(args: &ReportArgs) -> Result<Vec<Loaded>> {
    let mut store = refs::open(&args.store)?;
    let what = args
        .suite
        .as_deref()
        .map_or(String::new(), |s| format!("{s} "));
    let hosts = if args.hosts.is_empty() {
        let f = Filter {
            suite: args.suite.clone(),
            ..Filter::default()
        };
        let shown = store.location.to_string();
        let mut h: Vec<String> = store
            .list(&f)
            .with_context(|| format!("store {shown}"))?
            .into_iter()
            .map(|s| s.host)
            .collect();
        h.sort();
        h.dedup();
        if h.is_empty() {
            bail!("--suite {what}: no {what}run in the store {shown}");
        }
        h
    } else {
        args.hosts.clone()
    };
    let mut out = Vec::new();
    for host in hosts {
        let f = Filter {
            suite: args.suite.clone(),
            hosts: vec![host.clone()],
            ..Filter::default()
        };
        let Some(s) = refs::last(&mut store, &f)? else {
            bail!(
                "--host {host}: no {what}run of {host} in the store {}",
                store.location
            );
        };
        out.push(refs::load_id(&mut store, s.id)?);
    }
    Ok(out)
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

/// A run's rows read as its suite wrote them (`T`), with its label.
pub struct Typed<'a, T> {
    /// The run's label.
    pub label: &'a str,
    /// Its rows.
    pub rows: Vec<T>,
}

/// The rows of each of `inputs` read as `T`; the first run whose rows
/// are not refused with its label.
pub fn typed<'a, T: serde::de::DeserializeOwned>(
    inputs: &[&'a Input],
) -> Result<Vec<Typed<'a, T>>> {
    inputs
        .iter()
        .map(|i| {
            Ok(Typed {
                label: &i.label,
                rows: i.run.rows_as().context(i.label.clone())?,
            })
        })
        .collect()
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
    page_with(inputs, Vec::new())
}

/// The page of `inputs` with `extra` sections (a trend) before the
/// environment (left out when no run is shown).
pub fn page_with(inputs: &[Input], extra: Vec<Section>) -> Result<String> {
    let sections = [
        adder::section(inputs)?,
        ipc::section(inputs)?,
        floor::section(inputs)?,
        rtos::section(inputs)?,
        smp::section(inputs)?,
        broker::section(inputs)?,
        validate::section(inputs)?,
    ];
    let mut sections: Vec<Section> = sections.into_iter().flatten().collect();
    let trend = !extra.is_empty();
    sections.extend(extra);
    if !inputs.is_empty() {
        sections.push(env::section(inputs));
    }
    let mut runs: Vec<String> = inputs
        .iter()
        .map(|i| format!("{} ({})", i.label, i.run.suite))
        .collect();
    if trend {
        runs.push("a trend from the results store".into());
    }
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
        .map(|e| {
            let shape = match e.marker {
                Marker::Cross => "cross",
                Marker::Triangle => "triangle",
                Marker::Square => "square",
                Marker::Circle => "dot",
                Marker::None => "none",
            };
            let line = match e.line {
                Line::None => String::new(),
                Line::Solid => format!(
                    "<span class=\"line solid\" style=\"color:{}\"></span>",
                    e.colour
                ),
                Line::Dashed => format!(
                    "<span class=\"line dashed\" style=\"color:{}\"></span>",
                    e.colour
                ),
            };
            format!(
                "<li>{line}<span class=\"swatch {shape}\" style=\"color:{}\"></span>{}</li>",
                e.colour,
                escape(&e.label)
            )
        })
        .collect();
    format!(
        "<figure class=\"chart\">\n<figcaption>{}</figcaption>\n{}<ul class=\"legend\">{items}</ul>\n</figure>\n",
        escape(&c.title),
        c.svg
    )
}

/// Charts side by side as small multiples (a grid, two to a row), each
/// with its own legend; "" without charts.
pub fn multiples(charts: &[Chart]) -> String {
    if charts.is_empty() {
        return String::new();
    }
    let inner: String = charts.iter().map(chart_html).collect();
    format!("<div class=\"multiples\">\n{inner}</div>\n")
}

/// The answers a section opens with: each sentence a paragraph in one
/// `verdict` block, under a heading per run when several are overlaid;
/// "" without sentences.
pub fn verdicts(runs: &[(&str, Vec<String>)]) -> String {
    let overlaid = runs.len() > 1;
    let mut inner = String::new();
    for (label, sentences) in runs.iter().filter(|r| !r.1.is_empty()) {
        if overlaid {
            inner.push_str(&format!("<h3>{}</h3>\n", escape(label)));
        }
        inner.extend(sentences.iter().map(|s| answer(s)));
    }
    if inner.is_empty() {
        return String::new();
    }
    format!("<div class=\"verdict\">\n{inner}</div>\n")
}

/// One answer as a report shows it: its first sentence, read at a
/// glance, and the rest (the figures and arithmetic behind it) folded
/// beneath.
fn answer(text: &str) -> String {
    match first_sentence(text) {
        (all, "") => para(all),
        (head, rest) => format!(
            "{}<details><summary>how</summary>\n{}</details>\n",
            para(head),
            para(rest)
        ),
    }
}

/// `text` split after its first sentence: at the first full stop outside
/// brackets that a space and a capital letter follow (`1.5x`, `e.g.` and
/// `(a. B)` do not end one); the rest is empty when there is one only.
pub fn first_sentence(text: &str) -> (&str, &str) {
    let b = text.as_bytes();
    let mut depth = 0i32;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'(' | b'[' => depth += 1,
            b')' | b']' => depth -= 1,
            b'.' if depth <= 0
                && b.get(i + 1) == Some(&b' ')
                && b.get(i + 2).is_some_and(u8::is_ascii_uppercase) =>
            {
                return (&text[..=i], text[i + 2..].trim_start());
            }
            _ => {}
        }
    }
    (text, "")
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
