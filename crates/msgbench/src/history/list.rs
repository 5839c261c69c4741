//! `msgbench history` without a subcommand: the runs, oldest first.

use anyhow::{Context, Result};

use crate::results::table::{render, Align, Format, Section, Table};
use crate::store::refs;
use crate::store::{Filter, StoreArgs, StoreError, Summary};

/// Lists the runs `filter` selects in `format`.
pub fn run(store: &StoreArgs, filter: &Filter, format: Format) -> Result<()> {
    let location = store.location()?;
    let shown = location.to_string();
    let runs = match refs::open(store) {
        Ok(mut s) => s.list(filter).with_context(|| format!("store {shown}"))?,
        Err(e) if matches!(e.downcast_ref::<StoreError>(), Some(StoreError::Missing)) => Vec::new(),
        Err(e) => return Err(e),
    };
    print!("{}", text(&runs, &shown, format));
    Ok(())
}

/// The listing in `format` (JSON: every column of every run).
pub fn text(runs: &[Summary], store: &str, format: Format) -> String {
    if format == Format::Json {
        return serde_json::to_string_pretty(runs).unwrap_or_default() + "\n";
    }
    if runs.is_empty() && format != Format::Csv {
        return format!("No runs found in the store {store}.\n");
    }
    render(&[Section::Table(table(runs, store))], format)
}

/// One row per run; the kernel as its release.
fn table(runs: &[Summary], store: &str) -> Table {
    let head = [
        "id", "started", "suite", "host", "kernel", "outcome", "headline",
    ];
    let title = format!("msgbench history: {} run(s) in {store}", runs.len());
    let mut t = Table::new(title, &head).aligned(&[
        Align::Right,
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Left,
        Align::Left,
    ]);
    for r in runs {
        t.row(vec![
            format!("@{}", r.id),
            r.started.clone(),
            r.suite.clone(),
            r.host.clone(),
            release(&r.kernel).to_string(),
            r.outcome.clone(),
            r.headline.clone(),
        ]);
    }
    t.notes.push(
        "msgbench history show @ID prints a run; msgbench compare @ID @ID compares two; msgbench history trend METRIC follows a figure."
            .into(),
    );
    t
}

/// The kernel's release (`Linux 6.1.0-18-amd64 #1 SMP ...` -> `6.1.0-18-amd64`).
fn release(kernel: &str) -> &str {
    kernel.split_whitespace().nth(1).unwrap_or(kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(id: i64) -> Summary {
        Summary {
            id,
            suite: "floor".into(),
            started: "2026-05-01T12:00:00Z".into(),
            finished: "2026-05-01T12:00:01Z".into(),
            host: "board|A".into(),
            kernel: "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC".into(),
            cpu_model: "cpu".into(),
            tool_version: "0.1.0".into(),
            outcome: "ok".into(),
            headline: "fastest round trip 120 ns (cpus=0->1)".into(),
            origin: "run".into(),
        }
    }

    #[test]
    fn every_format() {
        let runs = [summary(3), summary(4)];
        let t = text(&runs, "s.db", Format::Table);
        assert!(t.starts_with("msgbench history: 2 run(s) in s.db\n"), "{t}");
        assert!(
            t.contains("@4") && t.contains("6.1.0-18-amd64") && !t.contains("PREEMPT"),
            "{t}"
        );
        let m = text(&runs, "s.db", Format::Markdown);
        assert!(m.contains("board\\|A"), "{m}");
        let c = text(&runs, "s.db", Format::Csv);
        assert!(
            c.starts_with("id,started,suite,host,kernel,outcome,headline\n@3,"),
            "{c}"
        );
        let j: serde_json::Value =
            serde_json::from_str(&text(&runs, "s.db", Format::Json)).unwrap();
        assert_eq!(j[1]["id"], 4);
        assert_eq!(
            j[0]["kernel"],
            "Linux 6.1.0-18-amd64 #1 SMP PREEMPT_DYNAMIC"
        );
        assert!(text(&[], "s.db", Format::Table).starts_with("No runs found"));
        assert_eq!(text(&[], "s.db", Format::Json), "[]\n");
    }
}
