//! The environment of each run: one column per run, one line per field
//! (every field of the stored environment, flattened, so fields added
//! later show up without a change here), then the run's notes.

use serde_json::{json, Value};

use super::{escape, table, Input, Section};

/// Flattens `v` into `(dotted.name, text)` pairs.
fn flatten(prefix: &str, v: &Value, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let name = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&name, x, out);
            }
        }
        Value::Array(a) if a.iter().any(|x| x.is_object()) => {
            for (i, x) in a.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), x, out);
            }
        }
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(text).collect();
            out.push((prefix.to_string(), parts.join(" ")));
        }
        x => out.push((prefix.to_string(), text(x))),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        x => x.to_string(),
    }
}

/// What the page shows of a run, flattened.
fn fields(input: &Input) -> Vec<(String, String)> {
    let r = &input.run;
    let summary = json!({
        "suite": r.suite,
        "started": r.started,
        "finished": r.finished,
        "command_line": r.command_line.join(" "),
        "outcome": serde_json::to_value(&r.outcome).unwrap_or(Value::Null),
        "clock": serde_json::to_value(&r.clock).unwrap_or(Value::Null),
    });
    let mut out = Vec::new();
    flatten("", &summary, &mut out);
    let env = serde_json::to_value(&r.environment).unwrap_or(Value::Null);
    flatten("environment", &env, &mut out);
    out
}

/// The environment section (always present).
pub fn section(inputs: &[Input]) -> Section {
    let per_run: Vec<Vec<(String, String)>> = inputs.iter().map(fields).collect();
    let mut names: Vec<String> = Vec::new();
    for (n, _) in per_run.iter().flatten() {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    let rows: Vec<Vec<String>> = names
        .iter()
        .map(|n| {
            let mut row = vec![n.clone()];
            row.extend(per_run.iter().map(|f| {
                f.iter()
                    .find(|(k, _)| k == n)
                    .map_or(String::new(), |(_, v)| v.clone())
            }));
            row
        })
        .collect();
    let mut head = vec!["field"];
    head.extend(inputs.iter().map(|i| i.label.as_str()));
    let mut html = table(&head, &rows);
    for i in inputs.iter().filter(|i| !i.run.notes.is_empty()) {
        html.push_str(&format!(
            "<p class=\"note\">Notes on {}:</p>\n<ul>\n",
            escape(&i.label)
        ));
        for n in &i.run.notes {
            html.push_str(&format!("<li>{}</li>\n", escape(n)));
        }
        html.push_str("</ul>\n");
    }
    Section {
        id: "environment",
        title: "Environment",
        html,
    }
}
